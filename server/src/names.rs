//! The path segments that name a namespace or an object, checked as the
//! apiserver checks them before they become a key.
//!
//! A namespace must be a DNS-1123 label (what `ValidateNamespaceName`
//! accepts; nothing else can exist), and an object's name a valid path
//! segment (`IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`).
//! Both are checked after percent-decoding, so `%2F`, `demo-3%2F` and
//! `%2e%2e` are refused rather than turned into a second spelling of a
//! namespace, or into "every namespace": an engine key is
//! `namespace/name`, and a scope is a prefix of it, so a segment that
//! is empty or carries a `/` would widen the request's reach. An empty
//! namespace segment (`/namespaces//pods`) names no path at all.

use herald_kube::ApiError;

/// The longest namespace (a DNS-1123 label).
pub(crate) const MAX_NAMESPACE_LEN: usize = 63;

/// Checks a namespace path segment: `Ok` if it is a DNS-1123 label;
/// `404` if empty (no such path), else `400` with the rule it breaks.
pub(crate) fn namespace(ns: &str) -> Result<(), ApiError> {
    if ns.is_empty() {
        return Err(ApiError::no_route());
    }
    let bytes = ns.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let ok = bytes.len() <= MAX_NAMESPACE_LEN
        && bytes.iter().all(|&b| alnum(b) || b == b'-')
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1]);
    if ok {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid namespace {:?}: a lowercase RFC 1123 label must consist of lower case \
         alphanumeric characters or '-', start and end with an alphanumeric character, \
         and be at most {MAX_NAMESPACE_LEN} characters",
        brief(ns)
    )))
}

/// Checks an object's name path segment (`IsValidPathSegmentName`): not
/// empty, `.` or `..`, and without `/` or `%`.
pub(crate) fn object_name(name: &str) -> Result<(), ApiError> {
    let why = match name {
        "" => Some("may not be empty"),
        "." | ".." => Some("may not be '.' or '..'"),
        _ if name.contains('/') => Some("may not contain '/'"),
        _ if name.contains('%') => Some("may not contain '%'"),
        _ => None,
    };
    match why {
        None => Ok(()),
        Some(why) => Err(ApiError::bad_request(format!(
            "invalid resource name {:?}: {why}",
            brief(name)
        ))),
    }
}

/// At most 64 characters of a client's text, for a message.
fn brief(s: &str) -> String {
    let mut out: String = s.chars().take(64).collect();
    if out.len() < s.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_dns_labels() {
        for ok in ["a", "demo-3", "kube-system", "0", &"a".repeat(63)] {
            assert!(namespace(ok).is_ok(), "{ok}");
        }
        for bad in [
            "/",
            "demo-3/",
            "..",
            ".",
            "Demo",
            "-a",
            "a-",
            "a.b",
            "a%2F",
            "a\0",
            "é",
            &"a".repeat(64),
        ] {
            let e = namespace(bad).unwrap_err();
            assert_eq!(e.code, 400, "{bad:?}");
        }
        assert_eq!(namespace("").unwrap_err().code, 404);
    }

    #[test]
    fn names_are_path_segments() {
        for ok in ["web-0", "a.b", "A_b", "é", "x:y"] {
            assert!(object_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a%2Fb", "/"] {
            assert_eq!(object_name(bad).unwrap_err().code, 400, "{bad:?}");
        }
        let long = "x".repeat(10_000);
        assert!(object_name(&format!("{long}/")).unwrap_err().message.len() < 200);
    }
}
