//! Hostile clients against the real `herald-server` binary (a process of
//! its own, so that its memory is its own): malformed requests, a client
//! that never reads its socket, connections dropped mid-chunk, and 10,000
//! idle watch connections with the memory each costs the server.

#[path = "support/proc.rs"]
mod proc;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use proc::{Proc, open_watch, rss};

#[test]
fn malformed_requests_get_typed_errors_and_the_server_lives() {
    let mut p = Proc::start(&["--demo", "50", "--demo-rate", "0"]);
    let huge = format!("app%3D{}", "x".repeat(100_000));
    // About 35 KB: 6,000 values in one set, each a valid label value;
    // past the 16 KiB cap on a selector.
    let big_set = format!(
        "app+in+({})",
        (0..6_000)
            .map(|i| format!("v{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let cases: Vec<(String, u16, &str)> = vec![
        (
            "/api/v1/pods?labelSelector=app+in+(web".into(),
            400,
            "unable to parse requirement",
        ),
        // A malformed escape drops its pair, as Go's `url.ParseQuery`
        // (the apiserver lists everything); bytes that are not UTF-8 are
        // a 400.
        ("/api/v1/pods?labelSelector=%zz%".into(), 200, "PodList"),
        (
            "/api/v1/pods?labelSelector=%ff".into(),
            400,
            "not valid UTF-8",
        ),
        // Past hyper's limit on a request line: 414, before any parsing.
        (format!("/api/v1/pods?labelSelector={huge}"), 414, ""),
        (
            format!("/api/v1/pods?labelSelector={big_set}"),
            400,
            "at most 16384",
        ),
        (
            "/api/v1/pods?fieldSelector=spec.nodeName".into(),
            400,
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
        ),
        (
            "/api/v1/pods?resourceVersion=abc".into(),
            400,
            r#"invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"#,
        ),
        (
            "/api/v1/pods?resourceVersion=-3".into(),
            400,
            r#"invalid resource version: resourceVersion: Invalid value: \"-3\": strconv.ParseUint: parsing \"-3\": invalid syntax"#,
        ),
        (
            "/api/v1/pods?resourceVersionMatch=Exact".into(),
            422,
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "/api/v1/pods?limit=99999999999999999999999".into(),
            400,
            "limit",
        ),
        ("/api/v1/pods?continue=not-a-token".into(), 400, "continue"),
        // Anything but `0` and `false` is a watch (the apiserver's
        // conversion).
        (
            "/api/v1/pods?watch=sure&timeoutSeconds=1".into(),
            200,
            "ADDED",
        ),
        (
            "/api/v1/pods?watch=1&timeoutSeconds=-1".into(),
            400,
            "timeoutSeconds",
        ),
        (
            "/api/v1/pods?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1".into(),
            422,
            "sendInitialEvents",
        ),
        (
            "/api/v1/pods?resourceVersion=999999999&resourceVersionMatch=Exact".into(),
            504,
            "ResourceVersionTooLarge",
        ),
        ("/api/v1/widgets".into(), 404, "NotFound"),
        (
            "/api/v1/namespaces/a/pods/nope".into(),
            404,
            "\\\"nope\\\" not found",
        ),
        ("/api/v2/pods".into(), 404, "NotFound"),
        // A namespace is a DNS-1123 label: `..` is refused, never read as a
        // second spelling of "every namespace".
        (
            "/api/v1/namespaces/%2e%2e/pods".into(),
            400,
            "invalid namespace",
        ),
    ];
    for (path, code, needle) in &cases {
        let (got, body) = p.get(path);
        let short: String = path.chars().take(120).collect();
        let brief: String = body.chars().take(300).collect();
        assert_eq!(got, *code, "{short}: {brief}");
        assert!(body.contains(needle), "{short}: {needle:?} not in {brief}");
        if got != 200 && got != 414 {
            let status: serde_json::Value =
                serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["code"], *code);
        }
    }
    // Methods the server does not serve.
    let (code, body) = p.raw(
        b"DELETE /api/v1/namespaces/a/pods/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 405, "{body}");
    // Not HTTP at all, a truncated request, a header flood.
    let (code, _) = p.raw(b"\x00\x01\x02 hello\r\n\r\n");
    assert_eq!(code, 400);
    let _ = p.raw_within(
        b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost:",
        Duration::from_millis(300),
    );
    // Past Go's (and Herald's) 1 MiB and 4 KiB of request head.
    let flood = format!(
        "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nX-A: {}\r\n\r\n",
        "a".repeat(2 << 20)
    );
    let (code, _) = p.raw(flood.as_bytes());
    assert!(code == 431 || code == 400 || code == 0, "{code}");
    assert!(p.alive(), "the server died");
    assert_eq!(p.get("/healthz").0, 200);
    let (code, body) = p.get("/api/v1/pods?limit=5");
    assert_eq!(code, 200);
    assert!(body.contains("PodList"));
}

#[test]
fn a_client_that_never_reads_is_closed_and_does_not_slow_the_others() {
    let mut p = Proc::start(&[
        "--demo",
        "1000",
        "--demo-rate",
        "4000",
        "--write-stall-timeout",
        "2",
    ]);
    let before = rss(p.pid());
    // The hostile client: opens a watch of everything and never reads.
    let mut stuck = TcpStream::connect(p.addr).unwrap();
    write!(
        stuck,
        "GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    // A healthy one, reading as it comes.
    let mut healthy = open_watch(p.addr, "resourceVersion=0&labelSelector=app%3Dapp-1");
    let start = Instant::now();
    let mut events = 0u64;
    let mut line = String::new();
    let mut peak = before;
    while start.elapsed() < Duration::from_secs(6) {
        line.clear();
        healthy.read_line(&mut line).unwrap();
        if line.contains("\"type\":\"") {
            events += 1;
        }
        if events.is_multiple_of(200) {
            peak = peak.max(rss(p.pid()));
        }
    }
    // app-1 is one pod in 7: about 570 changes a second for it, and it
    // must not have been held back by the stuck client.
    let rate = events as f64 / start.elapsed().as_secs_f64();
    assert!(rate > 200.0, "the healthy watcher got {rate:.0} events/s");
    // The stuck client's connection was closed by the reaper.
    assert!(
        p.metric("apiserver_terminated_watchers_total") >= 1,
        "not reaped"
    );
    let grown = peak.saturating_sub(before);
    eprintln!(
        "never-reading client: server RSS {} -> peak {} (+{} KiB) while stuck; healthy watcher {rate:.0} events/s",
        before,
        peak,
        grown / 1024
    );
    assert!(grown < 64 << 20, "the server grew by {grown} bytes");
    drop(stuck);
    assert!(p.alive());
}

#[test]
fn connections_dropped_mid_chunk_leave_nothing_behind() {
    let p = Proc::start(&["--demo", "500", "--demo-rate", "2000"]);
    for round in 0..200 {
        let mut s = TcpStream::connect(p.addr).unwrap();
        write!(s, "GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // Read a few bytes of the stream (the initial events), then go.
        let mut buf = vec![0u8; 1 + round * 37 % 5000];
        let _ = s.read(&mut buf);
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    // Every watch the dropped connections opened is gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while p.metric("herald_watchers_active") > 0 || p.metric("herald_http_watch_connections") > 0 {
        assert!(
            Instant::now() < deadline,
            "watches left behind: {}",
            p.metric("herald_watchers_active")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(p.get("/healthz").0, 200);
}

#[test]
fn ten_thousand_idle_watch_connections() {
    const N: usize = 10_000;
    let p = Proc::start(&["--demo", "200", "--demo-rate", "0"]);
    let (_, list) = p.get("/api/v1/pods?limit=1");
    let v: serde_json::Value = serde_json::from_str(list.trim()).unwrap();
    let rv = v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = rss(p.pid());
    let selectors = [
        "",
        "&labelSelector=app%3Dapp-3",
        "&fieldSelector=spec.nodeName%3Dnode-7",
        "&labelSelector=app+in+(app-1,app-2),demo",
    ];
    let mut conns = Vec::with_capacity(N);
    for i in 0..N {
        conns.push(open_watch(
            p.addr,
            &format!(
                "resourceVersion={rv}&allowWatchBookmarks=true{}",
                selectors[i % selectors.len()]
            ),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.metric("herald_http_watch_connections") < N as u64 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = rss(p.pid());
    let per = after.saturating_sub(before) / N as u64;
    eprintln!(
        "10,000 idle watch connections: server RSS {} -> {} MiB, {per} B per connection",
        before >> 20,
        after >> 20
    );
    // Bounded: hyper's buffers, the task, the watch; well under 64 KiB.
    assert!(per < 64 * 1024, "{per} B per idle connection");
    // The dispatcher registers watches as it gets to them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.metric("herald_watchers_active") != N as u64 {
        assert!(
            Instant::now() < deadline,
            "{} watchers active of {N}",
            p.metric("herald_watchers_active")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(conns);
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.metric("herald_watchers_active") > 0 {
        assert!(
            Instant::now() < deadline,
            "watches left after the clients went"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
