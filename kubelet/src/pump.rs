//! The manager's one thread: it polls the streams of the objects whose
//! wakers fired, re-opens ended watches when their backoff is over, and
//! looks for idle watches once a period, all on the manager's clock.
//!
//! The reference runs a goroutine per object (its reflector) and a `Get`
//! polls every 10 ms for the sync. Here a watch costs no thread: the
//! upstream's waker (the engine's readiness wake, or a channel's) puts the
//! object in a queue and unparks the pump; a sync unparks the `get`s that
//! wait for it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::thread::{self, Thread};
use std::time::Instant;

use crate::config::{ManagerConfig, RECYCLE_PERIOD};
use crate::item::{Item, PARK_AT_MOST};
use crate::upstream::Upstream;

/// What every object shares: the upstream, the settings, the counters and
/// the pump's queues. Holds no object but those queued, so nothing keeps
/// an object alive once its watch is closed and it is unqueued.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) upstream: Box<dyn Upstream>,
    pub(crate) config: ManagerConfig,
    pub(crate) stats: Counters,
    pub(crate) pump: Pump,
}

/// The counters behind [`ManagerStats`](crate::ManagerStats).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) watches_open: AtomicUsize,
    pub(crate) syncs: AtomicU64,
    pub(crate) updates: AtomicU64,
    pub(crate) watch_ends: AtomicU64,
    pub(crate) reopens: AtomicU64,
    pub(crate) immutable_stops: AtomicU64,
    pub(crate) idle_stops: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) sync_timeouts: AtomicU64,
    pub(crate) panics: AtomicU64,
}

/// The objects to poll, and the re-open times.
#[derive(Debug, Default)]
pub(crate) struct Pump {
    queue: Mutex<Vec<Arc<Item>>>,
    /// (when, a sequence number for ties) -> the object.
    timers: Mutex<BTreeMap<(Instant, u64), Weak<Item>>>,
    seq: AtomicU64,
    thread: OnceLock<Thread>,
    pub(crate) stopping: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section here is a push, a take or a split.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pump {
    pub(crate) fn push(&self, item: Arc<Item>) {
        lock(&self.queue).push(item);
        self.unpark();
    }

    pub(crate) fn timer(&self, at: Instant, item: &Arc<Item>) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        lock(&self.timers).insert((at, seq), Arc::downgrade(item));
        self.unpark();
    }

    pub(crate) fn unpark(&self) {
        // Set by the pump before its first look at the queue, so a push
        // that finds no thread yet is seen by that look.
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// Empties the queues (the manager stopped): the objects they hold
    /// are released.
    pub(crate) fn clear(&self) {
        let queued = std::mem::take(&mut *lock(&self.queue));
        drop(queued);
        lock(&self.timers).clear();
    }

    /// The timers due at `now`, and the next one after them.
    fn due(&self, now: Instant) -> (Vec<Weak<Item>>, Option<Instant>) {
        let mut timers = lock(&self.timers);
        let later = timers.split_off(&(now, u64::MAX));
        let due = std::mem::replace(&mut *timers, later);
        let next = timers.keys().next().map(|(at, _)| *at);
        (due.into_values().collect(), next)
    }
}

/// The pump's loop, until the manager stops. `recycle` stops the idle
/// watches.
pub(crate) fn run(core: Arc<Core>, recycle: impl Fn(Instant)) {
    let _ = core.pump.thread.set(thread::current());
    let clock = core.config.clock.clone();
    let mut next_recycle = clock.now().checked_add(RECYCLE_PERIOD);
    while !core.pump.stopping.load(Ordering::Acquire) {
        let batch = std::mem::take(&mut *lock(&core.pump.queue));
        for item in batch {
            guarded(&core, || item.poll());
        }
        let now = clock.now();
        let (due, next_timer) = core.pump.due(now);
        for item in due.iter().filter_map(Weak::upgrade) {
            guarded(&core, || item.reopen_if_due(now));
        }
        if next_recycle.is_some_and(|at| now >= at) {
            guarded(&core, || recycle(now));
            next_recycle = now.checked_add(RECYCLE_PERIOD);
        }
        if !lock(&core.pump.queue).is_empty() {
            continue;
        }
        let next = match (next_recycle, next_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match next {
            Some(at) => clock.park_until(at, PARK_AT_MOST),
            None => thread::park_timeout(PARK_AT_MOST),
        }
    }
}

/// Runs `f`, counting a panic (a user's immutability test, or an
/// upstream's stream) instead of losing the pump to it.
fn guarded(core: &Core, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        core.stats.panics.fetch_add(1, Ordering::Relaxed);
    }
}
