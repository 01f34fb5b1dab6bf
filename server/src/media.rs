//! The protobuf form of what the server sends, for clients that ask for
//! it (`Accept: application/vnd.kubernetes.protobuf`, client-go's typed
//! clients and every controller built on them):
//!
//! - an object: `k8s\0`, then a `runtime.Unknown` holding the typed
//!   message ([`herald_kube::proto::encode`] of its JSON);
//! - a list and a watch stream's events: [`proto::ListFrame`] and
//!   [`proto::watch_event`] around those envelopes.
//!
//! An object's protobuf is made once per change, not per connection:
//! [`Encodings`] keeps the last [`Encodings::KEEP`] made, keyed by the
//! JSON bytes they were made from (shared by every connection sending the
//! same event).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
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

/// The YAML media type.
pub const YAML: &str = "application/yaml";

/// The YAML of a JSON body (an object or a list), as the apiserver
/// prints it ([`herald_kube::yaml`]). Made per request: a client asking
/// for YAML is a person.
pub fn yaml(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let value: Value = serde_json::from_slice(json)
        .map_err(|e| ApiError::internal(format!("a body's JSON does not parse: {e}")))?;
    Ok(herald_kube::yaml::to_yaml(&value).into_bytes())
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
        let json = Bytes::from_static(pod);
        let a = cache.protobuf(&json).unwrap();
        let b = cache.protobuf(&json.clone()).unwrap();
        assert_eq!((a.clone(), cache.made()), (b, 1));
        // Equal bytes elsewhere are another object's: made again.
        let c = cache.protobuf(&Bytes::copy_from_slice(pod)).unwrap();
        assert_eq!((a, cache.made()), (c, 2));
        assert!(envelope(b"{\"kind\":\"Nope\",\"apiVersion\":\"v9\"}").is_err());
        assert!(envelope(b"not json").is_err());
    }

    #[test]
    fn yaml_sorts_keys_as_the_apiserver_prints_them() {
        let got = yaml(br#"{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"2","a":"x\ny\n"}}"#)
            .unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "apiVersion: v1\ndata:\n  a: \"x\\ny\\n\"\n  b: \"2\"\nkind: ConfigMap\n"
        );
        assert!(yaml(b"{").is_err());
    }
}
