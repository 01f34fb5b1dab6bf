//! A `herald-server` process for the tests that attack the real binary
//! (its memory and threads are its own, and it may die without taking
//! the test with it): start it, speak raw HTTP/1.1 to it, read its
//! metrics, its resident memory and its thread count.
//!
//! Shared by `tests/hostile.rs` and the hostile-client suite
//! (`tests/hostile_suite/`), each of which includes it with `#[path]`:
//! it is not part of `support/mod.rs`, whose in-process server the
//! client tests use.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A herald-server process, killed when dropped.
pub struct Proc {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Proc {
    /// Starts `herald-server --listen 127.0.0.1:0 <args>` and waits until
    /// it is ready (30 s at most).
    pub fn start(args: &[&str]) -> Proc {
        // The server picks its own port and says which: a port picked here
        // and released could be taken meanwhile (the 10,000-connection
        // test beside this one holds a third of the ephemeral range).
        let mut child = Command::new(env!("CARGO_BIN_EXE_herald-server"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start herald-server");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("serving") {
            line.clear();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("herald-server exited before serving (args {args:?})");
            }
        }
        let addr: SocketAddr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("herald-server did not say where it listens: {line:?}"));
        // Keep reading what it says, so that it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("herald-server: {line}");
            }
        });
        let p = Proc { child, addr };
        let deadline = Instant::now() + Duration::from_secs(30);
        while p.get("/readyz").0 != 200 {
            assert!(
                Instant::now() < deadline,
                "herald-server did not become ready"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        p
    }

    /// Sends raw bytes, returns the status code and body (whole response
    /// read until the server closes; `Connection: close` is added by the
    /// callers that build requests).
    pub fn raw(&self, request: &[u8]) -> (u16, String) {
        self.raw_within(request, Duration::from_secs(10))
    }

    /// [`Proc::raw`], waiting at most `wait` for each read.
    pub fn raw_within(&self, request: &[u8], wait: Duration) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(wait)).unwrap();
        let _ = s.write_all(request);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
        (code, body)
    }

    /// `GET path` on a connection of its own.
    pub fn get(&self, path: &str) -> (u16, String) {
        self.raw(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The sum of the samples of the metric lines that start with `name`
    /// (a name, or a name and the start of its labels).
    pub fn metric(&self, name: &str) -> u64 {
        let (_, body) = self.get("/metrics");
        body.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/PID/status` (its first number).
fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
}

/// Resident memory of a process (bytes; 0 if it is gone).
pub fn rss(pid: u32) -> u64 {
    status_field(pid, "VmRSS:") * 1024
}

/// Threads of a process (0 if it is gone).
pub fn threads(pid: u32) -> u64 {
    status_field(pid, "Threads:")
}

/// Opens a watch and returns the socket once the response's headers
/// arrived (the watch is registered).
pub fn open_watch(addr: SocketAddr, query: &str) -> BufReader<TcpStream> {
    open_stream(addr, &format!("/api/v1/pods?watch=true&{query}"), "")
}

/// GETs `path` with `headers` (each ending `\r\n`) and returns the socket
/// once a 200's headers arrived.
pub fn open_stream(addr: SocketAddr, path: &str, headers: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            return r;
        }
    }
}
