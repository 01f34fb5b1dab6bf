//! Waiting for a condition in a test: poll it until it holds, with a
//! deadline that turns a bug into a failure instead of a hang.

use std::thread;
use std::time::{Duration, Instant};

/// How long [`eventually`] waits: generous, since it bounds liveness, not
/// timing (a loaded machine running three builds must not fail a test).
pub const EVENTUALLY: Duration = Duration::from_secs(60);

/// How often [`eventually`] and [`eventually_within`] poll.
const POLL: Duration = Duration::from_millis(1);

/// Polls `cond` until it holds, for up to a minute ([`EVENTUALLY`]).
///
/// # Panics
///
/// If `cond` still does not hold after the minute: "never happened:
/// {what} (waited ...)".
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let done = AtomicBool::new(false);
/// std::thread::scope(|s| {
///     s.spawn(|| done.store(true, Ordering::Release));
///     herald_testkit::eventually("the thread ran", || done.load(Ordering::Acquire));
/// });
/// ```
#[track_caller]
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    eventually_within(EVENTUALLY, what, cond);
}

/// Polls `cond` until it holds, for up to `limit`.
///
/// # Panics
///
/// If `cond` still does not hold after `limit`: "never happened: {what}
/// (waited ...)".
#[track_caller]
pub fn eventually_within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        let waited = started.elapsed();
        assert!(waited < limit, "never happened: {what} (waited {waited:?})");
        thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_once_the_condition_holds() {
        let mut calls = 0;
        eventually("the third call", || {
            calls += 1;
            calls == 3
        });
        assert_eq!(calls, 3);
    }

    #[test]
    #[should_panic(expected = "never happened: nothing")]
    fn panics_with_what_never_happened() {
        eventually_within(Duration::from_millis(20), "nothing", || false);
    }
}
