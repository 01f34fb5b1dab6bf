//! Kubernetes JSON to the apiserver's protobuf: the inverse of
//! [`decode`](super::decode), for serving `application/vnd.kubernetes.protobuf`
//! from objects held as JSON.
//!
//! The JSON is read as the apiserver's JSON serializer reads it into the
//! Go structs (`sigs.k8s.io/json`, `encoding/json`'s rules with
//! case-sensitive names: a field absent or `null` is the Go zero value,
//! `null` a nil pointer, slice or map; a JSON type that does not fit the Go
//! type is an error), and the structs are written as gogo's generated
//! `Marshal` writes them (`k8s.io/api/*/generated.pb.go`):
//!
//! - fields in ascending field number; a non-pointer scalar or string
//!   written even when zero, a non-pointer struct always (perhaps empty);
//!   a nil pointer, slice, map or `[]byte`, and an empty slice or map, not
//!   at all (an empty, non-nil `[]byte` is written, empty);
//! - repeated scalars unpacked; negative `int32`s as ten-byte varints;
//!   `float64` as a fixed 64-bit word; `[]byte` from base64;
//! - map entries `{key = 1, value = 2}` in key order (`sort.Strings`),
//!   a nil `[]byte` value without its field 2;
//! - `metav1.Time` as `{seconds = 1, nanos = 2}` with the nanoseconds
//!   dropped and no bytes at all for the zero time (`time_proto.go`),
//!   `MicroTime` with microseconds; `Duration` as `{duration = 1}`;
//!   `Quantity` as `{string = 1}`; `IntOrString` as
//!   `{type = 1, intVal = 2, strVal = 3}`; `RawExtension`, `FieldsV1` and
//!   apiextensions `JSON` as `{raw = 1}` holding the JSON as Go writes it
//!   compact ([`gojson`] rules); the `JSONSchemaProps` unions as
//!   their `UnmarshalJSON` fills them.
//!
//! JSON fields the schema does not have are dropped (the apiserver would
//! have refused them on the way in, or pruned them). A `Quantity` is
//! written as given: the apiserver writes its canonical form, which is
//! what it serves, so a quantity the apiserver served comes back the same;
//! a non-canonical one (`0.5`, `1000m`) is checked for its grammar, not
//! canonicalized.

use std::sync::OnceLock;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

use super::error::MAGIC;
use super::error::ProtoError;
use super::quantity;
use super::schema::RELEASE;
use super::schema::{Schema, Shape, Special, TypeId};
use super::time;
use super::wire::{close_len, open_len, put_bytes, put_key, put_varint};
use crate::gojson;

/// Deeper than any built-in kind nests (a CRD's schema is the deepest).
const MAX_DEPTH: usize = 100;

/// The apiserver's whole stored form of `object`: `k8s\0`, then a
/// `runtime.Unknown` of `typeMeta` (field 1: `apiVersion` = 1,
/// `kind` = 2), `raw` (field 2: the typed message) and empty
/// `contentEncoding` (3) and `contentType` (4), as
/// `protobuf.Serializer.Encode` writes it (`Unknown.NestedMarshalTo`).
///
/// The object's `apiVersion` and `kind` choose the type; a kind the
/// schema does not have is [`ProtoError::UnknownKind`], JSON that does not
/// fit the type is [`ProtoError::Value`] (with the field's path).
pub fn encode(object: &Map<String, Value>) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(512);
    encode_into(object, &mut out)?;
    Ok(out)
}

/// [`encode`], appended to `out` (left as it was on an error).
pub fn encode_into(object: &Map<String, Value>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    let (api_version, kind) = type_meta(object)?;
    let schema = Schema::get();
    let ty = kind_type(schema, api_version, kind)?;
    let start = out.len();
    let result = (|| {
        out.extend_from_slice(MAGIC);
        let meta = open_len(out, 1);
        put_bytes(out, 1, api_version.as_bytes());
        put_bytes(out, 2, kind.as_bytes());
        close_len(out, meta);
        let raw = open_len(out, 2);
        Enc {
            schema,
            out,
            depth: 0,
        }
        .object(ty, object)?;
        close_len(out, raw);
        put_bytes(out, 3, b"");
        put_bytes(out, 4, b"");
        Ok(())
    })();
    if result.is_err() {
        out.truncate(start);
    }
    result.map_err(finish)
}

/// The typed message alone (no magic, no envelope) of `object` as the
/// kind `kind` of `api_version`: what a list's items and a
/// `runtime.Unknown`'s `raw` hold. The object's own `apiVersion` and
/// `kind`, if any, are not read (they are not on the wire).
pub fn message(
    object: &Map<String, Value>,
    api_version: &str,
    kind: &str,
) -> Result<Vec<u8>, ProtoError> {
    let schema = Schema::get();
    typed(schema, kind_type(schema, api_version, kind)?, object)
}

/// The message of `object` as the Go type `go_type`
/// (`k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta`): a type the
/// schema holds that is no kind of its own.
pub fn type_message(object: &Map<String, Value>, go_type: &str) -> Result<Vec<u8>, ProtoError> {
    let schema = Schema::get();
    let ty = schema
        .type_named(go_type)
        .ok_or_else(|| ProtoError::Encoding(format!("no type {go_type} in the schema")))?;
    typed(schema, ty, object)
}

/// `object` written as the message of type `ty`.
fn typed(schema: &Schema, ty: TypeId, object: &Map<String, Value>) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(512);
    Enc {
        schema,
        out: &mut out,
        depth: 0,
    }
    .object(ty, object)
    .map_err(finish)?;
    Ok(out)
}

/// The `k8s\0` envelope of `raw`, a message already written, as
/// `api_version`'s `kind` (a `PartialObjectMetadata` made of an
/// `ObjectMeta`'s bytes).
pub fn unknown(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + kind.len() + 16);
    out.extend_from_slice(MAGIC);
    let meta = open_len(&mut out, 1);
    put_bytes(&mut out, 1, api_version.as_bytes());
    put_bytes(&mut out, 2, kind.as_bytes());
    close_len(&mut out, meta);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

fn type_meta(object: &Map<String, Value>) -> Result<(&str, &str), ProtoError> {
    let text = |name: &str| match object.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.as_str()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(ProtoError::Value(format!("the object has no {name}")))
        }
        Some(other) => Err(ProtoError::Value(format!(
            "{name}: {} where a string belongs",
            json_type(other)
        ))),
    };
    Ok((text("apiVersion")?, text("kind")?))
}

fn kind_type(schema: &Schema, api_version: &str, kind: &str) -> Result<TypeId, ProtoError> {
    schema
        .kind(api_version, kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })
}

/// Errors carry their path as `.spec.containers[0].name: why` while they
/// rise; at the top the leading `.` (or `: ` of a top-level error) goes.
fn finish(e: ProtoError) -> ProtoError {
    match e {
        ProtoError::Value(m) => ProtoError::Value(
            m.strip_prefix('.')
                .or_else(|| m.strip_prefix(": "))
                .map(str::to_owned)
                .unwrap_or(m),
        ),
        e => e,
    }
}

/// `e` as met inside `seg` (`.name`, `[3]`, `["key"]`).
fn within(e: ProtoError, seg: impl FnOnce() -> String) -> ProtoError {
    match e {
        ProtoError::Value(m) => ProtoError::Value(format!("{}{m}", seg())),
        e => e,
    }
}

fn mismatch(v: &Value, wanted: &str) -> ProtoError {
    ProtoError::Value(format!(": {} where {wanted} belongs", json_type(v)))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `encoding/json`'s base64 for `[]byte`: the standard alphabet, padded;
/// like Go's `StdEncoding`, nonzero trailing bits are let through.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

struct Enc<'s, 'o> {
    schema: &'s Schema,
    out: &'o mut Vec<u8>,
    depth: usize,
}

impl Enc<'_, '_> {
    /// The fields of type `ty` read from `obj`, in ascending field number;
    /// an inlined struct (`json:",inline"`) with a field number is a
    /// nested message read from the same `obj`, one without (`TypeMeta`)
    /// is not on the wire.
    fn object(&mut self, ty: TypeId, obj: &Map<String, Value>) -> Result<(), ProtoError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ProtoError::Value(format!(
                ": nested deeper than {MAX_DEPTH}"
            )));
        }
        let def = &self.schema.types[ty];
        for (tag, &at) in def.by_tag.iter().enumerate() {
            if at == u16::MAX {
                continue;
            }
            let field = &def.fields[usize::from(at)];
            let tag = tag as u32;
            if field.inline {
                let Shape::Message(inner) = field.shape else {
                    return Err(ProtoError::Value(format!(
                        ": the inlined field {tag} of {RELEASE}'s schema is not a struct"
                    )));
                };
                let len = open_len(self.out, tag);
                self.object(inner, obj)?;
                close_len(self.out, len);
                continue;
            }
            let value = lookup(obj, &field.json).unwrap_or(&Value::Null);
            self.field(tag, &field.shape, value)
                .map_err(|e| within(e, || format!(".{}", field.json)))?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// Field `tag` of shape `shape` holding `v`.
    fn field(&mut self, tag: u32, shape: &Shape, v: &Value) -> Result<(), ProtoError> {
        match shape {
            Shape::String => put_bytes(self.out, tag, string(v)?.as_bytes()),
            Shape::Bool => {
                let b = match v {
                    Value::Null => false,
                    Value::Bool(b) => *b,
                    v => return Err(mismatch(v, "a boolean")),
                };
                put_key(self.out, tag, 0);
                self.out.push(u8::from(b));
            }
            Shape::Int32 => {
                let n = int(v, "an int32", i64::from(i32::MIN), i64::from(i32::MAX))?;
                put_key(self.out, tag, 0);
                put_varint(self.out, n as u64);
            }
            Shape::Int64 => {
                let n = int(v, "an int64", i64::MIN, i64::MAX)?;
                put_key(self.out, tag, 0);
                put_varint(self.out, n as u64);
            }
            Shape::Uint32 => {
                let n = uint(v, "a uint32", u64::from(u32::MAX))?;
                put_key(self.out, tag, 0);
                put_varint(self.out, n);
            }
            Shape::Uint64 => {
                let n = uint(v, "a uint64", u64::MAX)?;
                put_key(self.out, tag, 0);
                put_varint(self.out, n);
            }
            Shape::Float64 => {
                let f = match v {
                    Value::Null => 0.0,
                    Value::Number(n) => n.as_f64().ok_or_else(|| mismatch(v, "a float64"))?,
                    v => return Err(mismatch(v, "a float64")),
                };
                put_key(self.out, tag, 1);
                self.out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Shape::Bytes => match v {
                Value::Null => {}
                Value::String(s) => {
                    let bytes = BASE64.decode(s).map_err(|e| {
                        ProtoError::Value(format!(": bytes that are not base64 ({e})"))
                    })?;
                    put_bytes(self.out, tag, &bytes);
                }
                v => return Err(mismatch(v, "base64 bytes")),
            },
            Shape::Message(ty) => {
                let len = open_len(self.out, tag);
                match v {
                    Value::Null => self.object(*ty, empty())?,
                    Value::Object(obj) => self.object(*ty, obj)?,
                    v => return Err(mismatch(v, "an object")),
                }
                close_len(self.out, len);
            }
            Shape::Special(s) => {
                let len = open_len(self.out, tag);
                self.special(*s, v)?;
                close_len(self.out, len);
            }
            Shape::Ptr(elem) => {
                if !v.is_null() {
                    self.field(tag, elem, v)?;
                }
            }
            Shape::Slice(elem, wrapped) => match v {
                Value::Null => {}
                Value::Array(items) if *wrapped => {
                    if !items.is_empty() {
                        self.wrapped(tag, items)?;
                    }
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        self.field(tag, elem, item)
                            .map_err(|e| within(e, || format!("[{i}]")))?;
                    }
                }
                v => return Err(mismatch(v, "an array")),
            },
            Shape::Map(elem) => match v {
                Value::Null => {}
                Value::Object(map) => {
                    // Go sorts the keys; JSON the apiserver wrote has them
                    // sorted already, and then nothing is allocated.
                    if map.keys().is_sorted() {
                        for (key, value) in map {
                            self.entry(tag, elem, key, value)?;
                        }
                    } else {
                        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                        for (key, value) in entries {
                            self.entry(tag, elem, key, value)?;
                        }
                    }
                }
                v => return Err(mismatch(v, "an object")),
            },
        }
        Ok(())
    }

    /// A map entry `{key = 1, value = 2}` as field `tag`.
    fn entry(
        &mut self,
        tag: u32,
        elem: &Shape,
        key: &str,
        value: &Value,
    ) -> Result<(), ProtoError> {
        let len = open_len(self.out, tag);
        put_bytes(self.out, 1, key.as_bytes());
        match elem {
            // A named slice (ExtraValue) is a message, written even when
            // nil.
            Shape::Slice(_, true) => match value {
                Value::Null => {
                    put_bytes(self.out, 2, b"");
                    Ok(())
                }
                Value::Array(items) => self.wrapped(2, items),
                v => Err(mismatch(v, "an array")),
            },
            elem => self.field(2, elem, value),
        }
        .map_err(|e| within(e, || format!("[{key:?}]")))?;
        close_len(self.out, len);
        Ok(())
    }

    /// A named slice of strings (`ExtraValue`): a message of
    /// `repeated string items = 1`.
    fn wrapped(&mut self, tag: u32, items: &[Value]) -> Result<(), ProtoError> {
        let len = open_len(self.out, tag);
        for (i, item) in items.iter().enumerate() {
            let s = string(item).map_err(|e| within(e, || format!("[{i}]")))?;
            put_bytes(self.out, 1, s.as_bytes());
        }
        close_len(self.out, len);
        Ok(())
    }

    /// The body of a type with its own JSON, read as its `UnmarshalJSON`
    /// reads `v` (`null` included: a non-pointer field's is called with
    /// it) and written as its `MarshalToSizedBuffer` writes.
    fn special(&mut self, s: Special, v: &Value) -> Result<(), ProtoError> {
        match s {
            Special::Time | Special::MicroTime => {
                let micros = s == Special::MicroTime;
                let (seconds, nanos) = match v {
                    Value::Null => return Ok(()),
                    Value::String(text) => {
                        time::parse_rfc3339(text, micros).map_err(|e| within(e, || ": ".into()))?
                    }
                    v => return Err(mismatch(v, "a time")),
                };
                // The zero time is no bytes; Time keeps seconds only.
                if seconds == time::ZERO_TIME && nanos == 0 {
                    return Ok(());
                }
                put_key(self.out, 1, 0);
                put_varint(self.out, seconds as u64);
                put_key(self.out, 2, 0);
                put_varint(self.out, if micros { nanos as u64 } else { 0 });
            }
            Special::Duration => {
                let nanos = match v {
                    Value::String(text) => {
                        time::parse_duration(text).map_err(|e| within(e, || ": ".into()))?
                    }
                    v => return Err(mismatch(v, "a duration")),
                };
                put_key(self.out, 1, 0);
                put_varint(self.out, nanos as u64);
            }
            Special::Quantity => {
                let number;
                let text = match v {
                    Value::Null => "0",
                    Value::String(s) => s.as_str(),
                    Value::Number(n) => {
                        number = n.to_string();
                        number.as_str()
                    }
                    v => return Err(mismatch(v, "a quantity")),
                };
                if !quantity::is_quantity(text.trim().as_bytes()) {
                    return Err(ProtoError::Value(format!(": {text:?} is not a quantity")));
                }
                put_bytes(self.out, 1, text.as_bytes());
            }
            Special::IntOrString => {
                let (ty, int_val, str_val) = match v {
                    Value::Null => (0, 0, ""),
                    Value::String(s) => (1, 0, s.as_str()),
                    v @ Value::Number(_) => (
                        0,
                        int(v, "an int32", i64::from(i32::MIN), i64::from(i32::MAX))?,
                        "",
                    ),
                    v => return Err(mismatch(v, "an int or a string")),
                };
                put_key(self.out, 1, 0);
                put_varint(self.out, ty);
                put_key(self.out, 2, 0);
                put_varint(self.out, int_val as u64);
                put_bytes(self.out, 3, str_val.as_bytes());
            }
            Special::RawExtension | Special::Json | Special::FieldsV1 => {
                if !v.is_null() {
                    let len = open_len(self.out, 1);
                    gojson::write(self.out, v)
                        .map_err(|e| ProtoError::Value(format!(": embedded {e}")))?;
                    close_len(self.out, len);
                }
            }
            Special::PropsOrBool => match v {
                Value::Bool(b) => {
                    put_key(self.out, 1, 0);
                    self.out.push(u8::from(*b));
                }
                Value::Object(_) => {
                    put_key(self.out, 1, 0);
                    self.out.push(1);
                    self.props(2, v)?;
                }
                v => return Err(mismatch(v, "a boolean or a JSON schema")),
            },
            Special::PropsOrArray => match v {
                Value::Object(_) => self.props(1, v)?,
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        self.props(2, item)
                            .map_err(|e| within(e, || format!("[{i}]")))?;
                    }
                }
                // UnmarshalJSON leaves anything else the zero value.
                _ => {}
            },
            Special::PropsOrStringArray => match v {
                Value::Object(_) => self.props(1, v)?,
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let s = string(item).map_err(|e| within(e, || format!("[{i}]")))?;
                        put_bytes(self.out, 2, s.as_bytes());
                    }
                }
                _ => {}
            },
        }
        Ok(())
    }

    /// A `JSONSchemaProps` as field `tag`.
    fn props(&mut self, tag: u32, v: &Value) -> Result<(), ProtoError> {
        let ty = self
            .schema
            .type_named("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
            .ok_or_else(|| ProtoError::Value(": no JSONSchemaProps in the schema".into()))?;
        self.field(tag, &Shape::Message(ty), v)
    }
}

/// `obj[name]`: for the few keys most objects have, comparing them is
/// cheaper than hashing `name`.
fn lookup<'v>(obj: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    if obj.len() <= 16 {
        obj.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
    } else {
        obj.get(name)
    }
}

/// The JSON object of a Go zero struct.
fn empty() -> &'static Map<String, Value> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

/// A Go string: `null` is `""`.
fn string(v: &Value) -> Result<&str, ProtoError> {
    match v {
        Value::Null => Ok(""),
        Value::String(s) => Ok(s),
        v => Err(mismatch(v, "a string")),
    }
}

/// A Go signed integer in `lo..=hi`: `null` is 0; a fraction, an exponent
/// or an overflow is an error, as `strconv.ParseInt` makes it.
fn int(v: &Value, wanted: &str, lo: i64, hi: i64) -> Result<i64, ProtoError> {
    match v {
        Value::Null => Ok(0),
        Value::Number(n) => match n.as_i64() {
            Some(i) if (lo..=hi).contains(&i) => Ok(i),
            _ => Err(ProtoError::Value(format!(": {n} does not fit {wanted}"))),
        },
        v => Err(mismatch(v, wanted)),
    }
}

/// A Go unsigned integer up to `hi`.
fn uint(v: &Value, wanted: &str, hi: u64) -> Result<u64, ProtoError> {
    match v {
        Value::Null => Ok(0),
        Value::Number(n) => match n.as_u64() {
            Some(u) if u <= hi => Ok(u),
            _ => Err(ProtoError::Value(format!(": {n} does not fit {wanted}"))),
        },
        v => Err(mismatch(v, wanted)),
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
