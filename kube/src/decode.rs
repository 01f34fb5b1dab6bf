//! From a stored value to Herald's [`Object`]: Kubernetes' JSON shape.
//!
//! etcd stores an object under `<prefix><namespace>/<name>` (a namespaced
//! resource) or `<prefix><name>` (a cluster-scoped one), as the apiserver
//! writes it; the API names it by the same two parts. The [`Decoder`]
//! reads the value as a JSON object shaped as Kubernetes'
//! (`metadata.name`, `metadata.namespace`, `metadata.labels`), takes the
//! configured field paths (`spec.nodeName`, `status.phase`) as the
//! object's fields, and keeps the payload as stored with one change:
//! `metadata.resourceVersion` is set from the revision (etcd does not
//! store it; the apiserver sets it the same way, from `mod_revision`).
//! Key order is kept.
//!
//! A value that is not such an object, or whose name and namespace do not
//! match its key, is [undecodable](DecodeError): its reader decides what
//! to do (the etcd source counts it by reason, logs it and skips it). The
//! apiserver stores the built-in kinds as protobuf, `k8s\0`-prefixed:
//! [`proto`] turns those into the JSON the apiserver serves for them.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use herald::object::ObjectBuilder;
use herald::{Object, ResourceVersion};
use serde_json::{Map, Value};

use crate::crypt::{CryptError, Keyring};
use crate::gojson;
use crate::proto::{self, ProtoError};

/// The prefix of a value encrypted at rest by the apiserver.
const ENCRYPTED: &[u8] = b"k8s:enc:";

/// Reads stored values as Kubernetes JSON objects.
///
/// ```
/// use herald_kube::Decoder;
/// let decoder = Decoder::new().field("spec.nodeName");
/// let value = br#"{"metadata":{"name":"web","namespace":"prod","labels":{"app":"web"}},"spec":{"nodeName":"n1"}}"#;
/// let object = decoder.decode(b"prod/web", value, 42.into())?;
/// assert_eq!((object.namespace(), object.name()), ("prod", "web"));
/// assert_eq!((object.label("app"), object.field("spec.nodeName")), (Some("web"), Some("n1")));
/// let payload: serde_json::Value = serde_json::from_slice(object.payload())?;
/// assert_eq!(payload["metadata"]["resourceVersion"], "42");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    /// The fields taken from the objects, each from where its value is.
    fields: Vec<FieldRule>,
    /// Decrypts values encrypted at rest ([`Decoder::keyring`]).
    crypt: Option<Crypt>,
}

/// Where one field's value is: the first of `paths` (each split at the
/// dots) that holds a non-empty value, else `""` if one holds an empty
/// one, else `default`.
#[derive(Debug, Clone)]
struct FieldRule {
    name: String,
    paths: Vec<Vec<String>>,
    default: Option<String>,
}

impl FieldRule {
    /// The field's value in `root`.
    fn value(&self, root: &Map<String, Value>) -> Result<Option<String>, DecodeError> {
        let mut empty = None;
        for path in &self.paths {
            match scalar_at(root, path)? {
                Some(v) if v.is_empty() => empty = Some(v),
                Some(v) => return Ok(Some(v)),
                None => {}
            }
        }
        Ok(empty.or_else(|| self.default.clone()))
    }
}

/// What decrypts a resource's values: its name as the encryption
/// configuration spells it, the etcd key prefix (AES-GCM authenticates
/// the whole key), the keys.
#[derive(Debug, Clone)]
struct Crypt {
    resource: String,
    prefix: Vec<u8>,
    keyring: Arc<Keyring>,
}

/// Why a stored value could not be read as an object.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The key under the prefix is not `name` or `namespace/name`.
    Key(String),
    /// The value is not JSON.
    Json(String),
    /// The value is JSON but not a Kubernetes object: what is missing or
    /// wrong.
    Shape(String),
    /// The value is the apiserver's protobuf (`k8s\0`) and could not be
    /// read.
    Proto(ProtoError),
    /// The value is encrypted at rest (`k8s:enc:<provider>:v1:<key>:`)
    /// and the decoder has no [keyring](Decoder::keyring): the provider's
    /// name.
    Encrypted(String),
    /// The value is encrypted at rest and the decoder's keyring could not
    /// decrypt it: which provider and key, and why.
    Crypt(CryptError),
}

impl DecodeError {
    /// A short, fixed name of the error's kind, for a metric's label.
    pub fn reason(&self) -> &'static str {
        match self {
            DecodeError::Key(_) => "key",
            DecodeError::Json(_) => "json",
            DecodeError::Shape(_) => "shape",
            DecodeError::Proto(ProtoError::UnknownKind { .. }) => "unknown_kind",
            DecodeError::Proto(_) => "protobuf",
            DecodeError::Encrypted(_) => "encrypted",
            DecodeError::Crypt(e) if e.lacks_key() => "encrypted",
            DecodeError::Crypt(_) => "decrypt",
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Key(why) => write!(f, "key: {why}"),
            DecodeError::Json(why) => write!(f, "not JSON: {why}"),
            DecodeError::Shape(why) => write!(f, "not a Kubernetes object: {why}"),
            DecodeError::Proto(e) => write!(f, "protobuf: {e}"),
            DecodeError::Encrypted(provider) => {
                write!(
                    f,
                    "encrypted by provider {provider:?}, which has no key here"
                )
            }
            DecodeError::Crypt(e) => write!(f, "encrypted at rest: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl Decoder {
    /// A decoder of names, namespaces and labels, with no fields.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Also takes the value at this dotted path (`spec.nodeName`) as the
    /// object's field of that name. A string is taken as is; a number or
    /// a boolean as its JSON text; a missing path or a null leaves the
    /// field unset; an object or an array makes the value undecodable.
    pub fn field(self, path: &str) -> Decoder {
        self.field_from(path, &[path], None)
    }

    /// Also takes the value at `path` as the object's field `name` (the
    /// apiserver names some selectable fields apart from where they are:
    /// a Job's `status.successful` is `status.succeeded`), `default` when
    /// the path is missing (the apiserver prints Go's zero value: a
    /// node's `spec.unschedulable` is `false` when unset).
    /// An empty `path` is never there: the field reads as `default`.
    pub fn field_as(self, name: &str, path: &str, default: Option<&str>) -> Decoder {
        self.field_from(name, &[path], default)
    }

    /// Also takes the object's field `name` from the first of `paths`
    /// that holds a non-empty value (an event's `source` is its
    /// `source.component`, or its `reportingComponent` when that is
    /// empty, as the apiserver's `GetAttrs` reads it), `""` when none
    /// does but one holds an empty string, `default` when all are
    /// missing. An empty path is never there.
    pub fn field_from(mut self, name: &str, paths: &[&str], default: Option<&str>) -> Decoder {
        let paths = paths
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| p.split('.').map(str::to_owned).collect())
            .collect();
        self.fields.push(FieldRule {
            name: name.to_owned(),
            paths,
            default: default.map(str::to_owned),
        });
        self
    }

    /// Also decrypts values encrypted at rest with `keyring`: `resource`
    /// names the values' resource as the encryption configuration does
    /// (`secrets`, `deployments.apps`), `prefix` is the etcd key prefix
    /// that [`Decoder::decode`]'s keys are under (`/registry/secrets/`):
    /// AES-GCM authenticates the whole etcd key, prefix and all. A value
    /// that does not open is [`DecodeError::Crypt`].
    pub fn keyring(mut self, resource: &str, prefix: &str, keyring: Arc<Keyring>) -> Decoder {
        self.crypt = Some(Crypt {
            resource: resource.to_owned(),
            prefix: prefix.as_bytes().to_vec(),
            keyring,
        });
        self
    }

    /// The configured field names, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|rule| rule.name.as_str())
    }

    /// Reads `value`, stored under `key` (the part after the prefix), as
    /// the object at revision `rv`.
    pub fn decode(
        &self,
        key: &[u8],
        value: &[u8],
        rv: ResourceVersion,
    ) -> Result<Object, DecodeError> {
        let (namespace, name) = split_key(key)?;
        let (mut doc, stored_as_json) = if value.starts_with(proto::MAGIC) {
            (
                Value::Object(proto::decode(value).map_err(DecodeError::Proto)?),
                false,
            )
        } else if let Some(rest) = value.strip_prefix(ENCRYPTED) {
            let Some(crypt) = &self.crypt else {
                let provider = rest.split(|&b| b == b':').next().unwrap_or_default();
                return Err(DecodeError::Encrypted(
                    String::from_utf8_lossy(provider).into_owned(),
                ));
            };
            let etcd_key = [crypt.prefix.as_slice(), key].concat();
            let plain = crypt
                .keyring
                .decrypt(&crypt.resource, &etcd_key, value)
                .map_err(DecodeError::Crypt)?;
            if plain.starts_with(proto::MAGIC) {
                (
                    Value::Object(proto::decode(&plain).map_err(DecodeError::Proto)?),
                    false,
                )
            } else {
                (json(&plain)?, true)
            }
        } else {
            (json(value)?, true)
        };
        let root = doc
            .as_object_mut()
            .ok_or_else(|| DecodeError::Shape("the value is not a JSON object".into()))?;
        // What the apiserver reads JSON into: a built-in kind's Go type
        // (written back in its fields' order), or a custom resource's
        // `map[string]interface{}` (keys sorted).
        let sorted = stored_as_json && as_go_holds_it(root);
        crate::read::as_served(root);
        if !sorted {
            // `kind` and `apiVersion` first, as the apiserver prints a
            // typed object: a typed list's items are the same bytes
            // without them.
            for key in ["apiVersion", "kind"] {
                if let Some(v) = root.shift_remove(key) {
                    root.shift_insert(0, key.to_owned(), v);
                }
            }
        }
        let meta = root
            .get("metadata")
            .and_then(Value::as_object)
            .ok_or_else(|| DecodeError::Shape("no metadata object".into()))?;
        let got_name = string_at(meta, "name")?.unwrap_or_default();
        let got_namespace = string_at(meta, "namespace")?.unwrap_or_default();
        if (got_namespace, got_name) != (namespace, name) {
            return Err(DecodeError::Shape(format!(
                "metadata names {got_namespace:?}/{got_name:?}, the key {namespace:?}/{name:?}"
            )));
        }
        let builder = self.builder(namespace, name, root)?;
        let meta = root
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| DecodeError::Shape("no metadata object".into()))?;
        set_version(meta, rv, sorted);
        let payload = gojson::to_vec(&doc).map_err(|e| DecodeError::Json(e.to_string()))?;
        Ok(builder.payload(Bytes::from(payload)).build())
    }

    /// Reads an object as the apiserver served it (a list's item, a watch
    /// event's object), at the version its `metadata.resourceVersion`
    /// says: its key is its metadata's namespace and name, its payload
    /// the object as served. `type_meta` (`apiVersion`, `kind`) is what
    /// the object must be: a typed list's items carry neither (they are
    /// put first, as the apiserver prints a typed object), an object that
    /// names another is [`DecodeError::Shape`].
    pub fn served(
        &self,
        mut doc: Map<String, Value>,
        type_meta: (&str, &str),
    ) -> Result<(Object, ResourceVersion), DecodeError> {
        let mut missing = false;
        for (key, want) in [("apiVersion", type_meta.0), ("kind", type_meta.1)] {
            match doc.get(key) {
                None | Some(Value::Null) => missing = true,
                Some(Value::String(got)) if got == want => {}
                Some(got) => {
                    return Err(DecodeError::Shape(format!("{key} {got}, not {want:?}")));
                }
            }
        }
        // An object that names its type is kept as the apiserver wrote
        // it (a custom resource's keys sorted, a built-in's `kind`
        // first); a typed list's items name none: theirs go first.
        if missing {
            for (key, want) in [("apiVersion", type_meta.0), ("kind", type_meta.1)] {
                doc.shift_remove(key);
                doc.shift_insert(0, key.to_owned(), Value::String(want.to_owned()));
            }
        }
        // What protobuf does not carry and the apiserver's JSON does (a
        // StatefulSet's claim templates' `kind`): as for a stored value.
        crate::read::as_served(&mut doc);
        let meta = doc
            .get("metadata")
            .and_then(Value::as_object)
            .ok_or_else(|| DecodeError::Shape("no metadata object".into()))?;
        let name = string_at(meta, "name")?.unwrap_or_default();
        let namespace = string_at(meta, "namespace")?.unwrap_or_default();
        let key = if namespace.is_empty() {
            name.to_owned()
        } else {
            format!("{namespace}/{name}")
        };
        let (namespace, name) = split_key(key.as_bytes())?;
        let rv = string_at(meta, "resourceVersion")?
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                DecodeError::Shape("metadata.resourceVersion is not a positive integer".into())
            })?;
        let builder = self.builder(namespace, name, &doc)?;
        let payload =
            gojson::to_vec(&Value::Object(doc)).map_err(|e| DecodeError::Json(e.to_string()))?;
        Ok((
            builder.payload(Bytes::from(payload)).build(),
            ResourceVersion::new(rv),
        ))
    }

    /// The object's builder: its labels and the configured fields.
    fn builder(
        &self,
        namespace: &str,
        name: &str,
        root: &Map<String, Value>,
    ) -> Result<ObjectBuilder, DecodeError> {
        let mut builder = Object::builder(namespace, name);
        match root.get("metadata").and_then(|m| m.get("labels")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (k, v) in labels {
                    let v = v.as_str().ok_or_else(|| {
                        DecodeError::Shape(format!("label {k:?} is not a string"))
                    })?;
                    builder = builder.label(k, v);
                }
            }
            Some(_) => {
                return Err(DecodeError::Shape(
                    "metadata.labels is not an object".into(),
                ));
            }
        }
        for rule in &self.fields {
            if let Some(v) = rule.value(root)? {
                builder = builder.field(&rule.name, &v);
            }
        }
        Ok(builder)
    }

    /// The object a key names, with no payload: the last state of a
    /// deletion whose previous value is missing or undecodable (every
    /// watcher that saw the object must see it go).
    pub fn bare(&self, key: &[u8]) -> Result<Object, DecodeError> {
        let (namespace, name) = split_key(key)?;
        Ok(Object::builder(namespace, name).build())
    }
}

/// `metadata.resourceVersion` set to `rv` where Go writes it: among the
/// sorted keys of a custom resource's map, after `uid` in a typed
/// object's `ObjectMeta` (etcd stores objects without it: it lands where
/// the struct declares it).
fn set_version(meta: &mut Map<String, Value>, rv: ResourceVersion, sorted: bool) {
    /// `ObjectMeta`'s fields declared after `ResourceVersion`.
    const AFTER: [&str; 9] = [
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ];
    let version = Value::String(rv.get().to_string());
    if let Some(v) = meta.get_mut("resourceVersion") {
        *v = version;
        return;
    }
    let at = meta
        .keys()
        .position(|k| {
            if sorted {
                k.as_str() > "resourceVersion"
            } else {
                AFTER.contains(&k.as_str())
            }
        })
        .unwrap_or(meta.len());
    meta.shift_insert(at, "resourceVersion".into(), version);
}

/// A stored JSON value, read as Go reads it ([`gojson::from_slice`]).
fn json(value: &[u8]) -> Result<Value, DecodeError> {
    gojson::from_slice(value).map_err(|e| DecodeError::Json(e.to_string()))
}

/// A JSON value as the apiserver holds it once read: a kind of the
/// schema through its protobuf (its fields in their Go order, fields the
/// type does not have dropped), a kind the `read` module converts left
/// to it, anything else as a custom resource ([`gojson::unstructured`]).
/// Whether it was read as a custom resource (its keys sorted).
fn as_go_holds_it(root: &mut Map<String, Value>) -> bool {
    let (api_version, kind) = match (root.get("apiVersion"), root.get("kind")) {
        (Some(Value::String(v)), Some(Value::String(k))) => (v.as_str(), k.as_str()),
        _ => ("", ""),
    };
    if (api_version, kind) == ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition") {
        return false;
    }
    if proto::knows(api_version, kind) {
        if let Ok(go) = proto::encode(root).and_then(|pb| proto::decode(&pb)) {
            *root = go;
        }
        return false;
    }
    let mut v = Value::Object(std::mem::take(root));
    gojson::unstructured(&mut v);
    if let Value::Object(map) = v {
        *root = map;
    }
    true
}

/// `name` or `namespace/name`, each a valid path segment (the engine
/// refuses others: [`Object::has_valid_names`]).
fn split_key(key: &[u8]) -> Result<(&str, &str), DecodeError> {
    let key = std::str::from_utf8(key).map_err(|_| DecodeError::Key("not UTF-8".into()))?;
    let (namespace, name) = match key.split_once('/') {
        Some((ns, name)) => (ns, name),
        None => ("", key),
    };
    if name.is_empty() || name.contains('/') || (key.contains('/') && namespace.is_empty()) {
        return Err(DecodeError::Key(format!(
            "{key:?} is not `name` or `namespace/name`"
        )));
    }
    if !Object::builder(namespace, name).build().has_valid_names() {
        return Err(DecodeError::Key(format!(
            "{key:?}: a name or namespace that is not a valid path segment"
        )));
    }
    Ok((namespace, name))
}

fn string_at<'a>(map: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, DecodeError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(DecodeError::Shape(format!(
            "metadata.{key} is not a string"
        ))),
    }
}

fn scalar_at(root: &Map<String, Value>, path: &[String]) -> Result<Option<String>, DecodeError> {
    let mut at: Option<&Value> = None;
    let mut map = root;
    for (i, step) in path.iter().enumerate() {
        match map.get(step) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(inner)) if i + 1 < path.len() => map = inner,
            Some(v) if i + 1 == path.len() => at = Some(v),
            Some(_) => return Ok(None),
        }
    }
    match at {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
        Some(_) => Err(DecodeError::Shape(format!(
            "field {} is not a scalar",
            path.join(".")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> Decoder {
        Decoder::new().field("spec.nodeName").field("status.phase")
    }

    #[test]
    fn a_field_with_no_path_reads_as_its_default() {
        let v = br#"{"kind":"Pod","metadata":{"name":"a","namespace":"ns"},"status":{"podIPs":[{"ip":"1.2.3.4"}]}}"#;
        let o = Decoder::new()
            .field_as("status.podIPs", "", None)
            .field_as("spec.hostNetwork", "", Some("false"))
            .decode(b"ns/a", v, 7.into())
            .unwrap();
        assert_eq!(o.field("status.podIPs"), None);
        assert_eq!(o.field("spec.hostNetwork"), Some("false"));
    }

    #[test]
    fn a_field_from_alternatives_takes_the_first_non_empty_one() {
        let decoder =
            Decoder::new().field_from("source", &["source.component", "reportingComponent"], None);
        let source = |v: &[u8]| {
            decoder
                .decode(b"ns/e", v, 7.into())
                .unwrap()
                .field("source")
                .map(str::to_owned)
        };
        let meta = r#""metadata":{"name":"e","namespace":"ns"}"#;
        let with = |rest: &str| format!("{{{meta}{rest}}}");
        assert_eq!(
            source(
                with(r#","source":{"component":"kubelet"},"reportingComponent":"x""#).as_bytes()
            )
            .as_deref(),
            Some("kubelet")
        );
        assert_eq!(
            source(with(r#","source":{"component":""},"reportingComponent":"x""#).as_bytes())
                .as_deref(),
            Some("x")
        );
        assert_eq!(
            source(with(r#","reportingComponent":"x""#).as_bytes()).as_deref(),
            Some("x")
        );
        assert_eq!(
            source(with(r#","source":{},"reportingComponent":"""#).as_bytes()).as_deref(),
            Some("")
        );
        assert_eq!(source(with("").as_bytes()), None);
    }

    #[test]
    fn decodes_names_labels_fields_and_sets_the_version_in_place() {
        let v = br#"{"kind":"Pod","metadata":{"name":"a","namespace":"ns","resourceVersion":"1","labels":{"x":"y"}},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}"#;
        let o = decoder().decode(b"ns/a", v, 7.into()).unwrap();
        assert_eq!(o.key(), "ns/a");
        assert_eq!(o.label("x"), Some("y"));
        assert_eq!(o.field("spec.nodeName"), Some("n1"));
        assert_eq!(o.field("status.phase"), Some("Running"));
        // Not a kind of the schema (no `apiVersion`): read as a custom
        // resource, keys sorted, the version set among them.
        assert_eq!(
            std::str::from_utf8(o.payload()).unwrap(),
            r#"{"kind":"Pod","metadata":{"labels":{"x":"y"},"name":"a","namespace":"ns","resourceVersion":"7"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}"#
        );
        // A built-in kind stored as JSON: its Go fields' order, fields it
        // does not have dropped, Go's escaping.
        let v = br#"{"status":{"phase":"Running"},"spec":{"nodeName":"n1","bogus":1},"metadata":{"labels":{"x":"<y>"},"namespace":"ns","name":"a"},"apiVersion":"v1","kind":"Pod"}"#;
        let o = decoder().decode(b"ns/a", v, 7.into()).unwrap();
        assert_eq!(
            std::str::from_utf8(o.payload()).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":{"x":"\u003cy\u003e"}},"spec":{"containers":null,"nodeName":"n1"},"status":{"phase":"Running"}}"#
        );
        // Stored as protobuf, without a version (as etcd holds it): the
        // version where `ObjectMeta` declares it.
        let pod: Map<String, Value> = serde_json::from_str(
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","labels":{"x":"y"}}}"#,
        )
        .unwrap();
        let o = decoder()
            .decode(b"ns/a", &proto::encode(&pod).unwrap(), 7.into())
            .unwrap();
        assert!(
            std::str::from_utf8(o.payload())
                .unwrap()
                .contains(r#""uid":"u","resourceVersion":"7","labels":{"x":"y"}"#)
        );
        // A custom resource: sorted, Go's numbers and escaping.
        let v = br#"{"spec":{"n":1e21,"s":"a&b","m":-0},"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"},"kind":"W","apiVersion":"x.io/v1"}"#;
        let o = decoder().decode(b"ns/a", v, 7.into()).unwrap();
        assert_eq!(
            std::str::from_utf8(o.payload()).unwrap(),
            r#"{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"spec":{"m":0,"n":1e+21,"s":"a\u0026b"}}"#
        );
    }

    #[test]
    fn cluster_scoped_keys_and_missing_fields() {
        let o = decoder()
            .decode(
                b"n1",
                br#"{"metadata":{"name":"n1"},"spec":{"unschedulable":true}}"#,
                3.into(),
            )
            .unwrap();
        assert_eq!(
            (o.namespace(), o.name(), o.field("spec.nodeName")),
            ("", "n1", None)
        );
        let o = Decoder::new()
            .field("spec.unschedulable")
            .decode(
                b"n1",
                br#"{"metadata":{"name":"n1"},"spec":{"unschedulable":true}}"#,
                3.into(),
            )
            .unwrap();
        assert_eq!(o.field("spec.unschedulable"), Some("true"));
    }

    #[test]
    fn served_objects_take_their_key_and_version_from_their_metadata() {
        let item = br#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"12","labels":{"x":"y"}},"spec":{"nodeName":"n1"}}"#;
        let doc = serde_json::from_slice(item).unwrap();
        let (o, rv) = decoder().served(doc, ("v1", "Pod")).unwrap();
        assert_eq!((o.key(), rv.get()), ("ns/a", 12));
        assert_eq!(
            (o.label("x"), o.field("spec.nodeName")),
            (Some("y"), Some("n1"))
        );
        assert_eq!(
            std::str::from_utf8(o.payload()).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"12","labels":{"x":"y"}},"spec":{"nodeName":"n1"}}"#
        );
        // An event's object names its kind: kept where it is, checked.
        let node =
            br#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","resourceVersion":"3"}}"#;
        let (o, _) = decoder()
            .served(serde_json::from_slice(node).unwrap(), ("v1", "Node"))
            .unwrap();
        assert_eq!(&o.payload()[..], &node[..]);
        let bad: [&[u8]; 7] = [
            node, // a Node where pods are read
            br#"{"kind":"Pod","apiVersion":"v2","metadata":{"name":"a","resourceVersion":"3"}}"#,
            br#"{"metadata":{"name":"a"}}"#,
            br#"{"metadata":{"name":"a","resourceVersion":"0"}}"#,
            br#"{"metadata":{"name":"a","resourceVersion":"x"}}"#,
            br#"{"metadata":{"name":"..","resourceVersion":"3"}}"#,
            br#"{"metadata":{"resourceVersion":"3"}}"#,
        ];
        for b in bad {
            let doc = serde_json::from_slice(b).unwrap();
            assert!(
                matches!(
                    decoder().served(doc, ("v1", "Pod")),
                    Err(DecodeError::Shape(_) | DecodeError::Key(_))
                ),
                "{}",
                String::from_utf8_lossy(b)
            );
        }
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let d = decoder();
        let rv = ResourceVersion::new(1);
        let cases: [(&[u8], &[u8]); 11] = [
            (b"ns/a", b"\x00\xff not json"),
            (b"ns/a", b"k8s\x00\x0a\x09protobuf"),
            (b"ns/a", b"[1,2]"),
            (b"ns/a", br#"{"spec":{}}"#),
            (b"ns/a", br#"{"metadata":{"name":"b","namespace":"ns"}}"#),
            (
                b"ns/a",
                br#"{"metadata":{"name":"a","namespace":"ns","labels":{"x":1}}}"#,
            ),
            (
                b"ns/a",
                br#"{"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":{}}}"#,
            ),
            (b"a/b/c", br#"{"metadata":{"name":"c","namespace":"a"}}"#),
            (b"\xff", br#"{"metadata":{"name":"c"}}"#),
            (b"ns/..", br#"{"metadata":{"name":"..","namespace":"ns"}}"#),
            (b"a%2Fb", br#"{"metadata":{"name":"a%2Fb"}}"#),
        ];
        for (key, value) in cases {
            assert!(
                d.decode(key, value, rv).is_err(),
                "{:?}",
                String::from_utf8_lossy(value)
            );
        }
        assert_eq!(d.bare(b"ns/a").unwrap().key(), "ns/a");
        assert!(d.bare(b"/a").is_err());
    }
}
