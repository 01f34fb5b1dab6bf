//! [`Parsed`]: a request read once, at the edge, the one value that both
//! authorization and serving read. Nothing after the edge reads the URI
//! again: authorization decides on `info`, the resource handlers serve
//! `info` (its verb, resource, namespace and name) with `query`'s options,
//! and the other routes are matched on the same decoded path.
//!
//! As the apiserver reads a request (Go's `net/url`, then
//! `requestinfo.go`):
//!
//! - the path is percent-decoded whole (`URL.Path`: a `%2F` is a `/`,
//!   so it separates segments) and then split; a malformed escape is a
//!   400 (Go's server refuses the request line). Bytes that are not
//!   UTF-8 once decoded are a 400 too (Go would carry them on; Herald's
//!   strings cannot, and no object's name holds them);
//! - the query is [`Query`]: Go's `url.ParseQuery`, duplicates, dropped
//!   pairs and all.

use axum::http::{Method, Uri};
use herald_auth::RequestInfo;
use herald_kube::{ApiError, Query};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// A request as authorization decides on it and the handlers serve it.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The path, percent-decoded whole.
    pub(crate) path: String,
    /// The query, parsed once.
    pub(crate) query: Query,
    /// What the apiserver's `RequestInfo` reads from them.
    pub(crate) info: RequestInfo,
}

/// What a decoded path is re-encoded with for the router: anything a
/// path may not hold, and `%` itself (so that the router's own decoding
/// of a segment gives back the decoded text, not a second decoding).
const ROUTED: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

impl Parsed {
    /// Reads a request's method and URI; a 400 if its path does not
    /// decode.
    pub(crate) fn read(method: &Method, uri: &Uri) -> Result<Parsed, ApiError> {
        let path = decode_path(uri.path())?;
        let query = Query::parse(uri.query());
        let info = RequestInfo::new(method.as_str(), &path, &query);
        Ok(Parsed { path, query, info })
    }

    /// The decoded path as a URI path the router matches on: its
    /// segments what [`Parsed::path`]'s are.
    pub(crate) fn routed_path(&self) -> String {
        utf8_percent_encode(&self.path, ROUTED).to_string()
    }
}

/// `path` percent-decoded whole, as Go's `URL.Path`.
fn decode_path(path: &str) -> Result<String, ApiError> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let digit = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
            let (Some(hi), Some(lo)) = (digit(i + 1), digit(i + 2)) else {
                return Err(ApiError::bad_request(format!(
                    "invalid URL escape in the path at byte {i}"
                )));
            };
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| ApiError::bad_request("the path is not valid UTF-8 once percent-decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(uri: &str) -> Result<Parsed, ApiError> {
        Parsed::read(&Method::GET, &uri.parse().unwrap())
    }

    #[test]
    fn the_path_is_decoded_whole_and_its_segments_split_after() {
        let a = parsed("/api/v1/namespaces/%61/pods/w%65b-0").unwrap();
        assert_eq!(a.path, "/api/v1/namespaces/a/pods/web-0");
        assert_eq!(
            (a.info.namespace.as_str(), a.info.name.as_str()),
            ("a", "web-0")
        );
        // An encoded slash separates segments, as in Go's `URL.Path`.
        let a = parsed("/api/v1/namespaces/ns%2Fsecrets").unwrap();
        assert_eq!(
            (
                a.info.verb.as_str(),
                a.info.namespace.as_str(),
                a.info.resource.as_str()
            ),
            ("list", "ns", "secrets")
        );
        assert_eq!(a.routed_path(), "/api/v1/namespaces/ns/secrets");
        for bad in [
            "/api/v1/namespaces/%zz/pods",
            "/api/%",
            "/api/v1/namespaces/%ff/pods",
        ] {
            assert_eq!(parsed(bad).unwrap_err().code, 400, "{bad}");
        }
    }

    #[test]
    fn the_router_sees_the_decoded_segments_once() {
        // `%2525` is `%25` decoded once: a literal `%` stays one for the
        // router's own decoding.
        let a = parsed("/apis/a%2525b/v1").unwrap();
        assert_eq!(a.path, "/apis/a%25b/v1");
        assert_eq!(a.routed_path(), "/apis/a%2525b/v1");
        let a = parsed("/version%3Fx").unwrap();
        assert_eq!(a.routed_path(), "/version%3Fx");
    }

    #[test]
    fn the_query_is_read_once_for_both() {
        let a = parsed(
            "/api/v1/namespaces/n/secrets?fieldSelector=%ZZ&fieldSelector=metadata.name%3Da&watch=",
        )
        .unwrap();
        assert_eq!((a.info.verb.as_str(), a.info.name.as_str()), ("watch", "a"));
        assert_eq!(
            a.query.first("fieldSelector").map(|p| p.value.as_str()),
            Some("metadata.name=a")
        );
    }
}
