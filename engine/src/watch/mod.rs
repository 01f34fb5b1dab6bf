//! A watch, one room per part:
//!
//! | file | holds |
//! | --- | --- |
//! | `request.rs` | [`WatchRequest`], and what the engine resolves it to (`WatcherSpec`: start, route, filter) |
//! | `shared.rs` | `WatcherShared`: the state the dispatcher and the consumer share, every atomic of a watcher, and the protocol between them (its `# Synchronization`: queue, attach, park, follow, spill, bookmarks, end, sleep) |
//! | `consumer.rs` | [`Watch`] and its state machine: activation, the initial list, replay, the queue, parks, ends |
//! | `item.rs` | what a consumer hands out: owned items, or [`EventRef`]s lent from the ring |
//! | `recv.rs` | the public receive API: blocking, timed, non-blocking, batches, lending, polling, `Stream` |
//! | `probe.rs` | [`WatchProbe`]: where a watch stands (state, what waits), for an operator |
//! | `stopper.rs` | [`WatchStopper`]: ends a watch from another thread, and probes it |
//!
//! What the dispatcher does when a watcher's queue is full is not here:
//! it is the slow-watcher policy's (`policy/`), written in the steps that
//! `shared.rs` offers.

mod consumer;
mod item;
mod probe;
mod recv;
mod request;
mod shared;
mod stopper;

pub use consumer::Watch;
pub use item::EventRef;
pub use probe::{WatchProbe, WatchState};
pub use recv::{Lease, RecvTimeoutError, TryRecvError, Visited};
pub use request::WatchRequest;
#[cfg(feature = "internals")]
pub(crate) use request::WatcherSpec;
pub(crate) use request::{Route, Start};
pub(crate) use shared::{Pushed, WatcherShared};
pub use stopper::WatchStopper;
