//! An object's metadata as the apiserver's `PartialObjectMetadata`
//! carries it (`meta.AsPartialObjectMetadata` of the registry's internal
//! object): the served metadata less what only the versioned form adds
//! (a DaemonSet's `deprecated.daemonset.template.generation`, a
//! Deployment's `deprecated.deployment.rollback.to` annotation, both
//! converted from internal fields by `apps/v1`), written as Go writes the
//! typed `ObjectMeta` (a custom resource's metadata, held with its keys
//! sorted as unstructured JSON is, is typed again through the schema:
//! Go's field order at every level, its empty fields left out).

use serde_json::{Map, Value};

use crate::proto;

/// The Go type of an object's metadata.
pub(crate) const OBJECT_META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta";

/// The annotations `apps/v1` writes from the internal object's fields,
/// by kind.
fn versioned_annotation(kind: &str) -> Option<&'static str> {
    match kind {
        "DaemonSet" => Some("deprecated.daemonset.template.generation"),
        "Deployment" => Some("deprecated.deployment.rollback.to"),
        _ => None,
    }
}

/// Removes from `metadata` (of a `kind`) the annotation only its
/// versioned form has, and `annotations` if that leaves it empty.
pub(crate) fn strip_versioned(kind: &str, metadata: &mut Map<String, Value>) {
    let Some(name) = versioned_annotation(kind) else {
        return;
    };
    if let Some(annotations) = metadata
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(name);
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
}

/// The `PartialObjectMetadata` metadata of `object` (its served JSON), a
/// `kind` that is `typed` (a built-in kind, whose served metadata is in
/// Go's order already) or not (a custom resource).
pub(crate) fn metadata(
    kind: &str,
    typed: bool,
    object: &Value,
) -> Result<Map<String, Value>, proto::ProtoError> {
    let mut metadata = match object.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    strip_versioned(kind, &mut metadata);
    if typed {
        return Ok(metadata);
    }
    proto::type_json(&proto::type_message(&metadata, OBJECT_META)?, OBJECT_META)
}

/// The `ObjectMeta` message of `metadata` (as [`metadata`] gives it).
pub(crate) fn metadata_message(
    metadata: &Map<String, Value>,
) -> Result<Vec<u8>, proto::ProtoError> {
    proto::type_message(metadata, OBJECT_META)
}

/// The Go type the apiserver names in a 406 about a resource's object
/// (`*core.Pod`, `*apps.DeploymentList`; `*unstructured.Unstructured`
/// for a custom resource): the group's internal package.
pub(crate) fn go_type(group: &str, kind: &str, typed: bool, list: bool) -> String {
    let list = if list { "List" } else { "" };
    if !typed {
        return format!("*unstructured.Unstructured{list}");
    }
    let package = match group {
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("*{package}.{kind}{list}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_custom_resources_metadata_is_typed_again() {
        let object = json!({"metadata": {
            "uid": "u", "resourceVersion": "7", "namespace": "ns", "name": "a",
            "managedFields": [{"time": "2026-01-01T00:00:00Z", "operation": "Update", "manager": "m", "fieldsType": "FieldsV1", "fieldsV1": {}, "apiVersion": "v1"}],
            "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1,
        }});
        let m = metadata("Widget", false, &object).unwrap();
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields"
            ]
        );
        let field: Vec<&str> = m["managedFields"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            field,
            [
                "manager",
                "operation",
                "apiVersion",
                "time",
                "fieldsType",
                "fieldsV1"
            ]
        );
    }

    #[test]
    fn versioned_annotations_go() {
        let object = json!({"metadata": {"name": "d", "annotations": {"deprecated.daemonset.template.generation": "1"}}});
        assert_eq!(
            Value::Object(metadata("DaemonSet", true, &object).unwrap()),
            json!({"name": "d"})
        );
        let object = json!({"metadata": {"name": "d", "annotations": {"deprecated.daemonset.template.generation": "1", "a": "b"}}});
        assert_eq!(
            Value::Object(metadata("DaemonSet", true, &object).unwrap()),
            json!({"name": "d", "annotations": {"a": "b"}})
        );
    }

    #[test]
    fn go_types_name_the_internal_package() {
        assert_eq!(go_type("", "Pod", true, false), "*core.Pod");
        assert_eq!(
            go_type("events.k8s.io", "Event", true, true),
            "*core.EventList"
        );
        assert_eq!(
            go_type("rbac.authorization.k8s.io", "Role", true, false),
            "*rbac.Role"
        );
        assert_eq!(
            go_type("internal.apiserver.k8s.io", "StorageVersion", true, false),
            "*apiserverinternal.StorageVersion"
        );
        assert_eq!(
            go_type("herald.dev", "Widget", false, true),
            "*unstructured.UnstructuredList"
        );
    }
}
