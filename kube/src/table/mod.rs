//! `meta.k8s.io/v1` `Table`s, for clients that ask for them (`kubectl get`
//! sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`),
//! with the columns and cells the real apiserver gives each kind:
//!
//! - the built-in kinds as `k8s.io/kubernetes` `pkg/printers/internalversion`
//!   prints them (`AddHandlers`' column definitions, which the `columns`
//!   module reads from the schema generated from the real apiserver,
//!   `kube/schema/served-v1.37.2.json`, and its `print*` functions, ported
//!   here), every column included, `-o wide`'s (priority 1) too, as
//!   the apiserver's `TableConvertor` always asks for them: the `core`,
//!   `core_legacy`, `pod`, `service`, `apps`, `revision`, `hpa`,
//!   `batch_net`, `networking`, `storage`, `csi`, `node`, `dra`,
//!   `flowcontrol`, `admission`, `certificates` and `rbac` modules (a list
//!   of `StorageClass`es marks its default class, as
//!   `printStorageClassList` does, and a list of `FlowSchema`s is printed
//!   in matching order: see [`list_table_at`]);
//! - `Role`, `ClusterRole`, `LimitRange` and `CSIStorageCapacity` with the
//!   apiserver's default convertor (`NAME`, `CREATED AT`), as their storage
//!   has no printer;
//! - `APIService` as kube-aggregator's convertor prints it, and
//!   `StorageVersionMigration`: the `apiservice` module;
//! - `CustomResourceDefinition`s as apiextensions' CRD convertor prints
//!   them, and custom resources with their CRD's `additionalPrinterColumns`
//!   ([`CrdColumns`], given with [`Printer::custom`]): the `crd` module.
//!
//! A kind Herald has no printer for is printed as a custom resource whose
//! CRD declares no columns (`NAME`, `AGE`).
//!
//! Each row embeds its object as the request's `includeObject` asks
//! ([`IncludeObject`], [`Printer::including`]): its metadata as a
//! `PartialObjectMetadata` (the default), the whole object with its
//! `apiVersion` and `kind`, or null.
//!
//! Ages are computed when the table is built, as the apiserver computes
//! them when it answers; [`table_at`] takes that "now".
//!
//! A table row is built from the object's JSON for each connection that
//! asks for tables (a person's `kubectl`), so unlike the plain JSON it is
//! not encoded once per change; clients that ask for plain JSON (every
//! controller and client library) never pay for it.

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::info::ResourceInfo;
use crate::status::ApiError;

mod admission;
mod apiservice;
mod apps;
mod batch_net;
mod cells;
mod certificates;
mod columns;
mod core;
mod core_legacy;
mod crd;
mod csi;
mod dra;
mod events;
mod flowcontrol;
mod hpa;
mod include;
mod jsonpath;
mod networking;
mod node;
mod pod;
mod rbac;
mod revision;
mod service;
mod storage;
mod time;

pub use crd::{CrdColumn, CrdColumns};
pub use include::IncludeObject;
pub use time::{micro_time, unix_seconds};

use cells::{BuiltIn, Row};

/// The `Content-Type` of a table.
pub const CONTENT_TYPE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// Whether an `Accept` header asks for a `meta.k8s.io/v1` table.
pub fn wanted(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|media| {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            params.contains(&"as=Table")
                && params.contains(&"g=meta.k8s.io")
                && params.contains(&"v=v1")
        })
    })
}

/// Every built-in printer, by kind.
fn built_ins() -> impl Iterator<Item = &'static BuiltIn> {
    core::PRINTERS
        .iter()
        .chain(pod::PRINTERS)
        .chain(service::PRINTERS)
        .chain(apps::PRINTERS)
        .chain(rbac::PRINTERS)
        .chain(crd::PRINTERS)
        .chain(batch_net::PRINTERS)
        .chain(storage::PRINTERS)
        .chain(core_legacy::PRINTERS)
        .chain(revision::PRINTERS)
        .chain(hpa::PRINTERS)
        .chain(networking::PRINTERS)
        .chain(csi::PRINTERS)
        .chain(node::PRINTERS)
        .chain(dra::PRINTERS)
        .chain(flowcontrol::PRINTERS)
        .chain(admission::PRINTERS)
        .chain(certificates::PRINTERS)
        .chain(apiservice::PRINTERS)
}

/// A list printer: the rows of a list's items, at the given time.
type ListRows = fn(&[Value], time::Nanos) -> Vec<Row>;

/// The built-in kinds whose list printer differs from printing each item
/// alone: their list printers.
fn list_rows(kind: &str) -> Option<ListRows> {
    match kind {
        "StorageClass" => Some(storage::storage_class_list),
        _ => None,
    }
}

/// A list's order: for each row, the index of its object.
type ListOrder = fn(&[Value]) -> Vec<usize>;

/// The order a list's rows are printed in, for the built-in kinds whose
/// list printer sorts them: for each row, its object's index.
fn list_order(kind: &str) -> Option<ListOrder> {
    match kind {
        "FlowSchema" => Some(flowcontrol::flow_schema_order),
        _ => None,
    }
}

/// How a kind's objects are printed: a built-in kind's printer, or a
/// custom resource's CRD columns; and what each row embeds of its object
/// ([`Printer::including`]).
#[derive(Debug, Clone)]
pub struct Printer(Inner, Embed);

/// What a printer's rows embed of their objects: the `includeObject`
/// policy, and the `apiVersion` and `kind` a whole object is given when
/// its JSON lacks them.
#[derive(Debug, Clone, Default)]
struct Embed {
    include: IncludeObject,
    type_meta: Option<(String, String)>,
}

#[derive(Debug, Clone)]
enum Inner {
    BuiltIn(&'static BuiltIn),
    Custom(CrdColumns),
}

impl Printer {
    /// The printer of the built-in kind `kind` (`Pod`, `Deployment`,
    /// `ClusterRole`, ...), or, for a kind Herald has no printer for, a
    /// custom resource's whose CRD declares no columns (`NAME`, `AGE`).
    pub fn for_kind(kind: &str) -> Printer {
        Printer::built_in(kind).unwrap_or_else(|| Printer::custom(CrdColumns::default()))
    }

    /// The printer of the built-in kind `kind`, if Herald has one.
    pub fn built_in(kind: &str) -> Option<Printer> {
        built_ins()
            .find(|p| p.kind == kind)
            .map(|p| Printer(Inner::BuiltIn(p), Embed::default()))
    }

    /// The printer of a custom resource with its CRD version's columns.
    pub fn custom(columns: CrdColumns) -> Printer {
        Printer(Inner::Custom(columns), Embed::default())
    }

    /// The same printer, its rows embedding what `include` asks for
    /// (the default: [`IncludeObject::Metadata`]); a whole object
    /// ([`IncludeObject::Object`]) with `api_version` and `kind`, as the
    /// apiserver converts it to the version asked for.
    pub fn including(&self, include: IncludeObject, api_version: &str, kind: &str) -> Printer {
        Printer(
            self.0.clone(),
            Embed {
                include,
                type_meta: Some((api_version.to_owned(), kind.to_owned())),
            },
        )
    }

    /// The printer of a table request for `info`'s objects: this one,
    /// embedding what the request's `includeObject` (`include_object`)
    /// asks for, or the apiserver's 400 for a value it does not know.
    pub fn for_request(
        &self,
        include_object: Option<&str>,
        info: &ResourceInfo,
    ) -> Result<Printer, ApiError> {
        let include = IncludeObject::parse(include_object).map_err(ApiError::bad_request)?;
        Ok(self.including(include, &info.api_version(), &info.kind))
    }

    /// The column definitions' JSON.
    pub fn columns(&self) -> Value {
        match &self.0 {
            Inner::BuiltIn(p) => columns::of(p.group, p.kind)
                .cloned()
                .unwrap_or_else(|| Value::Array(Vec::new())),
            Inner::Custom(c) => c.definitions(),
        }
    }

    /// Whether it is the apiserver's default table convertor
    /// (`rest.NewDefaultTableConvertor`: `Name` and `Created At`, for the
    /// kinds with no printer), whose rows are `null`, not `[]`, when there
    /// are none (it appends to a nil slice; the printers and the custom
    /// resources' convertor make theirs).
    fn default_convertor(&self) -> bool {
        let Inner::BuiltIn(_) = &self.0 else {
            return false;
        };
        let columns = self.columns();
        let names: Vec<&str> = columns
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        names == ["Name", "Created At"]
    }

    /// One object's row: its cells and conditions, at `now`.
    fn row(&self, object: &Value, now: time::Nanos) -> Row {
        match &self.0 {
            Inner::BuiltIn(p) => (p.row)(object, now),
            Inner::Custom(c) => c.row(object, now).into(),
        }
    }

    fn kind(&self) -> Option<&'static str> {
        match &self.0 {
            Inner::BuiltIn(p) => Some(p.kind),
            Inner::Custom(_) => None,
        }
    }
}

/// The row's `object`, as `embed` asks: null, the whole object with its
/// `apiVersion` and `kind`, or its metadata (the default).
fn embedded(embed: &Embed, kind: Option<&str>, object: &Value) -> Value {
    match embed.include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => row_object(kind, object),
        IncludeObject::Object => {
            let mut whole = object.clone();
            if let (Some(map), Some((api_version, kind))) =
                (whole.as_object_mut(), &embed.type_meta)
            {
                // The apiserver's encoder writes `kind` and `apiVersion`
                // first.
                let mut typed = Map::new();
                typed.insert("kind".into(), Value::from(kind.as_str()));
                typed.insert("apiVersion".into(), Value::from(api_version.as_str()));
                for (k, v) in std::mem::take(map) {
                    if k != "kind" && k != "apiVersion" {
                        typed.insert(k, v);
                    }
                }
                *map = typed;
            }
            whole
        }
    }
}

/// The object's metadata as a `PartialObjectMetadata`
/// (`includeObject=Metadata`, the default), as the apiserver converts its
/// internal object, which for a DaemonSet has no
/// `deprecated.daemonset.template.generation` annotation (apps/v1 adds it
/// from the internal `templateGeneration`).
fn row_object(kind: Option<&str>, object: &Value) -> Value {
    let mut metadata = object
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(m) = metadata.as_object_mut() {
        if kind == Some("DaemonSet") {
            crate::partial::strip_versioned("DaemonSet", m);
        }
        crate::read::in_meta_order(m);
    }
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
    })
}

/// A table of `objects` (their JSON) of `info.kind`, printed by
/// [`Printer::for_kind`] now, with the list's metadata; the column
/// definitions unless `headers` is false (a watch sends them with its first
/// event only).
pub fn table<'a>(
    info: &ResourceInfo,
    list_metadata: Value,
    objects: impl Iterator<Item = &'a [u8]>,
    headers: bool,
) -> Vec<u8> {
    table_at(
        &Printer::for_kind(&info.kind),
        list_metadata,
        objects,
        headers,
        SystemTime::now(),
    )
}

/// A table of `objects` (their JSON) printed by `printer`, with ages as
/// they are at `now`, each object printed alone (a get's, a watch event's);
/// otherwise as [`table`].
pub fn table_at<'a>(
    printer: &Printer,
    list_metadata: Value,
    objects: impl Iterator<Item = &'a [u8]>,
    headers: bool,
    now: SystemTime,
) -> Vec<u8> {
    build(printer, list_metadata, objects, headers, now, false)
}

/// A table of a list's `objects`, as [`table_at`], but printed as the
/// apiserver prints a list: for some kinds a row depends on the other
/// items (a list of `StorageClass`es marks its effective default class).
pub fn list_table_at<'a>(
    printer: &Printer,
    list_metadata: Value,
    objects: impl Iterator<Item = &'a [u8]>,
    headers: bool,
    now: SystemTime,
) -> Vec<u8> {
    build(printer, list_metadata, objects, headers, now, true)
}

fn build<'a>(
    printer: &Printer,
    list_metadata: Value,
    objects: impl Iterator<Item = &'a [u8]>,
    headers: bool,
    now: SystemTime,
    list: bool,
) -> Vec<u8> {
    let now = time::nanos(now);
    let mut objects: Vec<Value> = objects
        .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
        .collect();
    if let Some(order) = printer.kind().filter(|_| list).and_then(list_order) {
        let order = order(&objects);
        let mut slots: Vec<Option<Value>> = objects.into_iter().map(Some).collect();
        objects = order
            .into_iter()
            .filter_map(|i| slots.get_mut(i).and_then(Option::take))
            .collect();
    }
    let list_rows = printer.kind().filter(|_| list).and_then(list_rows);
    let printed: Vec<Row> = match list_rows {
        Some(rows) => rows(&objects, now),
        None => objects.iter().map(|o| printer.row(o, now)).collect(),
    };
    let rows: Vec<Value> = printed
        .into_iter()
        .zip(&objects)
        .map(|(row, object)| {
            let mut r = json!({"cells": row.cells});
            if let Some(conditions) = row.conditions {
                r["conditions"] = conditions;
            }
            r["object"] = embedded(&printer.1, printer.kind(), object);
            r
        })
        .collect();
    let t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": if headers { printer.columns() } else { Value::Null },
        "rows": if rows.is_empty() && printer.default_convertor() {
            Value::Null
        } else {
            Value::Array(rows)
        },
    });
    // As Go writes it (`<none>` as `\u003cnone\u003e`).
    crate::gojson::to_vec(&t).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_tables_rows_are_null_only_from_the_default_convertor() {
        let rows = |kind: &str| {
            let printer = Printer::built_in(kind).unwrap();
            let t = list_table_at(
                &printer,
                json!({}),
                std::iter::empty(),
                true,
                SystemTime::now(),
            );
            serde_json::from_slice::<Value>(&t).unwrap()["rows"].clone()
        };
        assert_eq!(rows("Role"), Value::Null);
        assert_eq!(rows("Pod"), json!([]));
    }

    #[test]
    fn kubectls_accept_header_asks_for_a_table() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert!(wanted(Some(kubectl)));
        assert!(!wanted(Some("application/json")));
        assert!(!wanted(None));
    }

    #[test]
    fn a_pods_row_has_kubectls_columns() {
        let pod = br#"{"metadata":{"name":"web","namespace":"a","creationTimestamp":"1970-01-02T00:00:00Z"},
            "spec":{"containers":[{"name":"c"},{"name":"d"}]},
            "status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":2,"state":{"running":{}}},{"ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}"#;
        let t: Value = serde_json::from_slice(&table(
            &ResourceInfo::pods(),
            json!({"resourceVersion": "7"}),
            [&pod[..]].into_iter(),
            true,
        ))
        .unwrap();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        assert_eq!(t["columnDefinitions"][2]["name"], "Status");
        assert_eq!(t["columnDefinitions"][5]["priority"], 1);
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "web");
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[2], "CrashLoopBackOff");
        assert_eq!(cells[3], "3");
        assert!(cells[4].as_str().unwrap().ends_with('y'));
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "a");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn ages_are_computed_at_the_given_now() {
        let cm = br#"{"metadata":{"name":"c","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"a":"1"}}"#;
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600 + 330);
        let t: Value = serde_json::from_slice(&table_at(
            &Printer::for_kind("ConfigMap"),
            json!({}),
            [&cm[..]].into_iter(),
            false,
            now,
        ))
        .unwrap();
        assert_eq!(t["rows"][0]["cells"], json!(["c", 1, "5m30s"]));
        assert_eq!(t["columnDefinitions"], Value::Null);
    }

    /// Every listable kind of the generated schema has a printer, whose
    /// columns are that kind's and whose row has a cell per column (but
    /// `IPAddress`'s, which has an age its columns do not declare, as the
    /// apiserver's has).
    #[test]
    fn every_listed_kind_has_a_printer_with_a_cell_per_column() {
        let mut n = 0;
        for (group, kind, columns) in columns::listed() {
            let printer =
                Printer::built_in(kind).unwrap_or_else(|| panic!("no printer for {group} {kind}"));
            assert_eq!(&printer.columns(), columns, "{group} {kind}");
            let object =
                json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}});
            let row = printer.row(&object, time::nanos(SystemTime::now()));
            let extra = usize::from(kind == "IPAddress");
            assert_eq!(
                row.cells.len(),
                columns.as_array().unwrap().len() + extra,
                "{group} {kind}"
            );
            n += 1;
        }
        assert!(n >= 60, "{n} kinds");
        for p in built_ins() {
            assert!(
                columns::of(p.group, p.kind).is_some(),
                "{} {}",
                p.group,
                p.kind
            );
        }
    }

    #[test]
    fn unknown_kinds_print_as_columnless_custom_resources() {
        let p = Printer::for_kind("Frobnicator");
        let columns = p.columns();
        let names: Vec<&str> = columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Age"]);
        assert!(Printer::built_in("Frobnicator").is_none());
        for kind in [
            "Pod",
            "Node",
            "Namespace",
            "ConfigMap",
            "Secret",
            "Service",
            "Endpoints",
            "EndpointSlice",
            "Event",
            "Lease",
            "ServiceAccount",
            "Deployment",
            "ReplicaSet",
            "DaemonSet",
            "StatefulSet",
            "Job",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "CronJob",
            "Ingress",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "PriorityClass",
            "StorageClass",
            "LimitRange",
            "ResourceQuota",
            "PersistentVolumeClaim",
            "PersistentVolume",
        ] {
            assert!(Printer::built_in(kind).is_some(), "{kind}");
        }
    }
}
