use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use super::super::wire::{Fields, Wire};
use super::super::{decode, envelope};
use super::*;

/// The typed message of the Go type `name` (`meta/v1.ObjectMeta`) for
/// the JSON object `v`.
fn enc(name: &str, v: Value) -> Result<Vec<u8>, ProtoError> {
    let schema = Schema::get();
    let full = if name.starts_with("k8s.io/") {
        name.to_owned()
    } else if let Some(rest) = name.strip_prefix("meta/") {
        format!("k8s.io/apimachinery/pkg/apis/meta/{rest}")
    } else {
        format!("k8s.io/api/{name}")
    };
    let ty = schema.type_named(&full).unwrap_or_else(|| panic!("{full}"));
    let Value::Object(obj) = v else { panic!() };
    let mut out = Vec::new();
    Enc {
        schema,
        out: &mut out,
        depth: 0,
    }
    .object(ty, &obj)
    .map_err(finish)?;
    Ok(out)
}

/// A message's fields, as `(number, wire)`, for the assertions.
fn fields(bytes: &[u8]) -> Vec<(u32, Wire<'_>)> {
    Fields::new(bytes).collect::<Result<_, _>>().unwrap()
}

/// The field `n` of a message (the last, as a reader takes it).
fn get<'a>(bytes: &'a [u8], n: u32) -> Option<Wire<'a>> {
    fields(bytes)
        .into_iter()
        .rev()
        .find(|(k, _)| *k == n)
        .map(|(_, w)| w)
}

fn sub(bytes: &[u8], n: u32) -> &[u8] {
    match get(bytes, n) {
        Some(Wire::Bytes(b)) => b,
        w => panic!("field {n}: {w:?}"),
    }
}

/// Where `mine` (decoded from an encoding of `served`) is not `served`,
/// but for a nested object's `apiVersion` and `kind`, which are not on the
/// wire (`TypeMeta` has no field number), and a `*metav1.Time` to the zero
/// time, which is on the wire (empty) and which the reader leaves out
/// (Go prints `null`; either reads back as a nil pointer).
fn unlike(mine: &Value, served: &Value, depth: usize) -> Option<String> {
    match (mine, served) {
        (Value::Object(m), Value::Object(s)) => {
            for (k, sv) in s {
                match m.get(k) {
                    None if depth > 0 && (k == "apiVersion" || k == "kind") => {}
                    None if sv == "0001-01-01T00:00:00Z" => {}
                    None => return Some(format!("no {k}")),
                    Some(mv) => {
                        if let Some(d) = unlike(mv, sv, depth + 1) {
                            return Some(format!("{k}.{d}"));
                        }
                    }
                }
            }
            m.keys()
                .find(|k| !s.contains_key(*k))
                .map(|k| format!("an extra {k}"))
        }
        (Value::Array(m), Value::Array(s)) if m.len() == s.len() => m
            .iter()
            .zip(s)
            .enumerate()
            .find_map(|(i, (m, s))| unlike(m, s, depth + 1).map(|d| format!("[{i}]{d}"))),
        _ if mine == served => None,
        _ => Some(format!(": {mine}, served {served}")),
    }
}

#[test]
fn every_stored_vector_encodes_back_to_what_the_apiserver_stored() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/v1.37.2");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let (mut protobuf, mut identical, mut differ, mut crds) = (0, 0, Vec::new(), 0);
    let (mut served_identical, mut served_differ) = (0, Vec::new());
    for path in paths {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let stored = base64::engine::general_purpose::STANDARD
            .decode(v["value"].as_str().unwrap())
            .unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Value::Object(mut served) = v["served"].clone() else {
            panic!("{name}")
        };
        if !stored.starts_with(MAGIC) {
            // Stored as JSON (the CRD, custom resources): a kind of the
            // schema still encodes, and reads back as it was served.
            if let Ok(mine) = encode(&served) {
                assert_eq!(decode(&mine).unwrap(), served, "{name}");
                crds += 1;
            }
            continue;
        }
        protobuf += 1;
        // What Herald holds is what the apiserver served: the stored
        // object with its resourceVersion set (storage leaves it out), and
        // whatever the apiserver defaults on read (a Job's labels) or
        // prints that is not on the wire (a nested object's TypeMeta).
        let mine = encode(&served).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(d) = unlike(
            &Value::Object(decode(&mine).unwrap()),
            &Value::Object(served.clone()),
            0,
        ) {
            panic!("{name}: the served JSON encodes to {d}");
        }
        if let Some(Value::Object(meta)) = served.get_mut("metadata") {
            meta.remove("resourceVersion");
        }
        if encode(&served).unwrap() == stored {
            served_identical += 1;
        } else {
            served_differ.push(name.clone());
        }
        let object = decode(&stored).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mine = encode(&object).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            decode(&mine).unwrap_or_else(|e| panic!("{name}: {e}")),
            object,
            "{name}"
        );
        // The typed message alone is the envelope's raw.
        let env = envelope(&mine).unwrap();
        assert_eq!(
            message(&object, env.api_version, env.kind).unwrap(),
            env.raw,
            "{name}"
        );
        if mine == stored {
            identical += 1;
        } else {
            let at = mine.iter().zip(&stored).take_while(|(a, b)| a == b).count();
            differ.push(format!(
                "{name}: {} bytes, stored {}, first difference at {at}",
                mine.len(),
                stored.len()
            ));
        }
    }
    assert!(protobuf >= 18, "{protobuf} protobuf vectors");
    assert_eq!(crds, 1, "the CRD encodes");
    eprintln!("{identical} of {protobuf} byte-identical");
    eprintln!(
        "{served_identical} of {protobuf} byte-identical from the served JSON; not: {served_differ:?}"
    );
    // The Job's served labels are defaulted on read, not stored.
    assert_eq!(served_differ, ["jobs-diff-migrate.json"]);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn the_envelope_is_the_one_the_apiserver_writes() {
    let out = encode(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    let body = out.strip_prefix(b"k8s\0".as_slice()).unwrap();
    let f = fields(body);
    assert_eq!(f.len(), 4);
    assert_eq!(f[0], (1, Wire::Bytes(b"\x0a\x02v1\x12\x09ConfigMap")));
    assert!(matches!(f[1], (2, Wire::Bytes(_))));
    assert_eq!(f[2..], [(3, Wire::Bytes(b"")), (4, Wire::Bytes(b""))]);
    // ConfigMap: metadata (1) with name (1) and every non-pointer field
    // of ObjectMeta written even when zero; then immutable (3) is a nil
    // pointer and data (2) and binaryData (4) nil maps: not written.
    let raw = sub(body, 2);
    let meta = sub(raw, 1);
    assert_eq!(fields(raw).len(), 1);
    assert_eq!(
        fields(meta),
        vec![
            (1, Wire::Bytes(b"a")),
            (2, Wire::Bytes(b"")),
            (3, Wire::Bytes(b"")),
            (4, Wire::Bytes(b"")),
            (5, Wire::Bytes(b"")),
            (6, Wire::Bytes(b"")),
            (7, Wire::Varint(0)),
            (8, Wire::Bytes(b"")),
        ]
    );
}

#[test]
fn fields_go_in_ascending_number_and_maps_in_key_order() {
    let meta = enc(
        "meta/v1.ObjectMeta",
        json!({
            "labels": {"b": "2", "a": "1", "": ""},
            "generation": 3,
            "finalizers": ["x", ""],
            "annotations": {},
            "ownerReferences": [],
            "deletionGracePeriodSeconds": 0,
            "name": "n",
        }),
    )
    .unwrap();
    let numbers: Vec<u32> = fields(&meta).iter().map(|f| f.0).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 11, 11, 14, 14]);
    let labels: Vec<_> = fields(&meta)
        .into_iter()
        .filter(|f| f.0 == 11)
        .map(|f| match f.1 {
            Wire::Bytes(b) => fields(b),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        labels,
        vec![
            vec![(1, Wire::Bytes(b"")), (2, Wire::Bytes(b""))],
            vec![(1, Wire::Bytes(b"a")), (2, Wire::Bytes(b"1"))],
            vec![(1, Wire::Bytes(b"b")), (2, Wire::Bytes(b"2"))],
        ]
    );
    assert_eq!(get(&meta, 10), Some(Wire::Varint(0)));
}

#[test]
fn scalars_are_written_as_gogo_writes_them() {
    // int32 negative: ten bytes; bool: one; int64; *int64.
    let port = enc(
        "core/v1.ContainerPort",
        json!({"containerPort": -1, "hostPort": 2147483647, "name": "x"}),
    )
    .unwrap();
    assert_eq!(get(&port, 3), Some(Wire::Varint(u64::MAX)));
    let hp = port.windows(1).position(|w| w == [3 << 3]).unwrap();
    assert_eq!(
        &port[hp..hp + 11],
        &[
            0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
        ]
    );
    assert_eq!(get(&port, 2), Some(Wire::Varint(2_147_483_647)));
    assert_eq!(get(&port, 4), Some(Wire::Bytes(b"")));
    // float64: fixed64; *float64 absent: not written.
    let props = enc(
        "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps",
        json!({"maximum": 1.5, "minimum": 2, "exclusiveMaximum": true}),
    )
    .unwrap();
    assert_eq!(get(&props, 9), Some(Wire::Fixed64(1.5f64.to_bits())));
    assert_eq!(get(&props, 11), Some(Wire::Fixed64(2f64.to_bits())));
    assert_eq!(get(&props, 10), Some(Wire::Varint(1)));
    assert_eq!(get(&props, 19), None);
    // []byte from base64; null: not written; "": written empty.
    let secret = enc(
        "core/v1.Secret",
        json!({"data": {"k": "aGk=", "e": "", "n": null}}),
    )
    .unwrap();
    let entries: Vec<_> = fields(&secret)
        .into_iter()
        .filter(|f| f.0 == 2)
        .map(|f| match f.1 {
            Wire::Bytes(b) => fields(b),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            vec![(1, Wire::Bytes(b"e")), (2, Wire::Bytes(b""))],
            vec![(1, Wire::Bytes(b"k")), (2, Wire::Bytes(b"hi"))],
            vec![(1, Wire::Bytes(b"n"))],
        ]
    );
    // Repeated scalars unpacked.
    let ctx = enc(
        "core/v1.PodSecurityContext",
        json!({"supplementalGroups": [1, -2]}),
    )
    .unwrap();
    let groups: Vec<_> = fields(&ctx).into_iter().filter(|f| f.0 == 4).collect();
    assert_eq!(
        groups,
        [(4, Wire::Varint(1)), (4, Wire::Varint(-2i64 as u64))]
    );
}

#[test]
fn times_are_seconds_and_the_zero_time_is_no_bytes() {
    let meta = enc(
        "meta/v1.ObjectMeta",
        json!({"creationTimestamp": "2026-11-27T21:57:12Z",
               "deletionTimestamp": "2026-11-27T22:57:12.5+01:00"}),
    )
    .unwrap();
    let t = sub(&meta, 8);
    assert_eq!(
        fields(t),
        [(1, Wire::Varint(1_795_816_632)), (2, Wire::Varint(0))]
    );
    assert_eq!(sub(&meta, 9), t);
    for zero in [json!(null), json!("0001-01-01T00:00:00Z")] {
        let meta = enc("meta/v1.ObjectMeta", json!({ "creationTimestamp": zero })).unwrap();
        assert_eq!(get(&meta, 8), Some(Wire::Bytes(b"")));
    }
    // A nil *Time is not written; a zero one is, empty.
    let meta = enc("meta/v1.ObjectMeta", json!({"deletionTimestamp": null})).unwrap();
    assert_eq!(get(&meta, 9), None);
    let meta = enc(
        "meta/v1.ObjectMeta",
        json!({"deletionTimestamp": "0001-01-01T00:00:00Z"}),
    )
    .unwrap();
    assert_eq!(get(&meta, 9), Some(Wire::Bytes(b"")));
    // Before 1970: a negative varint.
    let meta = enc(
        "meta/v1.ObjectMeta",
        json!({"creationTimestamp": "1969-12-31T23:59:59Z"}),
    )
    .unwrap();
    assert_eq!(get(sub(&meta, 8), 1), Some(Wire::Varint(u64::MAX)));
    // MicroTime keeps microseconds.
    let lease = enc(
        "coordination/v1.LeaseSpec",
        json!({"renewTime": "2026-11-27T21:57:12.123456Z"}),
    )
    .unwrap();
    assert_eq!(
        fields(sub(&lease, 4)),
        [
            (1, Wire::Varint(1_795_816_632)),
            (2, Wire::Varint(123_456_000))
        ]
    );
    for (field, bad) in [
        ("creationTimestamp", json!("yesterday")),
        ("creationTimestamp", json!(1_795_816_632)),
        ("creationTimestamp", json!("2026-11-27T21:57:12")),
    ] {
        let e = enc("meta/v1.ObjectMeta", json!({ field: bad })).unwrap_err();
        assert!(
            matches!(&e, ProtoError::Value(m) if m.starts_with("creationTimestamp: ")),
            "{e:?}"
        );
    }
    assert!(
        enc(
            "coordination/v1.LeaseSpec",
            json!({"renewTime": "2026-11-27T21:57:12Z"})
        )
        .is_err()
    );
}

#[test]
fn int_or_string_quantity_and_duration_are_their_messages() {
    let ios = |v: Value| {
        let spec = enc(
            "apps/v1.RollingUpdateDeployment",
            json!({ "maxUnavailable": v }),
        )?;
        Ok::<_, ProtoError>(get(&spec, 1).map(|w| match w {
            Wire::Bytes(b) => b.to_vec(),
            _ => panic!(),
        }))
    };
    assert_eq!(ios(json!(3)).unwrap().unwrap(), b"\x08\x00\x10\x03\x1a\x00");
    assert_eq!(
        ios(json!("25%")).unwrap().unwrap(),
        b"\x08\x01\x10\x00\x1a\x0325%"
    );
    assert_eq!(ios(json!(null)).unwrap(), None);
    assert!(ios(json!(1.5)).is_err());
    assert!(ios(json!(2_147_483_648u64)).is_err());
    assert!(ios(json!(true)).is_err());
    // A non-pointer IntOrString: null is type 0, value 0.
    let port = enc("core/v1.TCPSocketAction", json!({})).unwrap();
    assert_eq!(sub(&port, 1), b"\x08\x00\x10\x00\x1a\x00");

    let q = |v: Value| {
        enc(
            "core/v1.ResourceRequirements",
            json!({ "limits": {"cpu": v} }),
        )
    };
    let limits = q(json!("1500m")).unwrap();
    assert_eq!(
        fields(sub(&limits, 1)),
        [(1, Wire::Bytes(b"cpu")), (2, Wire::Bytes(b"\x0a\x051500m"))]
    );
    assert_eq!(
        sub(sub(&q(json!(2)).unwrap(), 1), 2),
        b"\x0a\x012".as_slice()
    );
    assert_eq!(
        sub(sub(&q(json!(null)).unwrap(), 1), 2),
        b"\x0a\x010".as_slice()
    );
    for ok in ["1", "1.5Gi", "-1e3", "+.5", "5.", "1E", "2e-3", "10n"] {
        assert!(q(json!(ok)).is_ok(), "{ok}");
    }
    for bad in ["", "abc", "1.5 Gi", "1Gb", "1e", "1e+", "--1", "0x10"] {
        assert!(q(json!(bad)).is_err(), "{bad}");
    }
    assert!(q(json!([1])).is_err());

    // No built-in kind of this release has a Duration; the type's own
    // message is checked through a stand-in schema walk.
    let mut out = Vec::new();
    let mut e = Enc {
        schema: Schema::get(),
        out: &mut out,
        depth: 0,
    };
    e.special(Special::Duration, &json!("1m30s")).unwrap();
    assert_eq!(out, [0x08, 0x80, 0x88, 0xac, 0xa3, 0xcf, 0x02]);
    let mut out = Vec::new();
    let mut e = Enc {
        schema: Schema::get(),
        out: &mut out,
        depth: 0,
    };
    assert!(e.special(Special::Duration, &json!(null)).is_err());
    assert!(e.special(Special::Duration, &json!("1d")).is_err());
}

#[test]
fn embedded_json_is_written_as_go_writes_it() {
    let entry = enc(
        "meta/v1.ManagedFieldsEntry",
        json!({
            "manager": "kubectl",
            "fieldsV1": {"f:metadata": {"f:annotations": {"f:a<b>": {}}}},
        }),
    )
    .unwrap();
    let raw = sub(sub(&entry, 7), 1);
    assert_eq!(
        raw,
        br#"{"f:metadata":{"f:annotations":{"f:a\u003cb\u003e":{}}}}"#
    );
    let entry = enc("meta/v1.ManagedFieldsEntry", json!({"fieldsV1": null})).unwrap();
    assert_eq!(get(&entry, 7), None);
    // A non-pointer RawExtension: null is an empty message.
    let rev = enc("apps/v1.ControllerRevision", json!({"revision": 2})).unwrap();
    assert_eq!(get(&rev, 2), Some(Wire::Bytes(b"")));
    let rev = enc(
        "apps/v1.ControllerRevision",
        json!({"data": {"spec": {"replicas": 1.5, "x": "é"}}}),
    )
    .unwrap();
    assert_eq!(
        sub(sub(&rev, 2), 1),
        r#"{"spec":{"replicas":1.5,"x":"é"}}"#.as_bytes()
    );
}

#[test]
fn json_schema_unions_are_filled_as_their_unmarshal_fills_them() {
    const PROPS: &str = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps";
    let p = enc(
        PROPS,
        json!({
            "type": "object",
            "additionalProperties": false,
            "additionalItems": {"type": "string"},
            "items": [{"type": "integer"}, {}],
            "dependencies": {"b": ["x", "y"], "a": {"type": "object"}},
            "enum": ["a", null, 1],
            "default": {"k": [1, true]},
        }),
    )
    .unwrap();
    // additionalProperties (30): {allows = false}.
    assert_eq!(sub(&p, 30), b"\x08\x00");
    // additionalItems (33): {allows = true, schema}.
    let items = fields(sub(&p, 33));
    assert_eq!(items[0], (1, Wire::Varint(1)));
    assert_eq!(items[1].0, 2);
    // items (24): {jsonSchemas (2) ...}.
    let arr = fields(sub(&p, 24));
    assert_eq!(arr.iter().map(|f| f.0).collect::<Vec<_>>(), [2, 2]);
    // dependencies (32): a -> {schema (1)}, b -> {property (2) x, y}.
    let deps: Vec<_> = fields(&p)
        .into_iter()
        .filter(|f| f.0 == 32)
        .map(|f| match f.1 {
            Wire::Bytes(b) => b,
            _ => panic!(),
        })
        .collect();
    assert_eq!(get(deps[0], 1), Some(Wire::Bytes(b"a")));
    assert!(matches!(get(sub(deps[0], 2), 1), Some(Wire::Bytes(_))));
    assert_eq!(sub(deps[1], 2), b"\x12\x01x\x12\x01y");
    // enum (20): each element a JSON message; null's is empty.
    let e: Vec<_> = fields(&p).into_iter().filter(|f| f.0 == 20).collect();
    assert_eq!(
        e,
        [
            (20, Wire::Bytes(b"\x0a\x03\"a\"")),
            (20, Wire::Bytes(b"")),
            (20, Wire::Bytes(b"\x0a\x011"))
        ]
    );
    assert_eq!(sub(sub(&p, 8), 1), br#"{"k":[1,true]}"#);
    assert!(enc(PROPS, json!({"additionalProperties": "yes"})).is_err());
    assert!(enc(PROPS, json!({"dependencies": {"a": [1]}})).is_err());
    // What the unions' UnmarshalJSON ignores is the zero value.
    let p = enc(PROPS, json!({"items": true})).unwrap();
    assert_eq!(get(&p, 24), Some(Wire::Bytes(b"")));
}

#[test]
fn a_named_slice_in_a_map_is_a_message_even_when_nil() {
    let spec = enc(
        "certificates/v1.CertificateSigningRequestSpec",
        json!({"extra": {"b": ["x", ""], "a": null, "c": []}}),
    )
    .unwrap();
    let extra: Vec<_> = fields(&spec)
        .into_iter()
        .filter(|f| f.0 == 6)
        .map(|f| match f.1 {
            Wire::Bytes(b) => fields(b),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        extra,
        vec![
            vec![(1, Wire::Bytes(b"a")), (2, Wire::Bytes(b""))],
            vec![
                (1, Wire::Bytes(b"b")),
                (2, Wire::Bytes(b"\x0a\x01x\x0a\x00"))
            ],
            vec![(1, Wire::Bytes(b"c")), (2, Wire::Bytes(b""))],
        ]
    );
    assert!(
        enc(
            "certificates/v1.CertificateSigningRequestSpec",
            json!({"extra": {"a": [1]}})
        )
        .is_err()
    );
}

#[test]
fn inline_structs_read_their_fields_from_the_parent() {
    let probe = enc(
        "core/v1.Probe",
        json!({"tcpSocket": {"port": 80}, "periodSeconds": 5}),
    )
    .unwrap();
    // ProbeHandler (1) holds tcpSocket (3); periodSeconds is Probe's (4).
    let handler = sub(&probe, 1);
    assert_eq!(get(sub(handler, 3), 1).map(|_| ()), Some(()));
    assert_eq!(get(&probe, 4), Some(Wire::Varint(5)));
    // A volume's source is inlined too.
    let vol = enc(
        "core/v1.Volume",
        json!({"name": "v", "emptyDir": {"medium": "Memory"}}),
    )
    .unwrap();
    assert_eq!(get(&vol, 1), Some(Wire::Bytes(b"v")));
    assert_eq!(sub(sub(sub(&vol, 2), 2), 1), b"Memory");
}

#[test]
fn json_that_does_not_fit_is_an_error_with_its_path() {
    let pod = |v: Value| {
        let mut o = json!({"apiVersion": "v1", "kind": "Pod"});
        o.as_object_mut()
            .unwrap()
            .extend(v.as_object().unwrap().clone());
        encode(o.as_object().unwrap())
    };
    let value = |r: Result<Vec<u8>, ProtoError>| match r {
        Err(ProtoError::Value(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        value(pod(
            json!({"spec": {"containers": [{"name": "a"}, {"name": 1}]}})
        )),
        "spec.containers[1].name: a number where a string belongs"
    );
    assert_eq!(
        value(pod(
            json!({"spec": {"containers": [{"ports": [{"containerPort": "80"}]}]}})
        )),
        "spec.containers[0].ports[0].containerPort: a string where an int32 belongs"
    );
    assert_eq!(
        value(pod(json!({"metadata": {"labels": {"a": 1}}}))),
        "metadata.labels[\"a\"]: a number where a string belongs"
    );
    for bad in [
        json!({"spec": {"priority": 2_147_483_648u64}}),
        json!({"spec": {"priority": -2_147_483_649i64}}),
        json!({"spec": {"priority": 1.5}}),
        json!({"spec": {"priority": 1e300}}),
        json!({"spec": {"activeDeadlineSeconds": 18_446_744_073_709_551_615u64}}),
        json!({"spec": {"hostNetwork": "true"}}),
        json!({"spec": {"containers": {}}}),
        json!({"spec": {"nodeSelector": []}}),
        json!({"spec": []}),
        json!({"metadata": "x"}),
        json!({"metadata": {"managedFields": [{"fieldsV1": {}, "time": 5}]}}),
    ] {
        assert!(pod(bad.clone()).is_err(), "{bad}");
    }
    let secret = |v: Value| {
        encode(
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": v}})
                .as_object()
                .unwrap(),
        )
    };
    assert!(secret(json!("not base64!")).is_err());
    assert!(secret(json!(5)).is_err());
    // Fields the schema does not have are dropped; null is the zero value.
    let a = pod(json!({"spec": {"nodeName": "n"}})).unwrap();
    let b =
        pod(json!({"spec": {"nodeName": "n", "bogus": [1]}, "status": null, "extra": 1})).unwrap();
    assert_eq!(a, b);
    // The type comes from apiVersion and kind.
    assert!(matches!(
        value(encode(json!({"kind": "Pod"}).as_object().unwrap())),
        m if m.contains("apiVersion")
    ));
    assert!(matches!(
        value(encode(json!({"apiVersion": "v1"}).as_object().unwrap())),
        m if m.contains("kind")
    ));
    assert!(encode(json!({"apiVersion": "v1", "kind": 5}).as_object().unwrap()).is_err());
    assert_eq!(
        encode(
            json!({"apiVersion": "v9", "kind": "Pod"})
                .as_object()
                .unwrap()
        ),
        Err(ProtoError::UnknownKind {
            api_version: "v9".into(),
            kind: "Pod".into()
        })
    );
    assert!(matches!(
        message(&Map::new(), "widgets.herald.dev/v1", "Widget"),
        Err(ProtoError::UnknownKind { .. })
    ));
    // encode_into leaves the buffer as it was on an error.
    let mut out = b"keep".to_vec();
    let bad = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": "x"}});
    assert!(encode_into(bad.as_object().unwrap(), &mut out).is_err());
    assert_eq!(out, b"keep");
}

#[test]
fn deep_and_large_inputs_are_refused_or_written_without_panics() {
    // A schema nested past the limit (JSONSchemaProps recurses).
    let mut deep = json!({"type": "string"});
    for _ in 0..150 {
        deep = json!({"properties": {"x": deep}});
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": deep}}]},
    });
    assert!(matches!(
        encode(crd.as_object().unwrap()),
        Err(ProtoError::Value(m)) if m.contains("deeper")
    ));
    // A long string and many entries: lengths of several bytes.
    let big = "x".repeat(300_000);
    let labels: Map<String, Value> = (0..2000).map(|i| (format!("k{i}"), json!("v"))).collect();
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "labels": labels},
        "data": {"big": big},
    });
    let out = encode(cm.as_object().unwrap()).unwrap();
    let back = decode(&out).unwrap();
    assert_eq!(back["data"]["big"].as_str().map(str::len), Some(300_000));
    assert_eq!(
        back["metadata"]["labels"].as_object().map(Map::len),
        Some(2000)
    );
}

/// The objects of `kube/tests/proto/corpus.json` (every shape and special
/// of the schema, in kinds a cluster keeps) and the JSON the real
/// kube-apiserver served for the captured vectors, named.
fn corpus() -> Vec<(String, Map<String, Value>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/proto/corpus.json")).unwrap();
    let Value::Array(items) = serde_json::from_str(&text).unwrap() else {
        panic!("the corpus is an array")
    };
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(o) = item else {
            panic!("{i}")
        };
        let name = format!(
            "corpus-{i:02}-{}-{}",
            o["kind"].as_str().unwrap(),
            o["metadata"]["name"].as_str().unwrap_or("")
        );
        out.push((name, o));
    }
    let mut paths: Vec<_> = std::fs::read_dir(root.join("tests/vectors/v1.37.2"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Value::Object(served) = v["served"].clone() else {
            panic!()
        };
        let name = path.file_stem().unwrap().to_string_lossy();
        if encode(&served).is_ok() {
            out.push((format!("served-{name}"), served));
        }
    }
    out
}

/// Each object of the corpus encodes, reads back as it was (but for what
/// is not on the wire), and encodes the same again. With
/// `HERALD_PBCHECK_DIR` set, each is written there as `NAME.json` (as Go
/// writes JSON) and `NAME.pb` for `testkit/pbcheck`, which checks the
/// bytes against the apiserver's own serializers.
#[test]
fn every_corpus_object_encodes_as_the_apiserver_does() {
    let dir = std::env::var_os("HERALD_PBCHECK_DIR").map(std::path::PathBuf::from);
    if let Some(dir) = &dir {
        std::fs::create_dir_all(dir).unwrap();
    }
    let corpus = corpus();
    assert!(corpus.len() >= 40, "{} objects", corpus.len());
    for (name, object) in corpus {
        let mine = encode(&object).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = decode(&mine).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(d) = unlike(
            &Value::Object(back.clone()),
            &Value::Object(object.clone()),
            0,
        ) {
            panic!("{name}: reads back with {d}");
        }
        // What is read back is a fixed point.
        assert_eq!(decode(&encode(&back).unwrap()).unwrap(), back, "{name}");
        if let Some(dir) = &dir {
            let mut json = Vec::new();
            gojson::write(&mut json, &Value::Object(object)).unwrap();
            std::fs::write(dir.join(format!("{name}.json")), json).unwrap();
            std::fs::write(dir.join(format!("{name}.pb")), &mine).unwrap();
        }
    }
}
