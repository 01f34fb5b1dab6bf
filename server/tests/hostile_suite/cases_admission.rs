//! Resource exhaustion through requests that wait: a thousand lists and
//! hundreds of watches of a version the cache never reaches, thousands of
//! concurrent gets, and more watches than the limits allow.
//!
//! The bounds are the server's contract: reads doing engine work are
//! admitted a few at a time (`--max-inflight-reads`), the rest wait in a
//! fair queue (per client address) of bounded length for a bounded time,
//! and beyond either get `429 TooManyRequests` with `Retry-After`,
//! counted in `herald_http_rejected_requests_total`; so the server's
//! threads stay bounded (tokio's blocking pool would otherwise grow to
//! 512) and a bystander's probe is still served. Watches beyond
//! `--max-watches` or `--max-watches-per-client` get a `429` too.

use std::io::{BufReader, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::client::{self, Response, WatchStream};
use crate::harness::{Case, Category, Checked, Expect, Guard, checked};
use crate::proc::{Proc, threads};

const EX: Category = Category::Exhaustion;

/// The most threads the server may run under a storm of waiting reads:
/// the blocking pool, sized to the admission seats
/// ([`herald_server::ServerConfig::blocking_threads`]: 136 with the default
/// seats; tokio's default pool alone is 512), and at most 16 more (its
/// workers, the engine's, the reflector's and the demo's, the signal
/// handler). It was a fixed 128 until a run peaked at 130: below what the
/// pool may hold, so not the contract.
fn max_threads() -> u64 {
    herald_server::ServerConfig::default().blocking_threads() as u64 + 16
}

const REJECTED: &str = "herald_http_rejected_requests_total";

/// The most threads of `pid` over `d`.
fn peak_threads(pid: u32, d: Duration) -> u64 {
    let start = Instant::now();
    let mut peak = threads(pid);
    while start.elapsed() < d {
        std::thread::sleep(Duration::from_millis(50));
        peak = peak.max(threads(pid));
    }
    peak
}

/// `n` connections from `from`, each sent `GET path` (`Connection:
/// close`), not read yet.
fn send(p: &Proc, n: usize, from: Option<Ipv4Addr>, path: &str) -> Vec<BufReader<TcpStream>> {
    let bytes = client::request(path, &[]);
    (0..n)
        .map(|_| {
            let mut s = client::connect_with(p.addr, from, None).expect("connect");
            s.write_all(&bytes).expect("send");
            BufReader::new(s)
        })
        .collect()
}

/// Reads one response from each connection (8 threads, 30 s in all).
fn collect(conns: Vec<BufReader<TcpStream>>) -> Vec<Response> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut parts: Vec<Vec<_>> = (0..8).map(|_| Vec::new()).collect();
    for (i, c) in conns.into_iter().enumerate() {
        parts[i % 8].push(c);
    }
    let handles: Vec<_> = parts
        .into_iter()
        .map(|part| {
            std::thread::spawn(move || {
                part.into_iter()
                    .map(|mut r| client::read_response(&mut r, false, deadline))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap_or_default())
        .collect()
}

/// A storm of `n` requests for `path` waiting for a version the cache
/// never reaches: their answers (each checked by `expect`), the
/// server's thread count (at most [`max_threads`]), and, if
/// `must_refuse`, some `429`s.
fn waiting_storm(
    name: &str,
    n: usize,
    path: &'static str,
    must_refuse: bool,
    expect: fn(&Response) -> Expect,
) -> Case {
    Case::new(name, EX, move |p| {
        let pid = p.pid();
        let rejected = p.metric(REJECTED);
        let before = threads(pid);
        let conns = send(p, n, None, path);
        let peak = peak_threads(pid, Duration::from_millis(1500));
        let refused = Arc::new(AtomicUsize::new(0));
        let counted = refused.clone();
        Guard::new()
            .later(move || {
                let answers = collect(conns);
                counted.store(answers.iter().filter(|r| r.code == 429).count(), Ordering::Relaxed);
                answers
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let e = expect(&r);
                        checked(format!("request #{i}"), r, e)
                    })
                    .collect::<Vec<Checked>>()
            })
            .verify(move |p, _| {
                let refused = refused.load(Ordering::Relaxed);
                let metric = p.metric(REJECTED) - rejected;
                eprintln!(
                    "    {n} waiting requests: threads {before} -> peak {peak}; {refused} refused with 429 ({metric} counted)"
                );
                if peak > max_threads() {
                    return Err(format!("{peak} threads (at most {})", max_threads()));
                }
                if must_refuse && (refused == 0 || metric == 0) {
                    return Err(format!("{refused} refused, {metric} counted: no admission"));
                }
                Ok(())
            })
    })
}

/// The admission cases (a server of 2,000 demo pods, the default
/// admission settings).
pub(crate) fn admission_cases() -> Vec<Case> {
    vec![
        waiting_storm(
            "1,200 lists of a future version",
            1_200,
            "/api/v1/pods?resourceVersion=999999999",
            true,
            |r| match r.code {
                429 => Expect::status(429, ""),
                _ => Expect::status(504, "ResourceVersionTooLarge"),
            },
        ),
        waiting_storm(
            "300 watches of a future version",
            300,
            "/api/v1/pods?watch=1&resourceVersion=999999999",
            false,
            |r| match r.code {
                // The apiserver's way: an ERROR event on a 200.
                200 => Expect::ok("ResourceVersionTooLarge"),
                429 => Expect::status(429, ""),
                _ => Expect::status(504, "ResourceVersionTooLarge"),
            },
        ),
        Case::new("2,000 concurrent gets from 4 clients", EX, |p| {
            let mut conns = Vec::new();
            for k in 0..4u8 {
                let from = Ipv4Addr::new(127, 0, 0, 10 + k);
                conns.extend(send(p, 500, Some(from), crate::harness::PROBE_PATH));
            }
            Guard::new().later(move || {
                collect(conns)
                    .into_iter()
                    .map(|r| {
                        let e = match r.code {
                            429 => Expect::status(429, ""),
                            _ => Expect::ok("\"pod-00001\""),
                        };
                        checked("get", r, e)
                    })
                    .collect()
            })
        }),
    ]
}

/// Opens `n` watches from `from` and checks each answer.
fn watches_from(p: &Proc, n: usize, from: Ipv4Addr, expect: &Expect, g: Guard) -> Guard {
    let path = "/api/v1/pods?watch=1&resourceVersion=0&labelSelector=app%3Dnone";
    let mut g = g;
    for i in 0..n {
        let w = WatchStream::open(p.addr, path, Some(from)).expect("connect");
        g = g.with(
            format!("watch #{i} from {from}"),
            w.head.clone(),
            expect.clone(),
        );
        g = g.hold(w);
    }
    g
}

/// The watch-limit case (a server with `--max-watches 100
/// --max-watches-per-client 40`).
pub(crate) fn limit_cases() -> Vec<Case> {
    vec![Case::new(
        "watch limits: 40 per client, 100 in all",
        EX,
        |p| {
            let rejected = p.metric(&format!("{REJECTED}{{reason=\"watch_limit\""));
            let ok = Expect::codes(&[200]);
            let refused = Expect::status(429, "");
            let ip = |d| Ipv4Addr::new(127, 0, 0, d);
            let mut g = Guard::new();
            g = watches_from(p, 40, ip(1), &ok, g);
            // The 41st of one client.
            g = watches_from(p, 1, ip(1), &refused, g);
            g = watches_from(p, 40, ip(3), &ok, g);
            g = watches_from(p, 20, ip(4), &ok, g);
            // The 101st in all, from a client with none.
            g = watches_from(p, 1, ip(5), &refused, g);
            g.verify(move |p, _| {
                let counted = p.metric(&format!("{REJECTED}{{reason=\"watch_limit\"")) - rejected;
                if counted < 2 {
                    return Err(format!("{counted} watch_limit refusals counted, 2 made"));
                }
                Ok(())
            })
        },
    )]
}
