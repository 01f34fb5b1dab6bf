//! Watches: ask with a [`WatchRequest`] ([`Engine::watch`](crate::Engine::watch)),
//! receive from the [`Watch`] it returns (owned events, or [`EventRef`]s
//! lent from the history ring, in batches, or as a
//! [`futures_core::Stream`]), stop it from another thread with a
//! [`WatchStopper`], and see where it stands with a [`WatchProbe`]. A
//! watch that could not start says why with a [`WatchError`]; one that
//! ended says why with its last item,
//! [`WatchItem::End`](crate::WatchItem::End).
//!
//! ```
//! use herald::watch::TryRecvError;
//! use herald::*;
//!
//! let (engine, mut writer) = Engine::new(Config::default())?;
//! writer.replace(Relist::new([Object::builder("ns", "a").build()], 1.into()))?;
//! let mut watch = engine.watch(WatchRequest::new())?;
//! let Some(WatchItem::Event(a)) = watch.recv() else { panic!() };
//! assert_eq!((a.kind(), a.resource_version().get()), (EventKind::Added, 1));
//! assert_eq!(watch.try_recv(), Err(TryRecvError::Empty));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Files
//!
//! | file | holds |
//! | --- | --- |
//! | `error.rs` | [`WatchError`]: why a watch could not be started |
//! | `request.rs` | [`WatchRequest`], and how the engine resolves it (to a `WatcherSpec`, `watcher/spec.rs`: start, route, filter) |
//! | `consumer.rs` | [`Watch`] and its state machine: activation, the initial list, replay, the queue, parks, ends |
//! | `item.rs` | what a consumer hands out: owned items, or [`EventRef`]s lent from the ring |
//! | `recv.rs` | the public receive API: blocking, timed, non-blocking, batches, lending, polling, `Stream` |
//! | `stopper.rs` | [`WatchStopper`]: ends a watch from another thread, and probes it |
//!
//! The state a watch shares with the dispatcher, and the protocol between
//! them, are one layer down (`watcher/`: `WatcherShared`), with
//! [`WatchProbe`]; what the dispatcher does when a watcher's queue is full
//! is the slow-watcher policy's (`policy/`).

mod consumer;
mod error;
mod item;
mod recv;
mod request;
mod stopper;

pub use crate::watcher::{WatchProbe, WatchState};
pub use consumer::Watch;
pub use error::WatchError;
pub use item::EventRef;
pub use recv::{Lease, RecvTimeoutError, TryRecvError, Visited};
pub use request::WatchRequest;
pub use stopper::WatchStopper;
