//! The suite's harness: a [`Case`] is an attack on a running server, and
//! the harness runs each the same way.
//!
//! ## One case
//!
//! 1. Before: the server's resident memory, and a probe's latency (a
//!    `GET /api/v1/namespaces/demo-1/pods/pod-00001` on a fresh
//!    connection from [`BYSTANDER`], timed; it must answer `200`).
//! 2. The attack runs and returns a [`Guard`]: what it keeps open
//!    (sockets, threads) and the answers it got, each with the answer it
//!    expects ([`Expect`]).
//! 3. During, with the guard held: memory and the probe again; the probe
//!    must answer `200` within [`PROBE_LIMIT`].
//! 4. The answers are checked; answers that come only after a while
//!    (a thousand waiting requests) are collected first ([`Guard::later`]).
//! 5. The guard is dropped; the server gets a bounded time to settle
//!    (the guard's own wait, then until its memory is within
//!    [`RSS_SLACK`] of before and its watch connections back to before,
//!    [`SETTLE_MAX`] at most).
//! 6. After: memory (within [`RSS_SLACK`] of before, plus the demo's
//!    drift at high change rates: see [`Server::rate`]), the probe, and
//!    the server's correctness ([`check_state`]): an exact list and a
//!    live watch. Then the case's own checks on the figures
//!    ([`Guard::verify`]).
//!
//! The process must be alive at every step; one that died is reported and
//! restarted for the next case. A case's failures do not stop the group:
//! every case runs, one table line each goes to stderr, and the group
//! fails at the end with the list of the cases that failed.
//!
//! Groups run one at a time (a lock), so that one group's storm does not
//! show in another's latencies on a 2-core machine.

use std::any::Any;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use herald_testkit::lock;

use crate::client::{self, BYSTANDER, End, Response, WatchStream};
use crate::proc::{Proc, rss};

/// The probe's latency bound while an attack is held (2 shared cores:
/// generous on purpose; the figures are printed).
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// How far above its figure before a case the server's memory may stay
/// after it.
pub(crate) const RSS_SLACK: u64 = 64 << 20;

/// The longest the harness waits for the server to settle after a guard
/// is dropped (beyond the guard's own wait).
pub(crate) const SETTLE_MAX: Duration = Duration::from_secs(10);

/// The probe's request.
pub(crate) const PROBE_PATH: &str = "/api/v1/namespaces/demo-1/pods/pod-00001";

const MIB: f64 = 1024.0 * 1024.0;

/// What a case attacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Category {
    /// Query parameters: list options with bad, repeated, empty, huge
    /// values.
    Params,
    /// Path segments: namespaces, names, dot segments, slashes.
    Paths,
    /// Percent-encodings, bytes in the path, content codings.
    Encoding,
    /// HTTP/1.1 itself: framing, methods, versions, pipelining, slow and
    /// half-closed clients.
    Protocol,
    /// Resources: connections, never-read watches and lists, concurrent
    /// waits, huge selectors, limits and deadlines.
    Exhaustion,
    /// Credentials, per-user shares, audit and the debug listing.
    Access,
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Category::Params => "params",
            Category::Paths => "paths",
            Category::Encoding => "encoding",
            Category::Protocol => "protocol",
            Category::Exhaustion => "exhaust",
            Category::Access => "access",
        };
        f.pad(name)
    }
}

/// The answer a request expects.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    codes: Vec<u16>,
    needle: String,
    status: bool,
    /// The answer to a `HEAD`: its head only, whatever it declares.
    head: bool,
}

impl Expect {
    /// A `Status` object of `code` whose body holds `needle`.
    pub(crate) fn status(code: u16, needle: &str) -> Expect {
        Expect::status_in(&[code], needle)
    }

    /// A `Status` object of one of `codes` whose body holds `needle`.
    pub(crate) fn status_in(codes: &[u16], needle: &str) -> Expect {
        Expect {
            codes: codes.to_vec(),
            needle: needle.to_owned(),
            status: true,
            head: false,
        }
    }

    /// A `200` whose body holds `needle`.
    pub(crate) fn ok(needle: &str) -> Expect {
        Expect {
            codes: vec![200],
            needle: needle.to_owned(),
            status: false,
            head: false,
        }
    }

    /// One of `codes`, 0 standing for no answer (the connection closed
    /// or stayed silent): hyper's own answers to malformed HTTP have no
    /// body. A JSON error body must still be a `Status` of its code.
    pub(crate) fn codes(codes: &[u16]) -> Expect {
        Expect {
            codes: codes.to_vec(),
            needle: String::new(),
            status: false,
            head: false,
        }
    }

    /// The answer to a `HEAD`: one of `codes`, with no body (its
    /// `Content-Type` is the one a GET would have had).
    pub(crate) fn head(codes: &[u16]) -> Expect {
        Expect {
            head: true,
            ..Expect::codes(codes)
        }
    }

    /// Checks `r`, with the rules every answer keeps: an answer of the
    /// router's (it has a `Content-Type`) carries
    /// `X-Content-Type-Options: nosniff`, a JSON error is a `Status` of
    /// its code, a `429` says when to come back.
    pub(crate) fn check(&self, r: &Response) -> Result<(), String> {
        if !self.codes.contains(&r.code) {
            return Err(format!("expected {:?}, got {}", self.codes, r.brief()));
        }
        if r.code == 0 {
            return Ok(());
        }
        let text = r.text();
        if !text.contains(&self.needle) {
            return Err(format!("{:?} not in {}", self.needle, r.brief()));
        }
        let content_type = r.header("content-type").unwrap_or("");
        if !content_type.is_empty() && r.header("x-content-type-options") != Some("nosniff") {
            return Err(format!(
                "{} without X-Content-Type-Options: nosniff",
                r.code
            ));
        }
        if r.code >= 300
            && !self.head
            && (self.status || content_type.starts_with("application/json"))
        {
            let v = r
                .json()
                .ok_or_else(|| format!("not a Status object: {}", r.brief()))?;
            if v["kind"] != "Status" || v["code"] != r.code {
                return Err(format!("not a Status of code {}: {}", r.code, r.brief()));
            }
        }
        if r.code == 429 && r.header("retry-after").is_none() {
            return Err("429 without Retry-After".into());
        }
        Ok(())
    }
}

/// An answer and what it should have been.
#[derive(Debug)]
pub(crate) struct Checked {
    what: String,
    response: Response,
    expect: Expect,
}

/// A thread that runs until dropped (it reads `stop`).
#[derive(Debug)]
pub(crate) struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Runs `f` on a thread of its own; `f` must return soon after
    /// `stop` is set.
    pub(crate) fn spawn(f: impl FnOnce(&AtomicBool) + Send + 'static) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || f(&flag));
        Background {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The figures the harness took around a case.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Figures {
    /// Resident memory before, during and after (bytes).
    pub(crate) rss: [u64; 3],
    /// When each was taken, from "before".
    pub(crate) at: [Duration; 3],
    /// The probe's latency before, during and after.
    pub(crate) probe: [Duration; 3],
    /// How fast the server's memory grows with no client at all (bytes a
    /// second; see [`Server::rate`]).
    pub(crate) drift: f64,
}

impl Figures {
    /// What the server's memory grew by from "before" to figure `i`,
    /// less its drift over that time.
    pub(crate) fn grown(&self, i: usize) -> u64 {
        let drift = (self.drift * self.at[i].as_secs_f64()) as u64;
        self.rss[i].saturating_sub(self.rss[0] + drift)
    }
}

type Later = Box<dyn FnOnce() -> Vec<Checked>>;
type Verify = Box<dyn FnOnce(&Proc, &Figures) -> Result<(), String>>;

/// What an attack keeps open, what it got, and what it checks at the end.
#[derive(Default)]
pub(crate) struct Guard {
    held: Vec<Box<dyn Any>>,
    answers: Vec<Checked>,
    later: Option<Later>,
    verify: Option<Verify>,
    summary: Option<String>,
    settle: Duration,
}

impl Guard {
    /// Nothing held, nothing answered yet.
    pub(crate) fn new() -> Guard {
        Guard::default()
    }

    /// A guard for one answer.
    pub(crate) fn answer(what: impl Into<String>, response: Response, expect: Expect) -> Guard {
        Guard::new().with(what, response, expect)
    }

    /// Adds an answer to check.
    pub(crate) fn with(
        mut self,
        what: impl Into<String>,
        response: Response,
        expect: Expect,
    ) -> Guard {
        self.answers.push(Checked {
            what: what.into(),
            response,
            expect,
        });
        self
    }

    /// Keeps `x` (a socket, a [`Background`], ...) until the guard is
    /// dropped.
    pub(crate) fn hold(mut self, x: impl Any) -> Guard {
        self.held.push(Box::new(x));
        self
    }

    /// Answers collected after the "during" figures (with the guard still
    /// held): the responses to requests that wait.
    pub(crate) fn later(mut self, f: impl FnOnce() -> Vec<Checked> + 'static) -> Guard {
        self.later = Some(Box::new(f));
        self
    }

    /// The case's own checks, run last with every figure.
    pub(crate) fn verify(
        mut self,
        f: impl FnOnce(&Proc, &Figures) -> Result<(), String> + 'static,
    ) -> Guard {
        self.verify = Some(Box::new(f));
        self
    }

    /// The answer column of the table line (default: the codes).
    pub(crate) fn summary(mut self, s: impl Into<String>) -> Guard {
        self.summary = Some(s.into());
        self
    }

    /// Waits this long after dropping the guard before "after" is taken.
    pub(crate) fn settle(mut self, d: Duration) -> Guard {
        self.settle = d;
        self
    }
}

/// An answer to check, outside a guard (for [`Guard::later`]).
pub(crate) fn checked(what: impl Into<String>, response: Response, expect: Expect) -> Checked {
    Checked {
        what: what.into(),
        response,
        expect,
    }
}

type Attack = Box<dyn FnOnce(&Proc) -> Guard>;

/// One hostile client.
pub(crate) struct Case {
    name: String,
    category: Category,
    attack: Attack,
}

impl Case {
    /// A case whose attack is `attack`.
    pub(crate) fn new(
        name: impl Into<String>,
        category: Category,
        attack: impl FnOnce(&Proc) -> Guard + 'static,
    ) -> Case {
        Case {
            name: name.into(),
            category,
            attack: Box::new(attack),
        }
    }

    /// `GET path` on a connection of its own, expecting `expect`.
    pub(crate) fn get(
        name: &str,
        category: Category,
        path: impl Into<String>,
        expect: Expect,
    ) -> Case {
        let path = path.into();
        Case::new(name, category, move |p| {
            let what = format!("GET {}", short(&path));
            Guard::answer(what, client::get(p.addr, &path), expect)
        })
    }

    /// `bytes` on a connection of their own, expecting `expect`; the
    /// answer is awaited `wait` at most.
    pub(crate) fn raw(
        name: &str,
        category: Category,
        bytes: Vec<u8>,
        wait: Duration,
        expect: Expect,
    ) -> Case {
        Case::new(name, category, move |p| {
            let what = short(&String::from_utf8_lossy(&bytes));
            Guard::answer(what, client::exchange(p.addr, &bytes, wait), expect)
        })
    }

    /// The case's category.
    pub(crate) fn category(&self) -> Category {
        self.category
    }
}

/// At most 100 characters of `s`, for messages.
pub(crate) fn short(s: &str) -> String {
    let mut out: String = s.chars().take(100).collect();
    if out.len() < s.len() {
        out.push_str("...");
    }
    out
}

/// A server process for a group of cases: `pods` demo pods changing
/// `rate` times a second, and flags.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    /// The group's name, in every table line.
    pub(crate) group: &'static str,
    /// `--demo`.
    pub(crate) pods: usize,
    /// `--demo-rate` (more than 0: the live-watch check needs changes).
    /// The demo's in-memory source keeps every change it makes (about
    /// 1.4 KB each), so at a high rate the server's memory grows with no
    /// client at all: from 1,000 a second the harness measures that drift
    /// when the server starts and allows for it in every bound on memory.
    pub(crate) rate: u32,
    /// Other flags.
    pub(crate) flags: Vec<&'static str>,
}

impl Server {
    fn start(&self) -> Proc {
        let pods = self.pods.to_string();
        let rate = self.rate.to_string();
        let mut args = vec!["--demo", &pods, "--demo-rate", &rate];
        args.extend(self.flags.iter().copied());
        Proc::start(&args)
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

/// The probe: its code and latency.
pub(crate) fn probe(addr: SocketAddr) -> (u16, Duration) {
    let start = Instant::now();
    let r = client::exchange_from(
        addr,
        Some(BYSTANDER),
        &client::request(PROBE_PATH, &[]),
        Duration::from_secs(10),
    );
    let code = if r.code == 200 && !r.text().contains("\"pod-00001\"") {
        // A 200 that is not the pod is no answer to the probe.
        1
    } else {
        r.code
    };
    (code, start.elapsed())
}

fn number(v: &serde_json::Value) -> Option<u64> {
    v.as_str()?.parse().ok()
}

/// The server's correctness: `GET /api/v1/pods` answers exactly the
/// `pods` demo pods (names and namespaces, none twice), each at a version
/// no newer than the list's; a watch from the list's version gets at
/// least one event newer than it within 5 s, and its events come in
/// increasing version order.
pub(crate) fn check_state(addr: SocketAddr, pods: usize) -> Result<(), String> {
    let r = client::get(addr, "/api/v1/pods");
    if r.code != 200 || r.end != End::Complete {
        return Err(format!("list: {}", r.brief()));
    }
    let v = r.json().ok_or("list: not JSON")?;
    let rv = number(&v["metadata"]["resourceVersion"]).ok_or("list: no resourceVersion")?;
    let items = v["items"].as_array().ok_or("list: no items")?;
    let mut seen = BTreeSet::new();
    for item in items {
        let m = &item["metadata"];
        let key = (
            m["namespace"].as_str().unwrap_or("").to_owned(),
            m["name"].as_str().unwrap_or("").to_owned(),
        );
        let at = number(&m["resourceVersion"]).ok_or("list: an item without a version")?;
        if at > rv {
            return Err(format!("list at {rv} holds {key:?} at {at}"));
        }
        if !seen.insert(key.clone()) {
            return Err(format!("list holds {key:?} twice"));
        }
    }
    let want: BTreeSet<(String, String)> = (0..pods)
        .map(|i| (format!("demo-{}", i % 10), format!("pod-{i:05}")))
        .collect();
    if seen != want {
        return Err(format!(
            "list holds {} pods: {} missing, {} not demo pods",
            seen.len(),
            want.difference(&seen).count(),
            seen.difference(&want).count()
        ));
    }
    let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=30");
    let mut w = WatchStream::open(addr, &path, None).map_err(|e| format!("watch: {e}"))?;
    if w.head.code != 200 {
        return Err(format!("watch from {rv}: {}", w.head.brief()));
    }
    let start = Instant::now();
    let mut last = rv;
    let mut events = 0;
    while events < 3 {
        // Three events, or one and a second of waiting for more.
        let patience = if events == 0 { 5 } else { 1 };
        let Ok(Some(line)) = w.next_line(start + Duration::from_secs(patience)) else {
            break;
        };
        if line.is_empty() {
            continue;
        }
        let e: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("watch: {e}: {}", short(&line)))?;
        match e["type"].as_str() {
            Some("BOOKMARK") => continue,
            Some("ERROR") | None => return Err(format!("watch from {rv}: {}", short(&line))),
            Some(_) => {}
        }
        let at = number(&e["object"]["metadata"]["resourceVersion"])
            .ok_or_else(|| format!("watch: an event without a version: {}", short(&line)))?;
        if at <= last {
            return Err(format!("watch from {rv}: an event at {at} after {last}"));
        }
        last = at;
        events += 1;
    }
    if events == 0 {
        return Err(format!("watch from {rv}: no newer event within 5 s"));
    }
    Ok(())
}

thread_local! {
    /// Set while the harness runs a case's code, whose panics it reports
    /// in the case's line.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, its panic a message (printed only in the case's line).
fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|e| panic_text(&*e))
}

fn panic_text(e: &(dyn Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic".into())
}

/// `429x880 504x320`, `400`, `closed`.
fn summarise(answers: &[Checked]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for a in answers {
        let key = match (a.response.code, a.response.end) {
            (0, End::TimedOut) => "silent".to_owned(),
            (0, _) => "closed".to_owned(),
            (c, _) => c.to_string(),
        };
        *counts.entry(key).or_default() += 1;
    }
    let parts: Vec<String> = counts
        .into_iter()
        .map(|(k, n)| if n == 1 { k } else { format!("{k}x{n}") })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs one case; returns its table line and its failures.
fn run_case(p: &mut Proc, server: &Server, drift: f64, case: Case) -> (String, Vec<String>) {
    let mut errors: Vec<String> = Vec::new();
    if !p.alive() {
        errors.push("the server was dead before the case (restarted)".into());
        *p = server.start();
    }
    let pid = p.pid();
    let conns_before = p.metric("herald_http_watch_connections");
    let mut f = Figures {
        drift,
        ..Figures::default()
    };
    let start = Instant::now();
    f.rss[0] = rss(pid);
    let (code, took) = probe(p.addr);
    f.probe[0] = took;
    if code != 200 {
        errors.push(format!("probe before: {code}"));
    }

    let attack = case.attack;
    let mut guard = match caught(|| attack(p)) {
        Ok(g) => g,
        Err(e) => {
            errors.push(format!("attack: {e}"));
            Guard::new()
        }
    };
    if !p.alive() {
        errors.push("the server died during the attack".into());
    }
    f.rss[1] = rss(pid);
    f.at[1] = start.elapsed();
    let (code, took) = probe(p.addr);
    f.probe[1] = took;
    if code != 200 {
        errors.push(format!("probe during: {code} after {:.0} ms", ms(took)));
    } else if took > PROBE_LIMIT {
        errors.push(format!("probe during: {:.0} ms", ms(took)));
    }
    if let Some(later) = guard.later.take() {
        match caught(later) {
            Ok(answers) => guard.answers.extend(answers),
            Err(e) => errors.push(format!("answers: {e}")),
        }
    }
    let mut wrong = 0;
    for a in &guard.answers {
        if let Err(e) = a.expect.check(&a.response) {
            wrong += 1;
            if wrong <= 3 {
                errors.push(format!("{}: {e}", a.what));
            }
        }
    }
    if wrong > 3 {
        errors.push(format!("... {wrong} answers wrong in all"));
    }
    let summary = guard
        .summary
        .take()
        .unwrap_or_else(|| summarise(&guard.answers));
    let verify = guard.verify.take();
    let settle = guard.settle;
    drop(guard);

    // What "after" may hold: the slack, and the drift since "before".
    let allowed =
        |f: &Figures| f.rss[0] + RSS_SLACK + (f.drift * start.elapsed().as_secs_f64()) as u64;
    std::thread::sleep(settle);
    let deadline = Instant::now() + SETTLE_MAX;
    while p.alive()
        && Instant::now() < deadline
        && (rss(pid) > allowed(&f) || p.metric("herald_http_watch_connections") > conns_before)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    if !p.alive() {
        errors.push("the server died after the attack".into());
    } else {
        f.rss[2] = rss(pid);
        f.at[2] = start.elapsed();
        let limit = allowed(&f);
        let (code, took) = probe(p.addr);
        f.probe[2] = took;
        if code != 200 || took > PROBE_LIMIT {
            errors.push(format!("probe after: {code} in {:.0} ms", ms(took)));
        }
        if f.rss[2] > limit {
            errors.push(format!(
                "RSS after {:.0} MiB, before {:.0} MiB (at most {:.0})",
                f.rss[2] as f64 / MIB,
                f.rss[0] as f64 / MIB,
                limit as f64 / MIB
            ));
        }
        if let Err(e) = check_state(p.addr, server.pods) {
            errors.push(format!("state after: {e}"));
        }
        if let Some(verify) = verify {
            match caught(|| verify(p, &f)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(e),
                Err(e) => errors.push(format!("verify: {e}")),
            }
        }
    }
    let verdict = if errors.is_empty() {
        "ok".to_owned()
    } else {
        format!("FAIL {}", errors.join("; "))
    };
    let line = format!(
        "{:<9} {:<52} {:<8} {:<18} {:>6.1} {:>6.1} {:>6.1}   {:>6.1} {:>7.1} {:>6.1}  {verdict}",
        server.group,
        short(&case.name),
        case.category,
        short(&summary),
        f.rss[0] as f64 / MIB,
        f.rss[1] as f64 / MIB,
        f.rss[2] as f64 / MIB,
        ms(f.probe[0]),
        ms(f.probe[1]),
        ms(f.probe[2]),
    );
    (line, errors)
}

/// How fast the memory of `pid` grows, in bytes a second: the slope of
/// a least-squares line through 6 s of samples (the allocator takes
/// memory in steps, so two samples would say little, and the storm's
/// release is judged against this line).
fn drift(pid: u32) -> f64 {
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let mut points = Vec::new();
    while start.elapsed() < Duration::from_secs(6) {
        points.push((start.elapsed().as_secs_f64(), rss(pid) as f64));
        std::thread::sleep(Duration::from_millis(100));
    }
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den > 0.0 { (num / den).max(0.0) } else { 0.0 }
}

/// Runs `cases` against one server process (restarted if a case kills
/// it); fails if any case failed, naming each.
pub(crate) fn run(server: Server, cases: Vec<Case>) {
    let _serial = lock(&SERIAL);
    let started = Instant::now();
    let mut p = server.start();
    let drift = if server.rate >= 1_000 {
        let d = drift(p.pid());
        eprintln!(
            "{}: with no client, the server's memory grows {:.1} MiB/s at {} changes/s (the demo source keeps every change)",
            server.group,
            d / MIB,
            server.rate
        );
        d
    } else {
        0.0
    };
    eprintln!(
        "{:<9} {:<52} {:<8} {:<18} {:>20}   {:>22}  result",
        "group", "case", "category", "answer", "RSS MiB bef/dur/aft", "probe ms bef/dur/aft"
    );
    let n = cases.len();
    let mut failed = Vec::new();
    for case in cases {
        let name = case.name.clone();
        let (line, errors) = run_case(&mut p, &server, drift, case);
        eprintln!("{line}");
        if !errors.is_empty() {
            failed.push(format!("  {name}: {}", errors.join("; ")));
        }
    }
    eprintln!(
        "{}: {n} cases, {} failed, {:.1} s",
        server.group,
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "{}: {} of {n} cases failed:\n{}",
        server.group,
        failed.len(),
        failed.join("\n")
    );
}
