//! The committed header is what cbindgen makes of the crate now: a change
//! to the ABI that is not in `include/herald.h` fails here.
//! `HERALD_BLESS=1 cargo test -p herald-c --test header` rewrites it.

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut generated);
    let path = dir.join("include/herald.h");
    if std::env::var_os("HERALD_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/herald.h is not cbindgen's output for the crate now: \
         run HERALD_BLESS=1 cargo test -p herald-c --test header, and commit it"
    );
}
