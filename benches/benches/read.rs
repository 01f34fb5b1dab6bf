//! Group `read`: reads from the cache, 10,000 pods over 100 nodes (100 per
//! node), and 1,000 changes applied after the list (so the history window
//! holds them and the published view is up to 31 changes behind).
//!
//! - `list-all`: every object (`Throughput::Elements(10,000)`).
//!   - `herald`: `Engine::list` at `ReadAt::Any`: the published view, the
//!     records after it replayed onto a clone (O(1) clone, O(log n) each),
//!     then a walk cloning each object (`Arc`) into the answer.
//!   - `herald-exact-500-back`: the same at the version 500 changes back:
//!     500 changes undone on the clone first.
//!   - `rwlock-btreemap`: the idiomatic peer, a `parking_lot`-free
//!     `std::sync::RwLock<BTreeMap<String, (Arc<Pod>, u64)>>`: read-lock,
//!     clone every entry into a `Vec`. No history, no versions.
//! - `list-by-node`: the 100 pods of one node
//!   (`Throughput::Elements(100)`).
//!   - `herald-indexed`: `spec.nodeName=node-7` on an engine with that
//!     index: the index's key set, then one look-up per key.
//!   - `herald-scan`: the same selector on an engine without the index: a
//!     walk over all 10,000 with the filter.
//!   - `rwlock-index`: the peer with a `HashMap<node, BTreeSet<key>>`
//!     beside its map, under the same lock.
//! - `get`: one object by key (`Throughput::Elements(1)`).
//!   - `herald`: `Engine::get` at `ReadAt::Any` (the view's map, after a
//!     scan of the records after it for that key).
//!   - `rwlock-btreemap`: read-lock, look up, clone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hint::black_box;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use criterion::{Criterion, Throughput};
use herald::read::{ListRequest, ReadAt};
use herald::{Change, Config, Engine, Object, Relist, Writer};

const PODS: u64 = 10_000;
const NODES: u64 = 100;
const CHANGES: u64 = 1_000;
const LIST_RV: u64 = 1;

fn pod(i: u64, version: u64) -> Object {
    herald_testkit::pod("default", &format!("pod-{i:05}"))
        .app("web")
        .node(&format!("node-{}", i % NODES))
        .payload(format!("version {version}"))
        .build()
}

/// An engine holding the pods, the changes applied after the list.
fn engine(indexed: bool) -> (Engine, Writer) {
    let mut config = Config::default()
        .history_bounds(2_048, 2_048)
        .history_window(Duration::from_secs(3600));
    if indexed {
        config = config.list_index("spec.nodeName");
    }
    let (engine, mut writer) = Engine::new(config).expect("config");
    writer
        .replace(Relist::new((0..PODS).map(|i| pod(i, 0)), LIST_RV.into()))
        .expect("list");
    for c in 0..CHANGES {
        let i = (c * 7_919) % PODS;
        writer
            .apply(Change::modified(pod(i, c + 1), (LIST_RV + 1 + c).into()))
            .expect("change");
    }
    (engine, writer)
}

/// The peer's objects: key -> (object, version).
type PeerMap = BTreeMap<String, (Arc<Object>, u64)>;
/// The peer's index: node -> keys.
type PeerIndex = HashMap<String, BTreeSet<String>>;

/// The peer: a map and a node index under one `RwLock`.
struct Peer {
    inner: RwLock<(PeerMap, PeerIndex)>,
}

impl Peer {
    fn new() -> Peer {
        let mut map = BTreeMap::new();
        let mut by_node: HashMap<String, BTreeSet<String>> = HashMap::new();
        for i in 0..PODS {
            let p = pod(i, 0);
            by_node
                .entry(p.field("spec.nodeName").unwrap_or("").to_owned())
                .or_default()
                .insert(p.key().to_owned());
            map.insert(p.key().to_owned(), (Arc::new(p), LIST_RV));
        }
        Peer {
            inner: RwLock::new((map, by_node)),
        }
    }
}

fn read(c: &mut Criterion) {
    let (herald, _w1) = engine(true);
    let (unindexed, _w2) = engine(false);
    let peer = Peer::new();
    let back_500 = ReadAt::Exact((LIST_RV + CHANGES - 500).into());

    let mut group = c.benchmark_group("read/list-all");
    group.throughput(Throughput::Elements(PODS));
    group.bench_function("herald", |b| {
        b.iter(|| black_box(herald.list(&ListRequest::new()).expect("list").items.len()))
    });
    group.bench_function("herald-exact-500-back", |b| {
        let req = ListRequest::new().at(back_500);
        b.iter(|| black_box(herald.list(&req).expect("list").items.len()))
    });
    group.bench_function("rwlock-btreemap", |b| {
        b.iter(|| {
            let g = peer.inner.read().expect("lock");
            let items: Vec<(Arc<Object>, u64)> = g.0.values().cloned().collect();
            black_box(items.len())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("read/list-by-node");
    group.throughput(Throughput::Elements(PODS / NODES));
    let by_node = ListRequest::new().fields("spec.nodeName=node-7".parse().expect("selector"));
    group.bench_function("herald-indexed", |b| {
        b.iter(|| black_box(herald.list(&by_node).expect("list").items.len()))
    });
    group.bench_function("herald-scan", |b| {
        b.iter(|| black_box(unindexed.list(&by_node).expect("list").items.len()))
    });
    group.bench_function("rwlock-index", |b| {
        b.iter(|| {
            let g = peer.inner.read().expect("lock");
            let items: Vec<(Arc<Object>, u64)> =
                g.1.get("node-7")
                    .into_iter()
                    .flatten()
                    .filter_map(|k| g.0.get(k).cloned())
                    .collect();
            black_box(items.len())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("read/get");
    group.throughput(Throughput::Elements(1));
    group.bench_function("herald", |b| {
        b.iter(|| {
            black_box(
                herald
                    .get("default/pod-04242", ReadAt::Any)
                    .expect("get")
                    .item
                    .is_some(),
            )
        })
    });
    group.bench_function("rwlock-btreemap", |b| {
        b.iter(|| {
            let g = peer.inner.read().expect("lock");
            black_box(g.0.get("default/pod-04242").cloned().is_some())
        })
    });
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    read(&mut c);
    c.final_summary();
}
