//! JSON written as Go's `encoding/json` writes it, which is what the
//! apiserver answers with: compact, object keys in the order given,
//! strings escaped with `escapeHTML` (`<`, `>`, `&`, U+2028 and U+2029 as
//! `\uXXXX`), numbers as Go prints an `int64` or a `float64`
//! (`encode.go`'s `appendString` and `floatEncoder`).
//!
//! Every JSON body Herald serves goes through [`write()`]: an object's
//! payload once, when its source decodes it ([`Decoder`](crate::Decoder));
//! lists, events and `Status`es around those bytes as they are built. A
//! custom resource is what the apiserver reads into
//! `map[string]interface{}` and writes back: [`unstructured`] sorts its
//! keys and makes its numbers Go's `int64` or `float64`, and
//! [`from_slice`] reads stored bytes as Go's decoder does (each byte of
//! invalid UTF-8 a U+FFFD).
//!
//! The embedded JSON of a stored object (`metav1.FieldsV1`,
//! `runtime.RawExtension`, apiextensions `JSON`) is bytes its writer
//! produced with Go (structured-merge-diff's managed fields, a controller's
//! `json.Marshal`); writing a parsed value back this way gives those bytes
//! again whenever they were that writer's compact output.
//!
//! The test vectors (`kube/testdata/go_vectors.json`) are made by Go
//! itself: `testkit/govectors`.

use serde_json::{Number, Value};

use std::borrow::Cow;

use serde_json::Map;

/// Deeper than `serde_json` parses (128) and than Kubernetes accepts.
pub const MAX_DEPTH: usize = 1000;

/// A value nested deeper than [`MAX_DEPTH`]: not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep;

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON nested deeper than {MAX_DEPTH}")
    }
}

impl std::error::Error for TooDeep {}

/// `value` as Go writes it.
///
/// ```
/// let v = serde_json::json!({"s": "<a&b>", "f": [1e21, 1e-7, 0.5]});
/// assert_eq!(
///     herald_kube::gojson::to_vec(&v).unwrap(),
///     br#"{"s":"\u003ca\u0026b\u003e","f":[1e+21,1e-7,0.5]}"#
/// );
/// ```
pub fn to_vec(value: &Value) -> Result<Vec<u8>, TooDeep> {
    let mut out = Vec::with_capacity(128);
    write(&mut out, value)?;
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `value` to `out` (on an error, `out` holds part of it).
pub fn write(out: &mut Vec<u8>, value: &Value) -> Result<(), TooDeep> {
    write_at(out, value, 0)
}

fn write_at(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_at(out, item, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, k);
                out.push(b':');
                write_at(out, v, depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// An integer as itself; a float as Go's `encoding/json` prints a
/// `float64`: the shortest form that reads back, `%f`-like from 1e-6 to
/// 1e21 and `1e+21`, `1.5e-7` outside.
fn number(out: &mut Vec<u8>, n: &Number) {
    use std::io::Write as _;
    // Writing to a `Vec` cannot fail.
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else {
        let f = n.as_f64().unwrap_or_default();
        let abs = f.abs();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
            let start = out.len();
            let _ = write!(out, "{f:e}");
            // Rust writes `1e21` and `1e-7`; Go `1e+21` and `1e-7`.
            if let Some(at) = out[start..].iter().position(|&b| b == b'e')
                && out.get(start + at + 1) != Some(&b'-')
            {
                out.insert(start + at + 1, b'+');
            }
        } else {
            let _ = write!(out, "{f}");
        }
    }
}

/// A string, quoted and escaped as `encoding/json` does with `escapeHTML`.
pub fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9; everything else
        // escaped is ASCII.
        let separator = b == 0xe2
            && bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9));
        if !(separator || (b < 0x80 && ESCAPE[usize::from(b)])) {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0xe2 => {
                out.extend_from_slice(b"\\u202");
                out.push(if bytes[i + 2] == 0xa8 { b'8' } else { b'9' });
                i += 2;
            }
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// `value` as the apiserver holds a custom resource: every object's keys
/// sorted (Go writes a map's keys in byte order), every integer an
/// `int64` or else a `float64` (k8s.io/apimachinery's `util/json`
/// reads an integer that does not fit an `int64` as a `float64`).
pub fn unstructured(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            *map = entries
                .into_iter()
                .map(|(k, mut v)| {
                    unstructured(&mut v);
                    (k, v)
                })
                .collect::<Map<String, Value>>();
        }
        Value::Array(items) => items.iter_mut().for_each(unstructured),
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => {
            if let Some(f) = n.as_f64().and_then(Number::from_f64) {
                *n = f;
            }
        }
        _ => {}
    }
}

/// Reads JSON as Go's decoder does: each byte that is not part of valid
/// UTF-8 is read as U+FFFD (`decode.go`'s `unquote`, one
/// `utf8.RuneError` per byte), where `serde_json` would refuse the text;
/// the number `-0` is the integer 0 (`strconv.ParseInt` takes it), where
/// `serde_json` reads the float -0.
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut text = valid_utf8(bytes);
    if let Some(at) = negative_zeros(&text) {
        let owned = text.to_mut();
        for i in at {
            owned[i] = b' ';
        }
    }
    serde_json::from_slice(&text)
}

/// Where the `-` of each integer `-0` is, outside strings (`None` when
/// there is none).
fn negative_zeros(text: &[u8]) -> Option<Vec<usize>> {
    if !text.windows(2).any(|w| w == b"-0") {
        return None;
    }
    let mut at = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'-'
            && text.get(i + 1) == Some(&b'0')
            && !matches!(text.get(i + 2), Some(b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            at.push(i);
        }
    }
    (!at.is_empty()).then_some(at)
}

/// `bytes` with each byte of invalid UTF-8 replaced by U+FFFD.
fn valid_utf8(bytes: &[u8]) -> Cow<'_, [u8]> {
    if std::str::from_utf8(bytes).is_ok() {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        for _ in chunk.invalid() {
            out.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
    Cow::Owned(out)
}

/// The ASCII bytes `encoding/json` escapes with `escapeHTML`: controls,
/// `"`, `\`, `<`, `>` and `&`.
const ESCAPE: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(v: &Value) -> String {
        let mut out = Vec::new();
        write(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn values_are_written_as_go_writes_them() {
        assert_eq!(
            text(
                &json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "k:{\"name\":\"a\"}": {}})
            ),
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"k:{\"name\":\"a\"}":{}}"#
        );
        assert_eq!(
            text(&json!([
                "<a&b>",
                "\u{2028}\u{2029}",
                "\u{1}\u{8}\u{c}\n\r\t\u{1f}",
                "é😀"
            ])),
            r#"["\u003ca\u0026b\u003e","\u2028\u2029","\u0001\b\f\n\r\t\u001f","é😀"]"#
        );
        assert_eq!(
            text(&json!([null, true, false, 0, -1, u64::MAX, i64::MIN])),
            "[null,true,false,0,-1,18446744073709551615,-9223372036854775808]"
        );
        assert_eq!(
            text(&json!([
                1.0,
                1.5,
                -0.25,
                1e20,
                1e21,
                1.5e-7,
                1e-6,
                123456789.125,
                2.5e300
            ])),
            "[1,1.5,-0.25,100000000000000000000,1e+21,1.5e-7,0.000001,123456789.125,2.5e+300]"
        );
    }

    /// What `testkit/govectors` recorded from Go.
    fn vectors() -> Value {
        serde_json::from_str(include_str!("../testdata/go_vectors.json")).unwrap()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn custom_resources_are_written_as_the_apiserver_writes_them() {
        for doc in vectors()["docs"].as_array().unwrap() {
            let input = unhex(doc["input_hex"].as_str().unwrap());
            let mut v = from_slice(&input).unwrap();
            unstructured(&mut v);
            assert_eq!(
                String::from_utf8(to_vec(&v).unwrap()).unwrap(),
                doc["json"].as_str().unwrap(),
                "{}",
                String::from_utf8_lossy(&input)
            );
        }
    }

    #[test]
    fn strings_and_floats_are_written_as_go_writes_them() {
        let vectors = vectors();
        for s in vectors["strings"].as_array().unwrap() {
            let input = unhex(s["input_hex"].as_str().unwrap());
            // Go writes each byte of invalid UTF-8 as an escaped U+FFFD;
            // Herald reads them as U+FFFD (a `str` is valid UTF-8), which
            // it writes unescaped, as Go does a real U+FFFD.
            let text = String::from_utf8_lossy(&input);
            if text.contains('\u{fffd}') && !input.starts_with("\u{fffd}".as_bytes()) {
                continue;
            }
            let mut out = Vec::new();
            string(&mut out, &text);
            assert_eq!(String::from_utf8(out).unwrap(), s["json"].as_str().unwrap());
        }
        for f in vectors["floats"].as_array().unwrap() {
            let x = f64::from_bits(f["bits"].as_u64().unwrap());
            let n = Number::from_f64(x).unwrap();
            let mut out = Vec::new();
            number(&mut out, &n);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                f["json"].as_str().unwrap(),
                "{x:e}"
            );
        }
    }
}
