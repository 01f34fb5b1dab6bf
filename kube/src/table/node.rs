//! The node.k8s.io/v1 `RuntimeClass` printer, `printRuntimeClass`
//! (`pkg/printers/internalversion/printers.go`).

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "RuntimeClass",
    columns: RUNTIME_CLASSES,
    row: runtime_class,
}];

const RUNTIME_CLASSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Handler", "string", "", "", 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

/// `printRuntimeClass`: the handler.
fn runtime_class(o: &Value, now: Nanos) -> Row {
    Row::from(vec![name(o), string(o, &["handler"]).into(), age(o, now)])
}
