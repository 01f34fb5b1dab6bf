//! What the dispatcher does with a watcher whose queue is full: the
//! slow-watcher policies, one file each behind one seam.
//!
//! | file | holds |
//! | --- | --- |
//! | `contract.rs` | the seam: `SlowWatcherPolicy` (`full`, `serve_kept`, `forget`) and its answer `Full` |
//! | `park.rs` | [`SlowWatchers::Park`]: overflow within bounds, else park; the dispatcher never waits |
//! | `time_budget.rs` | [`SlowWatchers::TimeBudget`]: the reference's shared time budget, then `TooSlow` |
//!
//! A policy is written in the steps `watcher/shared.rs` offers and touches
//! no atomic of its own. A third (a park bounded in bytes, KEP-6268's
//! variants) is a new file here, a variant of [`SlowWatchers`] and an arm
//! in [`new`].

mod contract;
mod park;
mod time_budget;

use std::time::Instant;

use crate::config::{Config, SlowWatchers};

pub(crate) use contract::{Full, SlowWatcherPolicy};

/// The policy `config` asks for, its clock starting at `now`.
pub(crate) fn new(config: &Config, now: Instant) -> Box<dyn SlowWatcherPolicy> {
    match config.slow_watchers {
        SlowWatchers::Park => Box::new(park::Park::new(config.spill_limit, config.spill_budget)),
        SlowWatchers::TimeBudget {
            refill_per_second,
            cap,
        } => Box::new(time_budget::TimeBudgetPolicy::new(
            refill_per_second,
            cap,
            now,
        )),
    }
}

/// Whether watchers that admit everything follow the ring themselves
/// (`watcher/shared.rs`, Following) rather than being fed by the
/// dispatcher: only where a full queue never makes it wait, since a
/// follower has no queue to fill.
pub(crate) fn has_followers(policy: SlowWatchers) -> bool {
    policy == SlowWatchers::Park
}
