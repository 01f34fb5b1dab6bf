//! The batch/v1 `CronJob`, networking.k8s.io/v1 `Ingress` and
//! `NetworkPolicy`, policy/v1 `PodDisruptionBudget` and scheduling.k8s.io/v1
//! `PriorityClass` printers, as `pkg/printers/internalversion/printers.go`
//! prints them: `printCronJob`, `printIngress`, `printNetworkPolicy`,
//! `printPodDisruptionBudget` and `printPriorityClass`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::apps::selector;
use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, int, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CronJob",
        columns: CRONJOBS,
        row: cron_job,
    },
    BuiltIn {
        kind: "Ingress",
        columns: INGRESSES,
        row: ingress,
    },
    BuiltIn {
        kind: "NetworkPolicy",
        columns: NETWORKPOLICIES,
        row: network_policy,
    },
    BuiltIn {
        kind: "PodDisruptionBudget",
        columns: PDBS,
        row: pdb,
    },
    BuiltIn {
        kind: "PriorityClass",
        columns: PRIORITYCLASSES,
        row: priority_class,
    },
];

const CRONJOBS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Schedule",
        "string",
        "",
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        0,
    ),
    Col::new(
        "Timezone",
        "string",
        "",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
        0,
    ),
    Col::new(
        "Suspend",
        "boolean",
        "",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        0,
    ),
    Col::new(
        "Active",
        "integer",
        "",
        "A list of pointers to currently running jobs.",
        0,
    ),
    Col::new(
        "Last Schedule",
        "string",
        "",
        "Information when was the last time the job was successfully scheduled.",
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

const INGRESSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Class",
        "string",
        "",
        "The name of the IngressClass resource that should be used for additional configuration",
        0,
    ),
    Col::new(
        "Hosts",
        "string",
        "",
        "Hosts that incoming requests are matched against before the ingress rule",
        0,
    ),
    Col::new(
        "Address",
        "string",
        "",
        "Address is a list containing ingress points for the load-balancer",
        0,
    ),
    Col::new(
        "Ports",
        "string",
        "",
        "Ports of TLS configurations that open",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const NETWORKPOLICIES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Pod-Selector",
        "string",
        "",
        "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const PDBS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Min Available",
        "string",
        "",
        "The minimum number of pods that must be available.",
        0,
    ),
    Col::new(
        "Max Unavailable",
        "string",
        "",
        "The maximum number of pods that may be unavailable.",
        0,
    ),
    Col::new(
        "Allowed Disruptions",
        "integer",
        "",
        "Calculated number of pods that may be disrupted at this time.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const PRIORITYCLASSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Value",
        "integer",
        "",
        "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        0,
    ),
    Col::new(
        "Global-Default",
        "boolean",
        "",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "PreemptionPolicy",
        "string",
        "",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        0,
    ),
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
