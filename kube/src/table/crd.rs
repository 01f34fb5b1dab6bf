//! CustomResourceDefinitions and custom resources: the CRD printer of
//! apiextensions-apiserver's `registry/customresourcedefinition/
//! tableconvertor`, and custom resources' rows from their CRD version's
//! `additionalPrinterColumns` (`registry/customresource/tableconvertor`:
//! the name, then each column's JSONPath's first value as a cell of the
//! column's type; a CRD without columns gets `AGE`,
//! `serveDefaultColumnsIfEmpty`).

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, NAME_DOC, Row, at, column, items, name, string};
use super::jsonpath::Path;
use super::time::{self, Nanos};

/// The CRD printer.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "CustomResourceDefinition",
    group: "apiextensions.k8s.io",
    row: crd,
}];

/// A CRD's row: its served versions (`v1(storage)`), creation time, group,
/// kind, short names and whether it is established.
fn crd(o: &Value, _now: Nanos) -> Row {
    let mut versions: Vec<String> = items(o, &["spec", "versions"])
        .iter()
        .filter(|v| at(v, &["served"]).as_bool() == Some(true))
        .map(|v| {
            let name = string(v, &["name"]);
            if at(v, &["storage"]).as_bool() == Some(true) {
                format!("{name}(storage)")
            } else {
                name.to_owned()
            }
        })
        .collect();
    versions.sort();
    let short: Vec<&str> = items(o, &["spec", "names", "shortNames"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let established = items(o, &["status", "conditions"])
        .iter()
        .any(|c| string(c, &["type"]) == "Established" && string(c, &["status"]) == "True");
    Row::from(vec![
        name(o),
        string(o, &["spec", "scope"]).into(),
        versions.join(",").into(),
        time::rfc3339(time::at(at(o, &["metadata", "creationTimestamp"]))).into(),
        string(o, &["spec", "group"]).into(),
        string(o, &["spec", "names", "kind"]).into(),
        short.join(",").into(),
        established.into(),
    ])
}

/// One of a CRD version's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdColumn {
    /// The header (`Size`).
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub ty: String,
    /// The OpenAPI format (`int32`, `byte`, ...), passed through.
    pub format: String,
    /// The description; empty for the default (the column's path).
    pub description: String,
    /// 0 for every table, 1 and more for `-o wide`'s.
    pub priority: i32,
    /// The path of the value (`.spec.size`).
    pub json_path: String,
}

/// A custom resource's printer columns: a CRD version's
/// `additionalPrinterColumns`, parsed ([`CrdColumns::parse`],
/// [`CrdColumns::from_crd`]), or, for a version without any, `AGE` (the
/// [`Default`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CrdColumns {
    columns: Vec<(CrdColumn, Path)>,
}

impl Default for CrdColumns {
    fn default() -> CrdColumns {
        CrdColumns::new(vec![CrdColumn {
            name: "Age".into(),
            ty: "date".into(),
            format: String::new(),
            description: CREATED_DOC.into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }])
    }
}

impl CrdColumns {
    /// These columns, `AGE` if there are none. As the apiserver's
    /// convertor, a column whose path does not parse ends the columns.
    pub fn new(columns: Vec<CrdColumn>) -> CrdColumns {
        if columns.is_empty() {
            return CrdColumns::default();
        }
        let columns = columns
            .into_iter()
            .map_while(|c| Path::parse(&c.json_path).ok().map(|p| (c, p)))
            .collect();
        CrdColumns { columns }
    }

    /// The columns of an `additionalPrinterColumns` JSON array (null or
    /// empty for none); `Err` names the first malformed one.
    pub fn parse(additional_printer_columns: &Value) -> Result<CrdColumns, String> {
        let columns = match additional_printer_columns {
            Value::Null => &[][..],
            Value::Array(a) => a.as_slice(),
            other => return Err(format!("additionalPrinterColumns is not an array: {other}")),
        };
        let columns = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let field = |f: &str| {
                    c.get(f)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let (name, ty, json_path) = (field("name"), field("type"), field("jsonPath"));
                if name.is_empty() || ty.is_empty() || json_path.is_empty() {
                    return Err(format!(
                        "additionalPrinterColumns[{i}] needs a name, a type and a jsonPath"
                    ));
                }
                let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
                Ok(CrdColumn {
                    name,
                    ty,
                    format: field("format"),
                    description: field("description"),
                    priority: i32::try_from(priority)
                        .map_err(|e| format!("additionalPrinterColumns[{i}].priority: {e}"))?,
                    json_path,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(CrdColumns::new(columns))
    }

    /// The columns of a CRD's (its `apiextensions.k8s.io/v1` JSON) version
    /// `version`, `None` when it has no such version.
    pub fn from_crd(crd: &Value, version: &str) -> Option<Result<CrdColumns, String>> {
        items(crd, &["spec", "versions"])
            .iter()
            .find(|v| string(v, &["name"]) == version)
            .map(|v| CrdColumns::parse(at(v, &["additionalPrinterColumns"])))
    }

    /// The columns, in order (without `NAME`, which every table has first).
    pub fn columns(&self) -> impl Iterator<Item = &CrdColumn> {
        self.columns.iter().map(|(c, _)| c)
    }

    /// The column definitions' JSON, `NAME` first.
    pub(crate) fn definitions(&self) -> Value {
        std::iter::once(column("Name", "string", "name", NAME_DOC, 0))
            .chain(self.columns().map(|c| {
                let default;
                let description = if c.description.is_empty() {
                    default = format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        c.json_path
                    );
                    &default
                } else {
                    &c.description
                };
                column(&c.name, &c.ty, &c.format, description, c.priority)
            }))
            .collect()
    }

    /// A custom resource's cells.
    pub(crate) fn row(&self, o: &Value, now: Nanos) -> Vec<Value> {
        std::iter::once(name(o))
            .chain(self.columns.iter().map(|(c, path)| match path.find(o) {
                Ok(found) => found.first().map_or(Value::Null, |v| cell(&c.ty, v, now)),
                Err(_) => Value::Null,
            }))
            .collect()
    }
}

/// `cellForJSONValue`, and for `string` columns client-go's
/// `PrintResults`: text as Go prints it, objects and arrays as JSON.
fn cell(ty: &str, v: &Value, now: Nanos) -> Value {
    match (ty, v) {
        ("string", v) => Value::from(go_text(v)),
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n
            .as_i64()
            .map(|i| i as f64)
            .or_else(|| n.as_f64())
            .map_or(Value::Null, go_float_value),
        ("boolean", Value::Bool(b)) => Value::from(*b),
        ("date", Value::String(s)) if s.is_empty() || s == "null" => "<unknown>".into(),
        ("date", Value::String(s)) => match time::parse(s) {
            Some(_) => time::since(time::at(v), now).into(),
            None => "<invalid>".into(),
        },
        _ => Value::Null,
    }
}

/// A float64 as the apiserver's JSON carries it (`3`, not `3.0`).
fn go_float_value(f: f64) -> Value {
    serde_json::from_str(&go_float_json(f)).unwrap_or(Value::Null)
}

/// A float64's shortest digits, decimal point position and sign, as Go's
/// `strconv` has them (`1.5` is `("15", 1, false)`).
fn digits(f: f64) -> (String, i32, bool) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (
        digits,
        exp.parse::<i32>().unwrap_or(0) + 1,
        f.is_sign_negative(),
    )
}

/// `%e` with the shortest digits: `1.2345675e+06`.
fn fmt_e(d: &str, dp: i32, neg: bool) -> String {
    let (first, rest) = d.split_at(1);
    let dot = if rest.is_empty() { "" } else { "." };
    let exp = if d == "0" { 0 } else { dp - 1 };
    let sign = if exp < 0 { '-' } else { '+' };
    format!(
        "{}{first}{dot}{rest}e{sign}{:02}",
        if neg { "-" } else { "" },
        exp.abs()
    )
}

/// `%f` with the shortest digits: `0.001`, `2.5`, `100`.
fn fmt_f(d: &str, dp: i32, neg: bool) -> String {
    let sign = if neg { "-" } else { "" };
    let nd = d.len() as i32;
    if d == "0" {
        format!("{sign}0")
    } else if dp <= 0 {
        format!("{sign}0.{}{d}", "0".repeat((-dp) as usize))
    } else if dp >= nd {
        format!("{sign}{d}{}", "0".repeat((dp - nd) as usize))
    } else {
        let (a, b) = d.split_at(dp as usize);
        format!("{sign}{a}.{b}")
    }
}

/// A float64 as Go's `fmt.Print` writes it (`%v`: `%g` with the shortest
/// digits, in exponent form below 1e-4 and from 1e6 on).
fn go_float_text(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let (d, dp, neg) = digits(f);
    let exp = dp - 1;
    if d != "0" && !(-4..6).contains(&exp) {
        fmt_e(&d, dp, neg)
    } else {
        fmt_f(&d, dp, neg)
    }
}

/// A float64 as Go's `encoding/json` writes it.
fn go_float_json(f: f64) -> String {
    let (d, dp, neg) = digits(f);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut e = fmt_e(&d, dp, neg);
        // Go writes `1e-07` as `1e-7`.
        if let Some(i) = e.find("e-0") {
            e.remove(i + 2);
        }
        e
    } else {
        fmt_f(&d, dp, neg)
    }
}

/// A JSON value as client-go's `PrintResults` prints it: strings as they
/// are, numbers and booleans as Go prints them, null as `<no value>`,
/// objects and arrays as Go's `json.Marshal` writes them (keys sorted,
/// HTML characters escaped).
fn go_text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float_text(n.as_f64().unwrap_or_default()),
        },
        v => {
            let mut out = String::new();
            go_json(v, &mut out);
            out
        }
    }
}

/// Go's `json.Marshal` of an unstructured value.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_float_json(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(v, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn floats_print_as_go_prints_them() {
        for (f, text, json) in [
            (2.5, "2.5", "2.5"),
            (3.0, "3", "3"),
            (-0.5, "-0.5", "-0.5"),
            (0.0, "0", "0"),
            (1234567.5, "1.2345675e+06", "1234567.5"),
            (100000.0, "100000", "100000"),
            (1e21, "1e+21", "1e+21"),
            (1e20, "1e+20", "100000000000000000000"),
            (0.000001234, "1.234e-06", "0.000001234"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (1e-7, "1e-07", "1e-7"),
            (1.5e-300, "1.5e-300", "1.5e-300"),
        ] {
            assert_eq!(go_float_text(f), text, "{f}");
            assert_eq!(go_float_json(f), json, "{f}");
        }
    }

    #[test]
    fn objects_print_as_gos_json() {
        let v = json!({"z": 1, "a": "<x> & y\u{1}\u{2028}", "m": [true, null, 1.5, 1e-7]});
        assert_eq!(
            go_text(&v),
            r#"{"a":"\u003cx\u003e \u0026 y\u0001\u2028","m":[true,null,1.5,1e-7],"z":1}"#
        );
    }

    #[test]
    fn columns_come_from_the_crd_version() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
                {"name": "Bad", "type": "string", "jsonPath": ".spec["},
                {"name": "After", "type": "string", "jsonPath": ".spec.x"}]},
            {"name": "v2"}]}});
        let v1 = CrdColumns::from_crd(&crd, "v1").unwrap().unwrap();
        let names: Vec<&str> = v1.columns().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Size"]);
        let defs = v1.definitions();
        assert_eq!(
            defs[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
        assert_eq!(defs[1]["priority"], 1);
        let v2 = CrdColumns::from_crd(&crd, "v2").unwrap().unwrap();
        assert_eq!(v2, CrdColumns::default());
        assert!(CrdColumns::from_crd(&crd, "v3").is_none());
        assert!(CrdColumns::parse(&json!([{"name": "x"}])).is_err());
        assert!(CrdColumns::parse(&json!({})).is_err());
    }
}
