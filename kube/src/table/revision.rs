//! The apps/v1 `ControllerRevision` printer, `printControllerRevision`
//! (`pkg/printers/internalversion/printers.go`): its controller as
//! `formatResourceName` writes it (`statefulset.apps/web`).

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "ControllerRevision",
    group: "apps",
    row: controller_revision,
}];

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
