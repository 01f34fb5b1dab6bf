//! The resources an apiserver serves, from its discovery documents
//! (`/api/v1`, `/apis`, each group's preferred version): those that can
//! be listed and watched, subresources left out.

use herald::source::SourceError;
use herald_kube::ResourceInfo;
use serde::Deserialize;

use crate::conn::{Conn, JSON};
use crate::source::ApiServer;

/// One resource the apiserver serves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discovered {
    /// Its names and shape, as discovery gives them (`typed` when its
    /// group is a built-in one: not a custom resource).
    pub info: ResourceInfo,
    /// Its verbs.
    pub verbs: Vec<String>,
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(rename = "groupVersion")]
    group_version: String,
    #[serde(default)]
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
struct Resource {
    name: String,
    #[serde(default, rename = "singularName")]
    singular: String,
    #[serde(default)]
    namespaced: bool,
    kind: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default, rename = "shortNames")]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

#[derive(Deserialize)]
struct GroupList {
    #[serde(default)]
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    name: String,
    #[serde(rename = "preferredVersion")]
    preferred: Option<GroupVersion>,
    #[serde(default)]
    versions: Vec<GroupVersion>,
}

#[derive(Deserialize)]
struct GroupVersion {
    #[serde(rename = "groupVersion")]
    group_version: String,
}

/// The groups whose resources are built into kube-apiserver (its own
/// `*.k8s.io` groups and the unsuffixed legacy ones); any other group's
/// are served by CRDs or aggregated apiservers.
fn built_in_group(group: &str) -> bool {
    group.is_empty()
        || !group.contains('.')
        || (group.ends_with(".k8s.io") && group != "metrics.k8s.io")
}

async fn get<T: for<'de> Deserialize<'de>>(conn: &Conn, uri: &str) -> Result<T, SourceError> {
    let (_, body) = conn
        .get(uri, JSON)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    serde_json::from_slice(&body)
        .map_err(|e| SourceError::Unavailable(format!("GET {uri}: not discovery: {e}")))
}

fn resources(list: ResourceList) -> Vec<Discovered> {
    let (group, version) = match list.group_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), list.group_version.clone()),
    };
    list.resources
        .into_iter()
        .filter(|r| {
            !r.name.contains('/')
                && r.verbs.iter().any(|v| v == "list")
                && r.verbs.iter().any(|v| v == "watch")
        })
        .map(|r| {
            let short: Vec<&str> = r.short_names.iter().map(String::as_str).collect();
            let singular = if r.singular.is_empty() {
                r.kind.to_ascii_lowercase()
            } else {
                r.singular.clone()
            };
            let mut info = ResourceInfo::namespaced(&r.name, &singular, &r.kind, &short)
                .in_group(&group, &version);
            if !r.namespaced {
                info = info.cluster_scoped();
            }
            info.categories = r.categories;
            info.typed = built_in_group(&group);
            Discovered {
                info,
                verbs: r.verbs,
            }
        })
        .collect()
}

impl ApiServer {
    /// Every resource the apiserver serves that can be listed and
    /// watched, at its group's preferred version, custom resources
    /// included; the core group first, then the groups in the
    /// apiserver's order.
    pub fn discover(&self) -> Result<Vec<Discovered>, SourceError> {
        let conn = self.conn();
        conn.block(async {
            let mut out = resources(get(conn, "/api/v1").await?);
            let groups: GroupList = get(conn, "/apis").await?;
            for group in groups.groups {
                let Some(gv) = group
                    .preferred
                    .or_else(|| group.versions.into_iter().next())
                else {
                    continue;
                };
                match get::<ResourceList>(conn, &format!("/apis/{}", gv.group_version)).await {
                    Ok(list) => out.extend(resources(list)),
                    // A group whose aggregated apiserver is down: its
                    // resources are left out (kubectl says the same).
                    Err(SourceError::Unavailable(why)) if !built_in_group(&group.name) => {
                        let _ = why;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listable_watchable_resources_without_subresources() {
        let list: ResourceList = serde_json::from_str(
            r#"{"groupVersion":"apps/v1","resources":[
                {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get","list","watch"],"shortNames":["deploy"],"categories":["all"]},
                {"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get","list","watch"]},
                {"name":"controllerrevisions","singularName":"controllerrevision","namespaced":true,"kind":"ControllerRevision","verbs":["get","list"]}
            ]}"#,
        )
        .unwrap();
        let got = resources(list);
        assert_eq!(got.len(), 1);
        let d = &got[0].info;
        assert_eq!(
            (
                d.group.as_str(),
                d.version.as_str(),
                d.plural.as_str(),
                d.kind.as_str()
            ),
            ("apps", "v1", "deployments", "Deployment")
        );
        assert_eq!(
            (
                d.namespaced,
                d.typed,
                d.short_names.clone(),
                d.categories.clone()
            ),
            (
                true,
                true,
                vec!["deploy".to_owned()],
                vec!["all".to_owned()]
            )
        );
        assert!(
            built_in_group("")
                && built_in_group("apps")
                && built_in_group("rbac.authorization.k8s.io")
        );
        assert!(!built_in_group("example.com") && !built_in_group("metrics.k8s.io"));
    }
}
