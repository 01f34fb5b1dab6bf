//! Access control under hostile credentials, on a server that
//! authenticates (a token file), audits every request, and lets anonymous
//! requests through (`--anonymous-auth --authorization-mode AlwaysAllow`,
//! so that the harness's own probes need no credentials): floods of
//! invalid, oversized and malformed tokens, a user past its watch share
//! beside anonymous watches from the same address, an oversized
//! `Audit-ID`, the open-watch listing under load. Each is refused or
//! bounded, and memory comes back (the harness's figures).

use std::io::{BufReader, Write};
use std::time::{Duration, Instant};

use crate::client::{self, Response};
use crate::harness::{Case, Category, Expect, Guard};
use crate::proc::Proc;

const ACCESS: Category = Category::Access;

/// The token file's users (`bob-token` is bob's).
pub(crate) const TOKENS: &str = "bob-token,bob,uid-bob,devs\n";

/// The audit policy: everything at Metadata.
pub(crate) const POLICY: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n";

const LIST: &str = "/api/v1/pods?limit=1";
const WATCH: &str = "/api/v1/pods?watch=1&resourceVersion=0&labelSelector=app%3Dnone";

/// `n` GETs of `LIST`, the `i`th with `header(i)` as its bearer token,
/// each expected to be `expect`.
fn tokens(p: &Proc, n: usize, token: impl Fn(usize) -> String, expect: &Expect) -> Guard {
    let mut g = Guard::new();
    for i in 0..n {
        let auth = format!("Bearer {}", token(i));
        let r = client::get_with(p.addr, LIST, &[("Authorization", &auth)]);
        g = g.with(format!("token #{i}"), r, expect.clone());
    }
    g
}

/// A watch of pods with `headers`, its head read and its socket held.
fn watch(p: &Proc, headers: &[(&str, &str)]) -> (Response, BufReader<std::net::TcpStream>) {
    let mut s = client::connect(p.addr);
    let _ = s.write_all(&client::request(WATCH, headers));
    let mut r = BufReader::new(s);
    let head = client::read_head(&mut r, Instant::now() + Duration::from_secs(10));
    (head, r)
}

/// The access cases (a server with the token file, the audit log,
/// anonymous requests allowed, and `--max-watches-per-client 40`).
pub(crate) fn cases() -> Vec<Case> {
    let unauthorized = Expect::status(401, "Unauthorized");
    vec![
        Case::new("2,000 distinct invalid tokens of 4 KB", ACCESS, {
            let e = unauthorized.clone();
            move |p| tokens(p, 2_000, |i| format!("{i}-{}", "x".repeat(4_000)), &e)
        }),
        Case::new("300 JWT-shaped tokens of 30 KB", ACCESS, {
            let e = unauthorized.clone();
            move |p| {
                tokens(
                    p,
                    300,
                    |i| {
                        let part = "e".repeat(10_000);
                        format!("{part}.{i}{part}.{part}")
                    },
                    &e,
                )
            }
        }),
        Case::new("a bearer value of 1,000 space-separated parts", ACCESS, {
            let e = unauthorized.clone();
            move |p| tokens(p, 1, |_| vec!["part"; 1_000].join(" "), &e)
        }),
        Case::new(
            "a user past its watch share, anonymous beside it",
            ACCESS,
            |p| {
                let bob = [("Authorization", "Bearer bob-token")];
                let mut g = Guard::new();
                for i in 0..40 {
                    let (head, r) = watch(p, &bob);
                    g = g
                        .with(format!("bob's watch #{i}"), head, Expect::codes(&[200]))
                        .hold(r);
                }
                let refused = client::get_with(p.addr, WATCH, &bob);
                g = g.with(
                    "bob's 41st watch",
                    refused,
                    Expect::status(429, "too many watches"),
                );
                // Anonymous, from the same address: a share of its own.
                for i in 0..10 {
                    let (head, r) = watch(p, &[]);
                    g = g
                        .with(format!("anonymous watch #{i}"), head, Expect::codes(&[200]))
                        .hold(r);
                }
                g
            },
        ),
        Case::new("a 10 KB Audit-ID", ACCESS, |p| {
            let id = "i".repeat(10_000);
            let r = client::get_with(p.addr, LIST, &[("Audit-ID", &id)]);
            let echoed = r.header("audit-id").map(str::len);
            Guard::answer("GET with a 10 KB Audit-ID", r, Expect::ok("PodList")).verify(
                move |_, _| match echoed {
                    Some(36) => Ok(()),
                    other => Err(format!(
                        "the Audit-Id answered is {other:?} long, not a UUID's 36"
                    )),
                },
            )
        }),
        Case::new(
            "the open-watch listing with 300 watches open",
            ACCESS,
            |p| {
                let mut g = Guard::new();
                for _ in 0..300 {
                    let (head, r) = watch(p, &[("Authorization", "Bearer bob-token")]);
                    // Past bob's 40: the rest are refused, and still listed
                    // nowhere.
                    drop(head);
                    g = g.hold(r);
                }
                for _ in 0..30 {
                    let (head, r) = watch(p, &[]);
                    drop(head);
                    g = g.hold(r);
                }
                let listing = client::get(p.addr, "/debug/herald/watches?limit=10000");
                let open = listing.json().and_then(|v| v["open"].as_u64()).unwrap_or(0);
                g.with(
                    "GET /debug/herald/watches",
                    listing,
                    Expect::ok("WatchList"),
                )
                .verify(move |_, _| {
                    // bob's 40, the 30 anonymous, the harness's own.
                    if (70..=75).contains(&open) {
                        Ok(())
                    } else {
                        Err(format!(
                            "{open} watches listed, 70 (and the harness's) open"
                        ))
                    }
                })
            },
        ),
    ]
}
