//! The YAML the apiserver answers `Accept: application/yaml` with, byte
//! for byte: its JSON through `sigs.k8s.io/yaml`'s `JSONToYAML`, which
//! reads the JSON with go-yaml v2 into `interface{}` and writes that back
//! with go-yaml v2's emitter (`emitterc.go`). This module is that
//! emitter, for the values JSON has:
//!
//! - keys in go-yaml's order (`sorter.go`: letters before other
//!   characters, runs of digits compared as numbers);
//! - block mappings at two spaces of indent, a sequence under a mapping
//!   key at the key's indent (`- ` items), empty collections as `{}` and
//!   `[]`, a key longer than 128 bytes or spanning lines as `? key`;
//! - a string plain when go-yaml would read it back as a string and the
//!   emitter allows it, else single-quoted, double-quoted (with YAML's
//!   escapes, code points beyond the BMP as `\U`), or literal (`|`, `|-`,
//!   `|+`, with an indent hint) when it has a line break; plain and
//!   quoted text folded at spaces past column 80;
//! - integers as JSON has them, other numbers as go-yaml writes a
//!   `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`: `1e+21`, `1e-07`);
//! - text go-yaml's reader refuses (DEL, C1 controls, U+FFFE, U+FFFF,
//!   which Go's JSON leaves raw) is the same error:
//!   [`YamlError`] "yaml: control characters are not allowed".
//!
//! The vectors the tests compare with are made by `sigs.k8s.io/yaml`
//! itself (`testkit/govectors`).

mod resolve;
mod scalar;
mod writer;

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::{Map, Value};

use scalar::{Analysis, Style};
use writer::Emitter;

/// A body go-yaml cannot write (its reader refuses the JSON's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError(pub &'static str);

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for YamlError {}

/// `value` (a body as the apiserver's JSON has it) as the apiserver's
/// YAML.
///
/// ```
/// let v = serde_json::json!({"kind": "ConfigMap", "data": {"a": "x\ny", "b": "1.5"}});
/// assert_eq!(
///     herald_kube::yaml::to_yaml(&v).unwrap(),
///     "data:\n  a: |-\n    x\n    y\n  b: \"1.5\"\nkind: ConfigMap\n"
/// );
/// ```
pub fn to_yaml(value: &Value) -> Result<String, YamlError> {
    check(value)?;
    let mut e = Emitter::new();
    e.node(value, Context::ROOT);
    // Document end: a line break unless one was just written; stream
    // end: `...` after an open-ended scalar.
    e.write_indent();
    if e.open_ended {
        e.indicator("...", true, false, false);
        e.write_indent();
    }
    Ok(e.out)
}

/// Refuses what go-yaml's reader refuses in the JSON text: characters
/// outside YAML's printable set that Go's JSON writes raw.
fn check(value: &Value) -> Result<(), YamlError> {
    let bad = |s: &str| {
        s.chars().any(
            |c| matches!(c, '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}'),
        )
    };
    let refused = match value {
        Value::String(s) => bad(s),
        Value::Array(items) => return items.iter().try_for_each(check),
        Value::Object(map) => {
            for (k, v) in map {
                if bad(k) {
                    return Err(CONTROL);
                }
                check(v)?;
            }
            false
        }
        _ => false,
    };
    if refused { Err(CONTROL) } else { Ok(()) }
}

const CONTROL: YamlError = YamlError("yaml: control characters are not allowed");

/// A string as go-yaml reads it back from Go's JSON: NEL (U+0085), which
/// Go writes raw, is a line break inside a double-quoted YAML scalar,
/// folded with the spaces around it (one break a space, `n` breaks
/// `n - 1` newlines). Go escapes every other break and blank but the
/// space.
fn fold_nel(s: &str) -> Cow<'_, str> {
    if !s.contains('\u{85}') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\u{85}') {
        out.push_str(rest[..at].trim_end_matches(' '));
        let mut breaks = 0;
        let mut tail = &rest[at..];
        loop {
            let trimmed = tail.trim_start_matches(' ');
            match trimmed.strip_prefix('\u{85}') {
                Some(after) => {
                    breaks += 1;
                    tail = after;
                }
                None => {
                    tail = trimmed;
                    break;
                }
            }
        }
        if breaks == 1 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', breaks - 1));
        }
        rest = tail;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// go-yaml's `keyList.Less` for two string keys.
fn key_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            for j in (0..i).rev() {
                if !ar[j].is_numeric() {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_numeric() {
            an = an.wrapping_mul(10).wrapping_add(go_digit(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_numeric() {
            bn = bn.wrapping_mul(10).wrapping_add(go_digit(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// `int64(r - '0')`, as Go computes it for any digit rune.
fn go_digit(c: char) -> i64 {
    i64::from(u32::from(c)) - i64::from(u32::from('0'))
}

/// Where a node is (`emit_node`'s flags).
#[derive(Debug, Clone, Copy)]
struct Context {
    root: bool,
    mapping: bool,
    simple_key: bool,
}

impl Context {
    const ROOT: Context = Context {
        root: true,
        mapping: false,
        simple_key: false,
    };
    const ITEM: Context = Context {
        root: false,
        mapping: false,
        simple_key: false,
    };
    const VALUE: Context = Context {
        root: false,
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Context = Context {
        root: false,
        mapping: true,
        simple_key: true,
    };
}

impl Emitter {
    fn node(&mut self, value: &Value, ctx: Context) {
        match value {
            Value::Object(map) if !map.is_empty() => self.mapping(map, ctx),
            Value::Array(items) if !items.is_empty() => self.sequence(items, ctx),
            Value::Object(_) => self.empty("{", "}"),
            Value::Array(_) => self.empty("[", "]"),
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => {
                let text = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => i.to_string(),
                    (_, Some(u), _) => u.to_string(),
                    // `-0` reads back as the integer 0.
                    (_, _, Some(0.0)) => "0".into(),
                    (_, _, Some(f)) => resolve::float(f),
                    _ => n.to_string(),
                };
                self.scalar(&text, Style::Plain, ctx);
            }
            Value::String(s) => {
                let s = fold_nel(s);
                self.scalar(&s, scalar::string_style(&s), ctx);
            }
        }
    }

    /// An empty collection: flow style.
    fn empty(&mut self, open: &str, close: &str) {
        self.indicator(open, true, true, false);
        self.indicator(close, false, false, false);
    }

    fn mapping(&mut self, map: &Map<String, Value>, _ctx: Context) {
        self.increase_indent(false, false);
        let mut keys: Vec<(Cow<'_, str>, &Value)> =
            map.iter().map(|(k, v)| (fold_nel(k), v)).collect();
        keys.sort_by(|a, b| key_order(&a.0, &b.0));
        for (key, value) in keys {
            self.write_indent();
            let analysis = Analysis::of(&key);
            if !analysis.multiline && key.len() <= 128 {
                self.scalar(&key, scalar::string_style(&key), Context::SIMPLE_KEY);
                self.indicator(":", false, false, false);
            } else {
                self.indicator("?", true, false, true);
                self.scalar(&key, scalar::string_style(&key), Context::VALUE);
                self.write_indent();
                self.indicator(":", true, false, true);
            }
            self.node(value, Context::VALUE);
        }
        self.pop_indent();
    }

    fn sequence(&mut self, items: &[Value], ctx: Context) {
        let indentless = ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.indicator("-", true, false, true);
            self.node(item, Context::ITEM);
        }
        self.pop_indent();
    }

    fn scalar(&mut self, text: &str, requested: Style, ctx: Context) {
        let analysis = Analysis::of(text);
        let style = analysis.select(requested, ctx.simple_key);
        self.increase_indent(true, false);
        let breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.plain(text, breaks, ctx.root),
            Style::Single => self.single(text, breaks),
            Style::Double => self.double(text, breaks),
            Style::Literal => self.literal(text),
        }
        self.pop_indent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors() -> Value {
        serde_json::from_str(include_str!("../../testdata/go_vectors.json")).unwrap()
    }

    #[test]
    fn yaml_is_sigs_k8s_io_yamls() {
        for doc in vectors()["docs"].as_array().unwrap() {
            let json = doc["json"].as_str().unwrap();
            let want = doc["yaml"].as_str().unwrap();
            let value: Value = serde_json::from_str(json).unwrap();
            let got = match to_yaml(&value) {
                Ok(text) => text,
                Err(e) => format!("error: {e}"),
            };
            assert_eq!(got, want, "{json}");
        }
    }

    #[test]
    fn keys_in_go_yamls_order() {
        let mut keys = [
            "a10", "a9", "A", "_x", "a01", "a1", "b", "10", "9", "x10y", "x2y", "xy",
        ];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(
            keys,
            [
                "_x", "9", "10", "A", "a1", "a01", "a9", "a10", "b", "x2y", "x10y", "xy"
            ]
        );
    }
}
