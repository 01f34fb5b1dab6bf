//! A counting allocator over mimalloc, for the memory scenario: bytes per
//! idle watcher are counted, not guessed.
//!
//! Counting is off unless switched on, so the throughput scenarios pay one
//! relaxed load per allocation and nothing else.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use mimalloc::MiMalloc;

/// mimalloc, counting live bytes while [`Counting::enable`] is on.
#[derive(Debug)]
pub struct Counting;

static ENABLED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);

impl Counting {
    /// Starts counting from zero.
    pub fn enable() {
        LIVE.store(0, Ordering::SeqCst);
        ENABLED.store(true, Ordering::SeqCst);
    }

    /// Stops counting.
    pub fn disable() {
        ENABLED.store(false, Ordering::SeqCst);
    }

    /// Bytes allocated and not yet freed since [`Counting::enable`] (frees
    /// of older allocations count negative).
    pub fn live() -> i64 {
        LIVE.load(Ordering::SeqCst)
    }

    /// Whether this allocator is the process's global allocator (the
    /// `herald-perf` binary installs it; tests and benches may not).
    pub fn installed() -> bool {
        let before = LIVE.load(Ordering::SeqCst);
        let was = ENABLED.swap(true, Ordering::SeqCst);
        let probe = std::hint::black_box(vec![0u8; 4096]);
        let seen = LIVE.load(Ordering::SeqCst) - before >= 4096;
        drop(probe);
        ENABLED.store(was, Ordering::SeqCst);
        seen
    }
}

// SAFETY: every method forwards to mimalloc with the caller's arguments
// unchanged, so mimalloc's `GlobalAlloc` contract carries over; the
// counters are plain atomics that never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        // SAFETY: `ptr` came from this allocator (hence from mimalloc) with
        // `layout`, as the caller guarantees.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s
        // contract for a pointer this allocator (mimalloc) returned.
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[inline]
fn count(bytes: i64) {
    if ENABLED.load(Ordering::Relaxed) {
        LIVE.fetch_add(bytes, Ordering::Relaxed);
    }
}
