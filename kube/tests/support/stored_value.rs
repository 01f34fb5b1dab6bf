//! The properties of the `stored_value` fuzz target, in one place: the
//! target (`fuzz/fuzz_targets/stored_value.rs`) and the seed replay
//! (`kube/tests/fuzz_seeds.rs`) both include this file, so a fixed crash
//! stays fixed under `cargo test` without libFuzzer.
//!
//! Input: the first byte picks a form, the rest is the value or the typed
//! message:
//!
//! * `0`: the bytes as stored;
//! * `1`: `k8s\0` + the bytes (the envelope parser and what follows);
//! * `2..`: a well-formed envelope naming a built-in kind (Pod, Node,
//!   Deployment, Secret, CustomResourceDefinition, ...) around the bytes
//!   as its typed message (the schema-driven walk of every field shape).
//!
//! The value is decoded under the keys `ns/a` and `a` (both scopes) and
//! under the key its own `metadata` names, when that is a valid key (so
//! that a real stored object is served and its round trip checked).

use herald_kube::{Decoder, proto};
use serde_json::{Map, Value};

/// The kinds of form `2..`.
pub(crate) const KINDS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "Event"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("coordination.k8s.io/v1", "Lease"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
];

fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
    out.push((number << 3) | 2);
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
}

/// `k8s\0` + a `runtime.Unknown` of `apiVersion`, `kind` and `raw`.
pub(crate) fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut meta = Vec::new();
    field(&mut meta, 1, api_version.as_bytes());
    field(&mut meta, 2, kind.as_bytes());
    let mut out = proto::MAGIC.to_vec();
    field(&mut out, 1, &meta);
    field(&mut out, 2, raw);
    out
}

/// The stored value an input stands for (`None` for the empty input).
pub(crate) fn value_of(data: &[u8]) -> Option<Vec<u8>> {
    let (&form, rest) = data.split_first()?;
    Some(match form {
        0 => rest.to_vec(),
        1 => [proto::MAGIC.as_slice(), rest].concat(),
        n => {
            let (v, k) = KINDS[usize::from(n) % KINDS.len()];
            envelope(v, k, rest)
        }
    })
}

/// Checks every property on one fuzz input; returns under how many keys
/// it was served.
pub(crate) fn check_input(data: &[u8]) -> usize {
    let Some(value) = value_of(data) else {
        return 0;
    };
    // The decoder checks the names against the key: try both scopes, and
    // the key the value names itself.
    let mut keys = vec![b"ns/a".to_vec(), b"a".to_vec()];
    if let Some(own) = own_key(&value)
        && !keys.contains(&own)
    {
        keys.push(own);
    }
    keys.iter().filter(|key| check(key, &value)).count()
}

/// `namespace/name` or `name` from the value's own metadata, if it has a
/// string name.
fn own_key(value: &[u8]) -> Option<Vec<u8>> {
    let doc = if value.starts_with(proto::MAGIC) {
        proto::decode(value).ok()?
    } else {
        match serde_json::from_slice(value).ok()? {
            Value::Object(m) => m,
            _ => return None,
        }
    };
    let meta = doc.get("metadata")?.as_object()?;
    let name = meta.get("name")?.as_str()?;
    Some(match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}").into_bytes(),
        _ => name.as_bytes().to_vec(),
    })
}

/// Drops what protobuf cannot carry, so a protobuf client is not sent it
/// either: a nested object's `apiVersion` and `kind` (`TypeMeta` has no
/// field number). The only ones the decoder serves are a StatefulSet's
/// `spec.volumeClaimTemplates[]`, which the apiserver's internal → v1
/// conversion sets on every read (k8s.io/kubernetes v1.37.2
/// `pkg/apis/apps/v1/conversion.go`
/// `Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec`; k8s.io/api
/// `core/v1/generated.proto` `message PersistentVolumeClaim` has only
/// `metadata`, `spec` and `status`).
fn without_nested_type_meta(doc: &mut Map<String, Value>) {
    let text = |k: &str| doc.get(k).and_then(Value::as_str);
    if (text("apiVersion"), text("kind")) != (Some("apps/v1"), Some("StatefulSet")) {
        return;
    }
    if let Some(Value::Array(templates)) = doc
        .get_mut("spec")
        .and_then(|s| s.get_mut("volumeClaimTemplates"))
    {
        for claim in templates.iter_mut().filter_map(Value::as_object_mut) {
            claim.remove("apiVersion");
            claim.remove("kind");
        }
    }
}

/// Whether `a` and `b` are the same JSON, numbers compared as numbers:
/// embedded JSON (`fieldsV1`, `RawExtension`, apiextensions `JSON`) is
/// written back as Go writes a number (`0.0` as `0`, `1e2` as `100`), which
/// `serde_json` reads back as an integer where it had a float; Go reads
/// both as the same `float64`. Two integers compare exactly.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || ((x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        (a, b) => a == b,
    }
}

/// What is checked for one key:
///
/// * **no panic**, and every failure a typed [`herald_kube::DecodeError`]
///   whose `reason()` is one of the fixed labels;
/// * **what is served is right**: an `Ok` object's payload is a JSON
///   object whose `metadata.name` and `metadata.namespace` are the key's,
///   whose `metadata.resourceVersion` is the revision, with `kind` (when
///   present) before every field but `apiVersion`;
/// * **protobuf round trip**: a decoded protobuf object encodes back
///   ([`herald_kube::proto::encode`]) to bytes that decode to the same
///   JSON (what a protobuf client is sent is what a JSON client is sent),
///   but for what protobuf cannot carry ([`without_nested_type_meta`]),
///   numbers compared as numbers ([`same_json`]).
///
/// Returns whether the value was served under `key`.
pub(crate) fn check(key: &[u8], value: &[u8]) -> bool {
    let decoder = Decoder::new().field("spec.nodeName");
    let object = match decoder.decode(key, value, 42.into()) {
        Ok(o) => o,
        Err(e) => {
            assert!(
                matches!(
                    e.reason(),
                    "key"
                        | "json"
                        | "shape"
                        | "unknown_kind"
                        | "protobuf"
                        | "encrypted"
                        | "decrypt"
                ),
                "{e}"
            );
            let _ = e.to_string();
            return false;
        }
    };
    let doc: Value = serde_json::from_slice(object.payload()).expect("a served payload is JSON");
    let root = doc.as_object().expect("a served payload is an object");
    let key = std::str::from_utf8(key).expect("a decoded key is UTF-8");
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    assert_eq!((object.namespace(), object.name()), (ns, name));
    assert_eq!(root["metadata"]["name"].as_str().unwrap_or(""), name);
    assert_eq!(root["metadata"]["namespace"].as_str().unwrap_or(""), ns);
    assert_eq!(root["metadata"]["resourceVersion"], "42");
    if let Some(at) = root.keys().position(|k| k == "kind") {
        assert!(at <= 1, "kind is field {at}");
    }
    if value.starts_with(proto::MAGIC) {
        let again = proto::encode(root).expect("a decoded object encodes");
        let back = proto::decode(&again).expect("an encoded object decodes");
        let mut want = root.clone();
        // The revision is not stored; the decoder sets it.
        want["metadata"]
            .as_object_mut()
            .expect("metadata is an object")
            .remove("resourceVersion");
        without_nested_type_meta(&mut want);
        let mut got = back;
        if let Some(m) = got.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let (got, want) = (Value::Object(got), Value::Object(want));
        assert!(
            same_json(&got, &want),
            "protobuf round trip\n  got: {got}\n want: {want}"
        );
    }
    true
}
