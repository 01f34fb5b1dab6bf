//! The discovery documents a client reads before it lists: `/version`,
//! `/api`, `/api/v1` and `/apis`, in the apiserver's unaggregated form
//! (the aggregated form, which kubectl and client-go ask for first, is
//! `herald_kube::aggregated`'s, served by the routes for `/api` and
//! `/apis`).

use herald_kube::ResourceInfo;
use serde_json::{Value, json};

/// The Kubernetes minor version the served API follows.
pub const KUBERNETES_MINOR: &str = "37";

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// `/version`.
pub fn version() -> Vec<u8> {
    bytes(&json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0+herald-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "herald (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    }))
}

/// `/api`.
pub fn api_versions() -> Vec<u8> {
    bytes(&json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [],
    }))
}

/// The groups of `resources` other than the core one, each with its
/// versions, in order of first appearance.
fn groups<'a>(resources: impl Iterator<Item = &'a ResourceInfo>) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => {
                versions.push(r.version.clone())
            }
            Some(_) => {}
            None => out.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    for (_, versions) in &mut out {
        versions.sort_by_key(|v| std::cmp::Reverse(priority(v)));
    }
    out
}

/// A version's rank as Kubernetes orders them (`v2` > `v1` > `v1beta2` >
/// `v1beta1` > `v1alpha1` > anything else): the first is preferred.
pub(crate) fn priority(version: &str) -> (u8, u64, u64) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let Ok(major) = rest[..digits].parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits..];
    let minor = |p: &str| tail.strip_prefix(p).and_then(|m| m.parse::<u64>().ok());
    match tail {
        "" => (3, major, 0),
        _ => match (minor("beta"), minor("alpha")) {
            (Some(m), _) => (2, major, m),
            (_, Some(m)) => (1, major, m),
            _ => (0, 0, 0),
        },
    }
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": gv(&versions[0]),
    })
}

/// `/apis`: the served groups (the core group is under `/api`).
pub fn api_groups<'a>(resources: impl Iterator<Item = &'a ResourceInfo>) -> Vec<u8> {
    let groups: Vec<Value> = groups(resources)
        .iter()
        .map(|(g, versions)| group_json(g, versions))
        .collect();
    bytes(&json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": groups,
    }))
}

/// `/apis/<group>`: one served group, or `None` if none of `resources` is
/// in it.
pub fn api_group<'a>(
    group: &str,
    resources: impl Iterator<Item = &'a ResourceInfo>,
) -> Option<Vec<u8>> {
    let groups = groups(resources);
    let (_, versions) = groups.iter().find(|(g, _)| g == group)?;
    let mut doc = group_json(group, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(bytes(&doc))
}

/// `/api/v1` or `/apis/<group>/<version>`: the served resources of that
/// group version, read-only.
pub fn api_resources<'a>(
    group: &str,
    version: &str,
    resources: impl Iterator<Item = &'a ResourceInfo>,
) -> Vec<u8> {
    let list: Vec<Value> = resources
        .filter(|r| r.group == group && r.version == version)
        .map(|r| {
            let mut v = json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "list", "watch"],
            });
            // `omitempty`, as `metav1.APIResource` has them.
            if !r.short_names.is_empty() {
                v["shortNames"] = json!(r.short_names);
            }
            if !r.categories.is_empty() {
                v["categories"] = json!(r.categories);
            }
            if let Some(hash) = &r.storage_version_hash {
                v["storageVersionHash"] = json!(hash);
            }
            v
        })
        .collect();
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    bytes(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": list,
    }))
}

#[cfg(test)]
mod tests {
    use super::{api_resources, priority};
    use herald_kube::builtin::{REGISTRY, builtin};

    #[test]
    fn resources_carry_the_apiservers_hash_and_omit_empty_short_names() {
        let infos: Vec<_> = ["pods", "secrets", "csr"]
            .iter()
            .map(|n| builtin(n, REGISTRY).unwrap().info)
            .collect();
        let core: serde_json::Value =
            serde_json::from_slice(&api_resources("", "v1", infos.iter())).unwrap();
        let pods = &core["resources"][0];
        assert_eq!(pods["storageVersionHash"], "xPOwRZ+Yhw8=");
        assert_eq!(pods["shortNames"], serde_json::json!(["po"]));
        assert_eq!(pods["categories"], serde_json::json!(["all"]));
        assert!(core["resources"][1].get("shortNames").is_none());
        let certs: serde_json::Value =
            serde_json::from_slice(&api_resources("certificates.k8s.io", "v1", infos.iter()))
                .unwrap();
        assert_eq!(certs["resources"][0]["storageVersionHash"], "95fRKMXA+00=");
    }

    #[test]
    fn versions_rank_as_kubernetes_ranks_them() {
        let mut v = vec![
            "v1alpha1",
            "foo",
            "v1",
            "v1beta2",
            "v2",
            "v1beta1",
            "v10alpha3",
        ];
        v.sort_by_key(|v| std::cmp::Reverse(priority(v)));
        assert_eq!(
            v,
            [
                "v2",
                "v1",
                "v1beta2",
                "v1beta1",
                "v10alpha3",
                "v1alpha1",
                "foo"
            ]
        );
    }
}
