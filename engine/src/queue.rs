//! A bounded single-producer single-consumer queue of 8-byte handles.
//!
//! # Synchronization
//!
//! Lamport's ring buffer with cached indices (as in Rigtorp's `SPSCQueue`).
//! The producer owns `tail`, the consumer owns `head`; each reads the other's
//! index only when its cached copy says the queue is full (producer) or empty
//! (consumer).
//!
//! - push: write the slot (`Relaxed`), then `tail.store(t + 1, Release)`.
//!   pop: `tail.load(Acquire)` (pairs with that store), then read the slot.
//! - pop: read the slot, then `head.store(h + 1, Release)`. push:
//!   `head.load(Acquire)` (pairs with that store) before reusing the slot,
//!   so a slot is never overwritten before its value was read.
//!
//! Slots are `AtomicU64`, so there is no `unsafe` here at all; `Relaxed`
//! slot accesses compile to plain moves on x86-64 and AArch64. Both sides
//! are wait-free: a bounded number of steps, no retry loop.
//!
//! # One slot
//!
//! A queue of capacity 1 is a single word ([`Queue::One`]): no index
//! lines, no slot array. A follower's queue is one (it carries at most
//! one bookmark marker), so a thousand followers do not pay 192 bytes of
//! padded lines each. Protocol: the word holds `EMPTY` or a value.
//! - push: `load(Acquire)`; if not `EMPTY`, full; else `store(v, Release)`.
//! - pop: `load(Acquire)` (pairs with that store); if `EMPTY`, empty; else
//!   `store(EMPTY, Release)`, which the next push's `Acquire` pairs with.
//!
//! Each side writes only in the state the other side cannot write in, so
//! no read-modify-write is needed.

use crate::sync::{AtomicU64, OnceBox, Ordering};

/// One cache line (64 bytes) per side. Not `CachePadded`'s 128 (two lines,
/// against the adjacent-line prefetcher): a queue sits in every watcher,
/// thousands of them, and the second line per side cost each watcher
/// 192 bytes (plus 64 more of `Arc` header padding) for no measured gain
/// in the fan-out runs.
#[derive(Debug)]
#[repr(align(64))]
struct Line<T>(T);

impl<T> std::ops::Deref for Line<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A watcher's queue: the line-padded ring, or for capacity 1 a single
/// word (see [One slot](#one-slot)).
#[derive(Debug)]
pub(crate) enum Queue {
    /// Capacity 2 or more. Allocated by the first push, so an idle
    /// watcher holds no lines and no slots (a kubelet-shaped watcher may
    /// hear of nothing for hours); boxed, so the lines' 64-byte alignment
    /// does not pad the structure holding the queue. The producer alone
    /// sets it; the consumer's `get` (`Acquire`) pairs with that `set`
    /// (a `Release` compare-exchange), and before it the queue is empty.
    /// A `OnceBox`, one word: the enum is 16 bytes (24 with a
    /// `OnceLock<Box<_>>`, whose `Once` state is a second word), and a
    /// `get` is one load of the pointer.
    Ring { cap: u32, ring: OnceBox<Spsc> },
    /// Capacity 1: `EMPTY` or the one value.
    One(AtomicU64),
}

/// The one-slot queue's "no value" (never a handle: a handle's position
/// is below 2^62).
const EMPTY: u64 = u64::MAX;

impl Queue {
    /// A queue holding at most `cap` handles (at least one). Values must
    /// not be `u64::MAX`.
    pub(crate) fn new(cap: usize) -> Queue {
        if cap <= 1 {
            Queue::One(AtomicU64::new(EMPTY))
        } else {
            Queue::Ring {
                // A `u32` keeps the enum at 16 bytes; no queue is that long.
                cap: u32::try_from(cap).unwrap_or(u32::MAX),
                ring: OnceBox::new(),
            }
        }
    }

    /// Producer only.
    #[inline]
    pub(crate) fn push(&self, value: u64) -> Result<(), Full> {
        match self {
            Queue::Ring { cap, ring } => match ring.get() {
                Some(q) => q.push(value),
                None => Self::first_push(*cap, ring, value),
            },
            Queue::One(slot) => {
                debug_assert_ne!(value, EMPTY);
                // Acquire: pairs with the consumer's Release in `pop`; its
                // read of the old value is done.
                if slot.load(Ordering::Acquire) != EMPTY {
                    return Err(Full);
                }
                // Release: publishes what the producer wrote before (a
                // bookmark's version) with the value.
                slot.store(value, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Producer only: allocates the ring, then pushes.
    #[cold]
    fn first_push(cap: u32, ring: &OnceBox<Spsc>, value: u64) -> Result<(), Full> {
        // Only the producer sets the cell, so this `set` cannot lose.
        let _ = ring.set(Box::new(Spsc::new(cap as usize)));
        ring.get().map_or(Err(Full), |q| q.push(value))
    }

    /// Any thread: how many handles the queue holds, as two racing
    /// loads saw it (an operator's view, never a synchronisation point).
    pub(crate) fn len(&self) -> u64 {
        match self {
            Queue::Ring { ring, .. } => ring.get().map_or(0, Spsc::len),
            // Relaxed: a statistic.
            Queue::One(slot) => u64::from(slot.load(Ordering::Relaxed) != EMPTY),
        }
    }

    /// Consumer only.
    #[inline]
    pub(crate) fn pop(&self) -> Option<u64> {
        match self {
            Queue::Ring { ring, .. } => ring.get()?.pop(),
            Queue::One(slot) => {
                // Acquire: pairs with the producer's Release in `push`.
                let v = slot.load(Ordering::Acquire);
                if v == EMPTY {
                    return None;
                }
                // Release: the value has been read; the producer may
                // refill the slot.
                slot.store(EMPTY, Ordering::Release);
                Some(v)
            }
        }
    }
}

/// The ring-buffer queue (capacity 2 or more).
#[derive(Debug)]
pub(crate) struct Spsc {
    /// The consumer's line: its position and its private copy of `tail`.
    head: Line<(AtomicU64, AtomicU64)>,
    /// The producer's line: its position and its private copy of `head`.
    tail: Line<(AtomicU64, AtomicU64)>,
    cap: u64,
    mask: u64,
    slots: Box<[AtomicU64]>,
}

/// The queue is full; the handle was not enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

impl Spsc {
    /// A queue holding at most `cap` handles (at least one).
    pub(crate) fn new(cap: usize) -> Spsc {
        let cap = cap.max(1);
        let physical = cap.next_power_of_two();
        Spsc {
            head: Line((AtomicU64::new(0), AtomicU64::new(0))),
            tail: Line((AtomicU64::new(0), AtomicU64::new(0))),
            cap: cap as u64,
            mask: physical as u64 - 1,
            slots: (0..physical).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Producer only.
    #[inline]
    pub(crate) fn push(&self, value: u64) -> Result<(), Full> {
        let (tail, head_cache) = &*self.tail;
        // Relaxed: only the producer writes `tail` and `head_cache`.
        let t = tail.load(Ordering::Relaxed);
        if t - head_cache.load(Ordering::Relaxed) >= self.cap {
            // Acquire: pairs with the consumer's Release in `pop`; the slot
            // we are about to reuse has been read.
            let h = self.head.0.0.load(Ordering::Acquire);
            head_cache.store(h, Ordering::Relaxed);
            if t - h >= self.cap {
                return Err(Full);
            }
        }
        self.slots[(t & self.mask) as usize].store(value, Ordering::Relaxed);
        // Release: publishes the slot write to the consumer.
        tail.store(t + 1, Ordering::Release);
        Ok(())
    }

    /// Any thread: `tail - head`. Relaxed: a statistic; `head` is read
    /// first and neither goes back, so the difference is never negative
    /// (saturating all the same).
    fn len(&self) -> u64 {
        let h = self.head.0.0.load(Ordering::Relaxed);
        let t = self.tail.0.0.load(Ordering::Relaxed);
        t.saturating_sub(h)
    }

    /// Consumer only.
    #[inline]
    pub(crate) fn pop(&self) -> Option<u64> {
        let (head, tail_cache) = &*self.head;
        // Relaxed: only the consumer writes `head` and `tail_cache`.
        let h = head.load(Ordering::Relaxed);
        if h == tail_cache.load(Ordering::Relaxed) {
            // Acquire: pairs with the producer's Release in `push`.
            let t = self.tail.0.0.load(Ordering::Acquire);
            tail_cache.store(t, Ordering::Relaxed);
            if h == t {
                return None;
            }
        }
        let v = self.slots[(h & self.mask) as usize].load(Ordering::Relaxed);
        // Release: the slot has been read; the producer may reuse it.
        head.store(h + 1, Ordering::Release);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_and_bounded() {
        let q = Spsc::new(3);
        assert_eq!(q.pop(), None);
        for v in 1..=3 {
            q.push(v).unwrap();
        }
        assert_eq!(q.push(4), Err(Full));
        assert_eq!(q.pop(), Some(1));
        q.push(4).unwrap();
        assert_eq!(q.push(5), Err(Full));
        assert_eq!(
            (q.pop(), q.pop(), q.pop(), q.pop()),
            (Some(2), Some(3), Some(4), None)
        );
    }

    #[test]
    fn one_slot_holds_one_value() {
        let q = Queue::new(1);
        assert!(matches!(q, Queue::One(_)));
        assert_eq!(q.pop(), None);
        q.push(0).unwrap();
        assert_eq!(q.push(1), Err(Full));
        assert_eq!(q.pop(), Some(0));
        assert_eq!(q.pop(), None);
        q.push(2).unwrap();
        assert_eq!(q.pop(), Some(2));
        let q = Queue::new(2);
        assert_eq!(q.pop(), None);
        // Nothing allocated until the first push.
        assert!(matches!(&q, Queue::Ring { ring, .. } if ring.get().is_none()));
        q.push(7).unwrap();
        assert!(matches!(&q, Queue::Ring { ring, .. } if ring.get().is_some()));
        assert_eq!(q.pop(), Some(7));
    }

    #[test]
    fn threads_see_every_value_once_in_order() {
        for cap in [1, 7] {
            every_value_once_in_order(cap);
        }
    }

    fn every_value_once_in_order(cap: usize) {
        let n: u64 = if cfg!(miri) { 200 } else { 200_000 };
        let q = Arc::new(Queue::new(cap));
        let p = {
            let q = q.clone();
            std::thread::spawn(move || {
                for v in 0..n {
                    while q.push(v).is_err() {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut next = 0;
        while next < n {
            match q.pop() {
                Some(v) => {
                    assert_eq!(v, next);
                    next += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        p.join().unwrap();
        assert_eq!(q.pop(), None);
    }
}
