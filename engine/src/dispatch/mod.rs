//! The dispatcher: one thread that follows the history ring and fans each
//! change out to the watchers that may see it.
//!
//! # Synchronization
//!
//! The dispatcher is the single producer of every watcher queue and the only
//! writer of the routing table. Per batch of up to `BATCH` (256) changes it:
//!
//! 1. takes the routes once (a snapshot of its own table, an `Arc`) and,
//!    for each change, asks them for the candidates, evaluates each
//!    candidate's filter on the current and previous object, and pushes a
//!    handle (position and verdict) into its queue: a wait-free push;
//! 2. issues one `SeqCst` fence and wakes only the touched watchers that are
//!    parked (`wakes.rs`): one wake per watcher per batch at most,
//!    and none for a watcher that is busy draining;
//! 3. publishes its cursor (`dispatched`, `Release`), which lets the writer
//!    reuse ring slots below it.
//!
//! Followers (watchers that admit everything, under the park policy) are
//! pushed nothing: they read the ring up to its head themselves, and the
//! dispatcher only wakes those that sleep, once per batch
//! (`watcher/shared.rs`, Following).
//!
//! With [`Config::inline_dispatch`](crate::Config::inline_dispatch) the
//! dispatcher's state sits behind a lock its thread holds for one turn of
//! its loop: the writer, after a change, takes it when free and runs one
//! batch itself (`Slot::dispatch_inline`), waking the thread only for
//! what remains; a write then wakes its watchers from the writer's own
//! thread.
//!
//! Registration happens between batches: a watcher becomes live at the
//! writer's head, which is the cursor unless the dispatcher lags; the
//! watcher replays anything older from the ring by itself, so the
//! dispatcher never does per-watcher catch-up work, and never queues for
//! it a change below that point (one at or below the start of a watch
//! from the current version, which would only fill its queue: seeds/000
//! `process` sends only events newer than the watcher's version).
//!
//! ## Registrations, removals and waits
//!
//! Requests arrive in one ordered queue (`Shared::control`) and at most
//! `CONTROL_BUDGET` (1,024) are applied between two batches, each in O(1)
//! amortised, so a client creating and dropping watches in a loop delays
//! the changes by a bounded amount of work per batch. A watch waiting for
//! the first list (or a re-list not dispatched yet) sits in a list looked
//! at only when a re-list is dispatched; one waiting for a future version
//! sits in a heap by that version, popped as the writer reaches it, with
//! its too-large timeout in the deadline heap: a loop costs nothing per
//! waiting watch. Removing a watch marks it retired (its `place`) and
//! counts it; it is skipped wherever it is still held (routes, heaps, the
//! bookmark wheel) until a sweep drops every retired entry, once the
//! retired are as many as the rest: O(held) per sweep, paid for by the
//! held / 2 removals before it.
//!
//! ## Full queues
//!
//! A push that finds a queue full (or the watcher's overflow active) is
//! the slow-watcher policy's (`policy/`): under
//! [`SlowWatchers::Park`](crate::config::SlowWatchers::Park) an overflow or a park,
//! and the dispatcher never waits; under
//! [`SlowWatchers::TimeBudget`](crate::config::SlowWatchers::TimeBudget) the
//! handle is kept, and once the change's candidates are done the policy
//! waits for those watchers out of the shared budget, the reference's
//! round.
//!
//! ## Files
//!
//! `dispatcher.rs` holds the thread and its loop; `held.rs` what the
//! dispatcher holds waiting watchers and deadlines in.
//!
//! ## Time
//!
//! Every rule reads the engine's [`Clock`](crate::clock::Clock): the tick (jittered
//! by up to a quarter, seeds/004 `wait.Jitter(time.Second, 0.25)`), the
//! bookmark wheel, deadlines, the too-large wait and the budget.

mod dispatcher;
mod held;

pub(crate) use dispatcher::{Slot, in_inline_dispatch, run};
