//! The printers of the API machinery's own kinds: apiregistration.k8s.io/v1
//! `APIService` with kube-aggregator's table convertor (`pkg/registry/
//! apiservice/etcd`: the service, `Local` for none, and the `Available`
//! condition), and storagemigration.k8s.io/v1 `StorageVersionMigration`
//! as `printStorageVersionMigration` prints it.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "APIService",
        group: "apiregistration.k8s.io",
        row: api_service,
    },
    BuiltIn {
        kind: "StorageVersionMigration",
        group: "storagemigration.k8s.io",
        row: migration,
    },
];

/// The aggregator's row: `namespace/name` of the service, and `True`,
/// `status (reason)` or `status` of the `Available` condition (`Unknown`
/// without one).
fn api_service(o: &Value, now: Nanos) -> Row {
    let svc = at(o, &["spec", "service"]);
    let service = if svc.is_object() {
        format!("{}/{}", string(svc, &["namespace"]), string(svc, &["name"]))
    } else {
        "Local".into()
    };
    let available = items(o, &["status", "conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == "Available")
        .map_or_else(
            || "Unknown".to_owned(),
            |c| {
                let (status, reason) = (string(c, &["status"]), string(c, &["reason"]));
                if status == "True" || reason.is_empty() {
                    status.to_owned()
                } else {
                    format!("{status} ({reason})")
                }
            },
        );
    Row::from(vec![name(o), service.into(), available.into(), age(o, now)])
}

/// `printStorageVersionMigration`: the resource as
/// `schema.GroupResource.String` writes it, and the last true condition
/// among `Running`, `Failed` and `Succeeded` (`Unknown` for none).
fn migration(o: &Value, _now: Nanos) -> Row {
    let (group, resource) = (
        string(o, &["spec", "resource", "group"]),
        string(o, &["spec", "resource", "resource"]),
    );
    let gr = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let status = items(o, &["status", "conditions"])
        .iter()
        .filter(|c| string(c, &["status"]) == "True")
        .filter_map(|c| match string(c, &["type"]) {
            t @ ("Running" | "Failed" | "Succeeded") => Some(t),
            _ => None,
        })
        .next_back()
        .unwrap_or("Unknown");
    Row::from(vec![name(o), gr.into(), status.into()])
}
