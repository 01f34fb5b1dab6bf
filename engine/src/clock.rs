//! Time, as the engine reads it.
//!
//! Every time rule of the engine (the slow-watcher budget, bookmark
//! schedules, deadlines, the too-large-resource-version wait, the history
//! window, the tick) reads time through one [`Clock`]. [`SystemClock`] is
//! the real one; [`ManualClock`] moves only when told, so each rule can be
//! tested without sleeping.
//!
//! The caller-side timeout of [`Watch::recv_timeout`](crate::Watch::recv_timeout)
//! is the caller's own wait and always runs on real time.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{Arc, Mutex, Thread};

/// A source of time for an engine ([`Config::clock`](crate::Config::clock)).
///
/// The engine's threads wait through [`park_until`](Clock::park_until), so a
/// clock that moves by itself and one that moves when told are both served
/// without polling.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time on this clock.
    fn now(&self) -> Instant;

    /// Parks the calling thread until this clock reaches `deadline`, until
    /// the thread is unparked ([`Thread::unpark`]), or until `at_most` of
    /// real time has passed, whichever comes first. May return early; every
    /// caller re-checks its condition.
    ///
    /// A clock that moves only when told must unpark the threads parked
    /// here when it moves (as [`ManualClock::advance`] does).
    fn park_until(&self, deadline: Instant, at_most: Duration);
}

/// `now + d`, a century at most: for waits that loop until their
/// deadline, so that `Duration::MAX` (or any span past the clock's range)
/// waits "for ever" instead of overflowing the `Instant`.
pub(crate) fn deadline_after(now: Instant, d: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(d.min(CENTURY)).unwrap_or(now)
}

/// `at + d`, or `None` (never) past the clock's range: every time rule
/// saturates this way, so a `Duration::MAX` setting means "never" rather
/// than a panic.
pub(crate) fn later(at: Instant, d: Duration) -> Option<Instant> {
    at.checked_add(d)
}

/// The earlier of two times, `None` being never.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The tick's jitter: a small xorshift generator, seeded per engine.
pub(crate) struct Jitter(u64);

impl Jitter {
    /// Seeded with `seed` (anything that differs between engines, such
    /// as an address) and the time.
    pub(crate) fn new(now: Instant, seed: u64) -> Jitter {
        let t = now.elapsed().as_nanos() as u64;
        Jitter((seed ^ t.rotate_left(32)) | 1)
    }

    /// `base` plus a uniform `[0, base / 4)` (saturating).
    pub(crate) fn tick(&mut self, base: Duration) -> Duration {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        let quarter = base.as_nanos() / 4;
        let extra = if quarter == 0 {
            0
        } else {
            u128::from(x) % quarter
        };
        base.saturating_add(Duration::from_nanos(u64::try_from(extra).unwrap_or(0)))
    }
}

/// The operating system's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn park_until(&self, deadline: Instant, at_most: Duration) {
        let left = deadline.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            crate::sync::park_timeout(left.min(at_most));
        }
    }
}

/// A clock that moves only when [`advance`](ManualClock::advance)d: tests
/// drive the budget, bookmarks and deadlines step by step. Clones share
/// one time.
///
/// ```
/// use std::time::Duration;
/// use herald::clock::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(61));
/// assert_eq!(clock.now() - t0, Duration::from_secs(61));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    origin: Instant,
    state: Mutex<ManualState>,
}

#[derive(Debug, Default)]
struct ManualState {
    elapsed: Duration,
    /// Threads that have parked on this clock (at most one entry per
    /// thread); each is unparked when the clock moves.
    sleepers: Vec<Thread>,
}

impl Default for ManualInner {
    fn default() -> Self {
        ManualInner {
            origin: Instant::now(),
            state: Mutex::new(ManualState::default()),
        }
    }
}

impl ManualClock {
    /// A clock standing at an arbitrary origin.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves the clock forward by `by` and wakes every thread parked on it.
    pub fn advance(&self, by: Duration) {
        let sleepers = {
            let mut st = self.lock();
            st.elapsed += by;
            st.sleepers.clone()
        };
        for t in sleepers {
            t.unpark();
        }
    }

    /// How far the clock has been advanced in total.
    pub fn elapsed(&self) -> Duration {
        self.lock().elapsed
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, ManualState> {
        // Every critical section completes its update before unlocking.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.origin + self.lock().elapsed
    }

    fn park_until(&self, deadline: Instant, at_most: Duration) {
        let me = crate::sync::current();
        {
            let mut st = self.lock();
            // Registered before the check: an `advance` after it unparks
            // us, and the park token makes the park below return at once.
            if !st.sleepers.iter().any(|t| t.id() == me.id()) {
                st.sleepers.push(me);
            }
            if self.inner.origin + st.elapsed >= deadline {
                return;
            }
        }
        crate::sync::park_timeout(at_most);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new();
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now() - t0, Duration::from_millis(1500));
        assert_eq!(c.clone().elapsed(), Duration::from_millis(1500));
    }

    #[test]
    fn advance_wakes_a_parked_thread() {
        let c = ManualClock::new();
        let deadline = c.now() + Duration::from_secs(10);
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            while c2.now() < deadline {
                // An hour of real time: only the advance below can end it.
                c2.park_until(deadline, Duration::from_secs(3600));
            }
        });
        c.advance(Duration::from_secs(10));
        t.join().unwrap();
    }

    #[test]
    fn past_deadline_returns_at_once() {
        let c = ManualClock::new();
        c.park_until(c.now(), Duration::from_secs(3600));
        SystemClock.park_until(Instant::now(), Duration::from_secs(3600));
    }
}
