//! Reads from the cache: [`Engine::get`](crate::Engine::get) and
//! [`Engine::list`](crate::Engine::list), at the present or at an exact
//! resource version inside the history window, in pages.
//!
//! # Snapshots
//!
//! The writer keeps the state in persistent maps (`store.rs`): a clone is
//! O(1) and a change costs O(log n) by path copying. A `View` — the
//! state, the ring position and version it reflects — is published through
//! an `ArcSwap`:
//!
//! - **the present**: load the view, then apply the ring's records from the
//!   view's position up to the ring's head to a clone of its state;
//! - **an exact version `R`** inside the window: from the present, undo the
//!   records newer than `R`, newest first; each record carries the previous
//!   object and the version of its entry (`prev_rv`), so an undo restores
//!   the entry exactly. The cost is O(log n) per change between `R` and the
//!   present, and nothing per change while no one reads the past.
//!
//! Publishing is on demand, because it is not free for the writer: once a
//! view shares the writer's map, the writer's next change to each leaf
//! copies it (64 entries, an `Arc` increment each), where an unshared map
//! is changed in place. Publishing after every 32 changes, unasked, halved
//! the writer's rate in the kubelet-shaped perf run. So a reader whose view
//! is more than `VIEW_EVERY` (32) records behind raises `view_wanted`, and
//! the writer publishes at its next change (one `Relaxed` load per change
//! otherwise). A view more than `MAX_LAG` (256) records behind (a writer
//! that has gone quiet, or has raced ahead) is not replayed: the reader
//! takes the writer's lock for an O(1) clone and publishes that: a
//! critical section of a few reference counts, never a walk, and the view
//! it publishes serves every reader until the writer has moved `MAX_LAG`
//! records on. A re-list always publishes.
//!
//! The current version is loaded before the ring's head: every change at
//! or below it is then below the head, so the state read reflects at least
//! that version (a progress notification may have moved it past the last
//! change). A record the reader cannot use — overwritten by the writer
//! meanwhile, or of a newer generation — sends it back to a fresh view; a
//! record it needs to undo that has left the window makes the read `Gone`,
//! exactly when a watch from `R` would be.
//!
//! The version must belong to the generation of the view, since a re-list
//! after a regression ([`Relist::after_regression`]) lowers it: a
//! version of the old history on a state of the new one would claim the
//! new history had reached it. So the reader loads the view's generation
//! before the version and checks that the view it replays has the same
//! one; the writer stores a re-list's version before it publishes the
//! view. A new view seen first then brings its version with it; a new
//! version seen with an old view brings the re-list marker below the head
//! (appended before the version is stored), and the replay starts over.
//! Reads at a version (`NotOlderThan`, `Exact`) that find the present
//! behind it after their wait (the history went back meanwhile) wait
//! again, so an answer never names a version its state has not reached.
//!
//! [`Relist::after_regression`]: crate::Relist::after_regression
//!
//! # Pages
//!
//! A page ends with a [`Continue`] token naming the engine, the
//! generation, the version the first page was read at and the last key
//! served (its [format and rules](Continue#format)). The next
//! page reads the same version exactly, from the key after, so a sequence
//! of pages equals one list at that version however the cache moves in
//! between; once the version leaves the window (or the cache re-lists) the
//! token is [`ReadError::Gone`] (Kubernetes' "continue token too old").

//!
//! # Files
//!
//! `request.rs` holds what a read asks and answers ([`ListRequest`],
//! [`ReadAt`], the responses), `token.rs` the continue token, `error.rs`
//! the errors, `serve.rs` how a read finds its state (views, replays,
//! waits) and serves it.

mod error;
mod request;
mod serve;
mod token;

pub use error::{InvalidContinue, MalformedContinue, NotReady, ReadError};
pub use request::{GetResponse, ListRequest, ListResponse, ReadAt, ReadCancel};
pub use token::Continue;
