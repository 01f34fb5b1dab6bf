//! JSON written as Go's `encoding/json` writes it: compact, object keys
//! in the order given, strings escaped with `escapeHTML` (`<`, `>`, `&`,
//! U+2028 and U+2029 as `\uXXXX`), numbers as Go prints an `int64` or a
//! `float64`.
//!
//! The embedded JSON of a stored object (`metav1.FieldsV1`,
//! `runtime.RawExtension`, apiextensions `JSON`) is bytes its writer
//! produced with Go (structured-merge-diff's managed fields, a controller's
//! `json.Marshal`); writing a parsed value back this way gives those bytes
//! again whenever they were that writer's compact output.

use std::fmt::Write as _;

use serde_json::{Number, Value};

use super::error::ProtoError;

/// Deeper than `serde_json` parses (128) and than Kubernetes accepts.
const MAX_DEPTH: usize = 1000;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `value` to `out`.
pub(crate) fn write(out: &mut Vec<u8>, value: &Value) -> Result<(), ProtoError> {
    write_at(out, value, 0)
}

fn write_at(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::Value(format!(
            ": embedded JSON nested deeper than {MAX_DEPTH}"
        )));
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
    let mut text = String::new();
    if let Some(i) = n.as_i64() {
        let _ = write!(text, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(text, "{u}");
    } else {
        let f = n.as_f64().unwrap_or_default();
        let abs = f.abs();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
            let _ = write!(text, "{f:e}");
            if let Some(at) = text.find('e')
                && text.as_bytes().get(at + 1) != Some(&b'-')
            {
                text.insert(at + 1, '+');
            }
        } else {
            let _ = write!(text, "{f}");
        }
    }
    out.extend_from_slice(text.as_bytes());
}

/// A string, quoted and escaped as `encoding/json` does with `escapeHTML`.
fn string(out: &mut Vec<u8>, s: &str) {
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
}
