//! [`SlowWatchers::TimeBudget`](crate::config::SlowWatchers::TimeBudget): the
//! reference's rule (seeds/004 `dispatchEvent`, `timeBudget`). Each change
//! is a round: a non-blocking push to every candidate first; then, if some
//! queues were full, the round takes the whole time budget and waits for
//! those watchers one after another (`WatcherShared::push_until`); once
//! the budget is spent, each watcher still full gets one more try and
//! otherwise ends with `TooSlow`; the unused budget goes back.
//!
//! The budget itself (`TimeBudget`) starts at zero and refills at a rate
//! (reference 50 ms per second of wall time) up to a cap (reference
//! 100 ms). Pure arithmetic on instants the caller passes in, so the
//! tests drive it with any times they like.

use std::time::{Duration, Instant};

use super::contract::{Full, SlowWatcherPolicy};
use crate::event::EndReason;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::sync::Arc;
use crate::wakes::Wakes;
use crate::watcher::{Pushed, WatcherShared};

/// The time-budget policy: the budget, and the watchers whose queue was
/// full for the current change, with their handle.
#[derive(Debug)]
pub(crate) struct TimeBudgetPolicy {
    budget: TimeBudget,
    blocked: Vec<(Arc<WatcherShared>, u64)>,
}

impl TimeBudgetPolicy {
    /// An empty budget, accruing from `now`.
    pub(crate) fn new(refill_per_second: Duration, cap: Duration, now: Instant) -> Self {
        TimeBudgetPolicy {
            budget: TimeBudget::new(refill_per_second, cap, now),
            blocked: Vec::new(),
        }
    }
}

impl SlowWatcherPolicy for TimeBudgetPolicy {
    fn full(&mut self, w: &Arc<WatcherShared>, handle: u64, _shared: &Shared) -> Full {
        self.blocked.push((w.clone(), handle));
        Full::Kept
    }

    /// The round for the current change: wait for each blocked watcher
    /// while the budget lasts; after it, one more non-blocking try, else
    /// `TooSlow`.
    fn serve_kept(
        &mut self,
        shared: &Shared,
        wakes: &mut Wakes,
        ended: &mut Vec<Arc<WatcherShared>>,
    ) {
        // Everyone pushed to so far gets to read while we wait.
        wakes.flush();
        let clock = &*shared.config.clock;
        let counters = &shared.counters;
        let start = clock.now();
        let took = self.budget.take_available(start);
        // A budget past the clock's range waits for room as long as it
        // takes (the configuration asked for it), stop excepted.
        let until = start.checked_add(took);
        Counters::add(&counters.budget_rounds, 1);
        Counters::add(&counters.budget_taken_ns, nanos(took));
        for (w, handle) in self.blocked.drain(..) {
            match w.push_until(handle, clock, until, || shared.is_stopping()) {
                Pushed::Yes => wakes.mark(&w),
                Pushed::Gave => {}
                Pushed::TimedOut => {
                    if end_too_slow(&w, counters) {
                        ended.push(w);
                    }
                }
            }
        }
        let used = clock.now().saturating_duration_since(start);
        let unused = took.saturating_sub(used);
        self.budget.return_unused(unused);
        Counters::add(&counters.budget_returned_ns, nanos(unused));
        wakes.flush();
    }
}

/// Ends a watcher that stayed full past the budget: gracefully (after
/// draining) if it holds an initial-events-end bookmark it has not
/// delivered yet (seeds/000 `add`, `graceful`). Returns whether this call
/// ended it.
fn end_too_slow(w: &WatcherShared, counters: &Counters) -> bool {
    if w.initial_end.is_received() {
        w.end_after_drain(EndReason::TooSlow, counters)
    } else {
        w.end(EndReason::TooSlow, counters)
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How long, in total, the dispatcher may still wait for watchers whose
/// queue is full.
#[derive(Debug, Clone)]
pub(crate) struct TimeBudget {
    budget: Duration,
    refill_per_second: Duration,
    cap: Duration,
    last: Instant,
}

impl TimeBudget {
    /// An empty budget, accruing from `now`.
    pub(crate) fn new(refill_per_second: Duration, cap: Duration, now: Instant) -> TimeBudget {
        TimeBudget {
            budget: Duration::ZERO,
            refill_per_second,
            cap,
            last: now,
        }
    }

    /// Takes the whole budget: what was left plus what accrued since the
    /// last take, capped.
    pub(crate) fn take_available(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last);
        // refill * elapsed-in-seconds, in nanoseconds: u128 holds any
        // realistic product; a hostile rate saturates (to the cap, below).
        let accrued = self
            .refill_per_second
            .as_nanos()
            .saturating_mul(elapsed.as_nanos())
            / 1_000_000_000;
        let accrued = Duration::from_nanos(u64::try_from(accrued).unwrap_or(u64::MAX));
        self.budget = self.budget.saturating_add(accrued).min(self.cap);
        self.last = now;
        std::mem::take(&mut self.budget)
    }

    /// Gives back the part of a take that was not spent (capped).
    pub(crate) fn return_unused(&mut self, unused: Duration) {
        self.budget = self.budget.saturating_add(unused).min(self.cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn reference(now: Instant) -> TimeBudget {
        TimeBudget::new(50 * MS, 100 * MS, now)
    }

    #[test]
    fn starts_at_zero() {
        let t0 = Instant::now();
        let mut b = reference(t0);
        assert_eq!(b.take_available(t0), Duration::ZERO);
    }

    #[test]
    fn refills_fifty_ms_per_second() {
        let t0 = Instant::now();
        let mut b = reference(t0);
        assert_eq!(b.take_available(t0 + Duration::from_secs(1)), 50 * MS);
        assert_eq!(b.take_available(t0 + Duration::from_millis(1500)), 25 * MS);
        assert_eq!(b.take_available(t0 + Duration::from_millis(1520)), MS);
    }

    #[test]
    fn capped_at_one_hundred_ms() {
        let t0 = Instant::now();
        let mut b = reference(t0);
        assert_eq!(b.take_available(t0 + Duration::from_secs(60)), 100 * MS);
        // Taken whole: nothing left right after.
        assert_eq!(
            b.take_available(t0 + Duration::from_secs(60)),
            Duration::ZERO
        );
    }

    #[test]
    fn unused_time_returns_capped() {
        let t0 = Instant::now();
        let mut b = reference(t0);
        let t1 = t0 + Duration::from_secs(2);
        let took = b.take_available(t1);
        assert_eq!(took, 100 * MS);
        b.return_unused(took - 30 * MS);
        assert_eq!(b.take_available(t1), 70 * MS);
        b.return_unused(70 * MS);
        // Accrual since the last take counts on top, still capped.
        assert_eq!(b.take_available(t1 + Duration::from_millis(200)), 80 * MS);
        b.return_unused(80 * MS);
        b.return_unused(80 * MS);
        assert_eq!(b.take_available(t1 + Duration::from_millis(200)), 100 * MS);
    }

    #[test]
    fn time_going_backwards_accrues_nothing() {
        let t0 = Instant::now() + Duration::from_secs(5);
        let mut b = reference(t0);
        assert_eq!(
            b.take_available(t0 - Duration::from_secs(1)),
            Duration::ZERO
        );
    }
}
