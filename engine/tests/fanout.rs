//! The end-to-end check of the core invariant (docs/semantics.md §3.4): 100,000
//! changes from the writer fan out to 1,000 concurrently reading watchers with
//! mixed filters, start versions and indexes, some registered while the writer
//! runs. Every watcher's stream must equal what the sequential model says: in
//! order, no gap, no duplicate, no object its filter rejects; then exactly one
//! End.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::*;

const OBJECTS: u64 = 4_000;
const NAMESPACES: u64 = 50;
const NODES: u64 = 100;
const HISTORY: usize = 2_000;
const LIVE: usize = 98_000;
const LIST_RV: u64 = 1_000;
/// Live changes written at a paced rate before the writer goes flat out.
const PACED: usize = 20_000;

/// One watcher's plan: its filter (and a name for caching the model's
/// answer), its start, and whether it is created while the writer runs.
struct Plan {
    name: String,
    filter: ModelFilter,
    start: Start,
    during_writes: bool,
}

#[derive(Clone, Copy)]
enum Start {
    After(u64),
    /// Start at whatever the cache has when the watch is created.
    Now,
    Snapshot,
}

/// What a consumer task saw.
#[derive(Default)]
struct Received {
    count: AtomicUsize,
    snapshot_rv: OnceLock<u64>,
}

/// A consumer task: what it received and how its watch ended.
type Consumer = tokio::task::JoinHandle<(Vec<Got>, EndReason)>;

struct Got {
    kind: EventKind,
    rv: u64,
    object: Option<Object>,
    initial_events_end: bool,
}

fn plans(rng: &mut Rng, history_rvs: &[u64]) -> Vec<Plan> {
    let label_selectors = [
        "app=web,tier=a",
        "app in (api,db),tier=c",
        "app=cache,tier!=b",
        "app notin (web,api,db),tier in (a,b)",
        "tier=b,app!=cache,app!=web",
    ];
    let mut out = Vec::new();
    let mut push = |name: String, scope, labels: &str, fields: &str, rng: &mut Rng| {
        let start = match rng.below(10) {
            0 => Start::After(LIST_RV),
            1..=6 => Start::After(*rng.pick(history_rvs)),
            7 | 8 => Start::Now,
            _ => Start::Snapshot,
        };
        out.push(Plan {
            name,
            filter: ModelFilter {
                scope,
                labels: labels.parse().unwrap(),
                fields: fields.parse().unwrap(),
            },
            start,
            during_writes: rng.below(5) == 0,
        });
    };
    for _ in 0..10 {
        push("all".into(), KeyScope::All, "", "", rng);
    }
    for i in 0..150 {
        let sel = label_selectors[i % label_selectors.len()];
        push(format!("labels:{sel}"), KeyScope::All, sel, "", rng);
    }
    for i in 0..600u64 {
        let n = node(i % NODES);
        if i % 3 == 0 {
            push(
                format!("node+web:{n}"),
                KeyScope::All,
                "app=web",
                &format!("spec.nodeName={n}"),
                rng,
            );
        } else {
            push(
                format!("node:{n}"),
                KeyScope::All,
                "",
                &format!("spec.nodeName={n}"),
                rng,
            );
        }
    }
    for i in 0..100u64 {
        let ns = format!("ns-{}", i % NAMESPACES);
        push(format!("prefix:{ns}"), KeyScope::prefix(&ns), "", "", rng);
    }
    for i in 0..135u64 {
        let ns = format!("ns-{}", i % NAMESPACES);
        push(
            format!("field-ns:{ns}"),
            KeyScope::All,
            "",
            &format!("metadata.namespace={ns}"),
            rng,
        );
    }
    for _ in 0..5 {
        push(
            "field-not-node-3".into(),
            KeyScope::All,
            "app=db",
            "spec.nodeName!=node-3",
            rng,
        );
    }
    assert_eq!(out.len(), 1_000);
    out
}

/// The model's answer for one filter over all changes: (change index, kind).
fn stream_of(model: &Model, f: &ModelFilter) -> Vec<(u32, EventKind)> {
    model
        .changes
        .iter()
        .enumerate()
        .filter_map(|(i, (kind, _, obj, prev))| {
            verdict(f, *kind, obj, prev.as_ref()).map(|(k, _)| (i as u32, k))
        })
        .collect()
}

#[test]
fn changes_fan_out_to_a_thousand_watchers_exactly() {
    let mut rng = Rng::new(0x4E52_414C_4421);
    let mut live = BTreeMap::new();
    // The initial list.
    workload(
        &mut rng,
        0,
        OBJECTS as usize,
        OBJECTS,
        NAMESPACES,
        NODES,
        &mut live,
    );
    let base: Vec<Object> = live.values().cloned().collect();
    let changes = workload(
        &mut rng,
        LIST_RV,
        HISTORY + LIVE,
        OBJECTS + 500,
        NAMESPACES,
        NODES,
        &mut live,
    );
    let model = Model::new(LIST_RV, &base, &changes);
    let history_rvs: Vec<u64> = changes[..HISTORY]
        .iter()
        .map(|c| c.resource_version().get())
        .collect();
    let plans = plans(&mut rng, &history_rvs);

    let (engine, mut writer) = Engine::new(
        Config::default()
            .index("spec.nodeName")
            .history_bounds(100, 200_000)
            .history_window(Duration::from_secs(3600)),
    )
    .unwrap();
    writer
        .replace(Relist::new(base.iter().cloned(), LIST_RV.into()))
        .unwrap();
    for c in &changes[..HISTORY] {
        writer.apply(c.clone()).unwrap();
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let received: Vec<Arc<Received>> = plans.iter().map(|_| Arc::default()).collect();
    let mut starts: Vec<Option<u64>> = vec![None; plans.len()];
    let mut tasks: Vec<Option<Consumer>> = (0..plans.len()).map(|_| None).collect();

    let mut start_watch = |i: usize, engine: &Engine, starts: &mut Vec<Option<u64>>| {
        let plan = &plans[i];
        let req = plan.filter.request();
        let req = match plan.start {
            Start::After(rv) => {
                starts[i] = Some(rv);
                req.resource_version(Some(rv.into()))
            }
            Start::Now => {
                let rv = engine.resource_version().get();
                starts[i] = Some(rv);
                req.resource_version(Some(rv.into()))
            }
            Start::Snapshot => req
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true),
        };
        let mut w = engine.watch(req).unwrap();
        let rec = received[i].clone();
        // Half the watchers are read as streams, half through the
        // readiness calls (`poll_visit_batch`): a wake lost by either
        // stalls a watcher, and the liveness wait below fails.
        let by_readiness = i % 2 == 1;
        tasks[i] = Some(rt.spawn(async move {
            let mut got = Vec::new();
            let mut take = |ev: Event| {
                if ev.is_initial_events_end() {
                    let _ = rec.snapshot_rv.set(ev.resource_version().get());
                }
                got.push(Got {
                    kind: ev.kind(),
                    rv: ev.resource_version().get(),
                    initial_events_end: ev.is_initial_events_end(),
                    object: ev.into_object(),
                });
                rec.count.fetch_add(1, Ordering::Release);
            };
            if by_readiness {
                loop {
                    let visited = std::future::poll_fn(|cx| {
                        w.poll_visit_batch(cx, 64, |ev| take(ev.to_event()))
                    })
                    .await;
                    assert!(
                        visited.events > 0 || visited.end.is_some(),
                        "an empty Ready"
                    );
                    if let Some(reason) = visited.end {
                        assert!(w.is_finished());
                        assert!(w.next().await.is_none(), "nothing after the End");
                        return (got, reason);
                    }
                }
            }
            while let Some(item) = w.next().await {
                match item {
                    WatchItem::Event(ev) => take(ev),
                    WatchItem::End(reason) => {
                        assert!(w.next().await.is_none(), "nothing after the End");
                        return (got, reason);
                    }
                }
            }
            panic!("the stream ended without an End item");
        }));
    };

    let early: Vec<usize> = (0..plans.len())
        .filter(|&i| !plans[i].during_writes)
        .collect();
    for i in early {
        start_watch(i, &engine, &mut starts);
    }
    let live_changes = changes[HISTORY..].to_vec();
    // First paced, at a rate the consumers keep up with (the dispatcher
    // feeds them through their queues), then flat out (watchers fall
    // behind, park, and feed themselves from the ring).
    let writer_thread = std::thread::spawn(move || {
        for (i, c) in live_changes.into_iter().enumerate() {
            writer.apply(c).unwrap();
            if i < PACED && i % 10 == 0 {
                std::thread::sleep(Duration::from_millis(4));
            }
        }
        writer
    });
    // Register the rest while the writer runs.
    let late: Vec<usize> = (0..plans.len())
        .filter(|&i| plans[i].during_writes)
        .collect();
    for (n, &i) in late.iter().enumerate() {
        start_watch(i, &engine, &mut starts);
        if n % 20 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let _writer = writer_thread.join().unwrap();

    // The model's streams, one per distinct filter.
    let mut by_filter: HashMap<&str, Vec<(u32, EventKind)>> = HashMap::new();
    for p in &plans {
        by_filter
            .entry(p.name.as_str())
            .or_insert_with(|| stream_of(&model, &p.filter));
    }
    let first_after = |rv: u64| model.changes.partition_point(|c| c.1 <= rv) as u32;
    let expected_live = |i: usize, after: u64| -> &[(u32, EventKind)] {
        let s = &by_filter[plans[i].name.as_str()];
        let from = first_after(after);
        &s[s.partition_point(|(ci, _)| *ci < from)..]
    };

    // Wait (liveness) until every watcher has everything the model expects.
    let limit = Instant::now() + Duration::from_secs(120);
    for (i, plan) in plans.iter().enumerate() {
        let want = match plan.start {
            Start::Snapshot => {
                while received[i].snapshot_rv.get().is_none() {
                    assert!(Instant::now() < limit, "watcher {i}: no initial-events-end");
                    std::thread::sleep(Duration::from_millis(5));
                }
                let s = *received[i].snapshot_rv.get().unwrap();
                let initial = model
                    .state_at(s)
                    .values()
                    .filter(|(o, _)| plan.filter.admits(o))
                    .count();
                initial + 1 + expected_live(i, s).len()
            }
            _ => expected_live(i, starts[i].unwrap()).len(),
        };
        while received[i].count.load(Ordering::Acquire) < want {
            assert!(
                Instant::now() < limit,
                "watcher {i} ({}): {} of {want} events",
                plan.name,
                received[i].count.load(Ordering::Acquire)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    engine.stop();

    let mut total = 0usize;
    for (i, plan) in plans.iter().enumerate() {
        let (got, end) = rt.block_on(tasks[i].take().unwrap()).unwrap();
        assert_eq!(end, EndReason::EngineStopped, "watcher {i} ({})", plan.name);
        total += got.len();
        let mut got = got.iter().peekable();
        let after = match plan.start {
            Start::Snapshot => {
                let s = *received[i].snapshot_rv.get().unwrap();
                for (key, (obj, orv)) in model.state_at(s) {
                    if !plan.filter.admits(&obj) {
                        continue;
                    }
                    let g = got
                        .next()
                        .unwrap_or_else(|| panic!("watcher {i}: missing initial {key}"));
                    assert_eq!(
                        (g.kind, g.rv),
                        (EventKind::Added, orv),
                        "watcher {i} initial {key}"
                    );
                    assert_eq!(g.object.as_ref(), Some(&obj), "watcher {i} initial {key}");
                }
                let b = got.next().expect("the initial-events-end bookmark");
                assert!(b.kind == EventKind::Bookmark && b.initial_events_end && b.rv == s);
                s
            }
            _ => starts[i].unwrap(),
        };
        for (n, &(ci, kind)) in expected_live(i, after).iter().enumerate() {
            let (_, rv, obj, prev) = &model.changes[ci as usize];
            let want_obj = if kind == EventKind::Deleted {
                prev.as_ref().unwrap()
            } else {
                obj
            };
            let g = got.next().unwrap_or_else(|| {
                panic!(
                    "watcher {i} ({}): stream ends after {n} live events, missing rv {rv}",
                    plan.name
                )
            });
            assert_eq!(
                (g.kind, g.rv),
                (kind, *rv),
                "watcher {i} ({}), live event {n}",
                plan.name
            );
            assert_eq!(g.object.as_ref(), Some(want_obj), "watcher {i} rv {rv}");
            assert!(plan.filter.admits(want_obj));
        }
        assert!(
            got.next().is_none(),
            "watcher {i} ({}): extra events",
            plan.name
        );
    }
    // The workload really is a fan-out, not a trickle.
    assert!(total > 1_000_000, "only {total} events delivered");
    let stats = engine.stats();
    eprintln!("{total} events delivered; {stats:?}");
    assert_eq!(stats.changes_received as usize, HISTORY + LIVE);
    assert_eq!(stats.terminations.engine_stopped, 1_000);
}
