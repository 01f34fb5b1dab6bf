//! The discovery documents a client reads before it lists: `/version`,
//! `/api`, `/api/v1` and `/apis`, in the apiserver's unaggregated form
//! (clients that ask for the aggregated form accept this one too).

use herald_kube::ResourceInfo;
use serde_json::{Value, json};

/// The Kubernetes minor version the served API follows.
pub const KUBERNETES_MINOR: &str = "32";

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

/// `/apis`: no groups (the served resources are all core v1).
pub fn api_groups() -> Vec<u8> {
    bytes(&json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [],
    }))
}

/// `/api/v1`: the served resources, read-only.
pub fn api_resources<'a>(resources: impl Iterator<Item = &'a ResourceInfo>) -> Vec<u8> {
    let list: Vec<Value> = resources
        .map(|r| {
            json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "list", "watch"],
                "shortNames": r.short_names,
            })
        })
        .collect();
    bytes(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "v1",
        "resources": list,
    }))
}
