//! A `ConversionReview`, as the apiserver's `webhookConverter` writes
//! and checks one (k8s.io/apiextensions-apiserver v0.37.2,
//! `pkg/apiserver/conversion/webhook_converter.go`): the request
//! (`createConversionReviewObjects`), the response's converted objects
//! (`getConvertedObjectsFromResponse`), and each converted object
//! checked against its original and given back the original's metadata
//! but for labels and annotations (`validateConvertedObject`,
//! `restoreObjectMeta`). Messages are the apiserver's.

use serde_json::{Map, Value, json};

/// The review group.
const GROUP: &str = "apiextensions.k8s.io";

/// The request body: a `ConversionReview` of `version` (`v1`,
/// `v1beta1`) asking for `objects` at `desired`.
pub(crate) fn request(version: &str, uid: &str, desired: &str, objects: &[Value]) -> Vec<u8> {
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("{GROUP}/{version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    serde_json::to_vec(&review).unwrap_or_default()
}

/// A `group/version, Kind=kind` as Go prints a `GroupVersionKind`.
fn gvk(api_version: &str, kind: &str) -> String {
    format!("{api_version}, Kind={kind}")
}

/// The converted objects of a response `body` to a review of `version`
/// sent with `uid`, or the apiserver's reason to refuse it.
pub(crate) fn converted(version: &str, uid: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let str_at = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    if version == "v1" {
        let want = format!("{GROUP}/v1");
        let (got_gv, got_kind) = (str_at(&review, "apiVersion"), str_at(&review, "kind"));
        if (got_gv.as_str(), got_kind.as_str()) != (want.as_str(), "ConversionReview") {
            return Err(format!(
                "expected webhook response of {}, got {}",
                gvk(&want, "ConversionReview"),
                gvk(&got_gv, &got_kind)
            ));
        }
    }
    let response = &review["response"];
    if !response.is_object() {
        return Err("no response provided".into());
    }
    if version == "v1" && str_at(response, "uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            str_at(response, "uid")
        ));
    }
    let result = &response["result"];
    let status = str_at(result, "status");
    if status != "Success" {
        let message = str_at(result, "message");
        if !message.is_empty() {
            return Err(message);
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// A converted object checked against `original` (to `desired`):
/// its group version and kind, then its name, namespace and uid; then
/// the original's metadata with the converted labels and annotations.
pub(crate) fn checked(original: &Value, converted: Value, desired: &str) -> Result<Value, String> {
    let Value::Object(mut out) = converted else {
        return Err("the converted object is not a JSON object".into());
    };
    let s = |m: &Map<String, Value>, k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let got_gv = s(&out, "apiVersion");
    if got_gv != desired {
        return Err(format!(
            "invalid groupVersion (expected {desired}, received {got_gv})"
        ));
    }
    let kind = original["kind"].as_str().unwrap_or_default();
    let got_kind = s(&out, "kind");
    if got_kind != kind {
        return Err(format!(
            "invalid kind (expected {kind}, received {got_kind})"
        ));
    }
    let empty = Map::new();
    let meta_in = original["metadata"].as_object().unwrap_or(&empty);
    let meta_out = out
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (what, key) in [("name", "name"), ("namespace", "namespace"), ("UID", "uid")] {
        let (a, b) = (s(meta_in, key), s(meta_out, key));
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    let response_meta = match out.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut meta = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.shift_remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Ok(sorted(Value::Object(out)))
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The value with every object's keys in byte order: how the apiserver
/// writes an unstructured object (Go's `encoding/json` sorts map keys).
pub(crate) fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A fresh request uid (random, in the UUID's text form).
pub(crate) fn uid() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_checked_as_the_apiserver_checks_it() {
        let ok = |objects: Value| {
            serde_json::to_vec(&json!({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
                "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": objects}}))
            .unwrap()
        };
        assert_eq!(
            converted("v1", "u", &ok(json!([{"a": 1}]))).unwrap().len(),
            1
        );
        assert_eq!(
            converted("v1", "other", &ok(json!([]))).unwrap_err(),
            r#"expected response.uid="other", got "u""#
        );
        let failed = br#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"u","result":{"status":"Failure","message":"no way"}}}"#;
        assert_eq!(converted("v1", "u", failed).unwrap_err(), "no way");
        let beta = br#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1beta1","response":{"uid":"x","result":{"status":"Success"}}}"#;
        assert_eq!(
            converted("v1", "u", beta).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        );
        // v1beta1 checks no uid.
        assert!(converted("v1beta1", "u", beta).unwrap().is_empty());
    }

    #[test]
    fn a_converted_object_keeps_the_original_metadata_but_labels_and_annotations() {
        let original = json!({"apiVersion": "g/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "n", "uid": "1", "resourceVersion": "5",
                "labels": {"x": "1"}, "annotations": {"k": "v"}}, "spec": {"old": 1}});
        let got = checked(
            &original,
            json!({"spec": {"new": 1}, "kind": "W", "apiVersion": "g/v2",
                "metadata": {"name": "a", "namespace": "n", "uid": "1", "resourceVersion": "999", "labels": {"y": "2"}}}),
            "g/v2",
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            r#"{"apiVersion":"g/v2","kind":"W","metadata":{"labels":{"y":"2"},"name":"a","namespace":"n","resourceVersion":"5","uid":"1"},"spec":{"new":1}}"#
        );
        let wrong = |o: Value| checked(&original, o, "g/v2").unwrap_err();
        assert_eq!(
            wrong(json!({"apiVersion": "g/v1", "kind": "W", "metadata": {}})),
            "invalid groupVersion (expected g/v2, received g/v1)"
        );
        assert_eq!(
            wrong(
                json!({"apiVersion": "g/v2", "kind": "W", "metadata": {"name": "b", "namespace": "n", "uid": "1"}})
            ),
            "must have the same name: a != b"
        );
    }

    #[test]
    fn uids_differ_and_look_like_uuids() {
        let (a, b) = (uid(), uid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
