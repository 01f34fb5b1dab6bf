//! Counters a server exports, and the plain snapshot they are read into
//! ([`Engine::stats`](crate::Engine::stats): [`Stats`], with its
//! [`Terminations`] and latency [`Histogram`]s).

use std::time::Duration;

pub use crate::histogram::{Bucket, Histogram};

use crate::event::EndReason;
use crate::histogram::AtomicHistogram;
// Statistics, never a synchronisation point: `std` atomics even under
// `herald_loom`, so loom does not explore their interleavings.
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters. All `Relaxed`: each is an independent statistic, read
/// without any promise of consistency between counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) changes_received: AtomicU64,
    pub(crate) relists: AtomicU64,
    pub(crate) progress_updates: AtomicU64,
    pub(crate) changes_dispatched: AtomicU64,
    pub(crate) deliveries: AtomicU64,
    pub(crate) initial_events_sent: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) spilled: AtomicU64,
    pub(crate) resumes: AtomicU64,
    pub(crate) drains: AtomicU64,
    pub(crate) writer_gated_waits: AtomicU64,
    pub(crate) watches_started: AtomicU64,
    pub(crate) watchers_pending: AtomicU64,
    pub(crate) watchers_active: AtomicU64,
    pub(crate) ring_capacity: AtomicU64,
    pub(crate) ring_len: AtomicU64,
    pub(crate) ring_grows: AtomicU64,
    pub(crate) ring_shrinks: AtomicU64,
    pub(crate) bookmarks_sent: AtomicU64,
    pub(crate) ticks: AtomicU64,
    pub(crate) budget_rounds: AtomicU64,
    pub(crate) budget_taken_ns: AtomicU64,
    pub(crate) budget_returned_ns: AtomicU64,
    pub(crate) applied_to_enqueued: AtomicHistogram,
    pub(crate) enqueued_to_received: AtomicHistogram,
    pub(crate) watchers_retiring: AtomicU64,
    /// Handles in every watcher's overflow (`Config::spill_budget`).
    pub(crate) overflow_handles: AtomicU64,
    /// Registrations queued for the dispatcher (counted into
    /// `watchers_pending`).
    pub(crate) registrations_queued: AtomicU64,
    ends: [AtomicU64; 9],
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(c: &AtomicU64, n: u64) {
        c.fetch_sub(n, Ordering::Relaxed);
    }

    pub(crate) fn set(c: &AtomicU64, v: u64) {
        c.store(v, Ordering::Relaxed);
    }

    pub(crate) fn ended(&self, reason: &EndReason) {
        let i = match reason {
            EndReason::Stopped => 0,
            EndReason::Deadline => 1,
            EndReason::TooSlow => 2,
            EndReason::Gone(_) => 3,
            EndReason::Relisted => 4,
            EndReason::EngineStopped => 5,
            EndReason::TooLargeResourceVersion(_) => 6,
            EndReason::EngineFailed => 7,
            EndReason::Drained => 8,
        };
        self.ends[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let ends = Terminations {
            stopped: g(&self.ends[0]),
            deadline: g(&self.ends[1]),
            too_slow: g(&self.ends[2]),
            gone: g(&self.ends[3]),
            relisted: g(&self.ends[4]),
            engine_stopped: g(&self.ends[5]),
            too_large_resource_version: g(&self.ends[6]),
            engine_failed: g(&self.ends[7]),
            drained: g(&self.ends[8]),
        };
        Stats {
            changes_received: g(&self.changes_received),
            relists: g(&self.relists),
            progress_updates: g(&self.progress_updates),
            changes_dispatched: g(&self.changes_dispatched),
            deliveries: g(&self.deliveries),
            initial_events_sent: g(&self.initial_events_sent),
            parks: g(&self.parks),
            spilled: g(&self.spilled),
            resumes: g(&self.resumes),
            drains: g(&self.drains),
            writer_gated_waits: g(&self.writer_gated_waits),
            watches_started: g(&self.watches_started),
            watchers_pending: g(&self.watchers_pending) + g(&self.registrations_queued),
            watchers_active: g(&self.watchers_active),
            watchers_retiring: g(&self.watchers_retiring),
            overflow_handles: g(&self.overflow_handles),
            watchers_ended: ends.total(),
            terminations: ends,
            ring_capacity: g(&self.ring_capacity),
            ring_len: g(&self.ring_len),
            ring_grows: g(&self.ring_grows),
            ring_shrinks: g(&self.ring_shrinks),
            bookmarks_sent: g(&self.bookmarks_sent),
            ticks: g(&self.ticks),
            budget_rounds: g(&self.budget_rounds),
            budget_taken: Duration::from_nanos(g(&self.budget_taken_ns)),
            budget_returned: Duration::from_nanos(g(&self.budget_returned_ns)),
            applied_to_enqueued: self.applied_to_enqueued.snapshot(),
            enqueued_to_received: self.enqueued_to_received.snapshot(),
        }
    }
}

/// A snapshot of the engine's counters ([`Engine::stats`](crate::Engine::stats)).
///
/// Counters only grow; gauges (`watchers_pending`, `watchers_active`,
/// `ring_capacity`, `ring_len`) are current values. Fields are read one by
/// one, so two fields may reflect slightly different moments. Durations
/// are on the engine's [clock](crate::Config::clock).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Changes the writer applied.
    pub changes_received: u64,
    /// Re-lists (`replace` calls), the first list included.
    pub relists: u64,
    /// Progress notifications that advanced the resource version, and
    /// deletions of keys the cache did not hold (which advance it the same
    /// way; see [`Writer::apply`](crate::Writer::apply)).
    pub progress_updates: u64,
    /// Changes the dispatcher has fanned out.
    pub changes_dispatched: u64,
    /// Live deliveries: events the dispatcher enqueued to watchers, plus
    /// one per change per follower (a watcher that admits everything
    /// under the park policy reads every change from the ring itself).
    pub deliveries: u64,
    /// Initial events (current state as Added) served to watches.
    pub initial_events_sent: u64,
    /// Times the dispatcher found a watcher's queue full and parked it
    /// (the watcher then feeds itself from the ring).
    pub parks: u64,
    /// Handles for selective watchers that took the overflow path instead
    /// of parking ([`Config::spill_limit`](crate::Config::spill_limit)):
    /// the queue was full or the overflow active; each was kept in the
    /// overflow, or in the queue if the consumer had just taken the
    /// overflow and made room.
    pub spilled: u64,
    /// Times a parked watcher caught up and was fed by the dispatcher again.
    pub resumes: u64,
    /// Drains carried out ([`Engine::drain`](crate::Engine::drain)).
    pub drains: u64,
    /// Times the writer waited for the dispatcher (ring full of undispatched
    /// changes at its upper bound).
    pub writer_gated_waits: u64,
    /// Watches created.
    pub watches_started: u64,
    /// Watches registered and waiting to start (for the first list, or
    /// for a future RV), those whose registration the dispatcher has not
    /// taken up yet included.
    pub watchers_pending: u64,
    /// Watches the dispatcher serves (live or parked), not ended.
    pub watchers_active: u64,
    /// Ended watches whose memory the dispatcher still holds: their
    /// removal is queued, or waits for the next sweep of its tables
    /// (amortised: a sweep runs once the ended ones outnumber the rest,
    /// so at most as many as `watchers_pending + watchers_active`, plus
    /// what ended since the dispatcher last looked).
    pub watchers_retiring: u64,
    /// Change handles held in selective watchers' overflows now (8 bytes
    /// each), at most [`Config::spill_budget`](crate::Config::spill_budget).
    pub overflow_handles: u64,
    /// Watches ended, for any reason.
    pub watchers_ended: u64,
    /// Ended watches by reason.
    pub terminations: Terminations,
    /// The history ring's capacity (records).
    pub ring_capacity: u64,
    /// Records in the history window.
    pub ring_len: u64,
    /// Times the ring doubled.
    pub ring_grows: u64,
    /// Times the ring halved.
    pub ring_shrinks: u64,
    /// Bookmarks handed to watches (initial-events-end ones included).
    pub bookmarks_sent: u64,
    /// Dispatcher ticks done (bookmarks due, idle shrinking), about one a
    /// second.
    pub ticks: u64,
    /// Dispatch rounds that found full queues and drew on the time budget
    /// ([`SlowWatchers::TimeBudget`](crate::config::SlowWatchers::TimeBudget)).
    pub budget_rounds: u64,
    /// Budget those rounds took, in total.
    pub budget_taken: Duration,
    /// Budget they gave back unused, in total.
    pub budget_returned: Duration,
    /// From the writer applying a change to the dispatcher enqueuing it
    /// (sampled: changes at positions divisible by 8).
    pub applied_to_enqueued: Histogram,
    /// From the dispatcher enqueuing a change to a watch receiving it
    /// (sampled: one queued receive in 64 per watch; replays from the
    /// history are not queued and not counted).
    pub enqueued_to_received: Histogram,
}

/// Ended watches by [`EndReason`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Terminations {
    /// [`EndReason::Stopped`].
    pub stopped: u64,
    /// [`EndReason::Deadline`].
    pub deadline: u64,
    /// [`EndReason::TooSlow`].
    pub too_slow: u64,
    /// [`EndReason::Gone`].
    pub gone: u64,
    /// [`EndReason::Relisted`].
    pub relisted: u64,
    /// [`EndReason::EngineStopped`].
    pub engine_stopped: u64,
    /// [`EndReason::TooLargeResourceVersion`].
    pub too_large_resource_version: u64,
    /// [`EndReason::EngineFailed`].
    pub engine_failed: u64,
    /// [`EndReason::Drained`].
    pub drained: u64,
}

impl Terminations {
    /// All ended watches.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, _writer) = Engine::new(Config::default())?;
    /// let mut w = engine.watch(WatchRequest::new())?;
    /// w.stop();
    /// let t = engine.stats().terminations;
    /// assert_eq!((t.stopped, t.total()), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn total(&self) -> u64 {
        self.stopped
            + self.deadline
            + self.too_slow
            + self.gone
            + self.relisted
            + self.engine_stopped
            + self.too_large_resource_version
            + self.engine_failed
            + self.drained
    }
}
