//! Fuzz target for [`herald_kube::Decoder::decode`] on what an etcd key may
//! hold: JSON, the apiserver's protobuf (`k8s\0` + `runtime.Unknown`),
//! values encrypted at rest, garbage.
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
//! Checked for every input:
//!
//! * **no panic**, and every failure a typed [`herald_kube::DecodeError`]
//!   whose `reason()` is one of the fixed labels;
//! * **what is served is right**: an `Ok` object's payload is a JSON
//!   object whose `metadata.name` and `metadata.namespace` are the key's,
//!   whose `metadata.resourceVersion` is the revision, with `kind` (when
//!   present) before every field but `apiVersion`;
//! * **protobuf round trip**: a decoded protobuf object encodes back
//!   ([`herald_kube::proto::encode`]) to bytes that decode to the same
//!   JSON (what a protobuf client is sent is what a JSON client is sent).

#![no_main]

use herald_kube::{Decoder, proto};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const KINDS: &[(&str, &str)] = &[
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

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut meta = Vec::new();
    field(&mut meta, 1, api_version.as_bytes());
    field(&mut meta, 2, kind.as_bytes());
    let mut out = proto::MAGIC.to_vec();
    field(&mut out, 1, &meta);
    field(&mut out, 2, raw);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else {
        return;
    };
    let value = match form {
        0 => rest.to_vec(),
        1 => [proto::MAGIC.as_slice(), rest].concat(),
        n => {
            let (v, k) = KINDS[usize::from(n) % KINDS.len()];
            envelope(v, k, rest)
        }
    };
    // The decoder checks the names against the key: try both scopes.
    for key in [&b"ns/a"[..], b"a"] {
        check(key, &value);
    }
});

fn check(key: &[u8], value: &[u8]) {
    let decoder = Decoder::new().field("spec.nodeName");
    let object = match decoder.decode(key, value, 42.into()) {
        Ok(o) => o,
        Err(e) => {
            assert!(
                matches!(
                    e.reason(),
                    "key" | "json" | "shape" | "unknown_kind" | "protobuf" | "encrypted" | "decrypt"
                ),
                "{e}"
            );
            let _ = e.to_string();
            return;
        }
    };
    let doc: Value = serde_json::from_slice(object.payload()).expect("a served payload is JSON");
    let root = doc.as_object().expect("a served payload is an object");
    let (ns, name) = match std::str::from_utf8(key).unwrap().split_once('/') {
        Some((ns, name)) => (ns, name),
        None => ("", std::str::from_utf8(key).unwrap()),
    };
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
        want["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        let mut got = back;
        if let Some(m) = got.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        assert_eq!(Value::Object(got), Value::Object(want), "protobuf round trip");
    }
}
