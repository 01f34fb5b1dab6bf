//! The resource.k8s.io/v1 (dynamic resource allocation) printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printDeviceClass`, `printResourceClaim`, `printResourceClaimTemplate`,
//! `printResourceSlice` and `printDeviceTaint`.

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "DeviceClass",
        columns: DEVICE_CLASSES,
        row: aged,
    },
    BuiltIn {
        kind: "ResourceClaim",
        columns: RESOURCE_CLAIMS,
        row: resource_claim,
    },
    BuiltIn {
        kind: "ResourceClaimTemplate",
        columns: RESOURCE_CLAIM_TEMPLATES,
        row: aged,
    },
    BuiltIn {
        kind: "ResourceSlice",
        columns: RESOURCE_SLICES,
        row: resource_slice,
    },
    BuiltIn {
        kind: "DeviceTaintRule",
        columns: DEVICE_TAINT_RULES,
        row: device_taint_rule,
    },
];

const DEVICE_CLASSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const RESOURCE_CLAIMS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "State",
        "string",
        "",
        "A summary of the current state (allocated, pending, reserved, etc.).",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const RESOURCE_CLAIM_TEMPLATES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const RESOURCE_SLICES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Node",
        "string",
        "",
        "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.",
        0,
    ),
    Col::new(
        "Driver",
        "string",
        "",
        "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.",
        0,
    ),
    Col::new(
        "Pool",
        "string",
        "",
        "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const DEVICE_TAINT_RULES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Key",
        "string",
        "",
        "The taint key to be applied to a device. Must be a label name.",
        0,
    ),
    Col::new(
        "Value",
        "string",
        "",
        "The taint value corresponding to the taint key. Must be a label value.",
        0,
    ),
    Col::new(
        "Effect",
        "string",
        "",
        "The effect of the taint on claims that do not tolerate the taint and through such claims on the pods using them.\n\nValid effects are None, NoSchedule and NoExecute. PreferNoSchedule as used for nodes is not valid here. More effects may get added in the future. Consumers must treat unknown effects like None.",
        0,
    ),
    Col::new(
        "TimeAdded",
        "string",
        "",
        "TimeAdded represents the time at which the taint was added or (only in a DeviceTaintRule) the effect was modified. Added automatically during create or update if not set.\n\nIn addition, in a DeviceTaintRule a value provided during an update gets replaced with the current time if the provided value is the same as the old one and the new effect is different. Changing the key and/or value while keeping the effect unchanged is possible and does not update the time stamp because the eviction which uses it is either already started (NoExecute) or not started yet (NoEffect, NoSchedule).",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
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
