//! The etcd-fanout scenario against a real etcd, at the smoke profile's
//! sizes, through the real binary (so the counting allocator is the global
//! one): both systems run, every watcher gets every revision once and in
//! order, and every figure the table shows was measured.
//!
//! This test needs an etcd server binary and fails (it does not skip)
//! without one: `scripts/test.sh` installs it first
//! (`eval "$(scripts/ensure-etcd.sh)"` does the same by hand).

mod support;

#[test]
fn etcd_fanout_runs_both_systems_against_a_real_etcd() {
    if let Err(e) = herald_testkit::etcd::etcd_binary() {
        panic!("the etcd-fanout test needs etcd: {e}");
    }
    let run = support::smoke("etcd", &["--scenarios", "etcd-fanout", "--no-plots"]);
    let (stdout, doc) = (&run.stdout, &run.doc);
    assert!(stdout.contains("### etcd-fanout"), "{stdout}");

    let rows: Vec<&serde_json::Value> = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["scenario"] == "etcd-fanout")
        .collect();
    for system in [
        "herald+etcd",
        "herald+etcd-json",
        "etcd",
        "etcd-one-connection",
    ] {
        let mine: Vec<_> = rows.iter().filter(|r| r["system"] == system).collect();
        // One flat-out and one paced case (the smoke profile's one size).
        assert_eq!(mine.len(), 2, "{system}: {rows:?}");
        for r in mine {
            // Ran (not skipped), and every delivery was right: each
            // watcher got every revision of the run once, in order.
            assert_eq!(r["note"], "", "{r}");
            assert_eq!(r["violations"], 0, "{r}");
            assert_eq!(r["ended"], 0, "{r}");
            assert!(r["owed"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["delivered"], r["owed"], "{r}");
            let rounds = r["rounds"].as_array().expect("rounds");
            assert_eq!(rounds.len(), 2, "{r}");
            for x in rounds {
                assert!(x["deliveries_per_s"].as_f64().unwrap() > 0.0, "{r}");
                assert!(x["p99_us"].as_f64().unwrap() > 0.0, "{r}");
                assert!(x["acked_p99_us"].as_f64().is_some(), "{r}");
                let peer = &x["peer"];
                assert!(peer["cpu_s"].as_f64().unwrap() > 0.0, "etcd's CPU: {r}");
                assert!(
                    peer["rss_peak_bytes"].as_u64().unwrap() > 0,
                    "etcd's RSS: {r}"
                );
                assert!(peer["heap_peak_bytes"].as_i64().unwrap() > 0, "heap: {r}");
                assert!(peer["us_per_write"].as_f64().unwrap() > 0.0, "{r}");
                assert!(peer["put_p99_us"].as_f64().unwrap() > 0.0, "{r}");
                let connections = peer["connections"].as_u64();
                match system {
                    "herald+etcd" | "herald+etcd-json" => assert_eq!(connections, None, "{r}"),
                    "etcd" => assert_eq!(connections, Some(2), "the smoke profile's: {r}"),
                    _ => assert_eq!(connections, Some(1), "{r}"),
                }
            }
            // Herald's advantage, taken per round, on both rows.
            assert_eq!(r["ratio_rounds"].as_array().unwrap().len(), 2, "{r}");
        }
    }
    let targets = doc["targets"].as_array().unwrap();
    let etcd_targets: Vec<_> = targets
        .iter()
        .filter(|t| t["goal"].as_str().unwrap().starts_with("etcd-fanout"))
        .collect();
    assert_eq!(etcd_targets.len(), 3, "{targets:?}");
}
