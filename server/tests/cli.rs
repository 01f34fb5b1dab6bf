//! herald-server's flags, tried as a careless or hostile operator would:
//! each mistake ends the process at once with a message that names it
//! and a non-zero status, before anything is served.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs herald-server with `args`; its status and what it printed, or a
/// failure if it is still running after 30 s.
fn run(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herald-server"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            return (status.code().unwrap_or(-1), text);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("herald-server {args:?} still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kubeconfig(server: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("herald-cli-{}.kubeconfig", std::process::id()));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\"}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn upstream_mistakes_end_the_process_with_a_message() {
    // Two upstreams at once.
    let (code, text) = run(&["--kubeconfig", "/x", "--etcd", "http://127.0.0.1:2379"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--etcd") && text.contains("--kubeconfig"),
        "{text}"
    );

    // A kubeconfig that is not there, or not one.
    let (code, text) = run(&["--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("/nonexistent/kubeconfig"), "{text}");
    let garbage = std::env::temp_dir().join(format!("herald-cli-garbage-{}", std::process::id()));
    std::fs::write(&garbage, b"\x00\xff: [not yaml").unwrap();
    let (code, text) = run(&["--kubeconfig", garbage.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("configuration"), "{text}");

    // A context it does not have.
    let config = kubeconfig("https://127.0.0.1:1");
    let (code, text) = run(&[
        "--kubeconfig",
        config.to_str().unwrap(),
        "--context",
        "nope",
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("nope"), "{text}");

    // An apiserver that is not there: refused at start, not served empty.
    let (code, text) = run(&[
        "--kubeconfig",
        config.to_str().unwrap(),
        "--resources",
        "pods",
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("/version") && text.contains("127.0.0.1:1"),
        "{text}"
    );

    // --resources without an upstream; durations that are not.
    let (code, text) = run(&["--resources", "pods"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("--etcd or --kubeconfig"), "{text}");
    let (code, text) = run(&["--demo", "1", "--request-timeout=-1"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("request-timeout"), "{text}");
    // The shutdown's: refused before anything is served (0 is no delay,
    // but no grace at all is not a grace).
    for (flag, bad) in [
        ("--shutdown-delay", "-1"),
        ("--shutdown-delay", "NaN"),
        ("--shutdown-delay", "inf"),
        ("--shutdown-grace", "0"),
        ("--shutdown-grace", "-0.5"),
        ("--shutdown-grace", "nan"),
    ] {
        let (code, text) = run(&["--demo", "1", &format!("{flag}={bad}")]);
        assert_eq!(code, 2, "{flag}={bad}: {text}");
        assert!(
            text.contains(&flag[2..]) && text.contains("is not a duration"),
            "{flag}={bad}: {text}"
        );
        assert!(!text.contains("serving"), "{flag}={bad}: {text}");
    }
    let (code, text) = run(&["--demo", "1", "--shutdown-grace", "ten"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--shutdown-grace"), "{text}");
    // Resources it does not know, or cannot tell apart.
    for bad in ["nosuch", ",,,", "deployments.batch"] {
        let (code, text) = run(&["--etcd", "http://127.0.0.1:1", "--resources", bad]);
        assert_eq!(code, 1, "{bad}: {text}");
        assert!(
            text.contains("unknown or ambiguous resource"),
            "{bad}: {text}"
        );
    }
    // An encryption configuration that is not there, or not one.
    let (code, text) = run(&[
        "--etcd",
        "http://127.0.0.1:1",
        "--encryption-provider-config",
        "/nonexistent/enc.yaml",
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("/nonexistent/enc.yaml"), "{text}");
    let (code, text) = run(&[
        "--etcd",
        "http://127.0.0.1:1",
        "--encryption-provider-config",
        garbage.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("--encryption-provider-config"), "{text}");
    let _ = std::fs::remove_file(config);
    let _ = std::fs::remove_file(garbage);
}
