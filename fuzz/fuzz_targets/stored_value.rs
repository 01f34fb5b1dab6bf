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
//! The value is decoded under the keys `ns/a` and `a` (both scopes), and
//! under the key its own `metadata` names (so a real stored object, like
//! the seeds, is served and round-tripped, not only refused for its name).
//!
//! Checked for every input and key:
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
//!
//! The checks live in `kube/tests/support/stored_value.rs`, shared with
//! `kube/tests/fuzz_seeds.rs`, which replays `fuzz/seeds/stored_value`
//! under `cargo test`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../kube/tests/support/stored_value.rs"]
mod properties;

fuzz_target!(|data: &[u8]| {
    properties::check_input(data);
});
