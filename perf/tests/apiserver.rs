//! The apiserver-fanout scenario against the real kube-apiserver and
//! etcd, at the smoke profile's size, through the real binary and the
//! real `herald-server`: both systems run, every watcher gets every write
//! once and in order, and the figures the table shows were measured.
//!
//! It needs the kube-apiserver the test command builds
//! (`HERALD_KUBE_APISERVER`, from `scripts/ensure-kube-apiserver.sh`),
//! etcd (`scripts/ensure-etcd.sh`) and a built `herald-server` beside the
//! harness (`HERALD_SERVER` names another): `#[ignore]`d so that a plain
//! `cargo test` does not wait minutes for that build; `scripts/test.sh`
//! runs it with `--ignored` once the build is done, and it fails (it does
//! not skip) when anything is missing.

mod support;

#[test]
#[ignore = "needs the real kube-apiserver: scripts/test.sh runs it"]
fn apiserver_fanout_runs_both_systems_against_the_real_apiserver() {
    let run = support::smoke(
        "apiserver",
        &["--scenarios", "apiserver-fanout", "--no-plots"],
    );
    let (stdout, doc) = (&run.stdout, &run.doc);
    assert!(stdout.contains("### apiserver-fanout"), "{stdout}");

    let rows: Vec<&serde_json::Value> = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["scenario"] == "apiserver-fanout")
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        // Ran (not skipped), and every delivery was right: each watcher
        // got every write of the run once, in order.
        assert_eq!(r["note"], "", "{r}");
        assert_eq!(r["violations"], 0, "{r}");
        assert_eq!(r["ended"], 0, "{r}");
        let watchers = r["watchers"].as_u64().unwrap();
        assert!(watchers > 0, "{r}");
        assert!(r["owed"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["delivered"], r["owed"], "{r}");
        let rounds = r["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), 2, "{r}");
        for x in rounds {
            assert!(x["deliveries_per_s"].as_f64().unwrap() > 0.0, "{r}");
            assert!(x["p99_us"].as_f64().unwrap() > 0.0, "{r}");
            let peer = &x["peer"];
            assert!(peer["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
            assert!(peer["rss_peak_bytes"].as_u64().unwrap() > 0, "{r}");
            let api = &peer["apiserver"];
            assert!(api["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
            assert!(api["us_per_write"].as_f64().unwrap() > 0.0, "{r}");
            assert!(api["heap_inuse_bytes"].as_u64().unwrap() > 0, "{r}");
            // What the apiserver serves besides its own informers' pod
            // watch: every watcher and Herald's watch, on it directly; with
            // Herald in front, Herald's watch whatever N is (two for the
            // moment Herald swaps its watch for a short one that asks for
            // progress, before the apiserver has seen the first closed).
            let watches = api["watches"].as_u64().unwrap();
            match r["system"].as_str().unwrap() {
                "kube-apiserver" => {
                    assert!((watchers + 1..=watchers + 2).contains(&watches), "{r}")
                }
                "herald+apiserver" => assert!((1..=2).contains(&watches), "{r}"),
                other => panic!("an unknown system {other}"),
            }
        }
        assert_eq!(r["ratio_rounds"].as_array().unwrap().len(), 2, "{r}");
    }
    let targets = doc["targets"].as_array().unwrap();
    let mine = targets
        .iter()
        .filter(|t| t["goal"].as_str().unwrap().starts_with("apiserver-fanout"))
        .count();
    assert_eq!(mine, 3, "{targets:?}");
}
