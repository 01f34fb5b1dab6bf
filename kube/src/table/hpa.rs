//! The autoscaling/v2 `HorizontalPodAutoscaler` printer,
//! `printHorizontalPodAutoscaler` (`pkg/printers/internalversion/printers.go`),
//! with `formatHPAMetrics`: each metric's current and target values (the
//! current one from `status.currentMetrics` at the same index), the first
//! two only and `+ N more...`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "HorizontalPodAutoscaler",
    group: "autoscaling",
    row: horizontal_pod_autoscaler,
}];

/// A `resource.Quantity` pointer's `String()`: `<nil>` for none.
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "<nil>".into(),
    }
}

/// The status of metric `i` of type `source` (`resource`, `pods`, ...),
/// if there is one.
fn current<'a>(statuses: &'a [Value], i: usize, source: &str) -> Option<&'a Value> {
    statuses
        .get(i)
        .map(|s| &s[source])
        .filter(|s| s.is_object())
}

/// One metric of `formatHPAMetrics`.
fn metric(spec: &Value, statuses: &[Value], i: usize) -> String {
    let unknown = || "<unknown>".to_owned();
    match string(spec, &["type"]) {
        source @ ("External" | "Object") => {
            let field = if source == "External" {
                "external"
            } else {
                "object"
            };
            let target = at(spec, &[field, "target"]);
            let status = current(statuses, i, field);
            if target["averageValue"].is_null() {
                let now = status.map_or_else(unknown, |s| quantity(at(s, &["current", "value"])));
                format!("{now}/{}", quantity(&target["value"]))
            } else {
                let now = status
                    .map(|s| at(s, &["current", "averageValue"]))
                    .filter(|q| !q.is_null())
                    .map_or_else(unknown, quantity);
                format!("{now}/{} (avg)", quantity(&target["averageValue"]))
            }
        }
        "Pods" => {
            let now = current(statuses, i, "pods")
                .map_or_else(unknown, |s| quantity(at(s, &["current", "averageValue"])));
            format!(
                "{now}/{}",
                quantity(at(spec, &["pods", "target", "averageValue"]))
            )
        }
        source @ ("Resource" | "ContainerResource") => {
            let field = if source == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let resource = string(spec, &[field, "name"]);
            let target = at(spec, &[field, "target"]);
            let status = current(statuses, i, field);
            if target["averageValue"].is_null() {
                let now = status
                    .and_then(|s| at(s, &["current", "averageUtilization"]).as_i64())
                    .map_or_else(unknown, |u| format!("{u}%"));
                let target = target["averageUtilization"]
                    .as_i64()
                    .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                format!("{resource}: {now}/{target}")
            } else {
                let now =
                    status.map_or_else(unknown, |s| quantity(at(s, &["current", "averageValue"])));
                format!("{resource}: {now}/{}", quantity(&target["averageValue"]))
            }
        }
        _ => "<unknown type>".into(),
    }
}

/// `formatHPAMetrics`: `<none>` without metrics.
fn metrics(o: &Value) -> String {
    let specs = items(o, &["spec", "metrics"]);
    let statuses = items(o, &["status", "currentMetrics"]);
    if specs.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 2;
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .take(MAX)
        .map(|(i, spec)| metric(spec, statuses, i))
        .collect();
    let joined = list.join(", ");
    if specs.len() > MAX {
        format!("{joined} + {} more...", specs.len() - MAX)
    } else {
        joined
    }
}

/// `printHorizontalPodAutoscaler`.
fn horizontal_pod_autoscaler(o: &Value, now: Nanos) -> Row {
    let reference = format!(
        "{}/{}",
        string(o, &["spec", "scaleTargetRef", "kind"]),
        string(o, &["spec", "scaleTargetRef", "name"])
    );
    let min = at(o, &["spec", "minReplicas"])
        .as_i64()
        .map_or_else(|| "<unset>".to_owned(), |n| n.to_string());
    Row::from(vec![
        name(o),
        reference.into(),
        metrics(o).into(),
        min.into(),
        int(o, &["spec", "maxReplicas"]).into(),
        int(o, &["status", "currentReplicas"]).into(),
        age(o, now),
    ])
}
