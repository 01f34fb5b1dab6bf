//! `meta.k8s.io/v1` `Table`s, for clients that ask for them (`kubectl get`
//! sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`),
//! with the columns and cells the real apiserver gives each kind:
//!
//! - the built-in kinds as `k8s.io/kubernetes` `pkg/printers/internalversion`
//!   prints them (`AddHandlers`' column definitions and its `print*`
//!   functions), every column included, `-o wide`'s (priority 1) too, as
//!   the apiserver's `TableConvertor` always asks for them: the `core`,
//!   `pod`, `service`, `apps`, `batch_net`, `storage` and `rbac` modules
//!   (a list of `StorageClass`es marks its default class, as
//!   `printStorageClassList` does: see [`list_table_at`]);
//! - `Role`, `ClusterRole` and `LimitRange` with the apiserver's default
//!   convertor (`NAME`, `CREATED AT`), as their storage has no printer;
//! - `CustomResourceDefinition`s as apiextensions' CRD convertor prints
//!   them, and custom resources with their CRD's `additionalPrinterColumns`
//!   ([`CrdColumns`], given with [`Printer::custom`]): the `crd` module.
//!
//! A kind Herald has no printer for is printed as a custom resource whose
//! CRD declares no columns (`NAME`, `AGE`).
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

mod apps;
mod batch_net;
mod cells;
mod core;
mod crd;
mod jsonpath;
mod pod;
mod rbac;
mod service;
mod storage;
mod time;

pub use crd::{CrdColumn, CrdColumns};
pub use time::{micro_time, unix_seconds};

use cells::{BuiltIn, Row, column};

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

/// How a kind's objects are printed: a built-in kind's printer, or a
/// custom resource's CRD columns.
#[derive(Debug, Clone)]
pub struct Printer(Inner);

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
            .map(|p| Printer(Inner::BuiltIn(p)))
    }

    /// The printer of a custom resource with its CRD version's columns.
    pub fn custom(columns: CrdColumns) -> Printer {
        Printer(Inner::Custom(columns))
    }

    /// The column definitions' JSON.
    pub fn columns(&self) -> Value {
        match &self.0 {
            Inner::BuiltIn(p) => p
                .columns
                .iter()
                .map(|c| column(c.name, c.ty, c.format, c.description, c.priority))
                .collect(),
            Inner::Custom(c) => c.definitions(),
        }
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

/// The row's `object`: the object's metadata as a `PartialObjectMetadata`
/// (`includeObject=Metadata`, the default), as the apiserver converts its
/// internal object, which for a DaemonSet has no
/// `deprecated.daemonset.template.generation` annotation (apps/v1 adds it
/// from the internal `templateGeneration`).
fn row_object(kind: Option<&str>, object: &Value) -> Value {
    let mut metadata = object
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    if kind == Some("DaemonSet") {
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.remove("deprecated.daemonset.template.generation");
            if annotations.is_empty() {
                metadata.as_object_mut().map(|m| m.remove("annotations"));
            }
        }
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
    let objects: Vec<Value> = objects
        .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
        .collect();
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
            r["object"] = row_object(printer.kind(), object);
            r
        })
        .collect();
    let t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": if headers { printer.columns() } else { Value::Null },
        "rows": rows,
    });
    serde_json::to_vec(&t).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
