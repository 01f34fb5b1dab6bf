//! fleet-restart's watchers: N HTTP/1.1 watch connections through the
//! balancer, each a task on a two-thread tokio runtime, each doing what a
//! reflector does when its stream ends: watch again, through the
//! balancer, from the last version it saw (an event's or a bookmark's).
//!
//! Each watch asks for every pod with bookmarks
//! (`GET /api/v1/pods?watch=1&resourceVersion=V&allowWatchBookmarks=true`),
//! de-chunks the body and reads each line's type and version. What is
//! counted:
//!
//! - order: an event at or below the version before it is a violation (a
//!   duplicate or a reorder); at the end, every watcher must have seen
//!   every write (a gap shows as a shortfall);
//! - re-lists: an `ERROR` event (410 Gone) or a 410 answer: the watcher
//!   could not resume; it goes on from the writer's latest version, and
//!   the writes it skipped count as missed;
//! - reconnects: each new stream after an end, with the time from the end
//!   to the new stream's `200` (served again), and when it happened;
//! - refusals: answers other than 200 (a replica going away, 429), each
//!   retried after `Retry-After` or 200 ms;
//! - latency from the write's send to the event's receipt, into the
//!   steady histogram while the phase is [`Phase::Steady`], and during a
//!   restart ([`Phase::Storm`]) into the undisturbed one if the
//!   watcher's stream began before the current step did (its replica is
//!   not the one restarting).
//!
//! Orderings: the counters and each watcher's last version are written by
//! the watcher tasks and read by the scenario's thread, which acts on
//! them (the settle waits for every last version; the row reads the
//! counts after it). Writes are `Release` and reads `Acquire`, so a
//! reader that sees a watcher's version sees what that watcher counted
//! before it; no other memory is published through them, and none of
//! this is on a measured path but the counting itself.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::{Mutex, RwLock};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Reconnects are counted per second of the run, this many seconds.
const SECONDS: usize = 3_600;

/// What the latency samples of this moment go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Nowhere.
    Idle = 0,
    /// The steady histogram.
    Steady = 1,
    /// The undisturbed histogram, for watchers whose stream began before
    /// the current step.
    Storm = 2,
}

/// What the watchers and the writer share.
#[derive(Debug)]
pub struct Shared {
    epoch: Instant,
    /// The revision before the first write.
    base: u64,
    /// Each write's send time, by revision - base - 1.
    sent: RwLock<Vec<Instant>>,
    phase: AtomicU8,
    /// When the current restart step began (ns since `epoch`).
    step_ns: AtomicU64,
    steady: Mutex<Histogram<u64>>,
    undisturbed: Mutex<Histogram<u64>>,
    /// End to served again (µs).
    served_again: Mutex<Histogram<u64>>,
    reconnects: AtomicU64,
    /// Reconnects by second since `epoch`.
    per_second: Vec<AtomicU64>,
    relists: AtomicU64,
    refusals: AtomicU64,
    violations: AtomicU64,
    /// What the first 410 said (its status line or its ERROR event).
    first_gone: Mutex<Option<String>>,
    /// Per watcher: the last version seen, and the events seen.
    last: Vec<AtomicU64>,
    events: Vec<AtomicU64>,
    stop: AtomicBool,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds")
}

impl Shared {
    /// For `n` watchers, from revision `base`.
    pub fn new(n: usize, base: u64) -> Arc<Shared> {
        Arc::new(Shared {
            epoch: Instant::now(),
            base,
            sent: RwLock::new(Vec::new()),
            phase: AtomicU8::new(Phase::Idle as u8),
            step_ns: AtomicU64::new(0),
            steady: Mutex::new(histogram()),
            undisturbed: Mutex::new(histogram()),
            served_again: Mutex::new(histogram()),
            reconnects: AtomicU64::new(0),
            per_second: (0..SECONDS).map(|_| AtomicU64::new(0)).collect(),
            relists: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            violations: AtomicU64::new(0),
            first_gone: Mutex::new(None),
            last: (0..n).map(|_| AtomicU64::new(base)).collect(),
            events: (0..n).map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
        })
    }

    fn since(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The writer, before a put: stamps the next revision as sent now;
    /// returns it.
    pub fn stamp_next(&self) -> u64 {
        let mut sent = self.sent.write();
        sent.push(Instant::now());
        self.base + sent.len() as u64
    }

    /// The last revision written.
    pub fn written(&self) -> u64 {
        self.base + self.sent.read().len() as u64
    }

    /// Where latency samples go from now on; a storm step begins now.
    pub fn set_phase(&self, phase: Phase) {
        if phase == Phase::Storm {
            self.step_ns
                .store(self.since(Instant::now()), Ordering::Release);
        }
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Another restart step begins now.
    pub fn step(&self) {
        self.step_ns
            .store(self.since(Instant::now()), Ordering::Release);
    }

    /// Empties the histograms (a new round).
    pub fn reset(&self) {
        self.steady.lock().reset();
        self.undisturbed.lock().reset();
        self.served_again.lock().reset();
    }

    /// Watchers whose last version is `rev` or later.
    pub fn caught_up(&self, rev: u64) -> usize {
        self.last
            .iter()
            .filter(|l| l.load(Ordering::Acquire) >= rev)
            .count()
    }

    /// Stops every watcher at its next read.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// What was counted since `since` (reconnects and their peak second)
    /// and in all.
    pub fn counts(&self, since: Instant, until: Instant) -> Counts {
        let (a, b) = (self.second(since), self.second(until));
        let window = &self.per_second[a..=b.max(a)];
        Counts {
            reconnects: self.reconnects.load(Ordering::Acquire),
            peak_per_s: window
                .iter()
                .map(|c| c.load(Ordering::Acquire))
                .max()
                .unwrap_or(0),
            relists: self.relists.load(Ordering::Acquire),
            refusals: self.refusals.load(Ordering::Acquire),
            violations: self.violations.load(Ordering::Acquire),
        }
    }

    fn second(&self, at: Instant) -> usize {
        (at.saturating_duration_since(self.epoch).as_secs() as usize).min(SECONDS - 1)
    }

    /// (steady p99, undisturbed p99, served-again p99, served-again max),
    /// µs; `None` where nothing was sampled.
    pub fn percentiles(&self) -> [Option<f64>; 4] {
        let q = |h: &Histogram<u64>, q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64);
        let again = self.served_again.lock();
        [
            q(&self.steady.lock(), 0.99),
            q(&self.undisturbed.lock(), 0.99),
            q(&again, 0.99),
            (!again.is_empty()).then(|| again.max() as f64),
        ]
    }

    /// What the first 410 said, if one came.
    pub fn first_gone(&self) -> Option<String> {
        self.first_gone.lock().clone()
    }

    fn gone(&self, what: impl FnOnce() -> String) {
        let mut first = self.first_gone.lock();
        if first.is_none() {
            *first = Some(what());
        }
    }

    /// Watchers that did not see exactly the writes after the base, in
    /// all (a gap, or a re-list's skip).
    pub fn short(&self) -> usize {
        let owed = self.written() - self.base;
        self.events
            .iter()
            .filter(|e| e.load(Ordering::Acquire) != owed)
            .count()
    }
}

/// What the watchers counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Streams begun again after an end, in all.
    pub reconnects: u64,
    /// The most in one second of the window.
    pub peak_per_s: u64,
    /// Watches that could not resume (410).
    pub relists: u64,
    /// Answers other than 200, retried.
    pub refusals: u64,
    /// Events at or below the version before them.
    pub violations: u64,
}

/// Starts `n` watchers, dealt among the balancers at `fronts`, on a
/// runtime of their own; returns it (dropping it ends them).
pub fn start(
    n: usize,
    fronts: &[SocketAddr],
    shared: &Arc<Shared>,
) -> anyhow::Result<tokio::runtime::Runtime> {
    anyhow::ensure!(!fronts.is_empty(), "no balancer to watch through");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    for i in 0..n {
        let (shared, front) = (shared.clone(), fronts[i % fronts.len()]);
        rt.spawn(async move { watch(i, front, shared).await });
    }
    Ok(rt)
}

/// How one stream ended.
enum End {
    /// The body ended, or the connection did: watch again.
    Closed,
    /// Refused (not 200): watch again after this long.
    Refused(Duration),
    /// 410: resume from the writer's latest version.
    Gone,
}

async fn watch(i: usize, front: SocketAddr, shared: Arc<Shared>) {
    // The first stream is not a reconnect.
    let mut ended: Option<Instant> = None;
    while !shared.stop.load(Ordering::Acquire) {
        let end = stream(i, front, &shared, &mut ended).await;
        match end {
            End::Closed => {
                ended.get_or_insert_with(Instant::now);
            }
            End::Refused(wait) => {
                ended.get_or_insert_with(Instant::now);
                shared.refusals.fetch_add(1, Ordering::AcqRel);
                tokio::time::sleep(wait).await;
            }
            End::Gone => {
                ended.get_or_insert_with(Instant::now);
                shared.relists.fetch_add(1, Ordering::AcqRel);
                shared.last[i].store(shared.written(), Ordering::Release);
            }
        }
    }
}

/// One watch, from the watcher's last version, until it ends.
async fn stream(i: usize, front: SocketAddr, shared: &Shared, ended: &mut Option<Instant>) -> End {
    const RETRY: Duration = Duration::from_millis(200);
    let Ok(tcp) = TcpStream::connect(front).await else {
        return End::Refused(RETRY);
    };
    let _ = tcp.set_nodelay(true);
    let mut io = BufReader::with_capacity(4096, tcp);
    let from = shared.last[i].load(Ordering::Acquire);
    let request = format!(
        "GET /api/v1/pods?watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds=3600 HTTP/1.1\r\nHost: herald\r\n\r\n"
    );
    if io.get_mut().write_all(request.as_bytes()).await.is_err() {
        return End::Refused(RETRY);
    }
    let mut line = String::new();
    if io.read_line(&mut line).await.unwrap_or(0) == 0 {
        return End::Refused(RETRY);
    }
    let status = line.clone();
    let code: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut retry_after = RETRY;
    loop {
        line.clear();
        if io.read_line(&mut line).await.unwrap_or(0) == 0 {
            return End::Refused(RETRY);
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("retry-after:")
            && let Ok(s) = v.trim().parse::<u64>()
        {
            retry_after = Duration::from_secs(s.min(10));
        }
    }
    match code {
        200 => {}
        410 => {
            shared.gone(|| format!("{} (from {from})", status.trim_end()));
            return End::Gone;
        }
        _ => return End::Refused(retry_after),
    }
    let began = Instant::now();
    if let Some(at) = ended.take() {
        shared.reconnects.fetch_add(1, Ordering::AcqRel);
        let second = shared.second(began);
        shared.per_second[second].fetch_add(1, Ordering::AcqRel);
        let us = began.saturating_duration_since(at).as_micros() as u64;
        let _ = shared.served_again.lock().record(us.max(1));
    }
    let began_ns = shared.since(began);
    let mut body: Vec<u8> = Vec::new();
    let mut chunk = Vec::new();
    loop {
        line.clear();
        if io.read_line(&mut line).await.unwrap_or(0) == 0 {
            return End::Closed;
        }
        let Ok(size) = usize::from_str_radix(line.trim_end(), 16) else {
            return End::Closed;
        };
        if size == 0 {
            return End::Closed;
        }
        chunk.resize(size + 2, 0);
        if io.read_exact(&mut chunk).await.is_err() {
            return End::Closed;
        }
        body.extend_from_slice(&chunk[..size]);
        while let Some(nl) = memchr::memchr(b'\n', &body) {
            let gone = event(i, &body[..nl], shared, began_ns);
            body.drain(..=nl);
            if gone {
                return End::Gone;
            }
        }
        if shared.stop.load(Ordering::Acquire) {
            return End::Closed;
        }
    }
}

/// One event line; true if it says the watch cannot resume (410).
fn event(i: usize, line: &[u8], shared: &Shared, began_ns: u64) -> bool {
    let now = Instant::now();
    if line.starts_with(b"{\"type\":\"ERROR\"") {
        let gone = memchr::memmem::find(line, b"\"code\":410").is_some();
        if gone {
            let from = shared.last[i].load(Ordering::Acquire);
            shared.gone(|| format!("{} (watching from {from})", String::from_utf8_lossy(line)));
        }
        return gone;
    }
    let Some(rv) = crate::http::line_rv(line) else {
        shared.violations.fetch_add(1, Ordering::AcqRel);
        return false;
    };
    let last = &shared.last[i];
    if line.starts_with(b"{\"type\":\"BOOKMARK\"") {
        if rv > last.load(Ordering::Acquire) {
            last.store(rv, Ordering::Release);
        }
        return false;
    }
    if rv <= last.load(Ordering::Acquire) {
        shared.violations.fetch_add(1, Ordering::AcqRel);
        return false;
    }
    last.store(rv, Ordering::Release);
    shared.events[i].fetch_add(1, Ordering::AcqRel);
    let sent = rv
        .checked_sub(shared.base + 1)
        .and_then(|k| shared.sent.read().get(k as usize).copied());
    let Some(sent) = sent else {
        return false;
    };
    let us = now.saturating_duration_since(sent).as_micros() as u64;
    match shared.phase.load(Ordering::Acquire) {
        p if p == Phase::Steady as u8 => {
            let _ = shared.steady.lock().record(us.max(1));
        }
        p if p == Phase::Storm as u8 && began_ns < shared.step_ns.load(Ordering::Acquire) => {
            let _ = shared.undisturbed.lock().record(us.max(1));
        }
        _ => {}
    }
    false
}
