//! Herald: a watch cache engine.
//!
//! Herald does the job of the Kubernetes apiserver's watch cache for one
//! resource type: one [`Writer`] applies a stream of versioned changes;
//! any number of [`Watch`]es, each with a filter, receive exactly the changes
//! they may see, in resource-version order, with no gap and no duplicate,
//! and then exactly one [`WatchItem::End`] that says why the watch ended.
//!
//! ```
//! use herald::*;
//!
//! let (engine, mut writer) = Engine::new(Config::default().index("spec.nodeName"))?;
//! let pod = |name: &str, node: &str| {
//!     Object::builder("default", name)
//!         .label("app", "web")
//!         .field("spec.nodeName", node)
//!         .build()
//! };
//!
//! // The initial list makes the engine ready.
//! writer.replace(Relist::new([pod("web-1", "node-1")], 10.into()))?;
//!
//! // A kubelet-shaped watch: the pods of one node, routed by the index.
//! let mut node2 = engine.watch(
//!     WatchRequest::new()
//!         .fields("spec.nodeName=node-2".parse()?)
//!         .resource_version(Some(10.into())),
//! )?;
//!
//! // web-1 moves to node-2, then is deleted.
//! writer.apply(Change::modified(pod("web-1", "node-2"), 11.into()))?;
//! writer.apply(Change::deleted(pod("web-1", "node-2"), 12.into()))?;
//!
//! let mut seen = Vec::new();
//! for _ in 0..2 {
//!     if let Some(WatchItem::Event(ev)) = node2.recv() {
//!         seen.push((ev.kind(), ev.resource_version().get()));
//!     }
//! }
//! // The object entered node-2's view (Added), then left it (Deleted).
//! assert_eq!(seen, [(EventKind::Added, 11), (EventKind::Deleted, 12)]);
//!
//! engine.stop();
//! assert_eq!(node2.recv(), Some(WatchItem::End(EndReason::EngineStopped)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The API
//!
//! The API is the crate's modules, one room each:
//!
//! | module | holds |
//! | --- | --- |
//! | [`engine`] | [`Engine`], the handle every caller holds, and its [`Lifecycle`](engine::Lifecycle) |
//! | [`writer`] | [`Writer`], what it is given ([`Relist`]) and its refusals ([`WriteError`](writer::WriteError), [`BatchError`](writer::BatchError)) |
//! | [`watch`] | [`WatchRequest`], [`Watch`] and what it lends ([`EventRef`](watch::EventRef)), [`WatchStopper`](watch::WatchStopper), [`WatchError`](watch::WatchError) |
//! | [`read`] | gets and lists: [`ListRequest`](read::ListRequest), [`ReadAt`](read::ReadAt), their answers, continue tokens, [`ReadError`](read::ReadError) |
//! | [`event`] | [`Change`], [`Event`], [`WatchItem`], [`EndReason`], and the too-old and too-new versions |
//! | [`object`] | [`Object`] and its builder; [`Item`](object::Item), an object at its version |
//! | [`rv`] | [`ResourceVersion`] and [`ResourceVersionMatch`](rv::ResourceVersionMatch) |
//! | [`options`] | [`OptionsError`](options::OptionsError): Kubernetes' rules for combining version options |
//! | [`selector`] | [`KeyScope`](selector::KeyScope), label, field and shard selectors |
//! | [`config`] | [`Config`], [`SlowWatchers`](config::SlowWatchers), [`ConfigError`](config::ConfigError) |
//! | [`clock`] | [`Clock`](clock::Clock), and [`ManualClock`](clock::ManualClock) for tests |
//! | [`stats`] | [`Stats`](stats::Stats) and its latency [`Histogram`](stats::Histogram)s |
//! | [`source`] | [`Source`](source::Source), an upstream's shape, and [`MemorySource`](source::MemorySource) |
//! | [`reflector`] | [`Reflector`](reflector::Reflector): a source kept in step with an engine, and consistent reads |
//!
//! The root re-exports the thirteen names nearly every user needs: to
//! start an engine ([`Engine`], [`Config`]), feed it ([`Writer`],
//! [`Relist`], [`Change`], [`Object`], [`ResourceVersion`]) and watch it
//! ([`WatchRequest`], [`Watch`], [`WatchItem`], [`Event`], [`EventKind`],
//! [`EndReason`]). Everything else is named by its module:
//! `herald::read::ReadAt`, `herald::selector::LabelSelector`, ...
//!
//! # Semantics
//!
//! The contract is the reference's (`k8s.io/apiserver/pkg/storage/cacher`),
//! kept where it is right and improved where it is not. The repository's
//! `docs/semantics.md` numbers each rule (code cites it as
//! `docs/semantics.md §N`), with where it differs from the reference and
//! why, and the tests that hold it.
//!
//! ## Resource versions
//!
//! Every change carries a [`ResourceVersion`] greater than the last; the
//! writer refuses anything else with [`WriteError::OutOfOrder`] and changes
//! nothing. A re-list ([`Writer::replace`]) may keep the version; a progress
//! notification ([`Writer::progress`]) advances it without a change. A
//! source whose history went back (restored from a backup) is followed
//! with a re-list [after a regression](Relist::after_regression), at a lower version
//! that ends every watch and empties the history; the [`Reflector`] does
//! it when it finds the source behind the cache, and its consistent reads
//! never answer from the old history (see the reflector's docs).
//!
//! ## Keys
//!
//! An object's key is `namespace/name` (`name` when cluster-scoped). The
//! writer refuses an object whose name, or namespace, is not a valid path
//! segment (Kubernetes' rule for every name: not empty, `.` or `..`, no
//! `/` or `%`) with [`WriteError::InvalidName`], so two objects never
//! share a key (`a/b` + `c` and `a` + `b/c`). Validated, not escaped: see
//! [`Object`'s names](Object#names).
//!
//! ## Starting a watch
//!
//! - version unset or `0`: the current state first, each object as Added in
//!   key order at its own version, then every later change;
//! - version `R`: every change after `R`, replayed from history. An `R`
//!   older than the history fails with [`Gone`] ("too old resource version:
//!   R (oldest-1)"); an `R` the cache has not reached yet waits, and ends the
//!   watch with [`EndReason::TooLargeResourceVersion`] after
//!   [`Config::too_large_timeout`];
//! - a watch-list ([`send_initial_events`](WatchRequest::send_initial_events)
//!   `true`, with `resourceVersionMatch=NotOlderThan`): the state at the
//!   version or later (unset: the most recent, the source's current
//!   revision when a [`Reflector`] drives the engine), then a Bookmark
//!   marked [initial-events-end](Event::is_initial_events_end) if bookmarks
//!   are allowed, then changes; with `false`, only the changes after it.
//!   Kubernetes' table, row by row, and its invalid combinations
//!   ([`OptionsError`]) are in [`WatchRequest::send_initial_events`].
//!
//! ## Filtering
//!
//! A watch selects by key ([`KeyScope`]), labels ([`LabelSelector`]),
//! fields ([`FieldSelector`]) and shard ([`ShardSelector`], KEP-5866's
//! hash ranges of the uid or namespace), in Kubernetes syntax. Each change is judged on
//! the object's current and previous state: both match, Modified; only the
//! current, Added; only the previous, Deleted (with the previous state and
//! the change's version); neither, nothing. A watcher never receives an
//! object its filter rejects.
//!
//! ## Routing
//!
//! Fields named with [`Config::index`] are trigger indexes: a watch that
//! requires an exact value of one is only offered changes whose object or
//! previous object has that value.
//!
//! ## Slow watchers
//!
//! Slow watchers never slow the writer. Event bodies stay in the history
//! ring; a watcher's queue holds positions (about one second of history: at
//! least 10, at most 10, 100 or 1,000 by the reference's rule). What happens
//! when a queue is full is a per-engine policy, [`Config::slow_watchers`]:
//!
//! | | [`SlowWatchers::Park`] (default) | [`SlowWatchers::TimeBudget`] (the reference) |
//! | --- | --- | --- |
//! | full queue | a selective watcher's handles go to an ordered overflow (up to [`Config::spill_limit`], and while all overflows together hold less than [`Config::spill_budget`]); past either, the watcher is parked at the first change it missed, feeds itself from the ring, and is resumed once it has caught up. A watcher of everything has no queue to fill: it follows the ring itself | the dispatcher waits for it, out of a shared budget (starts at 0, 50 ms more per second, at most 100 ms, unused time returned) |
//! | the dispatcher | never waits | waits up to the budget per round; every other watcher waits with it |
//! | the slow watcher ends | only with [`EndReason::Gone`], when the change it missed has left the ring | with [`EndReason::TooSlow`] once the budget is spent and one more try fails (after draining, if it holds an undelivered initial-events-end bookmark) |
//! | cost to others | none | up to the budget's worth of latency per blocked round |
//!
//! Park is the default because it keeps the promise the reference only
//! approximates: a watcher that is slow for a moment (a GC pause, a
//! congested connection) loses nothing and costs no one anything, and one
//! that stays slow ends only when it really cannot be served from history.
//! The time budget ends watchers that could have caught up, and each end
//! sends a client back to re-watch, often to re-list, which is the load
//! the cache exists to absorb. Measured with the throughput probe
//! (`examples/throughput.rs`; 1,000 watchers, a flat-out writer of 100,000
//! changes, 2 consumer threads on this project's 2-core machine): under
//! Park every watcher received every change at 42-44 M deliveries/s; under
//! the time budget all 1,000 watchers ended with `TooSlow` within 0.1 s,
//! after 0.07-1.6 M deliveries/s. Choose the time budget for the
//! reference's exact behaviour, e.g. to compare against a real apiserver.
//!
//! ## Bookmarks and deadlines
//!
//! A watch that [allows bookmarks](WatchRequest::allow_bookmarks) gets a
//! Bookmark every [`Config::bookmark_frequency`] (1 min) and one 2 s before
//! its [deadline](WatchRequest::timeout), each carrying the version of the
//! last change processed (advanced by [`Writer::progress`]); none before the
//! first list, none at or below the version the watch started from, and
//! none that would block or end it (a full queue skips one). The schedule is
//! a timer wheel of one-second buckets, checked at a tick of 1 s to 1.25 s
//! (jittered). A watch with a deadline ends with [`EndReason::Deadline`].
//! All of it reads the engine's [`Clock`]: tests drive a [`ManualClock`].
//!
//! ## Memory and hostile callers
//!
//! What the engine holds is bounded by configuration, not by what callers
//! do: the history by [`Config::history_bounds`] (at most
//! [`Config::MAX_HISTORY`]) and [`Config::history_max_bytes`], the
//! overflows of stalled watchers by [`Config::spill_budget`], and a
//! dropped watch is released in O(1) amortised (the dispatcher marks it and
//! sweeps its tables once dropped watches are half of what it holds, so
//! they never outnumber live ones; [`Stats::watchers_retiring`]). The
//! dispatcher takes at most 1,024 registrations and removals between two
//! batches of changes, so a client churning watches delays changes by
//! that much work, never by its whole flood. Every duration saturates:
//! `Duration::MAX` means "never" (no tick, no bookmark, no deadline, no
//! timeout), never a panic. If the dispatcher panics anyway (a bug, or a
//! user [`Clock`] that panics), the engine stops, every watch ends with
//! [`EndReason::EngineFailed`], and [`Engine::failure`] says why.
//!
//! ## Metrics
//!
//! [`Engine::stats`] reports terminations by reason, parks and resumes,
//! budget rounds, budget taken and returned, bookmarks sent, the watches
//! pending, active and retiring, the handles in overflows, and two
//! latency [`Histogram`]s a server can export as Prometheus buckets:
//! change applied -> enqueued, and enqueued -> received.
//!
//! ## Ending
//!
//! Every watch ends with exactly one [`WatchItem::End`]:
//! [`Stopped`](EndReason::Stopped) (by its owner),
//! [`Gone`](EndReason::Gone), [`Relisted`](EndReason::Relisted) (a later
//! `replace`), [`EngineStopped`](EndReason::EngineStopped),
//! [`TooLargeResourceVersion`](EndReason::TooLargeResourceVersion),
//! [`EngineFailed`](EndReason::EngineFailed),
//! [`Drained`](EndReason::Drained) ([`Engine::drain`]), ...
//! After it, [`Watch::recv`] returns `None`. An end takes effect at once:
//! changes queued for the watch but not yet received are not delivered
//! (what was received is still a gap-free prefix), except the graceful
//! `TooSlow` above and `Drained`, which drain first. Dropping a [`Watch`] stops and
//! unregisters it; a [`WatchStopper`] ([`Watch::stopper`]) stops it from
//! another thread, waking a receiver blocked in any receive, and a
//! [`ReadCancel`] ends a read waiting for a version.
//!
//! ## Receiving
//!
//! [`Watch::recv`], [`Watch::recv_timeout`] and [`Watch::try_recv`] hand out
//! owned [`Event`]s; [`Watch::recv_batch`] drains many at once; a `Watch` is
//! also a [`futures_core::Stream`]. [`Watch::visit_batch`] lends
//! [`EventRef`]s straight from the history ring, without touching the
//! objects' reference counts: on this project's 2-core machine it delivers
//! up to 1.7x the owned rate to 1,000 watchers (see the README's probe).
//!
//! ## Lifecycle
//!
//! [`Lifecycle::Pending`] until the first `replace` (watches wait), then
//! [`Lifecycle::Ready`]; back to `Pending` while the writer has lost its
//! source ([`Writer::mark_unready`]: reads that need a fresh cache fail
//! with [`ReadError::NotReady`], new watches wait for the next list,
//! running ones keep running); [`Engine::stop`] is final.
//!
//! # Differences from the reference
//!
//! Every deliberate difference from the reference (`seeds/`, and the
//! current Kubernetes code where it moved on), and why. A difference not
//! in this table is a bug.
//!
//! | | the reference | Herald | why |
//! | --- | --- | --- | --- |
//! | a watch ends | the channel closes (an error event first, for some reasons) | one [`WatchItem::End`] with a typed reason | a client knows whether to re-watch, re-list or give up |
//! | a slow watcher | ended after a shared time budget | parked and resumed from history by default ([`SlowWatchers::Park`]; the budget is an option) | see [Slow watchers](#slow-watchers) |
//! | the initial-events-end bookmark | sent with the next bookmark tick after the initial events (up to ~1 s later; seeds/000 `bookmarkAfterResourceVersion`) | sent at once after the initial events | the client's list is complete then; waiting for a timer only delays it |
//! | a watch's snapshot | taken when the watch is created | taken at its first receive ([`Engine::watch`], "When a watch begins") | the engine does no per-watch work for a handle never read; the client cannot tell the two apart |
//! | a list at `resourceVersion=0` with a limit | served from the cache whole, the limit ignored (seeds/004 `shouldDelegateList`) | pages of `limit`, with continue tokens | a cache that holds history can page at any version; an unbounded answer is what limits exist to avoid |
//! | a continue token | any API server of the cluster serves it | only the engine that issued it ([`ReadError::ForeignContinue`]) | another engine's generations and key order mean nothing here (see [`Continue`]) |
//! | a read while not ready | `resourceVersion=0` reads go to etcd; others wait for the cache, or get 429 "storage is (re)initializing" (newer versions) | [`ReadError::NotReady`] with a retry-after hint of 1 s and the source's last error; new watches wait for the next list | an embedded engine has no storage to fall back to; the hint is the reference's `Retry-After` |
//! | trigger indexes | one indexed field per resource | any number ([`Config::index`]), plus routes by any field a selector requires exactly, and by a shard selector's range | a cache serving several kinds of exact or sharded watchers routes them all; the semantics are unchanged |
//! | shard selectors (KEP-5866, alpha) | the apiserver's filter; its hash is FNV-1a 64 of the field | the same filter and hash ([`fnv1a64`] of the uid or namespace's bytes), at most [`MAX_SHARD_RANGES`] ranges per selector | a bound on what one request costs every change |
//! | the history | grows while full and young, shrinks only when a write finds it old | the same, and also shrinks when idle (the tick), and may be bounded in bytes ([`Config::history_max_bytes`]) | an idle cache should not keep a burst's memory for ever |
//! | a deletion of a key the cache never held | delivered to no one (a deletion without a previous object passes no filter: seeds/000 `convertToWatchEvent`) | the same: no event, no history; the version moves as with [`Writer::progress`] | no watcher can have seen the object. (Herald delivered it before issue 14.) |
//! | names | validated by the API server (`path.IsValidPathSegmentName`) | the writer enforces the same rule ([`WriteError::InvalidName`]) | a cache fed by anything but an API server must still keep keys apart: see [Keys](#keys) |
//! | a source restored to a lower revision | the reflector re-lists whatever the version | the same, through a deliberate re-list ([`Relist::after_regression`]); any other keeps refusing to go back, and consistent reads never answer from the old history | a careless writer is still caught, and a restore cannot make a stale read look fresh (see the [`Reflector`]) |
//! | a re-list's objects | each keeps its own version | the same with [`Relist::items`] (the reflector's way); [`Relist::new`] stamps the list's version on objects whose own is unknown | a writer fed by a source without versions per object still works |
//!
//! Checked to be the same, for the record: the start of a watch and of a
//! read for every combination of the version options (see
//! [`WatchRequest::send_initial_events`] and [`ReadAt::for_list`]; a legacy
//! watch without a version starts from the cache's present, as the
//! reference's cacher), the history's bounds and their scaling with the
//! window ([`Config::history_upper`]), the queue sizes, bookmark times,
//! the too-large wait, and the time budget's constants.
//!
//! # Design
//!
//! One writer appends to a lock-free history ring (write-once records in
//! chunks of 128, each chunk published through an `ArcSwapOption` and
//! stamped with its first position, so a reader takes protection once per
//! chunk); one dispatcher thread follows the ring,
//! looks candidates up in trigger indexes (persistent maps, snapshotted
//! when they change),
//! evaluates filters and pushes 8-byte handles (position and verdict) into
//! per-watcher wait-free SPSC queues, waking a consumer at most once per
//! batch and only if it sleeps. Watches replay history from the ring on
//! their own, so a watcher catching up never slows the others and never
//! blocks the writer.
//!
//! [`Clock`]: clock::Clock
//! [`Continue`]: read::Continue
//! [`EventRef`]: watch::EventRef
//! [`FieldSelector`]: selector::FieldSelector
//! [`Gone`]: event::Gone
//! [`Histogram`]: stats::Histogram
//! [`KeyScope`]: selector::KeyScope
//! [`LabelSelector`]: selector::LabelSelector
//! [`Lifecycle::Pending`]: engine::Lifecycle::Pending
//! [`Lifecycle::Ready`]: engine::Lifecycle::Ready
//! [`MAX_SHARD_RANGES`]: selector::MAX_SHARD_RANGES
//! [`ManualClock`]: clock::ManualClock
//! [`OptionsError`]: options::OptionsError
//! [`ReadAt::for_list`]: read::ReadAt::for_list
//! [`ReadCancel`]: read::ReadCancel
//! [`ReadError::ForeignContinue`]: read::ReadError::ForeignContinue
//! [`ReadError::NotReady`]: read::ReadError::NotReady
//! [`Reflector`]: reflector::Reflector
//! [`ShardSelector`]: selector::ShardSelector
//! [`SlowWatchers::Park`]: config::SlowWatchers::Park
//! [`SlowWatchers::TimeBudget`]: config::SlowWatchers::TimeBudget
//! [`Stats::watchers_retiring`]: stats::Stats::watchers_retiring
//! [`WatchStopper`]: watch::WatchStopper
//! [`WriteError::InvalidName`]: writer::WriteError::InvalidName
//! [`WriteError::OutOfOrder`]: writer::WriteError::OutOfOrder
//! [`fnv1a64`]: selector::fnv1a64

pub mod clock;
pub mod config;
pub mod engine;
pub mod event;
pub mod object;
pub mod options;
pub mod read;
pub mod reflector;
pub mod rv;
pub mod selector;
pub mod source;
pub mod stats;
pub mod watch;
pub mod writer;

#[cfg(herald_loom)]
#[doc(hidden)]
pub mod model;

mod bookmarks;
mod dispatch;
mod echo;
mod error;
mod filter;
mod histogram;
mod index;
mod policy;
mod queue;
mod ring;
mod shared;
mod store;
mod sync;
mod wakes;
mod watcher;

pub use config::Config;
pub use engine::Engine;
pub use event::{Change, EndReason, Event, EventKind, WatchItem};
pub use object::Object;
pub use rv::ResourceVersion;
pub use watch::{Watch, WatchRequest};
pub use writer::{Relist, Writer};

/// Engine internals for the micro-benchmarks in `benches/` (feature
/// `internals`): thin wrappers, so the modules stay private and nothing
/// here is a stable API. The routing table's lives with the table
/// (`index.rs`).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    /// The per-watcher SPSC queue of 8-byte handles (`queue.rs`).
    #[derive(Debug)]
    pub struct Spsc(crate::queue::Spsc);

    impl Spsc {
        /// A queue holding at most `cap` handles (at least one).
        pub fn new(cap: usize) -> Spsc {
            Spsc(crate::queue::Spsc::new(cap))
        }

        /// Producer only. False if the queue is full.
        #[inline]
        pub fn push(&self, value: u64) -> bool {
            self.0.push(value).is_ok()
        }

        /// Consumer only.
        #[inline]
        pub fn pop(&self) -> Option<u64> {
            self.0.pop()
        }
    }

    pub use crate::index::bench::Routes;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an idle watcher holds, pinned where it was measured (x86-64
    /// and AArch64 Linux: `Instant` is 16 bytes there): its handle, and
    /// the state it shares with the dispatcher (in an `Arc`, 16 bytes
    /// more). Growing either costs every watcher of a cache; the memory
    /// scenario of `herald-perf` counts the whole (targets: 320 bytes for
    /// a watcher of everything, 512 for a kubelet-shaped one).
    #[test]
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn an_idle_watcher_stays_small() {
        use std::mem::size_of;
        assert_eq!(size_of::<Watch>(), 80);
        assert_eq!(size_of::<crate::watcher::WatcherShared>(), 208);
        assert_eq!(size_of::<crate::filter::Filter>(), 72);
        assert_eq!(size_of::<crate::queue::Queue>(), 16);
    }

    /// Handles cross threads: the writer to its feeder thread, watches to
    /// their consumers, the engine everywhere.
    #[test]
    fn handles_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Engine>();
        send_sync::<Writer>();
        send_sync::<Watch>();
        send_sync::<Object>();
        send_sync::<Event>();
        send_sync::<WatchItem>();
        send_sync::<crate::selector::LabelSelector>();
        send_sync::<crate::selector::FieldSelector>();
    }
}
