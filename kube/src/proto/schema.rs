//! The schema of the built-in kinds: for each Go type of one Kubernetes
//! release, its fields' protobuf numbers, JSON names, `omitempty` and
//! shapes. `kube/schema/gen` writes it by reflection over the real
//! `k8s.io/api` types (nothing here is typed by hand); it is read once, on
//! first use, and indexed.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// The release the schema was generated from (`k8s.io/api`'s version).
pub const RELEASE: &str = "v0.37.2";

static SOURCE: &str = include_str!("../../schema/k8s-v1.37.2.json");

#[derive(Deserialize)]
struct Doc {
    release: String,
    kinds: HashMap<String, String>,
    types: HashMap<String, RawType>,
}

#[derive(Deserialize)]
struct RawType {
    fields: Option<Vec<RawField>>,
}

#[derive(Deserialize)]
struct RawField {
    json: String,
    #[serde(default)]
    tag: u32,
    #[serde(default)]
    omitempty: bool,
    #[serde(default)]
    omitzero: bool,
    #[serde(default)]
    inline: bool,
    shape: RawShape,
}

#[derive(Deserialize)]
struct RawShape {
    kind: String,
    #[serde(rename = "type", default)]
    ty: Option<String>,
    elem: Option<Box<RawShape>>,
    #[serde(default)]
    wrapped: bool,
}

/// A type's index in [`Schema::types`].
pub(crate) type TypeId = usize;

/// The Go types whose JSON is their own (`MarshalJSON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Time,
    MicroTime,
    Duration,
    FieldsV1,
    Quantity,
    IntOrString,
    RawExtension,
    Json,
    PropsOrBool,
    PropsOrArray,
    PropsOrStringArray,
}

/// A Go type as far as the wire and the JSON differ on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    String,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Float64,
    Bytes,
    Message(TypeId),
    Special(Special),
    Ptr(Box<Shape>),
    /// A slice; `true` when it is a named slice type wrapped in a message
    /// (`repeated items = 1`) on the wire.
    Slice(Box<Shape>, bool),
    /// A map keyed by strings.
    Map(Box<Shape>),
}

/// One Go struct field.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) json: String,
    pub(crate) omitempty: bool,
    pub(crate) omitzero: bool,
    pub(crate) inline: bool,
    pub(crate) shape: Shape,
}

/// One Go struct type.
#[derive(Debug, Clone, Default)]
pub(crate) struct Type {
    pub(crate) fields: Vec<Field>,
    /// The field index of each wire number; `u16::MAX` for none.
    pub(crate) by_tag: Vec<u16>,
}

impl Type {
    pub(crate) fn field_of(&self, tag: u32) -> Option<usize> {
        match self.by_tag.get(tag as usize) {
            Some(&i) if i != u16::MAX => Some(usize::from(i)),
            _ => None,
        }
    }
}

/// The whole schema, indexed.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) types: Vec<Type>,
    /// `apiVersion/Kind` (`v1/Pod`, `apps/v1/Deployment`) to its type.
    kinds: HashMap<String, TypeId>,
    /// Go type names (`k8s.io/api/core/v1.Pod`) to their types.
    names: HashMap<String, TypeId>,
}

impl Schema {
    /// The schema compiled into this crate.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema::parse(SOURCE).expect("the compiled-in schema is valid"))
    }

    /// The type of `kind` in `api_version`.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<TypeId> {
        self.kinds.get(&format!("{api_version}/{kind}")).copied()
    }

    /// The type of a Go type name.
    pub(crate) fn type_named(&self, name: &str) -> Option<TypeId> {
        self.names.get(name).copied()
    }

    fn parse(source: &str) -> Result<Schema, String> {
        let doc: Doc = serde_json::from_str(source).map_err(|e| e.to_string())?;
        let mut names: Vec<&String> = doc.types.keys().collect();
        names.sort();
        let ids: HashMap<&str, TypeId> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut types = Vec::with_capacity(names.len());
        for name in &names {
            let raw = &doc.types[*name];
            let mut ty = Type::default();
            for f in raw.fields.iter().flatten() {
                let shape = shape(&f.shape, &ids).map_err(|e| format!("{name}.{}: {e}", f.json))?;
                if f.tag > 0 {
                    let at = f.tag as usize;
                    if at >= 4096 {
                        return Err(format!("{name}.{}: wire number {at}", f.json));
                    }
                    if ty.by_tag.len() <= at {
                        ty.by_tag.resize(at + 1, u16::MAX);
                    }
                    ty.by_tag[at] = ty.fields.len() as u16;
                }
                ty.fields.push(Field {
                    json: f.json.clone(),
                    omitempty: f.omitempty,
                    omitzero: f.omitzero,
                    inline: f.inline,
                    shape,
                });
            }
            types.push(ty);
        }
        let mut kinds = HashMap::new();
        for (kind, ty) in &doc.kinds {
            let id = ids
                .get(ty.as_str())
                .ok_or_else(|| format!("{kind}: no type {ty}"))?;
            kinds.insert(kind.clone(), *id);
        }
        let names = ids.iter().map(|(n, i)| ((*n).to_owned(), *i)).collect();
        if doc.release != RELEASE {
            return Err(format!("the schema is of {}, not {RELEASE}", doc.release));
        }
        if doc.release != RELEASE {
            return Err(format!("the schema is of {}, not {RELEASE}", doc.release));
        }
        Ok(Schema {
            types,
            kinds,
            names,
        })
    }
}

fn shape(raw: &RawShape, ids: &HashMap<&str, TypeId>) -> Result<Shape, String> {
    let elem = || -> Result<Box<Shape>, String> {
        Ok(Box::new(shape(
            raw.elem.as_deref().ok_or("no element")?,
            ids,
        )?))
    };
    let ty = || {
        raw.ty
            .as_deref()
            .ok_or_else(|| format!("a {} with no type", raw.kind))
    };
    Ok(match raw.kind.as_str() {
        "string" => Shape::String,
        "bool" => Shape::Bool,
        "int32" => Shape::Int32,
        "int64" => Shape::Int64,
        "uint32" => Shape::Uint32,
        "uint64" => Shape::Uint64,
        "float64" => Shape::Float64,
        "bytes" => Shape::Bytes,
        "ptr" => Shape::Ptr(elem()?),
        "slice" => Shape::Slice(elem()?, raw.wrapped),
        "map" => Shape::Map(elem()?),
        "message" => Shape::Message(
            *ids.get(ty()?)
                .ok_or_else(|| format!("no type {:?}", raw.ty))?,
        ),
        "special" => Shape::Special(match ty()? {
            "Time" => Special::Time,
            "MicroTime" => Special::MicroTime,
            "Duration" => Special::Duration,
            "FieldsV1" => Special::FieldsV1,
            "Quantity" => Special::Quantity,
            "IntOrString" => Special::IntOrString,
            "RawExtension" => Special::RawExtension,
            "JSON" => Special::Json,
            "JSONSchemaPropsOrBool" => Special::PropsOrBool,
            "JSONSchemaPropsOrArray" => Special::PropsOrArray,
            "JSONSchemaPropsOrStringArray" => Special::PropsOrStringArray,
            other => return Err(format!("special type {other}")),
        }),
        other => return Err(format!("shape {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_schema_parses_and_knows_the_kinds_a_cluster_keeps() {
        let s = Schema::get();
        for (v, k) in [
            ("v1", "Pod"),
            ("v1", "Node"),
            ("v1", "Namespace"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "Service"),
            ("v1", "Endpoints"),
            ("discovery.k8s.io/v1", "EndpointSlice"),
            ("v1", "Event"),
            ("coordination.k8s.io/v1", "Lease"),
            ("v1", "ServiceAccount"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "ReplicaSet"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "StatefulSet"),
            ("batch/v1", "Job"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ] {
            assert!(s.kind(v, k).is_some(), "{v}/{k}");
        }
        let pod = &s.types[s.kind("v1", "Pod").unwrap()];
        let meta = &pod.fields[pod.field_of(1).unwrap()];
        assert_eq!((meta.json.as_str(), meta.omitempty), ("metadata", true));
        assert!(s.kinds.len() > 100);
    }
}
