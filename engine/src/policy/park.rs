//! [`SlowWatchers::Park`](crate::config::SlowWatchers::Park): the dispatcher never
//! waits. A selective watcher whose queue is full gets the handle in its
//! overflow while it holds fewer than [`Config::spill_limit`] handles and
//! all overflows together fewer than [`Config::spill_budget`]; past
//! either, or for a watcher that admits everything (its replay is as
//! cheap as its queue), the watcher is parked at that change and feeds
//! itself from the ring until it has caught up (`watcher/shared.rs`,
//! Parking and Spilling).
//!
//! [`Config::spill_limit`]: crate::Config::spill_limit
//! [`Config::spill_budget`]: crate::Config::spill_budget

use super::contract::{Full, SlowWatcherPolicy};
use crate::shared::Shared;
use crate::stats::Counters;
use crate::sync::Arc;
use crate::watcher::WatcherShared;

/// The park policy, with its overflow bounds.
#[derive(Debug)]
pub(crate) struct Park {
    /// Handles one watcher's overflow may hold.
    limit: usize,
    /// Handles all overflows together may hold.
    budget: u64,
}

impl Park {
    pub(crate) fn new(limit: usize, budget: u64) -> Park {
        Park { limit, budget }
    }
}

impl SlowWatcherPolicy for Park {
    fn full(&mut self, w: &Arc<WatcherShared>, handle: u64, shared: &Shared) -> Full {
        let counters = &shared.counters;
        if !w.spec.filter.is_everything()
            && w.overflow(handle, self.limit, &counters.overflow_handles, self.budget)
        {
            Counters::add(&counters.spilled, 1);
            return Full::Delivered;
        }
        w.park(handle >> 2);
        Counters::add(&counters.parks, 1);
        Full::Parked
    }

    fn forget(&mut self, w: &WatcherShared, shared: &Shared) {
        if w.is_spilling() {
            // Ended, so nothing more is pushed to it (the dispatcher is
            // the only pusher): its overflow goes back to the budget now.
            w.discard_spill(&shared.counters.overflow_handles);
        }
    }
}
