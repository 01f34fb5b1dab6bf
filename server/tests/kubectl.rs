//! `kubectl` (the machine image's) against Herald's HTTP front: discovery,
//! `get pods`, label and field selectors, a missing pod, and `get -w`
//! receiving changes as they happen.
//!
//! Where no `kubectl` is on the PATH the tests say so loudly on stderr and
//! pass (the image ships one; CI's output shows the message if not).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

fn kubectl() -> Option<&'static str> {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             kubectl IS NOT ON THE PATH: the kubectl tests did not run\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
    }
    found.then_some("kubectl")
}

/// Runs kubectl against `url` (no kubeconfig: a throwaway cache dir).
fn run(url: &str, args: &[&str]) -> (bool, String, String) {
    let cache = std::env::temp_dir().join(format!("herald-kubectl-{}", std::process::id()));
    let out = Command::new("kubectl")
        .arg(format!("--server={url}"))
        .arg(format!("--cache-dir={}", cache.display()))
        .arg("--request-timeout=20s")
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("run kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn seed(store: &Store) {
    for i in 0..30u64 {
        let app = if i % 3 == 0 { "web" } else { "db" };
        store.put(
            &format!("ns-{}", i % 2),
            &format!("pod-{i}"),
            app,
            &format!("node-{}", i % 4),
            0,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_pods_with_selectors_and_a_missing_one() {
    if kubectl().is_none() {
        return;
    }
    let store = Store::new();
    seed(&store);
    let server = start(&store).await;
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || {
        let all = run(&url, &["get", "pods", "-A"]);
        let web = run(&url, &["get", "pods", "-n", "ns-0", "-l", "app=web"]);
        let node = run(
            &url,
            &[
                "get",
                "pods",
                "-A",
                "--field-selector",
                "spec.nodeName=node-1",
            ],
        );
        let one = run(&url, &["get", "pod", "-n", "ns-1", "pod-7", "-o", "json"]);
        let missing = run(&url, &["get", "pod", "-n", "ns-1", "nope"]);
        let bad = run(&url, &["get", "pods", "-A", "-l", "app in (web"]);
        (all, web, node, one, missing, bad)
    })
    .await
    .unwrap();
    let (all, web, node, one, missing, bad) = out;
    assert!(all.0, "get pods -A: {}", all.2);
    // The server's table: kubectl's pod columns.
    let head: Vec<&str> = all
        .1
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        head,
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{}",
        all.1
    );
    // The fixture's pods: one container, no status of it yet; Running.
    let first: Vec<&str> = all.1.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&first[2..5], ["0/1", "Running", "0"], "{}", all.1);
    for i in 0..30 {
        assert!(
            all.1.contains(&format!("pod-{i} ")),
            "pod-{i} in:\n{}",
            all.1
        );
    }
    // ns-0 holds the even pods; app=web every third: 0, 6, 12, 18, 24.
    assert!(web.0, "{}", web.2);
    let names: Vec<&str> = web
        .1
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        ["pod-0", "pod-12", "pod-18", "pod-24", "pod-6"],
        "{}",
        web.1
    );
    assert!(node.0, "{}", node.2);
    let mut on_node: Vec<&str> = node
        .1
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    on_node.sort_unstable();
    let mut want: Vec<String> = (0..30)
        .filter(|i| i % 4 == 1)
        .map(|i| format!("pod-{i}"))
        .collect();
    want.sort_unstable();
    assert_eq!(on_node, want, "{}", node.1);
    assert!(one.0, "{}", one.2);
    let v: serde_json::Value = serde_json::from_str(&one.1).unwrap();
    assert_eq!(v["metadata"]["name"], "pod-7");
    assert!(!missing.0);
    assert!(missing.2.contains("\"nope\" not found"), "{}", missing.2);
    assert!(!bad.0);
    assert!(bad.2.contains("unable to parse requirement"), "{}", bad.2);
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_pods_watch_receives_changes() {
    if kubectl().is_none() {
        return;
    }
    let store = Store::new();
    seed(&store);
    let server = start(&store).await;
    let cache = std::env::temp_dir().join(format!("herald-kubectl-w-{}", std::process::id()));
    let mut child = Command::new("kubectl")
        .arg(format!("--server={}", server.url()))
        .arg(format!("--cache-dir={}", cache.display()))
        .args(["get", "pods", "-A", "-w", "--output-watch-events"])
        .env("KUBECONFIG", "/dev/null")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl -w");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                let hit = line.contains(needle);
                seen.push(line);
                if hit {
                    return true;
                }
            }
        }
        false
    };
    let mut seen = Vec::new();
    // The initial state first (as ADDED), then changes.
    assert!(wait_for("pod-29", &mut seen), "{seen:#?}");
    store.put("ns-1", "fresh", "web", "node-9", 1);
    assert!(wait_for("fresh", &mut seen), "{seen:#?}");
    assert!(seen.last().unwrap().starts_with("ADDED"), "{seen:#?}");
    store.put("ns-0", "pod-4", "web", "node-9", 2);
    assert!(wait_for("pod-4 ", &mut seen), "{seen:#?}");
    assert!(seen.last().unwrap().starts_with("MODIFIED"), "{seen:#?}");
    store.delete("ns-1", "fresh");
    assert!(wait_for("fresh", &mut seen), "{seen:#?}");
    assert!(seen.last().unwrap().starts_with("DELETED"), "{seen:#?}");
    let _ = child.kill();
    let _ = child.wait();
    server.kill();
}
