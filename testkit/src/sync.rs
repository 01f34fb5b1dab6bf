//! Synchronisation helpers for tests: a waker that unparks a thread, and a
//! lock that survives another test's panic.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Wake, Waker};
use std::thread::{self, Thread};

/// A [`Waker`] that unparks a thread: poll with it, and `thread::park()`
/// on `Pending` until something wakes the thread.
///
/// ```
/// use std::task::{Context, Poll};
///
/// let waker = herald_testkit::ThreadWaker::current();
/// let mut cx = Context::from_waker(&waker);
/// let mut ready = std::future::ready(7);
/// let mut ready = std::pin::pin!(ready);
/// assert_eq!(ready.as_mut().poll(&mut cx), Poll::Ready(7));
/// ```
#[derive(Debug, Clone)]
pub struct ThreadWaker(pub Thread);

impl ThreadWaker {
    /// A waker that unparks `thread`.
    pub fn waker(thread: Thread) -> Waker {
        Waker::from(Arc::new(ThreadWaker(thread)))
    }

    /// A waker that unparks the calling thread.
    pub fn current() -> Waker {
        ThreadWaker::waker(thread::current())
    }
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Locks `m`, taking the guard even if the mutex is poisoned: a test that
/// panicked while holding it (a failure already reported) must not fail
/// every test after it that shares the mutex.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_still_locks() {
        let m = Mutex::new(1);
        let _ = std::panic::catch_unwind(|| {
            let _guard = m.lock().unwrap();
            panic!("poison it");
        });
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }

    #[test]
    fn the_waker_unparks_its_thread() {
        let waker = ThreadWaker::current();
        let other = thread::spawn(move || waker.wake());
        // Returns once the unpark came (or spuriously; either way no hang).
        thread::park();
        other.join().unwrap();
    }
}
