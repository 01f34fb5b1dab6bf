//! The batch/v1 `CronJob`, networking.k8s.io/v1 `Ingress` and
//! `NetworkPolicy`, policy/v1 `PodDisruptionBudget` and scheduling.k8s.io/v1
//! `PriorityClass` printers, as `pkg/printers/internalversion/printers.go`
//! prints them: `printCronJob`, `printIngress`, `printNetworkPolicy`,
//! `printPodDisruptionBudget` and `printPriorityClass`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::apps::selector;
use super::cells::{BuiltIn, Row, age, at, int, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CronJob",
        group: "batch",
        row: cron_job,
    },
    BuiltIn {
        kind: "Ingress",
        group: "networking.k8s.io",
        row: ingress,
    },
    BuiltIn {
        kind: "NetworkPolicy",
        group: "networking.k8s.io",
        row: network_policy,
    },
    BuiltIn {
        kind: "PodDisruptionBudget",
        group: "policy",
        row: pdb,
    },
    BuiltIn {
        kind: "PriorityClass",
        group: "scheduling.k8s.io",
        row: priority_class,
    },
];

/// `metav1.FormatLabelSelector`: `<none>` for none and for the empty
/// one, `<error>` for an unconvertible one.
fn format_selector(s: &Value) -> String {
    match selector(s) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// A string field, or `default` when it is unset.
fn or<'a>(v: &'a Value, path: &[&str], default: &'a str) -> &'a str {
    at(v, path).as_str().unwrap_or(default)
}

/// `printBoolPtr`: `True`, `False`, or `<unset>`.
fn bool_ptr(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

/// `printCronJob`: the schedule, its time zone, whether it is suspended,
/// its active jobs, when it last scheduled one, and (wide) its job
/// template's containers and selector.
fn cron_job(o: &Value, now: Nanos) -> Row {
    let last = match time::at(at(o, &["status", "lastScheduleTime"])) {
        Some(t) => time::since(Some(t), now),
        None => "<none>".into(),
    };
    let template = at(o, &["spec", "jobTemplate", "spec"]);
    let cs = items(template, &["template", "spec", "containers"]);
    let join = |field: &str| {
        cs.iter()
            .map(|c| string(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    Row::from(vec![
        name(o),
        string(o, &["spec", "schedule"]).into(),
        or(o, &["spec", "timeZone"], "<none>").into(),
        bool_ptr(at(o, &["spec", "suspend"])).into(),
        (items(o, &["status", "active"]).len() as i64).into(),
        last.into(),
        age(o, now),
        join("name").into(),
        join("image").into(),
        format_selector(at(template, &["selector"])).into(),
    ])
}

/// `formatHosts`: the first three rules' hosts (`*` for none), and how
/// many rules more there are.
fn hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = string(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", rules.len() - MAX)
    } else {
        ret
    }
}

/// `printIngress`: its class, hosts, load-balancer addresses (sorted,
/// distinct, never shortened, as the server prints wide), and ports.
fn ingress(o: &Value, now: Nanos) -> Row {
    let addresses: BTreeSet<&str> = items(o, &["status", "loadBalancer", "ingress"])
        .iter()
        .filter_map(|i| match (string(i, &["ip"]), string(i, &["hostname"])) {
            ("", "") => None,
            ("", host) => Some(host),
            (ip, _) => Some(ip),
        })
        .collect();
    let ports = if items(o, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    Row::from(vec![
        name(o),
        or(o, &["spec", "ingressClassName"], "<none>").into(),
        hosts(items(o, &["spec", "rules"])).into(),
        addresses.into_iter().collect::<Vec<_>>().join(",").into(),
        ports.into(),
        age(o, now),
    ])
}

/// `printNetworkPolicy`: its pod selector.
fn network_policy(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        format_selector(at(o, &["spec", "podSelector"])).into(),
        age(o, now),
    ])
}

/// `intstr.IntOrString.String`, `N/A` when unset.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::Null => "N/A".into(),
        Value::String(s) => s.clone(),
        v => v.as_i64().unwrap_or_default().to_string(),
    }
}

/// `printPodDisruptionBudget`.
fn pdb(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        int_or_string(at(o, &["spec", "minAvailable"])).into(),
        int_or_string(at(o, &["spec", "maxUnavailable"])).into(),
        int(o, &["status", "disruptionsAllowed"]).into(),
        age(o, now),
    ])
}

/// `printPriorityClass`, with the (wide) preemption policy.
fn priority_class(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        int(o, &["value"]).into(),
        at(o, &["globalDefault"])
            .as_bool()
            .unwrap_or_default()
            .into(),
        age(o, now),
        string(o, &["preemptionPolicy"]).into(),
    ])
}
