//! The apps/v1 and batch/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printDeployment`, `printReplicaSet`, `printDaemonSet`,
//! `printStatefulSet` and `printJob`, with `layoutContainerCells` and the
//! label selectors as apimachinery's `labels.Selector.String` writes them.

use serde_json::Value;

use super::cells::{
    BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, format_labels, int, items, name, string,
};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Deployment",
        columns: DEPLOYMENTS,
        row: deployment,
    },
    BuiltIn {
        kind: "ReplicaSet",
        columns: REPLICASETS,
        row: replica_set,
    },
    BuiltIn {
        kind: "DaemonSet",
        columns: DAEMONSETS,
        row: daemon_set,
    },
    BuiltIn {
        kind: "StatefulSet",
        columns: STATEFULSETS,
        row: stateful_set,
    },
    BuiltIn {
        kind: "Job",
        columns: JOBS,
        row: job,
    },
];

const DEPLOYMENTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Ready",
        "string",
        "",
        "Number of the pod with ready state",
        0,
    ),
    Col::new(
        "Up-to-date",
        "string",
        "",
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        0,
    ),
    Col::new(
        "Available",
        "string",
        "",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
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
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
        1,
    ),
];

const REPLICASETS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Desired",
        "integer",
        "",
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        0,
    ),
    Col::new(
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        0,
    ),
    Col::new(
        "Ready",
        "integer",
        "",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
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
        "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

const DAEMONSETS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Desired",
        "integer",
        "",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        0,
    ),
    Col::new(
        "Current",
        "integer",
        "",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        0,
    ),
    Col::new(
        "Ready",
        "integer",
        "",
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
        0,
    ),
    Col::new(
        "Up-to-date",
        "integer",
        "",
        "The total number of nodes that are running updated daemon pod",
        0,
    ),
    Col::new(
        "Available",
        "integer",
        "",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        0,
    ),
    Col::new(
        "Node Selector",
        "string",
        "",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
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
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

const STATEFULSETS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Ready",
        "string",
        "",
        "Number of the pod with ready state",
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
];

const JOBS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Status", "string", "", "Status of the job.", 0),
    Col::new(
        "Completions",
        "string",
        "",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        0,
    ),
    Col::new(
        "Duration",
        "string",
        "",
        "Time required to complete the job.",
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
        "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

/// `layoutContainerCells` of the pod template: its containers' names and
/// images.
fn containers(o: &Value) -> [Value; 2] {
    let cs = items(o, &["spec", "template", "spec", "containers"]);
    let join = |field: &str| {
        cs.iter()
            .map(|c| string(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    [join("name").into(), join("image").into()]
}

/// `metav1.LabelSelectorAsSelector(s).String()`: the requirements sorted
/// by key (`matchLabels`' before `matchExpressions`' of one key), `Err`
/// for a selector the apiserver cannot convert; empty for no selector and
/// for the empty one.
pub(crate) fn selector(s: &Value) -> Result<String, ()> {
    let mut reqs: Vec<(&str, String)> = Vec::new();
    for (k, v) in at(s, &["matchLabels"]).as_object().into_iter().flatten() {
        reqs.push((k, format!("{k}={}", v.as_str().ok_or(())?)));
    }
    for e in items(s, &["matchExpressions"]) {
        let key = string(e, &["key"]);
        let mut values: Vec<&str> = items(e, &["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match (string(e, &["operator"]), values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.to_owned(),
            ("DoesNotExist", true) => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(b.0));
    Ok(reqs.into_iter().map(|r| r.1).collect::<Vec<_>>().join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` for none, `<error>` for an
/// unconvertible one.
fn format_selector(s: &Value) -> String {
    match selector(s) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// `printDeployment`.
fn deployment(o: &Value, now: Nanos) -> Row {
    let [names, images] = containers(o);
    let ready = int(o, &["status", "readyReplicas"]);
    Row::from(vec![
        name(o),
        format!("{ready}/{}", int(o, &["spec", "replicas"])).into(),
        int(o, &["status", "updatedReplicas"]).into(),
        int(o, &["status", "availableReplicas"]).into(),
        age(o, now),
        names,
        images,
        selector(at(o, &["spec", "selector"]))
            .unwrap_or_else(|()| "<invalid>".into())
            .into(),
    ])
}

/// `printReplicaSet`.
fn replica_set(o: &Value, now: Nanos) -> Row {
    let [names, images] = containers(o);
    Row::from(vec![
        name(o),
        int(o, &["spec", "replicas"]).into(),
        int(o, &["status", "replicas"]).into(),
        int(o, &["status", "readyReplicas"]).into(),
        age(o, now),
        names,
        images,
        format_selector(at(o, &["spec", "selector"])).into(),
    ])
}

/// `printDaemonSet`.
fn daemon_set(o: &Value, now: Nanos) -> Row {
    let [names, images] = containers(o);
    let status = |f: &str| Value::from(int(o, &["status", f]));
    Row::from(vec![
        name(o),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        format_labels(at(o, &["spec", "template", "spec", "nodeSelector"])).into(),
        age(o, now),
        names,
        images,
        format_selector(at(o, &["spec", "selector"])).into(),
    ])
}

/// `printStatefulSet`.
fn stateful_set(o: &Value, now: Nanos) -> Row {
    let [names, images] = containers(o);
    let ready = int(o, &["status", "readyReplicas"]);
    Row::from(vec![
        name(o),
        format!("{ready}/{}", int(o, &["spec", "replicas"])).into(),
        age(o, now),
        names,
        images,
    ])
}

/// `hasJobCondition`: the first condition of the type decides.
fn job_condition(o: &Value, ty: &str) -> bool {
    items(o, &["status", "conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == ty)
        .is_some_and(|c| string(c, &["status"]) == "True")
}

/// `printJob`: its state, completions (`3/5`, `0/1 of 3` for a
/// work queue), and how long it ran.
fn job(o: &Value, now: Nanos) -> Row {
    let succeeded = int(o, &["status", "succeeded"]);
    let completions = at(o, &["spec", "completions"]);
    let completions = if let Some(c) = completions.as_i64() {
        format!("{succeeded}/{c}")
    } else {
        match int(o, &["spec", "parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        }
    };
    let (start, end) = (
        at(o, &["status", "startTime"]),
        at(o, &["status", "completionTime"]),
    );
    let duration = if start.is_null() {
        String::new()
    } else if end.is_null() {
        time::human_duration(time::sub(now, time::instant(start)))
    } else {
        time::human_duration(time::sub(time::instant(end), time::instant(start)))
    };
    let status = if job_condition(o, "Complete") {
        "Complete"
    } else if job_condition(o, "Failed") {
        "Failed"
    } else if !at(o, &["metadata", "deletionTimestamp"]).is_null() {
        "Terminating"
    } else if job_condition(o, "Suspended") {
        "Suspended"
    } else if job_condition(o, "FailureTarget") {
        "FailureTarget"
    } else if job_condition(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let [names, images] = containers(o);
    Row::from(vec![
        name(o),
        status.into(),
        completions.into(),
        duration.into(),
        age(o, now),
        names,
        images,
        format_selector(at(o, &["spec", "selector"])).into(),
    ])
}
