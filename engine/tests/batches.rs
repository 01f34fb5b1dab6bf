//! `Writer::apply_batch`: one writer lock and one clock reading per run of
//! changes (`Shared::write_many`), not per change. A batch must still be
//! exactly the single applies it stands for: the same events, previous
//! objects and states, the same refusals at the same change, the same
//! counters; across runs, across the dispatcher's gate (a ring too small
//! for the batch), and with a deletion of a key never held inside a run.

mod common;

use std::collections::BTreeMap;

use common::*;
use herald::event::ChangeKind;
use herald::read::{ListRequest, ReadAt};
use herald::selector::KeyScope;
use herald::stats::Stats;
use herald::writer::WriteError;
use herald::*;
use herald_testkit::pod;

fn filters() -> Vec<ModelFilter> {
    let f = ModelFilter::parse;
    vec![
        ModelFilter::everything(),
        f(KeyScope::All, "app=web", ""),
        f(KeyScope::All, "", "spec.nodeName=node-1"),
        f(KeyScope::prefix("ns-0"), "tier in (db,cache)", ""),
    ]
}

/// Applies `changes` in batches of `batch` (more than a run, and not a
/// multiple of one) to an engine listed with `base` at `base_rv`, with (if
/// `watch`) a watch per filter from the list's version; checks every
/// watch's events (kind, version, key, object) against the model, the
/// states at a few versions against the model's, and the counters.
/// Returns the engine's stats.
fn check_batches(
    config: Config,
    base: &[Object],
    base_rv: u64,
    changes: &[Change],
    batch: usize,
    watch: bool,
) -> Stats {
    let (engine, mut writer) = Engine::new(config).unwrap();
    writer
        .replace(Relist::new(base.iter().cloned(), base_rv.into()))
        .unwrap();
    let model = Model::new(base_rv, base, changes);
    let filters = if watch { filters() } else { Vec::new() };
    let mut watches: Vec<Watch> = filters
        .iter()
        .map(|f| {
            engine
                .watch(f.request().resource_version(Some(base_rv.into())))
                .unwrap()
        })
        .collect();
    let consumers: Vec<_> = watches
        .drain(..)
        .zip(&filters)
        .map(|(mut w, f)| {
            let want = model.changes_after(f, base_rv);
            std::thread::spawn(move || {
                let (seen, end) = recv_events(&mut w, want.len());
                assert_eq!(end, None);
                assert_eq!(seen.len(), want.len());
                for (i, (s, m)) in seen.iter().zip(&want).enumerate() {
                    assert_eq!(s, m, "event {i}");
                }
                assert_quiet(&mut w);
            })
        })
        .collect();
    for chunk in changes.chunks(batch) {
        writer.apply_batch(chunk.iter().cloned()).unwrap();
    }
    for c in consumers {
        c.join().unwrap();
    }
    let last = changes
        .last()
        .map_or(base_rv, |c| c.resource_version().get());
    assert_eq!(engine.resource_version().get(), last);
    // The state at a few versions, each read exactly from the history.
    let stats = engine.stats();
    let oldest = last.saturating_sub(stats.ring_len);
    for rv in [last, last - (last - base_rv) / 3, oldest.max(base_rv)] {
        let Ok(at) = engine.list(&ListRequest::new().at(ReadAt::Exact(rv.into()))) else {
            continue; // out of a small ring's history
        };
        let got: BTreeMap<String, Object> = at
            .items
            .iter()
            .map(|i| (i.object.key().to_owned(), i.object.clone()))
            .collect();
        let want: BTreeMap<String, Object> = model
            .state_at(rv)
            .into_iter()
            .map(|(k, (o, _))| (k, o))
            .collect();
        assert_eq!(got, want, "the state at {rv}");
    }
    let recorded = model
        .changes
        .iter()
        .filter(|(kind, _, _, prev)| *kind != ChangeKind::Deleted || prev.is_some())
        .count() as u64;
    assert_eq!(stats.changes_received, recorded);
    assert_eq!(stats.progress_updates, changes.len() as u64 - recorded);
    stats
}

fn workload_with_unknown_deletions(seed: u64, n: usize) -> (Vec<Object>, Vec<Change>) {
    let mut rng = Rng::new(seed);
    let mut live = BTreeMap::new();
    // Fills `live`: the objects listed first.
    workload(&mut rng, 0, 50, 60, 3, 4, &mut live);
    let base: Vec<Object> = live.values().cloned().collect();
    let mut changes = workload(&mut rng, 1_000, n, 120, 3, 4, &mut live);
    // A deletion of a key never held, inside what will be a run: progress,
    // no event, no record. Versions stay increasing: take the next one's
    // place and push the rest up.
    let at = n / 2;
    let rv = changes[at].resource_version().get();
    let ghost = pod("ns-0", "ghost")
        .app("web")
        .label("tier", "db")
        .node("node-1")
        .version(0)
        .build();
    let mut out = Vec::with_capacity(n + 1);
    for (i, c) in changes.drain(..).enumerate() {
        let shift = u64::from(i >= at);
        if i == at {
            out.push(Change::deleted(ghost.clone(), rv.into()));
        }
        let r = c.resource_version().get() + shift;
        out.push(Change::new(c.kind(), c.object().clone(), r.into()));
    }
    (base, out)
}

#[test]
fn batches_longer_than_a_run_are_the_single_applies_they_stand_for() {
    let (base, changes) = workload_with_unknown_deletions(7, 2_000);
    // 150: two whole runs of 64 and a part of one per batch.
    check_batches(
        Config::default().index("spec.nodeName"),
        &base,
        1_000,
        &changes,
        150,
        true,
    );
}

#[test]
fn a_batch_through_a_ring_too_small_for_it_waits_for_the_dispatcher() {
    // The smallest ring, and one batch of 5,000: the dispatcher is woken
    // after a batch, so within it the writer fills the ring's slots and
    // meets the gate (it waits without the lock, which wakes the
    // dispatcher, and retries the same change). No watch: one could not
    // keep up with so small a history (it would end `Gone`).
    let (base, changes) = workload_with_unknown_deletions(11, 5_000);
    let config = Config::default().history_bounds(1, 1);
    let stats = check_batches(config, &base, 1_000, &changes, 5_001, false);
    assert!(stats.writer_gated_waits > 0, "{stats:?}");
}

#[test]
fn a_refused_change_stops_the_batch_where_single_applies_would() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let obj = |i: u64| Object::builder("ns", &format!("o{}", i % 10)).build();
    // 100 changes in order, then one out of order, then more: the batch
    // stops at the 101st, past the first run.
    let mut changes: Vec<Change> = (0..100)
        .map(|i| Change::modified(obj(i), (i + 2).into()))
        .collect();
    changes.push(Change::modified(obj(100), 50.into()));
    changes.extend((0..30).map(|i| Change::modified(obj(i), (i + 200).into())));
    let err = writer.apply_batch(changes).unwrap_err();
    assert_eq!(err.applied, 100);
    assert_eq!(
        err.error,
        WriteError::OutOfOrder {
            given: 50.into(),
            current: 101.into()
        }
    );
    assert_eq!(engine.resource_version().get(), 101);
    assert_eq!(engine.stats().changes_received, 100);
    // An invalid name, in the middle of a later run: the same.
    let mut changes: Vec<Change> = (0..70)
        .map(|i| Change::modified(obj(i), (i + 300).into()))
        .collect();
    changes.push(Change::added(
        Object::builder("ns", "a/b").build(),
        400.into(),
    ));
    changes.push(Change::modified(obj(1), 401.into()));
    let err = writer.apply_batch(changes).unwrap_err();
    assert_eq!(err.applied, 70);
    assert!(
        matches!(err.error, WriteError::InvalidName { .. }),
        "{:?}",
        err.error
    );
    assert_eq!(engine.resource_version().get(), 369);
    // An empty batch is no write, and the writer goes on.
    writer.apply_batch([]).unwrap();
    writer
        .apply_batch([Change::modified(obj(1), 500.into())])
        .unwrap();
    assert_eq!(engine.resource_version().get(), 500);
    assert_eq!(engine.stats().changes_received, 171);
}
