//! `Engine::drain`: every open watch gets what was dispatched, a bookmark
//! at that point if it allows bookmarks, and ends `Drained`; a watch again
//! from the last version seen continues the history with nothing missed
//! or repeated, while the writer goes on.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use common::*;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str, even: bool) -> Object {
    Object::builder("ns", name)
        .label("even", if even { "yes" } else { "no" })
        .build()
}

/// The events a watch sees up to its end, and the version it resumes from
/// (its last event's or bookmark's).
fn until_drained(w: &mut Watch) -> (Vec<Seen>, u64) {
    let (seen, end) = recv_to_end(w);
    assert_eq!(end, EndReason::Drained);
    let last = seen.last().map_or(0, |s| s.rv);
    (seen, last)
}

#[test]
fn a_drained_watch_ends_after_a_bookmark_at_what_was_dispatched() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer
        .replace(Relist::new([obj("a", true)], 5.into()))
        .unwrap();
    let mut marked = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(5.into()))
                .allow_bookmarks(true),
        )
        .unwrap();
    let mut plain = engine
        .watch(WatchRequest::new().resource_version(Some(5.into())))
        .unwrap();
    let mut even = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(5.into()))
                .labels("even=yes".parse().unwrap())
                .allow_bookmarks(true),
        )
        .unwrap();
    // Waiting for a version the cache has not reached: ends at once.
    let mut ahead = engine
        .watch(WatchRequest::new().resource_version(Some(100.into())))
        .unwrap();
    eventually("four registered", || {
        engine.stats().watchers_active + engine.stats().watchers_pending == 4
    });
    writer
        .apply(Change::added(obj("b", false), 6.into()))
        .unwrap();
    writer
        .apply(Change::added(obj("c", true), 7.into()))
        .unwrap();
    assert!(engine.drain());

    let (seen, last) = until_drained(&mut marked);
    let kinds: Vec<_> = seen.iter().map(|s| (s.kind, s.rv)).collect();
    assert_eq!(
        kinds,
        [
            (EventKind::Added, 6),
            (EventKind::Added, 7),
            (EventKind::Bookmark, 7)
        ]
    );
    assert_eq!(last, 7);
    let (seen, _) = until_drained(&mut plain);
    assert_eq!(seen.iter().map(|s| s.rv).collect::<Vec<_>>(), [6, 7]);
    // The selective watch's bookmark carries the dispatched version, past
    // its own last event.
    let (seen, last) = until_drained(&mut even);
    let kinds: Vec<_> = seen.iter().map(|s| (s.kind, s.rv)).collect();
    assert_eq!(kinds, [(EventKind::Added, 7), (EventKind::Bookmark, 7)]);
    assert_eq!(last, 7);
    let (seen, _) = until_drained(&mut ahead);
    assert!(seen.is_empty(), "{seen:?}");

    // The engine goes on: a watch made now is served, and not drained.
    let mut after = engine
        .watch(WatchRequest::new().resource_version(Some(7.into())))
        .unwrap();
    writer
        .apply(Change::added(obj("d", true), 8.into()))
        .unwrap();
    let (seen, end) = recv_events(&mut after, 1);
    assert_eq!((seen[0].rv, end), (8, None));
    let stats = engine.stats();
    assert_eq!((stats.drains, stats.terminations.drained), (1, 4));
    engine.stop();
    assert!(!engine.drain(), "a stopped engine drains nothing");
}

/// A watch from the current state whose consumer begins only after the
/// drain: its snapshot is taken then, past the drain's bookmark, which it
/// drops (a bookmark below what the snapshot holds says nothing); it gets
/// the state and ends `Drained`.
#[test]
fn a_snapshot_begun_after_the_drain_drops_the_bookmark() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer
        .replace(Relist::new([obj("a", true)], 5.into()))
        .unwrap();
    let mut late = engine
        .watch(WatchRequest::new().allow_bookmarks(true))
        .unwrap();
    writer
        .apply(Change::added(obj("b", false), 6.into()))
        .unwrap();
    // Taken up after the registration (one control queue, in order).
    assert!(engine.drain());
    eventually("the drain taken up", || engine.stats().drains == 1);
    writer
        .apply(Change::added(obj("c", true), 7.into()))
        .unwrap();
    let (seen, _) = until_drained(&mut late);
    let kinds: Vec<_> = seen.iter().map(|s| (s.kind, s.rv)).collect();
    assert_eq!(
        kinds,
        [
            (EventKind::Added, 5),
            (EventKind::Added, 6),
            (EventKind::Added, 7)
        ]
    );
    assert_eq!(engine.stats().terminations.drained, 1);
}

/// Watches drained while the writer goes on, each resumed from its last
/// version: together they see the whole history, once, in order.
#[test]
fn resuming_after_drains_under_writes_misses_and_repeats_nothing() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let engine = Arc::new(engine);
    let done = Arc::new(AtomicBool::new(false));
    const CHANGES: u64 = 20_000;
    // Object k carries even=yes if k is even; every change is seen by the
    // watchers of its object's label.
    let even = |rv: u64| (rv % 97) % 2 == 0;
    // How many times each follower has been drained: the writer waits,
    // every 1,000 changes, until each has been drained again, so that
    // every follower resumes many times while the writes go on, however
    // the threads are scheduled.
    let sessions: Arc<[std::sync::atomic::AtomicUsize; 3]> = Arc::default();
    let resumed = sessions.clone();
    let writing = thread::spawn(move || {
        let mut live = std::collections::HashSet::new();
        for rv in 2..=CHANGES + 1 {
            if rv % 1_000 == 0 {
                let before: Vec<_> = resumed.iter().map(|s| s.load(Ordering::Acquire)).collect();
                eventually("every follower drained again", || {
                    resumed
                        .iter()
                        .zip(&before)
                        .all(|(s, b)| s.load(Ordering::Acquire) > *b)
                });
            }
            let k = rv % 97;
            let o = obj(&format!("o{k}"), k % 2 == 0);
            let change = if !live.contains(&k) {
                live.insert(k);
                Change::added(o, rv.into())
            } else if rv % 5 == 0 {
                live.remove(&k);
                Change::deleted(o, rv.into())
            } else {
                Change::modified(o, rv.into())
            };
            writer.apply(change).unwrap();
        }
    });
    let draining = {
        let (engine, done) = (engine.clone(), done.clone());
        thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                engine.drain();
                thread::sleep(std::time::Duration::from_micros(300));
            }
        })
    };
    // Three watchers, each following the history across drains.
    let followers: Vec<_> = [None, Some("even=yes"), Some("even=no")]
        .into_iter()
        .enumerate()
        .map(|(i, labels)| {
            let (engine, sessions) = (engine.clone(), sessions.clone());
            thread::spawn(move || {
                let (mut from, mut rvs, mut drains) = (1u64, Vec::new(), 0);
                loop {
                    let mut req = WatchRequest::new()
                        .resource_version(Some(from.into()))
                        .allow_bookmarks(true);
                    if let Some(l) = labels {
                        req = req.labels(l.parse().unwrap());
                    }
                    let mut w = engine.watch(req).unwrap();
                    let (seen, end) = recv_events(&mut w, usize::MAX);
                    for s in seen {
                        if s.kind == EventKind::Bookmark {
                            assert!(s.rv >= from, "a bookmark went back: {} < {from}", s.rv);
                        } else {
                            // Above the last event and the last bookmark: a
                            // bookmark promises nothing older follows.
                            assert!(s.rv > from, "{labels:?}: event {} after {from}", s.rv);
                            rvs.push(s.rv);
                        }
                        from = s.rv;
                    }
                    assert_eq!(end, Some(EndReason::Drained));
                    drains += 1;
                    sessions[i].fetch_add(1, Ordering::Release);
                    if from > CHANGES {
                        return (labels, rvs, drains);
                    }
                }
            })
        })
        .collect();
    writing.join().unwrap();
    // Drains go on until every follower has seen the last change and been
    // drained after it.
    let results: Vec<_> = followers.into_iter().map(|f| f.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    draining.join().unwrap();
    for (labels, rvs, drains) in results {
        let want: Vec<u64> = (2..=CHANGES + 1)
            .filter(|rv| match labels {
                None => true,
                Some("even=yes") => even(*rv),
                Some(_) => !even(*rv),
            })
            .collect();
        // The writer waited for one every 1,000 changes.
        assert!(drains >= 20, "{labels:?}: drained only {drains} times");
        assert!(
            rvs == want,
            "{labels:?}: {} events over {drains} drains, {} expected; first difference at {:?}",
            rvs.len(),
            want.len(),
            rvs.iter().zip(&want).position(|(a, b)| a != b)
        );
    }
}
