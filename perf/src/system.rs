//! What every system under test implements, and the one consumer
//! arrangement they all share.
//!
//! A [`System`] builds a [`Publisher`] (the writer side: it is handed the
//! index of the next workload change and publishes it) and one
//! [`Subscriber`] per watcher (a queue, receiver or cursor that the
//! consumer pool drains in batches). The consumer pool ([`crate::consume`])
//! is the same for everyone: a fixed number of threads, each owning a share
//! of the watchers, each doing the same per-delivery work ([`Tally`]).
//! A system whose consumers must run on its own threads (disruptor's event
//! handlers) runs the same [`Tally`] work there instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use crate::workload::{Filter, Workload};

/// One run's set-up, as a system sees it.
#[derive(Debug, Clone)]
pub struct Spec {
    /// One filter per watcher, in watcher order.
    pub filters: Vec<Filter>,
    /// Whether `Filter::Node` watchers are routed through an index on
    /// `spec.nodeName` (when false, every watcher is offered every change
    /// and evaluates its selector).
    pub indexed: bool,
    /// Per-watcher queue capacity for systems that have one (the reference
    /// sizes it by watcher kind: 10, 100 or 1,000).
    pub queue: usize,
    /// Ring or history capacity for systems that have one.
    pub ring: usize,
    /// Watchers start from this change index: each is owed changes
    /// `start..` (0: from the list's version), and is registered with the
    /// resource version of change `start - 1`.
    pub start: usize,
    /// Changes applied while building, before any watcher registers
    /// (`preloaded >= start`); the rest are published in the timed run.
    /// `preloaded > start` makes the watchers catch up from history.
    pub preloaded: usize,
}

impl Spec {
    /// The resource version watchers register with.
    pub fn start_rv(&self, workload: &Workload) -> u64 {
        match self.start {
            0 => Workload::LIST_RV,
            s => workload.changes[s - 1].rv,
        }
    }
}

/// The writer side of a system.
pub trait Publisher: Send + 'static {
    /// Publishes workload change `i` (changes arrive in order, `i` from 0).
    fn publish(&mut self, i: usize);
    /// No more changes will come; returns once the system has taken
    /// everything published (consumers may still be draining).
    fn finish(&mut self) {}
    /// Whether the publisher stamps changes itself (default: false, the
    /// run stamps each change as it hands it over). One that does learns
    /// which index a change has only when the system acknowledges it (etcd:
    /// the put's revision), so it stamps then, twice: when the change was
    /// sent, and when it was acknowledged (see [`Publisher::begin`]).
    fn stamps_itself(&self) -> bool {
        false
    }
    /// Called just before the first publish, as the run's clock starts. A
    /// publisher that [stamps itself](Publisher::stamps_itself) keeps
    /// `sent` and `acked` and, once the system acknowledges a change, sets
    /// both at the index consumers will see it under (`acked` first:
    /// [`Stamps::set`]); latency is sampled from both.
    fn begin(&mut self, sent: &Arc<Stamps>, acked: &Arc<Stamps>) {
        let _ = (sent, acked);
    }
    /// Called once every consumer is done, before the run's CPU window
    /// closes: what the publisher measured beside the run (a server
    /// process's CPU and memory), if anything.
    fn end(&mut self) -> Option<PeerUse> {
        None
    }
}

/// What a system backed by a server process (etcd, or http-fanout's child
/// server) cost beside the harness's own threads, over one run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PeerUse {
    /// CPU time the server process took over the run (s).
    pub cpu_s: f64,
    /// That, over the run's wall time (cores).
    pub cores: f64,
    /// Its CPU time per delivery received by the watchers (µs).
    pub us_per_delivery: f64,
    /// Its CPU time per write (µs).
    pub us_per_write: f64,
    /// The highest resident memory (`VmRSS`) of the server process seen
    /// during the run (sampled every 20 ms), bytes.
    pub rss_peak_bytes: u64,
    /// The highest count of heap bytes the harness allocated from the
    /// system's build on and had not freed (sampled every 20 ms; the
    /// counting allocator, 0 where it is not installed): the client side
    /// (Herald, its source and watches; or the etcd watch streams), the
    /// writer and the consumers.
    pub heap_peak_bytes: i64,
    /// Writes made.
    pub writes: u64,
    /// Latency samples whose delivery came before the write's
    /// acknowledgement reached the writer (recorded as 0).
    pub before_ack: u64,
    /// Latency samples taken.
    pub samples: u64,
    /// Writes the writer kept in flight at most.
    pub in_flight: usize,
    /// The connections the watchers' streams were spread over (etcd's own
    /// watchers; none for Herald's, which etcd serves with one watch).
    pub connections: Option<usize>,
    /// Heap per watch connection once all were open, both ends (the
    /// server's and the client's), bytes (http-fanout).
    pub bytes_per_connection: Option<f64>,
    /// The server's share of that (http-fanout's child server).
    pub server_bytes_per_connection: Option<f64>,
    /// The apiserver behind the system (apiserver-fanout): the watched
    /// server itself, or the upstream of the Herald in front of it.
    pub apiserver: Option<ApiserverUse>,
    /// How long a write took to return, median (µs).
    pub put_p50_us: Option<f64>,
    /// 99th percentile (µs).
    pub put_p99_us: Option<f64>,
}

/// What the kube-apiserver cost over one run of apiserver-fanout.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ApiserverUse {
    /// Its CPU time over the run (s).
    pub cpu_s: f64,
    /// That per write made through it (µs).
    pub us_per_write: f64,
    /// Its CPU over a second before the run, the watches open and nothing
    /// written (cores).
    pub idle_cores: f64,
    /// Its CPU per write above that idle rate (µs).
    pub us_per_write_above_idle: f64,
    /// Its Go heap in use after a forced collection, the watches open
    /// (bytes).
    pub heap_inuse_bytes: u64,
    /// Its live heap's growth (`HeapAlloc` after a forced collection)
    /// from before the watches opened, per watcher (bytes).
    pub heap_per_watcher: f64,
    /// The pod watches it served once they were open, besides its own
    /// informers'.
    pub watches: u64,
}

/// What one [`Subscriber::drain`] call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drained {
    /// Deliveries handed to the callback.
    pub delivered: usize,
    /// The watcher has ended (closed, lagged, terminated): nothing more
    /// will come.
    pub ended: bool,
}

/// One watcher, as the consumer pool drains it.
pub trait Subscriber: Send + 'static {
    /// Hands up to `max` ready deliveries to `f` as (resource version,
    /// payload length), without blocking. A subscriber whose system has no
    /// filter applies the watcher's filter here and counts only what
    /// passes.
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained;

    /// Whether [`poll_drain`](Subscriber::poll_drain) can report
    /// `Pending`: the system keeps a readiness list (it wakes a watcher's
    /// waker when the watcher has something), so its consumers visit only
    /// the watchers that are ready.
    fn has_readiness(&self) -> bool {
        false
    }

    /// [`drain`](Subscriber::drain) for a readiness list: when nothing is
    /// ready, arranges for `cx`'s waker to be woken once something is and
    /// returns `Poll::Pending`. The default drains and reports `Ready`: a
    /// system without readiness is visited on every pass (polled).
    fn poll_drain<F: FnMut(u64, usize)>(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut F,
    ) -> Poll<Drained> {
        let _ = cx;
        Poll::Ready(self.drain(max, f))
    }
}

/// [`Subscriber::drain`] for a subscriber that has readiness: one
/// `poll_drain` with a waker that wakes nothing (`Pending` is nothing
/// ready now).
pub fn drain_now<S: Subscriber, F: FnMut(u64, usize)>(s: &mut S, max: usize, f: &mut F) -> Drained {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match s.poll_drain(&mut cx, max, f) {
        Poll::Ready(d) => d,
        Poll::Pending => Drained::default(),
    }
}

/// A system under test.
pub trait System {
    /// Its writer side.
    type Pub: Publisher;
    /// Its per-watcher side.
    type Sub: Subscriber;
    /// Builds the system: applies the workload's initial list and the
    /// first `spec.preloaded` changes, then registers `spec.filters.len()`
    /// watchers from the version of change `spec.start - 1`; every watcher
    /// is registered and ready when this returns.
    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(Self::Pub, Vec<Self::Sub>)>;
}

/// Publish times, one per change, for publish-to-receive latency.
#[derive(Debug)]
pub struct Stamps {
    base: Instant,
    ns: Box<[AtomicU64]>,
}

impl Stamps {
    /// Room for `changes` stamps.
    pub fn new(changes: usize) -> Arc<Stamps> {
        Arc::new(Stamps {
            base: Instant::now(),
            ns: (0..changes).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Nanoseconds since the stamps were made.
    #[inline]
    pub fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Another set of stamps of the same length on the same clock (0 for
    /// every change).
    pub fn twin(&self) -> Arc<Stamps> {
        Arc::new(Stamps {
            base: self.base,
            ns: (0..self.ns.len()).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Records that change `i` is being published now.
    #[inline]
    pub fn mark(&self, i: usize) {
        // Relaxed suffices: the system's own publication (a release store
        // or a lock) orders this store before the consumer's read.
        self.ns[i].store(self.now(), Ordering::Relaxed);
    }

    /// Records that change `i` was published at `ns` (since base), after
    /// the change was delivered perhaps: a consumer that reads the stamp
    /// also sees every store this thread made before it (release).
    #[inline]
    pub fn set(&self, i: usize, ns: u64) {
        self.ns[i].store(ns.max(1), Ordering::Release);
    }

    /// When change `i` was published (ns since base; 0: not yet, or no
    /// such change).
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        self.ns.get(i).map_or(0, |t| t.load(Ordering::Acquire))
    }

    /// How many changes there is room for.
    pub fn len(&self) -> usize {
        self.ns.len()
    }

    /// Whether there is room for none.
    pub fn is_empty(&self) -> bool {
        self.ns.is_empty()
    }
}

/// The work a consumer does per delivery, the same for every system:
/// check order (strictly increasing resource versions: no duplicate, no
/// reordering), count, read the payload length, optionally check the
/// filter (no forbidden delivery) and sample latency.
#[derive(Debug, Clone)]
pub struct Tally {
    /// The watcher's filter.
    pub filter: Filter,
    /// Deliveries owed (the run ends for this watcher when reached).
    pub expected: u64,
    /// Deliveries received.
    pub received: u64,
    /// Payload bytes read.
    pub bytes: u64,
    /// The last resource version received.
    pub last_rv: u64,
    /// Order or filter violations seen (must stay 0).
    pub violations: u64,
    /// The watcher ended before receiving everything owed.
    pub ended_early: bool,
}

impl Tally {
    /// A tally owed `expected` deliveries, starting after `start_rv`.
    pub fn new(filter: Filter, expected: u64, start_rv: u64) -> Tally {
        Tally {
            filter,
            expected,
            received: 0,
            bytes: 0,
            last_rv: start_rv,
            violations: 0,
            ended_early: false,
        }
    }

    /// Whether the watcher needs no more draining.
    #[inline]
    pub fn done(&self) -> bool {
        self.received >= self.expected || self.ended_early
    }

    /// One delivery.
    #[inline]
    pub fn deliver(&mut self, rv: u64, len: usize, check: &Check<'_>) {
        if rv <= self.last_rv {
            self.violations += 1;
        }
        self.last_rv = rv;
        self.received += 1;
        self.bytes += len as u64;
        // A version below the first (a broken system) lands out of range:
        // a filter violation when filters are checked, never a panic.
        let i = rv.wrapping_sub(Workload::FIRST_RV) as usize;
        if check.filters {
            let admitted = check
                .workload
                .changes
                .get(i)
                .is_some_and(|c| self.filter.admits(c));
            if !admitted {
                self.violations += 1;
            }
        }
        if rv & check.sample_mask == 0
            && let Some(stamps) = check.stamps
            && i < stamps.len()
        {
            let at = stamps.get(i);
            let now = stamps.now();
            // Not stamped yet: a publisher that stamps changes itself has
            // not heard the acknowledgement. Settled after the run.
            let acked = check.acked.map(|a| a.get(i));
            if at == 0 || acked == Some(0) {
                check.deferred.borrow_mut().push((i, now));
            } else {
                check.record(now.saturating_sub(at));
                if let Some(acked) = acked {
                    check
                        .hist_acked
                        .borrow_mut()
                        .saturating_record(now.saturating_sub(acked).max(1));
                }
            }
        }
    }
}

/// What [`Tally::deliver`] checks and samples, shared by a consumer
/// thread.
#[derive(Debug)]
pub struct Check<'a> {
    /// The workload (for the filter check).
    pub workload: &'a Workload,
    /// Check each delivery against the filter (one extra read of the
    /// workload per delivery).
    pub filters: bool,
    /// Latency is sampled for resource versions with `rv & mask == 0`.
    pub sample_mask: u64,
    /// Publish times, when latency is measured.
    pub stamps: Option<&'a Stamps>,
    /// Acknowledgement times, when the publisher stamps changes itself.
    pub acked: Option<&'a Stamps>,
    /// Latency from the acknowledgement (ns; 1 when the delivery came
    /// first).
    pub hist_acked: std::cell::RefCell<hdrhistogram::Histogram<u64>>,
    /// The thread's latency histogram (ns).
    pub hist: std::cell::RefCell<hdrhistogram::Histogram<u64>>,
    /// Samples of changes not yet stamped (or not yet acknowledged) when
    /// received: (change, receive time in ns since the stamps' base),
    /// settled once the publisher has finished.
    pub deferred: std::cell::RefCell<Vec<(usize, u64)>>,
}

impl Check<'_> {
    #[inline]
    fn record(&self, ns: u64) {
        self.hist.borrow_mut().saturating_record(ns.max(1));
    }
}

/// A latency histogram (1 ns .. 100 s, 3 significant digits).
pub fn histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}
