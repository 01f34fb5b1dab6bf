//! The dispatcher's wake coalescing: the watchers it pushed to since the
//! last flush, each woken at most once per flush, and only if it sleeps.
//!
//! # Synchronization
//!
//! [`Wakes::flush`] issues one `SeqCst` fence after the pushes and then
//! reads each touched watcher's `parked` flag; the consumer stores
//! `parked`, fences, and looks at its queue once more before sleeping
//! (`watcher/shared.rs`, `prepare_sleep`). Either the consumer sees the
//! push or the flush sees `parked` (Dekker). One fence per batch of
//! changes, however many watchers it touched.

use crate::sync::{Arc, Ordering, fence};
use crate::watcher::WatcherShared;

/// The watchers to wake at the next flush. Dispatcher-private.
#[derive(Debug, Default)]
pub(crate) struct Wakes {
    touched: Vec<Arc<WatcherShared>>,
    /// The current stamp: a watcher whose `touched` holds it is listed.
    stamp: u64,
}

impl Wakes {
    /// A new batch: every watcher may be listed again.
    pub(crate) fn begin_batch(&mut self) {
        self.stamp += 1;
    }

    /// Lists `w` for the next flush, once.
    #[inline]
    pub(crate) fn mark(&mut self, w: &Arc<WatcherShared>) {
        // Relaxed: `touched` is the dispatcher's own scratch field.
        if w.touched.load(Ordering::Relaxed) != self.stamp {
            w.touched.store(self.stamp, Ordering::Relaxed);
            self.touched.push(w.clone());
        }
    }

    /// Wakes every listed watcher that sleeps.
    pub(crate) fn flush(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        // SeqCst fence: orders the pushes before the `parked` loads; pairs
        // with the consumer's fence in `prepare_sleep`.
        fence(Ordering::SeqCst);
        for w in self.touched.drain(..) {
            w.wake_if_parked();
        }
        // New stamp: a watcher pushed to again after this flush (in the
        // same batch) must be listed again.
        self.stamp += 1;
    }
}
