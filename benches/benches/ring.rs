//! Group `ring`: the history ring, written and replayed.
//!
//! `append/*`, one change into a history that wraps (1,024 slots, always
//! full), Throughput = 1 change:
//! - `herald`: `Writer::apply` of a change to one of 1,024 objects, through
//!   the public API, no watcher. It takes the writer lock, reads the
//!   object's previous state from the store, appends an `Arc`'d record to
//!   the ring, updates the store (a persistent map) and unparks the
//!   dispatcher thread, which follows the ring on the other core (the
//!   writer waits for it only when every slot holds an undispatched change).
//! - `base`: the harness's share of `herald`: making the change (an
//!   `Object` clone, a version) and dropping it.
//! - `disruptor`: the `disruptor` crate's single-producer `publish` into a
//!   1,024-slot ring, the closure storing the version and an `Object` clone
//!   in a preallocated slot. The LMAX ring is the reference design for a
//!   single-writer ring; a disruptor needs a consumer, here a managed thread
//!   that does nothing (busy-spinning on the other core).
//! - `broadcast-no-rx` / `broadcast-idle-rx`:
//!   `tokio::sync::broadcast::Sender::send` of a fresh `Arc` (version and
//!   object), the channel Rust servers usually reach for; with no receiver
//!   (the send is refused and the value dropped: a floor) and with one idle
//!   receiver (the value is stored, overwriting the oldest).
//!
//! `replay/*`, a watcher catching up on 10,000 changes of history,
//! Throughput = 10,000 events:
//! - `herald-visit_batch` / `herald-recv_batch`: a watch started from an old
//!   resource version drains every change with `Watch::visit_batch`
//!   (borrowed events) or `Watch::recv_batch` (owned events: one reference
//!   count up and down per event). The watch replays from the ring by
//!   itself; it is created and registered with the dispatcher in the
//!   untimed setup, so only the drain is timed.
//! - `vecdeque-borrow` / `vecdeque-clone`: iterating a `VecDeque<Arc<_>>`
//!   of the same records, by reference or cloning each `Arc` out: the
//!   floor for a history kept in a plain deque under a lock.
//! - `broadcast`: a `tokio::sync::broadcast` receiver subscribed before the
//!   10,000 sends (untimed) catching up with `try_recv` (one `Arc` clone per
//!   event).

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput};
use herald::{Change, Config, Engine, Object, Relist, WatchItem, WatchRequest};

/// History slots for `append`: small, so the ring wraps all the time.
const RING: usize = 1_024;
/// Changes replayed per `replay` iteration.
const REPLAY: usize = 10_000;

/// What the peers store per change: the engine's record, minus bookkeeping.
#[derive(Debug)]
struct Rec {
    rv: u64,
    object: Object,
}

fn pods(n: usize) -> Vec<Object> {
    (0..n)
        .map(|i| {
            Object::builder("default", &format!("web-{i}"))
                .label("app", "web")
                .field("spec.nodeName", &format!("node-{}", i % 100))
                .payload(&b"{\"kind\":\"Pod\"}"[..])
                .build()
        })
        .collect()
}

fn append(c: &mut Criterion) {
    let objects = pods(RING);
    let mut group = c.benchmark_group("ring/append");
    group.throughput(Throughput::Elements(1));

    {
        let (engine, mut writer) =
            Engine::new(Config::default().history_bounds(RING, RING)).expect("config");
        writer
            .replace(Relist::new(objects.iter().cloned(), 1.into()))
            .expect("list");
        let mut rv = 1u64;
        group.bench_function("herald", |b| {
            b.iter(|| {
                rv += 1;
                let obj = &objects[rv as usize % RING];
                writer
                    .apply(Change::modified(obj.clone(), rv.into()))
                    .expect("apply");
            })
        });
        engine.stop();
    }

    let mut rv = 1u64;
    group.bench_function("base", |b| {
        b.iter(|| {
            rv += 1;
            let obj = &objects[rv as usize % RING];
            black_box(Change::modified(obj.clone(), rv.into()));
        })
    });

    {
        let factory = || Rec {
            rv: 0,
            object: Object::builder("", "").build(),
        };
        let mut producer =
            disruptor::build_single_producer(RING, factory, disruptor::BusySpinWithSpinLoopHint)
                .handle_events_with(|e: &Rec, _seq: disruptor::Sequence, _end: bool| {
                    black_box(e.rv);
                })
                .build();
        let mut rv = 1u64;
        group.bench_function("disruptor", |b| {
            b.iter(|| {
                rv += 1;
                let obj = &objects[rv as usize % RING];
                disruptor::Producer::publish(&mut producer, |e| {
                    e.rv = rv;
                    e.object = obj.clone();
                });
            })
        });
        // Dropping the producer stops and joins the consumer thread.
    }

    for (name, keep_receiver) in [("broadcast-no-rx", false), ("broadcast-idle-rx", true)] {
        let (tx, rx) = tokio::sync::broadcast::channel::<Arc<Rec>>(RING);
        let _rx = keep_receiver.then_some(rx);
        let mut rv = 1u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                rv += 1;
                let obj = &objects[rv as usize % RING];
                let _ = black_box(tx.send(Arc::new(Rec {
                    rv,
                    object: obj.clone(),
                })));
            })
        });
    }
    group.finish();
}

fn replay(c: &mut Criterion) {
    let objects = pods(1_000);
    let mut group = c.benchmark_group("ring/replay");
    group.throughput(Throughput::Elements(REPLAY as u64));
    // Each sample's untimed setup (a registration, or 10,000 sends) costs
    // as much as the timed drain: fewer samples keep the run short.
    group.sample_size(50);

    {
        let (engine, mut writer) =
            Engine::new(Config::default().history_bounds(2 * REPLAY, 2 * REPLAY)).expect("config");
        writer
            .replace(Relist::new(objects.iter().cloned(), 1.into()))
            .expect("list");
        for rv in 2..2 + REPLAY as u64 {
            let obj = &objects[rv as usize % objects.len()];
            writer
                .apply(Change::modified(obj.clone(), rv.into()))
                .expect("apply");
        }
        // A watch from version 1 replays every change; it is registered in
        // the (untimed) setup, and dropped (unregistered) after the timing.
        let new_watch = || {
            let w = engine
                .watch(WatchRequest::new().resource_version(Some(1.into())))
                .expect("watch");
            loop {
                let s = engine.stats();
                if s.watchers_active == 1 && s.watchers_pending == 0 {
                    break w;
                }
                std::thread::yield_now();
            }
        };

        group.bench_function("herald-visit_batch", |b| {
            b.iter_batched_ref(
                new_watch,
                |w| {
                    let mut n = 0;
                    while n < REPLAY {
                        n += w
                            .visit_batch(256, |ev| {
                                black_box(ev.resource_version());
                                black_box(ev.object());
                            })
                            .events;
                    }
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function("herald-recv_batch", |b| {
            let mut out: Vec<WatchItem> = Vec::with_capacity(256);
            b.iter_batched_ref(
                new_watch,
                |w| {
                    let mut n = 0;
                    while n < REPLAY {
                        n += w.recv_batch(&mut out, 256);
                        for item in out.drain(..) {
                            black_box(item);
                        }
                    }
                },
                BatchSize::PerIteration,
            )
        });
        engine.stop();
    }

    let records: Vec<Arc<Rec>> = (0..REPLAY)
        .map(|i| {
            Arc::new(Rec {
                rv: i as u64 + 2,
                object: objects[i % objects.len()].clone(),
            })
        })
        .collect();
    let deque: VecDeque<Arc<Rec>> = records.iter().cloned().collect();
    group.bench_function("vecdeque-borrow", |b| {
        b.iter(|| {
            for r in &deque {
                black_box(r.rv);
                black_box(&r.object);
            }
        })
    });
    group.bench_function("vecdeque-clone", |b| {
        b.iter(|| {
            for r in &deque {
                black_box(Arc::clone(r));
            }
        })
    });
    group.bench_function("broadcast", |b| {
        b.iter_batched_ref(
            || {
                let (tx, rx) = tokio::sync::broadcast::channel::<Arc<Rec>>(REPLAY);
                for r in &records {
                    tx.send(r.clone()).expect("receiver alive");
                }
                (tx, rx)
            },
            |(_tx, rx)| {
                for _ in 0..REPLAY {
                    black_box(rx.try_recv().expect("caught up early"));
                }
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    append(&mut c);
    replay(&mut c);
    c.final_summary();
}
