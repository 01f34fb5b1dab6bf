//! The core/v1 kinds' printers (and coordination.k8s.io's `Lease`'s), as
//! `pkg/printers/internalversion/printers.go` prints them: `printNode`,
//! `printNamespace`, `printConfigMap`, `printSecret`, `printEvent`,
//! `printLease` and `printServiceAccount`. Services and endpoints are
//! [`super::service`]'s.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, int, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Node",
        columns: NODES,
        row: node,
    },
    BuiltIn {
        kind: "Namespace",
        columns: NAMESPACES,
        row: namespace,
    },
    BuiltIn {
        kind: "ConfigMap",
        columns: CONFIGMAPS,
        row: config_map,
    },
    BuiltIn {
        kind: "Secret",
        columns: SECRETS,
        row: secret,
    },
    BuiltIn {
        kind: "Event",
        columns: EVENTS,
        row: event,
    },
    BuiltIn {
        kind: "Lease",
        columns: LEASES,
        row: lease,
    },
    BuiltIn {
        kind: "ServiceAccount",
        columns: SERVICEACCOUNTS,
        row: service_account,
    },
];

const NODES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Status", "string", "", "The status of the node", 0),
    Col::new("Roles", "string", "", "The roles of the node", 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "Version",
        "string",
        "",
        "Kubelet Version reported by the node.",
        0,
    ),
    Col::new(
        "Internal-IP",
        "string",
        "",
        "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).",
        1,
    ),
    Col::new(
        "External-IP",
        "string",
        "",
        "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).",
        1,
    ),
    Col::new(
        "OS-Image",
        "string",
        "",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    Col::new(
        "Kernel-Version",
        "string",
        "",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    Col::new(
        "Container-Runtime",
        "string",
        "",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        1,
    ),
];

const NAMESPACES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Status", "string", "", "The status of the namespace", 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const CONFIGMAPS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Data",
        "string",
        "",
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const SECRETS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Type",
        "string",
        "",
        "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        0,
    ),
    Col::new(
        "Data",
        "string",
        "",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const EVENTS: &[Col] = &[
    Col::new(
        "Last Seen",
        "string",
        "",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
    ),
    Col::new(
        "Type",
        "string",
        "",
        "Type of this event (Normal, Warning), new types could be added in the future",
        0,
    ),
    Col::new(
        "Reason",
        "string",
        "",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        0,
    ),
    Col::new(
        "Object",
        "string",
        "",
        "The object that this event is about.",
        0,
    ),
    Col::new(
        "Subobject",
        "string",
        "",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        1,
    ),
    Col::new(
        "Source",
        "string",
        "",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    Col::new(
        "Message",
        "string",
        "",
        "A human-readable description of the status of this operation.",
        0,
    ),
    Col::new(
        "First Seen",
        "string",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    Col::new(
        "Count",
        "string",
        "",
        "The number of times this event has occurred.",
        1,
    ),
    Col::new("Name", "string", "name", NAME_DOC, 1),
];

const LEASES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Holder",
        "string",
        "",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const SERVICEACCOUNTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
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
/// what it is about and who reported it.
fn event(o: &Value, now: Nanos) -> Row {
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
