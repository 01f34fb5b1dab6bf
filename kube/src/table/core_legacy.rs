//! The core/v1 printers of the kinds outside the everyday workloads, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printPodTemplate`, `printReplicationController` and
//! `printComponentStatus`.

use serde_json::Value;

use super::cells::{
    BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, format_labels, int, items, name, string,
};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "PodTemplate",
        columns: POD_TEMPLATES,
        row: pod_template,
    },
    BuiltIn {
        kind: "ReplicationController",
        columns: REPLICATION_CONTROLLERS,
        row: replication_controller,
    },
    BuiltIn {
        kind: "ComponentStatus",
        columns: COMPONENT_STATUSES,
        row: component_status,
    },
];

const POD_TEMPLATES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        0,
    ),
    Col::new(
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        0,
    ),
    Col::new(
        "Pod Labels",
        "string",
        "",
        "The labels for the pod template.",
        0,
    ),
];

const REPLICATION_CONTROLLERS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Desired",
        "integer",
        "",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    Col::new(
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    Col::new(
        "Ready",
        "integer",
        "",
        "The number of ready replicas for this replication controller.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        1,
    ),
    Col::new(
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        1,
    ),
    Col::new(
        "Selector",
        "string",
        "",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

const COMPONENT_STATUSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Status",
        "string",
        "",
        "Status of the component conditions",
        0,
    ),
    Col::new(
        "Message",
        "string",
        "",
        "Message of the component conditions",
        0,
    ),
    Col::new(
        "Error",
        "string",
        "",
        "Error of the component conditions",
        0,
    ),
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
