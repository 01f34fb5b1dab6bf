//! `meta.k8s.io/v1` `Table`s, for clients that ask for them (`kubectl get`
//! sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`):
//! pods as `NAME READY STATUS RESTARTS AGE`, other kinds as `NAME AGE`.
//!
//! A table row is built from the object's JSON for each connection that
//! asks for tables (a person's `kubectl`), so unlike the plain JSON it is
//! not encoded once per change; clients that ask for plain JSON (every
//! controller and client library) never pay for it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::info::ResourceInfo;

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

fn columns(info: &ResourceInfo) -> Value {
    let col = |name: &str, format: &str, description: &str| json!({"name": name, "type": "string", "format": format, "description": description, "priority": 0});
    if info.kind == "Pod" {
        json!([
            col("Name", "name", "Name must be unique within a namespace."),
            col(
                "Ready",
                "",
                "The number of containers ready and the number of containers."
            ),
            col(
                "Status",
                "",
                "The aggregate status of the containers in this pod."
            ),
            col(
                "Restarts",
                "",
                "The number of times the containers in this pod have been restarted."
            ),
            col("Age", "", "Time since the object was created."),
        ])
    } else {
        json!([
            col("Name", "name", "Name must be unique within a namespace."),
            col("Age", "", "Time since the object was created."),
        ])
    }
}

/// Seconds since the Unix epoch of an RFC 3339 UTC time
/// (`2026-01-01T00:00:00Z`), the form the apiserver writes.
fn epoch_seconds(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3_600 + mm * 60 + ss)
}

/// kubectl's short age (`5s`, `3m`, `2h`, `328d`).
fn age(created: Option<&str>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    match created.and_then(epoch_seconds) {
        Some(t) => {
            let s = (now - t).max(0);
            match s {
                s if s < 120 => format!("{s}s"),
                s if s < 7_200 => format!("{}m", s / 60),
                s if s < 172_800 => format!("{}h", s / 3_600),
                s => format!("{}d", s / 86_400),
            }
        }
        None => "<unknown>".into(),
    }
}

/// One row: the cells and the object's metadata.
fn row(info: &ResourceInfo, object: &Value) -> Value {
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let name = metadata["name"].as_str().unwrap_or_default().to_owned();
    let created = metadata["creationTimestamp"].as_str();
    let cells = if info.kind == "Pod" {
        let containers = object["spec"]["containers"].as_array().map_or(0, Vec::len);
        let statuses = object["status"]["containerStatuses"].as_array();
        let ready = statuses.map_or(0, |s| {
            s.iter()
                .filter(|c| c["ready"].as_bool() == Some(true))
                .count()
        });
        let restarts: u64 = statuses.map_or(0, |s| {
            s.iter().filter_map(|c| c["restartCount"].as_u64()).sum()
        });
        let waiting = statuses.and_then(|s| {
            s.iter()
                .find_map(|c| c["state"]["waiting"]["reason"].as_str())
        });
        let status = waiting
            .or_else(|| object["status"]["phase"].as_str())
            .unwrap_or("Unknown");
        json!([
            name,
            format!("{ready}/{containers}"),
            status,
            restarts.to_string(),
            age(created)
        ])
    } else {
        json!([name, age(created)])
    };
    json!({
        "cells": cells,
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": metadata,
        },
    })
}

/// A table of `objects` (their JSON), with the list's metadata; the
/// column definitions unless `headers` is false (a watch sends them with
/// its first event only).
pub fn table<'a>(
    info: &ResourceInfo,
    list_metadata: Value,
    objects: impl Iterator<Item = &'a [u8]>,
    headers: bool,
) -> Vec<u8> {
    let rows: Vec<Value> = objects
        .map(|b| row(info, &serde_json::from_slice(b).unwrap_or(Value::Null)))
        .collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "rows": rows,
    });
    if headers {
        t["columnDefinitions"] = columns(info);
    } else {
        t["columnDefinitions"] = Value::Null;
    }
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
            "status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":2},{"ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}"#;
        let t: Value = serde_json::from_slice(&table(
            &ResourceInfo::pods(),
            json!({"resourceVersion": "7"}),
            [&pod[..]].into_iter(),
            true,
        ))
        .unwrap();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["columnDefinitions"][2]["name"], "Status");
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "web");
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[2], "CrashLoopBackOff");
        assert_eq!(cells[3], "3");
        assert!(cells[4].as_str().unwrap().ends_with('d'));
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "a");
        assert_eq!(epoch_seconds("1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(epoch_seconds("2000-03-01T00:00:00Z"), Some(951_868_800));
    }
}
