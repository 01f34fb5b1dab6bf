//! The networking.k8s.io/v1 printers of the cluster's address plumbing, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printIngressClass`, `printServiceCIDR` and `printIPAddress` (whose row
//! has an age cell its two column definitions do not declare, as the
//! apiserver's has).

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "IngressClass",
        group: "networking.k8s.io",
        row: ingress_class,
    },
    BuiltIn {
        kind: "ServiceCIDR",
        group: "networking.k8s.io",
        row: service_cidr,
    },
    BuiltIn {
        kind: "IPAddress",
        group: "networking.k8s.io",
        row: ip_address,
    },
];

/// `printIngressClass`: ` (default)` after the default class's name
/// (`networkingutil.HasDefaultAnnotation`), the parameters as
/// `Kind[.apiGroup]/name`.
fn ingress_class(o: &Value, now: Nanos) -> Row {
    let mut shown = string(o, &["metadata", "name"]).to_owned();
    let annotation = at(
        o,
        &[
            "metadata",
            "annotations",
            "ingressclass.kubernetes.io/is-default-class",
        ],
    );
    if annotation.as_str() == Some("true") {
        shown.push_str(" (default)");
    }
    let p = at(o, &["spec", "parameters"]);
    let parameters = if p.is_object() {
        let mut s = string(p, &["kind"]).to_owned();
        if let Some(group) = p["apiGroup"].as_str() {
            s = format!("{s}.{group}");
        }
        format!("{s}/{}", string(p, &["name"]))
    } else {
        "<none>".into()
    };
    Row::from(vec![
        shown.into(),
        string(o, &["spec", "controller"]).into(),
        parameters.into(),
        age(o, now),
    ])
}

/// `printServiceCIDR`: the CIDRs joined with `,`.
fn service_cidr(o: &Value, now: Nanos) -> Row {
    let cidrs: Vec<&str> = items(o, &["spec", "cidrs"])
        .iter()
        .map(|c| c.as_str().unwrap_or_default())
        .collect();
    Row::from(vec![name(o), cidrs.join(",").into(), age(o, now)])
}

/// `printIPAddress`: the parent as `resource[.group][/namespace]/name`
/// (`schema.GroupResource.String`, lowercased).
fn ip_address(o: &Value, now: Nanos) -> Row {
    let p = at(o, &["spec", "parentRef"]);
    let parent = if p.is_object() {
        let (group, resource) = (string(p, &["group"]), string(p, &["resource"]));
        let mut s = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        }
        .to_lowercase();
        let namespace = string(p, &["namespace"]);
        if !namespace.is_empty() {
            s = format!("{s}/{namespace}");
        }
        format!("{s}/{}", string(p, &["name"]))
    } else {
        "<none>".into()
    };
    Row::from(vec![name(o), parent.into(), age(o, now)])
}
