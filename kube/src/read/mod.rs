//! What the apiserver does to a stored object on its way out, besides
//! decoding it: the conversion from the storage version to the served
//! one, the defaulting functions its decoder runs on every read, and the
//! registry's read hooks (`Store.Decorator`).
//!
//! The apiserver decodes a stored value into the stored version's Go type,
//! runs that version's defaulters on it, converts it to the internal type,
//! runs the resource's `Decorator` if it has one, and converts it to the
//! served version. Most of that is a fixpoint by the time an object is
//! stored (the defaulters ran on the write, before the strategy's
//! `PrepareForCreate`/`PrepareForUpdate` and the admission plugins); the
//! cases here are those where it is not:
//!
//! - [`crd`]: `CustomResourceDefinition`s stored as
//!   `apiextensions.k8s.io/v1beta1` and served as `v1` (the v1beta1
//!   defaulters, then v1beta1 → internal → v1); those stored as `v1` get
//!   the v1 defaulters and the v1 → internal → v1 round trip;
//! - [`defaults`]: `batch/v1` `Job`s (`SetDefaults_Job` copies the pod
//!   template's labels to an unlabelled Job: the strategy's
//!   `generateSelector` adds them after the write's defaulting), `apps/v1`
//!   `StatefulSet`s (the internal → v1 conversion gives each
//!   `volumeClaimTemplates[]` entry `apiVersion: v1` and
//!   `kind: PersistentVolumeClaim`, which protobuf does not store; the
//!   claims' own defaulters), `v1` `PersistentVolumeClaim`s
//!   (`PrepareForCreate` clears the status the write defaulted, so
//!   `status.phase: Pending` comes back on read; the registry's
//!   `defaultOnRead` fills `dataSource`/`dataSourceRef` from each other)
//!   and `v1` `Service`s (the registry's `defaultOnRead`: `clusterIPs` from
//!   `clusterIP`, `ipFamilies` and `ipFamilyPolicy` of a service with
//!   cluster IPs, no `internalTrafficPolicy` on an `ExternalName`).
//!
//! Checked and left alone, because they are a fixpoint for what the
//! apiserver stores (k8s.io/kubernetes v1.37.2, default feature gates):
//!
//! - core/v1 `defaults.go` and `conversion.go`: Pods (`SetDefaults_Pod`,
//!   `SetDefaults_PodSpec` with the `serviceAccount` alias, which the
//!   ServiceAccount admission plugin also sets, `SetDefaults_PodStatus`'s
//!   `podIP`/`podIPs`, the volume, container, probe and projection
//!   defaulters; `PrepareForCreate` resets the status to `Pending` with
//!   nothing left to default, pod-level resources are defaulted in
//!   `PrepareForCreate` under `PodLevelResourcesFixDefaulting`),
//!   Nodes (`SetDefaults_NodeStatus` copies `capacity` to an absent
//!   `allocatable`, the kubelet writes both; `podCIDR`/`podCIDRs` are kept
//!   in step by the conversion on the write), Namespaces (the
//!   `kubernetes.io/metadata.name` label, also set by the strategy's
//!   `Canonicalize`; `status.phase: Active`, also set by
//!   `PrepareForCreate`), ConfigMaps (`data: {}` is not printed), Secrets
//!   (`type: Opaque`; `stringData` is merged into `data` on the write),
//!   Services (`SetDefaults_Service`: every field it sets is on the
//!   request, `PrepareForCreate` only clears the status), Endpoints
//!   (`protocol: TCP`), Events and ServiceAccounts (no defaulters),
//!   `SetDefaults_ResourceList` (quantities are stored rounded);
//! - apps/v1: `SetDefaults_Deployment`, `_DaemonSet`, `_StatefulSet`
//!   (`maxUnavailable` under `MaxUnavailableStatefulSet`, on by default),
//!   `_ReplicaSet`, the pod template's defaulters; the Deployment's
//!   `deprecated.deployment.rollback.to` and the DaemonSet's
//!   `deprecated.daemonset.template.generation` annotations, which the
//!   conversion writes on the way in as it does on the way out;
//! - batch/v1: the rest of `SetDefaults_Job` (`completions`,
//!   `parallelism`, `backoffLimit`, `completionMode`, `suspend`,
//!   `podReplacementPolicy`, `manualSelector`: all on the request),
//!   `SetDefaults_CronJob`, `SetDefaults_PodFailurePolicyOnPodConditionsPattern`;
//! - rbac/v1 (`roleRef.apiGroup`, the subjects' `apiGroup`), discovery/v1
//!   (the ports' `name` and `protocol`), coordination/v1 (no defaulters).
//!
//! Not done here, because they need more than the object: the `ipFamilies`
//! of a headless Service stored without them (the apiserver takes the
//! cluster's primary IP family from its service CIDRs), and a custom
//! resource's schema defaults and version conversion (they need its CRD).
//! Values the apiserver would not have written (unknown fields, `null`s,
//! non-canonical JSON numbers) are kept as they are rather than
//! re-canonicalised as Go's decoder and encoder would.

mod crd;
mod defaults;

use serde_json::{Map, Value};

/// `ObjectMeta`'s fields, in Go's order.
const META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// A top-level object's fields, in Go's order.
const OBJECT: &[&str] = &["kind", "apiVersion", "metadata", "spec", "status"];

/// Puts an `ObjectMeta`'s fields in Go's order (a custom resource's
/// metadata is held with its keys sorted, as unstructured JSON is; typed
/// metadata, such as a `Table` row's `PartialObjectMetadata`, is written
/// in the struct's order); fields it does not declare go last.
pub(crate) fn in_meta_order(metadata: &mut Map<String, Value>) {
    let mut ordered = Map::new();
    for field in META {
        if let Some(v) = metadata.remove(*field) {
            ordered.insert((*field).to_owned(), v);
        }
    }
    ordered.append(metadata);
    *metadata = ordered;
}

/// Whether objects of `group`'s `kind` stored at an older version than
/// the one served are converted here (CRDs stored as `v1beta1`), so the
/// resource can be served although its storage version is not its
/// served one.
pub(crate) fn converts_storage(group: &str, kind: &str) -> bool {
    (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition")
}

/// Turns a stored object (decoded to JSON, `kind` and `apiVersion` set)
/// into what the apiserver serves for it.
pub(crate) fn as_served(doc: &mut Map<String, Value>) {
    let read: fn(&mut Map<String, Value>) = match (str_at(doc, "apiVersion"), str_at(doc, "kind")) {
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition") => crd::from_v1beta1,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => crd::from_v1,
        ("batch/v1", "Job") => defaults::job,
        ("apps/v1", "StatefulSet") => defaults::stateful_set,
        ("v1", "PersistentVolumeClaim") => defaults::persistent_volume_claim,
        ("v1", "Service") => defaults::service,
        _ => return,
    };
    read(doc);
}

/// The string at `key`, `""` when it is absent or not a string (Go's zero
/// value).
fn str_at<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A string field Go always prints (not `omitempty`): `""` when absent.
fn string(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::String(String::new()),
    }
}

/// Whether the value is Go's nil or empty: absent, `null`, `""`, `[]` or
/// `{}` (`len(x) == 0` of a string, slice or map, `x == nil` of a
/// pointer).
fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// The value at `key` unless it is absent or `null` (a Go pointer, slice
/// or map that is not nil).
fn non_null<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

/// Sets `key` to `value`: in place if it is there, else where Go's
/// encoder would print it, `order` being the struct's fields in Go's
/// order (after the last of the fields before it that is present).
fn put(map: &mut Map<String, Value>, order: &[&str], key: &str, value: Value) {
    if let Some(slot) = map.get_mut(key) {
        *slot = value;
        return;
    }
    let later = match order.iter().position(|k| *k == key) {
        Some(i) => &order[i + 1..],
        None => &[][..],
    };
    match map.keys().position(|k| later.contains(&k.as_str())) {
        Some(at) => {
            map.shift_insert(at, key.to_owned(), value);
        }
        None => {
            map.insert(key.to_owned(), value);
        }
    }
}

/// The object at `key`, an empty one put there (in `order`) when it is
/// absent or `null` (a Go struct is never nil); `None` when it is
/// something else, which Go's decoder would have refused.
fn object<'a>(
    map: &'a mut Map<String, Value>,
    order: &[&str],
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    if map.get(key).is_none_or(Value::is_null) {
        put(map, order, key, Value::Object(Map::new()));
    }
    map.get_mut(key).and_then(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn put_replaces_in_place_and_inserts_in_go_order() {
        let mut m = map(json!({"name": "a", "annotations": {}, "managedFields": []}));
        put(&mut m, META, "labels", json!({"x": "y"}));
        put(&mut m, META, "name", json!("b"));
        put(&mut m, META, "finalizers", json!(["f"]));
        put(&mut m, META, "uid", json!("u"));
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"name":"b","uid":"u","labels":{"x":"y"},"annotations":{},"finalizers":["f"],"managedFields":[]}"#
        );
        put(&mut m, META, "unknown", json!(1));
        assert_eq!(m.keys().next_back().unwrap(), "unknown");
    }

    #[test]
    fn other_kinds_are_left_alone() {
        let stored = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}});
        let mut doc = map(stored.clone());
        as_served(&mut doc);
        assert_eq!(Value::Object(doc), stored);
        // The same kind at another version is not this one.
        let stored = json!({"kind": "Job", "apiVersion": "batch/v2", "metadata": {},
            "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}});
        let mut doc = map(stored.clone());
        as_served(&mut doc);
        assert_eq!(Value::Object(doc), stored);
    }
}
