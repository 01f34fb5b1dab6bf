//! What every printer is made of: the column definitions and rows of a
//! `Table`, the built-in printers' shape, and the reads of an object's
//! JSON with Go's zero values for what is missing.

use serde_json::{Value, json};

use super::time;

/// `metav1.ObjectMeta`'s documentation of `name`, every table's first
/// column's description.
pub(crate) const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `metav1.ObjectMeta`'s documentation of `creationTimestamp`, the age
/// column's description.
pub(crate) const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A column definition's JSON.
pub(crate) fn column(
    name: &str,
    ty: &str,
    format: &str,
    description: &str,
    priority: i32,
) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

/// One row's cells, and its conditions (a finished pod's `Completed`).
#[derive(Debug, Default)]
pub(crate) struct Row {
    pub(crate) cells: Vec<Value>,
    pub(crate) conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// A built-in kind's printer: its kind, its API group (whose columns
/// the generated schema gives: see the `columns` module) and its row
/// function, which takes the object's JSON and the time to compute ages
/// at.
#[derive(Debug)]
pub(crate) struct BuiltIn {
    pub(crate) kind: &'static str,
    pub(crate) group: &'static str,
    pub(crate) row: fn(&Value, time::Nanos) -> Row,
}

/// The value at `path` under `v`, null when any step is missing.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .unwrap_or(&Value::Null)
}

/// The string at `path`, empty when missing (a Go string's zero value).
pub(crate) fn string<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).as_str().unwrap_or_default()
}

/// The integer at `path`, 0 when missing.
pub(crate) fn int(v: &Value, path: &[&str]) -> i64 {
    at(v, path).as_i64().unwrap_or_default()
}

/// The array at `path`, empty when missing.
pub(crate) fn items<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path).as_array().map_or(&[], Vec::as_slice)
}

/// The object's name and its age at `now`, every printer's first and
/// (usually) last cells.
pub(crate) fn name(v: &Value) -> Value {
    Value::from(string(v, &["metadata", "name"]))
}

/// `translateTimestampSince(obj.CreationTimestamp)`.
pub(crate) fn age(v: &Value, now: time::Nanos) -> Value {
    Value::from(time::since(
        time::at(at(v, &["metadata", "creationTimestamp"])),
        now,
    ))
}

/// `labels.FormatLabels`: a string map as sorted `k=v` pairs, `<none>`
/// when empty.
pub(crate) fn format_labels(v: &Value) -> String {
    let mut pairs: Vec<String> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}
