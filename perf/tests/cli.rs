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
