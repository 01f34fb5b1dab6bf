//! The harness's own correctness: every scenario at tiny sizes (the smoke
//! profile), through the real binary (so the counting allocator is the
//! global one), with every delivery checked against its filter and order.
//! Speed is not judged here: this machine is shared and noisy. The suite
//! includes etcd-fanout, whose rows say why they skipped where there is no
//! etcd (tests/etcd.rs checks that scenario itself, and needs etcd), and
//! http-fanout (Herald's HTTP front on loopback; its etcd rows likewise).

mod support;

#[test]
fn every_scenario_runs_and_every_delivery_is_right() {
    let run = support::smoke_with("smoke", |dir| {
        vec!["--plots".to_owned(), dir.display().to_string()]
    });
    let (dir, stdout, doc) = (&run.dir, &run.stdout, &run.doc);
    let rows = doc["rows"].as_array().expect("rows");
    for scenario in [
        "fanout-all",
        "fanout-indexed",
        "slow-watcher-tax",
        "catch-up",
        "latency",
        "memory",
    ] {
        let herald: Vec<_> = rows
            .iter()
            .filter(|r| r["scenario"] == scenario && r["system"] == "herald")
            .collect();
        assert!(!herald.is_empty(), "no herald row for {scenario}");
        for r in herald {
            assert_eq!(r["note"], "", "{scenario}: {r}");
            assert_eq!(r["violations"], 0, "{scenario}: {r}");
            assert_eq!(r["ended"], 0, "{scenario}: {r}");
            if scenario == "memory" {
                assert!(r["bytes_per_watcher"].as_f64().unwrap() > 0.0, "{r}");
            } else {
                assert_eq!(r["delivered"], r["owed"], "{scenario}: {r}");
                assert!(r["owed"].as_u64().unwrap() > 0, "{scenario}: {r}");
            }
        }
    }
    // http-fanout: Herald's HTTP front and the in-process baseline ran
    // every case, every delivery over the wire in order and admitted by
    // its watcher's selector, with the memory per connection measured.
    for system in ["herald-server", "herald-server-protobuf", "herald+source"] {
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r["scenario"] == "http-fanout" && r["system"] == system)
            .collect();
        assert_eq!(mine.len(), 3, "{system}: all, selector mix, paced");
        for r in mine {
            assert_eq!(r["note"], "", "{r}");
            assert_eq!(r["violations"], 0, "{r}");
            assert_eq!(r["ended"], 0, "{r}");
            assert_eq!(r["delivered"], r["owed"], "{r}");
            assert!(r["owed"].as_u64().unwrap() > 0, "{r}");
            if system != "herald+source" {
                let per = r["spread"]["bytes_per_connection"]["median"].as_f64();
                assert!(per.is_some_and(|b| b > 0.0), "{r}");
            }
        }
    }
    assert!(stdout.contains("### http-fanout"), "{stdout}");
    // kubelet: both object managers served every get, caught up with every
    // change, stopped the immutable objects' watches (1 in 10 of 100) and
    // had their heap counted.
    for system in ["herald-kubelet", "kubelet-reference"] {
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r["scenario"] == "kubelet" && r["system"] == system)
            .collect();
        assert_eq!(mine.len(), 1, "{system}");
        let r = mine[0];
        assert_eq!(r["note"], "", "{r}");
        assert_eq!(r["violations"], 0, "{r}");
        assert_eq!(r["watchers"], 90, "{r}");
        for key in [
            "changes_per_s",
            "heap_bytes",
            "startup_get_p99_us",
            "get_p99_us",
        ] {
            let v = r["spread"][key]["median"].as_f64();
            assert!(v.is_some_and(|v| v > 0.0), "{key}: {r}");
        }
    }
    assert!(stdout.contains("### kubelet"), "{stdout}");
    // Every peer either ran cleanly (order and filters held) or says why
    // it was skipped.
    for r in rows {
        assert!(
            r["violations"] == 0 || r["note"].as_str().unwrap().starts_with("skipped"),
            "{r}"
        );
    }
    // The method: every measured row carries its rounds (the smoke
    // profile runs 2, interleaved), each figure's min <= median <= max
    // over them, and a peer's ratio to Herald taken per round.
    for r in rows.iter().filter(|r| {
        r["scenario"] != "memory" && !r["note"].as_str().unwrap().starts_with("skipped")
    }) {
        let rounds = r["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), 2, "{r}");
        let order: Vec<_> = rounds.iter().map(|x| x["order"].as_u64()).collect();
        assert!(
            rounds
                .iter()
                .all(|x| x["cpu"]["wall_s"].as_f64() > Some(0.0)),
            "{r}"
        );
        let metric = r["metric"].as_str().expect("metric");
        let s = &r["spread"][metric];
        let (min, med, max) = (s["min"].as_f64(), s["median"].as_f64(), s["max"].as_f64());
        assert!(min <= med && med <= max && min.is_some(), "{r}");
        assert_eq!(s["rounds"], 2, "{r}");
        if r["system"] != "herald" {
            assert_eq!(r["ratio_rounds"].as_array().unwrap().len(), 2, "{r}");
            assert_eq!(r["ratio"]["rounds"], 2, "{r}");
        }
        // The order rotates: a system is not always in the same place,
        // unless it runs alone.
        if order[0] != Some(0) || order[1] != Some(0) {
            assert_ne!(order[0], order[1], "{r}");
        }
    }
    assert!(doc["targets"].as_array().unwrap().len() >= 9);
    for plot in ["fanout-all.svg", "latency.svg"] {
        let svg = std::fs::read_to_string(dir.join(plot)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("herald"), "{plot}");
    }
    assert!(stdout.contains("### fanout-all") && stdout.contains("### targets"));
}

/// Every in-memory scenario again with Herald fed through its in-memory
/// source and a reflector: the embedded setup end to end delivers exactly
/// what the direct writer does. (etcd-fanout has its own source, etcd:
/// tests/etcd.rs.)
#[test]
fn every_scenario_runs_through_the_in_memory_source() {
    let run = support::smoke(
        "source",
        &[
            "--herald-source",
            "--systems",
            "herald",
            "--scenarios",
            "fanout-all,fanout-indexed,slow-watcher-tax,catch-up,latency,memory",
            "--no-plots",
        ],
    );
    let rows: Vec<_> = run.doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["scenario"] != "memory")
        .collect();
    assert!(rows.len() >= 10);
    for r in rows {
        assert_eq!(r["note"], "", "{r}");
        assert_eq!(r["violations"], 0, "{r}");
        assert_eq!(r["ended"], 0, "{r}");
        assert_eq!(r["delivered"], r["owed"], "{r}");
    }
}

/// http-fanout named: its heavy system too, `herald-server-tls` (TLS, a
/// bearer token, RBAC), every delivery exact, and its targets judged.
#[test]
fn http_fanout_named_runs_its_tls_row() {
    let run = support::smoke("tls", &["--scenarios", "http-fanout", "--no-plots"]);
    let tls: Vec<_> = run
        .rows("http-fanout")
        .into_iter()
        .filter(|r| r["system"] == "herald-server-tls")
        .collect();
    assert_eq!(tls.len(), 3, "all, selector mix, paced");
    for r in tls {
        assert_eq!(r["note"], "", "{r}");
        assert_eq!(r["violations"], 0, "{r}");
        assert_eq!(r["ended"], 0, "{r}");
        assert_eq!(r["delivered"], r["owed"], "{r}");
        assert!(r["owed"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(
        run.stdout.contains(
            "http-fanout: over TLS with authentication and RBAC, the server's CPU per delivery"
        ),
        "{}",
        run.stdout
    );
}
