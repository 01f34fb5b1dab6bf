//! Group `dispatch`: fan-out of changes to 1,000 watchers that all admit
//! every change. Throughput = 64 changes x 1,000 watchers = 64,000
//! deliveries per iteration.
//!
//! - `herald`: through the public API. One iteration applies 64 changes
//!   with `Writer::apply`, then drains every watch with `Watch::visit_batch`
//!   (borrowed events) until each has received all 64. The engine fans out
//!   on its own dispatcher thread, so an iteration includes the hand-off
//!   to that thread and back (the drain overlaps the dispatcher's work, on
//!   the machine's other core), the dispatcher's routing and verdicts, its
//!   pushes into 1,000 SPSC queues and each watch's pops and ring reads.
//!   Queues hold 100 handles (a ring of 8,192), so no watcher is parked.
//! - `herald-fanout-then-drain`: the same, but the drain starts only once
//!   the dispatcher has fanned out all 64 changes (polling
//!   `Engine::stats`), as the single-threaded peers below send everything
//!   before receiving anything: no overlap, and no contention on the
//!   queues' cache lines between the dispatcher and the drain.
//! - `crossbeam-channel`: what a hand-rolled cache does: one
//!   `crossbeam_channel::bounded(100)` queue of `Arc<Event>` per watcher;
//!   each change is wrapped in an `Arc` once and sent (a clone) to all
//!   1,000 queues, then every queue is drained with `try_recv`. One thread,
//!   so no hand-off at all (the engine's round has one).
//! - `tokio-broadcast`: `tokio::sync::broadcast` (capacity 128) with 1,000
//!   receivers: 64 sends, then every receiver `try_recv`s its 64 (each an
//!   `Arc` clone). One thread too.
//!
//! No `base` entry: the harness's own work per iteration (64 `Change`s, a
//! loop over 1,000 counters) is under 0.1% of 64,000 deliveries.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, SamplingMode, Throughput};
use herald::{Change, Config, Engine, Object, Relist, WatchRequest};

const WATCHERS: usize = 1_000;
/// Changes per iteration.
const K: usize = 64;

/// What the peers deliver: a change, shared by every watcher.
#[derive(Debug)]
struct Ev {
    rv: u64,
    object: Object,
}

fn pods() -> Vec<Object> {
    (0..1_000)
        .map(|i| {
            Object::builder("default", &format!("web-{i}"))
                .label("app", "web")
                .field("spec.nodeName", &format!("node-{}", i % 100))
                .build()
        })
        .collect()
}

fn dispatch(c: &mut Criterion) {
    let objects = pods();
    let mut group = c.benchmark_group("dispatch/1000-watchers");
    group.throughput(Throughput::Elements((K * WATCHERS) as u64));
    // Iterations take milliseconds: equal-sized samples, fewer of them.
    group.sampling_mode(SamplingMode::Flat).sample_size(20);

    {
        let (engine, mut writer) =
            Engine::new(Config::default().history_bounds(8_192, 8_192)).expect("config");
        writer
            .replace(Relist::new(objects.iter().cloned(), 1.into()))
            .expect("list");
        let mut watches: Vec<_> = (0..WATCHERS)
            .map(|_| {
                engine
                    .watch(WatchRequest::new().resource_version(Some(1.into())))
                    .expect("watch")
            })
            .collect();
        while engine.stats().watchers_active < WATCHERS as u64 {
            std::thread::yield_now();
        }
        // Records the dispatcher has fanned out before the first change:
        // the initial list's.
        let listed = loop {
            match engine.stats().changes_dispatched {
                0 => std::thread::yield_now(),
                n => break n,
            }
        };
        let mut rv = 1u64;
        let mut got = vec![0usize; WATCHERS];
        for (name, fan_out_first) in [("herald", false), ("herald-fanout-then-drain", true)] {
            group.bench_function(name, |b| {
                b.iter(|| {
                    for _ in 0..K {
                        rv += 1;
                        let obj = &objects[rv as usize % objects.len()];
                        writer
                            .apply(Change::modified(obj.clone(), rv.into()))
                            .expect("apply");
                    }
                    if fan_out_first {
                        // Changes 2..=rv, all dispatched.
                        while engine.stats().changes_dispatched < listed + rv - 1 {
                            std::thread::yield_now();
                        }
                    }
                    got.fill(0);
                    let mut done = 0;
                    while done < WATCHERS {
                        for (w, n) in watches.iter_mut().zip(&mut got) {
                            if *n < K {
                                *n += w
                                    .visit_batch(K - *n, |ev| {
                                        black_box(ev.resource_version());
                                    })
                                    .events;
                                done += usize::from(*n == K);
                            }
                        }
                    }
                })
            });
        }
        assert_eq!(engine.stats().parks, 0, "no watcher fell behind");
        engine.stop();
    }

    {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..WATCHERS)
            .map(|_| crossbeam_channel::bounded::<Arc<Ev>>(100))
            .unzip();
        let mut rv = 1u64;
        group.bench_function("crossbeam-channel", |b| {
            b.iter(|| {
                for _ in 0..K {
                    rv += 1;
                    let ev = Arc::new(Ev {
                        rv,
                        object: objects[rv as usize % objects.len()].clone(),
                    });
                    for tx in &txs {
                        tx.try_send(ev.clone()).expect("room");
                    }
                }
                for rx in &rxs {
                    for _ in 0..K {
                        let ev = rx.try_recv().expect("sent");
                        black_box((ev.rv, &ev.object));
                    }
                }
            })
        });
    }

    {
        let (tx, _) = tokio::sync::broadcast::channel::<Arc<Ev>>(128);
        let mut rxs: Vec<_> = (0..WATCHERS).map(|_| tx.subscribe()).collect();
        let mut rv = 1u64;
        group.bench_function("tokio-broadcast", |b| {
            b.iter(|| {
                for _ in 0..K {
                    rv += 1;
                    let ev = Arc::new(Ev {
                        rv,
                        object: objects[rv as usize % objects.len()].clone(),
                    });
                    tx.send(ev).expect("receivers");
                }
                for rx in &mut rxs {
                    for _ in 0..K {
                        let ev = rx.try_recv().expect("sent");
                        black_box((ev.rv, &ev.object));
                    }
                }
            })
        });
    }
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    dispatch(&mut c);
    c.final_summary();
}
