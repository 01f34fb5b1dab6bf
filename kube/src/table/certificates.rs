//! The certificates.k8s.io/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printCertificateSigningRequest` (with `extractCSRStatus`),
//! `printClusterTrustBundle` and `printPodCertificateRequest`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, format_labels, items, name, string};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CertificateSigningRequest",
        group: "certificates.k8s.io",
        row: signing_request,
    },
    BuiltIn {
        kind: "ClusterTrustBundle",
        group: "certificates.k8s.io",
        row: trust_bundle,
    },
    BuiltIn {
        kind: "PodCertificateRequest",
        group: "certificates.k8s.io",
        row: pod_certificate_request,
    },
];

/// `<none>` for an empty string.
fn or_none(s: &str) -> Value {
    if s.is_empty() { "<none>" } else { s }.into()
}

/// `extractCSRStatus`: `Denied`, `Approved` or `Pending`, then `,Failed`
/// and `,Issued`.
fn csr_status(o: &Value) -> String {
    let has = |ty: &str| {
        items(o, &["status", "conditions"])
            .iter()
            .any(|c| string(c, &["type"]) == ty)
    };
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !string(o, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// `printCertificateSigningRequest`: the age second, the requested
/// duration as `duration.HumanDuration` writes it.
fn signing_request(o: &Value, now: Nanos) -> Row {
    let duration = at(o, &["spec", "expirationSeconds"]).as_i64().map_or_else(
        || "<none>".to_owned(),
        |s| time::human_duration(s.saturating_mul(1_000_000_000)),
    );
    Row::from(vec![
        name(o),
        age(o, now),
        or_none(string(o, &["spec", "signerName"])),
        string(o, &["spec", "username"]).into(),
        duration.into(),
        csr_status(o).into(),
    ])
}

/// `printClusterTrustBundle`: no age.
fn trust_bundle(o: &Value, _now: Nanos) -> Row {
    Row::from(vec![name(o), or_none(string(o, &["spec", "signerName"]))])
}

/// `printPodCertificateRequest`, its wide column included: the state is
/// the last of `Issued`, `Denied` and `Failed` among the conditions,
/// `Pending` without one.
fn pod_certificate_request(o: &Value, _now: Nanos) -> Row {
    let state = items(o, &["status", "conditions"])
        .iter()
        .filter_map(|c| match string(c, &["type"]) {
            s @ ("Issued" | "Denied" | "Failed") => Some(s),
            _ => None,
        })
        .next_back()
        .unwrap_or("Pending");
    Row::from(vec![
        name(o),
        string(o, &["spec", "podName"]).into(),
        string(o, &["spec", "serviceAccountName"]).into(),
        string(o, &["spec", "nodeName"]).into(),
        string(o, &["spec", "signerName"]).into(),
        state.into(),
        format_labels(at(o, &["spec", "unverifiedUserAnnotations"])).into(),
    ])
}
