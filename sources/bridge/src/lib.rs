//! The seam between Herald's synchronous `Source` (`herald::source::Source`) and
//! the async clients of its upstreams (etcd's gRPC client, kube-rs): a
//! [`Bridge`] holds the tokio runtime the clients run on and
//! [`Bridge::block_on`], the one way a source's blocking call waits for
//! them.
//!
//! The engine calls a source from plain threads (a reflector's thread,
//! a consistent read's caller) and waits: `list`, `watch`, a watch's
//! `next`. The clients are futures that need a runtime's I/O and timers.
//! Each source used to build its own runtime and carry its own copy of
//! the helper below; both now take a [`Bridge`], owned or shared.
//!
//! # Owned or shared
//!
//! - [`Bridge::new`] builds a multi-thread runtime of its own (its
//!   threads named as asked); the last clone dropped shuts it down, in the
//!   background (dropping a runtime where a runtime is running panics, and
//!   a source's last handle may be dropped inside one).
//! - [`Bridge::from_handle`] runs on a runtime someone else owns (the
//!   embedder's); the embedder keeps it running while the sources are
//!   used (a call after it shut down fails, or panics in tokio's timers).
//!   It must be a multi-thread runtime: [`Handle::block_on`] cannot drive
//!   a current-thread runtime's I/O and timers, so a call would hang
//!   ([`NotMultiThread`]).
//!
//! Clones share one runtime: a source given a bridge builds none.
//!
//! # Blocking from any thread
//!
//! [`Handle::block_on`] polls the future on the calling thread (the
//! runtime's workers drive its I/O and timers), and panics on a thread
//! that is already running a runtime: a worker, or inside another
//! `block_on`. tokio offers no way to ask whether a thread may block, only
//! whether it has a runtime context ([`Handle::try_current`]), so
//! [`Bridge::block_on`] decides on that:
//!
//! - **no runtime context** (a reflector's thread, any plain thread): the
//!   future is polled right there;
//! - **a runtime context** (an async task that calls a source, as a
//!   server's async start-up connects its sources; and threads that only
//!   entered one, such as `spawn_blocking`'s, which could block but cannot
//!   be told apart from a worker): the future is polled on a scoped thread
//!   made for the call and joined before it returns. One thread spawn a
//!   call is the price of never panicking there. The thread is scoped so
//!   that the future may borrow from the caller, as on the direct path.
//!
//! # Panics
//!
//! A panic in the future reaches the caller as if the future had been
//! polled on the caller's thread. On the direct path it unwinds out of
//! [`Bridge::block_on`]. On the scoped path the panic hook reports it on
//! the scoped thread (the message names that thread), the join catches
//! it, and it is resumed on the caller with its original payload
//! ([`std::panic::resume_unwind`]: the hook does not run twice). Either
//! way the future has been dropped as it unwound, no thread is left
//! behind, and the runtime is unharmed: the future ran on the caller's or
//! the scoped thread, never on a worker. (A task started with
//! [`Bridge::spawn`] that panics is tokio's: its [`JoinHandle`] says so.)
//!
//! # A runtime shared with its callers
//!
//! A bridge on the very runtime whose async tasks call the sources works,
//! through the scoped thread, but each such call holds a worker until it
//! returns; the clients' own tasks (the HTTP/2 connection that carries
//! the answer) need a worker to run. If every worker waits so, nothing
//! runs them. Call the sources from plain threads or `spawn_blocking` on
//! such a runtime, or give them a runtime of their own ([`Bridge::new`]).
//!
//! ```
//! use std::num::NonZeroUsize;
//! use std::time::Duration;
//! use herald_bridge::Bridge;
//! let bridge = Bridge::new("upstream", NonZeroUsize::MIN)?;
//! // From a plain thread: a timer, driven by the bridge's worker.
//! let slept = bridge.block_on(async {
//!     tokio::time::sleep(Duration::from_millis(1)).await;
//!     "slept"
//! });
//! assert_eq!(slept, "slept");
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;

use tokio::runtime::{EnterGuard, Handle, Runtime, RuntimeFlavor};
use tokio::task::JoinHandle;

/// A tokio runtime for an upstream's async client, owned or shared, and
/// the blocking call into it (see the [crate docs](crate)). Cheap to
/// clone; clones share the runtime.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    handle: Handle,
    /// The runtime, when [`Bridge::new`] built it (`Some` until dropped);
    /// `None` on a runtime someone else owns.
    owned: Option<Runtime>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // In the background: the last clone may go inside a runtime's
        // context, where dropping (or blocking to shut down) a runtime
        // panics.
        if let Some(rt) = self.owned.take() {
            rt.shutdown_background();
        }
    }
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge")
            .field("owns_runtime", &self.owns_runtime())
            .field("workers", &self.inner.handle.metrics().num_workers())
            .finish()
    }
}

/// [`Bridge::from_handle`] was given a current-thread runtime, whose I/O
/// and timers only its own `block_on` drives: a source's call from
/// another thread would wait for ever.
///
/// ```
/// use herald_bridge::Bridge;
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// assert!(Bridge::from_handle(rt.handle().clone()).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotMultiThread;

impl fmt::Display for NotMultiThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a current-thread tokio runtime cannot run an upstream's client for other threads \
             (only its own block_on drives its I/O and timers): give a multi-thread runtime",
        )
    }
}

impl std::error::Error for NotMultiThread {}

impl Bridge {
    /// A multi-thread runtime of its own with `workers` worker threads,
    /// each named `name`, I/O and timers enabled; shut down in the
    /// background when the last clone is dropped. Fails only if the
    /// runtime cannot start (threads or the I/O driver refused).
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let bridge = Bridge::new("herald-etcd", NonZeroUsize::MIN)?;
    /// assert!(bridge.owns_runtime());
    /// assert_eq!(bridge.block_on(async { 1 + 1 }), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(name: &str, workers: NonZeroUsize) -> std::io::Result<Bridge> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.get())
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(Bridge {
            inner: Arc::new(Inner {
                handle: runtime.handle().clone(),
                owned: Some(runtime),
            }),
        })
    }

    /// Runs on the runtime `handle` belongs to, which its owner keeps
    /// running while the bridge is used; it must be a multi-thread one
    /// ([`NotMultiThread`]). Give it I/O and timers (`enable_all`): the
    /// clients need both.
    ///
    /// ```
    /// use herald_bridge::Bridge;
    /// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    /// let bridge = Bridge::from_handle(rt.handle().clone())?;
    /// assert!(!bridge.owns_runtime());
    /// assert_eq!(bridge.block_on(async { "on the embedder's runtime" }), "on the embedder's runtime");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_handle(handle: Handle) -> Result<Bridge, NotMultiThread> {
        if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
            return Err(NotMultiThread);
        }
        Ok(Bridge {
            inner: Arc::new(Inner {
                handle,
                owned: None,
            }),
        })
    }

    /// Whether the runtime is the bridge's own ([`Bridge::new`]) rather
    /// than someone else's ([`Bridge::from_handle`]).
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// assert!(Bridge::new("own", NonZeroUsize::MIN)?.owns_runtime());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn owns_runtime(&self) -> bool {
        self.inner.owned.is_some()
    }

    /// Whether `self` and `other` are clones of one bridge (one runtime).
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let a = Bridge::new("a", NonZeroUsize::MIN)?;
    /// assert!(a.same(&a.clone()));
    /// assert!(!a.same(&Bridge::new("b", NonZeroUsize::MIN)?));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn same(&self, other: &Bridge) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The runtime's handle.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let bridge = Bridge::new("two", NonZeroUsize::new(2).unwrap())?;
    /// assert_eq!(bridge.handle().metrics().num_workers(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.inner.handle
    }

    /// Enters the runtime's context on this thread until the guard is
    /// dropped: for clients that spawn onto "the current runtime" as they
    /// are built (kube-rs's tower stack).
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let bridge = Bridge::new("enter", NonZeroUsize::MIN)?;
    /// let _in = bridge.enter();
    /// assert!(tokio::runtime::Handle::try_current().is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        self.inner.handle.enter()
    }

    /// Starts `f` on the runtime's workers and returns at once.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let bridge = Bridge::new("spawn", NonZeroUsize::MIN)?;
    /// let task = bridge.spawn(async { 7 });
    /// assert_eq!(bridge.block_on(task).unwrap(), 7);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn<F>(&self, f: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.handle.spawn(f)
    }

    /// Runs `f` to completion for a caller that blocks, from any thread:
    /// polled on the calling thread when it has no runtime context, on a
    /// scoped thread made for the call when it has one (where
    /// [`Handle::block_on`] would panic). A panic in `f` reaches the
    /// caller with its payload either way. See the crate docs'
    /// "Blocking from any thread", "Panics", and "A runtime shared with
    /// its callers".
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use herald_bridge::Bridge;
    /// let bridge = Bridge::new("from-async", NonZeroUsize::MIN)?;
    /// // Inside another runtime's task: no panic.
    /// let other = tokio::runtime::Runtime::new()?;
    /// let n = other.block_on(async { bridge.block_on(async { 42 }) });
    /// assert_eq!(n, 42);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn block_on<F>(&self, f: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let handle = &self.inner.handle;
        if Handle::try_current().is_err() {
            return handle.block_on(f);
        }
        std::thread::scope(|s| match s.spawn(|| handle.block_on(f)).join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::time::Duration;

    fn own() -> Bridge {
        Bridge::new("bridge-test", NonZeroUsize::MIN).unwrap()
    }

    /// The payload of a panic, as text.
    fn said(panic: Box<dyn std::any::Any + Send>) -> String {
        panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    }

    #[test]
    fn a_plain_thread_blocks_in_place_with_timers_driven() {
        let bridge = own();
        let caller = std::thread::current().id();
        let (ran_on, slept) = bridge.block_on(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            (std::thread::current().id(), true)
        });
        assert!(slept);
        // The direct path: polled on the caller's own thread.
        assert_eq!(ran_on, caller);
    }

    #[test]
    fn inside_a_runtime_it_moves_to_a_scoped_thread_and_borrows() {
        let bridge = own();
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let borrowed = String::from("the caller's");
        let (caller, ran_on, len) = other.block_on(async {
            let caller = std::thread::current().id();
            let (ran_on, len) = bridge.block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                (std::thread::current().id(), borrowed.len())
            });
            (caller, ran_on, len)
        });
        assert_ne!(caller, ran_on, "Handle::block_on here would have panicked");
        assert_eq!(len, borrowed.len());
    }

    #[test]
    fn a_panic_reaches_the_caller_with_its_payload_on_both_paths() {
        let bridge = own();
        let direct = catch_unwind(AssertUnwindSafe(|| {
            bridge.block_on(async { panic!("direct boom") })
        }));
        assert_eq!(said(direct.unwrap_err()), "direct boom");
        let other = tokio::runtime::Runtime::new().unwrap();
        let scoped = catch_unwind(AssertUnwindSafe(|| {
            other.block_on(async { bridge.block_on(async { panic!("scoped boom {}", 7) }) })
        }));
        assert_eq!(said(scoped.unwrap_err()), "scoped boom 7");
        // The runtime is unharmed: it still serves.
        assert_eq!(bridge.block_on(async { 3 }), 3);
        assert_eq!(other.block_on(async { bridge.block_on(async { 4 }) }), 4);
    }

    #[test]
    fn the_last_clone_may_go_inside_a_runtime() {
        let bridge = own();
        let clone = bridge.clone();
        drop(bridge);
        // Still running: a clone holds it.
        assert_eq!(clone.block_on(async { 5 }), 5);
        let other = tokio::runtime::Runtime::new().unwrap();
        // Dropping a `Runtime` here would panic; the bridge shuts its own
        // down in the background.
        other.block_on(async move { drop(clone) });
    }

    #[test]
    fn a_shared_runtime_is_not_shut_down_with_the_bridge() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let bridge = Bridge::from_handle(rt.handle().clone()).unwrap();
        assert!(!bridge.owns_runtime());
        let task = bridge.spawn(async { 6 });
        drop(bridge);
        assert_eq!(rt.block_on(task).unwrap(), 6);
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(
            Bridge::from_handle(current.handle().clone()).unwrap_err(),
            NotMultiThread
        );
    }
}
