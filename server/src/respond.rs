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
