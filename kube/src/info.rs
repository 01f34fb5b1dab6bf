//! A resource's names and shape, as the apiserver's discovery and paths
//! spell them ([`ResourceInfo`]).

/// The fields a pod's engine decodes and indexes.
pub const POD_FIELDS: [&str; 2] = ["spec.nodeName", "status.phase"];

/// A resource's names and shape, as the apiserver's discovery gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The API group (`""` for the core group, `apps`).
    pub group: String,
    /// The served version (`v1`).
    pub version: String,
    /// The path segment (`pods`).
    pub plural: String,
    /// The singular name (`pod`).
    pub singular: String,
    /// The object kind (`Pod`).
    pub kind: String,
    /// The list kind (`PodList`).
    pub list_kind: String,
    /// Whether objects live in namespaces (the engine's keys are
    /// `namespace/name`) or not (`name`).
    pub namespaced: bool,
    /// Short names (`po`), for `kubectl get po`.
    pub short_names: Vec<String>,
    /// The categories it belongs to (`all`: `kubectl get all` lists it).
    pub categories: Vec<String>,
    /// The warning the apiserver sends with every answer about it, if it
    /// is deprecated (`v1 Endpoints is deprecated in v1.33+; ...`).
    pub deprecation: Option<String>,
    /// Whether it is a built-in (typed) kind, whose list items the
    /// apiserver prints without `kind` and `apiVersion`; a custom
    /// resource's list items keep theirs.
    pub typed: bool,
    /// The field labels its objects carry for field selectors, besides
    /// `metadata.name` and `metadata.namespace` (which every object has).
    /// A field selector on any other is refused with 400 `field label not
    /// supported`, as the apiserver refuses one it cannot select on: an
    /// object without the field would never match, silently.
    pub fields: Vec<String>,
    /// Whether a field selector may name `metadata.namespace`, where the
    /// apiserver's conversion says (it refuses it on some cluster-scoped
    /// built-in kinds: nodes, namespaces, certificate signing requests);
    /// `None`: on namespaced resources and built-in kinds, not on
    /// cluster-scoped custom resources (`crConverter.ConvertFieldLabel`).
    pub namespace_selectable: Option<bool>,
    /// Discovery's `storageVersionHash`: the apiserver's hash of the
    /// group, version and kind it stores objects at (clients key caches
    /// on it); `None` where Herald does not know it.
    pub storage_version_hash: Option<String>,
}

impl ResourceInfo {
    /// A namespaced core/v1 resource.
    pub fn namespaced(plural: &str, singular: &str, kind: &str, short: &[&str]) -> ResourceInfo {
        ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            plural: plural.into(),
            singular: singular.into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced: true,
            short_names: short.iter().map(|s| (*s).into()).collect(),
            typed: true,
            categories: Vec::new(),
            deprecation: None,
            fields: Vec::new(),
            namespace_selectable: None,
            storage_version_hash: None,
        }
    }

    /// The same resource in `group`/`version`.
    pub fn in_group(mut self, group: &str, version: &str) -> ResourceInfo {
        self.group = group.into();
        self.version = version.into();
        self
    }

    /// The same resource, cluster-scoped.
    pub fn cluster_scoped(mut self) -> ResourceInfo {
        self.namespaced = false;
        self
    }

    /// `v1` for the core group, `group/version` for the others: the
    /// `apiVersion` of its objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural` in the core group, `plural.group` in the others (as
    /// `kubectl` and RBAC name a resource).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The same with these selectable `fields`.
    pub fn with_fields<S: AsRef<str>>(mut self, fields: &[S]) -> ResourceInfo {
        self.fields = fields.iter().map(|f| f.as_ref().to_owned()).collect();
        self
    }

    /// Whether a field selector may name `field`: `metadata.name`,
    /// `metadata.namespace` where the apiserver takes it
    /// ([`namespace_selectable`](Self::namespace_selectable)), and the
    /// resource's own fields.
    pub fn selectable(&self, field: &str) -> bool {
        field == herald::object::FIELD_NAME
            || (field == herald::object::FIELD_NAMESPACE
                && self
                    .namespace_selectable
                    .unwrap_or(self.namespaced || self.typed))
            || self.fields.iter().any(|f| f == field)
    }

    /// `pods`, with [`POD_FIELDS`].
    pub fn pods() -> ResourceInfo {
        ResourceInfo::namespaced("pods", "pod", "Pod", &["po"]).with_fields(&POD_FIELDS)
    }

    /// `configmaps`.
    pub fn configmaps() -> ResourceInfo {
        ResourceInfo::namespaced("configmaps", "configmap", "ConfigMap", &["cm"])
    }

    /// `secrets`.
    pub fn secrets() -> ResourceInfo {
        ResourceInfo::namespaced("secrets", "secret", "Secret", &[])
    }

    /// The well-known core/v1 resource of this plural name, if Herald
    /// knows its kind.
    pub fn known(plural: &str) -> Option<ResourceInfo> {
        match plural {
            "pods" => Some(ResourceInfo::pods()),
            "configmaps" => Some(ResourceInfo::configmaps()),
            "secrets" => Some(ResourceInfo::secrets()),
            "services" => Some(ResourceInfo::namespaced(
                "services",
                "service",
                "Service",
                &["svc"],
            )),
            "endpoints" => Some(ResourceInfo::namespaced(
                "endpoints",
                "endpoints",
                "Endpoints",
                &["ep"],
            )),
            "events" => Some(ResourceInfo::namespaced(
                "events",
                "event",
                "Event",
                &["ev"],
            )),
            "serviceaccounts" => Some(ResourceInfo::namespaced(
                "serviceaccounts",
                "serviceaccount",
                "ServiceAccount",
                &["sa"],
            )),
            _ => None,
        }
    }

    /// The engine key of `name` in `namespace`.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{ns}/{name}"),
            _ => name.to_owned(),
        }
    }

    /// The value of the initial-events-end bookmark's
    /// `kubernetes.io/initial-events-list-blueprint` annotation: the empty
    /// list of this kind as the apiserver encodes it in JSON (with the
    /// encoder's trailing newline), base64-encoded; client-go builds the
    /// list it returns from a watch-list from it.
    pub fn list_blueprint(&self) -> String {
        let empty = format!(
            "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{}},\"items\":null}}\n",
            self.list_kind,
            self.api_version()
        );
        base64(empty.as_bytes())
    }
}

/// Standard base64 with padding.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_blueprint_is_the_apiservers() {
        // Kubernetes 1.32's, for pods.
        assert_eq!(
            ResourceInfo::pods().list_blueprint(),
            "eyJraW5kIjoiUG9kTGlzdCIsImFwaVZlcnNpb24iOiJ2MSIsIm1ldGFkYXRhIjp7fSwiaXRlbXMiOm51bGx9Cg=="
        );
    }

    #[test]
    fn keys_follow_the_scope() {
        let pods = ResourceInfo::pods();
        assert_eq!(pods.key(Some("ns"), "a"), "ns/a");
        assert_eq!(pods.key(None, "a"), "a");
        assert_eq!(ResourceInfo::known("cm"), None);
        assert_eq!(ResourceInfo::known("configmaps").unwrap().kind, "ConfigMap");
    }

    #[test]
    fn selectable_fields_are_the_decoded_ones_and_metadata() {
        let pods = ResourceInfo::pods();
        for f in [
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "status.phase",
        ] {
            assert!(pods.selectable(f), "{f}");
        }
        assert!(!pods.selectable("spec.fooBar"));
        assert!(!ResourceInfo::secrets().selectable("spec.nodeName"));
        let mut cluster_custom = ResourceInfo::secrets();
        (cluster_custom.namespaced, cluster_custom.typed) = (false, false);
        assert!(cluster_custom.selectable("metadata.name"));
        assert!(!cluster_custom.selectable("metadata.namespace"));
    }
}
