//! What the dispatcher holds its watchers in besides the routes: where
//! each one is (`place`), the heap of watchers waiting for a future
//! version, and the heap of deadlines. Removal is O(1): a watcher is
//! marked retired and skipped until a sweep drops every retired entry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::rv::ResourceVersion;
use crate::sync::Arc;
use crate::watcher::WatcherShared;

/// Where the dispatcher holds a watcher (`WatcherShared::place`), so that
/// removing one is O(1): it is marked, counted, and left where it is until
/// the next sweep (see [`Dispatcher::sweep_if_due`]).
pub(crate) mod place {
    /// Not taken up yet (or never: it ended first).
    pub(crate) const UNSEEN: u8 = 0;
    /// Waiting for the first list, or for a re-list the dispatcher has
    /// not reached (`Dispatcher::waiting_list`).
    pub(crate) const WAIT_LIST: u8 = 1;
    /// Waiting for a future resource version (`Dispatcher::waiting_rv`).
    pub(crate) const WAIT_RV: u8 = 2;
    /// In the routes: served.
    pub(crate) const ROUTED: u8 = 3;
    /// Ended and forgotten; its entries go at the next sweep.
    pub(crate) const RETIRED: u8 = 4;
}

/// Orders a heap entry by its `key()` alone.
macro_rules! ordered_by_key {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.key() == other.key()
            }
        }

        impl Eq for $t {}

        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $t {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.key().cmp(&other.key())
            }
        }
    };
}

/// A watcher's deadline in the dispatcher's heap (earliest first).
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) kind: DeadlineKind,
    pub(crate) w: Arc<WatcherShared>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum DeadlineKind {
    /// The watch's own deadline (`WatchRequest::timeout`).
    Watch,
    /// The end of its wait for a future resource version
    /// (`Config::too_large_timeout`), if it is still waiting then.
    TooLarge,
}

impl Deadline {
    fn key(&self) -> (Instant, DeadlineKind, u64) {
        (self.at, self.kind, self.w.spec.id)
    }
}

ordered_by_key!(Deadline);

/// A watcher waiting for a future resource version (lowest first).
pub(crate) struct RvWaiter {
    pub(crate) need: ResourceVersion,
    pub(crate) w: Arc<WatcherShared>,
}

impl RvWaiter {
    fn key(&self) -> (ResourceVersion, u64) {
        (self.need, self.w.spec.id)
    }
}

ordered_by_key!(RvWaiter);

/// Gives back the memory of a vector that a sweep left mostly empty.
pub(crate) fn shrink<T>(v: &mut Vec<T>) {
    if v.capacity() > 2 * v.len() + 8 {
        v.shrink_to_fit();
    }
}

/// [`shrink`] for a heap.
fn shrink_heap<T: Ord>(h: &mut BinaryHeap<T>) {
    if h.capacity() > 2 * h.len() + 8 {
        h.shrink_to_fit();
    }
}

/// Drops the entries of `heap` that `keep` refuses, and gives back the
/// memory they held.
pub(crate) fn retain_heap<T: Ord>(heap: &mut BinaryHeap<Reverse<T>>, keep: impl Fn(&T) -> bool) {
    heap.retain(|Reverse(t)| keep(t));
    shrink_heap(heap);
}
