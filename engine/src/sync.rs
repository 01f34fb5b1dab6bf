//! The one place the engine's synchronisation primitives come from.
//!
//! Every concurrent module imports its atomics, locks, `Arc`s, arc-swap
//! cells, wakers and parking through this module, never directly, so that a
//! model-checking build (`--cfg herald_loom`, with the loom stand-ins that
//! the proof issue adds here) swaps all of them at once, as tokio's
//! `crate::loom` does. Today it re-exports the real ones. (`Object`'s own
//! `Arc` is plain data sharing, never a synchronisation point, and stays
//! `std`'s.)

pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, fence};
pub(crate) use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
pub(crate) use std::thread::{JoinHandle, Thread};

pub(crate) use arc_swap::{ArcSwap, ArcSwapOption, Guard};
pub(crate) use atomic_waker::AtomicWaker;
pub(crate) use crossbeam_utils::CachePadded;

/// Parks the current thread until unparked (a spurious return is allowed;
/// callers re-check their condition).
pub(crate) fn park() {
    std::thread::park();
}

/// Parks the current thread for at most `timeout` (a spurious return is
/// allowed; callers re-check their condition).
pub(crate) fn park_timeout(timeout: std::time::Duration) {
    std::thread::park_timeout(timeout);
}
