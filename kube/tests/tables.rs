//! Tables captured from the real kube-apiserver v1.37.2
//! (`testkit/corpus/capture_tables*.py` over `testkit/corpus/*.yaml`): for
//! every object and every list, the JSON it served and the
//! `meta.k8s.io/v1` Table it served (includeObject defaulted,
//! includeObject=None and, for the kinds `capture_tables_kinds.py`
//! captured, includeObject=Object). Herald's table of the served JSON must
//! have the same column definitions, the same cells and conditions, and the
//! same row objects (a `PartialObjectMetadata`, null, or the whole object
//! with its `apiVersion` and `kind`).
//!
//! Ages depend on when the apiserver answered: each vector keeps the
//! response's `Date` (whole seconds, after the table was computed), and
//! Herald's table is built at that "now" (half a second either side, as the
//! apiserver's clock could have been in the second before or in that one).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herald_kube::table::{self, CrdColumns, IncludeObject, Printer};
use serde_json::Value;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tables")
}

fn vectors() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ`.
fn epoch(t: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let (era, yoe) = (y.div_euclid(400), y.rem_euclid(400));
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    (days * 86_400 + n(11..13) * 3_600 + n(14..16) * 60 + n(17..19)) as u64
}

/// The printer of a vector's kind: the built-in one, or its CRD's columns
/// (from the CRD's own vector) for a custom resource.
fn printer(v: &Value) -> Printer {
    let kind = v["kind"].as_str().unwrap();
    match v["crd"].as_str() {
        Some(crd) => {
            let path = dir().join(format!("customresourcedefinitions-{crd}.json"));
            let crd: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            let version = v["path"].as_str().unwrap().split('/').nth(3).unwrap();
            Printer::custom(
                CrdColumns::from_crd(&crd["served"], version)
                    .unwrap()
                    .unwrap(),
            )
        }
        None => Printer::built_in(kind).unwrap_or_else(|| panic!("no printer for {kind}")),
    }
}

fn objects(v: &Value) -> Vec<Vec<u8>> {
    let served = &v["served"];
    let items = if v["list"].as_bool().unwrap() {
        served["items"].as_array().unwrap().clone()
    } else {
        vec![served.clone()]
    };
    items
        .iter()
        .map(|o| serde_json::to_vec(o).unwrap())
        .collect()
}

fn herald(printer: &Printer, objects: &[Vec<u8>], list: bool, now: SystemTime) -> Value {
    herald_including(printer, objects, list, now, None)
}

/// Herald's table, its rows embedding what `include` asks for (`None`: the
/// printer's default) with the `apiVersion` and `kind` of `type_meta`.
fn herald_including(
    printer: &Printer,
    objects: &[Vec<u8>],
    list: bool,
    now: SystemTime,
    include: Option<(IncludeObject, &str, &str)>,
) -> Value {
    let printer = match include {
        None => printer.clone(),
        Some((include, api_version, kind)) => printer.including(include, api_version, kind),
    };
    let printer = &printer;
    let build = if list {
        table::list_table_at
    } else {
        table::table_at
    };
    serde_json::from_slice(&build(
        printer,
        serde_json::json!({}),
        objects.iter().map(Vec::as_slice),
        true,
        now,
    ))
    .unwrap()
}

/// Where Herald's table differs from the apiserver's, if it does.
fn differences(got: &Value, want: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if got["columnDefinitions"] != want["columnDefinitions"] {
        out.push(format!(
            "columns: got {}, want {}",
            got["columnDefinitions"], want["columnDefinitions"]
        ));
    }
    let (g, w) = (
        got["rows"].as_array().unwrap(),
        want["rows"].as_array().unwrap(),
    );
    if g.len() != w.len() {
        out.push(format!("{} rows, want {}", g.len(), w.len()));
    }
    for (i, (g, w)) in g.iter().zip(w).enumerate() {
        let name = w["cells"][0].as_str().unwrap_or("?");
        if g["cells"] != w["cells"] {
            out.push(format!(
                "row {i} ({name}) cells: got {}, want {}",
                g["cells"], w["cells"]
            ));
        }
        if g.get("conditions") != w.get("conditions") {
            out.push(format!(
                "row {i} ({name}) conditions: got {:?}, want {:?}",
                g.get("conditions"),
                w.get("conditions")
            ));
        }
        if g["object"] != w["object"] {
            out.push(format!("row {i} ({name}) object differs"));
        }
    }
    out
}

#[test]
fn tables_are_the_apiservers() {
    let vectors = vectors();
    assert!(
        vectors.len() >= 70,
        "every kind's objects and lists: {} vectors",
        vectors.len()
    );
    let mut failures = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (file, v) in &vectors {
        kinds.insert(v["kind"].as_str().unwrap().to_owned());
        let printer = printer(v);
        let objects = objects(v);
        // A list's items have no `apiVersion`: the list's is theirs.
        let api_version = v["served"]["apiVersion"].as_str().unwrap();
        let kind = v["kind"].as_str().unwrap();
        for (table, date, include) in [
            ("table", "date", None),
            ("table_none", "date_none", Some(IncludeObject::None)),
            ("table_object", "date_object", Some(IncludeObject::Object)),
        ] {
            let include = include.map(|i| (i, api_version, kind));
            if v.get(table).is_none() {
                continue;
            }
            let at = UNIX_EPOCH + Duration::from_secs(epoch(v[date].as_str().unwrap()));
            let tries: Vec<Vec<String>> = [
                at + Duration::from_millis(500),
                at - Duration::from_millis(500),
            ]
            .into_iter()
            .map(|now| {
                let got = herald_including(
                    &printer,
                    &objects,
                    v["list"].as_bool().unwrap(),
                    now,
                    include,
                );
                differences(&got, &v[table])
            })
            .collect();
            if tries.iter().all(|d| !d.is_empty()) {
                failures.push(format!("{file} {table}:\n  {}", tries[0].join("\n  ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(kinds.len(), 65, "{kinds:?}");
}

/// The age is computed at the "now" given, from `creationTimestamp`: every
/// object five and a half minutes after its creation is `5m30s` old.
#[test]
fn ages_are_recomputed_at_the_given_now() {
    let mut checked = 0;
    for (file, v) in vectors() {
        let printer = printer(&v);
        let Some(age) = printer
            .columns()
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c["name"] == "Age")
        else {
            continue;
        };
        for o in objects(&v) {
            let object: Value = serde_json::from_slice(&o).unwrap();
            let created = epoch(object["metadata"]["creationTimestamp"].as_str().unwrap());
            let now = UNIX_EPOCH + Duration::from_secs(created + 330);
            let t = herald(&printer, &[o], false, now);
            assert_eq!(t["rows"][0]["cells"][age], "5m30s", "{file}");
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}
