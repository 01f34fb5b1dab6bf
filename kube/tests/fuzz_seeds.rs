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
