//! A CRD's custom resource: for each established CRD, the version its
//! engine is read at (the storage version; custom resources are stored
//! as JSON, each object under the version it was written at), every
//! served version with its names, selectable fields and printer columns,
//! how objects convert between versions, and the key prefix
//! (`<registry>/<group>/<plural>/`).

use herald::Engine;
use herald::read::{ListRequest, ReadAt};
use herald_kube::ResourceInfo;
use herald_kube::table::CrdColumns;
use serde_json::Value;

use super::spec::ConversionSpec;

/// A custom resource to serve and where its objects are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    /// Its names and shape at the version its engine reads (the storage
    /// version when served, else its highest-priority served version),
    /// with the selectable fields of every served version (the engine
    /// decodes each from the stored objects).
    pub info: ResourceInfo,
    /// Its etcd key prefix.
    pub prefix: String,
    /// Its `kubectl get` columns at the engine's version.
    pub columns: CrdColumns,
    /// Every served version: its names (the version, its selectable
    /// fields) and its `additionalPrinterColumns`, in the CRD's order.
    pub versions: Vec<(ResourceInfo, CrdColumns)>,
    /// How objects convert between its versions (`spec.conversion`).
    pub conversion: ConversionSpec,
}

impl Custom {
    /// Whether `other` stores and reads the same objects as `self` (the
    /// same group, plural, scope, key prefix and decoded fields, and,
    /// when `version_matters` (an upstream read at one version, the
    /// apiserver), the same version): then an engine serving one serves
    /// the other, and only its served names change.
    pub fn same_storage(&self, other: &Custom, version_matters: bool) -> bool {
        let (a, b) = (&self.info, &other.info);
        let mut fa = a.fields.clone();
        let mut fb = b.fields.clone();
        fa.sort();
        fb.sort();
        a.group == b.group
            && a.plural == b.plural
            && a.namespaced == b.namespaced
            && self.prefix == other.prefix
            && fa == fb
            && (!version_matters || a.version == b.version)
    }
}

/// A string field: present, not empty, no `/`.
fn text(v: &Value, what: &str) -> Result<String, String> {
    v.as_str()
        .filter(|s| !s.is_empty() && !s.contains('/'))
        .map(str::to_owned)
        .ok_or_else(|| format!("no {what}"))
}

/// The strings of an array field (none if absent).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A version's selectable fields, as field labels (`spec.color`).
fn selectable(version: &Value) -> Vec<String> {
    version["selectableFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["jsonPath"].as_str())
                .map(|p| p.trim_start_matches('.').to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The custom resource a CRD (its JSON, as the apiserver serves it:
/// `apiextensions.k8s.io/v1`) defines, or why not.
pub fn custom_of(crd: &Value, registry: &str) -> Result<Custom, String> {
    let spec = &crd["spec"];
    let group = text(&spec["group"], "spec.group")?;
    let names = &spec["names"];
    let plural = text(&names["plural"], "spec.names.plural")?;
    let kind = text(&names["kind"], "spec.names.kind")?;
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map_or_else(|| kind.to_lowercase(), str::to_owned);
    let all = spec["versions"].as_array().ok_or("no spec.versions")?;
    let storage = all
        .iter()
        .find(|v| v["storage"] == Value::Bool(true))
        .ok_or("no storage version")?;
    let served: Vec<&Value> = all
        .iter()
        .filter(|v| v["served"] == Value::Bool(true))
        .collect();
    if served.is_empty() {
        return Err("no version is served".into());
    }
    // The engine's version: the storage version, or if it is not
    // served, the served version Kubernetes prefers.
    let read = if storage["served"] == Value::Bool(true) {
        storage
    } else {
        served
            .iter()
            .copied()
            .max_by_key(|v| crate::discovery::priority(v["name"].as_str().unwrap_or("")))
            .unwrap_or(storage)
    };
    let short: Vec<&str> = names["shortNames"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut base = ResourceInfo::namespaced(&plural, &singular, &kind, &short);
    if let Some(list_kind) = names["listKind"].as_str().filter(|s| !s.is_empty()) {
        base.list_kind = list_kind.to_owned();
    }
    base.typed = false;
    base.categories = strings(&names["categories"]);
    // Every served version's discovery carries the hash of the storage
    // version, as the apiserver's discovery of custom resources does.
    let stored_as = text(&storage["name"], "the storage version's name")?;
    base.storage_version_hash = Some(herald_kube::served::storage_version_hash(
        &group, &stored_as, &kind,
    ));
    if spec["scope"] == "Cluster" {
        base = base.cluster_scoped();
    } else if spec["scope"] != "Namespaced" {
        return Err(format!("scope {}", spec["scope"]));
    }
    let mut versions = Vec::new();
    let mut fields: Vec<String> = Vec::new();
    for v in &served {
        let version = text(&v["name"], "a served version's name")?;
        let own = selectable(v);
        for f in &own {
            if !fields.contains(f) {
                fields.push(f.clone());
            }
        }
        let columns = match CrdColumns::from_crd(crd, &version) {
            Some(Ok(c)) => c,
            Some(Err(why)) => return Err(format!("{version}'s printer columns: {why}")),
            None => CrdColumns::default(),
        };
        let mut info = base.clone().in_group(&group, &version).with_fields(&own);
        info.deprecation = super::deprecation::warning(spec, v);
        versions.push((info, columns));
    }
    let version = text(&read["name"], "the storage version's name")?;
    let columns = match CrdColumns::from_crd(crd, &version) {
        Some(Ok(c)) => c,
        Some(Err(why)) => return Err(format!("its printer columns: {why}")),
        None => CrdColumns::default(),
    };
    let root = registry.trim_end_matches('/');
    let mut info = base.in_group(&group, &version).with_fields(&fields);
    info.deprecation = super::deprecation::warning(spec, read);
    Ok(Custom {
        info,
        prefix: format!("{root}/{group}/{plural}/"),
        columns,
        versions,
        conversion: ConversionSpec::of(&spec["conversion"])?,
    })
}

/// The custom resources the CRDs `crds` holds define, read `at` (at
/// start, [`ReadAt::Latest`]: the engine's first state may be older than
/// its source's, the reflector backfilling history; following, what it
/// holds); a CRD that does not define one is reported on stderr and
/// skipped.
pub fn customs(crds: &Engine, registry: &str, at: ReadAt) -> Vec<Custom> {
    let page = match crds.list(&ListRequest::new().at(at)) {
        Ok(page) => page,
        Err(e) => {
            eprintln!("herald-server: cannot read the CRDs: {e}");
            return Vec::new();
        }
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
