//! An object's protobuf, made once per change, not per connection: a
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
use serde_json::{Map, Value};

use crate::encode::ObjectJson;
use crate::proto;
use crate::status::ApiError;

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
    /// [`crate::encode`] made of it for this event); `object` is `None`
    /// when the JSON is not the engine object's own (a conversion's).
    pub fn protobuf(&self, object: Option<&Object>, json: &ObjectJson) -> Result<Bytes, ApiError> {
        match json {
            ObjectJson::Stored(stored) => match object {
                // Not the engine's object (a conversion's JSON): made per
                // delivery.
                None => self.described(stored),
                Some(object) => object
                    .derived(|payload| {
                        self.made.fetch_add(1, Ordering::Relaxed);
                        envelope(payload).ok().map(Bytes::from)
                    })
                    // Kept as `None`: made again for its message, per delivery
                    // of a value that is an error for every client anyway.
                    .map_or_else(|| envelope(stored).map(Bytes::from), Ok),
            },
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
            ObjectJson::Described(json) => self.described(json),
        }
    }

    fn described(&self, json: &[u8]) -> Result<Bytes, ApiError> {
        self.made.fetch_add(1, Ordering::Relaxed);
        envelope(json).map(Bytes::from)
    }
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
        let a = cache.protobuf(Some(&object), &stored).unwrap();
        // Another handle on the same object, from another thread, later.
        let (o2, s2) = (object.clone(), stored.clone());
        let b = std::thread::scope(|s| s.spawn(|| cache.protobuf(Some(&o2), &s2)).join().unwrap())
            .unwrap();
        assert_eq!((&a[..], cache.made()), (&env[..], 1));
        assert_eq!(a, b);
        // Equal bytes in another object are that object's: made again.
        let other = Object::builder("ns", "a").payload(&pod[..]).build();
        let c = cache
            .protobuf(Some(&other), &ObjectJson::Stored(other.payload().clone()))
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
            let e = cache.protobuf(Some(&object), &stored).unwrap_err();
            assert!(
                String::from_utf8_lossy(&e.to_json()).contains("no protobuf"),
                "{e:?}"
            );
        }
        assert_eq!(cache.made(), 1);
        assert!(envelope(b"not json").is_err());
    }

    #[test]
    fn stored_json_without_its_object_is_made_per_call() {
        // JSON that is not the engine object's own (a conversion's) has
        // no object to keep its envelope on: made each time, never cached
        // on another object.
        let cache = Encodings::default();
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns"}}"#;
        let json = ObjectJson::Stored(Bytes::from_static(pod));
        let a = cache.protobuf(None, &json).unwrap();
        let b = cache.protobuf(None, &json).unwrap();
        assert_eq!((a, cache.made()), (b, 2));
        let bad = ObjectJson::Stored(Bytes::from_static(b"not json"));
        assert!(cache.protobuf(None, &bad).is_err());
    }

    #[test]
    fn a_restamped_deletion_is_made_once_per_event() {
        let cache = Encodings::default();
        let object = Object::builder("ns", "a").payload(&b"{}"[..]).build();
        let json = Bytes::from_static(
            br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}"#,
        );
        let ev = ObjectJson::Restamped(json.clone());
        let a = cache.protobuf(Some(&object), &ev).unwrap();
        let b = cache.protobuf(Some(&object), &ev).unwrap();
        assert_eq!((a, cache.made()), (b, 1));
        let described = ObjectJson::Described(json);
        cache.protobuf(Some(&object), &described).unwrap();
        cache.protobuf(Some(&object), &described).unwrap();
        assert_eq!(cache.made(), 3);
    }
}
