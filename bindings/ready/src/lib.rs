//! A readiness set: one `eventfd` for many watches, readable while any of
//! them may have something. The C ABI's watch sets are these; a binding
//! written in Rust for another event loop (Python's asyncio) uses it as
//! is: poll a watch with [`Member`]'s waker, and read the set when its
//! descriptor is readable. The engine's readiness wakes drive it: a
//! watch polled with nothing ready is armed with its own waker
//! (herald's `Watch::poll_visit_batch`), and the
//! wake queues the watch's handle and signals the descriptor, once until
//! the set is read again. An idle watch costs the loop nothing.
//!
//! What keeps a wake from being lost: the queue and a `signalled` flag
//! live under one lock, and whoever leaves the queue non-empty with the
//! flag clear (a wake that queues, a read that leaves some behind) sets
//! it and posts the descriptor once out of the lock. A read drains the
//! descriptor *before* it takes the lock and clears the flag under it: a
//! post it drained belongs to a member queued before it, which its take
//! sees. (A first version kept the flag in an atomic beside the queue's
//! lock; the loom model below found an interleaving that left a member
//! queued behind a quiet descriptor: loom checks `SeqCst` as
//! acquire/release, under which that flag could be read stale.)
//!
//! Under `--cfg herald_loom` the atomics and the mutex are loom's and the
//! descriptor is its counter (an atomic: written is
//! readable, drained is not), so `tests/loom_set.rs` checks this very code:
//! a member queued is never left behind a descriptor that is not
//! readable.

use std::collections::VecDeque;
use std::os::fd::RawFd;
#[cfg(not(herald_loom))]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};

#[cfg(not(herald_loom))]
use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, Ordering},
};

// The model swaps what orders the protocol (the queue's mutex, the flags,
// the descriptor); the `Arc`s only keep things alive.
#[cfg(herald_loom)]
use loom::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// The eventfd: its counter is written to signal and read to drain.
#[cfg(not(herald_loom))]
#[derive(Debug)]
struct Descriptor(OwnedFd);

#[cfg(not(herald_loom))]
impl Descriptor {
    fn new() -> std::io::Result<Descriptor> {
        // SAFETY: eventfd takes no pointers; a negative result is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Descriptor(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Makes it readable.
    fn post(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd. It
        // can fail only if the counter would overflow (it is drained at
        // every `ready`), when the descriptor is readable anyway.
        let _ = unsafe { libc::write(self.raw(), (&raw const one).cast(), 8) };
    }

    /// Makes it not readable (until the next post).
    fn drain(&self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live 8-byte buffer from our
        // own non-blocking eventfd (EAGAIN when it is not readable).
        let _ = unsafe { libc::read(self.raw(), count.as_mut_ptr().cast(), 8) };
    }
}

/// The model's descriptor: the eventfd's counter as a loom atomic.
#[cfg(herald_loom)]
#[derive(Debug)]
struct Descriptor(AtomicU64);

#[cfg(herald_loom)]
impl Descriptor {
    fn new() -> std::io::Result<Descriptor> {
        Ok(Descriptor(AtomicU64::new(0)))
    }

    fn raw(&self) -> RawFd {
        -1
    }

    fn post(&self) {
        // SeqCst: a write(2) and a read(2) of one eventfd are ordered by
        // the kernel's lock on it.
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn drain(&self) {
        self.0.swap(0, Ordering::SeqCst);
    }
}

/// A set's descriptor and its ready queue.
#[derive(Debug)]
pub struct ReadySet {
    fd: Descriptor,
    pending: Mutex<Pending>,
}

/// The queue and its flag, under one lock.
#[derive(Debug, Default)]
struct Pending {
    queue: VecDeque<Arc<Member>>,
    /// A post was made since the last drain (by [`ReadySet::ready`]).
    signalled: bool,
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
        Ok(ReadySet {
            fd: Descriptor::new()?,
            pending: Mutex::new(Pending::default()),
        })
    }

    /// The descriptor: readable while a member may have something (-1 in
    /// the loom model, which has none).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    /// Whether the model's descriptor is readable (the loom tests' check).
    #[cfg(herald_loom)]
    pub fn readable(&self) -> bool {
        self.fd.0.load(Ordering::SeqCst) > 0
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new member for the watch `handle`, queued at once (the watch is
    /// polled first when the set is next read, which arms it).
    pub fn join(self: &Arc<ReadySet>, handle: u64) -> Arc<Member> {
        let member = Arc::new(Member {
            set: Arc::downgrade(self),
            handle,
            queued: AtomicBool::new(false),
        });
        member.notify();
        member
    }

    /// Takes up to `max` ready watches' handles into `out`. Leaves the
    /// descriptor readable if more remain.
    pub fn ready(&self, out: &mut Vec<u64>, max: usize) {
        // Before the lock: a post this drains was made for a member the
        // take below sees (it was queued before the post).
        self.fd.drain();
        let post = {
            let mut p = self.lock();
            while out.len() < max {
                let Some(member) = p.queue.pop_front() else {
                    break;
                };
                // Cleared before the caller polls the watch: a wake from
                // here on queues it again.
                member.queued.store(false, Ordering::Relaxed);
                out.push(member.handle);
            }
            // What is left keeps the descriptor readable.
            p.signalled = false;
            p.signal()
        };
        if post {
            self.fd.post();
        }
    }
}

impl Pending {
    /// Whether the descriptor must be posted: something is queued and no
    /// post was made since the last drain. Under the lock, so a queued
    /// member and the flag are never seen apart.
    fn signal(&mut self) -> bool {
        let post = !self.queue.is_empty() && !self.signalled;
        self.signalled |= post;
        post
    }
}

impl Member {
    /// Queues the watch and signals the set, once until the set reports
    /// it (what its waker does).
    pub fn notify(self: &Arc<Self>) {
        let Some(set) = self.set.upgrade() else {
            return;
        };
        // Relaxed: a stale `false` only costs a redundant push (reported
        // twice, polled once more); the queue's lock orders the rest.
        if self.queued.swap(true, Ordering::Relaxed) {
            return;
        }
        let post = {
            let mut p = set.lock();
            p.queue.push_back(self.clone());
            p.signal()
        };
        if post {
            set.fd.post();
        }
    }

    /// The waker to poll the member's watch with.
    pub fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(self.clone())
    }
}

impl Wake for Member {
    fn wake(self: Arc<Self>) {
        self.notify();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notify();
    }
}

#[cfg(all(test, not(herald_loom)))]
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
