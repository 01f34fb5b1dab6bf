//! The one place the engine's synchronisation primitives come from.
//!
//! Every concurrent module imports its atomics, locks, `Arc`s, arc-swap
//! cells, wakers, threads and parking through this module, never directly,
//! so that the model-checking build (`--cfg herald_loom`) swaps all of them
//! at once, as tokio's `crate::loom` does. Plain data sharing that is never
//! a synchronisation point stays on `std` (`Object`'s `Arc`, the index's
//! field names, the configured clock, the statistics counters).
//!
//! # Under `herald_loom`
//!
//! Atomics, `Arc`, `Mutex`, threads and parking are loom's. Loom cannot see
//! inside three things the engine uses, so they get loom-visible stand-ins
//! here, each no stronger than the real one's documented guarantee:
//!
//! - `ArcSwap` / `ArcSwapOption`: a loom atomic holds the index of the
//!   current value in an append-only list (a `std` mutex loom does not see;
//!   loom runs one thread at a time, so it is never contended). A load may
//!   therefore observe any value the memory model allows, stale ones
//!   included, exactly as for an atomic pointer. arc-swap documents
//!   `SeqCst`-or-stronger operations; loom models those as `AcqRel`, which
//!   is weaker, so a model that passes here passes with the real cell.
//!   Values are kept until the cell drops (arc-swap's reclamation is not
//!   what these models check).
//! - `OnceLock`: a loom atomic state word (`Acquire` in `get`, `Release`
//!   after the value is in place), as `std`'s `Once` does it.
//! - `OnceBox` (`once_cell::race::OnceBox`: one pointer, set by a
//!   compare-exchange, `Acquire` in `get`; a racing `set` loses and gets
//!   its box back): the `OnceLock` stand-in over a `Box`, which gives the
//!   same guarantees (first set wins, `get` after a set sees the value).
//! - `AtomicWaker`: loom's own.
//! - `Mutex`: loom's, locked by `try_lock` and a yield (see the type for
//!   the loom defect this avoids).
//!
//! Parking with a timeout parks without one under loom: every wake the
//! engine relies on must be an explicit unpark, so a model in which a wake
//! is lost deadlocks and loom reports it, instead of being rescued by a
//! timeout.

#[cfg(not(herald_loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, fence};
    pub(crate) use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
    pub(crate) use std::thread::{JoinHandle, Thread, ThreadId};

    pub(crate) use arc_swap::{ArcSwap, ArcSwapOption};
    pub(crate) use atomic_waker::AtomicWaker;
    /// A box set at most once, in one word (`std`'s `OnceLock<Box<T>>` is
    /// two: its `Once` state and the pointer). Used where thousands of
    /// watchers each hold a cell that most never set.
    pub(crate) use once_cell::race::OnceBox;

    /// Parks the current thread until unparked (a spurious return is
    /// allowed; callers re-check their condition).
    pub(crate) fn park() {
        std::thread::park();
    }

    /// Parks the current thread for at most `timeout` (a spurious return
    /// is allowed; callers re-check their condition).
    pub(crate) fn park_timeout(timeout: std::time::Duration) {
        std::thread::park_timeout(timeout);
    }

    /// The calling thread's handle.
    pub(crate) fn current() -> Thread {
        std::thread::current()
    }

    /// Starts a named thread.
    pub(crate) fn spawn(
        name: String,
        f: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new().name(name).spawn(f)
    }
}

#[cfg(herald_loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, fence};
    pub(crate) use loom::sync::{Arc, MutexGuard};
    pub(crate) use loom::thread::{JoinHandle, Thread, ThreadId};

    use std::fmt;
    use std::task::Waker;

    use loom::sync::atomic::AtomicUsize;

    /// Parks until unparked.
    pub(crate) fn park() {
        loom::thread::park();
    }

    /// Parks until unparked: no timeout under loom (see the module docs).
    pub(crate) fn park_timeout(_timeout: std::time::Duration) {
        loom::thread::park();
    }

    /// The calling thread's handle.
    pub(crate) fn current() -> Thread {
        loom::thread::current()
    }

    /// Starts a (loom) thread; the name is dropped.
    pub(crate) fn spawn(
        _name: String,
        f: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<JoinHandle<()>> {
        Ok(loom::thread::spawn(f))
    }

    /// Stand-in for `std::sync::Mutex` over loom's, taken by `try_lock`
    /// and a yield: loom 0.7 lets an `unpark` wake a thread blocked in
    /// `lock` while the lock is still held, and then panics ("expected to
    /// be able to acquire lock"); the engine unparks the dispatcher freely.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(loom::sync::Mutex::new(v))
        }

        pub(crate) fn lock(&self) -> std::sync::LockResult<MutexGuard<'_, T>> {
            loop {
                match self.0.try_lock() {
                    Ok(guard) => return Ok(guard),
                    Err(std::sync::TryLockError::Poisoned(p)) => return Err(p),
                    Err(std::sync::TryLockError::WouldBlock) => loom::thread::yield_now(),
                }
            }
        }

        pub(crate) fn try_lock(&self) -> std::sync::TryLockResult<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
    }

    /// An atomic cell of `T` whose loads may be stale as far as the memory
    /// model allows (see the module docs).
    struct Cell<T> {
        current: AtomicUsize,
        values: std::sync::Mutex<Vec<T>>,
    }

    impl<T: Clone> Cell<T> {
        fn new(v: T) -> Self {
            Cell {
                current: AtomicUsize::new(0),
                values: std::sync::Mutex::new(vec![v]),
            }
        }

        fn values(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
            self.values.lock().unwrap_or_else(|e| e.into_inner())
        }

        fn load(&self) -> T {
            let i = self.current.load(Ordering::SeqCst);
            self.values()[i].clone()
        }

        fn store(&self, v: T) {
            let i = {
                let mut values = self.values();
                values.push(v);
                values.len() - 1
            };
            self.current.swap(i, Ordering::SeqCst);
        }
    }

    /// Stand-in for `arc_swap::ArcSwap`.
    pub(crate) struct ArcSwap<T>(Cell<Arc<T>>);

    impl<T> ArcSwap<T> {
        pub(crate) fn new(v: Arc<T>) -> Self {
            ArcSwap(Cell::new(v))
        }

        pub(crate) fn from_pointee(v: T) -> Self {
            Self::new(Arc::new(v))
        }

        pub(crate) fn load_full(&self) -> Arc<T> {
            self.0.load()
        }

        /// `ArcSwap::load` (a guard there; a clone here).
        pub(crate) fn load(&self) -> Arc<T> {
            self.0.load()
        }

        pub(crate) fn store(&self, v: Arc<T>) {
            self.0.store(v);
        }
    }

    impl<T> fmt::Debug for ArcSwap<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("ArcSwap(..)")
        }
    }

    /// Stand-in for `arc_swap::ArcSwapOption`.
    pub(crate) struct ArcSwapOption<T>(Cell<Option<Arc<T>>>);

    impl<T> ArcSwapOption<T> {
        pub(crate) fn empty() -> Self {
            ArcSwapOption(Cell::new(None))
        }

        pub(crate) fn load_full(&self) -> Option<Arc<T>> {
            self.0.load()
        }

        /// `ArcSwapOption::load` (a guard there; a clone here).
        pub(crate) fn load(&self) -> Option<Arc<T>> {
            self.0.load()
        }

        pub(crate) fn store(&self, v: Option<Arc<T>>) {
            self.0.store(v);
        }
    }

    impl<T> fmt::Debug for ArcSwapOption<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("ArcSwapOption(..)")
        }
    }

    const EMPTY: usize = 0;
    const FULL: usize = 1;

    /// Stand-in for `std::sync::OnceLock`.
    pub(crate) struct OnceLock<T> {
        state: AtomicUsize,
        setting: loom::sync::Mutex<()>,
        value: std::sync::OnceLock<T>,
    }

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            OnceLock {
                state: AtomicUsize::new(EMPTY),
                setting: loom::sync::Mutex::new(()),
                value: std::sync::OnceLock::new(),
            }
        }

        pub(crate) fn get(&self) -> Option<&T> {
            // Acquire: pairs with the Release in `set`.
            if self.state.load(Ordering::Acquire) == FULL {
                self.value.get()
            } else {
                None
            }
        }

        pub(crate) fn set(&self, v: T) -> Result<(), T> {
            let _serial = self.setting.lock().unwrap_or_else(|e| e.into_inner());
            if self.state.load(Ordering::Acquire) == FULL {
                return Err(v);
            }
            self.value.set(v)?;
            self.state.store(FULL, Ordering::Release);
            Ok(())
        }
    }

    impl<T: fmt::Debug> fmt::Debug for OnceLock<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_tuple("OnceLock").field(&self.value.get()).finish()
        }
    }

    /// Stand-in for `once_cell::race::OnceBox`: the `OnceLock` stand-in
    /// over a box (first set wins; `Acquire` in `get`).
    pub(crate) struct OnceBox<T>(OnceLock<Box<T>>);

    impl<T> OnceBox<T> {
        pub(crate) fn new() -> Self {
            OnceBox(OnceLock::new())
        }

        pub(crate) fn get(&self) -> Option<&T> {
            self.0.get().map(|b| &**b)
        }

        pub(crate) fn set(&self, v: Box<T>) -> Result<(), Box<T>> {
            self.0.set(v)
        }

        pub(crate) fn get_or_init(&self, f: impl FnOnce() -> Box<T>) -> &T {
            if self.get().is_none() {
                // A racing set may win; either way the cell is set now.
                let _ = self.set(f());
            }
            match self.get() {
                Some(v) => v,
                None => unreachable!("set above"),
            }
        }
    }

    impl<T: fmt::Debug> fmt::Debug for OnceBox<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_tuple("OnceBox").field(&self.get()).finish()
        }
    }

    /// Stand-in for `atomic_waker::AtomicWaker`, over loom's.
    pub(crate) struct AtomicWaker(loom::future::AtomicWaker);

    impl AtomicWaker {
        pub(crate) fn new() -> Self {
            AtomicWaker(loom::future::AtomicWaker::new())
        }

        pub(crate) fn register(&self, waker: &Waker) {
            self.0.register_by_ref(waker);
        }

        pub(crate) fn wake(&self) {
            self.0.wake();
        }
    }

    impl fmt::Debug for AtomicWaker {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("AtomicWaker(..)")
        }
    }
}

pub(crate) use crossbeam_utils::CachePadded;
pub(crate) use imp::*;
