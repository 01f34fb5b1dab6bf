//! The built-in resources a cluster keeps, as the apiserver serves and
//! stores them: group, version, names, scope, and the etcd key prefix the
//! apiserver's storage uses (`/registry/<resource>/` with its exceptions:
//! nodes under `minions`, services under `services/specs`, endpoints under
//! `services/endpoints`, ingresses under `ingress`, CRDs under their
//! group).

use crate::info::ResourceInfo;

/// A built-in resource and where the apiserver stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builtin {
    /// Its names and shape.
    pub info: ResourceInfo,
    /// Its etcd key prefix, under the apiserver's `/registry/` root.
    pub prefix: String,
}

/// (group, version, plural, kind, namespaced, short names, key under
/// `/registry/`, selectable fields besides the name and the namespace).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static str,
    &'static [&'static str],
);

const TABLE: &[Row] = &[
    (
        "",
        "v1",
        "pods",
        "Pod",
        true,
        &["po"],
        "pods",
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
    ),
    (
        "",
        "v1",
        "nodes",
        "Node",
        false,
        &["no"],
        "minions",
        &["spec.unschedulable"],
    ),
    (
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        "namespaces",
        &["status.phase"],
    ),
    (
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        true,
        &["cm"],
        "configmaps",
        &[],
    ),
    (
        "",
        "v1",
        "secrets",
        "Secret",
        true,
        &[],
        "secrets",
        &["type"],
    ),
    (
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["sa"],
        "serviceaccounts",
        &[],
    ),
    (
        "",
        "v1",
        "services",
        "Service",
        true,
        &["svc"],
        "services/specs",
        &["spec.clusterIP", "spec.type"],
    ),
    (
        "",
        "v1",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        "services/endpoints",
        &[],
    ),
    (
        "",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        "events",
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
    ),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        "persistentvolumes",
        &[],
    ),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        "persistentvolumeclaims",
        &[],
    ),
    (
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        &["quota"],
        "resourcequotas",
        &[],
    ),
    (
        "",
        "v1",
        "limitranges",
        "LimitRange",
        true,
        &["limits"],
        "limitranges",
        &[],
    ),
    (
        "",
        "v1",
        "podtemplates",
        "PodTemplate",
        true,
        &[],
        "podtemplates",
        &[],
    ),
    (
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
        &["rc"],
        "controllers",
        &["status.replicas"],
    ),
    (
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        "deployments",
        &[],
    ),
    (
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        "replicasets",
        &[],
    ),
    (
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        "daemonsets",
        &[],
    ),
    (
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        "statefulsets",
        &[],
    ),
    (
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
        "controllerrevisions",
        &[],
    ),
    (
        "batch",
        "v1",
        "jobs",
        "Job",
        true,
        &[],
        "jobs",
        &["status.successful"],
    ),
    (
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        true,
        &["cj"],
        "cronjobs",
        &[],
    ),
    (
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
        &[],
        "endpointslices",
        &[],
    ),
    (
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        &[],
        "leases",
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
        "roles",
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
        "rolebindings",
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        "clusterroles",
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        "clusterrolebindings",
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
        "ingress",
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
        "networkpolicies",
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
        "ingressclasses",
        &[],
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        "poddisruptionbudgets",
        &[],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
        "priorityclasses",
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
        "storageclasses",
        &[],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        "apiextensions.k8s.io/customresourcedefinitions",
        &[],
    ),
];

/// The apiserver's default etcd root.
pub const REGISTRY: &str = "/registry/";

/// Every built-in resource Herald serves, under the etcd root `registry`
/// (the apiserver's `--etcd-prefix`, `/registry` by default).
pub fn builtins(registry: &str) -> Vec<Builtin> {
    TABLE.iter().map(|row| builtin_of(row, registry)).collect()
}

/// The built-in resource a name means: `pods`, `deployments.apps`,
/// `deployments` (a plural that only one group has), or a short name
/// (`deploy`); `None` for a name no built-in resource has, or one that
/// several groups share without a group.
pub fn builtin(name: &str, registry: &str) -> Option<Builtin> {
    let matches: Vec<&Row> = TABLE
        .iter()
        .filter(|(group, _, plural, _, _, short, _, _)| {
            name == *plural
                || short.contains(&name)
                || (!group.is_empty() && name == format!("{plural}.{group}"))
        })
        .collect();
    match matches.as_slice() {
        [one] => Some(builtin_of(one, registry)),
        _ => None,
    }
}

/// Where a selectable field's value is in the object, and its value when
/// the object lacks it, for the fields the apiserver names apart from
/// their path or prints from a Go zero value (its `GetAttrs` /
/// `ToSelectableFields`); every other field is its own path, unset when
/// missing.
pub fn field_source(info: &ResourceInfo, name: &str) -> (String, Option<&'static str>) {
    let (path, default) = match (info.group.as_str(), info.plural.as_str(), name) {
        ("", "pods", "spec.hostNetwork") => (name, Some("false")),
        ("", "nodes", "spec.unschedulable") => (name, Some("false")),
        ("", "events", "source") => ("source.component", None),
        ("", "replicationcontrollers", "status.replicas") => (name, Some("0")),
        ("batch", "jobs", "status.successful") => ("status.succeeded", Some("0")),
        _ => (name, None),
    };
    (path.to_owned(), default)
}

/// The categories the apiserver puts a built-in resource in.
fn categories(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "pods" | "services" | "replicationcontrollers")
        | ("apps", "deployments" | "daemonsets" | "replicasets" | "statefulsets")
        | ("batch", "jobs" | "cronjobs") => &["all"],
        ("apiextensions.k8s.io", _) => &["api-extensions"],
        _ => &[],
    }
}

fn builtin_of(row: &Row, registry: &str) -> Builtin {
    let (group, version, plural, kind, namespaced, short, key, fields) = *row;
    let mut info = ResourceInfo::namespaced(plural, &kind.to_lowercase(), kind, short)
        .in_group(group, version)
        .with_fields(fields);
    info.categories = categories(group, plural)
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    if (group, plural) == ("", "endpoints") {
        info.deprecation = Some(
            "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".into(),
        );
    }
    if !namespaced {
        info = info.cluster_scoped();
    }
    let root = registry.trim_end_matches('/');
    Builtin {
        info,
        prefix: format!("{root}/{key}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_one_resource_with_the_apiservers_key_layout() {
        let b = |n: &str| builtin(n, REGISTRY).map(|b| (b.info.api_version(), b.prefix));
        assert_eq!(b("pods"), Some(("v1".into(), "/registry/pods/".into())));
        assert_eq!(b("nodes"), Some(("v1".into(), "/registry/minions/".into())));
        assert_eq!(
            b("svc"),
            Some(("v1".into(), "/registry/services/specs/".into()))
        );
        assert_eq!(
            b("endpoints"),
            Some(("v1".into(), "/registry/services/endpoints/".into()))
        );
        assert_eq!(
            b("deploy"),
            Some(("apps/v1".into(), "/registry/deployments/".into()))
        );
        assert_eq!(
            b("deployments.apps"),
            Some(("apps/v1".into(), "/registry/deployments/".into()))
        );
        assert_eq!(
            b("crds"),
            Some((
                "apiextensions.k8s.io/v1".into(),
                "/registry/apiextensions.k8s.io/customresourcedefinitions/".into()
            ))
        );
        assert_eq!(b("deployments.batch"), None);
        assert_eq!(b("widgets"), None);
        assert_eq!(builtin("pods", "/other").unwrap().prefix, "/other/pods/");
        assert!(!builtin("nodes", REGISTRY).unwrap().info.namespaced);
    }

    #[test]
    fn every_builtin_is_a_kind_of_the_protobuf_schema() {
        for b in builtins(REGISTRY) {
            assert!(
                crate::proto::knows(&b.info.api_version(), &b.info.kind),
                "{}",
                b.info.qualified()
            );
            assert_eq!(b.info.list_kind, format!("{}List", b.info.kind));
        }
    }
}
