//! What kube-apiserver v1.37.2 serves, as `schema/served-v1.37.2.json`
//! records it: every resource of every group version it serves by
//! default, with discovery's fields (names, scope, verbs, short names,
//! categories, `storageVersionHash`), the etcd key its storage uses, the
//! field labels its field selectors accept, the deprecation warning it
//! sends and the column definitions of its `Table`s.
//!
//! The file is generated, never typed by hand: `schema/served` (a Go
//! module) starts the real apiserver built from the `k8s.io/kubernetes`
//! v1.37.2 sources and reads what it serves; the test command regenerates
//! it and fails if it differs from the committed file. Herald's built-in
//! resources ([`crate::builtin`]), their discovery and their tables'
//! columns are read from it, so they cannot drift from the apiserver's by
//! a hand's omission.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// The generated file, compiled in.
const SERVED_JSON: &str = include_str!("../schema/served-v1.37.2.json");

/// One resource the apiserver serves, at one version.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Served {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The plural, its path segment (`pods`).
    pub resource: String,
    /// The singular name (`pod`).
    pub singular_name: String,
    /// The kind (`Pod`).
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// The verbs discovery lists for it.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Its short names (`po`).
    #[serde(default)]
    pub short_names: Vec<String>,
    /// Its categories (`all`).
    #[serde(default)]
    pub categories: Vec<String>,
    /// Discovery's hash of its storage version, if it is stored.
    #[serde(default)]
    pub storage_version_hash: Option<String>,
    /// Whether this version is its group's preferred one.
    #[serde(default)]
    pub preferred: bool,
    /// Its subresources' names (`status`, `log`).
    #[serde(default)]
    pub subresources: Vec<String>,
    /// Its etcd key under the `/registry/` root (`minions` for nodes), if
    /// it is stored.
    #[serde(default)]
    pub key_prefix: Option<String>,
    /// The field labels a field selector on it may use, `metadata.name`
    /// and `metadata.namespace` included.
    #[serde(default)]
    pub field_labels: Vec<String>,
    /// The `Warning` the apiserver sends with every answer about it, if
    /// this version is deprecated.
    #[serde(default)]
    pub deprecation: Option<String>,
    /// Its `Table`s' column definitions, as the apiserver sends them.
    #[serde(default)]
    pub columns: Vec<Value>,
}

impl Served {
    /// Whether discovery lists `verb` for it.
    pub fn can(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Whether its objects are stored at this very version (its
    /// `storageVersionHash` is this version's), so that what is stored is
    /// what is served.
    pub fn stored_as_served(&self) -> bool {
        self.storage_version_hash.as_deref()
            == Some(storage_version_hash(&self.group, &self.version, &self.kind).as_str())
    }

    /// `v1` for the core group, `group/version` for the others.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The generated file's shape.
#[derive(Deserialize)]
struct File {
    resources: Vec<Served>,
}

/// Every resource kube-apiserver v1.37.2 serves by default, each served
/// version apart, in the generated file's order.
pub fn served() -> &'static [Served] {
    static SERVED: OnceLock<Vec<Served>> = OnceLock::new();
    SERVED.get_or_init(|| {
        // The file is compiled in and its parse is checked by the tests
        // below: a failure here is a build defect, not an input error.
        serde_json::from_str::<File>(SERVED_JSON)
            .expect("schema/served-v1.37.2.json parses")
            .resources
    })
}

/// Discovery's `storageVersionHash` of objects stored at `group`,
/// `version`, `kind`, as the apiserver computes it
/// (`discovery.StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/version/kind`, in standard base64).
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let sum = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&sum[..8])
}

/// The column definitions the apiserver's `Table`s of `group`'s `kind`
/// carry, if it serves that kind as a listable resource.
pub fn columns(group: &str, kind: &str) -> Option<&'static [Value]> {
    served()
        .iter()
        .filter(|s| s.group == group && s.kind == kind && !s.columns.is_empty())
        .max_by_key(|s| s.preferred)
        .map(|s| s.columns.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hashes_are_the_apiservers() {
        // Served by kube-apiserver v1.37.2's discovery.
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
    }

    #[test]
    fn the_storage_version_is_read_from_the_hash() {
        let find = |g: &str, v: &str, r: &str| {
            served()
                .iter()
                .find(|s| s.group == g && s.version == v && s.resource == r)
                .unwrap()
        };
        assert!(find("", "v1", "events").stored_as_served());
        // Stored as core/v1 Events.
        assert!(!find("events.k8s.io", "v1", "events").stored_as_served());
    }

    #[test]
    fn the_generated_file_parses_and_holds_what_the_apiserver_serves() {
        let all = served();
        let find = |g: &str, r: &str| {
            all.iter()
                .find(|s| s.group == g && s.resource == r && s.preferred)
        };
        let pods = find("", "pods").expect("pods");
        assert_eq!(pods.kind, "Pod");
        assert!(pods.namespaced && pods.can("watch"));
        assert_eq!(pods.short_names, ["po"]);
        assert_eq!(pods.key_prefix.as_deref(), Some("pods"));
        assert!(pods.field_labels.iter().any(|f| f == "spec.nodeName"));
        assert!(pods.storage_version_hash.is_some());
        assert_eq!(
            find("", "nodes").and_then(|n| n.key_prefix.as_deref()),
            Some("minions")
        );
        assert!(find("certificates.k8s.io", "certificatesigningrequests").is_some());
        assert!(find("apiregistration.k8s.io", "apiservices").is_some());
        assert!(all.len() > 60, "{} resources", all.len());
        assert!(!columns("", "Pod").unwrap_or_default().is_empty());
    }
}
