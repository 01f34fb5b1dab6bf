//! Bookmark scheduling (seeds/004 `watcherBookmarkTimeBuckets`,
//! `nextBookmarkTime`) and the initial-events-end state machine (seeds/000
//! `bookmarkAfterResourceVersion`, waiting -> received -> sent).
//!
//! The schedule is a hashed timer wheel of one-second buckets: O(1) to
//! insert, and a tick visits only the buckets that came due. A watcher
//! scheduled for time `X` lands in bucket `floor(X - origin)` and is popped
//! by the first tick at or after that bucket's start, so within `(X - 1 s,
//! X + tick]`, as in the reference.

use std::time::{Duration, Instant};

use crate::sync::{AtomicU8, Ordering};

/// When a watcher's next bookmark is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// At the next tick (a watcher waiting for its initial-events-end
    /// bookmark is due at every tick).
    NextTick,
    /// At this time.
    At(Instant),
    /// No more bookmarks: the deadline is too close.
    Never,
}

/// The reference's `nextBookmarkTime`: `min(now + frequency, deadline - 2 s)`,
/// at every tick while waiting for the initial-events-end bookmark, and
/// never once that time is in the past.
pub(crate) fn next_bookmark(
    now: Instant,
    frequency: Duration,
    deadline: Option<Instant>,
    waiting_for_initial_end: bool,
) -> Due {
    if waiting_for_initial_end {
        return Due::NextTick;
    }
    // A heartbeat past the clock's range never comes (a frequency of
    // `Duration::MAX` turns periodic bookmarks off).
    let heartbeat = now.checked_add(frequency);
    let Some(deadline) = deadline else {
        return heartbeat.map_or(Due::Never, Due::At);
    };
    let due = match deadline.checked_sub(Duration::from_secs(2)) {
        Some(pre_timeout) => heartbeat.map_or(pre_timeout, |h| h.min(pre_timeout)),
        None => return Due::Never,
    };
    if due < now { Due::Never } else { Due::At(due) }
}

/// Slots in the wheel: items due further ahead share a slot with nearer
/// ones and are skipped (kept) until their lap comes round.
const SLOTS: usize = 64;

/// A timer wheel of one-second buckets.
#[derive(Debug)]
pub(crate) struct Wheel<T> {
    origin: Instant,
    /// The first bucket not popped yet.
    next: u64,
    slots: Vec<Vec<(u64, T)>>,
    len: usize,
}

impl<T> Wheel<T> {
    pub(crate) fn new(origin: Instant) -> Wheel<T> {
        Wheel {
            origin,
            next: 0,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            len: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn bucket_of(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_secs()
    }

    /// Schedules `item`; `Due::Never` drops it (and returns false).
    pub(crate) fn insert(&mut self, due: Due, item: T) -> bool {
        let bucket = match due {
            Due::Never => return false,
            Due::NextTick => self.next,
            // A time in an already popped bucket goes to the next one.
            Due::At(t) => self.bucket_of(t).max(self.next),
        };
        self.slots[slot(bucket)].push((bucket, item));
        self.len += 1;
        true
    }

    /// Keeps only the items `keep` accepts, giving back the memory of slots
    /// that emptied: O(items + slots).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        for cell in &mut self.slots {
            cell.retain(|(_, item)| keep(item));
            if cell.capacity() > 2 * cell.len() + 8 {
                cell.shrink_to_fit();
            }
        }
        self.len = self.slots.iter().map(Vec::len).sum();
    }

    /// Moves every item whose bucket has begun by `now` into `out`.
    pub(crate) fn pop_expired(&mut self, now: Instant, out: &mut Vec<T>) {
        let current = self.bucket_of(now);
        if current < self.next {
            return;
        }
        let visit = (current - self.next + 1).min(SLOTS as u64);
        for b in self.next..self.next + visit {
            let cell = &mut self.slots[slot(b)];
            let mut i = 0;
            while i < cell.len() {
                if cell[i].0 <= current {
                    out.push(cell.swap_remove(i).1);
                    self.len -= 1;
                } else {
                    i += 1;
                }
            }
        }
        self.next = current + 1;
    }
}

fn slot(bucket: u64) -> usize {
    // Lossless: the remainder is below SLOTS.
    (bucket % SLOTS as u64) as usize
}

const WAITING: u8 = 0;
const RECEIVED: u8 = 1;
const SENT: u8 = 2;

/// A watcher's initial-events-end state (seeds/000): waiting for a
/// bookmark at or after the version the watch asked for
/// (`Start::bookmarks_from`, not copied here), received (the bookmark is on its way to
/// the consumer), sent. A watch that asked for no initial-events-end
/// bookmark starts out "sent", as in the reference.
///
/// Shared by the dispatcher (which marks a bookmark received when it
/// enqueues one) and the consumer (which marks it received when it takes
/// its snapshot, and sent when it hands the bookmark out). Each transition
/// only moves forward; `AcqRel`/`Acquire` order it with the queue and the
/// snapshot it describes.
#[derive(Debug)]
pub(crate) struct InitialEventsEnd {
    state: AtomicU8,
}

impl InitialEventsEnd {
    pub(crate) fn new(wanted: bool) -> InitialEventsEnd {
        InitialEventsEnd {
            state: AtomicU8::new(if wanted { WAITING } else { SENT }),
        }
    }

    pub(crate) fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// Received but not yet sent: an end now is graceful (the queue drains
    /// first, so the client gets its bookmark).
    pub(crate) fn is_received(&self) -> bool {
        self.state.load(Ordering::Acquire) == RECEIVED
    }

    #[cfg(test)]
    pub(crate) fn is_sent(&self) -> bool {
        self.state.load(Ordering::Acquire) == SENT
    }

    /// Waiting -> received (no effect in any other state).
    pub(crate) fn mark_received(&self) {
        let _ = self
            .state
            .compare_exchange(WAITING, RECEIVED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// -> sent (final).
    pub(crate) fn mark_sent(&self) {
        self.state.store(SENT, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn heartbeat_every_frequency_without_deadline() {
        let now = Instant::now();
        assert_eq!(
            next_bookmark(now, 60 * S, None, false),
            Due::At(now + 60 * S)
        );
    }

    #[test]
    fn two_seconds_before_a_near_deadline() {
        let now = Instant::now();
        let deadline = now + 30 * S;
        assert_eq!(
            next_bookmark(now, 60 * S, Some(deadline), false),
            Due::At(now + 28 * S)
        );
        // A far deadline leaves the heartbeat in charge.
        let far = now + 600 * S;
        assert_eq!(
            next_bookmark(now, 60 * S, Some(far), false),
            Due::At(now + 60 * S)
        );
    }

    #[test]
    fn none_once_the_pre_timeout_time_has_passed() {
        let now = Instant::now();
        assert_eq!(next_bookmark(now, 60 * S, Some(now + S), false), Due::Never);
        // Exactly at the pre-timeout time: still due (not before now).
        assert_eq!(
            next_bookmark(now, 60 * S, Some(now + 2 * S), false),
            Due::At(now)
        );
    }

    #[test]
    fn every_tick_while_waiting_for_the_initial_events_end() {
        let now = Instant::now();
        assert_eq!(next_bookmark(now, 60 * S, None, true), Due::NextTick);
        assert_eq!(next_bookmark(now, 60 * S, Some(now), true), Due::NextTick);
    }

    #[test]
    fn a_frequency_past_the_clock_range_is_no_heartbeat() {
        let now = Instant::now();
        assert_eq!(next_bookmark(now, Duration::MAX, None, false), Due::Never);
        // The pre-deadline bookmark still comes.
        let deadline = now + 10 * S;
        assert_eq!(
            next_bookmark(now, Duration::MAX, Some(deadline), false),
            Due::At(deadline - 2 * S)
        );
    }

    #[test]
    fn wheel_retain_drops_and_counts() {
        let t0 = Instant::now();
        let mut w = Wheel::new(t0);
        for i in 0..100u32 {
            w.insert(Due::At(t0 + i * S), i);
        }
        w.retain(|i| i % 10 == 0);
        assert_eq!(w.len(), 10);
        let mut out = Vec::new();
        w.pop_expired(t0 + 200 * S, &mut out);
        out.sort_unstable();
        assert_eq!(out, (0..100).step_by(10).collect::<Vec<_>>());
    }

    #[test]
    fn wheel_pops_by_one_second_bucket() {
        let t0 = Instant::now();
        let mut w = Wheel::new(t0);
        assert!(w.insert(Due::At(t0 + Duration::from_millis(2500)), 'a'));
        assert!(w.insert(Due::At(t0 + 60 * S), 'b'));
        assert!(w.insert(Due::NextTick, 'c'));
        assert!(!w.insert(Due::Never, 'd'));
        assert_eq!(w.len(), 3);
        let mut out = Vec::new();
        w.pop_expired(t0 + Duration::from_millis(900), &mut out);
        assert_eq!(out, ['c']);
        out.clear();
        w.pop_expired(t0 + Duration::from_millis(1900), &mut out);
        assert!(out.is_empty());
        // Bucket 2 begins at 2 s: 'a' (due at 2.5 s) pops up to 1 s early.
        w.pop_expired(t0 + 2 * S, &mut out);
        assert_eq!(out, ['a']);
        out.clear();
        w.pop_expired(t0 + 59 * S, &mut out);
        assert!(out.is_empty());
        w.pop_expired(t0 + Duration::from_millis(60_100), &mut out);
        assert_eq!(out, ['b']);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn wheel_keeps_items_a_lap_ahead() {
        let t0 = Instant::now();
        let mut w = Wheel::new(t0);
        // Bucket 3 and bucket 3 + 64 share a slot.
        w.insert(Due::At(t0 + 3 * S), 1);
        w.insert(Due::At(t0 + S * (3 + SLOTS as u32)), 2);
        let mut out = Vec::new();
        w.pop_expired(t0 + 10 * S, &mut out);
        assert_eq!(out, [1]);
        out.clear();
        // A long gap between ticks visits every slot once, and pops only
        // what is due.
        w.pop_expired(t0 + 200 * S, &mut out);
        assert_eq!(out, [2]);
    }

    #[test]
    fn past_times_go_to_the_next_bucket() {
        let t0 = Instant::now();
        let mut w = Wheel::new(t0);
        let mut out = Vec::new();
        w.pop_expired(t0 + 5 * S, &mut out);
        w.insert(Due::At(t0 + S), 'x');
        w.pop_expired(t0 + 5 * S, &mut out);
        assert!(out.is_empty(), "bucket 5 was popped already");
        w.pop_expired(t0 + 6 * S, &mut out);
        assert_eq!(out, ['x']);
    }

    #[test]
    fn initial_events_end_state_machine() {
        let s = InitialEventsEnd::new(true);
        assert!(s.is_waiting());
        s.mark_received();
        assert!(s.is_received());
        s.mark_received();
        assert!(s.is_received());
        s.mark_sent();
        assert!(s.is_sent());
        // Never backwards.
        s.mark_received();
        assert!(s.is_sent());

        let none = InitialEventsEnd::new(false);
        assert!(none.is_sent() && !none.is_waiting() && !none.is_received());
    }
}
