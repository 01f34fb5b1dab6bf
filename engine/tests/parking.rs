//! Full queues park a watcher instead of stalling the dispatcher
//! (docs/semantics.md §5.3, Herald's policy): nothing lost, nothing repeated,
//! no one else slowed; Gone only once the watcher's next change left the ring.

mod common;

use common::*;
use herald::event::Gone;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::{Visited, WatchProbe, WatchState};
use herald::*;
use herald_testkit::eventually;

fn obj(i: u64) -> Object {
    Object::builder("ns", &format!("p{}", i % 50))
        .label("app", "web")
        .build()
}

/// An engine listed at 1 and a live watch of namespace `ns` (where every
/// object lives) from there, already begun (its start resolved), so what
/// follows reaches it through the dispatcher, its queue and its parking,
/// not through a start check. Scoped, because a watch of everything
/// follows the ring and never parks; with no overflow, so a full queue
/// parks it at once.
fn listed_with_watch(config: Config) -> (Engine, Writer, Watch) {
    let (engine, mut writer) = Engine::new(config.spill_limit(0)).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(1.into()))
                .scope(KeyScope::prefix("ns")),
        )
        .unwrap();
    eventually("live", || engine.stats().watchers_active == 1);
    assert_quiet(&mut w);
    (engine, writer, w)
}

fn rvs(seen: &[Seen]) -> Vec<u64> {
    seen.iter().map(|s| s.rv).collect()
}

#[test]
fn a_parked_watcher_catches_up_from_the_ring_and_resumes() {
    let (engine, mut writer, mut w) = listed_with_watch(Config::default());
    // The queue holds 10 (the reference's minimum); 200 changes arrive
    // while nobody reads.
    for rv in 2..=201 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    eventually("dispatched", || engine.stats().changes_dispatched == 201);
    assert!(engine.stats().parks >= 1);
    let (seen, end) = recv_events(&mut w, 200);
    assert_eq!(end, None);
    assert_eq!(rvs(&seen), (2..=201).collect::<Vec<_>>());
    // Caught up: resumed, and fed by the dispatcher again.
    eventually("resumed", || engine.stats().resumes >= 1);
    for rv in 202..=205 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    let (seen, _) = recv_events(&mut w, 4);
    assert_eq!(rvs(&seen), [202, 203, 204, 205]);
    assert_quiet(&mut w);
}

#[test]
fn a_stalled_watcher_slows_no_one_and_loses_nothing_while_in_history() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut stalled = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let mut healthy = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let reader = std::thread::spawn(move || {
        let (seen, _) = recv_events(&mut healthy, 5_000);
        rvs(&seen)
    });
    // The writer never waits for the stalled watcher.
    for rv in 2..=5_001 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    assert_eq!(reader.join().unwrap(), (2..=5_001).collect::<Vec<_>>());
    assert_eq!(engine.stats().writer_gated_waits, 0);
    // The history still holds everything: the stalled watcher gets it all.
    let (seen, _) = recv_events(&mut stalled, 5_000);
    assert_eq!(rvs(&seen), (2..=5_001).collect::<Vec<_>>());
}

#[test]
fn a_probe_shows_following_queued_parked_and_ended() {
    let (engine, mut writer, mut w) = listed_with_watch(Config::default());
    let probe = w.stopper();
    assert_eq!(
        probe.probe(),
        WatchProbe {
            state: WatchState::Following,
            queued: 0
        }
    );
    for rv in 2..=4 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    eventually("dispatched", || engine.stats().changes_dispatched == 4);
    assert_eq!(
        probe.probe(),
        WatchProbe {
            state: WatchState::Queued,
            queued: 3
        }
    );
    // Past the queue's 10: parked, nothing queued (the replay reads the
    // ring).
    for rv in 5..=40 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    eventually("dispatched", || engine.stats().changes_dispatched == 40);
    assert_eq!(
        probe.probe(),
        WatchProbe {
            state: WatchState::Parked,
            queued: 0
        }
    );
    let (seen, _) = recv_events(&mut w, 39);
    assert_eq!(rvs(&seen), (2..=40).collect::<Vec<_>>());
    eventually("resumed", || probe.probe().state == WatchState::Following);
    probe.stop();
    assert_eq!(probe.probe().state, WatchState::Ended);
    assert_eq!(WatchState::Parked.as_str(), "parked");
}

#[test]
fn a_parked_watcher_lapped_by_the_writer_ends_with_gone() {
    let (engine, mut writer, mut stalled) =
        listed_with_watch(Config::default().history_bounds(32, 32));
    // The writer is not held back by the stalled watcher; it laps it.
    for rv in 2..=1_001 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    // Its queue filled: it was parked.
    assert!(engine.stats().parks >= 1);
    let (seen, end) = recv_to_end(&mut stalled);
    // Whatever was still readable comes first, gap-free; then Gone naming
    // where the watch stood. The ring keeps 970..=1001.
    assert_eq!(rvs(&seen), (2..2 + seen.len() as u64).collect::<Vec<_>>());
    let last = seen.last().map_or(1, |s| s.rv);
    assert_eq!(end, EndReason::Gone(Gone::new(last.into(), 969.into())));
    assert_eq!(engine.stats().terminations.gone, 1);
}

#[test]
fn a_parked_replay_never_crosses_a_relist() {
    let (_engine, mut writer, mut w) = listed_with_watch(Config::default());
    for rv in 2..=100 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    writer.replace(Relist::new([obj(0)], 200.into())).unwrap();
    writer.apply(Change::modified(obj(1), 201.into())).unwrap();
    let (seen, end) = recv_to_end(&mut w);
    // Some prefix of the old generation, never anything of the new one.
    assert_eq!(rvs(&seen), (2..2 + seen.len() as u64).collect::<Vec<_>>());
    assert!(seen.iter().all(|s| s.rv <= 100));
    assert_eq!(end, EndReason::Relisted);
}

#[test]
fn visiting_lends_exactly_what_receiving_gives() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer
        .replace(Relist::new([obj(0), obj(1)], 1.into()))
        .unwrap();
    let req = || {
        WatchRequest::new()
            .labels("app=web".parse().unwrap())
            .send_initial_events(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .allow_bookmarks(true)
    };
    let mut received = engine.watch(req()).unwrap();
    let mut visited = engine.watch(req()).unwrap();
    // Take both snapshots before the writer moves on, so they agree.
    let (first, _) = recv_events(&mut received, 3);
    let mut lent = Vec::new();
    while lent.len() < 3 {
        visited.visit_batch(8, |ev| lent.push(Seen::from_event(&ev.to_event())));
    }
    assert_eq!(first, lent);
    // Enough changes, unread, to park both (replay path), then live ones.
    for rv in 2..=300 {
        writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
    }
    let (rest, _) = recv_events(&mut received, 299);
    let mut lent = Vec::new();
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while lent.len() < 299 {
        assert!(
            std::time::Instant::now() < limit,
            "stalled at {}",
            lent.len()
        );
        let v = visited.visit_batch(64, |ev| {
            assert_eq!(ev.kind(), ev.to_event().kind());
            lent.push(Seen::from_event(&ev.to_event()));
        });
        assert_eq!(v.end, None);
        if v.events == 0 {
            std::thread::yield_now();
        }
    }
    assert_eq!(rest, lent);
    engine.stop();
    let mut end = None;
    while end.is_none() {
        let v = visited.visit_batch(64, |ev| panic!("nothing after the changes: {ev:?}"));
        end = v.end;
    }
    assert_eq!(end, Some(EndReason::EngineStopped));
    assert!(visited.is_finished());
    assert_eq!(visited.visit_batch(64, |_| {}), Visited::default());
}

/// A selective watcher whose queue is full keeps what it is owed in its
/// overflow (Config::spill_limit) instead of parking: it is never made to
/// scan the ring for the few changes it may see.
#[test]
fn a_selective_watcher_spills_instead_of_parking() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(1.into()))
                .labels("app=web".parse().unwrap()),
        )
        .unwrap();
    eventually("live", || engine.stats().watchers_active == 1);
    assert_quiet(&mut w);
    // 200 changes, every other one admitted: 100 owed, queue of 10.
    for rv in 2..=201 {
        let app = if rv % 2 == 0 { "web" } else { "db" };
        let o = Object::builder("ns", &format!("p{}", rv % 50))
            .label("app", app)
            .build();
        writer.apply(Change::added(o, rv.into())).unwrap();
    }
    eventually("dispatched", || engine.stats().changes_dispatched == 201);
    let s = engine.stats();
    assert_eq!(s.parks, 0);
    assert!(s.spilled >= 90, "spilled {}", s.spilled);
    let (seen, end) = recv_events(&mut w, 100);
    assert_eq!(end, None);
    assert_eq!(rvs(&seen), (2..=201).step_by(2).collect::<Vec<_>>());
    assert_quiet(&mut w);
    // The overflow was handed back: the queue feeds it again.
    writer.apply(Change::added(obj(202), 202.into())).unwrap();
    let (seen, _) = recv_events(&mut w, 1);
    assert_eq!(rvs(&seen), [202]);
    assert_quiet(&mut w);
}

/// Past the spill limit the watcher parks after all, and the hand-over
/// from overflow to replay loses and repeats nothing.
#[test]
fn an_overflow_past_its_limit_parks_and_loses_nothing() {
    for limit in [0, 25] {
        let (engine, mut writer) = Engine::new(Config::default().spill_limit(limit)).unwrap();
        writer.replace(Relist::new([], 1.into())).unwrap();
        let mut w = engine
            .watch(
                WatchRequest::new()
                    .resource_version(Some(1.into()))
                    .labels("app=web".parse().unwrap()),
            )
            .unwrap();
        eventually("live", || engine.stats().watchers_active == 1);
        for rv in 2..=301 {
            writer.apply(Change::modified(obj(rv), rv.into())).unwrap();
        }
        eventually("dispatched", || engine.stats().changes_dispatched == 301);
        let s = engine.stats();
        assert!(s.parks >= 1, "limit {limit}: parks {}", s.parks);
        assert_eq!(
            s.spilled > 0,
            limit > 0,
            "limit {limit}: spilled {}",
            s.spilled
        );
        let (seen, end) = recv_events(&mut w, 300);
        assert_eq!(end, None);
        assert_eq!(rvs(&seen), (2..=301).collect::<Vec<_>>(), "limit {limit}");
        assert_quiet(&mut w);
    }
}
