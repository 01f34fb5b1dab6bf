//! `apiVersion` read and rewritten in an object's JSON: what the
//! apiserver's `nopConverter` does (`strategy: None`), and the test of
//! whether an object needs converting at all.
//!
//! The decoders put `apiVersion` first (`{"apiVersion":"g/v",...`), so
//! both are a look at the head and a splice; any other shape is parsed.

use bytes::{Bytes, BytesMut};
use serde_json::Value;

/// How a payload the decoders wrote begins.
const HEAD: &[u8] = b"{\"apiVersion\":\"";

/// The object's `apiVersion`, if it has one.
pub(crate) fn api_version(payload: &[u8]) -> Option<String> {
    if let Some(rest) = payload.strip_prefix(HEAD)
        && let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\')
        && rest[end] == b'"'
    {
        return std::str::from_utf8(&rest[..end]).ok().map(str::to_owned);
    }
    let v: Value = serde_json::from_slice(payload).ok()?;
    v.get("apiVersion")?.as_str().map(str::to_owned)
}

/// The object with `apiVersion` set to `to` (where it is; first if it
/// had none), every other byte kept.
pub(crate) fn with_api_version(payload: &Bytes, to: &str) -> Bytes {
    if let Some(rest) = payload.strip_prefix(HEAD)
        && let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\')
        && rest[end] == b'"'
    {
        let quoted = serde_json::to_string(to).unwrap_or_default();
        let mut out = BytesMut::with_capacity(payload.len() + to.len());
        out.extend_from_slice(&HEAD[..HEAD.len() - 1]);
        out.extend_from_slice(quoted.as_bytes());
        out.extend_from_slice(&rest[end + 1..]);
        return out.freeze();
    }
    let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(payload) else {
        return payload.clone();
    };
    let value = Value::String(to.to_owned());
    match doc.get_mut("apiVersion") {
        Some(v) => *v = value,
        None => {
            doc.shift_insert(0, "apiVersion".into(), value);
        }
    }
    serde_json::to_vec(&doc).map_or_else(|_| payload.clone(), Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_version_is_rewritten_and_nothing_else() {
        let stored = Bytes::from_static(
            br#"{"apiVersion":"herald.dev/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#,
        );
        assert_eq!(api_version(&stored).as_deref(), Some("herald.dev/v1"));
        assert_eq!(
            &with_api_version(&stored, "herald.dev/v2")[..],
            br#"{"apiVersion":"herald.dev/v2","kind":"Widget","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#
        );
        // Another shape: parsed, the key kept where it is, or put first.
        let odd = Bytes::from_static(br#"{"kind":"Widget", "apiVersion":"herald.dev/v1"}"#);
        assert_eq!(api_version(&odd).as_deref(), Some("herald.dev/v1"));
        assert_eq!(
            &with_api_version(&odd, "herald.dev/v2")[..],
            br#"{"kind":"Widget","apiVersion":"herald.dev/v2"}"#
        );
        let none = Bytes::from_static(br#"{"kind":"Widget"}"#);
        assert_eq!(api_version(&none), None);
        assert_eq!(
            &with_api_version(&none, "g/v")[..],
            br#"{"apiVersion":"g/v","kind":"Widget"}"#
        );
    }
}
