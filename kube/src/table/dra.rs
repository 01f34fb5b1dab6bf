//! The resource.k8s.io/v1 (dynamic resource allocation) printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printDeviceClass`, `printResourceClaim`, `printResourceClaimTemplate`,
//! `printResourceSlice` and `printDeviceTaint`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "DeviceClass",
        group: "resource.k8s.io",
        row: aged,
    },
    BuiltIn {
        kind: "ResourceClaim",
        group: "resource.k8s.io",
        row: resource_claim,
    },
    BuiltIn {
        kind: "ResourceClaimTemplate",
        group: "resource.k8s.io",
        row: aged,
    },
    BuiltIn {
        kind: "ResourceSlice",
        group: "resource.k8s.io",
        row: resource_slice,
    },
    BuiltIn {
        kind: "DeviceTaintRule",
        group: "resource.k8s.io",
        row: device_taint_rule,
    },
];

/// `printDeviceClass` and `printResourceClaimTemplate`: the name and the
/// age.
fn aged(o: &Value, now: Nanos) -> Row {
    Row::from(vec![name(o), age(o, now)])
}

/// `resourceClaimState`: `deleted`, then `pending` (unallocated, not
/// being deleted) or `allocated` and `reserved`, joined with `,`.
fn resource_claim(o: &Value, now: Nanos) -> Row {
    let deleted = time::at(at(o, &["metadata", "deletionTimestamp"])).is_some();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if at(o, &["status", "allocation"]).is_object() {
        states.push("allocated");
        if !items(o, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    } else if !deleted {
        states.push("pending");
    }
    Row::from(vec![name(o), states.join(",").into(), age(o, now)])
}

/// `printResourceSlice`: the node (empty for a slice of all nodes or a
/// node selector), the driver and the pool.
fn resource_slice(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["spec", "nodeName"]).into(),
        string(o, &["spec", "driver"]).into(),
        string(o, &["spec", "pool", "name"]).into(),
        age(o, now),
    ])
}

/// `printDeviceTaint`: the taint, and how long ago it was added (empty
/// when it has no time).
fn device_taint_rule(o: &Value, now: Nanos) -> Row {
    let taint = at(o, &["spec", "taint"]);
    let added = match time::at(&taint["timeAdded"]) {
        Some(t) => time::since(Some(t), now),
        None => String::new(),
    };
    Row::from(vec![
        name(o),
        string(taint, &["key"]).into(),
        string(taint, &["value"]).into(),
        string(taint, &["effect"]).into(),
        added.into(),
        age(o, now),
    ])
}
