//! The core/v1 printers of the kinds outside the everyday workloads, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printPodTemplate`, `printReplicationController` and
//! `printComponentStatus`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, format_labels, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "PodTemplate",
        group: "",
        row: pod_template,
    },
    BuiltIn {
        kind: "ReplicationController",
        group: "",
        row: replication_controller,
    },
    BuiltIn {
        kind: "ComponentStatus",
        group: "",
        row: component_status,
    },
];

/// `layoutContainerCells`: the containers' names and images, each joined
/// with `,`.
fn containers(pod_spec: &Value) -> [Value; 2] {
    let cs = items(pod_spec, &["containers"]);
    let join = |field: &str| {
        cs.iter()
            .map(|c| string(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    [join("name").into(), join("image").into()]
}

/// `printPodTemplate`: no age, the template's labels last.
fn pod_template(o: &Value, _now: Nanos) -> Row {
    let [names, images] = containers(at(o, &["template", "spec"]));
    Row::from(vec![
        name(o),
        names,
        images,
        format_labels(at(o, &["template", "metadata", "labels"])).into(),
    ])
}

/// `printReplicationController`, its wide columns included: the selector
/// is a plain label map (`labels.FormatLabels`).
fn replication_controller(o: &Value, now: Nanos) -> Row {
    let [names, images] = containers(at(o, &["spec", "template", "spec"]));
    Row::from(vec![
        name(o),
        int(o, &["spec", "replicas"]).into(),
        int(o, &["status", "replicas"]).into(),
        int(o, &["status", "readyReplicas"]).into(),
        age(o, now),
        names,
        images,
        format_labels(at(o, &["spec", "selector"])).into(),
    ])
}

/// `printComponentStatus`: the `Healthy` condition's status, message and
/// error, `Unknown` without one.
fn component_status(o: &Value, _now: Nanos) -> Row {
    let healthy = items(o, &["conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == "Healthy");
    let (status, message, error) = match healthy {
        None => ("Unknown", "", ""),
        Some(c) => (
            if string(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            string(c, &["message"]),
            string(c, &["error"]),
        ),
    };
    Row::from(vec![name(o), status.into(), message.into(), error.into()])
}
