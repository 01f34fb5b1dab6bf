//! The rbac.authorization.k8s.io/v1 printers: `printRoleBinding` and
//! `printClusterRoleBinding` (`pkg/printers/internalversion/printers.go`),
//! and, for `Role` and `ClusterRole`, whose storage has no printer, the
//! apiserver's default table convertor (`k8s.io/apiserver`
//! `pkg/registry/rest/table.go`: the name and the creation time).

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Role",
        group: "rbac.authorization.k8s.io",
        row: created,
    },
    BuiltIn {
        kind: "ClusterRole",
        group: "rbac.authorization.k8s.io",
        row: created,
    },
    BuiltIn {
        kind: "RoleBinding",
        group: "rbac.authorization.k8s.io",
        row: binding,
    },
    BuiltIn {
        kind: "ClusterRoleBinding",
        group: "rbac.authorization.k8s.io",
        row: binding,
    },
];

/// The default table convertor's row: the name and the creation time in
/// RFC 3339 (`0001-01-01T00:00:00Z` for none).
pub(crate) fn created(o: &Value, _now: Nanos) -> Row {
    let t = time::at(at(o, &["metadata", "creationTimestamp"]));
    Row::from(vec![name(o), time::rfc3339(t).into()])
}

/// `printRoleBinding` and `printClusterRoleBinding`: the role, and the
/// subjects by kind (`rbac.SubjectsStrings`).
fn binding(o: &Value, now: Nanos) -> Row {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in items(o, &["subjects"]) {
        let name = string(s, &["name"]);
        match string(s, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{name}", string(s, &["namespace"]))),
            "User" => users.push(name.to_owned()),
            "Group" => groups.push(name.to_owned()),
            _ => {}
        }
    }
    let role = format!(
        "{}/{}",
        string(o, &["roleRef", "kind"]),
        string(o, &["roleRef", "name"])
    );
    Row::from(vec![
        name(o),
        role.into(),
        age(o, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        sas.join(", ").into(),
    ])
}
