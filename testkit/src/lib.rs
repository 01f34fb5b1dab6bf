//! Herald's shared test fixtures: **dev-only**, for the workspace's tests,
//! benchmarks and load harness (`perf`), never for an embedder. It is not
//! published, and no library crate of the workspace depends on it outside
//! `[dev-dependencies]` (the perf harness, a binary, is the exception).
//!
//! - [`apiserver`]: the real kube-apiserver on loopback, restartable,
//!   its tokens rotated by a restart (`scripts/ensure-kube-apiserver.sh`
//!   builds it);
//! - [`etcd`]: a launcher for etcd servers and clusters on loopback (child
//!   processes on free ports, fresh data directories, kill and restart,
//!   leader election); the binaries come from `scripts/ensure-etcd.sh`.
//! - [`pod`] and [`Pod`]: a pod-shaped [`herald::Object`] in one readable
//!   line (`pod("ns", "a").app("web").node("n1").build()`).
//! - [`eventually`] and [`eventually_within`]: poll a condition until it
//!   holds, or panic saying what never happened.
//! - [`ThreadWaker`]: a [`std::task::Waker`] that unparks a thread, for
//!   driving `poll_*` methods from a plain thread.
//! - [`lock`]: a mutex's guard even when a panicking test poisoned it.
//! - [`webhook`]: a conversion webhook on loopback over TLS, with a CA of
//!   its own, for custom resources' conversion.
//! - [`model`]: the reference model of the engine's contract, plain
//!   sequential code the differential and stress tests check the engine
//!   against.
//!
//! The engine's own unit tests (`engine/src`) do not use this crate: as a
//! dev-dependency of `herald` it links a second copy of the engine, whose
//! types are not the unit tests' types. Its integration tests
//! (`engine/tests`) link one copy and use it freely.
#![forbid(unsafe_code)]

pub mod apiserver;
pub mod etcd;
pub mod model;
mod pod;
mod sync;
mod wait;
pub mod webhook;

pub use pod::{Pod, pod};
pub use sync::{ThreadWaker, lock};
pub use wait::{EVENTUALLY, eventually, eventually_within};
