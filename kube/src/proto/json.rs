//! A stored protobuf message to the JSON the apiserver serves for it.
//!
//! The apiserver decodes a stored value with gogo-generated code into Go
//! structs and prints them with `encoding/json`; this walks the same bytes
//! with the schema and applies both sets of rules:
//!
//! - the wire: a field absent is its Go zero value (a nil pointer, slice,
//!   map or `[]byte`, `""`, `0`, `false`, a zero struct); a scalar's last
//!   occurrence wins; a singular message's occurrences merge (but for a
//!   time's, which its own `Unmarshal` reads afresh: the last wins); a present
//!   empty `bytes` is `[]byte{}`, not nil; repeated scalars may be packed;
//!   unknown field numbers are skipped;
//! - the JSON: fields in declaration order, anonymous structs inlined,
//!   `omitempty` (false, 0, `""`, nil, empty slice or map; never a struct),
//!   `omitzero` (the times), nil as `null`, map keys sorted, `[]byte` as
//!   base64, and the types with their own `MarshalJSON`: times, durations,
//!   quantities, int-or-strings, raw JSON and the JSON schema unions;
//! - what the apiserver would refuse is an error, not a guess: a quantity
//!   `resource.ParseQuantity` refuses, an IntOrString of no type, embedded
//!   JSON that is not JSON; so is a time outside years 0–9999, which Go
//!   prints but cannot parse back.

use base64::Engine;
use serde_json::{Map, Number, Value};

use super::error::ProtoError;
use super::quantity;
use super::schema::{Schema, Shape, Special, TypeId};
use super::time;
use super::wire::{Fields, Wire};

/// Deeper than any built-in kind nests (a CRD's schema is the deepest).
const MAX_DEPTH: usize = 100;

/// The JSON object of a message of type `ty`.
pub(crate) fn message(
    schema: &Schema,
    ty: TypeId,
    bytes: &[u8],
) -> Result<Map<String, Value>, ProtoError> {
    let mut out = Map::new();
    Walk { schema, depth: 0 }.object(ty, &[bytes], &mut out)?;
    Ok(out)
}

struct Walk<'s> {
    schema: &'s Schema,
    depth: usize,
}

impl Walk<'_> {
    /// Appends the fields of type `ty`, whose encoding is the
    /// concatenation of `parts` (a message's occurrences merge), to `out`.
    fn object(
        &mut self,
        ty: TypeId,
        parts: &[&[u8]],
        out: &mut Map<String, Value>,
    ) -> Result<(), ProtoError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ProtoError::Value(format!("nested deeper than {MAX_DEPTH}")));
        }
        let def = &self.schema.types[ty];
        let mut seen: Vec<Vec<Wire<'_>>> = vec![Vec::new(); def.fields.len()];
        for part in parts {
            for item in Fields::new(part) {
                let (number, value) = item?;
                if let Some(i) = def.field_of(number) {
                    seen[i].push(value);
                }
            }
        }
        for (field, occ) in def.fields.iter().zip(&seen) {
            if field.inline {
                let Shape::Message(inner) = field.shape else {
                    return Err(ProtoError::Value(format!(
                        "inlined {} is not a struct",
                        field.json
                    )));
                };
                let parts = bytes_of(occ)?;
                self.object(inner, &parts, out)?;
                continue;
            }
            let value = self.value(&field.shape, occ)?;
            let omit = (field.omitempty && empty(&field.shape, &value))
                || (field.omitzero && value.is_null());
            if !omit {
                out.insert(field.json.clone(), value);
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// The Go value of `shape` whose occurrences on the wire are `occ`,
    /// as JSON.
    fn value(&mut self, shape: &Shape, occ: &[Wire<'_>]) -> Result<Value, ProtoError> {
        Ok(match shape {
            Shape::String => Value::String(match occ.last() {
                // Go keeps the bytes; encoding/json prints invalid UTF-8 as U+FFFD.
                Some(w) => String::from_utf8_lossy(bytes(w)?).into_owned(),
                None => String::new(),
            }),
            Shape::Bool => Value::Bool(last_varint(occ)? != 0),
            Shape::Int32 => Value::from(last_varint(occ)? as i32),
            Shape::Int64 => Value::from(last_varint(occ)? as i64),
            Shape::Uint32 => Value::from(last_varint(occ)? as u32),
            Shape::Uint64 => Value::from(last_varint(occ)?),
            Shape::Float64 => float(match occ.last() {
                None => 0.0,
                Some(Wire::Fixed64(bits)) => f64::from_bits(*bits),
                Some(w) => return Err(wire_type("a double", w)),
            })?,
            Shape::Bytes => match occ.last() {
                None => Value::Null,
                Some(w) => {
                    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes(w)?))
                }
            },
            Shape::Message(ty) => {
                let mut out = Map::new();
                self.object(*ty, &bytes_of(occ)?, &mut out)?;
                Value::Object(out)
            }
            Shape::Special(s) => self.special(*s, &bytes_of(occ)?)?,
            Shape::Ptr(elem) => {
                if occ.is_empty() {
                    Value::Null
                } else {
                    self.value(elem, occ)?
                }
            }
            Shape::Slice(elem, wrapped) => {
                let items = if *wrapped {
                    self.unwrap(occ)?
                } else {
                    self.items(elem, occ)?
                };
                if items.is_empty() {
                    Value::Null
                } else {
                    Value::Array(items)
                }
            }
            Shape::Map(elem) => {
                if occ.is_empty() {
                    return Ok(Value::Null);
                }
                let mut entries: Vec<(String, Value)> = Vec::with_capacity(occ.len());
                for w in occ {
                    let (mut key, mut val) = (Vec::new(), Vec::new());
                    for item in Fields::new(bytes(w)?) {
                        match item? {
                            (1, k) => key.push(k),
                            (2, v) => val.push(v),
                            _ => {}
                        }
                    }
                    let key = match key.last() {
                        Some(k) => String::from_utf8_lossy(bytes(k)?).into_owned(),
                        None => String::new(),
                    };
                    entries.push((key, self.value(elem, &val)?));
                }
                // encoding/json sorts keys bytewise; a repeated key's last value wins.
                entries.reverse();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                entries.dedup_by(|later, first| later.0 == first.0);
                Value::Object(entries.into_iter().collect())
            }
        })
    }

    /// A slice's elements: each occurrence one element, packed scalars
    /// unpacked.
    fn items(&mut self, elem: &Shape, occ: &[Wire<'_>]) -> Result<Vec<Value>, ProtoError> {
        let mut items = Vec::with_capacity(occ.len());
        for w in occ {
            match (elem, w) {
                (
                    Shape::Bool | Shape::Int32 | Shape::Int64 | Shape::Uint32 | Shape::Uint64,
                    Wire::Bytes(run),
                ) => {
                    let mut run: &[u8] = run;
                    while !run.is_empty() {
                        let v = super::wire::varint(&mut run)?;
                        items.push(self.value(elem, &[Wire::Varint(v)])?);
                    }
                }
                (Shape::Float64, Wire::Bytes(run)) => {
                    if run.len() % 8 != 0 {
                        return Err(ProtoError::Truncated);
                    }
                    for c in run.chunks_exact(8) {
                        let bits = u64::from_le_bytes(c.try_into().unwrap_or_default());
                        items.push(self.value(elem, &[Wire::Fixed64(bits)])?);
                    }
                }
                _ => items.push(self.value(elem, std::slice::from_ref(w))?),
            }
        }
        Ok(items)
    }

    /// A named slice type's elements: `repeated items = 1` of a message
    /// (`ExtraValue`, a list of strings).
    fn unwrap(&mut self, occ: &[Wire<'_>]) -> Result<Vec<Value>, ProtoError> {
        let mut items = Vec::new();
        for part in bytes_of(occ)? {
            for item in Fields::new(part) {
                if let (1, w) = item? {
                    items.push(Value::String(
                        String::from_utf8_lossy(bytes(&w)?).into_owned(),
                    ));
                }
            }
        }
        Ok(items)
    }

    fn special(&mut self, s: Special, parts: &[&[u8]]) -> Result<Value, ProtoError> {
        let mut f: [Vec<Wire<'_>>; 4] = Default::default();
        for part in parts {
            for item in Fields::new(part) {
                let (n, w) = item?;
                if (1..=3).contains(&n) {
                    f[n as usize].push(w);
                }
            }
        }
        let props = |walk: &mut Self, occ: &[Wire<'_>]| -> Result<Value, ProtoError> {
            let ty = walk
                .props_type()
                .ok_or_else(|| ProtoError::Value("no JSONSchemaProps in the schema".into()))?;
            walk.value(&Shape::Message(ty), occ)
        };
        Ok(match s {
            Special::Time | Special::MicroTime => {
                // Each occurrence is read afresh (time_proto.go
                // `Time.Unmarshal`: no bytes is the zero time, else a new
                // Timestamp): the last one is the value.
                let Some(last) = parts.last().filter(|p| !p.is_empty()) else {
                    return Ok(Value::Null);
                };
                let (mut secs, mut nanos) = (Vec::new(), Vec::new());
                for item in Fields::new(last) {
                    match item? {
                        (1, w) => secs.push(w),
                        (2, w) => nanos.push(w),
                        _ => {}
                    }
                }
                let micros = s == Special::MicroTime;
                let seconds = last_varint(&secs)? as i64;
                // `time.Unix(seconds, nanos)`: Time drops the nanoseconds,
                // MicroTime truncates them to microseconds (toward zero,
                // `Duration.Truncate`); out of range, they move the second.
                let nanos = if micros {
                    let n = i64::from(last_varint(&nanos)? as i32);
                    n - n % 1000
                } else {
                    last_varint(&nanos)?;
                    0
                };
                let seconds = seconds.saturating_add(nanos.div_euclid(1_000_000_000));
                let nanos = nanos.rem_euclid(1_000_000_000) as i32;
                // Go's zero time (`IsZero`) marshals to `null`.
                if seconds == time::ZERO_TIME && nanos == 0 {
                    return Ok(Value::Null);
                }
                Value::String(time::rfc3339(seconds, nanos, micros)?)
            }
            Special::Duration => Value::String(time::duration(last_varint(&f[1])? as i64)),
            Special::Quantity => match f[1].last() {
                // Quantity.Unmarshal parses it: an error fails the object.
                Some(w) => {
                    let text = bytes(w)?;
                    if !quantity::is_quantity(text) {
                        return Err(ProtoError::Value(format!(
                            "the quantity {:?}, which resource.ParseQuantity refuses",
                            String::from_utf8_lossy(text)
                        )));
                    }
                    Value::String(String::from_utf8_lossy(text).into_owned())
                }
                None => Value::String("0".into()),
            },
            Special::IntOrString => match last_varint(&f[1])? {
                0 => Value::from(last_varint(&f[2])? as i32),
                1 => Value::String(match f[3].last() {
                    Some(w) => String::from_utf8_lossy(bytes(w)?).into_owned(),
                    None => String::new(),
                }),
                t => return Err(ProtoError::Value(format!("IntOrString of type {t}"))),
            },
            Special::RawExtension | Special::Json | Special::FieldsV1 => match f[1].last() {
                None => Value::Null,
                Some(w) => {
                    let raw = bytes(w)?;
                    if raw.is_empty() {
                        Value::Null
                    } else if s == Special::FieldsV1
                        && !matches!(raw[0], b'{' | b'n' | b' ' | b'\t' | b'\r' | b'\n')
                    {
                        return Err(ProtoError::Unsupported(
                            "managedFields encoded as CBOR".into(),
                        ));
                    } else {
                        serde_json::from_slice(raw)
                            .map_err(|e| ProtoError::Value(format!("embedded JSON: {e}")))?
                    }
                }
            },
            Special::PropsOrBool => {
                if f[2].is_empty() {
                    Value::Bool(last_varint(&f[1])? != 0)
                } else {
                    props(self, &f[2])?
                }
            }
            Special::PropsOrArray => {
                if f[2].is_empty() {
                    if f[1].is_empty() {
                        Value::Null
                    } else {
                        props(self, &f[1])?
                    }
                } else {
                    let mut items = Vec::with_capacity(f[2].len());
                    for w in &f[2] {
                        items.push(props(self, std::slice::from_ref(w))?);
                    }
                    Value::Array(items)
                }
            }
            Special::PropsOrStringArray => {
                if !f[2].is_empty() {
                    let mut items = Vec::with_capacity(f[2].len());
                    for w in &f[2] {
                        items.push(Value::String(
                            String::from_utf8_lossy(bytes(w)?).into_owned(),
                        ));
                    }
                    Value::Array(items)
                } else if !f[1].is_empty() {
                    props(self, &f[1])?
                } else {
                    Value::Null
                }
            }
        })
    }

    fn props_type(&self) -> Option<TypeId> {
        self.schema
            .type_named("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
    }
}

/// `omitempty`: false, 0, `""`, nil, an empty slice or map; a struct
/// (a message or a type with its own JSON) never.
fn empty(shape: &Shape, value: &Value) -> bool {
    match shape {
        Shape::Message(_) | Shape::Special(_) => false,
        Shape::Ptr(_) => value.is_null(),
        _ => match value {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
        },
    }
}

fn float(f: f64) -> Result<Value, ProtoError> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| ProtoError::Value(format!("the float {f}, which JSON cannot hold")))
}

fn bytes<'a>(w: &Wire<'a>) -> Result<&'a [u8], ProtoError> {
    match w {
        Wire::Bytes(b) => Ok(b),
        w => Err(wire_type("length-delimited", w)),
    }
}

fn bytes_of<'a>(occ: &[Wire<'a>]) -> Result<Vec<&'a [u8]>, ProtoError> {
    occ.iter().map(bytes).collect()
}

fn last_varint(occ: &[Wire<'_>]) -> Result<u64, ProtoError> {
    match occ.last() {
        None => Ok(0),
        Some(Wire::Varint(v)) => Ok(*v),
        Some(w) => Err(wire_type("a varint", w)),
    }
}

fn wire_type(wanted: &str, got: &Wire<'_>) -> ProtoError {
    ProtoError::Wire(format!("{wanted} expected, got {got:?}"))
}
