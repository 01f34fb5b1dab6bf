//! The manager's one thread: it polls the streams of the objects whose
//! wakers fired, re-opens ended watches when their backoff is over, and
//! looks for idle watches once a period, all on the manager's clock.
//!
//! The reference runs a goroutine per object (its reflector) and a `Get`
//! polls every 10 ms for the sync. Here a watch costs no thread: the
//! upstream's waker (the engine's readiness wake, or a channel's) puts the
//! object in a queue and unparks the pump; a sync unparks the `get`s that
//! wait for it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Instant;

use crate::config::RECYCLE_PERIOD;
use crate::item::{Core, PARK_AT_MOST};

/// The pump's loop, until the manager stops. `recycle` stops the idle
/// watches.
pub(crate) fn run(core: Arc<Core>, recycle: impl Fn(Instant)) {
    core.pump.attach();
    let clock = core.config.clock.clone();
    let mut next_recycle = clock.now().checked_add(RECYCLE_PERIOD);
    while !core.pump.stopping.load(Ordering::Acquire) {
        let batch = core.pump.take();
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
        if !core.pump.is_empty() {
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
