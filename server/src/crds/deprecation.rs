//! The warning a deprecated custom resource version is served with, as
//! `apiextensions-apiserver` writes it (`defaultDeprecationWarning`): the
//! version's own `deprecationWarning`, or `<group>/<version> <Kind> is
//! deprecated`, followed by `; use <group>/<version> <Kind>` naming the
//! served, not deprecated version that ranks first among those ranking
//! above it (Kubernetes' version order: `CompareKubeAwareVersionStrings`).
//! The apiserver sends it on every request to that version; so does
//! Herald, on every request it answers there.

use std::cmp::Ordering;

use herald_kube::versions::compare_kube_aware;
use serde_json::Value;

/// The warning of `version` (one of the CRD `spec`'s versions), if it is
/// deprecated.
pub(crate) fn warning(spec: &Value, version: &Value) -> Option<String> {
    if version["deprecated"] != Value::Bool(true) {
        return None;
    }
    if let Some(text) = version["deprecationWarning"].as_str() {
        return Some(text.to_owned());
    }
    let group = spec["group"].as_str().unwrap_or("");
    let kind = spec["names"]["kind"].as_str().unwrap_or("");
    let name = version["name"].as_str().unwrap_or("");
    let mut text = format!("{group}/{name} {kind} is deprecated");
    let newer = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == Value::Bool(true) && v["deprecated"] != Value::Bool(true))
        .filter_map(|v| v["name"].as_str())
        .filter(|v| compare_kube_aware(name, v) == Ordering::Less)
        .max_by(|a, b| compare_kube_aware(a, b));
    if let Some(newer) = newer {
        text.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({"group": "herald.dev", "names": {"kind": "Widget"}, "versions": [
            {"name": "v1alpha1", "served": true, "deprecated": true, "deprecationWarning": "custom \"quoted\" text"},
            {"name": "v1beta1", "served": true, "deprecated": true},
            {"name": "v2beta1", "served": true},
            {"name": "v1", "served": true},
            {"name": "v3", "served": false},
        ]})
    }

    #[test]
    fn the_default_warning_names_the_best_newer_served_version() {
        let s = spec();
        let v = |i: usize| warning(&s, &s["versions"][i]);
        assert_eq!(v(0).as_deref(), Some("custom \"quoted\" text"));
        assert_eq!(
            v(1).as_deref(),
            Some("herald.dev/v1beta1 Widget is deprecated; use herald.dev/v1 Widget")
        );
        assert_eq!(v(2), None);
        let alone = json!({"group": "g", "names": {"kind": "K"}, "versions": [{"name": "v1", "served": true, "deprecated": true}]});
        assert_eq!(
            warning(&alone, &alone["versions"][0]).as_deref(),
            Some("g/v1 K is deprecated")
        );
    }
}
