//! The `k8s\0` + `runtime.Unknown` envelope read, and a stored value
//! decoded to the JSON the apiserver serves for it.

use serde_json::{Map, Value};

use super::error::{MAGIC, ProtoError};
use super::json;
use super::schema::Schema;
use super::wire::{Fields, Wire};

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

/// The JSON object of `bytes`, a message of the Go type `go_type`, as Go
/// writes that type (its fields in their order, empty ones left out as
/// its tags say).
pub fn type_json(bytes: &[u8], go_type: &str) -> Result<Map<String, Value>, ProtoError> {
    let schema = Schema::get();
    let ty = schema
        .type_named(go_type)
        .ok_or_else(|| ProtoError::Encoding(format!("no type {go_type} in the schema")))?;
    json::message(schema, ty, bytes)
}

/// Whether `(api_version, kind)` is a kind of the compiled-in schema.
pub fn knows(api_version: &str, kind: &str) -> bool {
    Schema::get().kind(api_version, kind).is_some()
}
