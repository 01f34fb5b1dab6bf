//! The apps/v1 `ControllerRevision` printer, `printControllerRevision`
//! (`pkg/printers/internalversion/printers.go`): its controller as
//! `formatResourceName` writes it (`statefulset.apps/web`).

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "ControllerRevision",
    columns: CONTROLLER_REVISIONS,
    row: controller_revision,
}];

const CONTROLLER_REVISIONS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Controller", "string", "", "Controller of the object", 0),
    Col::new(
        "Revision",
        "string",
        "",
        "Revision indicates the revision of the state represented by Data.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

/// `metav1.GetControllerOf` and `formatResourceName(gvk.GroupKind(), name,
/// true)`: the lowercased `kind.group/name` of the first owner reference
/// marked `controller`, `<none>` without one.
pub(crate) fn controller(o: &Value) -> String {
    let Some(owner) = items(o, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
    else {
        return "<none>".into();
    };
    let api_version = string(owner, &["apiVersion"]);
    // `schema.ParseGroupVersion`: `v1` is the core group's, `g/v` group g's.
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    let kind = string(owner, &["kind"]);
    let name = string(owner, &["name"]);
    match (kind, group) {
        ("", "") => name.to_owned(),
        (kind, "") => format!("{}/{name}", kind.to_lowercase()),
        (kind, group) => format!("{}/{name}", format!("{kind}.{group}").to_lowercase()),
    }
}

/// `printControllerRevision`.
fn controller_revision(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        controller(o).into(),
        int(o, &["revision"]).into(),
        age(o, now),
    ])
}
