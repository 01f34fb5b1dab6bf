//! A readiness set: one `eventfd` for many watches, readable while any of
//! them may have something. The C ABI's watch sets are these; a binding
//! written in Rust for another event loop (Python's asyncio) uses it as
//! is: poll a watch with [`Member`]'s waker, and read the set when its
//! descriptor is readable. The engine's readiness wakes drive it: a
//! watch polled with nothing ready is armed with its own waker
//! ([`Watch::poll_visit_batch`](herald::Watch::poll_visit_batch)), and the
//! wake queues the watch's handle and signals the descriptor, once until
//! the set is read again. An idle watch costs the loop nothing.
//!
//! The order that keeps a wake from being lost: [`ReadySet::ready`]
//! drains the descriptor, clears `signalled`, then takes from the queue; a
//! wake pushes to the queue, then signals unless `signalled` was already
//! set. A wake that finds it set pushed before the clear or before the
//! drain read it, so the take that follows sees the push (the queue's
//! mutex orders them); one that finds it clear writes the descriptor.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Wake;

/// A set's descriptor and its ready queue.
#[derive(Debug)]
pub struct ReadySet {
    fd: OwnedFd,
    queue: Mutex<VecDeque<Arc<Member>>>,
    /// The descriptor was written since the last [`ReadySet::ready`].
    signalled: AtomicBool,
}

/// One watch's membership: its waker (`Waker::from(member)`).
#[derive(Debug)]
pub struct Member {
    set: Weak<ReadySet>,
    /// The watch's handle (as C knows it), reported by [`ReadySet::ready`].
    pub handle: u64,
    /// In the queue now (a wake while queued does nothing more).
    queued: AtomicBool,
}

impl ReadySet {
    /// A set with a fresh non-blocking, close-on-exec eventfd.
    pub fn new() -> std::io::Result<ReadySet> {
        // SAFETY: eventfd takes no pointers; a negative result is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ReadySet {
            // SAFETY: `fd` was just opened and is owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            queue: Mutex::new(VecDeque::new()),
            signalled: AtomicBool::new(false),
        })
    }

    /// The descriptor: readable while a member may have something.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes the descriptor readable (once until the next `ready`).
    fn signal(&self) {
        if !self.signalled.swap(true, Ordering::SeqCst) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our own eventfd. It
            // can fail only if the counter would overflow (it is drained
            // at every `ready`), when the descriptor is readable anyway.
            let _ = unsafe { libc::write(self.raw_fd(), (&raw const one).cast(), 8) };
        }
    }

    /// A new member for the watch `handle`, queued at once (the watch is
    /// polled first when the set is next read, which arms it).
    pub fn join(self: &Arc<ReadySet>, handle: u64) -> Arc<Member> {
        let member = Arc::new(Member {
            set: Arc::downgrade(self),
            handle,
            queued: AtomicBool::new(false),
        });
        member.clone().wake();
        member
    }

    /// Takes up to `max` ready watches' handles into `out`. Leaves the
    /// descriptor readable if more remain.
    pub fn ready(&self, out: &mut Vec<u64>, max: usize) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live 8-byte buffer from our
        // own non-blocking eventfd (EAGAIN when it is not readable).
        let _ = unsafe { libc::read(self.raw_fd(), count.as_mut_ptr().cast(), 8) };
        self.signalled.store(false, Ordering::SeqCst);
        let more = {
            let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            while out.len() < max {
                let Some(member) = queue.pop_front() else {
                    break;
                };
                // Cleared before the caller polls the watch: a wake from
                // here on queues it again.
                member.queued.store(false, Ordering::SeqCst);
                out.push(member.handle);
            }
            !queue.is_empty()
        };
        if more {
            self.signal();
        }
    }
}

impl Wake for Member {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let Some(set) = self.set.upgrade() else {
            return;
        };
        if self.queued.swap(true, Ordering::SeqCst) {
            return;
        }
        set.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(self.clone());
        set.signal();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    fn readable(set: &ReadySet) -> bool {
        let mut pfd = libc::pollfd {
            fd: set.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd, no wait.
        unsafe { libc::poll(&raw mut pfd, 1, 0) == 1 }
    }

    #[test]
    fn a_wake_queues_once_and_signals_until_read() {
        let set = Arc::new(ReadySet::new().unwrap());
        assert!(!readable(&set));
        let a = set.join(7);
        let b = set.join(8);
        assert!(readable(&set));
        let waker = Waker::from(a.clone());
        waker.wake_by_ref();
        waker.wake_by_ref();
        let mut out = Vec::new();
        set.ready(&mut out, 1);
        assert_eq!(out, [7]);
        assert!(readable(&set), "one more is queued");
        set.ready(&mut out, 10);
        assert_eq!(out, [7, 8]);
        assert!(!readable(&set));
        // Taken: a wake queues it again.
        Waker::from(b).wake();
        assert!(readable(&set));
        out.clear();
        set.ready(&mut out, 10);
        assert_eq!(out, [8]);
    }

    #[test]
    fn wakes_from_many_threads_are_never_lost() {
        let set = Arc::new(ReadySet::new().unwrap());
        let members: Vec<_> = (0..8).map(|i| set.join(i)).collect();
        let mut out = Vec::new();
        set.ready(&mut out, 100);
        assert_eq!(out.len(), 8);
        for round in 0..200 {
            let threads: Vec<_> = members
                .iter()
                .map(|m| {
                    let w = Waker::from(m.clone());
                    std::thread::spawn(move || w.wake())
                })
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while seen.len() < members.len() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: {seen:?}"
                );
                if readable(&set) {
                    out.clear();
                    set.ready(&mut out, 3);
                    seen.extend(out.iter().copied());
                }
            }
            for t in threads {
                t.join().unwrap();
            }
        }
    }
}
