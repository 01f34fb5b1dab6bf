//! Protocol abuse: HTTP/1.1 that is malformed, ambiguous, oversized,
//! slow, pipelined, half-closed, or not HTTP/1.1 at all.
//!
//! Each gets a `4xx` or a closed connection (hyper answers malformed
//! framing itself, without a body), a well-formed but odd request gets
//! its answer; never a crash, never a hang of the other clients (the
//! harness's probe, during each case, is the other client).

use std::io::{BufReader, Write};
use std::net::Shutdown;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::client::{self, End};
use crate::harness::{Background, Case, Category, Expect, Guard, PROBE_PATH};

const PROTO: Category = Category::Protocol;
const WAIT: Duration = Duration::from_secs(10);

/// A request line and headers, `Connection: close` added, then `body`.
fn req(line: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("{line}\r\nHost: x\r\nConnection: close\r\n{headers}\r\n").into_bytes();
    out.extend_from_slice(body);
    out
}

fn raw(name: &str, bytes: Vec<u8>, expect: Expect) -> Case {
    Case::raw(name, PROTO, bytes, WAIT, expect)
}

/// Sends `bytes`, reads what comes within `wait`, and keeps the socket
/// open until the case ends.
fn held(name: &str, bytes: Vec<u8>, wait: Duration, expect: Expect) -> Case {
    Case::new(name, PROTO, move |p| {
        let mut s = client::connect(p.addr);
        let _ = s.write_all(&bytes);
        let mut r = BufReader::new(s);
        let answer = client::read_response(&mut r, false, Instant::now() + wait);
        Guard::answer(name_of(&bytes), answer, expect).hold(r)
    })
}

fn name_of(bytes: &[u8]) -> String {
    crate::harness::short(&String::from_utf8_lossy(bytes))
}

fn method(m: &str) -> Case {
    raw(
        &format!("method {m}"),
        req(
            &format!("{m} /api/v1/namespaces/demo-1/pods/pod-00001 HTTP/1.1"),
            "Content-Length: 2\r\n",
            b"{}",
        ),
        Expect::status(405, "MethodNotAllowed"),
    )
}

/// The protocol cases (a server of 200 demo pods).
pub(crate) fn cases() -> Vec<Case> {
    let list = "GET /api/v1/pods?limit=1 HTTP/1.1";
    let mut cases = vec![
        raw(
            "garbage bytes",
            b"\x00\x01\x02 hello\r\n\r\n".to_vec(),
            Expect::codes(&[400, 0]),
        ),
        held(
            "a truncated request, held",
            b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost:".to_vec(),
            Duration::from_millis(300),
            Expect::codes(&[0]),
        ),
        // Go's server reads a head of 1 MiB and 4 KiB; so does Herald.
        raw(
            "a 1 MB header",
            req(list, &format!("X-A: {}\r\n", "a".repeat(1_000_000)), b""),
            Expect::ok("PodList"),
        ),
        raw(
            "a 2 MiB header",
            req(list, &format!("X-A: {}\r\n", "a".repeat(2 << 20)), b""),
            Expect::codes(&[431, 400, 0]),
        ),
        raw(
            "10,000 small headers",
            req(
                list,
                &(0..10_000)
                    .map(|i| format!("X-{i}: a\r\n"))
                    .collect::<String>(),
                b"",
            ),
            Expect::codes(&[431, 400, 0]),
        ),
        raw(
            "a 64 KB header (within the limit)",
            req(list, &format!("X-A: {}\r\n", "a".repeat(64 << 10)), b""),
            Expect::codes(&[200, 431]),
        ),
        raw(
            "a 100 KB URL",
            req(
                &format!("GET /api/v1/pods?x={} HTTP/1.1", "a".repeat(100_000)),
                "",
                b"",
            ),
            Expect::codes(&[414]),
        ),
        // hyper answers 414 to a request line it read whole; one longer
        // than its read buffer (~400 KB) fills the buffer first: 431.
        raw(
            "a 1 MB URL",
            req(
                &format!("GET /api/v1/pods?x={} HTTP/1.1", "a".repeat(1 << 20)),
                "",
                b"",
            ),
            Expect::codes(&[414, 431, 0]),
        ),
        held(
            "a body on GET, mostly never sent",
            req(list, "Content-Length: 1000000\r\n", b"abc"),
            Duration::from_secs(2),
            Expect::codes(&[200, 400, 413, 0]),
        ),
        raw(
            "a chunked body on GET",
            req(
                list,
                "Transfer-Encoding: chunked\r\n",
                b"3\r\nabc\r\n0\r\n\r\n",
            ),
            Expect::codes(&[200, 400]),
        ),
        held(
            "a chunked body never finished, held",
            req(list, "Transfer-Encoding: chunked\r\n", b"3\r\nabc\r\n"),
            Duration::from_secs(1),
            Expect::codes(&[200, 400, 0]),
        ),
        raw(
            "conflicting Content-Length",
            req(list, "Content-Length: 3\r\nContent-Length: 5\r\n", b"abcde"),
            Expect::codes(&[400]),
        ),
        raw(
            "Content-Length: -1",
            req(list, "Content-Length: -1\r\n", b""),
            Expect::codes(&[400]),
        ),
        Case::new("Content-Length and Transfer-Encoding", PROTO, |p| {
            // Either refused, or read as chunked: then the bytes after the
            // last chunk are a second request, which `Connection: close`
            // says not to serve.
            let smuggled = format!("GET {PROBE_PATH} HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut body = b"0\r\n\r\n".to_vec();
            body.extend_from_slice(smuggled.as_bytes());
            let bytes = req(
                list,
                "Content-Length: 60\r\nTransfer-Encoding: chunked\r\n",
                &body,
            );
            let mut s = client::connect(p.addr);
            let _ = s.write_all(&bytes);
            let mut r = BufReader::new(s);
            let deadline = Instant::now() + Duration::from_secs(5);
            let first = client::read_response(&mut r, false, deadline);
            let second = client::read_response(&mut r, false, deadline);
            assert_eq!(second.code, 0, "a second answer: {}", second.brief());
            Guard::answer("CL+TE", first, Expect::codes(&[200, 400]))
        }),
        raw(
            "Upgrade: h2c",
            req(
                list,
                "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n",
                b"",
            ),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "HTTP/2 prior knowledge preface",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00".to_vec(),
            Expect::codes(&[0, 400, 505]),
        ),
        raw(
            "HTTP/1.0 without Host",
            b"GET /api/v1/pods?limit=1 HTTP/1.0\r\n\r\n".to_vec(),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "HTTP/1.1 without Host",
            b"GET /api/v1/pods?limit=1 HTTP/1.1\r\nConnection: close\r\n\r\n".to_vec(),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "absolute-form target",
            req(
                "GET http://evil.example/api/v1/pods?limit=1 HTTP/1.1",
                "",
                b"",
            ),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "asterisk target on GET",
            req("GET * HTTP/1.1", "", b""),
            Expect::codes(&[400, 404]),
        ),
        raw(
            "HTTP/9.9",
            req("GET /api/v1/pods HTTP/9.9", "", b""),
            Expect::codes(&[400, 505]),
        ),
        raw(
            "bare LF line ends",
            b"GET /api/v1/pods?limit=1 HTTP/1.1\nHost: x\nConnection: close\n\n".to_vec(),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "a header without a colon",
            req(list, "Bogus header\r\n", b""),
            Expect::codes(&[400]),
        ),
        raw(
            "a space in a header name",
            req(list, "X Bad: 1\r\n", b""),
            Expect::codes(&[400]),
        ),
        raw(
            "an obs-fold header",
            req(list, "X-A: a\r\n b\r\n", b""),
            Expect::codes(&[400]),
        ),
        raw(
            "a NUL byte in a header value",
            req(list, "X-A: a\x00b\r\n", b""),
            Expect::codes(&[400]),
        ),
        raw(
            "invalid UTF-8 in a header value",
            [
                format!("{list}\r\nHost: x\r\nConnection: close\r\n").as_bytes(),
                b"X-A: \xff\xfe\r\n\r\n",
            ]
            .concat(),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "two Host headers",
            req(list, "Host: y\r\n", b""),
            Expect::codes(&[200, 400]),
        ),
        raw(
            "a 10 KB method",
            req(&format!("{} / HTTP/1.1", "G".repeat(10_000)), "", b""),
            Expect::codes(&[400, 404, 405, 414, 431, 501, 0]),
        ),
        raw(
            "method get in lowercase",
            req("get /api/v1/pods?limit=1 HTTP/1.1", "", b""),
            Expect::codes(&[400, 405]),
        ),
        raw(
            "OPTIONS *",
            req("OPTIONS * HTTP/1.1", "", b""),
            Expect::codes(&[400, 404, 405]),
        ),
        raw(
            "OPTIONS on a collection",
            req("OPTIONS /api/v1/pods HTTP/1.1", "", b""),
            Expect::codes(&[200, 204, 405]),
        ),
        raw(
            "CONNECT",
            req("CONNECT evil.example:443 HTTP/1.1", "", b""),
            Expect::codes(&[400, 404, 405]),
        ),
        raw(
            "TRACE",
            req("TRACE /api/v1/pods HTTP/1.1", "", b""),
            Expect::status(405, "MethodNotAllowed"),
        ),
        raw(
            "HEAD of a list",
            req("HEAD /api/v1/pods?limit=1 HTTP/1.1", "", b""),
            Expect::head(&[405]),
        ),
        raw(
            "Expect: 100-continue without a body",
            req(list, "Expect: 100-continue\r\n", b""),
            Expect::codes(&[200, 417]),
        ),
        held(
            "Expect: 100-continue, the body never sent",
            req(list, "Expect: 100-continue\r\nContent-Length: 10\r\n", b""),
            Duration::from_secs(2),
            Expect::codes(&[200, 417, 0]),
        ),
        Case::new("pipelined: 100 requests", PROTO, |p| {
            let one = format!("GET {PROBE_PATH} HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut bytes = one.repeat(99).into_bytes();
            bytes.extend(client::request(PROBE_PATH, &[]));
            let mut s = client::connect(p.addr);
            s.write_all(&bytes).unwrap();
            let mut r = BufReader::new(s);
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut g = Guard::new();
            for i in 0..100 {
                let a = client::read_response(&mut r, false, deadline);
                g = g.with(format!("pipelined #{i}"), a, Expect::ok("\"pod-00001\""));
            }
            let after = client::read_response(&mut r, false, deadline);
            assert_eq!(after.end, End::Closed, "open after Connection: close");
            g
        }),
        Case::new("pipelined: 30 good and bad", PROTO, |p| {
            let kinds = [
                (PROBE_PATH, Expect::ok("\"pod-00001\"")),
                ("/api/v1/pods?limit=bad", Expect::status(400, "limit")),
                (
                    "/api/v1/namespaces/demo-1/pods/nope",
                    Expect::status(404, "nope"),
                ),
                (
                    "/api/v1/namespaces/%2E%2E/pods",
                    Expect::status(400, "namespace"),
                ),
            ];
            let mut bytes = Vec::new();
            for i in 0..30 {
                bytes.extend(format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", kinds[i % 4].0).bytes());
            }
            let mut s = client::connect(p.addr);
            s.write_all(&bytes).unwrap();
            let mut r = BufReader::new(s);
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut g = Guard::new();
            for i in 0..30 {
                let a = client::read_response(&mut r, false, deadline);
                g = g.with(
                    format!("#{i} {}", kinds[i % 4].0),
                    a,
                    kinds[i % 4].1.clone(),
                );
            }
            g
        }),
        Case::new("keep-alive: 1,000 requests in turn", PROTO, |p| {
            let one = format!("GET {PROBE_PATH} HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut r = BufReader::new(client::connect(p.addr));
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut served = 0;
            for _ in 0..1_000 {
                r.get_mut().write_all(one.as_bytes()).unwrap();
                let a = client::read_response(&mut r, false, deadline);
                if a.code != 200 {
                    let what = format!("request #{served}");
                    return Guard::answer(what, a, Expect::ok("pod-00001"));
                }
                served += 1;
            }
            Guard::new().summary(format!("200x{served}"))
        }),
        Case::new(
            "slow headers: 200 connections, a byte a second",
            PROTO,
            |p| {
                let mut conns = Vec::new();
                for _ in 0..200 {
                    let mut s = client::connect(p.addr);
                    s.write_all(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        .unwrap();
                    conns.push(s);
                }
                let drip = Background::spawn(move |stop| {
                    let start = Instant::now();
                    while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60)
                    {
                        for s in &mut conns {
                            let _ = s.write_all(b"a");
                        }
                        for _ in 0..20 {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                });
                std::thread::sleep(Duration::from_millis(2_500));
                Guard::new().hold(drip).summary("held x200")
            },
        ),
        Case::new("half-closed after a request", PROTO, |p| {
            let s = client::connect(p.addr);
            (&s).write_all(&client::request(PROBE_PATH, &[])).unwrap();
            let _ = s.shutdown(Shutdown::Write);
            let mut r = BufReader::new(s);
            let a = client::read_response(&mut r, false, Instant::now() + Duration::from_secs(3));
            Guard::answer("half-closed GET", a, Expect::codes(&[200, 0]))
        }),
        Case::new("half-closed watch", PROTO, |p| {
            let s = client::connect(p.addr);
            let path = "/api/v1/pods?watch=1&labelSelector=app%3Dapp-1";
            (&s).write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .unwrap();
            let _ = s.shutdown(Shutdown::Write);
            let mut r = BufReader::new(s);
            let a = client::read_head(&mut r, Instant::now() + Duration::from_secs(3));
            Guard::answer("half-closed watch", a, Expect::codes(&[200, 0])).hold(r)
        }),
    ];
    cases.extend(["POST", "PUT", "PATCH", "DELETE"].map(method));
    cases
}
