//! The harness's flags given hostile values: each refused before anything
//! runs, saying which flag and why; a value in range passes on to the
//! next check (an unknown scenario here, so that nothing runs).

use std::process::Command;

/// Runs the harness with `args`: (success, stderr).
fn harness(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_herald-perf"))
        .args(args)
        .output()
        .expect("run herald-perf");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn apiserver_fanout_flags_refuse_what_cannot_run() {
    for rate in ["0", "-1", "NaN", "inf", "1e9", "1000.5"] {
        let flag = format!("--apiserver-rate={rate}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok, "--apiserver-rate {rate} was taken");
        assert!(err.contains("--apiserver-rate must be"), "{rate}: {err}");
    }
    for watchers in ["0", "100,0", "1000001", "18446744073709551615"] {
        let flag = format!("--apiserver-watchers={watchers}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok, "--apiserver-watchers {watchers} was taken");
        assert!(
            err.contains("--apiserver-watchers must"),
            "{watchers}: {err}"
        );
    }
    // Not numbers at all: clap refuses them.
    for (flag, value) in [("--apiserver-rate", "fast"), ("--apiserver-watchers", "x")] {
        let (ok, err) = harness(&[flag, value, "--scenarios", "nosuch"]);
        assert!(!ok && err.contains(flag), "{flag} {value}: {err}");
    }
    // In range: refused only for the unknown scenario.
    let (ok, err) = harness(&[
        "--apiserver-rate",
        "1000",
        "--apiserver-watchers",
        "1,1000000",
        "--scenarios",
        "nosuch",
    ]);
    assert!(!ok && err.contains("unknown scenario"), "{err}");
}

#[test]
fn fleet_restart_flags_refuse_what_cannot_run() {
    for rate in ["0", "-1", "NaN", "inf", "1e9"] {
        let flag = format!("--fleet-rate={rate}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok, "--fleet-rate {rate} was taken");
        assert!(err.contains("--fleet-rate must be"), "{rate}: {err}");
    }
    for watchers in ["0", "18001", "18446744073709551615"] {
        let flag = format!("--fleet-watchers={watchers}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok, "--fleet-watchers {watchers} was taken");
        assert!(err.contains("--fleet-watchers must"), "{watchers}: {err}");
    }
    for (flag, value) in [("--fleet-rate", "fast"), ("--fleet-watchers", "many")] {
        let (ok, err) = harness(&[flag, value, "--scenarios", "nosuch"]);
        assert!(!ok && err.contains(flag), "{flag} {value}: {err}");
    }
    let (ok, err) = harness(&[
        "--fleet-rate",
        "1000",
        "--fleet-watchers",
        "18000",
        "--scenarios",
        "nosuch",
    ]);
    assert!(!ok && err.contains("unknown scenario"), "{err}");
}

#[test]
fn http_rate_refuses_what_cannot_run() {
    for rate in ["0", "-1", "NaN", "inf", "1e12", "1000000.5", "10000,0"] {
        let flag = format!("--http-rate={rate}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok, "--http-rate {rate} was taken");
        assert!(err.contains("--http-rate must list"), "{rate}: {err}");
    }
    let (ok, err) = harness(&["--http-rate=10000,50000,10000", "--scenarios", "nosuch"]);
    assert!(!ok && err.contains("lists a rate twice"), "{err}");
    for rate in ["250", "1000000", "10000,50000"] {
        let flag = format!("--http-rate={rate}");
        let (ok, err) = harness(&[&flag, "--scenarios", "nosuch"]);
        assert!(!ok && err.contains("unknown scenario"), "{rate}: {err}");
    }
}

/// `herald-perf <args> --print-sizes`: its JSON (it runs nothing).
fn sizes(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_herald-perf"))
        .args(args)
        .arg("--print-sizes")
        .output()
        .expect("run herald-perf");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn print_sizes_lists_the_scenarios_that_would_run() {
    let quick = sizes(&[]);
    assert_eq!(quick["profile"]["name"], "quick");
    let names: Vec<&String> = quick["sizes"].as_object().unwrap().keys().collect();
    assert_eq!(
        names.len(),
        9,
        "the heavy three run only when named: {names:?}"
    );
    for heavy in ["pod-memory", "apiserver-fanout", "fleet-restart"] {
        assert!(quick["sizes"].get(heavy).is_none(), "{heavy}");
    }
    assert_eq!(
        quick["sizes"]["fanout-all"]["watchers"],
        serde_json::json!([1000])
    );
    let full = sizes(&["--full"]);
    assert_eq!(full["profile"]["name"], "default");
    assert_eq!(full["sizes"].as_object().unwrap().len(), 12);
    let named = sizes(&["--profile", "smoke", "pod-memory", "--pods", "7"]);
    assert_eq!(
        named["profile"]["heavy"], true,
        "naming a scenario runs it whole"
    );
    assert_eq!(
        named["sizes"],
        serde_json::json!({ "pod-memory": { "pods": 7 } })
    );
}

#[test]
fn a_flag_two_scenarios_share_reaches_both() {
    let doc = sizes(&[
        "--seconds=0.7",
        "--etcd-connections=3",
        "--etcd-in-flight=4",
        "latency",
        "slow-watcher-tax",
        "etcd-fanout",
        "http-fanout",
    ]);
    let s = &doc["sizes"];
    assert_eq!(s["latency"]["seconds"], 0.7);
    assert_eq!(s["slow-watcher-tax"]["seconds"], 0.7);
    for scenario in ["etcd-fanout", "http-fanout"] {
        assert_eq!(
            s[scenario]["etcd"],
            serde_json::json!({ "connections": 3, "in_flight": 4 })
        );
    }
}

#[test]
fn counts_and_rates_that_cannot_run_are_refused() {
    for flag in [
        "--watchers=0",
        "--nodes=10,0",
        "--etcd-watchers=0",
        "--http-watchers=0",
        "--etcd-connections=0",
        "--etcd-in-flight=0",
        "--pods=0",
        "--seconds=0",
        "--rate=-1",
        "--etcd-rate=0",
        "--threads=0",
        "--repeat=0",
        "--min-seconds=-1",
    ] {
        let (ok, err) = harness(&[flag, "--scenarios", "nosuch"]);
        let name = flag.split('=').next().unwrap();
        assert!(!ok && err.contains(name), "{flag}: {err}");
        assert!(!err.contains("unknown scenario"), "{flag}: {err}");
    }
}
