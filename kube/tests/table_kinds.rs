//! Rows of the printers ported from `pkg/printers/internalversion` for the
//! cases the captured vectors (`tests/tables.rs`) do not reach: states and
//! formats read from `printers.go`, and every built-in kind's row having a
//! cell per column.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herald_kube::table::{IncludeObject, Printer, table_at};
use serde_json::{Value, json};

/// 2026-01-01T00:00:00Z plus `s` seconds.
fn at(s: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_600 + s)
}

/// The cells of `kind`'s row of `object`, ten minutes after 2026 began.
fn cells(kind: &str, object: Value) -> Value {
    let printer = Printer::built_in(kind).unwrap_or_else(|| panic!("no printer for {kind}"));
    let bytes = serde_json::to_vec(&object).unwrap();
    let t: Value = serde_json::from_slice(&table_at(
        &printer,
        json!({}),
        [&bytes[..]].into_iter(),
        true,
        at(600),
    ))
    .unwrap();
    t["rows"][0]["cells"].clone()
}

fn meta(name: &str) -> Value {
    json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"})
}

#[test]
fn pod_certificate_requests_show_the_last_final_state() {
    let pcr = json!({
        "metadata": meta("req"),
        "spec": {"podName": "web-0", "serviceAccountName": "default", "nodeName": "node-a",
                 "signerName": "example.com/pods", "unverifiedUserAnnotations": {"b": "2", "a": "1"}},
        "status": {"conditions": [{"type": "Failed", "status": "True"}, {"type": "Issued", "status": "True"}]},
    });
    assert_eq!(
        cells("PodCertificateRequest", pcr),
        json!([
            "req",
            "web-0",
            "default",
            "node-a",
            "example.com/pods",
            "Issued",
            "a=1,b=2"
        ])
    );
    let pending = json!({"metadata": meta("p"), "spec": {}});
    assert_eq!(
        cells("PodCertificateRequest", pending),
        json!(["p", "", "", "", "", "Pending", "<none>"])
    );
}

#[test]
fn autoscaler_metrics_are_formatted_as_format_hpa_metrics() {
    let hpa = json!({
        "metadata": meta("h"),
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 4,
            "metrics": [
                {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization"}}},
                {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}},
            ],
        },
        "status": {"currentMetrics": [
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "current": {"averageUtilization": 7}}},
        ]},
    });
    assert_eq!(
        cells("HorizontalPodAutoscaler", hpa),
        json!([
            "h",
            "Deployment/web",
            "cpu: 7%/<auto>, <unknown>/10",
            "<unset>",
            4,
            0,
            "10m"
        ])
    );
    let none = json!({"metadata": meta("n"), "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}, "minReplicas": 2, "maxReplicas": 3}});
    assert_eq!(
        cells("HorizontalPodAutoscaler", none),
        json!(["n", "StatefulSet/db", "<none>", "2", 3, 0, "10m"])
    );
}

#[test]
fn resource_claims_being_deleted_say_so_first() {
    let mut claim = json!({"metadata": meta("c"), "spec": {}});
    claim["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:05:00Z");
    assert_eq!(
        cells("ResourceClaim", claim.clone()),
        json!(["c", "deleted", "10m"])
    );
    claim["status"] = json!({"allocation": {"devices": {"results": []}}});
    assert_eq!(
        cells("ResourceClaim", claim),
        json!(["c", "deleted,allocated", "10m"])
    );
}

#[test]
fn binding_selectors_are_printed_as_go_prints_a_label_selector() {
    let binding = json!({
        "metadata": meta("b"),
        "spec": {"policyName": "p", "paramRef": {"selector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}},
    });
    assert_eq!(
        cells("ValidatingAdmissionPolicyBinding", binding),
        json!([
            "b",
            "p",
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:Exists,Values:[],},},}",
            "10m"
        ])
    );
    let empty = json!({"metadata": meta("e"), "spec": {"policyName": "p", "paramRef": {"parameterNotFoundAction": "Deny"}}});
    assert_eq!(
        cells("MutatingAdmissionPolicyBinding", empty),
        json!(["e", "p", "<unset>", "10m"])
    );
}

#[test]
fn controllers_and_parameters_name_their_group() {
    let rev = json!({"metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "not-the-controller"},
            {"apiVersion": "example.com/v1", "kind": "MyThing", "name": "t", "controller": true}]},
        "revision": 2});
    assert_eq!(
        cells("ControllerRevision", rev),
        json!(["r", "mything.example.com/t", 2, "10m"])
    );
    let class = json!({"metadata": meta("i"), "spec": {"controller": "c", "parameters": {"apiGroup": "", "kind": "K", "name": "n"}}});
    assert_eq!(
        cells("IngressClass", class),
        json!(["i", "c", "K./n", "10m"])
    );
}

#[test]
fn flow_schema_lists_are_printed_in_matching_order() {
    let fs = |name: &str, precedence: i64| {
        serde_json::to_vec(&json!({"metadata": meta(name), "spec": {
            "priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": precedence}}))
        .unwrap()
    };
    let objects = [fs("b", 500), fs("z", 100), fs("a", 500)];
    let t: Value = serde_json::from_slice(&herald_kube::table::list_table_at(
        &Printer::built_in("FlowSchema").unwrap(),
        json!({}),
        objects.iter().map(Vec::as_slice),
        false,
        at(600),
    ))
    .unwrap();
    let names: Vec<&str> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["object"]["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["z", "a", "b"]);
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["z", "pl", 100, "<none>", "10m", "?"])
    );
}

#[test]
fn include_object_takes_the_apiservers_values() {
    assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse(Some("")), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
    assert_eq!(
        IncludeObject::parse(Some("Object")),
        Ok(IncludeObject::Object)
    );
    assert_eq!(
        IncludeObject::parse(Some("object")).unwrap_err(),
        "Unable to convert to Table as requested: includeObject: Invalid value: \"object\": must be 'Metadata', 'Object', 'None', or empty"
    );
}

/// The kinds served by default in v1.37.2 that have a printer, each with
/// as many cells as columns (but `IPAddress`, whose row has an age its
/// columns do not declare, as the apiserver's has).
#[test]
fn every_served_kind_has_a_cell_per_column() {
    for kind in [
        "Pod",
        "Node",
        "Namespace",
        "ConfigMap",
        "Secret",
        "Service",
        "Endpoints",
        "EndpointSlice",
        "Event",
        "Lease",
        "ServiceAccount",
        "Deployment",
        "ReplicaSet",
        "DaemonSet",
        "StatefulSet",
        "Job",
        "CronJob",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Ingress",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "PriorityClass",
        "StorageClass",
        "LimitRange",
        "ResourceQuota",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "PodTemplate",
        "ReplicationController",
        "ComponentStatus",
        "ControllerRevision",
        "HorizontalPodAutoscaler",
        "IngressClass",
        "ServiceCIDR",
        "IPAddress",
        "CSIDriver",
        "CSINode",
        "CSIStorageCapacity",
        "VolumeAttachment",
        "VolumeAttributesClass",
        "RuntimeClass",
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        "DeviceTaintRule",
        "FlowSchema",
        "PriorityLevelConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "CertificateSigningRequest",
        "ClusterTrustBundle",
        "PodCertificateRequest",
        "StorageVersionMigration",
        "APIService",
    ] {
        let printer = Printer::built_in(kind).unwrap_or_else(|| panic!("no printer for {kind}"));
        let columns = printer.columns().as_array().unwrap().len();
        let row = cells(kind, json!({"metadata": meta("x")}));
        let extra = usize::from(kind == "IPAddress");
        assert_eq!(row.as_array().unwrap().len(), columns + extra, "{kind}");
    }
}
