//! The protobuf form of what the server sends, for clients that ask for
//! it (`Accept: application/vnd.kubernetes.protobuf`, client-go's typed
//! clients and every controller built on them):
//!
//! - an object: `k8s\0`, then a `runtime.Unknown` holding the typed
//!   message ([`herald_kube::proto::encode`] of its JSON);
//! - a list: the same envelope around the list kind's message (`ListMeta`
//!   as field 1, each item's typed message as field 2);
//! - a watch: `application/vnd.kubernetes.protobuf;stream=watch`, each
//!   event a 4-byte big-endian length, then a `metav1.WatchEvent` message
//!   (`type` 1, `object` 2, a `RawExtension` whose `raw` is the object's
//!   envelope), as client-go's protobuf watch decoder reads it.
//!
//! An object's protobuf is made once per change, not per connection:
//! [`Encodings`] keeps the last [`Encodings::KEEP`] made, keyed by the
//! JSON bytes they were made from (shared by every connection sending the
//! same event).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use herald_kube::ApiError;
use herald_kube::proto;
use serde_json::{Map, Value};

/// Protobuf envelopes recently made from objects' JSON.
#[derive(Debug, Default)]
pub struct Encodings {
    /// (the JSON bytes, kept alive so that their address is not reused,
    /// the envelope made from them).
    recent: Mutex<VecDeque<(Bytes, Bytes)>>,
    made: AtomicU64,
}

impl Encodings {
    /// Envelopes kept.
    pub const KEEP: usize = 1024;

    /// Envelopes made so far (not deliveries).
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// The protobuf envelope of the object whose JSON is `json`.
    pub fn protobuf(&self, json: &Bytes) -> Result<Bytes, ApiError> {
        let same = |b: &Bytes| b.as_ptr() == json.as_ptr() && b.len() == json.len();
        {
            let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, pb)) = recent.iter().rev().find(|(j, _)| same(j)) {
                return Ok(pb.clone());
            }
        }
        let pb = Bytes::from(envelope(json)?);
        self.made.fetch_add(1, Ordering::Relaxed);
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == Self::KEEP {
            recent.pop_front();
        }
        recent.push_back((json.clone(), pb.clone()));
        Ok(pb)
    }
}

/// The protobuf envelope of an object's JSON.
pub fn envelope(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let map: Map<String, Value> = serde_json::from_slice(json)
        .map_err(|e| ApiError::internal(format!("an object's JSON does not parse: {e}")))?;
    proto::encode(&map).map_err(|e| ApiError::internal(format!("no protobuf for this object: {e}")))
}

fn put_varint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

fn put_field(buf: &mut BytesMut, number: u32, bytes: &[u8]) {
    put_varint(buf, (u64::from(number) << 3) | 2);
    put_varint(buf, bytes.len() as u64);
    buf.put_slice(bytes);
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> BytesMut {
    let mut meta = BytesMut::new();
    put_field(&mut meta, 1, api_version.as_bytes());
    put_field(&mut meta, 2, kind.as_bytes());
    let mut out = BytesMut::with_capacity(raw.len() + meta.len() + 32);
    out.put_slice(proto::MAGIC);
    put_field(&mut out, 1, &meta);
    put_field(&mut out, 2, raw);
    put_field(&mut out, 3, b"");
    put_field(&mut out, 4, b"");
    out
}

/// A list's protobuf body, built item by item.
#[derive(Debug)]
pub struct ListProto {
    api_version: String,
    list_kind: String,
    raw: BytesMut,
}

impl ListProto {
    /// Starts a list of `list_kind` at `rv`, with a continue token if
    /// there are more pages.
    pub fn new(
        api_version: String,
        list_kind: &str,
        rv: u64,
        continue_token: Option<&str>,
    ) -> ListProto {
        let mut meta = BytesMut::new();
        put_field(&mut meta, 2, rv.to_string().as_bytes());
        if let Some(token) = continue_token {
            put_field(&mut meta, 3, token.as_bytes());
        }
        let mut raw = BytesMut::with_capacity(4096);
        put_field(&mut raw, 1, &meta);
        ListProto {
            api_version,
            list_kind: list_kind.to_owned(),
            raw,
        }
    }

    /// Appends one object, given its envelope.
    pub fn push(&mut self, envelope: &[u8]) -> Result<(), ApiError> {
        let item = proto::envelope(envelope)
            .map_err(|e| ApiError::internal(format!("an object's protobuf: {e}")))?;
        put_field(&mut self.raw, 2, item.raw);
        Ok(())
    }

    /// The whole body.
    pub fn finish(self) -> Bytes {
        wrap(&self.api_version, &self.list_kind, &self.raw).freeze()
    }
}

/// Appends one watch event: its length (4 bytes, big-endian), then the
/// `WatchEvent` message.
pub fn push_event(buf: &mut BytesMut, kind: &str, envelope: &[u8]) {
    let mut object = BytesMut::with_capacity(envelope.len() + 8);
    put_field(&mut object, 1, envelope);
    let mut event = BytesMut::with_capacity(object.len() + kind.len() + 8);
    put_field(&mut event, 1, kind.as_bytes());
    put_field(&mut event, 2, &object);
    buf.put_u32(event.len() as u32);
    buf.put_slice(&event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_events_are_framed_as_client_go_reads_them() {
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}"#;
        let env = envelope(pod).unwrap();
        let e = proto::envelope(&env).unwrap();
        assert_eq!((e.api_version, e.kind), ("v1", "Pod"));
        let back = proto::decode(&env).unwrap();
        assert_eq!(back["metadata"]["name"], "a");

        let mut list = ListProto::new("v1".into(), "PodList", 9, Some("tok"));
        list.push(&env).unwrap();
        list.push(&env).unwrap();
        let body = list.finish();
        let l = proto::envelope(&body).unwrap();
        assert_eq!((l.api_version, l.kind), ("v1", "PodList"));
        let decoded = proto::decode(&body).unwrap();
        assert_eq!(decoded["metadata"]["resourceVersion"], "9");
        assert_eq!(decoded["metadata"]["continue"], "tok");
        assert_eq!(decoded["items"].as_array().unwrap().len(), 2);
        assert_eq!(decoded["items"][1]["metadata"]["namespace"], "ns");

        let mut buf = BytesMut::new();
        push_event(&mut buf, "ADDED", &env);
        let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        assert_eq!(len, buf.len() - 4);

        let cache = Encodings::default();
        let json = Bytes::from_static(pod);
        let a = cache.protobuf(&json).unwrap();
        let b = cache.protobuf(&json.clone()).unwrap();
        assert_eq!(a, b);
        assert_eq!(cache.made(), 1);
        assert!(envelope(b"{\"kind\":\"Nope\",\"apiVersion\":\"v9\"}").is_err());
        assert!(envelope(b"not json").is_err());
    }
}
