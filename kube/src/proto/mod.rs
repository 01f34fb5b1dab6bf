//! The apiserver's protobuf storage format, read and written.
//!
//! kube-apiserver stores the built-in kinds as `k8s\0` (the magic), then a
//! `runtime.Unknown`: `typeMeta` (apiVersion, kind, field 1), `raw` (the
//! typed message, field 2), `contentEncoding` (3) and `contentType` (4).
//! [`decode`] reads that envelope and turns the typed message into the
//! JSON the apiserver serves for it (`kind` and `apiVersion` first), with
//! a schema generated from the real Go types of one release
//! ([`RELEASE`]). Every malformed input is a [`ProtoError`]; nothing
//! panics and nothing half-decoded is returned.
//!
//! [`encode()`] is the inverse: the JSON of a built-in kind to the bytes the
//! apiserver would store and serve for it (`Accept:
//! application/vnd.kubernetes.protobuf`), written as gogo's generated
//! `Marshal` writes the Go structs that JSON reads into; [`message`] is the
//! typed message alone.

mod encode;
mod frame;
mod gojson;
mod json;
mod quantity;
mod schema;
mod time;
mod wire;

use std::fmt;

use serde_json::{Map, Value};

pub use encode::{encode, encode_into, message};
pub use frame::{ListFrame, watch_event, watch_event_head};
pub use schema::RELEASE;
use schema::Schema;
use wire::{Fields, Wire};

/// The four bytes the apiserver puts before every protobuf value.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtoError {
    /// The value does not start with `k8s\0`.
    Magic,
    /// A field runs past the end of its message.
    Truncated,
    /// Bytes that are not the protobuf wire format (a bad wire type, an
    /// overlong varint, field number 0) or not the type's.
    Wire(String),
    /// The envelope names a kind this release's schema does not have.
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// The envelope says the raw bytes are compressed or not protobuf.
    Encoding(String),
    /// A value the apiserver would refuse to read or print (a bad time,
    /// a quantity `resource.ParseQuantity` refuses, an IntOrString of no
    /// type, embedded JSON that is not JSON, too deep),
    /// or, encoding, JSON its Go types would refuse to read (a string
    /// where a number belongs, an `int32` out of range, a bad time or
    /// quantity, no `kind`), with the field's path.
    Value(String),
    /// A form the apiserver reads that this reader does not yet.
    Unsupported(String),
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Magic => write!(f, "no k8s\\0 magic"),
            ProtoError::Truncated => write!(f, "truncated"),
            ProtoError::Wire(why) => write!(f, "not protobuf: {why}"),
            ProtoError::UnknownKind { api_version, kind } => {
                write!(
                    f,
                    "kind {api_version}/{kind} is not in the {RELEASE} schema"
                )
            }
            ProtoError::Encoding(why) => write!(f, "envelope: {why}"),
            ProtoError::Value(why) => write!(f, "bad value: {why}"),
            ProtoError::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// A stored value's envelope: what it says it holds, and the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `v1`, `apps/v1`.
    pub api_version: &'a str,
    /// `Pod`.
    pub kind: &'a str,
    /// The typed message.
    pub raw: &'a [u8],
}

/// Reads the `k8s\0` magic and the `runtime.Unknown` envelope.
pub fn envelope(value: &[u8]) -> Result<Envelope<'_>, ProtoError> {
    let body = value
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtoError::Magic)?;
    let (mut api_version, mut kind, mut raw) = ("", "", &[][..]);
    for item in Fields::new(body) {
        match item? {
            (1, Wire::Bytes(meta)) => {
                for item in Fields::new(meta) {
                    match item? {
                        (1, Wire::Bytes(v)) => api_version = utf8(v, "apiVersion")?,
                        (2, Wire::Bytes(k)) => kind = utf8(k, "kind")?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            (3, Wire::Bytes(enc)) if !enc.is_empty() => {
                return Err(ProtoError::Encoding(format!(
                    "contentEncoding {:?}",
                    String::from_utf8_lossy(enc)
                )));
            }
            (4, Wire::Bytes(ct))
                if !ct.is_empty() && ct != b"application/vnd.kubernetes.protobuf" =>
            {
                return Err(ProtoError::Encoding(format!(
                    "contentType {:?}",
                    String::from_utf8_lossy(ct)
                )));
            }
            (3 | 4, Wire::Bytes(_)) => {}
            (1..=4, w) => return Err(ProtoError::Wire(format!("envelope field as {w:?}"))),
            _ => {}
        }
    }
    if kind.is_empty() {
        return Err(ProtoError::Encoding("no kind".into()));
    }
    Ok(Envelope {
        api_version,
        kind,
        raw,
    })
}

fn utf8<'a>(b: &'a [u8], what: &str) -> Result<&'a str, ProtoError> {
    std::str::from_utf8(b).map_err(|_| ProtoError::Wire(format!("{what} is not UTF-8")))
}

/// A stored protobuf value as the JSON object the apiserver serves for it:
/// `kind` and `apiVersion` first, then the type's fields.
pub fn decode(value: &[u8]) -> Result<Map<String, Value>, ProtoError> {
    let env = envelope(value)?;
    let schema = Schema::get();
    let ty = schema
        .kind(env.api_version, env.kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: env.api_version.to_owned(),
            kind: env.kind.to_owned(),
        })?;
    let body = json::message(schema, ty, env.raw)?;
    let mut out = Map::with_capacity(body.len() + 2);
    out.insert("kind".into(), Value::String(env.kind.to_owned()));
    out.insert(
        "apiVersion".into(),
        Value::String(env.api_version.to_owned()),
    );
    for (k, v) in body {
        if k != "kind" && k != "apiVersion" {
            out.insert(k, v);
        }
    }
    Ok(out)
}

/// Whether `(api_version, kind)` is a kind of the compiled-in schema.
pub fn knows(api_version: &str, kind: &str) -> bool {
    Schema::get().kind(api_version, kind).is_some()
}
