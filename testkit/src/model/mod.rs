//! A reference model of Herald's contract (`docs/semantics.md`, sections
//! 1-6 and 8; the crate docs of `engine/src/lib.rs` state it too), written
//! out as a plain sequential program (vectors and maps, no threads, no
//! atomics, no cleverness). Each rule cites the section of
//! `docs/semantics.md` it comes from.
//!
//! The model is always "quiescent": every call applies its effect and then
//! everything the engine's dispatcher would do as a consequence (activate
//! waiting watches, time them out, end them at their deadline). A test
//! harness that drives the real engine must therefore wait, after every
//! operation, until the engine's dispatcher is idle (see `differential.rs`).
//!
//! # What is modelled
//!
//! - **Writer** (docs/semantics.md §1, §8): `apply` of Added / Modified /
//!   Deleted with the previous object taken from the state (a deletion's
//!   previous object is the last state, or the given object if the key is
//!   unknown); resource versions must strictly increase, otherwise the call is
//!   refused with `WriteError::OutOfOrder` and nothing changes; `progress`
//!   (advances the version, equal is a no-op, lower is refused); `replace`
//!   of a `Relist` (here `replace` and `replace_items`: a (re-)list: may
//!   keep the version, never go back, whether the engine is ready or
//!   pending after a list; bumps the generation; makes the engine Ready);
//!   `Relist::items` (`replace_items`) gives each object its own version,
//!   and one above the list's refuses the whole list with `ItemAhead` (the
//!   first such item in the list's order, before any lifecycle check); a
//!   `Relist` after a regression (`replace_after_regression`: a re-list
//!   below the engine's version: `NotReady` only before the first list);
//!   `mark_unready` (falls back to Pending; refused only after a stop).
//!   While Pending (before the first list, or since `mark_unready`) the
//!   writer's `apply`/`progress` fail with `NotReady`, after `stop`
//!   everything fails with `Stopped`.
//! - **History** (§2), for a ring with *fixed* bounds
//!   (`history_bounds(N, N)`, `N` a power of two, which never resizes):
//!   every change and every re-list marker takes one position (progress
//!   takes none); the ring holds the last `N` positions; the re-list marker
//!   empties the servable window. `oldest - 1` is the list's version while
//!   nothing was evicted since the last (re)list, else the version of the
//!   oldest retained change minus one.
//! - **Watches** (§3, §4, §11): key scope (exact or `prefix/`), label
//!   selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!exists`), field
//!   selectors (`=`, `==`, `!=`; a missing field is the empty string),
//!   evaluated by the model's own code, not the engine's. Routing through a
//!   trigger index (§4) never changes what a watcher sees: a
//!   watcher that requires `f=v` only admits objects with `f=v`, so every
//!   change it has a verdict on has `v` in its object or previous object,
//!   which is exactly where the index routes it; the model therefore
//!   applies the filter alone. Options: `send_initial_events` (unset, true
//!   or false) needs `resource_version_match=NotOlderThan` and a match needs
//!   `send_initial_events` (`WatchError::InvalidOptions`, checked first).
//!   Start versions ([`WatchSpec::start`] has the table): a snapshot of the
//!   state, in key order, as Added with each object's own version (unset
//!   `send_initial_events` from an unset version or `0`; `true` from any,
//!   at or after `R`), followed by one Bookmark at the snapshot's version
//!   marked initial-events-end with `true` and bookmarks; every change
//!   after `R > 0` (`R < oldest - 1` is `Gone`); with `false` from an unset
//!   version or `0`, every change after the cache's version (when the
//!   watch is created if the engine is Ready, else when it begins). `R`
//!   above the current version waits; `TooLargeResourceVersion` once the
//!   clock has moved `too_large_timeout` past the watch's creation. The
//!   verdict on a change uses the object and the previous object
//!   (§3.5).
//! - **Ends** (§3.7, §5, §8): `Stopped` (by the owner), `Deadline` (at
//!   `created + timeout` on the clock), `Relisted` (a re-list ends every
//!   watch, except those created while the engine was pending after a
//!   list: they wait for that re-list and begin on it), `EngineStopped`,
//!   `Gone`, `TooLargeResourceVersion`. An end takes effect at once: what
//!   was queued but not received is not delivered. Exactly one End, then
//!   nothing.
//! - **Slow watchers under Park** (§5.3): a watcher that does not
//!   read loses nothing while the changes it still needs are in the ring;
//!   when it reads again it catches up from the ring, or ends with `Gone`
//!   (carrying its last delivered version and the current `oldest - 1`) if
//!   the next change it needs has left the ring.
//!
//! # Timing choices that mirror the engine (not fixed by docs/semantics.md)
//!
//! - A watch *begins* (takes its snapshot, or checks its start version
//!   against the window once more) at the first receive after the engine
//!   has activated it, not when `watch()` returns; the model does the same
//!   (a snapshot is the state at that first receive).
//! - The ring is physical: position `p` is readable until position `p + N`
//!   is written.
//! - A watch waiting for a list (created before the first list, or while
//!   the engine is pending after one) does not time out with
//!   `TooLargeResourceVersion` (§8); the too-large clock still
//!   counts from the watch's creation, so it may time out as soon as the
//!   list comes. A watch registered while Ready that still waits for its
//!   version when the engine falls back to Pending does time out (the
//!   dispatcher keeps expiring it). Deadlines apply throughout.
//!
//! # Bookmarks
//!
//! Only the initial-events-end bookmark is modelled. Periodic bookmarks
//! (§6) are deterministic on a manual clock in *when* they are
//! offered, but whether one is delivered depends on the state of the
//! watcher's bounded queue (a full queue skips one, "never blocking"), on
//! whether another is in flight, and on where the consumer's replay stands,
//! which §6 deliberately leaves to the implementation. Modelling them
//! exactly would mean re-implementing the queue. So the harnesses configure
//! a huge `bookmark_frequency` and never give a watch that allows
//! bookmarks a deadline (which would schedule a bookmark 2 s before it).
//! Without `send_initial_events=true` such a watch then sees none.
//!
//! # Not modelled
//!
//! History sizing (grow/shrink, byte bounds), the time-budget policy and
//! `TooSlow`, reads from the cache (§7), sources (§9), the object
//! manager (§10), periodic and pre-deadline bookmarks (see above), metrics.

mod filter;
mod seen;
mod spec;
mod state;

pub use filter::*;
pub use seen::*;
pub use spec::*;
pub use state::*;
