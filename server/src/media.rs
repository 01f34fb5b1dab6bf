//! The protobuf form of what the server sends, for clients that ask for
//! it (`Accept: application/vnd.kubernetes.protobuf`, client-go's typed
//! clients and every controller built on them):
//!
//! - an object: `k8s\0`, then a `runtime.Unknown` holding the typed
//!   message ([`herald_kube::proto::encode`] of its JSON);
//! - a list and a watch stream's events: [`proto::ListFrame`] and
//!   [`proto::watch_event`] around those envelopes.
//!
//! An object's protobuf is made once per change, not per connection: a
//! stored object's is kept on the object itself ([`Object::derived`]), so
//! it is made by the first connection that sends the change, shared by
//! every other however far behind it is, and goes with the object. A
//! re-stamped deletion's ([`ObjectJson::Restamped`], shared per event by
//! `Restamps`) is kept in [`Encodings`] among the last
//! [`Encodings::KEEP`]; a described one's is made per delivery, as its
//! JSON is.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use herald::Object;
use herald_kube::encode::ObjectJson;
use herald_kube::{ApiError, proto};
use serde_json::{Map, Value};

/// Where a resource's objects get their protobuf, and how many were made.
#[derive(Debug, Default)]
pub struct Encodings {
    /// Re-stamped deletions' envelopes: (the JSON bytes, kept alive so
    /// that their address is not reused, the envelope made from them).
    restamped: Mutex<VecDeque<(Bytes, Bytes)>>,
    made: AtomicU64,
}

impl Encodings {
    /// Re-stamped deletions' envelopes kept.
    pub const KEEP: usize = 1024;

    /// Envelopes made so far (not deliveries).
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// The protobuf envelope of `object` sent as `json` (what
    /// `herald_kube::encode` made of it for this event).
    pub fn protobuf(&self, object: &Object, json: &ObjectJson) -> Result<Bytes, ApiError> {
        match json {
            ObjectJson::Stored(stored) => object
                .derived(|payload| {
                    self.made.fetch_add(1, Ordering::Relaxed);
                    envelope(payload).ok().map(Bytes::from)
                })
                // Kept as `None`: made again for its message, per delivery
                // of a value that is an error for every client anyway.
                .map_or_else(|| envelope(stored).map(Bytes::from), Ok),
            ObjectJson::Restamped(json) => {
                let same = |b: &Bytes| b.as_ptr() == json.as_ptr() && b.len() == json.len();
                // Held while encoding: racing connections wait for one
                // encoding rather than each make their own.
                let mut recent = self.restamped.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((_, pb)) = recent.iter().rev().find(|(j, _)| same(j)) {
                    return Ok(pb.clone());
                }
                let pb = Bytes::from(envelope(json)?);
                self.made.fetch_add(1, Ordering::Relaxed);
                if recent.len() == Self::KEEP {
                    recent.pop_front();
                }
                recent.push_back((json.clone(), pb.clone()));
                Ok(pb)
            }
            ObjectJson::Described(json) => {
                self.made.fetch_add(1, Ordering::Relaxed);
                envelope(json).map(Bytes::from)
            }
        }
    }
}

/// The YAML media type.
pub const YAML: &str = "application/yaml";

/// The YAML of a JSON body (an object or a list), as the apiserver
/// prints it ([`herald_kube::yaml`]). Made per request: a client asking
/// for YAML is a person.
pub fn yaml(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let value: Value = serde_json::from_slice(json)
        .map_err(|e| ApiError::internal(format!("a body's JSON does not parse: {e}")))?;
    // go-yaml refusing the text fails the request as the apiserver's
    // encoder failing does: a 500 with go-yaml's message.
    herald_kube::yaml::to_yaml(&value)
        .map(String::into_bytes)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// The protobuf envelope of an object's JSON.
pub fn envelope(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let map: Map<String, Value> = serde_json::from_slice(json)
        .map_err(|e| ApiError::internal(format!("an object's JSON does not parse: {e}")))?;
    proto::encode(&map).map_err(|e| ApiError::internal(format!("no protobuf for this object: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_protobuf_is_made_once_and_shared() {
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}"#;
        let env = envelope(pod).unwrap();
        assert_eq!(proto::decode(&env).unwrap()["metadata"]["name"], "a");
        let cache = Encodings::default();
        let object = Object::builder("ns", "a").payload(&pod[..]).build();
        let stored = ObjectJson::Stored(object.payload().clone());
        let a = cache.protobuf(&object, &stored).unwrap();
        // Another handle on the same object, from another thread, later.
        let (o2, s2) = (object.clone(), stored.clone());
        let b =
            std::thread::scope(|s| s.spawn(|| cache.protobuf(&o2, &s2)).join().unwrap()).unwrap();
        assert_eq!((&a[..], cache.made()), (&env[..], 1));
        assert_eq!(a, b);
        // Equal bytes in another object are that object's: made again.
        let other = Object::builder("ns", "a").payload(&pod[..]).build();
        let c = cache
            .protobuf(&other, &ObjectJson::Stored(other.payload().clone()))
            .unwrap();
        assert_eq!((a, cache.made()), (c, 2));
    }

    #[test]
    fn a_value_with_no_protobuf_is_an_error_each_time() {
        let cache = Encodings::default();
        let bad = br#"{"kind":"Nope","apiVersion":"v9","metadata":{"name":"a"}}"#;
        let object = Object::builder("", "a").payload(&bad[..]).build();
        let stored = ObjectJson::Stored(object.payload().clone());
        for _ in 0..2 {
            let e = cache.protobuf(&object, &stored).unwrap_err();
            assert!(
                String::from_utf8_lossy(&e.to_json()).contains("no protobuf"),
                "{e:?}"
            );
        }
        assert_eq!(cache.made(), 1);
        assert!(envelope(b"not json").is_err());
    }

    #[test]
    fn a_restamped_deletion_is_made_once_per_event() {
        let cache = Encodings::default();
        let object = Object::builder("ns", "a").payload(&b"{}"[..]).build();
        let json = Bytes::from_static(
            br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}"#,
        );
        let ev = ObjectJson::Restamped(json.clone());
        let a = cache.protobuf(&object, &ev).unwrap();
        let b = cache.protobuf(&object, &ev).unwrap();
        assert_eq!((a, cache.made()), (b, 1));
        let described = ObjectJson::Described(json);
        cache.protobuf(&object, &described).unwrap();
        cache.protobuf(&object, &described).unwrap();
        assert_eq!(cache.made(), 3);
    }

    #[test]
    fn yaml_sorts_keys_as_the_apiserver_prints_them() {
        let got = yaml(br#"{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"2","a":"x\ny\n"}}"#)
            .unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            // A string with a line break is a literal block (go-yaml v2).
            "apiVersion: v1\ndata:\n  a: |\n    x\n    y\n  b: \"2\"\nkind: ConfigMap\n"
        );
        // Text go-yaml's reader refuses fails the request, as the
        // apiserver's encoder failing does.
        let e = yaml(br#"{"a":"\u007f"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "yaml: control characters are not allowed")
        );
        assert!(yaml(b"{").is_err());
    }
}
