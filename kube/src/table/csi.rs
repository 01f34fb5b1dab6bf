//! The storage.k8s.io/v1 printers of CSI drivers and their attachments,
//! as `pkg/printers/internalversion/printers.go` prints them:
//! `printCSIDriver`, `printCSINode`, `printVolumeAttachment` and
//! `printVolumeAttributesClass`; and `CSIStorageCapacity`, whose storage
//! has no printer, with the apiserver's default convertor (the name and
//! the creation time).

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::rbac::created;
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CSIDriver",
        group: "storage.k8s.io",
        row: csi_driver,
    },
    BuiltIn {
        kind: "CSINode",
        group: "storage.k8s.io",
        row: csi_node,
    },
    BuiltIn {
        kind: "CSIStorageCapacity",
        group: "storage.k8s.io",
        row: created,
    },
    BuiltIn {
        kind: "VolumeAttachment",
        group: "storage.k8s.io",
        row: volume_attachment,
    },
    BuiltIn {
        kind: "VolumeAttributesClass",
        group: "storage.k8s.io",
        row: volume_attributes_class,
    },
];

/// The boolean at `path`, `default` when unset.
fn flag(o: &Value, path: &[&str], default: bool) -> Value {
    at(o, path).as_bool().unwrap_or(default).into()
}

/// The strings of `field` of each item of the array at `path`, or the
/// array's strings themselves for no `field`, joined with `,`.
fn joined(o: &Value, path: &[&str], field: Option<&str>) -> String {
    items(o, path)
        .iter()
        .map(|v| match field {
            Some(f) => string(v, &[f]),
            None => v.as_str().unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `printCSIDriver`: attach required unless said otherwise, the token
/// requests' audiences (`<unset>` for none), the lifecycle modes
/// (`<none>` for none; storage defaults them to `Persistent`).
fn csi_driver(o: &Value, now: Nanos) -> Row {
    let tokens = if at(o, &["spec", "tokenRequests"]).is_array() {
        joined(o, &["spec", "tokenRequests"], Some("audience"))
    } else {
        "<unset>".into()
    };
    let mut modes = joined(o, &["spec", "volumeLifecycleModes"], None);
    if modes.is_empty() {
        modes = "<none>".into();
    }
    Row::from(vec![
        name(o),
        flag(o, &["spec", "attachRequired"], true),
        flag(o, &["spec", "podInfoOnMount"], false),
        flag(o, &["spec", "storageCapacity"], false),
        tokens.into(),
        flag(o, &["spec", "requiresRepublish"], false),
        modes.into(),
        age(o, now),
    ])
}

/// `printCSINode`: how many drivers it runs.
fn csi_node(o: &Value, now: Nanos) -> Row {
    let drivers = items(o, &["spec", "drivers"]).len() as i64;
    Row::from(vec![name(o), drivers.into(), age(o, now)])
}

/// `printVolumeAttachment`.
fn volume_attachment(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["spec", "attacher"]).into(),
        string(o, &["spec", "source", "persistentVolumeName"]).into(),
        string(o, &["spec", "nodeName"]).into(),
        flag(o, &["status", "attached"], false),
        age(o, now),
    ])
}

/// `printVolumeAttributesClass`.
fn volume_attributes_class(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["driverName"]).into(),
        age(o, now),
    ])
}
