//! The seam between the dispatcher and a slow-watcher policy: the one
//! question "this queue is full: what now?", asked per handle, with two
//! hooks around it.

use std::fmt;

use crate::shared::Shared;
use crate::sync::Arc;
use crate::wakes::Wakes;
use crate::watcher::WatcherShared;

/// What a policy did with a handle that found its watcher's queue full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// Delivered all the same (an overflow, a queue that made room): the
    /// dispatcher wakes the watcher with the others of its batch.
    Delivered,
    /// The watcher was parked: it feeds itself from the ring from here.
    Parked,
    /// Kept for [`SlowWatcherPolicy::serve_kept`], which the dispatcher
    /// calls once the change's candidates have all been offered it.
    Kept,
}

/// A slow-watcher policy. The dispatcher owns one, chosen by
/// [`Config::slow_watchers`](crate::Config::slow_watchers), and calls it
/// only off its fast path: when a push finds a queue full, after a change
/// that left handles kept, and when it forgets an ended watcher. A policy
/// acts through the steps `WatcherShared` offers (`overflow`, `park`,
/// `push_until`, `end`, ...), never on a watcher's atomics, so a new one
/// is a new file in `policy/` and a line in [`super::new`].
pub(crate) trait SlowWatcherPolicy: Send + fmt::Debug {
    /// `w`'s queue had no room for `handle`, or the watcher's overflow is
    /// active (handles must stay in order behind it).
    fn full(&mut self, w: &Arc<WatcherShared>, handle: u64, shared: &Shared) -> Full;

    /// Serves what [`full`](Self::full) kept for the current change. It
    /// may wait; before it does, it flushes `wakes` so that the watchers
    /// pushed to so far drain meanwhile, and it lists in `wakes` those it
    /// delivers to. The watchers it ends go to `ended`, for the dispatcher
    /// to forget.
    fn serve_kept(
        &mut self,
        _shared: &Shared,
        _wakes: &mut Wakes,
        _ended: &mut Vec<Arc<WatcherShared>>,
    ) {
    }

    /// The dispatcher forgets `w`, which has ended (nothing more will be
    /// pushed to it): give back whatever the policy holds for it.
    fn forget(&mut self, _w: &WatcherShared, _shared: &Shared) {}
}
