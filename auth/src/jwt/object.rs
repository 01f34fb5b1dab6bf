//! What the token checks read of an object a token names (its
//! ServiceAccount, Secret, Pod or Node): the apiserver's getter hands
//! its validators the whole object; these are the parts they read.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The parts of an object the token checks read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Object {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.deletionTimestamp` in Unix seconds: set once the object
    /// is being deleted. A timestamp that is not RFC 3339 (an object the
    /// apiserver could not decode) reads as the earliest time.
    pub deletion: Option<i64>,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// A Secret's `data.token`, base64-decoded (`None`: no such key, or
    /// not base64).
    pub token: Option<Vec<u8>>,
}

impl Object {
    /// The parts of `object`, a Kubernetes object as JSON.
    pub fn from_json(object: &Value) -> Object {
        let meta = &object["metadata"];
        Object {
            uid: meta["uid"].as_str().unwrap_or_default().to_owned(),
            deletion: match &meta["deletionTimestamp"] {
                Value::Null => None,
                Value::String(t) => Some(herald_kube::table::unix_seconds(t).unwrap_or(i64::MIN)),
                _ => Some(i64::MIN),
            },
            labels: meta["labels"]
                .as_object()
                .map(|l| {
                    l.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            token: object["data"]["token"]
                .as_str()
                .and_then(|t| STANDARD.decode(t).ok()),
        }
    }
}
