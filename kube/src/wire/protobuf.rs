//! The apiserver's protobuf (`application/vnd.kubernetes.protobuf`),
//! for built-in kinds, as client-go's typed clients and every controller
//! built on them ask for it:
//!
//! - an object: `k8s\0`, then a `runtime.Unknown` holding the typed
//!   message ([`crate::proto::encode`] of its JSON);
//! - a list and a watch stream's events: [`ListFrame`] and
//!   [`watch_event_head`] around those envelopes (events length-prefixed).
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use herald::{EventKind, Object};
use serde_json::{Map, Value};

use super::{Encoder, Format, ListHead, MediaRange, Offer, Outgoing, Request, Stream};
use crate::encode::{ObjectJson, event_type, push_event};
use crate::proto::{self, ListFrame, watch_event_head};
use crate::status::ApiError;

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The protobuf media type of a watch stream.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// `application/vnd.kubernetes.protobuf`, for a kind with a protobuf
/// form.
#[derive(Debug)]
pub(super) struct Protobuf;

impl Format for Protobuf {
    fn name(&self) -> &'static str {
        "protobuf"
    }

    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool {
        offer.protobuf
            && range.param("as").is_none()
            && range.media_type() == ("application", "vnd.kubernetes.protobuf")
    }

    fn advertised(&self, offer: Offer) -> Option<&'static str> {
        offer.protobuf.then_some(if offer.watch {
            PROTOBUF_WATCH
        } else {
            PROTOBUF
        })
    }

    fn encoder(&self, request: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        Ok(Arc::new(ProtobufEncoder {
            encodings: request.encodings.clone(),
        }))
    }
}

/// Writes protobuf, each object's envelope from the resource's shared
/// [`Encodings`].
#[derive(Debug)]
struct ProtobufEncoder {
    encodings: Arc<Encodings>,
}

impl Encoder for ProtobufEncoder {
    fn name(&self) -> &'static str {
        "protobuf"
    }

    fn content_type(&self) -> &'static str {
        PROTOBUF
    }

    fn stream_content_type(&self) -> &'static str {
        PROTOBUF_WATCH
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        Ok(self.encodings.protobuf(item.object, item.json)?.to_vec())
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        let mut body = ListFrame::paged(
            &head.info.api_version(),
            &head.info.list_kind,
            head.rv.get(),
            head.continue_token,
            head.remaining,
        );
        for item in items {
            body.push(&self.encodings.protobuf(item.object, item.json)?)
                .map_err(|e| ApiError::internal(format!("an object's protobuf: {e}")))?;
        }
        Ok(body.finish())
    }

    fn event(&self, _: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        match self.encodings.protobuf(item.object, item.json) {
            Ok(pb) => push_proto(buf, event_type(kind), &pb),
            Err(e) => self.notice(buf, "ERROR", &e.to_json()),
        }
    }

    /// An object with no protobuf form (which a built-in kind's bookmark
    /// and a `Status` always have) goes as the end of the stream's JSON,
    /// which a protobuf client reports as a decoding error rather than
    /// misread.
    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        match envelope(json) {
            Ok(pb) => push_proto(buf, kind, &pb),
            Err(_) => push_event(buf, kind, json),
        }
    }
}

/// Appends a protobuf watch event whose object's envelope is `pb` (the
/// shared envelope copied once, into the chunk).
fn push_proto(buf: &mut BytesMut, kind: &str, pb: &[u8]) {
    buf.extend_from_slice(&watch_event_head(kind, pb.len()));
    buf.extend_from_slice(pb);
}

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
