//! A failure as an HTTP response: the [`ApiError`]'s `Status` object as
//! the body, its code as the response's, `Content-Type:
//! application/json`, and `Retry-After` where a client should come back.
//! The `Status` itself (codes, reasons, which of Herald's errors is which)
//! is `herald_kube`'s; this is the axum glue (a function: the orphan rule
//! keeps axum's `IntoResponse` off a type of another crate).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_kube::ApiError;
use herald_kube::wire::Format;

/// The response that reports `error`.
pub fn response(error: ApiError) -> Response {
    // Ending with a newline, as Go's `json.Encoder` ends the apiserver's.
    let mut body = error.to_json();
    body.push(b'\n');
    written(error, "application/json", body)
}

/// The response that reports `error` to a request whose `Accept` chose
/// `format` (`None`: none did): its `Status` in that encoding where the
/// apiserver writes one so (YAML, protobuf: [`Format::status`]), else
/// as JSON.
pub fn response_in(error: ApiError, format: Option<&'static dyn Format>) -> Response {
    match format.and_then(|f| f.status(&error.to_status())) {
        Some((content_type, body)) => written(error, content_type, body),
        None => response(error),
    }
}

/// `error`'s response with its `Status` written as `body`.
fn written(error: ApiError, content_type: &'static str, body: Vec<u8>) -> Response {
    let code = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(after) = error.retry_after {
        headers.insert(header::RETRY_AFTER, after.as_secs().max(1).into());
    }
    // What an audit event says of the answer (see the module `audit_log`).
    response
        .extensions_mut()
        .insert(herald_auth::audit::ResponseStatus::of(&error));
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_response_carries_the_status_and_the_retry_hint() {
        let r = response(ApiError::not_ready("listing", Duration::from_millis(1500)));
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let r = response(ApiError::not_found("pods", "a"));
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert!(r.headers().get(header::RETRY_AFTER).is_none());
    }

    #[tokio::test]
    async fn a_status_is_written_in_the_encoding_the_request_chose() {
        use herald_kube::wire::{Offer, negotiate};
        let offer = Offer {
            protobuf: true,
            watch: false,
        };
        let error = || ApiError::unclassified("yaml: control characters are not allowed");
        let yaml = negotiate(Some("application/yaml"), offer).unwrap();
        let r = response_in(error(), Some(yaml));
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/yaml");
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "apiVersion: v1\ncode: 500\nkind: Status\nmessage: 'yaml: control characters are not allowed'\nmetadata: {}\nstatus: Failure\n"
        );
        let protobuf = negotiate(Some("application/vnd.kubernetes.protobuf"), offer).unwrap();
        let r = response_in(ApiError::not_found("pods", "a"), Some(protobuf));
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/vnd.kubernetes.protobuf"
        );
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert!(body.starts_with(b"k8s\0"), "{body:?}");
        let json = negotiate(Some("application/json"), offer).unwrap();
        let r = response_in(ApiError::not_found("pods", "a"), Some(json));
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
