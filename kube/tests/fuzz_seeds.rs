//! The `stored_value` fuzz target's seeds (`fuzz/seeds/stored_value`,
//! crashes found by fuzzing among them), replayed through the target's own
//! properties (`support/stored_value.rs`, the file the target includes)
//! without libFuzzer: a fixed crash stays fixed.

use std::path::Path;

#[path = "support/stored_value.rs"]
mod properties;

#[test]
fn every_stored_value_seed_keeps_the_fuzz_targets_properties() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/stored_value");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 25, "{} seeds", seeds.len());
    let mut served = 0;
    for path in seeds {
        let data = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match std::panic::catch_unwind(|| properties::check_input(&data)) {
            Ok(n) => served += n,
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                panic!("seed {name}: {why}");
            }
        }
    }
    // The captured objects are served under their own keys (and so
    // round-tripped), not only refused for a name that is not the key's.
    assert!(served >= 20, "served {served} times");
}

/// Found by fuzzing (`crash-quantity-not-utf8`): a stored quantity that
/// `resource.ParseQuantity` refuses (here `"\xff"`) was served as
/// `"\u{fffd}"`, which the encoder then refused. The apiserver fails the
/// whole object (`Quantity.Unmarshal` parses the string): so does Herald.
#[test]
fn a_stored_quantity_parse_quantity_refuses_fails_the_object() {
    use herald_kube::Decoder;
    // A Node {metadata {name: "a"}, status {capacity {"cpu": <quantity>}}}.
    let node = |quantity: &[u8]| {
        let mut q = vec![0x0a, quantity.len() as u8];
        q.extend_from_slice(quantity);
        let mut entry = vec![0x0a, 3, b'c', b'p', b'u', 0x12, q.len() as u8];
        entry.extend_from_slice(&q);
        let mut status = vec![0x0a, entry.len() as u8];
        status.extend_from_slice(&entry);
        let mut node = vec![0x0a, 3, 0x0a, 1, b'a', 0x1a, status.len() as u8];
        node.extend_from_slice(&status);
        properties::envelope("v1", "Node", &node)
    };
    let seed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/seeds/stored_value/crash-quantity-not-utf8"),
    )
    .unwrap();
    assert_eq!(properties::value_of(&seed), Some(node(b"\xff")));
    for bad in [&b"\xff"[..], b"", b"6\xffMi", b"1e", b"Pi", b" 1"] {
        let e = Decoder::new()
            .decode(b"a", &node(bad), 1.into())
            .unwrap_err();
        assert_eq!(e.reason(), "protobuf", "{bad:?}");
        assert!(e.to_string().contains("ParseQuantity"), "{e}");
    }
    // What ParseQuantity takes is served as stored, and round-trips.
    for good in [&b"4"[..], b"64Mi", b"100m", b"1e3", b"m", b"."] {
        let value = node(good);
        let o = Decoder::new().decode(b"a", &value, 1.into()).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(o.payload()).unwrap();
        let cpu = doc["status"]["capacity"]["cpu"].as_str().unwrap();
        assert_eq!(cpu.as_bytes(), good);
        assert!(properties::check(b"a", &value), "{cpu}");
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
    out.push((number << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Found by reading json.rs while fuzzing (seed
/// `zero-creation-timestamp`): a stored `Timestamp` of Go's zero time
/// (`0001-01-01T00:00:00Z`) was served as that string; `metav1.Time` and
/// `MicroTime` marshal a zero time (`IsZero`) to `null`, and the encoder
/// writes no bytes for it, so the round trip lost the field. With it, the
/// rest of `time.Unix(seconds, nanos)`: MicroTime's nanoseconds truncated
/// toward zero and carried into the seconds, Time's dropped, the last
/// occurrence of the message the value. Expected values printed by
/// k8s.io/apimachinery v0.37.2 (`Timestamp.Marshal`, then
/// `Time`/`MicroTime` `Unmarshal` and `MarshalJSON`).
#[test]
fn times_are_read_as_time_unix_and_the_zero_time_is_null() {
    use herald_kube::Decoder;
    let seed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/seeds/stored_value/zero-creation-timestamp"),
    )
    .unwrap();
    assert_eq!(properties::check_input(&seed), 1);
    let timestamp = |seconds: i64, nanos: i32| {
        let mut t = vec![0x08];
        varint(&mut t, seconds as u64);
        t.push(0x10);
        varint(&mut t, i64::from(nanos) as u64);
        t
    };
    // (seconds, nanos, Time's JSON, MicroTime's JSON); None is null.
    const ZERO: i64 = -62_135_596_800;
    let table: &[(i64, i32, Option<&str>, Option<&str>)] = &[
        (
            10,
            -1,
            Some("1970-01-01T00:00:10Z"),
            Some("1970-01-01T00:00:10.000000Z"),
        ),
        (
            10,
            -1000,
            Some("1970-01-01T00:00:10Z"),
            Some("1970-01-01T00:00:09.999999Z"),
        ),
        (
            10,
            -1500,
            Some("1970-01-01T00:00:10Z"),
            Some("1970-01-01T00:00:09.999999Z"),
        ),
        (
            10,
            1_999_999_999,
            Some("1970-01-01T00:00:10Z"),
            Some("1970-01-01T00:00:11.999999Z"),
        ),
        (ZERO, 0, None, None),
        (ZERO, 999, None, None),
        (ZERO - 1, 1_000_000_000, Some("0000-12-31T23:59:59Z"), None),
        (
            0,
            i32::MIN,
            Some("1970-01-01T00:00:00Z"),
            Some("1969-12-31T23:59:57.852517Z"),
        ),
        (
            -1,
            999_999_999,
            Some("1969-12-31T23:59:59Z"),
            Some("1969-12-31T23:59:59.999999Z"),
        ),
        (ZERO, 1000, None, Some("0001-01-01T00:00:00.000001Z")),
    ];
    let name_a = {
        let mut m = Vec::new();
        bytes_field(&mut m, 1, b"a");
        m
    };
    for &(seconds, nanos, time, micro) in table {
        let ts = timestamp(seconds, nanos);
        // A Pod's metadata.creationTimestamp (Time) and a Lease's
        // spec.renewTime (*MicroTime), the first occurrence of each
        // overwritten by the second.
        let mut meta = name_a.clone();
        bytes_field(&mut meta, 8, &timestamp(1, 0));
        bytes_field(&mut meta, 8, &ts);
        let mut pod = Vec::new();
        bytes_field(&mut pod, 1, &meta);
        let mut spec = Vec::new();
        bytes_field(&mut spec, 4, &timestamp(1, 0));
        bytes_field(&mut spec, 4, &ts);
        let mut lease = Vec::new();
        bytes_field(&mut lease, 1, &name_a);
        bytes_field(&mut lease, 2, &spec);
        for (value, at, want) in [
            (
                properties::envelope("v1", "Pod", &pod),
                ["metadata", "creationTimestamp"],
                time,
            ),
            (
                properties::envelope("coordination.k8s.io/v1", "Lease", &lease),
                ["spec", "renewTime"],
                micro,
            ),
        ] {
            let o = Decoder::new().decode(b"a", &value, 1.into()).unwrap();
            let doc: serde_json::Value = serde_json::from_slice(o.payload()).unwrap();
            let got = doc[at[0]].get(at[1]).and_then(serde_json::Value::as_str);
            assert_eq!(got, want, "({seconds}, {nanos}) {}", at[1]);
            assert!(properties::check(b"a", &value));
        }
    }
}

/// Found by fuzzing's properties (seed `embedded-float-zero`): embedded
/// JSON holding `0.0` (a `fieldsV1` here) is served as Go writes the
/// number, `0` (the apiserver copies the raw text, `0.0`: Herald parses
/// embedded JSON, so a number's text is not kept), and written back to
/// protobuf the same way. The same number for Go (a `float64` either
/// way): the target compares numbers as numbers.
#[test]
fn embedded_json_numbers_round_trip_as_numbers() {
    use herald_kube::{Decoder, proto};
    let seed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/seeds/stored_value/embedded-float-zero"),
    )
    .unwrap();
    assert_eq!(properties::check_input(&seed), 1);
    let value = properties::value_of(&seed).unwrap();
    let o = Decoder::new().decode(b"a", &value, 1.into()).unwrap();
    let text = std::str::from_utf8(o.payload()).unwrap();
    assert!(text.contains(r#""fieldsV1":{"a":0}"#), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(o.payload()).unwrap();
    let again = proto::encode(doc.as_object().unwrap()).unwrap();
    assert!(
        again.windows(7).any(|w| w == br#"{"a":0}"#),
        "{}",
        String::from_utf8_lossy(&again)
    );
}
