//! The answers a read writes: JSON (discovery), an encoded object, a
//! list (gzipped when it gains). Each JSON body ends with a newline, as the
//! apiserver's do (Go's `json.Encoder` writes one after each value).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// An encoded body (an [`Encoder`](herald_kube::wire::Encoder)'s,
/// whole, its newline included where the format has one) with its
/// content type.
pub(crate) fn body_response(
    code: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A JSON answer; its body ends with a newline, as the apiserver's
/// (Go's `json.Encoder`) does.
pub(crate) fn json_response(code: StatusCode, body: impl AsRef<[u8]>) -> Response {
    let body = body.as_ref();
    let mut with_newline = Vec::with_capacity(body.len() + 1);
    with_newline.extend_from_slice(body);
    with_newline.push(b'\n');
    let mut r = (code, with_newline).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A list's `200`, gzipped if the client takes gzip and the body is
/// large enough to gain (see the module `compress`).
pub(crate) fn list_response(
    gzip: bool,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response {
    let body: Bytes = body.into();
    let zipped = if gzip {
        crate::compress::gzip_if_large(&body)
    } else {
        None
    };
    let mut r = match zipped {
        Some(z) => {
            let mut r = (StatusCode::OK, z).into_response();
            r.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            r
        }
        None => (StatusCode::OK, body).into_response(),
    };
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A `Warning` header's value as the apiserver writes one
/// (`NewWarningHeader`: code 299, agent `-`, the text quoted with only `"`
/// and `\\` escaped), or `None` for a text it refuses (a control
/// character, or one no header may carry).
pub(crate) fn warning_header(text: &str) -> Option<HeaderValue> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut value = String::with_capacity(text.len() + 8);
    value.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            value.push('\\');
        }
        value.push(c);
    }
    value.push('"');
    HeaderValue::from_str(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_quoted_as_go_quotes_them() {
        let v = |t: &str| warning_header(t).map(|h| h.to_str().unwrap().to_owned());
        assert_eq!(
            v("policy/v1beta1 PodSecurityPolicy is deprecated").as_deref(),
            Some("299 - \"policy/v1beta1 PodSecurityPolicy is deprecated\"")
        );
        assert_eq!(
            v(r#"custom "quoted" \ text"#).as_deref(),
            Some(r#"299 - "custom \"quoted\" \\ text""#)
        );
        assert_eq!(v("a\u{7f}b"), None);
        assert_eq!(v("tab\there"), None);
    }
}
