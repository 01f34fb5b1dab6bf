//! A counting allocator over mimalloc, for the memory scenario: bytes per
//! idle watcher are counted, not guessed.
//!
//! Counting is off unless switched on, so the throughput scenarios pay one
//! relaxed load per allocation and nothing else. When on (the memory
//! scenario; every etcd-fanout run, whose allocations come from several
//! busy threads at once), each thread adds to its own cache-line-sized
//! shard of the count, so counting threads do not contend on one line.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use mimalloc::MiMalloc;

/// mimalloc, counting live bytes while [`Counting::enable`] is on.
#[derive(Debug)]
pub struct Counting;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Shards of the live count: a thread adds to shard `SLOT % SHARDS`.
const SHARDS: usize = 32;

#[repr(align(128))]
struct Shard(AtomicI64);

static LIVE: [Shard; SHARDS] = [const { Shard(AtomicI64::new(0)) }; SHARDS];

/// The next thread's shard.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    /// This thread's shard (`usize::MAX`: not yet picked). Const-initialised
    /// and without a destructor: reading it never allocates.
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

impl Counting {
    /// Starts counting from zero.
    pub fn enable() {
        for shard in &LIVE {
            shard.0.store(0, Ordering::SeqCst);
        }
        ENABLED.store(true, Ordering::SeqCst);
    }

    /// Stops counting.
    pub fn disable() {
        ENABLED.store(false, Ordering::SeqCst);
    }

    /// Bytes allocated and not yet freed since [`Counting::enable`] (frees
    /// of older allocations count negative).
    pub fn live() -> i64 {
        LIVE.iter().map(|s| s.0.load(Ordering::SeqCst)).sum()
    }

    /// Whether this allocator is the process's global allocator (the
    /// `herald-perf` binary installs it; tests and benches may not).
    pub fn installed() -> bool {
        let shard = &LIVE[slot()].0;
        let before = shard.load(Ordering::SeqCst);
        let was = ENABLED.swap(true, Ordering::SeqCst);
        let probe = std::hint::black_box(vec![0u8; 4096]);
        let seen = shard.load(Ordering::SeqCst) - before >= 4096;
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

/// The calling thread's shard (picked round-robin on its first count; a
/// thread being torn down uses shard 0).
#[inline]
fn slot() -> usize {
    SLOT.try_with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(v);
        }
        v
    })
    .unwrap_or(0)
}

#[inline]
fn count(bytes: i64) {
    if ENABLED.load(Ordering::Relaxed) {
        LIVE[slot()].0.fetch_add(bytes, Ordering::Relaxed);
    }
}
