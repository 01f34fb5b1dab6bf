//! The `rbac.authorization.k8s.io/v1` objects RBAC reads, decoded from
//! the JSON the cache serves: only the fields a decision needs.

use serde::Deserialize;

/// An object's name and namespace.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Meta {
    /// `metadata.name`.
    #[serde(default)]
    pub name: String,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    #[serde(default)]
    pub namespace: String,
}

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The verbs it allows (`*`: all).
    #[serde(default, deserialize_with = "nullable")]
    pub verbs: Vec<String>,
    /// The API groups (`""`: the core group; `*`: all).
    #[serde(default, deserialize_with = "nullable")]
    pub api_groups: Vec<String>,
    /// The resources (`pods`, `pods/log`, `*/status`, `*`).
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Vec<String>,
    /// The names it is limited to (empty: every name).
    #[serde(default, deserialize_with = "nullable")]
    pub resource_names: Vec<String>,
    /// The non-resource paths (`/healthz`, `/logs/*`).
    #[serde(default, rename = "nonResourceURLs", deserialize_with = "nullable")]
    pub non_resource_urls: Vec<String>,
}

/// A Role or ClusterRole: its rules (a ClusterRole's aggregation rule
/// is the controller manager's business: the stored rules are what it
/// aggregated, and what the apiserver's RBAC reads too).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Role {
    /// Its name and namespace.
    #[serde(default)]
    pub metadata: Meta,
    /// Its rules.
    #[serde(default, deserialize_with = "nullable")]
    pub rules: Vec<PolicyRule>,
}

/// Who a binding grants its role to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// The user's, group's or service account's name.
    #[serde(default)]
    pub name: String,
    /// A service account's namespace (default: the binding's).
    #[serde(default)]
    pub namespace: String,
}

/// The role a binding grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// Its name and namespace.
    #[serde(default)]
    pub metadata: Meta,
    /// Whom it grants the role to.
    #[serde(default, deserialize_with = "nullable")]
    pub subjects: Vec<Subject>,
    /// The role.
    #[serde(default)]
    pub role_ref: RoleRef,
}

/// A list that may be `null` (Go writes a nil slice so).
fn nullable<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}
