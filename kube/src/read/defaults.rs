//! The built-in kinds whose stored form is not what the apiserver serves
//! (k8s.io/kubernetes v1.37.2): the defaulters that are not a fixpoint
//! after the write, the conversion that protobuf cannot carry, and the
//! registries' read hooks.

use std::net::Ipv6Addr;

use serde_json::{Map, Value, json};

use super::{META, OBJECT, is_empty, non_null, object, put, str_at, string};

/// `PersistentVolumeClaimSpec`, in Go's order.
const CLAIM_SPEC: &[&str] = &[
    "accessModes",
    "selector",
    "resources",
    "volumeName",
    "storageClassName",
    "volumeMode",
    "dataSource",
    "dataSourceRef",
    "volumeAttributesClassName",
];

/// `PersistentVolumeClaimStatus`, in Go's order (`phase` first).
const CLAIM_STATUS: &[&str] = &["phase"];

/// `ServiceSpec`, in Go's order.
const SERVICE_SPEC: &[&str] = &[
    "ports",
    "selector",
    "clusterIP",
    "clusterIPs",
    "type",
    "externalIPs",
    "sessionAffinity",
    "loadBalancerIP",
    "loadBalancerSourceRanges",
    "externalName",
    "externalTrafficPolicy",
    "healthCheckNodePort",
    "publishNotReadyAddresses",
    "sessionAffinityConfig",
    "ipFamilies",
    "ipFamilyPolicy",
    "allocateLoadBalancerNodePorts",
    "loadBalancerClass",
    "internalTrafficPolicy",
    "trafficDistribution",
];

/// `batch/v1` Job: `pkg/apis/batch/v1/defaults.go` `SetDefaults_Job`
/// gives a Job without labels its pod template's. On a create, the
/// template's labels are added by the strategy's `generateSelector`
/// (`pkg/registry/batch/job/strategy.go`), after the request's
/// defaulting: a Job created without labels is stored without them. The
/// rest of `SetDefaults_Job` is on the request.
pub(super) fn job(doc: &mut Map<String, Value>) {
    let template = doc
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"));
    // Go copies a non-nil map; an empty one is not printed.
    let Some(Value::Object(labels)) = template.filter(|l| !is_empty(Some(l))) else {
        return;
    };
    let labels = Value::Object(labels.clone());
    if let Some(Value::Object(meta)) = doc.get_mut("metadata")
        && is_empty(meta.get("labels"))
    {
        put(meta, META, "labels", labels);
    }
}

/// `apps/v1` StatefulSet: `pkg/apis/apps/v1/conversion.go`
/// `Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec` sets each
/// `volumeClaimTemplates[]` entry's `apiVersion` and `kind` (protobuf does
/// not store a nested object's type); `zz_generated.defaults.go`
/// `SetObjectDefaults_StatefulSet` runs the claims' defaulters.
pub(super) fn stateful_set(doc: &mut Map<String, Value>) {
    let Some(Value::Array(templates)) = doc
        .get_mut("spec")
        .and_then(|s| s.get_mut("volumeClaimTemplates"))
    else {
        return;
    };
    for claim in templates.iter_mut().filter_map(Value::as_object_mut) {
        put(claim, OBJECT, "kind", "PersistentVolumeClaim".into());
        put(claim, OBJECT, "apiVersion", "v1".into());
        default_claim(claim);
    }
}

/// `v1` PersistentVolumeClaim: its defaulters, of which
/// `SetDefaults_PersistentVolumeClaim`'s `status.phase: Pending` is not a
/// fixpoint (`pkg/registry/core/persistentvolumeclaim/strategy.go`
/// `PrepareForCreate` clears the status after the request's defaulting),
/// and the registry's `defaultOnRead`
/// (`pkg/registry/core/persistentvolumeclaim/storage/storage.go`).
pub(super) fn persistent_volume_claim(doc: &mut Map<String, Value>) {
    default_claim(doc);
    if let Some(Value::Object(spec)) = doc.get_mut("spec") {
        normalize_data_sources(spec);
    }
}

/// `pkg/apis/core/v1/defaults.go` `SetDefaults_PersistentVolumeClaim` and
/// `SetDefaults_PersistentVolumeClaimSpec`.
fn default_claim(claim: &mut Map<String, Value>) {
    if let Some(spec) = object(claim, OBJECT, "spec")
        && non_null(spec, "volumeMode").is_none()
    {
        put(spec, CLAIM_SPEC, "volumeMode", "Filesystem".into());
    }
    if let Some(status) = object(claim, OBJECT, "status")
        && str_at(status, "phase").is_empty()
    {
        put(status, CLAIM_STATUS, "phase", "Pending".into());
    }
}

/// `pkg/api/persistentvolumeclaim/util.go` `NormalizeDataSources`: a claim
/// stored with only `dataSource` (before `dataSourceRef` existed) gets the
/// same reference as `dataSourceRef`, and one with only a
/// `dataSourceRef` in its own namespace gets it as `dataSource`.
fn normalize_data_sources(spec: &mut Map<String, Value>) {
    let reference = |from: &Map<String, Value>| {
        let mut to = Map::new();
        if let Some(group) = non_null(from, "apiGroup") {
            to.insert("apiGroup".into(), group.clone());
        }
        to.insert("kind".into(), string(from.get("kind")));
        to.insert("name".into(), string(from.get("name")));
        Value::Object(to)
    };
    match (
        non_null(spec, "dataSource"),
        non_null(spec, "dataSourceRef"),
    ) {
        (Some(Value::Object(source)), None) => {
            let to = reference(source);
            put(spec, CLAIM_SPEC, "dataSourceRef", to);
        }
        (None, Some(Value::Object(source))) if str_at(source, "namespace").is_empty() => {
            let to = reference(source);
            put(spec, CLAIM_SPEC, "dataSource", to);
        }
        _ => {}
    }
}

/// `v1` Service: the registry's `defaultOnRead`
/// (`pkg/registry/core/service/storage/storage.go`
/// `defaultOnReadService`): `normalizeClusterIPs` of a create,
/// `defaultOnReadIPFamilies` for a service with cluster IPs, and
/// `defaultOnReadInternalTrafficPolicy`.
pub(super) fn service(doc: &mut Map<String, Value>) {
    let Some(Value::Object(spec)) = doc.get_mut("spec") else {
        return;
    };
    let cluster_ip = str_at(spec, "clusterIP").to_owned();
    if !cluster_ip.is_empty() && is_empty(spec.get("clusterIPs")) {
        put(spec, SERVICE_SPEC, "clusterIPs", json!([cluster_ip]));
    }
    let external_name = str_at(spec, "type") == "ExternalName";
    // A headless service's families are the cluster's primary one (and
    // the other, without a selector): not known here.
    if !external_name && is_empty(spec.get("ipFamilies")) && cluster_ip != "None" {
        let families: Vec<Value> = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|ip| {
                let v6 = ip
                    .as_str()
                    .and_then(|ip| ip.parse::<Ipv6Addr>().ok())
                    .is_some_and(|ip| ip.to_ipv4_mapped().is_none());
                Value::String(if v6 { "IPv6" } else { "IPv4" }.into())
            })
            .collect();
        let policy = match families.len() {
            1 => Some("SingleStack"),
            2 => Some("RequireDualStack"),
            _ => None,
        };
        if !families.is_empty() {
            put(spec, SERVICE_SPEC, "ipFamilies", Value::Array(families));
        }
        if let Some(policy) = policy {
            put(spec, SERVICE_SPEC, "ipFamilyPolicy", policy.into());
        }
    }
    if external_name {
        spec.shift_remove("internalTrafficPolicy");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(stored: Value) -> Value {
        let Value::Object(mut doc) = stored else {
            unreachable!()
        };
        crate::read::as_served(&mut doc);
        Value::Object(doc)
    }

    fn job(meta: Value, template_labels: Value) -> Value {
        json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": meta,
            "spec": {"parallelism": 1, "template": {"metadata": {"labels": template_labels}, "spec": {}}}, "status": {}})
    }

    #[test]
    fn an_unlabelled_job_gets_its_templates_labels() {
        let labels = json!({"job-name": "migrate", "controller-uid": "u"});
        let got = served(job(
            json!({"name": "migrate", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {"a": "b"}, "managedFields": []}),
            labels.clone(),
        ));
        assert_eq!(
            serde_json::to_string(&got["metadata"]).unwrap(),
            r#"{"name":"migrate","namespace":"ns","uid":"u","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"job-name":"migrate","controller-uid":"u"},"annotations":{"a":"b"},"managedFields":[]}"#
        );
        // An empty map is Go's len 0 too.
        let got = served(job(json!({"name": "m", "labels": {}}), labels.clone()));
        assert_eq!(got["metadata"]["labels"], labels);
        // The Job's own labels win.
        let own = json!({"team": "a"});
        let got = served(job(json!({"name": "m", "labels": own}), labels));
        assert_eq!(got["metadata"]["labels"], own);
        // No template labels: nothing to copy.
        for none in [Value::Null, json!({})] {
            let stored = job(json!({"name": "m"}), none);
            assert_eq!(served(stored.clone()), stored);
        }
    }

    #[test]
    fn stateful_set_claim_templates_get_their_type_and_defaults() {
        let got = served(
            json!({"kind": "StatefulSet", "apiVersion": "apps/v1", "metadata": {"name": "db"},
            "spec": {"replicas": 1, "volumeClaimTemplates": [
                {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}, "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}},
                {"metadata": {"name": "logs"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}, "dataSource": null},
                    "status": {}}],
                "serviceName": "db"}}),
        );
        assert_eq!(
            serde_json::to_string(&got["spec"]["volumeClaimTemplates"]).unwrap(),
            concat!(
                r#"[{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{},"volumeMode":"Filesystem"},"status":{"phase":"Pending"}},"#,
                r#"{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"logs"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{},"volumeMode":"Filesystem","dataSource":null},"status":{"phase":"Pending"}}]"#
            )
        );
        // No templates: nothing to do.
        let stored = json!({"kind": "StatefulSet", "apiVersion": "apps/v1", "metadata": {"name": "db"}, "spec": {"replicas": 1}});
        assert_eq!(served(stored.clone()), stored);
    }

    fn claim(spec: Value, status: Value) -> Value {
        json!({"kind": "PersistentVolumeClaim", "apiVersion": "v1", "metadata": {"name": "c", "namespace": "ns"},
            "spec": spec, "status": status})
    }

    #[test]
    fn a_new_claim_is_pending_and_its_data_sources_are_paired() {
        let got = served(claim(
            json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}}),
            json!({}),
        ));
        assert_eq!(
            serde_json::to_string(&got["spec"]).unwrap(),
            r#"{"accessModes":["ReadWriteOnce"],"storageClassName":"fast","volumeMode":"Filesystem","dataSource":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"snap"},"dataSourceRef":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"snap"}}"#
        );
        assert_eq!(got["status"], json!({"phase": "Pending"}));
        // A reference in the claim's namespace is also the data source.
        let got = served(claim(
            json!({"volumeMode": "Block", "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src", "namespace": ""}}),
            json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"]}),
        ));
        assert_eq!(
            got["spec"],
            json!({"volumeMode": "Block", "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"},
                "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src", "namespace": ""}})
        );
        assert_eq!(got["status"]["phase"], "Bound");
        // One in another namespace is not; both set are kept.
        for spec in [
            json!({"volumeMode": "Filesystem", "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src", "namespace": "other"}}),
            json!({"volumeMode": "Filesystem", "dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                "dataSourceRef": {"apiGroup": "x", "kind": "Y", "name": "b"}}),
        ] {
            let stored = claim(spec, json!({"phase": "Bound"}));
            assert_eq!(served(stored.clone()), stored);
        }
    }

    fn service(spec: Value) -> Value {
        served(json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s", "namespace": "ns"},
            "spec": spec, "status": {"loadBalancer": {}}}))["spec"]
            .clone()
    }

    #[test]
    fn services_get_the_registrys_read_defaults() {
        // Stored before clusterIPs and ipFamilies.
        assert_eq!(
            serde_json::to_string(&service(
                json!({"ports": [], "selector": {"app": "web"}, "clusterIP": "10.0.0.7",
                "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"})
            ))
            .unwrap(),
            r#"{"ports":[],"selector":{"app":"web"},"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"type":"ClusterIP","sessionAffinity":"None","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","internalTrafficPolicy":"Cluster"}"#
        );
        assert_eq!(
            service(
                json!({"clusterIP": "fd00::7", "clusterIPs": ["fd00::7", "10.0.0.7"], "type": "ClusterIP"})
            ),
            json!({"clusterIP": "fd00::7", "clusterIPs": ["fd00::7", "10.0.0.7"], "type": "ClusterIP",
                "ipFamilies": ["IPv6", "IPv4"], "ipFamilyPolicy": "RequireDualStack"})
        );
        // An IPv4-mapped IPv6 address is IPv4, as Go's To4 has it.
        assert_eq!(
            service(json!({"clusterIP": "::ffff:10.0.0.7", "type": "ClusterIP"}))["ipFamilies"],
            json!(["IPv4"])
        );
        // Headless: the plural, not the families (the cluster's primary
        // family is not known here).
        assert_eq!(
            service(json!({"clusterIP": "None", "type": "ClusterIP"})),
            json!({"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP"})
        );
        // ExternalName: no families, no internal traffic policy.
        assert_eq!(
            service(
                json!({"type": "ExternalName", "externalName": "db.example", "internalTrafficPolicy": "Cluster"})
            ),
            json!({"type": "ExternalName", "externalName": "db.example"})
        );
        // What the apiserver stores today is left as it is.
        let today = json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "clusterIP": "10.0.0.7",
            "clusterIPs": ["10.0.0.7"], "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"});
        assert_eq!(service(today.clone()), today);
    }
}
