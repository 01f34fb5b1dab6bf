//! The storage printers, as `pkg/printers/internalversion/printers.go`
//! prints them: `printStorageClass` (and, for a list,
//! `printStorageClassList`, which marks the effective default class),
//! `printPersistentVolume`, `printPersistentVolumeClaim` and
//! `printResourceQuota`; and `LimitRange`, which has no printer, with the
//! apiserver's default table convertor.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::rbac::created;
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "StorageClass",
        group: "storage.k8s.io",
        row: storage_class,
    },
    BuiltIn {
        kind: "PersistentVolume",
        group: "",
        row: persistent_volume,
    },
    BuiltIn {
        kind: "PersistentVolumeClaim",
        group: "",
        row: claim,
    },
    BuiltIn {
        kind: "ResourceQuota",
        group: "",
        row: resource_quota,
    },
    BuiltIn {
        kind: "LimitRange",
        group: "",
        row: created,
    },
];

/// A string field, or `default` when it is unset.
fn or<'a>(v: &'a Value, path: &[&str], default: &'a str) -> &'a str {
    at(v, path).as_str().unwrap_or(default)
}

/// `resource.Quantity.String` of a served (so canonical) quantity, `0`
/// for none (the zero quantity).
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".into(),
    }
}

/// Whether the object is being deleted (its phase then prints as
/// `Terminating`).
fn deleting(o: &Value) -> bool {
    !at(o, &["metadata", "deletionTimestamp"]).is_null()
}

/// `helper.GetAccessModesAsString`: the modes present, in the order
/// `RWO,ROX,RWX,RWOP`.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .into_iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `helper.GetPersistentVolume(Claim)Class`: the beta annotation's class,
/// else `spec.storageClassName`.
fn class(o: &Value) -> &str {
    match at(
        o,
        &[
            "metadata",
            "annotations",
            "volume.beta.kubernetes.io/storage-class",
        ],
    )
    .as_str()
    {
        Some(c) => c,
        None => string(o, &["spec", "storageClassName"]),
    }
}

/// `printStorageClass`: a single class (or a watch event's) is never
/// marked default.
fn storage_class(o: &Value, now: Nanos) -> Row {
    storage_class_row(o, now, false)
}

/// `printStorageClassInternal`, with ` (default)` after the name of the
/// list's effective default class.
fn storage_class_row(o: &Value, now: Nanos, default: bool) -> Row {
    let mut n = string(o, &["metadata", "name"]).to_owned();
    if default {
        n.push_str(" (default)");
    }
    Row::from(vec![
        n.into(),
        string(o, &["provisioner"]).into(),
        or(o, &["reclaimPolicy"], "Delete").into(),
        or(o, &["volumeBindingMode"], "Immediate").into(),
        at(o, &["allowVolumeExpansion"])
            .as_bool()
            .unwrap_or_default()
            .into(),
        age(o, now),
    ])
}

/// `storageutil.IsDefaultAnnotation`.
fn is_default(o: &Value) -> bool {
    let annotations = at(o, &["metadata", "annotations"]);
    [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| annotations.get(a).and_then(Value::as_str) == Some("true"))
}

/// `printStorageClassList`: `getEffectiveDefaultStorageClass` picks the
/// most recently created class annotated default (on a tie, the first
/// name), whose name is then printed with ` (default)`.
pub(crate) fn storage_class_list(objects: &[Value], now: Nanos) -> Vec<Row> {
    let created = |o: &Value| time::at(at(o, &["metadata", "creationTimestamp"]));
    let mut default: Option<&Value> = None;
    for o in objects.iter().filter(|o| is_default(o)) {
        default = match default {
            None => Some(o),
            Some(d) if created(o) > created(d) => Some(o),
            Some(d)
                if created(o) == created(d)
                    && string(o, &["metadata", "name"]) < string(d, &["metadata", "name"]) =>
            {
                Some(o)
            }
            d => d,
        };
    }
    let default = default.map(|d| string(d, &["metadata", "name"]));
    objects
        .iter()
        .map(|o| {
            let marked = !default.unwrap_or_default().is_empty()
                && default == Some(string(o, &["metadata", "name"]));
            storage_class_row(o, now, marked)
        })
        .collect()
}

/// `printPersistentVolume`.
fn persistent_volume(o: &Value, now: Nanos) -> Row {
    let claim_ref = at(o, &["spec", "claimRef"]);
    let claim = if claim_ref.is_null() {
        String::new()
    } else {
        format!(
            "{}/{}",
            string(claim_ref, &["namespace"]),
            string(claim_ref, &["name"])
        )
    };
    let phase = if deleting(o) {
        "Terminating"
    } else {
        string(o, &["status", "phase"])
    };
    Row::from(vec![
        name(o),
        quantity(at(o, &["spec", "capacity", "storage"])).into(),
        access_modes(items(o, &["spec", "accessModes"])).into(),
        string(o, &["spec", "persistentVolumeReclaimPolicy"]).into(),
        phase.into(),
        claim.into(),
        class(o).into(),
        or(o, &["spec", "volumeAttributesClassName"], "<unset>").into(),
        string(o, &["status", "reason"]).into(),
        age(o, now),
        or(o, &["spec", "volumeMode"], "<unset>").into(),
    ])
}

/// `printPersistentVolumeClaim`: the capacity and access modes are the
/// bound volume's, and empty until the claim names one.
fn claim(o: &Value, now: Nanos) -> Row {
    let phase = if deleting(o) {
        "Terminating"
    } else {
        string(o, &["status", "phase"])
    };
    let volume = string(o, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(at(o, &["status", "capacity", "storage"])),
            access_modes(items(o, &["status", "accessModes"])),
        )
    };
    Row::from(vec![
        name(o),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class(o).into(),
        or(o, &["spec", "volumeAttributesClassName"], "<unset>").into(),
        age(o, now),
        or(o, &["spec", "volumeMode"], "<unset>").into(),
    ])
}

/// `printResourceQuota`: `resource: used/hard` for every hard limit, by
/// name, the `limits.*` ones in the limit column.
fn resource_quota(o: &Value, now: Nanos) -> Row {
    let hard = at(o, &["status", "hard"]);
    let mut resources: Vec<&String> = hard
        .as_object()
        .into_iter()
        .flatten()
        .map(|e| e.0)
        .collect();
    resources.sort();
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for r in resources {
        let text = format!(
            "{r}: {}/{}",
            quantity(at(o, &["status", "used", r.as_str()])),
            quantity(&hard[r.as_str()])
        );
        let mut pieces = r.split('.');
        if pieces.next() == Some("limits") && pieces.next().is_some() {
            limit.push(text);
        } else {
            request.push(text);
        }
    }
    Row::from(vec![
        name(o),
        request.join(", ").into(),
        limit.join(", ").into(),
        age(o, now),
    ])
}
