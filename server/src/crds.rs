//! Custom resources, from the CustomResourceDefinitions stored in etcd:
//! for each established CRD, the version it stores (custom resources are
//! stored as JSON at the storage version; Herald serves that version,
//! since it converts nothing), its names and scope, its selectable fields,
//! and its key prefix (`<registry>/<group>/<plural>/`).

use herald::{Engine, ListRequest};
use herald_kube::ResourceInfo;
use herald_kube::table::CrdColumns;
use serde_json::Value;

/// A custom resource to serve and where its objects are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    /// Its names and shape.
    pub info: ResourceInfo,
    /// Its etcd key prefix.
    pub prefix: String,
    /// Its `kubectl get` columns (the storage version's
    /// `additionalPrinterColumns`).
    pub columns: CrdColumns,
}

/// The custom resource a CRD (its JSON, as the apiserver serves it:
/// `apiextensions.k8s.io/v1`) defines, or why not.
pub fn custom_of(crd: &Value, registry: &str) -> Result<Custom, String> {
    let spec = &crd["spec"];
    let text = |v: &Value, what: &str| -> Result<String, String> {
        v.as_str()
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .map(str::to_owned)
            .ok_or_else(|| format!("no {what}"))
    };
    let group = text(&spec["group"], "spec.group")?;
    let names = &spec["names"];
    let plural = text(&names["plural"], "spec.names.plural")?;
    let kind = text(&names["kind"], "spec.names.kind")?;
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map_or_else(|| kind.to_lowercase(), str::to_owned);
    let versions = spec["versions"].as_array().ok_or("no spec.versions")?;
    let storage = versions
        .iter()
        .find(|v| v["storage"] == Value::Bool(true))
        .ok_or("no storage version")?;
    if storage["served"] == Value::Bool(false) {
        return Err("its storage version is not served".into());
    }
    let version = text(&storage["name"], "the storage version's name")?;
    let short: Vec<&str> = names["shortNames"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = storage["selectableFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["jsonPath"].as_str())
                .map(|p| p.trim_start_matches('.').to_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut info = ResourceInfo::namespaced(&plural, &singular, &kind, &short)
        .in_group(&group, &version)
        .with_fields(&fields);
    if let Some(list_kind) = names["listKind"].as_str().filter(|s| !s.is_empty()) {
        info.list_kind = list_kind.to_owned();
    }
    info.typed = false;
    // The apiserver's hash of the storage version, as its discovery of
    // custom resources gives it.
    info.storage_version_hash = Some(herald_kube::served::storage_version_hash(
        &group, &version, &kind,
    ));
    info.categories = names["categories"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if spec["scope"] == "Cluster" {
        info = info.cluster_scoped();
    } else if spec["scope"] != "Namespaced" {
        return Err(format!("scope {}", spec["scope"]));
    }
    let columns = match CrdColumns::from_crd(crd, &version) {
        Some(Ok(c)) => c,
        Some(Err(why)) => return Err(format!("its printer columns: {why}")),
        None => CrdColumns::default(),
    };
    let root = registry.trim_end_matches('/');
    Ok(Custom {
        info,
        prefix: format!("{root}/{group}/{plural}/"),
        columns,
    })
}

/// The custom resources the CRDs `crds` holds define; a CRD that does
/// not define one is reported on stderr and skipped.
pub fn customs(crds: &Engine, registry: &str) -> Vec<Custom> {
    let Ok(page) = crds.list(&ListRequest::new()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in page.items {
        let crd: Value = match serde_json::from_slice(item.object.payload()) {
            Ok(v) => v,
            Err(_) => continue,
        };
        match custom_of(&crd, registry) {
            Ok(c) => out.push(c),
            Err(why) => eprintln!(
                "herald-server: not serving the custom resource of CRD {}: {why}",
                item.object.name()
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_defines_its_storage_version_with_its_names_and_key() {
        let crd = json!({"spec": {
        "group": "herald.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]},
        "versions": [
            {"name": "v1beta1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true, "selectableFields": [{"jsonPath": ".spec.color"}]},
        ]}});
        let c = custom_of(&crd, "/registry").unwrap();
        assert_eq!(c.prefix, "/registry/herald.dev/widgets/");
        assert_eq!(c.info.api_version(), "herald.dev/v1");
        assert_eq!(
            (c.info.kind.as_str(), c.info.list_kind.as_str()),
            ("Widget", "WidgetList")
        );
        assert!(c.info.namespaced && !c.info.typed);
        assert!(c.info.selectable("spec.color"));
        assert_eq!(c.info.short_names, ["wd"]);
        let mut cluster = crd.clone();
        cluster["spec"]["scope"] = json!("Cluster");
        assert!(!custom_of(&cluster, "/registry/").unwrap().info.namespaced);
    }

    #[test]
    fn a_crd_that_defines_nothing_servable_says_why() {
        for (path, value) in [
            ("group", json!("")),
            ("scope", json!("Galaxy")),
            (
                "versions",
                json!([{"name": "v1", "served": false, "storage": true}]),
            ),
            (
                "versions",
                json!([{"name": "v1", "served": true, "storage": false}]),
            ),
            ("names", json!({"plural": "a/b", "kind": "X"})),
        ] {
            let mut crd = json!({"spec": {"group": "g.dev", "scope": "Namespaced",
                "names": {"plural": "xs", "kind": "X"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}});
            crd["spec"][path] = value;
            assert!(custom_of(&crd, "/registry").is_err(), "{path}");
        }
    }
}
