//! What the server counts as it serves: per resource (events and bytes
//! written, their sizes, requests by verb and code, open watch
//! connections) and over the whole server (admission's refusals, the
//! connections the reaper closed, the bytes not yet taken by clients,
//! the seats taken). Connections count in local tallies and add them to
//! the shared atomics once per written batch, so the fan-out path does
//! not share a counter per event. `metrics` reads these at scrape time.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Upper bounds of `apiserver_watch_events_sizes` (bytes; the apiserver's
/// `ExponentialBuckets(1024, 2.0, 8)`).
pub const EVENT_SIZE_BUCKETS: [u64; 8] = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];

/// What the server counts for one resource (shared by its connections).
#[derive(Debug, Default)]
pub struct ResourceMetrics {
    pub(crate) events_sent: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    /// Chunks handed to connections (events over chunks: events per
    /// write).
    pub(crate) chunks_sent: AtomicU64,
    /// Per bucket of [`EVENT_SIZE_BUCKETS`], then one for larger events
    /// (not cumulative).
    pub(crate) size_buckets: [AtomicU64; 9],
    watches_open: AtomicU64,
    pub(crate) described: AtomicU64,
    stalled: AtomicU64,
    revoked: AtomicU64,
    /// (verb, code) -> requests.
    pub(crate) requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
}

/// A connection's tally of what it wrote since its last flush.
#[derive(Debug, Default)]
pub struct Tally {
    events: u64,
    bytes: u64,
    chunks: u64,
    sizes: [u64; 9],
    described: u64,
}

impl Tally {
    /// One event of `size` bytes written.
    #[inline]
    pub fn event(&mut self, size: usize) {
        self.events += 1;
        self.bytes += size as u64;
        let i = EVENT_SIZE_BUCKETS
            .iter()
            .position(|&le| size as u64 <= le)
            .unwrap_or(EVENT_SIZE_BUCKETS.len());
        self.sizes[i] += 1;
    }

    /// One chunk handed to the connection.
    #[inline]
    pub fn chunk(&mut self) {
        self.chunks += 1;
    }

    /// One object described from its metadata (its payload was not JSON).
    pub fn described(&mut self) {
        self.described += 1;
    }
}

impl ResourceMetrics {
    /// Adds a connection's tally and resets it.
    pub fn flush(&self, tally: &mut Tally) {
        if tally.events == 0 && tally.described == 0 {
            return;
        }
        self.events_sent.fetch_add(tally.events, Ordering::Relaxed);
        self.bytes_sent.fetch_add(tally.bytes, Ordering::Relaxed);
        self.chunks_sent.fetch_add(tally.chunks, Ordering::Relaxed);
        for (shared, &n) in self.size_buckets.iter().zip(&tally.sizes) {
            if n > 0 {
                shared.fetch_add(n, Ordering::Relaxed);
            }
        }
        self.described.fetch_add(tally.described, Ordering::Relaxed);
        *tally = Tally::default();
    }

    /// A request answered with `code`.
    pub fn request(&self, verb: &'static str, code: u16) {
        let mut r = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *r.entry((verb, code)).or_default() += 1;
    }

    /// A watch connection opened (the guard closes it).
    pub fn watch_opened(self: &std::sync::Arc<Self>) -> OpenWatch {
        self.watches_open.fetch_add(1, Ordering::Relaxed);
        OpenWatch(self.clone())
    }

    /// A watch connection closed for not reading (see [`crate::ServerConfig`]).
    pub fn stalled(&self) {
        self.stalled.fetch_add(1, Ordering::Relaxed);
    }

    /// Watch connections closed so far for not reading.
    pub fn stalled_total(&self) -> u64 {
        self.stalled.load(Ordering::Relaxed)
    }

    /// A watch ended because RBAC no longer allows it.
    pub fn watch_revoked(&self) {
        self.revoked.fetch_add(1, Ordering::Relaxed);
    }

    /// Watches ended so far because RBAC no longer allowed them.
    pub fn revoked_total(&self) -> u64 {
        self.revoked.load(Ordering::Relaxed)
    }

    /// Watch events written so far.
    pub fn events_sent(&self) -> u64 {
        self.events_sent.load(Ordering::Relaxed)
    }

    /// Watch connections open now.
    pub fn watches_open(&self) -> u64 {
        self.watches_open.load(Ordering::Relaxed)
    }
}

/// An open watch connection; dropping it counts it closed.
#[derive(Debug)]
pub struct OpenWatch(std::sync::Arc<ResourceMetrics>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.watches_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the server counts over every resource: what admission refused
/// and the reaper closed (by reason), and the response bytes its clients
/// have not taken yet.
#[derive(Debug, Default)]
pub struct ServerMetrics {
    rejected: Mutex<BTreeMap<&'static str, u64>>,
    closed: Mutex<BTreeMap<&'static str, u64>>,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    /// Reloads of the TLS files that failed (the previous ones kept).
    pub(crate) tls_reload_failures: AtomicU64,
    /// Response bytes handed to the connections and not yet written.
    pub(crate) unwritten: AtomicUsize,
    /// Per admission class (read, waiting): seats taken, requests queued.
    pub(crate) seats: [[AtomicUsize; 2]; 2],
    /// Delegated reviews, per kind (token, access) and result (cached,
    /// sent, failed).
    pub(crate) reviews: [[AtomicU64; 3]; 2],
}

impl ServerMetrics {
    /// A request refused by admission (`reason`: its label value).
    pub fn rejected(&self, reason: &'static str) {
        *self
            .rejected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    /// Requests refused for `reason` so far.
    pub fn rejected_total(&self, reason: &str) -> u64 {
        let map = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        map.get(reason).copied().unwrap_or(0)
    }

    /// A request refused by access control (`reason`: its label value,
    /// one of the fixed set `/metrics` lists).
    pub fn access_refused(&self, reason: &'static str) {
        *self
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    /// Requests refused by access control for `reason` so far.
    pub fn access_refused_total(&self, reason: &str) -> u64 {
        let map = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        map.get(reason).copied().unwrap_or(0)
    }

    /// A connection closed by the reaper (`reason`: its label value).
    pub fn closed(&self, reason: &'static str) {
        *self
            .closed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    /// Connections closed for `reason` so far.
    pub fn closed_total(&self, reason: &str) -> u64 {
        let map = self.closed.lock().unwrap_or_else(|e| e.into_inner());
        map.get(reason).copied().unwrap_or(0)
    }

    /// Response bytes not yet taken by their clients.
    pub fn unwritten_bytes(&self) -> usize {
        self.unwritten.load(Ordering::Relaxed)
    }

    /// Admission class `class` (0: read, 1: waiting) has `taken` seats
    /// taken and `queued` requests waiting.
    pub fn seats(&self, class: usize, taken: usize, queued: usize) {
        if let Some([t, q]) = self.seats.get(class) {
            t.store(taken, Ordering::Relaxed);
            q.store(queued, Ordering::Relaxed);
        }
    }
}

/// What [`ServerMetrics::log_news`] last reported.
#[derive(Debug, Default)]
pub struct Reported {
    rejected: BTreeMap<&'static str, u64>,
    closed: BTreeMap<&'static str, u64>,
}

impl ServerMetrics {
    /// Writes one line to stderr saying what was refused and closed since
    /// `last` (nothing if nothing was), and remembers it: called once a
    /// second, an operator's log says why clients got 429s or lost their
    /// connections, at most a line a second however many there were.
    pub fn log_news(&self, last: &mut Reported) {
        let news = |now: &Mutex<BTreeMap<&'static str, u64>>,
                    then: &mut BTreeMap<&'static str, u64>| {
            let now = now.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let out: Vec<String> = now
                .iter()
                .filter_map(|(k, v)| {
                    let d = v - then.get(k).copied().unwrap_or(0);
                    (d > 0).then(|| format!("{k} {d}"))
                })
                .collect();
            *then = now;
            out
        };
        let rejected = news(&self.rejected, &mut last.rejected);
        let closed = news(&self.closed, &mut last.closed);
        if !rejected.is_empty() || !closed.is_empty() {
            eprintln!(
                "herald-server: in the last second: refused with 429: [{}]; connections closed: [{}]",
                rejected.join(", "),
                closed.join(", ")
            );
        }
    }
}
