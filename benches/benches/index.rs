//! Group `index`: finding the watchers a change concerns by trigger value.
//!
//! A kubelet-shaped cluster: one watcher per node, each registered under
//! its `spec.nodeName` value; 1,000 changes to pods spread over the nodes
//! are each routed to their node's watchers. Throughput = 1,000 look-ups
//! (each finds one watcher). Both sides read the value from the same
//! `herald::Object` (`Object::field`, a binary search), so the groups
//! compare the maps alone.
//! - `herald`: the dispatcher's routing table (`Routes::for_each_candidate`,
//!   via the `internals` feature): a persistent hash map (`imbl`, ahash) of
//!   value -> `Arc`'d bucket, published through `ArcSwap` so registration
//!   never blocks dispatch. The candidate callback gets the watcher; the
//!   wrapper hands its id on, one pointer hop more than the peers.
//! - `ahash`: `ahash::AHashMap<String, Vec<usize>>`, the flat map a
//!   single-threaded router would use (no concurrent publication).
//! - `std`: the same with `std::collections::HashMap` (SipHash).
//!
//! Sizes: 1,000 and 10,000 nodes (Kubernetes supports 5,000).

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use herald::Object;
use herald::internals::Routes;

const FIELD: &str = "spec.nodeName";
const LOOKUPS: usize = 1_000;

fn index(c: &mut Criterion) {
    let mut group = c.benchmark_group("index/lookup");
    group.throughput(Throughput::Elements(LOOKUPS as u64));
    for nodes in [1_000usize, 10_000] {
        let node = |i: usize| format!("node-{i}");
        let mut routes = Routes::new(&[FIELD]);
        let mut ahash_map: ahash::AHashMap<String, Vec<usize>> = ahash::AHashMap::new();
        let mut std_map: HashMap<String, Vec<usize>> = HashMap::new();
        for i in 0..nodes {
            routes.insert(i as u64, Some((0, &node(i))));
            ahash_map.entry(node(i)).or_default().push(i);
            std_map.entry(node(i)).or_default().push(i);
        }
        let pods: Vec<Object> = (0..LOOKUPS)
            .map(|i| {
                Object::builder("default", &format!("pod-{i}"))
                    .label("app", "web")
                    .field(FIELD, &node(i * 7_919 % nodes))
                    .field("status.phase", "Running")
                    .build()
            })
            .collect();
        // Every look-up finds exactly its node's watcher, on every side.
        let mut found = 0;
        for p in &pods {
            routes.for_each_candidate(p, None, |_| found += 1);
        }
        assert_eq!(found, LOOKUPS);

        group.bench_with_input(BenchmarkId::new("herald", nodes), &pods, |b, pods| {
            b.iter(|| {
                let mut sum = 0u64;
                for p in pods {
                    routes.for_each_candidate(p, None, |id| sum += id);
                }
                black_box(sum)
            })
        });
        group.bench_with_input(BenchmarkId::new("ahash", nodes), &pods, |b, pods| {
            b.iter(|| {
                let mut sum = 0usize;
                for p in pods {
                    let v = p.field(FIELD).unwrap_or("");
                    if let Some(ids) = ahash_map.get(v) {
                        sum += ids.iter().sum::<usize>();
                    }
                }
                black_box(sum)
            })
        });
        group.bench_with_input(BenchmarkId::new("std", nodes), &pods, |b, pods| {
            b.iter(|| {
                let mut sum = 0usize;
                for p in pods {
                    let v = p.field(FIELD).unwrap_or("");
                    if let Some(ids) = std_map.get(v) {
                        sum += ids.iter().sum::<usize>();
                    }
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    index(&mut c);
    c.final_summary();
}
