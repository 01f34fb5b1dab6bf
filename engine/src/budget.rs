//! The reference's dispatch time budget (`timeBudget`, used by
//! seeds/004 `dispatchEvent`): how long, in total, the dispatcher may wait
//! for watchers whose queue is full.
//!
//! It starts at zero, refills at a rate (reference 50 ms per second of
//! wall time) up to a cap (reference 100 ms); a round that has blocked
//! watchers takes all of it and returns what it did not use. Pure
//! arithmetic on instants the caller passes in: the dispatcher owns it, and
//! the tests drive it with any times they like.

use std::time::{Duration, Instant};

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
