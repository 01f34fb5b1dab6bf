//! The apps/v1 and batch/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printDeployment`, `printReplicaSet`, `printDaemonSet`,
//! `printStatefulSet` and `printJob`, with `layoutContainerCells` and the
//! label selectors as apimachinery's `labels.Selector.String` writes them.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, format_labels, int, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Deployment",
        group: "apps",
        row: deployment,
    },
    BuiltIn {
        kind: "ReplicaSet",
        group: "apps",
        row: replica_set,
    },
    BuiltIn {
        kind: "DaemonSet",
        group: "apps",
        row: daemon_set,
    },
    BuiltIn {
        kind: "StatefulSet",
        group: "apps",
        row: stateful_set,
    },
    BuiltIn {
        kind: "Job",
        group: "batch",
        row: job,
    },
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
