//! The core/v1 kinds' printers (and coordination.k8s.io's `Lease`'s), as
//! `pkg/printers/internalversion/printers.go` prints them: `printNode`,
//! `printNamespace`, `printConfigMap`, `printSecret`, `printEvent`,
//! `printLease` and `printServiceAccount`. Services and endpoints are
//! [`super::service`]'s.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, int, items, name, string};
use super::events;
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Node",
        group: "",
        row: node,
    },
    BuiltIn {
        kind: "Namespace",
        group: "",
        row: namespace,
    },
    BuiltIn {
        kind: "ConfigMap",
        group: "",
        row: config_map,
    },
    BuiltIn {
        kind: "Secret",
        group: "",
        row: secret,
    },
    BuiltIn {
        kind: "Event",
        group: "",
        row: event,
    },
    BuiltIn {
        kind: "Lease",
        group: "coordination.k8s.io",
        row: lease,
    },
    BuiltIn {
        kind: "ServiceAccount",
        group: "",
        row: service_account,
    },
];

/// `printNode`: the Ready condition, roles from `node-role.kubernetes.io/*`
/// and `kubernetes.io/role` labels, and the node info.
fn node(o: &Value, now: Nanos) -> Row {
    // The last condition of each type counts.
    let conditions: BTreeMap<&str, &str> = items(o, &["status", "conditions"])
        .iter()
        .map(|c| (string(c, &["type"]), string(c, &["status"])))
        .collect();
    let mut status: Vec<String> = conditions
        .get("Ready")
        .map(|s| {
            if *s == "True" {
                "Ready".into()
            } else {
                "NotReady".into()
            }
        })
        .into_iter()
        .collect();
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if at(o, &["spec", "unschedulable"]).as_bool() == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles = BTreeSet::new();
    for (k, v) in at(o, &["metadata", "labels"])
        .as_object()
        .into_iter()
        .flatten()
    {
        if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_owned());
            }
        } else if k == "kubernetes.io/role" && v.as_str().is_some_and(|v| !v.is_empty()) {
            roles.insert(v.as_str().unwrap_or_default().to_owned());
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let info = |field: &str| match string(o, &["status", "nodeInfo", field]) {
        "" => "<unknown>".to_owned(),
        s => s.to_owned(),
    };
    let mut kernel = info("kernelVersion");
    let arch = string(o, &["status", "nodeInfo", "architecture"]);
    if !arch.is_empty() {
        kernel = format!("{kernel} ({arch})");
    }
    let address = |ty: &str| {
        items(o, &["status", "addresses"])
            .iter()
            .find(|a| string(a, &["type"]) == ty)
            .map_or("<none>", |a| string(a, &["address"]))
    };
    Row::from(vec![
        name(o),
        status.join(",").into(),
        roles.into(),
        age(o, now),
        string(o, &["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        kernel.into(),
        info("containerRuntimeVersion").into(),
    ])
}

/// `printNamespace`.
fn namespace(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["status", "phase"]).into(),
        age(o, now),
    ])
}

/// `printConfigMap`: the number of keys, text and binary.
fn config_map(o: &Value, now: Nanos) -> Row {
    let keys = |f: &str| at(o, &[f]).as_object().map_or(0, serde_json::Map::len);
    Row::from(vec![
        name(o),
        ((keys("data") + keys("binaryData")) as i64).into(),
        age(o, now),
    ])
}

/// `printSecret`.
fn secret(o: &Value, now: Nanos) -> Row {
    let keys = at(o, &["data"]).as_object().map_or(0, serde_json::Map::len);
    Row::from(vec![
        name(o),
        string(o, &["type"]).into(),
        (keys as i64).into(),
        age(o, now),
    ])
}

/// `printEvent`: when it was last and first seen (`eventTime` for an event
/// without `firstTimestamp`, its series' last observation for a series),
/// what it is about and who reported it; an events.k8s.io/v1 event read
/// with core/v1's field names, as the apiserver converts it.
fn event(o: &Value, now: Nanos) -> Row {
    let o = &*events::as_core(o);
    let first = match time::at(at(o, &["firstTimestamp"])) {
        None => time::since(time::at(at(o, &["eventTime"])), now),
        t => time::since(t, now),
    };
    let mut last = match time::at(at(o, &["lastTimestamp"])) {
        None => first.clone(),
        t => time::since(t, now),
    };
    let mut count = int(o, &["count"]);
    let series = at(o, &["series"]);
    if series.is_object() {
        last = time::since(time::at(at(series, &["lastObservedTime"])), now);
        count = int(series, &["count"]);
    } else if count == 0 {
        count = 1;
    }
    let kind = string(o, &["involvedObject", "kind"]).to_lowercase();
    let target = match string(o, &["involvedObject", "name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_owned()
        } else {
            a.to_owned()
        }
    };
    let component = first_non_empty(
        string(o, &["source", "component"]),
        string(o, &["reportingComponent"]),
    );
    let instance = first_non_empty(
        string(o, &["source", "host"]),
        string(o, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    Row::from(vec![
        last.into(),
        string(o, &["type"]).into(),
        string(o, &["reason"]).into(),
        target.into(),
        string(o, &["involvedObject", "fieldPath"]).into(),
        source.into(),
        string(o, &["message"]).trim().into(),
        first.into(),
        count.into(),
        name(o),
    ])
}

/// `printLease`.
fn lease(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["spec", "holderIdentity"]).into(),
        age(o, now),
    ])
}

/// `printServiceAccount`.
fn service_account(o: &Value, now: Nanos) -> Row {
    Row::from(vec![name(o), age(o, now)])
}
