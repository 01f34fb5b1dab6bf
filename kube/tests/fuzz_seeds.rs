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
