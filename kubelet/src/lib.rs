//! The kubelet's object manager on Herald.
//!
//! Each kubelet keeps the Secrets and ConfigMaps its pods reference: one
//! watch per referenced object, reference-counted by pod, read through
//! `get` (the reference: `pkg/kubelet/util/manager/watch_based_manager.go`,
//! `seeds/002`). [`ObjectManager`] keeps its rules on Herald watches:
//!
//! - **references**: [`register_pod`](ObjectManager::register_pod) and
//!   [`unregister_pod`](ObjectManager::unregister_pod) (or
//!   [`add_reference`](ObjectManager::add_reference) /
//!   [`delete_reference`](ObjectManager::delete_reference)) count
//!   references per object and pod uid; the first starts a watch of that
//!   one object (a field selector on `metadata.name` in its namespace,
//!   which the engine routes by value: a million such watches cost each
//!   change one look-up, not a million filters); the last stops it;
//! - **get**: [`get`](ObjectManager::get) waits for the watch's first
//!   sync (the end of its initial events), up to a timeout (1 s), then
//!   answers from the manager's copy; an object that does not exist is
//!   `Ok(None)`, an unreferenced one [`GetError::NotRegistered`], a sync
//!   that does not come [`GetError::SyncTimeout`];
//! - **immutable objects** (`immutable: true`): once one is seen so, at
//!   its first sync or in a later change, its watch stops and its last
//!   value is served for as long as it is referenced;
//! - **idle watches**: a watch not read through `get` for
//!   [`max_idle_time`](ManagerConfig::max_idle_time) (5 x the resync
//!   interval, at least 1 min) is stopped by a recycler that runs every
//!   minute, and the next `get` restarts it and waits for its new sync;
//! - **ends**: a watch that ends on its own (the upstream's history moved
//!   on, a connection dropped) is opened again after a backoff; the last
//!   state is served meanwhile, as the reference's reflector does;
//! - **time** is read from the [`Clock`](herald::Clock) in the
//!   [`ManagerConfig`], so tests run on a
//!   [`ManualClock`](herald::ManualClock).
//!
//! The watches come from an [`Upstream`]: [`EngineUpstream`] (an engine in
//! the same process) or [`RemoteUpstream`] (a Herald, or an apiserver,
//! over the Kubernetes API front of `herald-server`).
//!
//! # Threads
//!
//! One thread per manager (`herald-objects`) polls the watches whose
//! wakers fired, on the pattern of an executor: a watch costs no thread
//! and no timer, and a `get` waiting for a sync is woken by it. The
//! reference has a goroutine per object, and a `get` polls every 10 ms.
//! [`RemoteUpstream`] adds one tokio thread for its connections.
//!
//! # Differences from the reference
//!
//! | | the reference | here | why |
//! | --- | --- | --- | --- |
//! | an immutable object's watch | stopped by the first `get` that returns it immutable | stopped as soon as the watch sees it immutable | the watch costs nothing from then on, whether or not a `get` comes |
//! | the idle time of a watch never read | counts from the zero time: stopped at the first recycling after its sync | counts from the watch's start | a pod's first `get` may come after the first recycling |
//! | a `get` waiting for a sync | polls every 10 ms | woken by the sync | the answer comes when the sync lands, not up to 10 ms later |
//! | the end of the initial state | the reflector's list, then a watch | one watch-list (initial events, then a bookmark) | one request per object instead of two, and no gap between them |
//! | a `get` after the manager stopped | waits its timeout, then fails to sync | [`GetError::Stopped`] at once (an immutable object's value is still served) | |
//! | a reference removed that was never added | counted negative | ignored | |

mod config;
mod error;
mod item;
mod manager;
mod pump;
mod remote;
mod upstream;

pub use config::{ImmutableFn, MIN_IDLE_TIME, ManagerConfig, RECYCLE_PERIOD, is_immutable};
pub use error::GetError;
pub use manager::{InvalidName, ManagerStats, ObjectManager, PodRefs};
pub use remote::{RemoteError, RemoteUpstream};
pub use upstream::{EngineUpstream, ObjectStream, Update, Upstream};
