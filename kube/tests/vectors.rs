//! Stored values captured from the real kube-apiserver v1.37.2
//! (`testkit/corpus/capture.py` over `testkit/corpus/*.yaml`), each with
//! the JSON the apiserver served for it: the decoder must produce that
//! JSON, field for field, from the stored bytes (protobuf for the built-in
//! kinds, JSON for the CRD and its custom resources).

use std::path::Path;

use base64::Engine;
use herald_kube::Decoder;
use serde_json::Value;

fn vectors() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/v1.37.2");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
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
    assert!(
        out.len() >= 20,
        "the corpus has every kind: {} vectors",
        out.len()
    );
    out
}

/// The first difference between two JSON values, as a path.
fn diff(path: &str, got: &Value, want: &Value) -> Option<String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                match g.get(k) {
                    None => return Some(format!("{path}.{k}: missing, want {wv}")),
                    Some(gv) => {
                        if let Some(d) = diff(&format!("{path}.{k}"), gv, wv) {
                            return Some(d);
                        }
                    }
                }
            }
            g.keys()
                .find(|k| !w.contains_key(*k))
                .map(|k| format!("{path}.{k}: extra {}", g[k]))
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => g
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (g, w))| diff(&format!("{path}[{i}]"), g, w)),
        _ if got == want => None,
        _ => Some(format!("{path}: got {got}, want {want}")),
    }
}

#[test]
fn every_stored_value_decodes_to_the_json_the_apiserver_served() {
    let mut failures = Vec::new();
    let mut protobuf = 0;
    for (file, v) in vectors() {
        let value = base64::engine::general_purpose::STANDARD
            .decode(v["value"].as_str().unwrap())
            .unwrap();
        protobuf += usize::from(value.starts_with(herald_kube::proto::MAGIC));
        let key = v["key"].as_str().unwrap();
        let rest = &key[v["prefix"].as_str().unwrap().len()..];
        let rv = v["mod_revision"].as_u64().unwrap();
        match Decoder::new().decode(rest.as_bytes(), &value, rv.into()) {
            Err(e) => failures.push(format!("{file}: {e}")),
            Ok(object) => {
                let got: Value = serde_json::from_slice(object.payload()).unwrap();
                if let Some(d) = diff("", &got, &v["served"]) {
                    failures.push(format!("{file}: {d}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(protobuf >= 18, "{protobuf} protobuf values");
}
