//! The node.k8s.io/v1 `RuntimeClass` printer, `printRuntimeClass`
//! (`pkg/printers/internalversion/printers.go`).

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "RuntimeClass",
    group: "node.k8s.io",
    row: runtime_class,
}];

/// `printRuntimeClass`: the handler.
fn runtime_class(o: &Value, now: Nanos) -> Row {
    Row::from(vec![name(o), string(o, &["handler"]).into(), age(o, now)])
}
