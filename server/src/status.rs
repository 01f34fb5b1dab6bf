//! A failure as an HTTP response: the [`ApiError`]'s `Status` object as
//! the body, its code as the response's, `Content-Type:
//! application/json`, and `Retry-After` where a client should come back.
//! The `Status` itself (codes, reasons, which of Herald's errors is which)
//! is `herald_kube`'s; this is the axum glue (a function: the orphan rule
//! keeps axum's `IntoResponse` off a type of another crate).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_kube::ApiError;

/// The response that reports `error`.
pub fn response(error: ApiError) -> Response {
    let code = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    // Ending with a newline, as Go's `json.Encoder` ends the apiserver's.
    let mut body = error.to_json();
    body.push(b'\n');
    let mut response = (code, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
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
}
