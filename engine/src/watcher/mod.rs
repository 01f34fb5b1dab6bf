//! One watcher as the engine's threads share it, below every mechanism
//! that uses it (the shared state's control queue, the trigger index, the
//! dispatcher and its slow-watcher policies, the consumer):
//!
//! | file | holds |
//! | --- | --- |
//! | `spec.rs` | what a watcher is once resolved, immutable for its life: `WatcherSpec` (id, filter, route, creation, timeout), `Route`, `Start` and its packed form |
//! | `shared.rs` | `WatcherShared`: the state the dispatcher and the consumer share, every atomic of a watcher, and the protocol between them (its `# Synchronization`: queue, attach, park, follow, spill, bookmarks, end, sleep) |
//! | `probe.rs` | [`WatchProbe`], [`WatchState`]: where a watcher stands, for an operator (public as `herald::watch::{WatchProbe, WatchState}`) |
//!
//! The request that resolves to a spec and the consumer's side (the
//! [`Watch`](crate::Watch) handle) are `watch/`'s; what the dispatcher
//! does when a watcher's queue is full is the slow-watcher policy's
//! (`policy/`), written in the steps `shared.rs` offers.

mod probe;
mod shared;
mod spec;

pub use probe::{WatchProbe, WatchState};
pub(crate) use shared::{Attach, BOOKMARK, Pushed, WatcherShared};
pub(crate) use spec::{Route, Start, WatcherSpec};
