//! Aggregated discovery: `/api` and `/apis` as one
//! `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` each, which kubectl
//! and client-go ask for first (`Accept:
//! application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json`)
//! and recognise by the answer's `Content-Type`; without it they fetch
//! every group version's document. As the apiserver writes it:
//!
//! - groups by the apiserver's group priority (its aggregator's table;
//!   custom resources' groups 1000), then by name; a group's versions in
//!   Kubernetes' version order ([`crate::versions`]); a version's
//!   resources by name, each with its kind (`responseKind`: no group or
//!   version for a built-in kind), scope, singular name, verbs, short
//!   names and categories, and no `storageVersionHash`;
//! - an `ETag` (SHA-512 of the document without its type, in upper-case
//!   hex, quoted), answered `304 Not Modified` when `If-None-Match` names
//!   it.
//!
//! Herald lists the verbs it serves (`get`, `list`, `watch`) and no
//! subresources, as its per-group documents do.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::Digest;

use crate::info::ResourceInfo;
use crate::versions::compare_kube_aware;
use crate::wire::ranked;

/// The `Content-Type` of an aggregated document.
pub const CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for the aggregated document in JSON:
/// its first range (in negotiation's order) naming
/// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` is a JSON one.
pub fn wanted(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    ranked(accept)
        .iter()
        .find(|r| {
            r.param("g") == Some("apidiscovery.k8s.io")
                && r.param("v") == Some("v2")
                && r.param("as") == Some("APIGroupDiscoveryList")
        })
        .is_some_and(|r| {
            matches!(
                r.media_type(),
                ("application", "json") | ("application", "*") | ("*", "*")
            )
        })
}

/// One aggregated document: its body and its `ETag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The JSON body, with its newline.
    pub body: Vec<u8>,
    /// The `ETag` header's value, quoted.
    pub etag: String,
}

/// The apiserver's priority of a built-in group (its aggregator's
/// table); every other group's (custom resources') is 1000.
fn group_priority(group: &str) -> u32 {
    match group {
        "" => 18000,
        "apiregistration.k8s.io" => 20001,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "admissionregistration.k8s.io" | "apiextensions.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" | "resource.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        "internal.apiserver.k8s.io" => 16000,
        "storagemigration.k8s.io" => 15800,
        "lifecycle.k8s.io" => 15700,
        _ => 1000,
    }
}

/// One resource's entry.
fn resource(r: &ResourceInfo) -> Value {
    let (group, version) = if r.typed {
        ("", "")
    } else {
        (r.group.as_str(), r.version.as_str())
    };
    let mut v = Map::new();
    v.insert("resource".into(), json!(r.plural));
    v.insert(
        "responseKind".into(),
        json!({"group": group, "version": version, "kind": r.kind}),
    );
    v.insert(
        "scope".into(),
        json!(if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    v.insert("singularResource".into(), json!(r.singular));
    v.insert("verbs".into(), json!(["get", "list", "watch"]));
    if !r.short_names.is_empty() {
        v.insert("shortNames".into(), json!(r.short_names));
    }
    if !r.categories.is_empty() {
        v.insert("categories".into(), json!(r.categories));
    }
    Value::Object(v)
}

/// A version and its resources.
type Version<'a> = (&'a str, Vec<&'a ResourceInfo>);
/// A group and its versions.
type Group<'a> = (&'a str, Vec<Version<'a>>);

/// The aggregated document of `resources` (those of the core group for
/// `/api`, the others for `/apis`).
pub fn document<'a>(resources: impl Iterator<Item = &'a ResourceInfo>) -> Document {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for r in resources {
        let at = match groups.iter().position(|(g, _)| *g == r.group) {
            Some(i) => i,
            None => {
                groups.push((&r.group, Vec::new()));
                groups.len() - 1
            }
        };
        let versions = &mut groups[at].1;
        match versions.iter_mut().find(|(v, _)| *v == r.version) {
            Some((_, list)) => list.push(r),
            None => versions.push((&r.version, vec![r])),
        }
    }
    groups.sort_by(|(a, _), (b, _)| {
        group_priority(b)
            .cmp(&group_priority(a))
            .then_with(|| a.cmp(b))
    });
    let items: Vec<Value> = groups
        .iter_mut()
        .map(|(group, versions)| {
            versions.sort_by(|(a, _), (b, _)| compare_kube_aware(b, a));
            let versions: Vec<Value> = versions
                .iter_mut()
                .map(|(version, list)| {
                    list.sort_by(|a, b| a.plural.cmp(&b.plural));
                    list.dedup_by(|a, b| a.plural == b.plural);
                    json!({
                        "version": version,
                        "resources": list.iter().map(|r| resource(r)).collect::<Vec<_>>(),
                        "freshness": "Current",
                    })
                })
                .collect();
            let metadata = if group.is_empty() {
                json!({})
            } else {
                json!({"name": group})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    let items = crate::gojson::to_vec(&Value::Array(items)).unwrap_or_else(|_| b"[]".to_vec());
    // The ETag hashes the document as Go marshals it with no type.
    let mut untyped = b"{\"metadata\":{},\"items\":".to_vec();
    untyped.extend_from_slice(&items);
    untyped.push(b'}');
    let mut etag = String::with_capacity(130);
    etag.push('"');
    for b in sha2::Sha512::digest(&untyped) {
        let _ = write!(etag, "{b:02X}");
    }
    etag.push('"');
    let mut body =
        b"{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":"
            .to_vec();
    body.extend_from_slice(&items);
    body.extend_from_slice(b"}\n");
    Document { body, etag }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{REGISTRY, builtin};

    #[test]
    fn clients_asking_for_it_get_it() {
        let client_go =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wanted(Some(client_go)));
        assert!(wanted(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json"
        )));
        assert!(!wanted(Some("application/json")));
        assert!(!wanted(None));
        assert!(!wanted(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        )));
        assert!(!wanted(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"
        )));
    }

    #[test]
    fn groups_versions_and_resources_in_the_apiservers_order() {
        let infos: Vec<ResourceInfo> = ["deployments", "jobs", "pods", "leases", "daemonsets"]
            .iter()
            .map(|n| builtin(n, REGISTRY).unwrap().info)
            .collect();
        let mut widgets = ResourceInfo::namespaced("widgets", "widget", "Widget", &["wd"])
            .in_group("herald.dev", "v1");
        widgets.typed = false;
        let mut v2 = widgets.clone().in_group("herald.dev", "v2");
        v2.typed = false;
        let all: Vec<&ResourceInfo> = infos
            .iter()
            .chain([&widgets, &v2])
            .filter(|r| !r.group.is_empty())
            .collect();
        let doc = document(all.into_iter());
        let v: Value = serde_json::from_slice(&doc.body).unwrap();
        let names: Vec<&str> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["apps", "batch", "coordination.k8s.io", "herald.dev"]
        );
        let apps = &v["items"][0]["versions"][0];
        let resources: Vec<&str> = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["resource"].as_str().unwrap())
            .collect();
        assert_eq!(resources, ["daemonsets", "deployments"]);
        assert_eq!(
            apps["resources"][1]["responseKind"],
            json!({"group": "", "version": "", "kind": "Deployment"})
        );
        let herald = &v["items"][3]["versions"];
        assert_eq!(herald[0]["version"], "v2");
        assert_eq!(
            herald[0]["resources"][0]["responseKind"],
            json!({"group": "herald.dev", "version": "v2", "kind": "Widget"})
        );
        assert_eq!(doc.etag.len(), 130);
        assert!(
            doc.etag
                .trim_matches('"')
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
        );
        let core = document(infos.iter().filter(|r| r.group.is_empty()));
        let v: Value = serde_json::from_slice(&core.body).unwrap();
        assert_eq!(v["items"][0]["metadata"], json!({}));
        assert_eq!(
            v["items"][0]["versions"][0]["resources"][0]["resource"],
            "pods"
        );
    }
}
