//! The certificates.k8s.io/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printCertificateSigningRequest` (with `extractCSRStatus`),
//! `printClusterTrustBundle` and `printPodCertificateRequest`.

use serde_json::Value;

use super::cells::{
    BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, format_labels, items, name, string,
};
use super::time::{self, Nanos};

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CertificateSigningRequest",
        columns: SIGNING_REQUESTS,
        row: signing_request,
    },
    BuiltIn {
        kind: "ClusterTrustBundle",
        columns: TRUST_BUNDLES,
        row: trust_bundle,
    },
    BuiltIn {
        kind: "PodCertificateRequest",
        columns: POD_CERTIFICATE_REQUESTS,
        row: pod_certificate_request,
    },
];

const SIGNING_REQUESTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "SignerName",
        "string",
        "",
        "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
        0,
    ),
    Col::new(
        "Requestor",
        "string",
        "",
        "Base64-encoded PKCS#10 CSR data",
        0,
    ),
    Col::new(
        "RequestedDuration",
        "string",
        "",
        "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
        0,
    ),
    Col::new(
        "Condition",
        "string",
        "",
        "Conditions applied to the request, such as approval or denial.",
        0,
    ),
];

const TRUST_BUNDLES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "SignerName",
        "string",
        "",
        "signerName indicates the associated signer, if any.\n\nIn order to create or update a ClusterTrustBundle that sets signerName, you must have the following cluster-scoped permission: group=certificates.k8s.io resource=signers resourceName=<the signer name> verb=attest.\n\nIf signerName is not empty, then the ClusterTrustBundle object must be named with the signer name as a prefix (translating slashes to colons). For example, for the signer name `example.com/foo`, valid ClusterTrustBundle object names include `example.com:foo:abc` and `example.com:foo:v1`.\n\nIf signerName is empty, then the ClusterTrustBundle object's name must not have such a prefix.\n\nList/watch requests for ClusterTrustBundles can filter on this field using a `spec.signerName=NAME` field selector.",
        0,
    ),
];

const POD_CERTIFICATE_REQUESTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "PodName",
        "string",
        "",
        "podName is the name of the pod into which the certificate will be mounted.",
        0,
    ),
    Col::new(
        "ServiceAccountName",
        "string",
        "",
        "serviceAccountName is the name of the service account the pod is running as.",
        0,
    ),
    Col::new(
        "NodeName",
        "string",
        "",
        "nodeName is the name of the node the pod is assigned to.",
        0,
    ),
    Col::new(
        "SignerName",
        "string",
        "",
        "signerName indicates the requested signer.\n\nAll signer names beginning with `kubernetes.io` are reserved for use by the Kubernetes project.  There is currently one well-known signer documented by the Kubernetes project, `kubernetes.io/kube-apiserver-client-pod`, which will issue client certificates understood by kube-apiserver.  It is currently unimplemented.",
        0,
    ),
    Col::new(
        "State",
        "string",
        "",
        "Is the request Pending, Issued, Denied, or Failed?",
        0,
    ),
    Col::new(
        "UnverifiedUserAnnotations",
        "string",
        "",
        "unverifiedUserAnnotations allow pod authors to pass additional information to the signer implementation.  Kubernetes does not restrict or validate this metadata in any way.\n\nEntries are subject to the same validation as object metadata annotations, with the addition that all keys must be domain-prefixed. No restrictions are placed on values, except an overall size limitation on the entire field.\n\nSigners should document the keys and values they support.  Signers should deny requests that contain keys they do not recognize.",
        0,
    ),
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
