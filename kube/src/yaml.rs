//! The YAML the apiserver answers `Accept: application/yaml` with: block
//! style, keys sorted (`sigs.k8s.io/yaml` goes through a Go map), two
//! spaces of indent, list items at their key's indent. Scalars are written
//! so that every YAML reader, 1.1 or 1.2, reads back the JSON value: a
//! string is plain only when it cannot be read as anything else
//! (letters, digits, `.`, `_`, `/`, `-`, starting with a letter, not a
//! YAML 1.1 boolean or null word); every other string is double-quoted
//! with JSON's escapes (a double-quoted YAML scalar is a JSON string),
//! so a timestamp, a number-like or an empty string stays a string.

use serde_json::Value;

/// `value` as block YAML, keys sorted.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => mapping(&mut out, value, 0),
        Value::Array(items) if !items.is_empty() => sequence(&mut out, items, 0),
        scalar_value => {
            out.push_str(&scalar(scalar_value));
            out.push('\n');
        }
    }
    out
}

fn mapping(out: &mut String, value: &Value, indent: usize) {
    let Value::Object(map) = value else { return };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for key in keys {
        out.push_str(&" ".repeat(indent));
        out.push_str(&string(key));
        out.push(':');
        child(out, &map[key.as_str()], indent, false);
    }
}

fn sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        child(out, item, indent, true);
    }
}

/// What follows `key:` or `-`.
fn child(out: &mut String, value: &Value, indent: usize, in_sequence: bool) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            if in_sequence {
                // `- key: v` with the rest of the mapping under it.
                out.push(' ');
                let mut inner = String::new();
                mapping(&mut inner, value, indent + 2);
                out.push_str(inner.trim_start());
            } else {
                out.push('\n');
                mapping(out, value, indent + 2);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            if in_sequence {
                out.push(' ');
                let mut inner = String::new();
                sequence(&mut inner, items, indent + 2);
                out.push_str(inner.trim_start());
            } else {
                out.push('\n');
                sequence(out, items, indent);
            }
        }
        v => {
            out.push(' ');
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string, plain when no reader can take it for another type, else
/// double-quoted.
fn string(s: &str) -> String {
    const WORDS: [&str; 13] = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf", "infinity", "~",
    ];
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_owned()
    } else {
        Value::String(s.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_yaml_with_sorted_keys_and_strings_kept_strings() {
        let v = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "settings", "resourceVersion": "214", "creationTimestamp": "2026-11-27T21:05:21Z",
                         "labels": {}, "finalizers": []},
            "data": {"b": "", "a": "x\ny\n", "yes": "no", "n": "1.5"},
            "items": [{"name": "a", "ports": [80, 443]}, "plain", [1, 2], {}],
            "count": 3, "ok": true, "none": null,
        });
        let want = "apiVersion: v1
count: 3
data:
  a: \"x\\ny\\n\"
  b: \"\"
  \"n\": \"1.5\"
  \"yes\": \"no\"
items:
- name: a
  ports:
  - 80
  - 443
- plain
- - 1
  - 2
- {}
kind: ConfigMap
metadata:
  creationTimestamp: \"2026-11-27T21:05:21Z\"
  finalizers: []
  labels: {}
  name: settings
  resourceVersion: \"214\"
none: null
ok: true
";
        assert_eq!(to_yaml(&v), want);
        assert_eq!(to_yaml(&json!("x")), "x\n");
        assert_eq!(to_yaml(&json!({})), "{}\n");
    }
}
