//! The delivery invariant under random schedules (proptest): random writes,
//! progress, re-lists, watches (filters, indexes, start versions, initial
//! events) and reads interleaved on one thread while the dispatcher runs on
//! its own. Every watch's stream must be what a sequential model says: the
//! whole of it if the watch's generation is still current at the end,
//! otherwise a prefix followed by `Relisted` (or `EngineStopped`, when the
//! stop overtakes the dispatcher on its way to the re-list).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use herald::event::ChangeKind;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::*;
use proptest::prelude::*;

const FILTERS: [(&str, &str, &str); 8] = [
    // (scope prefix, labels, fields)
    ("", "", ""),
    ("", "app=a", ""),
    ("", "app in (a,b)", ""),
    ("", "", "spec.nodeName=n1"),
    ("", "app!=c", "spec.nodeName=n2"),
    ("x", "", ""),
    ("", "", "spec.nodeName!=n1"),
    ("y", "app=b", "spec.nodeName=n0"),
];

fn filter(i: usize) -> ModelFilter {
    let (prefix, labels, fields) = FILTERS[i % FILTERS.len()];
    ModelFilter {
        scope: KeyScope::prefix(prefix),
        labels: labels.parse().unwrap(),
        fields: fields.parse().unwrap(),
    }
}

fn object(key: u8, app: u8, node: u8) -> Object {
    let ns = if key % 2 == 0 { "x" } else { "y" };
    Object::builder(ns, &format!("k{key}"))
        .label("app", ["a", "b", "c"][app as usize % 3])
        .field("spec.nodeName", &format!("n{}", node % 4))
        .build()
}

#[derive(Debug, Clone)]
enum StartSpec {
    /// After the current version, minus a few (never before the list).
    Back(u8),
    /// A version the cache has not reached yet.
    Future(u8),
    /// The state, then an initial-events-end bookmark.
    Snapshot,
}

#[derive(Debug, Clone)]
enum Op {
    Apply {
        key: u8,
        app: u8,
        node: u8,
        delete: bool,
        gap: u8,
    },
    Progress {
        gap: u8,
    },
    Relist {
        objects: Vec<(u8, u8, u8)>,
        gap: u8,
    },
    Watch {
        filter: usize,
        start: StartSpec,
    },
    Read {
        watch: usize,
        max: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0..8u8, 0..3u8, 0..4u8, prop::bool::weighted(0.2), 1..3u8)
            .prop_map(|(key, app, node, delete, gap)| Op::Apply { key, app, node, delete, gap }),
        2 => (1..3u8).prop_map(|gap| Op::Progress { gap }),
        1 => (prop::collection::vec((0..8u8, 0..3u8, 0..4u8), 0..6), 0..2u8)
            .prop_map(|(objects, gap)| Op::Relist { objects, gap }),
        6 => (0..FILTERS.len(), prop_oneof![
                (0..6u8).prop_map(StartSpec::Back),
                (1..4u8).prop_map(StartSpec::Future),
                Just(StartSpec::Snapshot),
            ]).prop_map(|(filter, start)| Op::Watch { filter, start }),
        10 => (0..16usize, 1..20u8).prop_map(|(watch, max)| Op::Read { watch, max }),
    ]
}

/// The state after `rv` of one generation, with its snapshot events:
/// initial events, the initial-events-end bookmark, then later changes.
fn snapshot(g: &Model, f: &ModelFilter, rv: u64) -> Vec<Seen> {
    let mut out: Vec<Seen> = g
        .state_at(rv)
        .into_iter()
        .filter(|(_, (o, _))| f.admits(o))
        .map(|(key, (o, orv))| Seen {
            kind: EventKind::Added,
            rv: orv,
            key,
            object: Some(o),
            initial_events_end: false,
        })
        .collect();
    out.push(Seen {
        kind: EventKind::Bookmark,
        rv,
        key: String::new(),
        object: None,
        initial_events_end: true,
    });
    out.extend(g.changes_after(f, rv));
    out
}

struct Watcher {
    watch: Watch,
    filter: ModelFilter,
    generation: usize,
    /// `Some(r)`: changes after r; `None`: initial events first.
    after: Option<u64>,
    seen: Vec<Seen>,
    end: Option<EndReason>,
}

impl Watcher {
    fn take(&mut self, item: WatchItem) {
        assert!(self.end.is_none(), "an item after the End: {item:?}");
        match item {
            WatchItem::Event(ev) => self.seen.push(Seen::from_event(&ev)),
            WatchItem::End(reason) => self.end = Some(reason),
        }
    }

    /// What the model says this watcher sees, given the snapshot version it
    /// reported. A snapshot watch that ended before its bookmark reported
    /// none: then it is the snapshot at whichever version of its generation
    /// the events received are the start of (there is at least one if the
    /// engine is right), and `last_rv` bounds the search.
    fn expected(&self, gens: &[Model], last_rv: u64) -> Vec<Seen> {
        let g = &gens[self.generation];
        match self.after {
            Some(r) => g.changes_after(&self.filter, r),
            None => match self.seen.iter().find(|s| s.initial_events_end) {
                Some(b) => snapshot(g, &self.filter, b.rv),
                None => (g.base_rv..=last_rv)
                    .map(|s| snapshot(g, &self.filter, s))
                    .find(|exp| exp.starts_with(&self.seen))
                    .unwrap_or_default(),
            },
        }
    }
}

/// Cases made so far: every other one runs with inline dispatch.
static CASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let inline = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1;
    let (engine, mut writer) = Engine::new(
        Config::default()
            .inline_dispatch(inline)
            .index("spec.nodeName")
            .history_bounds(4, 100_000)
            .too_large_timeout(Duration::from_secs(600)),
    )
    .unwrap();
    let mut rv = 10u64;
    writer.replace(Relist::new([], rv.into())).unwrap();
    let mut gens = vec![Model::new(rv, &[], &[])];
    let mut state: BTreeMap<String, Object> = BTreeMap::new();
    let mut watchers: Vec<Watcher> = Vec::new();

    for op in ops {
        match op {
            Op::Apply {
                key,
                app,
                node,
                delete,
                gap,
            } => {
                rv += gap as u64;
                let obj = object(key, app, node);
                let prev = state.get(obj.key()).cloned();
                let change = match (&prev, delete) {
                    (Some(p), true) => Change::deleted(p.clone(), rv.into()),
                    (Some(_), false) => Change::modified(obj, rv.into()),
                    (None, _) => Change::added(obj, rv.into()),
                };
                let o = change.object().clone();
                let g = gens.last_mut().unwrap();
                if change.kind() == ChangeKind::Deleted {
                    state.remove(o.key());
                } else {
                    state.insert(o.key().to_owned(), o.clone());
                }
                g.changes.push((change.kind(), rv, o, prev));
                writer.apply(change).unwrap();
            }
            Op::Progress { gap } => {
                rv += gap as u64;
                writer.progress(rv.into()).unwrap();
            }
            Op::Relist { objects, gap } => {
                rv += gap as u64;
                let objects: Vec<Object> = objects
                    .into_iter()
                    .map(|(k, a, n)| object(k, a, n))
                    .collect();
                state = objects
                    .iter()
                    .map(|o| (o.key().to_owned(), o.clone()))
                    .collect();
                gens.push(Model::new(rv, &objects, &[]));
                writer.replace(Relist::new(objects, rv.into())).unwrap();
            }
            Op::Watch { filter: fi, start } => {
                let f = filter(fi);
                let list_rv = gens.last().unwrap().base_rv;
                let (req, after) = match start {
                    StartSpec::Back(b) => {
                        let r = rv.saturating_sub(b as u64).max(list_rv);
                        (f.request().resource_version(Some(r.into())), Some(r))
                    }
                    StartSpec::Future(d) => {
                        let r = rv + d as u64;
                        (f.request().resource_version(Some(r.into())), Some(r))
                    }
                    StartSpec::Snapshot => (
                        f.request()
                            .send_initial_events(true)
                            .resource_version_match(ResourceVersionMatch::NotOlderThan)
                            .allow_bookmarks(true),
                        None,
                    ),
                };
                watchers.push(Watcher {
                    watch: engine.watch(req).unwrap(),
                    filter: f,
                    generation: gens.len() - 1,
                    after,
                    seen: Vec::new(),
                    end: None,
                });
            }
            Op::Read { watch, max } => {
                if watchers.is_empty() {
                    continue;
                }
                let n = watchers.len();
                let w = &mut watchers[watch % n];
                for _ in 0..max {
                    match w.watch.try_recv() {
                        Ok(item) => w.take(item),
                        Err(_) => break,
                    }
                }
            }
        }
    }

    // Drain the current generation's watchers to what the model expects.
    let current = gens.len() - 1;
    let limit = Instant::now() + Duration::from_secs(30);
    for w in watchers.iter_mut().filter(|w| w.generation == current) {
        loop {
            let want = w.expected(&gens, rv).len();
            let waiting_for_snapshot = w.after.is_none() && want == 0;
            if (!waiting_for_snapshot && w.seen.len() >= want) || w.end.is_some() {
                break;
            }
            // A watch from a version the cache never reached has nothing.
            if w.after.is_some_and(|r| r > rv) {
                break;
            }
            let left = limit.saturating_duration_since(Instant::now());
            match w.watch.recv_timeout(left) {
                Ok(item) => w.take(item),
                Err(e) => prop_assert!(false, "stalled at {} of {want}: {e}", w.seen.len()),
            }
        }
    }
    engine.stop();
    for (i, w) in watchers.iter_mut().enumerate() {
        while w.end.is_none() {
            match w.watch.recv_timeout(Duration::from_secs(30)) {
                Ok(item) => w.take(item),
                Err(e) => prop_assert!(false, "watch {i}: no End: {e}"),
            }
        }
        let expected = w.expected(&gens, rv);
        let end = w.end.clone().unwrap();
        prop_assert!(
            w.seen.len() <= expected.len() && w.seen[..] == expected[..w.seen.len()],
            "watch {i} (gen {}, after {:?}, {:?}): got {:?}\nexpected {:?}",
            w.generation,
            w.after,
            w.filter,
            w.seen,
            expected
        );
        if w.generation == current {
            prop_assert_eq!(&end, &EndReason::EngineStopped, "watch {}", i);
            prop_assert_eq!(w.seen.len(), expected.len(), "watch {} incomplete", i);
        } else {
            // Told of the re-list, unless the stop overtook the dispatcher
            // on its way to the re-list marker: both are true reasons.
            prop_assert!(
                matches!(end, EndReason::Relisted | EndReason::EngineStopped),
                "watch {}: {:?}",
                i,
                end
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 128 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_watch_sees_what_the_model_says(ops in prop::collection::vec(op(), 1..200)) {
        run(ops)?;
    }
}
