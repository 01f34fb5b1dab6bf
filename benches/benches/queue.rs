//! Group `queue`: the per-watcher queue between the dispatcher and a watch.
//!
//! Herald's is a bounded wait-free SPSC ring of 8-byte handles (`queue.rs`,
//! via the `internals` feature; Lamport's queue with cached indices). The
//! peers are the bounded queues a Rust implementation would otherwise pick,
//! all carrying the same `u64`, capacity 1,024 (the engine sizes its queues
//! 10 to 1,000), used through their non-blocking calls:
//! `crossbeam_queue::ArrayQueue` (MPMC, lock-free), `crossbeam_channel::bounded`
//! and `flume::bounded` (MPMC channels, try_send/try_recv) and
//! `std::sync::mpsc::sync_channel` (whose bounded flavour is crossbeam's
//! array channel).
//!
//! - `queue/single-thread`: push 256 then pop 256 on one thread: the cost
//!   of the operations themselves, caches warm, no contention.
//!   Throughput = 256 handles (each pushed and popped).
//! - `queue/stream`: a producer thread pushes `iters x 256` handles, the
//!   bench thread pops them, each side spinning briefly and then yielding
//!   when full or empty (no ping-pong: the queue streams). Timed from spawning the producer to
//!   joining it. `base` is that harness alone: spawn and join a producer
//!   that counts to the same number with no queue, the consumer idle.
//!   Throughput = 256 handles. On 2 shared cores the producer and the
//!   consumer each own a core only if nothing else runs.

use std::hint::{black_box, spin_loop};
use std::time::Instant;

use criterion::{Criterion, Throughput};
use crossbeam_queue::ArrayQueue;
use herald::internals::Spsc;

const CAP: usize = 1_024;
const BATCH: u64 = 256;

/// The producing side of a queue.
trait Push {
    fn push(&self, v: u64) -> bool;
}

/// The consuming side of a queue.
trait Pop {
    fn pop(&self) -> Option<u64>;
}

impl Push for Spsc {
    #[inline]
    fn push(&self, v: u64) -> bool {
        Spsc::push(self, v)
    }
}

impl Pop for Spsc {
    #[inline]
    fn pop(&self) -> Option<u64> {
        Spsc::pop(self)
    }
}

impl Push for ArrayQueue<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        ArrayQueue::push(self, v).is_ok()
    }
}

impl Pop for ArrayQueue<u64> {
    #[inline]
    fn pop(&self) -> Option<u64> {
        ArrayQueue::pop(self)
    }
}

impl Push for crossbeam_channel::Sender<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        self.try_send(v).is_ok()
    }
}

impl Pop for crossbeam_channel::Receiver<u64> {
    #[inline]
    fn pop(&self) -> Option<u64> {
        self.try_recv().ok()
    }
}

impl Push for flume::Sender<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        self.try_send(v).is_ok()
    }
}

impl Pop for flume::Receiver<u64> {
    #[inline]
    fn pop(&self) -> Option<u64> {
        self.try_recv().ok()
    }
}

impl Push for std::sync::mpsc::SyncSender<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        self.try_send(v).is_ok()
    }
}

impl Pop for std::sync::mpsc::Receiver<u64> {
    #[inline]
    fn pop(&self) -> Option<u64> {
        self.try_recv().ok()
    }
}

fn push_pop<P: Push, C: Pop>(p: &P, c: &C) {
    for v in 0..BATCH {
        black_box(p.push(black_box(v)));
    }
    for _ in 0..BATCH {
        black_box(c.pop());
    }
}

/// Spins a little, then yields: on an oversubscribed machine a pure spin
/// burns the timeslice the other side needs.
#[inline]
fn backoff(spins: &mut u32) {
    if *spins < 64 {
        *spins += 1;
        spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Streams `n` handles from a producer thread to this one.
fn stream<P: Push + Sync, C: Pop>(p: &P, c: &C, n: u64) -> std::time::Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for v in 0..n {
                let mut spins = 0;
                while !p.push(v) {
                    backoff(&mut spins);
                }
            }
        });
        let mut got = 0;
        let mut spins = 0;
        while got < n {
            match c.pop() {
                Some(v) => {
                    black_box(v);
                    got += 1;
                    spins = 0;
                }
                None => backoff(&mut spins),
            }
        }
    });
    start.elapsed()
}

fn single_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue/single-thread");
    group.throughput(Throughput::Elements(BATCH));
    let q = Spsc::new(CAP);
    group.bench_function("herald-spsc", |b| b.iter(|| push_pop(&q, &q)));
    let q = ArrayQueue::new(CAP);
    group.bench_function("crossbeam-ArrayQueue", |b| b.iter(|| push_pop(&q, &q)));
    let (tx, rx) = crossbeam_channel::bounded(CAP);
    group.bench_function("crossbeam-channel", |b| b.iter(|| push_pop(&tx, &rx)));
    let (tx, rx) = flume::bounded(CAP);
    group.bench_function("flume", |b| b.iter(|| push_pop(&tx, &rx)));
    let (tx, rx) = std::sync::mpsc::sync_channel(CAP);
    group.bench_function("std-sync_channel", |b| b.iter(|| push_pop(&tx, &rx)));
    group.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue/stream");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("base", |b| {
        b.iter_custom(|iters| {
            let n = iters * BATCH;
            let start = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    for v in 0..n {
                        black_box(v);
                    }
                });
            });
            start.elapsed()
        })
    });
    let q = Spsc::new(CAP);
    group.bench_function("herald-spsc", |b| {
        b.iter_custom(|iters| stream(&q, &q, iters * BATCH))
    });
    let q = ArrayQueue::new(CAP);
    group.bench_function("crossbeam-ArrayQueue", |b| {
        b.iter_custom(|iters| stream(&q, &q, iters * BATCH))
    });
    let (tx, rx) = crossbeam_channel::bounded(CAP);
    group.bench_function("crossbeam-channel", |b| {
        b.iter_custom(|iters| stream(&tx, &rx, iters * BATCH))
    });
    let (tx, rx) = flume::bounded(CAP);
    group.bench_function("flume", |b| {
        b.iter_custom(|iters| stream(&tx, &rx, iters * BATCH))
    });
    let (tx, rx) = std::sync::mpsc::sync_channel(CAP);
    group.bench_function("std-sync_channel", |b| {
        b.iter_custom(|iters| stream(&tx, &rx, iters * BATCH))
    });
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    single_thread(&mut c);
    two_threads(&mut c);
    c.final_summary();
}
