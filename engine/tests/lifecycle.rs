//! Lifecycle (docs/semantics.md §8), ends (§3.7), unregistering and counters.

mod common;

use std::time::Duration;

use common::*;
use herald::clock::ManualClock;
use herald::engine::Lifecycle;
use herald::watch::{RecvTimeoutError, TryRecvError, WatchError};
use herald::writer::WriteError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).build()
}

#[test]
fn a_relist_ends_every_watch_and_starts_a_generation() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    assert_eq!(engine.generation(), 1);
    let mut from_state = engine.watch(WatchRequest::new()).unwrap();
    let mut from_rv = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    writer.apply(Change::added(obj("b"), 2.into())).unwrap();
    let (seen, _) = recv_events(&mut from_state, 2);
    assert_eq!(seen.len(), 2);
    let (seen, _) = recv_events(&mut from_rv, 1);
    assert_eq!(seen[0].rv, 2);

    writer.replace(Relist::new([obj("c")], 5.into())).unwrap();
    assert_eq!(engine.generation(), 2);
    for w in [&mut from_state, &mut from_rv] {
        let (seen, end) = recv_to_end(w);
        assert!(seen.is_empty(), "{seen:?}");
        assert_eq!(end, EndReason::Relisted);
        assert_eq!(w.recv(), None);
        assert!(w.is_finished());
    }
    // The old history is gone; the new generation serves from its list.
    let err = engine
        .watch(WatchRequest::new().resource_version(Some(2.into())))
        .unwrap_err();
    assert_eq!(err.to_string(), "too old resource version: 2 (5)");
    let mut fresh = engine.watch(WatchRequest::new()).unwrap();
    let (seen, _) = recv_events(&mut fresh, 1);
    assert_eq!((seen[0].key.as_str(), seen[0].rv), ("ns/c", 5));
    assert_eq!(engine.stats().terminations.relisted, 2);
}

#[test]
fn a_watch_begun_against_an_older_generation_ends_at_once() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    // Begun at generation 1; whether the dispatcher registers it before or
    // after the re-list, it must end with Relisted and see nothing of gen 2.
    for _ in 0..50 {
        let rv = engine.resource_version().get();
        let mut w = engine
            .watch(WatchRequest::new().resource_version(Some(rv.into())))
            .unwrap();
        writer
            .replace(Relist::new([obj("b")], (rv + 1).into()))
            .unwrap();
        let (seen, end) = recv_to_end(&mut w);
        assert!(seen.is_empty(), "{seen:?}");
        assert_eq!(end, EndReason::Relisted);
    }
}

#[test]
fn dropping_a_watch_unregisters_it() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let w = engine.watch(WatchRequest::new()).unwrap();
    let mut other = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    eventually("both live", || engine.stats().watchers_active == 2);
    drop(w);
    eventually("one live", || engine.stats().watchers_active == 1);
    let stats = engine.stats();
    assert_eq!(stats.terminations.stopped, 1);
    // The dropped watch is offered nothing more; the other one still is.
    let before = engine.stats().deliveries;
    writer.apply(Change::added(obj("a"), 2.into())).unwrap();
    let (seen, _) = recv_events(&mut other, 1);
    assert_eq!(seen[0].rv, 2);
    eventually("dispatched", || engine.stats().changes_dispatched == 2);
    assert_eq!(engine.stats().deliveries, before + 1);
}

#[test]
fn stop_is_final_and_says_why() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    let mut pending = engine.watch(WatchRequest::new()).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    let mut live = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let mut waiting = engine
        .watch(WatchRequest::new().resource_version(Some(100.into())))
        .unwrap();
    engine.stop();
    engine.stop();
    assert_eq!(engine.lifecycle(), Lifecycle::Stopped);
    let (_, end) = recv_to_end(&mut pending);
    assert_eq!(end, EndReason::EngineStopped);
    for w in [&mut live, &mut waiting] {
        let (seen, end) = recv_to_end(w);
        assert!(seen.is_empty());
        assert_eq!(end, EndReason::EngineStopped);
    }
    assert_eq!(
        writer.apply(Change::added(obj("b"), 2.into())),
        Err(WriteError::Stopped)
    );
    assert_eq!(writer.progress(3.into()), Err(WriteError::Stopped));
    assert_eq!(
        engine.watch(WatchRequest::new()).unwrap_err(),
        WatchError::EngineStopped
    );
    assert_eq!(engine.stats().terminations.engine_stopped, 3);
}

#[test]
fn dropping_the_last_engine_handle_stops_it() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine.watch(WatchRequest::new()).unwrap();
    let clone = engine.clone();
    drop(engine);
    assert_eq!(clone.lifecycle(), Lifecycle::Ready);
    drop(clone);
    let (_, end) = recv_to_end(&mut w);
    assert_eq!(end, EndReason::EngineStopped);
    assert_eq!(
        writer.replace(Relist::new([], 2.into())),
        Err(WriteError::Stopped)
    );
}

#[test]
fn stop_by_the_owner_ends_with_stopped_exactly_once() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    let mut w = engine.watch(WatchRequest::new()).unwrap();
    w.stop();
    w.stop();
    assert_eq!(w.recv(), Some(WatchItem::End(EndReason::Stopped)));
    assert_eq!(w.recv(), None);
    assert_eq!(w.try_recv(), Err(TryRecvError::Finished));
    assert_eq!(
        w.recv_timeout(Duration::from_millis(1)),
        Err(RecvTimeoutError::Finished)
    );
    engine.stop();
    // Ended already: the engine's stop does not add a second end.
    assert_eq!(w.recv(), None);
    assert_eq!(engine.stats().terminations.total(), 1);
}

#[test]
fn counters_follow_what_happens() {
    let (engine, mut writer) = Engine::new(Config::default().history_bounds(2, 8)).unwrap();
    writer
        .replace(Relist::new([obj("a"), obj("b")], 1.into()))
        .unwrap();
    let mut w = engine.watch(WatchRequest::new()).unwrap();
    let (seen, _) = recv_events(&mut w, 2);
    assert_eq!(seen.len(), 2);
    // Nine changes: fewer than the watch's queue holds, since this thread
    // only reads once the writer is done.
    for rv in 2..=10 {
        writer.apply(Change::modified(obj("a"), rv.into())).unwrap();
    }
    writer.progress(25.into()).unwrap();
    let (seen, _) = recv_events(&mut w, 9);
    assert_eq!(seen.last().unwrap().rv, 10);
    let s = engine.stats();
    assert_eq!(s.changes_received, 9);
    assert_eq!(s.relists, 1);
    assert_eq!(s.progress_updates, 1);
    assert_eq!(s.initial_events_sent, 2);
    assert_eq!(s.watches_started, 1);
    assert_eq!(s.ring_capacity, 8);
    assert_eq!(s.ring_grows, 2);
    assert_eq!(s.ring_len, 8);
    eventually("all dispatched", || engine.stats().changes_dispatched == 10);
    // Live deliveries plus what the watch replayed itself cover the nine.
    assert!(engine.stats().deliveries <= 9);
    assert_eq!(engine.stats().watchers_active, 1);
    assert_eq!(engine.stats().watchers_pending, 0);
}

#[test]
fn config_errors_are_typed() {
    let bad = [
        Config::default().history_bounds(0, 10),
        Config::default().history_bounds(10, 5),
        Config::default().history_window(Duration::ZERO),
        Config::default().index(""),
        Config::default()
            .index("spec.nodeName")
            .index("spec.nodeName"),
    ];
    for c in bad {
        let err = Engine::new(c).unwrap_err();
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn the_history_shrinks_back_when_the_writer_goes_idle() {
    let (engine, mut writer) = Engine::new(
        Config::default()
            .history_bounds(4, 64)
            .history_window(Duration::from_secs(1))
            .tick(Duration::from_millis(10)),
    )
    .unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    for rv in 2..=41 {
        writer
            .apply(Change::added(obj(&rv.to_string()), rv.into()))
            .unwrap();
    }
    // Forty changes well inside the window: the ring doubled from 4.
    let grown = engine.stats();
    assert!(
        grown.ring_grows >= 1 && grown.ring_capacity > 4,
        "{grown:?}"
    );
    // No write comes; the reference would keep the ring large forever.
    eventually("shrunk to the lower bound", || {
        engine.stats().ring_capacity == 4
    });
    let s = engine.stats();
    assert!(s.ring_shrinks >= 1);
    assert_eq!(s.ring_len, 4);
    // The oldest kept changes are the newest four: 38..=41.
    let err = engine
        .watch(WatchRequest::new().resource_version(Some(36.into())))
        .unwrap_err();
    assert_eq!(err.to_string(), "too old resource version: 36 (37)");
}

/// Fills a ring on a clock that does not move (every change inside the
/// window) and returns the capacity it stopped growing at.
fn grown_capacity(config: Config, changes: u64) -> u64 {
    let clock = ManualClock::new();
    let (engine, mut writer) = Engine::new(config.clock(clock)).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let o = obj("a");
    for rv in 2..=changes + 1 {
        writer
            .apply(Change::modified(o.clone(), rv.into()))
            .unwrap();
    }
    let s = engine.stats();
    assert_eq!(s.ring_len, s.ring_capacity, "{s:?}");
    s.ring_capacity
}

#[test]
fn the_history_upper_bound_follows_the_window() {
    let n = 250_000;
    // The reference's 102,400 at its 75 s window.
    assert_eq!(grown_capacity(Config::default(), n), 102_400);
    // A window twice as long (rounded up to a power of two): twice.
    let long = Config::default().history_window(Duration::from_secs(150));
    assert_eq!(grown_capacity(long.clone(), n), 204_800);
    // Set explicitly, the bound no longer follows the window.
    let fixed = long.history_bounds(100, 1_000);
    assert_eq!(grown_capacity(fixed, n), 1_000);
}
