//! `CustomResourceDefinition`s, read as the apiserver reads them
//! (k8s.io/apiextensions-apiserver v0.37.2, `pkg/apis/apiextensions`).
//!
//! Stored as `v1beta1`: the storage decoder runs the v1beta1 defaulters
//! (`v1beta1/zz_generated.defaults.go`
//! `SetObjectDefaults_CustomResourceDefinition`: `defaults.go`
//! `SetDefaults_CustomResourceDefinition`,
//! `SetDefaults_CustomResourceDefinitionSpec`,
//! `SetDefaults_ServiceReference`), converts to the internal type
//! (`v1beta1/zz_generated.conversion.go`, field for field) and the
//! response converts that to `v1` (`v1/conversion.go`
//! `Convert_apiextensions_CustomResourceDefinitionSpec_To_v1_CustomResourceDefinitionSpec`,
//! `Convert_apiextensions_CustomResourceConversion_To_v1_CustomResourceConversion`
//! and `v1/zz_generated.conversion.go`). So, in `v1`:
//!
//! - `spec.version` is gone; with no `spec.versions`, it is the one
//!   version, served and stored;
//! - `spec.validation`, `spec.subresources`, `spec.additionalPrinterColumns`
//!   and `spec.selectableFields`, when set, replace `schema`,
//!   `subresources`, `additionalPrinterColumns` and `selectableFields` of
//!   every `spec.versions[]` entry; a column's `JSONPath` is `jsonPath`;
//! - `spec.conversion` defaults to `{"strategy": "None"}`; its
//!   `webhookClientConfig` and `conversionReviewVersions` move into
//!   `webhook` (`clientConfig`, `conversionReviewVersions`); a `Webhook`
//!   strategy without review versions gets `["v1beta1"]`, a service
//!   without a port `443`;
//! - `spec.preserveUnknownFields` defaults to `true`, and `v1` prints it
//!   only when it is `true`;
//! - `spec.scope` defaults to `Namespaced`, `names.singular` to the
//!   lower-cased kind, `names.listKind` to the kind and `List`;
//! - `status.storedVersions` defaults to the storage version's name.
//!
//! Stored as `v1`: the v1 defaulters (`v1/defaults.go`: the names, the
//! conversion strategy, the stored versions, the service's port) and the
//! v1 → internal → v1 round trip, which drops a `webhook` with neither
//! a client config nor review versions.
//!
//! The schemas themselves (`JSONSchemaProps`) have the same JSON in both
//! versions and are kept as they are.

use serde_json::{Map, Value, json};

use super::{OBJECT, is_empty, non_null, object, put, str_at, string};

/// `CustomResourceDefinitionSpec` in v1beta1, in Go's order.
const SPEC_V1BETA1: &[&str] = &[
    "group",
    "version",
    "names",
    "scope",
    "validation",
    "subresources",
    "versions",
    "additionalPrinterColumns",
    "selectableFields",
    "conversion",
    "preserveUnknownFields",
];

/// `CustomResourceDefinitionSpec` in v1.
const SPEC_V1: &[&str] = &[
    "group",
    "names",
    "scope",
    "versions",
    "conversion",
    "preserveUnknownFields",
];

/// `CustomResourceDefinitionNames` (the same in both versions).
const NAMES: &[&str] = &[
    "plural",
    "singular",
    "shortNames",
    "kind",
    "listKind",
    "categories",
];

/// `CustomResourceConversion` in v1beta1.
const CONVERSION_V1BETA1: &[&str] = &[
    "strategy",
    "webhookClientConfig",
    "conversionReviewVersions",
];

/// `CustomResourceConversion` in v1.
const CONVERSION_V1: &[&str] = &["strategy", "webhook"];

/// `ServiceReference` (the same in both versions).
const SERVICE: &[&str] = &["namespace", "name", "path", "port"];

/// `CustomResourceDefinitionStatus` (the same in both versions).
const STATUS: &[&str] = &[
    "conditions",
    "acceptedNames",
    "storedVersions",
    "observedGeneration",
];

/// The served group version.
const V1: &str = "apiextensions.k8s.io/v1";

/// A v1beta1 CRD, defaulted and converted to v1.
pub(super) fn from_v1beta1(doc: &mut Map<String, Value>) {
    let mut spec = match doc.get_mut("spec") {
        Some(Value::Object(spec)) => std::mem::take(spec),
        None | Some(Value::Null) => Map::new(),
        // Go's decoder would refuse it; keep it as stored.
        Some(_) => return,
    };
    default_spec_v1beta1(&mut spec);
    let storage = storage_version(&spec);
    put(doc, OBJECT, "spec", Value::Object(spec_to_v1(spec)));
    default_status(doc, storage);
    put(doc, OBJECT, "apiVersion", Value::String(V1.into()));
}

/// A v1 CRD, defaulted and round-tripped through the internal type.
pub(super) fn from_v1(doc: &mut Map<String, Value>) {
    let Some(spec) = object(doc, OBJECT, "spec") else {
        return;
    };
    default_names(spec, SPEC_V1);
    if non_null(spec, "conversion").is_none() {
        put(spec, SPEC_V1, "conversion", json!({"strategy": "None"}));
    }
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion")
        && let Some(Value::Object(webhook)) = conversion.get_mut("webhook")
    {
        if non_null(webhook, "clientConfig").is_none()
            && non_null(webhook, "conversionReviewVersions").is_none()
        {
            conversion.shift_remove("webhook");
        } else if let Some(Value::Object(config)) = webhook.get_mut("clientConfig") {
            default_port(config);
        }
    }
    spec_zero_v1(spec);
    let storage = storage_version(spec);
    default_status(doc, storage);
}

/// The v1 spec's fields Go always prints, for one stored without them.
fn spec_zero_v1(spec: &mut Map<String, Value>) {
    for key in ["group", "scope"] {
        if non_null(spec, key).is_none() {
            put(spec, SPEC_V1, key, Value::String(String::new()));
        }
    }
    if let Some(names) = object(spec, SPEC_V1, "names") {
        names_zero(names);
    }
    if !spec.contains_key("versions") {
        put(spec, SPEC_V1, "versions", Value::Null);
    }
}

/// `SetDefaults_CustomResourceDefinitionSpec` (v1beta1) and the service's
/// port.
fn default_spec_v1beta1(spec: &mut Map<String, Value>) {
    if str_at(spec, "scope").is_empty() {
        put(spec, SPEC_V1BETA1, "scope", "Namespaced".into());
    }
    default_names(spec, SPEC_V1BETA1);
    let version = str_at(spec, "version");
    if is_empty(spec.get("versions")) && !version.is_empty() {
        let versions = json!([{"name": version, "served": true, "storage": true}]);
        put(spec, SPEC_V1BETA1, "versions", versions);
    }
    // `version` defaults to the first version's name: v1 drops it.
    if non_null(spec, "conversion").is_none() {
        put(
            spec,
            SPEC_V1BETA1,
            "conversion",
            json!({"strategy": "None"}),
        );
    }
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion") {
        if str_at(conversion, "strategy") == "Webhook"
            && is_empty(conversion.get("conversionReviewVersions"))
        {
            let versions = json!(["v1beta1"]);
            put(
                conversion,
                CONVERSION_V1BETA1,
                "conversionReviewVersions",
                versions,
            );
        }
        if let Some(Value::Object(config)) = conversion.get_mut("webhookClientConfig") {
            default_port(config);
        }
    }
    if non_null(spec, "preserveUnknownFields").is_none() {
        put(
            spec,
            SPEC_V1BETA1,
            "preserveUnknownFields",
            Value::Bool(true),
        );
    }
}

/// The names' defaults, the same in both versions: `singular` is the
/// lower-cased kind, `listKind` the kind and `List`.
fn default_names(spec: &mut Map<String, Value>, order: &[&str]) {
    let Some(names) = object(spec, order, "names") else {
        return;
    };
    let kind = str_at(names, "kind").to_owned();
    let singular = go_lower(&kind);
    if str_at(names, "singular").is_empty() && !singular.is_empty() {
        put(names, NAMES, "singular", Value::String(singular));
    }
    if str_at(names, "listKind").is_empty() && !kind.is_empty() {
        put(names, NAMES, "listKind", Value::String(kind + "List"));
    }
}

/// Go's `strings.ToLower`: each character to its lower case (one
/// character, as `unicode.ToLower` gives).
fn go_lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// `SetDefaults_ServiceReference`: a webhook service's port is 443.
fn default_port(config: &mut Map<String, Value>) {
    if let Some(Value::Object(service)) = config.get_mut("service")
        && non_null(service, "port").is_none()
    {
        put(service, SERVICE, "port", Value::from(443));
    }
}

/// The name of the first version marked `storage`, if any.
fn storage_version(spec: &Map<String, Value>) -> Option<String> {
    spec.get("versions")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "name").to_owned())
}

/// `SetDefaults_CustomResourceDefinition`'s status half (the same in both
/// versions), and the status Go prints for one stored without it.
fn default_status(doc: &mut Map<String, Value>, storage: Option<String>) {
    let Some(status) = object(doc, OBJECT, "status") else {
        return;
    };
    if is_empty(status.get("storedVersions"))
        && let Some(name) = storage
    {
        put(status, STATUS, "storedVersions", json!([name]));
    }
    for key in ["conditions", "storedVersions"] {
        if !status.contains_key(key) {
            put(status, STATUS, key, Value::Null);
        }
    }
    if let Some(names) = object(status, STATUS, "acceptedNames") {
        names_zero(names);
    }
}

/// The names' fields Go always prints.
fn names_zero(names: &mut Map<String, Value>) {
    for key in ["plural", "kind"] {
        if non_null(names, key).is_none() {
            put(names, NAMES, key, Value::String(String::new()));
        }
    }
}

/// v1beta1 → internal → v1 of a (defaulted) spec.
fn spec_to_v1(mut spec: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("group".into(), string(spec.get("group")));
    let mut names = match spec.shift_remove("names") {
        Some(Value::Object(names)) => names,
        _ => Map::new(),
    };
    names_zero(&mut names);
    out.insert("names".into(), Value::Object(names));
    out.insert("scope".into(), string(spec.get("scope")));
    let top = Moved {
        subresources: non_null(&spec, "subresources"),
        schema: non_null(&spec, "validation"),
        columns: non_null(&spec, "additionalPrinterColumns").and_then(Value::as_array),
        selectable: non_null(&spec, "selectableFields").and_then(Value::as_array),
    };
    let versions = match spec.get("versions") {
        Some(Value::Array(versions)) => Value::Array(
            versions
                .iter()
                .map(|v| match v {
                    Value::Object(v) => Value::Object(version_to_v1(v, &top)),
                    other => other.clone(),
                })
                .collect(),
        ),
        // `versions` is not `omitempty` in v1.
        _ => Value::Null,
    };
    out.insert("versions".into(), versions);
    if let Some(Value::Object(conversion)) = spec.get("conversion") {
        out.insert("conversion".into(), conversion_to_v1(conversion));
    }
    if spec.get("preserveUnknownFields") == Some(&Value::Bool(true)) {
        out.insert("preserveUnknownFields".into(), Value::Bool(true));
    }
    out
}

/// The spec-wide fields that, when set, replace each version's own.
struct Moved<'a> {
    subresources: Option<&'a Value>,
    schema: Option<&'a Value>,
    columns: Option<&'a Vec<Value>>,
    selectable: Option<&'a Vec<Value>>,
}

/// A `CustomResourceDefinitionVersion` in v1, with the spec-wide fields
/// moved in.
fn version_to_v1(v: &Map<String, Value>, top: &Moved<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("name".into(), string(v.get("name")));
    for key in ["served", "storage"] {
        let on = v.get(key).and_then(Value::as_bool).unwrap_or(false);
        out.insert(key.into(), Value::Bool(on));
    }
    if v.get("deprecated") == Some(&Value::Bool(true)) {
        out.insert("deprecated".into(), Value::Bool(true));
    }
    if let Some(warning) = non_null(v, "deprecationWarning") {
        out.insert("deprecationWarning".into(), warning.clone());
    }
    if let Some(schema) = top.schema.or_else(|| non_null(v, "schema")) {
        out.insert("schema".into(), schema.clone());
    }
    if let Some(sub) = top.subresources.or_else(|| non_null(v, "subresources")) {
        out.insert("subresources".into(), sub.clone());
    }
    let own = |key| non_null(v, key).and_then(Value::as_array);
    let columns = top.columns.or_else(|| own("additionalPrinterColumns"));
    if let Some(columns) = columns.filter(|c| !c.is_empty()) {
        let columns = columns.iter().map(column_to_v1).collect();
        out.insert("additionalPrinterColumns".into(), Value::Array(columns));
    }
    let selectable = top.selectable.or_else(|| own("selectableFields"));
    if let Some(fields) = selectable.filter(|f| !f.is_empty()) {
        out.insert("selectableFields".into(), Value::Array(fields.clone()));
    }
    out
}

/// A `CustomResourceColumnDefinition`: `JSONPath` is `jsonPath` in v1.
fn column_to_v1(column: &Value) -> Value {
    let Value::Object(c) = column else {
        return column.clone();
    };
    let mut out = Map::new();
    out.insert("name".into(), string(c.get("name")));
    out.insert("type".into(), string(c.get("type")));
    for key in ["format", "description"] {
        if !str_at(c, key).is_empty() {
            out.insert(key.into(), c[key].clone());
        }
    }
    if let Some(priority) = c
        .get("priority")
        .filter(|p| p.as_f64().is_some_and(|p| p != 0.0))
    {
        out.insert("priority".into(), priority.clone());
    }
    out.insert("jsonPath".into(), string(c.get("JSONPath")));
    Value::Object(out)
}

/// A `CustomResourceConversion` in v1: the webhook's settings under
/// `webhook`, when there are any.
fn conversion_to_v1(conversion: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("strategy".into(), string(conversion.get("strategy")));
    let config = non_null(conversion, "webhookClientConfig");
    let versions = non_null(conversion, "conversionReviewVersions");
    if config.is_some() || versions.is_some() {
        let mut webhook = Map::new();
        if let Some(config) = config {
            webhook.insert("clientConfig".into(), config.clone());
        }
        // Not `omitempty` in v1.
        let versions = versions.cloned().unwrap_or(Value::Null);
        webhook.insert("conversionReviewVersions".into(), versions);
        put(&mut out, CONVERSION_V1, "webhook", Value::Object(webhook));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the apiserver serves for this stored CRD.
    fn served(stored: Value) -> Value {
        let Value::Object(mut doc) = stored else {
            unreachable!()
        };
        crate::read::as_served(&mut doc);
        Value::Object(doc)
    }

    fn v1beta1(spec: Value, status: Value) -> Value {
        json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1beta1",
            "metadata": {"name": "widgets.herald.dev"}, "spec": spec, "status": status})
    }

    fn status(stored: &[&str]) -> Value {
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored})
    }

    const NAMES: &str =
        r#"{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"}"#;

    #[test]
    fn spec_wide_fields_move_into_every_version() {
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let got = served(v1beta1(
            json!({"group": "herald.dev", "version": "v1", "names": {"plural": "widgets", "kind": "Widget"},
                "validation": schema, "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r"}},
                "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": false, "storage": false}],
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "priority": 0, "description": "", "JSONPath": ".spec.size"},
                    {"name": "Age", "type": "date", "format": "date-time", "priority": 1, "JSONPath": ".metadata.creationTimestamp"}],
                "selectableFields": [{"jsonPath": ".spec.color"}]}),
            json!({"conditions": [], "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": []}),
        ));
        let version = |name: &str, on: bool| {
            format!(
                r#"{{"name":"{name}","served":{on},"storage":{on},"schema":{{"openAPIV3Schema":{{"type":"object"}}}},"subresources":{{"status":{{}},"scale":{{"specReplicasPath":".spec.r","statusReplicasPath":".status.r"}}}},"additionalPrinterColumns":[{{"name":"Size","type":"integer","jsonPath":".spec.size"}},{{"name":"Age","type":"date","format":"date-time","priority":1,"jsonPath":".metadata.creationTimestamp"}}],"selectableFields":[{{"jsonPath":".spec.color"}}]}}"#
            )
        };
        assert_eq!(got["apiVersion"], "apiextensions.k8s.io/v1");
        // Go's field order; `version` gone; the defaults.
        assert_eq!(
            serde_json::to_string(&got["spec"]).unwrap(),
            format!(
                r#"{{"group":"herald.dev","names":{NAMES},"scope":"Namespaced","versions":[{},{}],"conversion":{{"strategy":"None"}},"preserveUnknownFields":true}}"#,
                version("v1", true),
                version("v2", false)
            )
        );
        assert_eq!(got["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(got["status"]["conditions"], json!([]));
    }

    #[test]
    fn per_version_fields_are_kept_and_renamed() {
        let got = served(v1beta1(
            json!({"group": "g", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Cluster", "preserveUnknownFields": false, "conversion": {"strategy": "None"},
                "versions": [
                    {"name": "v1", "served": true, "storage": false, "deprecated": true, "deprecationWarning": "use v2",
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                        "additionalPrinterColumns": [{"name": "A", "type": "string", "JSONPath": ".a"}]},
                    {"name": "v2", "served": true, "storage": true, "deprecated": false,
                        "schema": {"openAPIV3Schema": {"type": "object"}}, "subresources": {"status": {}},
                        "additionalPrinterColumns": [], "selectableFields": [{"jsonPath": ".spec.b"}]}]}),
            json!({"conditions": null, "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1", "v2"]}),
        ));
        assert_eq!(
            got["spec"],
            json!({"group": "g", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Cluster",
                "versions": [
                    {"name": "v1", "served": true, "storage": false, "deprecated": true, "deprecationWarning": "use v2",
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                        "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": ".a"}]},
                    {"name": "v2", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}, "subresources": {"status": {}},
                        "selectableFields": [{"jsonPath": ".spec.b"}]}],
                "conversion": {"strategy": "None"}})
        );
        // Stored versions already set are kept.
        assert_eq!(got["status"]["storedVersions"], json!(["v1", "v2"]));
    }

    #[test]
    fn a_spec_wide_field_overrides_every_version_even_empty() {
        let got = served(v1beta1(
            json!({"group": "g", "names": {"plural": "widgets", "kind": "Widget"},
                "validation": {}, "additionalPrinterColumns": [], "selectableFields": null, "subresources": null,
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "string"}}, "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "A", "type": "string", "JSONPath": ".a"}],
                    "selectableFields": [{"jsonPath": ".a"}]}]}),
            status(&["v1"]),
        ));
        assert_eq!(
            got["spec"]["versions"],
            json!([{"name": "v1", "served": true, "storage": true, "schema": {},
                "subresources": {"status": {}}, "selectableFields": [{"jsonPath": ".a"}]}])
        );
    }

    #[test]
    fn the_old_version_field_alone_is_the_one_version() {
        let got = served(v1beta1(
            json!({"group": "g", "version": "v1alpha1", "names": {"plural": "widgets", "kind": "Widget"}}),
            Value::Null,
        ));
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            format!(
                r#"{{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{{"name":"widgets.herald.dev"}},"spec":{{"group":"g","names":{NAMES},"scope":"Namespaced","versions":[{{"name":"v1alpha1","served":true,"storage":true}}],"conversion":{{"strategy":"None"}},"preserveUnknownFields":true}},"status":{{"conditions":null,"acceptedNames":{{"plural":"","kind":""}},"storedVersions":["v1alpha1"]}}}}"#
            )
        );
        // No version at all: `versions` is printed as null, no stored version.
        let got = served(v1beta1(
            json!({"group": "g", "names": {"kind": "Widget"}}),
            Value::Null,
        ));
        assert_eq!(got["spec"]["versions"], Value::Null);
        assert_eq!(
            got["spec"]["names"],
            json!({"plural": "", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"})
        );
        assert_eq!(got["status"]["storedVersions"], Value::Null);
    }

    #[test]
    fn webhook_conversion_moves_under_webhook() {
        let spec = |conversion: Value| {
            json!({"group": "g", "names": {"plural": "widgets", "kind": "Widget"}, "preserveUnknownFields": false,
                "versions": [{"name": "v1", "served": true, "storage": true}], "conversion": conversion})
        };
        let got = served(v1beta1(
            spec(json!({"strategy": "Webhook", "webhookClientConfig": {
                "service": {"namespace": "ns", "name": "conv", "path": "/convert"}, "caBundle": "Y2E="}})),
            status(&["v1"]),
        ));
        assert_eq!(
            serde_json::to_string(&got["spec"]["conversion"]).unwrap(),
            r#"{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"ns","name":"conv","path":"/convert","port":443},"caBundle":"Y2E="},"conversionReviewVersions":["v1beta1"]}}"#
        );
        assert!(
            !got["spec"]
                .as_object()
                .unwrap()
                .contains_key("preserveUnknownFields")
        );
        let got = served(v1beta1(
            spec(
                json!({"strategy": "Webhook", "webhookClientConfig": {"url": "https://conv.example/c"},
                "conversionReviewVersions": ["v1", "v1beta1"]}),
            ),
            status(&["v1"]),
        ));
        assert_eq!(
            got["spec"]["conversion"],
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://conv.example/c"},
                "conversionReviewVersions": ["v1", "v1beta1"]}})
        );
        // A port already set is kept; review versions without a client
        // config still make a webhook.
        let got = served(v1beta1(
            spec(
                json!({"strategy": "None", "conversionReviewVersions": ["v1"],
                "webhookClientConfig": null}),
            ),
            status(&["v1"]),
        ));
        assert_eq!(
            got["spec"]["conversion"],
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}})
        );
        let got = served(v1beta1(
            spec(
                json!({"strategy": "Webhook", "conversionReviewVersions": ["v1"],
                "webhookClientConfig": {"service": {"namespace": "ns", "name": "c", "port": 8443}}}),
            ),
            status(&["v1"]),
        ));
        assert_eq!(
            got["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
            8443
        );
    }

    #[test]
    fn a_v1_crd_is_defaulted_and_round_tripped() {
        let stored = json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {"name": "widgets.herald.dev"},
            "spec": {"group": "g", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]},
            "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null}});
        let got = served(stored);
        assert_eq!(got["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(
            serde_json::to_string(&got["spec"]).unwrap(),
            format!(
                r#"{{"group":"g","names":{NAMES},"scope":"Namespaced","versions":[{{"name":"v1","served":true,"storage":false}},{{"name":"v2","served":true,"storage":true}}],"conversion":{{"strategy":"None"}}}}"#
            )
        );
        assert_eq!(got["status"]["storedVersions"], json!(["v2"]));
        let webhook = |webhook: Value| {
            served(json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
                "metadata": {"name": "w"}, "spec": {"conversion": {"strategy": "None", "webhook": webhook}},
                "status": status(&["v1"])}))["spec"]["conversion"]
                .clone()
        };
        assert_eq!(webhook(json!({})), json!({"strategy": "None"}));
        // What Go prints of a spec stored without its fields.
        let got = served(
            json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {"name": "w"}, "spec": {"group": null}}),
        );
        assert_eq!(
            serde_json::to_string(&got["spec"]).unwrap(),
            r#"{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null,"conversion":{"strategy":"None"}}"#
        );
        assert_eq!(
            webhook(
                json!({"clientConfig": {"service": {"namespace": "ns", "name": "c"}}, "conversionReviewVersions": ["v1"]})
            ),
            json!({"strategy": "None", "webhook": {"clientConfig": {"service": {"namespace": "ns", "name": "c", "port": 443}},
                "conversionReviewVersions": ["v1"]}})
        );
    }

    #[test]
    fn a_spec_go_would_not_decode_is_left_as_stored() {
        let stored = v1beta1(json!("not an object"), Value::Null);
        assert_eq!(served(stored.clone()), stored);
    }

    #[test]
    fn lower_case_as_go() {
        assert_eq!(go_lower("WidgetV2"), "widgetv2");
        assert_eq!(go_lower("Ünïcode"), "ünïcode");
        // unicode.ToLower('İ') is 'i', one character.
        assert_eq!(go_lower("İ"), "i");
    }
}
