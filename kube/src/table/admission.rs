//! The admissionregistration.k8s.io/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printMutatingWebhook`, `printValidatingWebhook`,
//! `printValidatingAdmissionPolicy`, `printValidatingAdmissionPolicyBinding`,
//! `printMutatingAdmissionPolicy` and `printMutatingAdmissionPolicyBinding`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "MutatingWebhookConfiguration",
        group: "admissionregistration.k8s.io",
        row: webhooks,
    },
    BuiltIn {
        kind: "ValidatingWebhookConfiguration",
        group: "admissionregistration.k8s.io",
        row: webhooks,
    },
    BuiltIn {
        kind: "ValidatingAdmissionPolicy",
        group: "admissionregistration.k8s.io",
        row: validating_policy,
    },
    BuiltIn {
        kind: "ValidatingAdmissionPolicyBinding",
        group: "admissionregistration.k8s.io",
        row: binding,
    },
    BuiltIn {
        kind: "MutatingAdmissionPolicy",
        group: "admissionregistration.k8s.io",
        row: mutating_policy,
    },
    BuiltIn {
        kind: "MutatingAdmissionPolicyBinding",
        group: "admissionregistration.k8s.io",
        row: binding,
    },
];

/// `printMutatingWebhook` and `printValidatingWebhook`: how many webhooks.
fn webhooks(o: &Value, now: Nanos) -> Row {
    let n = items(o, &["webhooks"]).len() as i64;
    Row::from(vec![name(o), n.into(), age(o, now)])
}

/// A policy's row: how many `list` items (validations, mutations) it has
/// and its param kind (`apiVersion/kind`, `<unset>` for none).
fn policy(o: &Value, list: &str, now: Nanos) -> Row {
    let n = items(o, &["spec", list]).len() as i64;
    let p = at(o, &["spec", "paramKind"]);
    let param_kind = if p.is_object() {
        format!("{}/{}", string(p, &["apiVersion"]), string(p, &["kind"]))
    } else {
        "<unset>".into()
    };
    Row::from(vec![name(o), n.into(), param_kind.into(), age(o, now)])
}

/// `printValidatingAdmissionPolicy`.
fn validating_policy(o: &Value, now: Nanos) -> Row {
    policy(o, "validations", now)
}

/// `printMutatingAdmissionPolicy`.
fn mutating_policy(o: &Value, now: Nanos) -> Row {
    policy(o, "mutations", now)
}

/// `printValidatingAdmissionPolicyBinding` and
/// `printMutatingAdmissionPolicyBinding`: the param as `namespace/name`
/// (`*/name` without a namespace), or its selector as Go prints a
/// `metav1.LabelSelector` (its generated `String`), `<unset>` for none.
fn binding(o: &Value, now: Nanos) -> Row {
    let pr = at(o, &["spec", "paramRef"]);
    let param = if !pr.is_object() {
        "<unset>".to_owned()
    } else {
        let (ns, n) = (string(pr, &["namespace"]), string(pr, &["name"]));
        if !n.is_empty() {
            if ns.is_empty() {
                format!("*/{n}")
            } else {
                format!("{ns}/{n}")
            }
        } else if pr["selector"].is_object() {
            go_label_selector(&pr["selector"])
        } else {
            "<unset>".to_owned()
        }
    };
    Row::from(vec![
        name(o),
        string(o, &["spec", "policyName"]).into(),
        param.into(),
        age(o, now),
    ])
}

/// A `metav1.LabelSelector` as its gogo-protobuf `String` method writes
/// it: `&LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]LabelSelectorRequirement{...},}`.
fn go_label_selector(s: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = s["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
        .collect();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = items(s, &["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = items(e, &["values"])
                .iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                string(e, &["key"]),
                string(e, &["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}
