//! The built-in resources Herald serves, as the apiserver serves and
//! stores them: group, version, names, scope, short names, categories,
//! selectable fields, deprecation, `storageVersionHash`, and the etcd key
//! prefix the apiserver's storage uses (`/registry/<resource>/` with its
//! exceptions: nodes under `minions`, services under `services/specs`,
//! ingresses under `ingress`, CRDs and APIServices under their group).
//!
//! None of it is listed here: it is read from what kube-apiserver v1.37.2
//! serves ([`crate::served`], generated from it). A built-in resource is
//! one it serves at its group's preferred version, lists and watches,
//! stores in etcd at that same version (so the stored objects are served
//! as they are), and whose kind Herald's protobuf schema knows. The
//! others it serves (virtual resources such as `componentstatuses` or
//! `tokenreviews`, non-preferred versions) Herald does not: see
//! [`unserved`].

use crate::info::ResourceInfo;
use crate::served::{Served, served};

/// A built-in resource and where the apiserver stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builtin {
    /// Its names and shape.
    pub info: ResourceInfo,
    /// Its etcd key prefix, under the apiserver's `/registry/` root.
    pub prefix: String,
}

/// The apiserver's default etcd root.
pub const REGISTRY: &str = "/registry/";

/// Every built-in resource Herald serves, under the etcd root `registry`
/// (the apiserver's `--etcd-prefix`, `/registry` by default).
pub fn builtins(registry: &str) -> Vec<Builtin> {
    served()
        .iter()
        .filter(|s| why_not(s).is_none())
        .map(|s| builtin_of(s, registry))
        .collect()
}

/// The listable resources the apiserver serves that Herald does not, each
/// with why.
pub fn unserved() -> Vec<(&'static Served, &'static str)> {
    served()
        .iter()
        .filter(|s| s.can("list"))
        .filter_map(|s| why_not(s).map(|why| (s, why)))
        .collect()
}

/// Why Herald does not serve `s` as a built-in resource, or `None` if it
/// does.
fn why_not(s: &Served) -> Option<&'static str> {
    if !(s.can("list") && s.can("watch")) {
        Some("not listed and watched")
    } else if s.key_prefix.is_none() {
        Some("not stored in etcd: the apiserver computes it")
    } else if !s.preferred {
        Some("not its group's preferred version: Herald serves one version of a built-in resource")
    } else if !s.stored_as_served() && !crate::read::converts_storage(&s.group, &s.kind) {
        Some("stored at another version, which Herald would have to convert")
    } else if !crate::proto::knows(&s.api_version(), &s.kind) {
        Some("its kind is not in Herald's protobuf schema")
    } else {
        None
    }
}

/// The built-in resource a name means: `pods`, `deployments.apps`,
/// `deployments` (a plural that only one group has), or a short name
/// (`deploy`); `None` for a name no built-in resource has, or one that
/// several groups share without a group.
pub fn builtin(name: &str, registry: &str) -> Option<Builtin> {
    let matches: Vec<&Served> = served()
        .iter()
        .filter(|s| why_not(s).is_none())
        .filter(|s| {
            name == s.resource
                || s.short_names.iter().any(|n| n == name)
                || (!s.group.is_empty() && name == format!("{}.{}", s.resource, s.group))
        })
        .collect();
    match matches.as_slice() {
        [one] => Some(builtin_of(one, registry)),
        _ => None,
    }
}

/// Where a selectable field's value is in the object (the first of these
/// paths that holds a non-empty value: [`Decoder::field_from`](crate::Decoder::field_from)),
/// and its value when the object lacks it, for the fields the apiserver
/// names apart from their path, reads from another field when one is
/// empty, or prints from a Go zero value (its `GetAttrs` /
/// `ToSelectableFields`); every other field is its own path, unset when
/// missing. No path is a label the apiserver's conversion accepts but its
/// objects' field set never holds (a pod's `status.podIPs`): it reads as
/// `""`, as a missing field does.
pub fn field_source<'a>(
    info: &ResourceInfo,
    name: &'a str,
) -> (Vec<&'a str>, Option<&'static str>) {
    let (paths, default): (&[&str], _) = match (info.group.as_str(), info.plural.as_str(), name) {
        // `spec.host`: old v1 clients' name, converted to `spec.nodeName`.
        ("", "pods", "spec.host") => (&["spec.nodeName"], None),
        ("", "pods", "status.podIPs") => (&[], None),
        ("", "pods", "spec.hostNetwork") => return (vec![name], Some("false")),
        ("", "nodes", "spec.unschedulable") => return (vec![name], Some("false")),
        // `source.component`, or `reportingController` (v1's
        // `reportingComponent`) when that is empty: every
        // events.k8s.io/v1 event has no `source`.
        ("", "events", "source") => (&["source.component", "reportingComponent"], None),
        ("", "replicationcontrollers", "status.replicas") => return (vec![name], Some("0")),
        ("batch", "jobs", "status.successful") => (&["status.succeeded"], Some("0")),
        _ => return (vec![name], None),
    };
    (paths.to_vec(), default)
}

fn builtin_of(s: &Served, registry: &str) -> Builtin {
    let own: Vec<&str> = s
        .field_labels
        .iter()
        .map(String::as_str)
        .filter(|f| *f != herald::object::FIELD_NAME && *f != herald::object::FIELD_NAMESPACE)
        .collect();
    let mut info = ResourceInfo::namespaced(&s.resource, &s.singular_name, &s.kind, &[])
        .in_group(&s.group, &s.version)
        .with_fields(&own);
    info.short_names = s.short_names.clone();
    info.categories = s.categories.clone();
    info.deprecation = s.deprecation.clone();
    info.storage_version_hash = s.storage_version_hash.clone();
    info.namespace_selectable = Some(
        s.field_labels
            .iter()
            .any(|f| f == herald::object::FIELD_NAMESPACE),
    );
    if !s.namespaced {
        info = info.cluster_scoped();
    }
    let root = registry.trim_end_matches('/');
    let key = s.key_prefix.as_deref().unwrap_or(&s.resource);
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
    fn every_listable_resource_the_apiserver_stores_is_served() {
        // Absent from the hand-written list this replaced.
        for name in [
            "certificatesigningrequests",
            "csidrivers",
            "csinodes",
            "apiservices",
            "validatingwebhookconfigurations",
            "runtimeclasses",
            "flowschemas",
            "horizontalpodautoscalers",
        ] {
            let b = builtin(name, REGISTRY).unwrap_or_else(|| panic!("{name} is not served"));
            assert!(b.info.storage_version_hash.is_some(), "{name}");
        }
        // What is left out is left out for a reason that holds.
        for (s, why) in unserved() {
            assert!(
                s.key_prefix.is_none()
                    || !s.preferred
                    || !s.can("watch")
                    || (!s.stored_as_served() && !crate::read::converts_storage(&s.group, &s.kind)),
                "{}.{} {}: {why}",
                s.resource,
                s.group,
                s.version
            );
        }
    }

    #[test]
    fn short_names_and_fields_are_the_apiservers() {
        let info = |n: &str| builtin(n, REGISTRY).unwrap().info;
        assert_eq!(info("pods").short_names, ["po"]);
        assert_eq!(info("crd").short_names, ["crd", "crds"]);
        assert!(info("pods").fields.iter().any(|f| f == "spec.nodeName"));
        assert!(
            info("events")
                .fields
                .iter()
                .any(|f| f == "involvedObject.uid")
        );
        assert!(info("pods").categories.iter().any(|c| c == "all"));
        assert!(info("endpoints").deprecation.is_some());
        // The apiserver's conversions refuse these.
        assert!(info("pods").selectable("spec.host"));
        assert!(!info("nodes").selectable("metadata.namespace"));
        assert!(!info("csr").selectable("metadata.namespace"));
        assert!(info("pv").selectable("metadata.namespace"));
        assert!(info("pods").selectable("metadata.namespace"));
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
