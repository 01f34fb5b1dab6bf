//! Group `write`: the writer's path, one change at a time and in
//! batches, with no watcher (the dispatcher thread only moves its cursor),
//! so the figure is the cost of taking a change in: its previous state
//! from the store, a history record, the store's update.
//!
//! A kubelet-shaped stream: 1,000 pods, one per node, each carrying its
//! `spec.nodeName` (an indexed field), modified round robin with a 64-byte
//! payload. The objects are built before the timing and cloned into each
//! change (an `Arc` clone), so the groups compare the writes alone.
//! - `herald-apply`: `Writer::apply` per change (a dispatcher wake-up
//!   each, when it sleeps).
//! - `herald-apply-batch-64`: `Writer::apply_batch` of 64 changes (one
//!   wake-up per batch), as the C ABI's and Go's `ApplyBatch` do.
//! - `mutex-btreemap`: what a plain cache does under one lock, the shape
//!   of the reference's `watchCache.processEvent`: look up the previous
//!   object, push the change (object and previous) on a bounded
//!   `VecDeque` (102,400, the reference's upper bound), update a
//!   `BTreeMap`; no snapshot for readers, no dispatcher.
//!
//! Throughput = 64,000 changes per iteration.

use std::collections::{BTreeMap, VecDeque};
use std::hint::black_box;
use std::sync::Mutex;

use criterion::{Criterion, Throughput};
use herald::{Change, Config, Engine, Object, Relist, ResourceVersion, Writer};
use herald_testkit::lock;

const PODS: usize = 1_000;
const CHANGES: usize = 64_000;
const BATCH: usize = 64;
const HISTORY: usize = 102_400;

fn pods() -> Vec<Object> {
    (0..PODS)
        .map(|i| {
            Object::builder("default", &format!("pod-{i}"))
                .field("spec.nodeName", &format!("node-{i}"))
                .payload(vec![7u8; 64])
                .build()
        })
        .collect()
}

fn engine(pods: &[Object]) -> (Engine, Writer) {
    let (engine, mut writer) =
        Engine::new(Config::default().index("spec.nodeName")).expect("a valid config");
    writer
        .replace(Relist::new(pods.iter().cloned(), ResourceVersion::new(1)))
        .expect("the first list");
    (engine, writer)
}

fn write(c: &mut Criterion) {
    let pods = pods();
    let mut group = c.benchmark_group("write");
    group.throughput(Throughput::Elements(CHANGES as u64));

    let (_engine, mut writer) = engine(&pods);
    let mut rv = 1u64;
    group.bench_function("herald-apply", |b| {
        b.iter(|| {
            for k in 0..CHANGES {
                rv += 1;
                let change = Change::modified(pods[k % PODS].clone(), ResourceVersion::new(rv));
                writer.apply(change).expect("in order");
            }
        })
    });

    let (_engine, mut writer) = engine(&pods);
    let mut rv = 1u64;
    group.bench_function("herald-apply-batch-64", |b| {
        b.iter(|| {
            for start in (0..CHANGES).step_by(BATCH) {
                let batch = (start..start + BATCH).map(|k| {
                    rv += 1;
                    Change::modified(pods[k % PODS].clone(), ResourceVersion::new(rv))
                });
                writer.apply_batch(batch).expect("in order");
            }
        })
    });

    struct Plain {
        store: BTreeMap<String, Object>,
        history: VecDeque<(u64, Object, Option<Object>)>,
    }
    let plain = Mutex::new(Plain {
        store: pods
            .iter()
            .map(|p| (p.key().to_owned(), p.clone()))
            .collect(),
        history: VecDeque::with_capacity(HISTORY),
    });
    let mut rv = 1u64;
    group.bench_function("mutex-btreemap", |b| {
        b.iter(|| {
            for k in 0..CHANGES {
                rv += 1;
                let object = pods[k % PODS].clone();
                let mut p = lock(&plain);
                let prev = p.store.get(object.key()).cloned();
                if p.history.len() == HISTORY {
                    p.history.pop_front();
                }
                p.history.push_back((rv, object.clone(), prev));
                match p.store.get_mut(object.key()) {
                    Some(slot) => *slot = object,
                    None => {
                        p.store.insert(object.key().to_owned(), object);
                    }
                }
                drop(black_box(p));
            }
        })
    });
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    write(&mut c);
    c.final_summary();
}
