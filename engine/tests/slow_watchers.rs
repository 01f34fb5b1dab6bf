//! Slow watchers on a manual clock: the reference's time budget (its
//! arithmetic through the engine, `TooSlow` after it, the one-more-try rule,
//! the graceful drain) and park-and-resume (a consumer that stalls, then
//! drains; `Gone` once aged out). Nothing here sleeps or asserts a time:
//! the clock moves only when a test moves it, and the tests wait only for
//! outcomes.

mod common;

use std::time::Duration;

use common::eventually;
use herald::*;

const MS: Duration = Duration::from_millis(1);

fn engine(clock: &ManualClock, policy: SlowWatchers) -> (Engine, Writer) {
    // No index, ring of 100: every watcher's queue holds 10 changes
    // (the reference's minimum).
    Engine::new(Config::default().clock(clock.clone()).slow_watchers(policy)).unwrap()
}

fn obj(name: &str) -> Object {
    Object::builder("ns", name).build()
}

/// Applies the change at `rv` (a new object each time).
fn add(writer: &mut Writer, rv: u64) {
    writer
        .apply(Change::added(obj(&format!("o{rv}")), rv.into()))
        .unwrap();
}

/// Begins a watch of every change after rv 1 and waits until the
/// dispatcher has registered it (`active` watches in all).
fn live_watch(engine: &Engine, active: u64) -> Watch {
    let w = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    eventually("the watch is registered", || {
        engine.stats().watchers_active == active
    });
    w
}

/// Receives the next event and checks its resource version.
fn expect_rv(w: &mut Watch, rv: u64) {
    match w.recv() {
        Some(WatchItem::Event(ev)) => assert_eq!(ev.resource_version().get(), rv),
        other => panic!("expected the change at {rv}, got {other:?}"),
    }
}

fn expect_end(w: &mut Watch, reason: &EndReason) {
    assert_eq!(w.recv(), Some(WatchItem::End(reason.clone())));
    assert_eq!(w.recv(), None);
}

/// The budget starts at zero: the first round with a full queue takes
/// nothing, gives the watcher one more try and ends it; the healthy watcher
/// receives every change and is never touched.
#[test]
fn too_slow_with_an_empty_budget_and_healthy_watchers_unaffected() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace([], 1.into()).unwrap();
    let mut stalled = live_watch(&engine, 1);
    let mut healthy = live_watch(&engine, 2);
    for rv in 2..=30 {
        add(&mut writer, rv);
        expect_rv(&mut healthy, rv);
    }
    // The queue held rv 2..=11; rv 12 found it full.
    eventually("the stalled watcher ends", || {
        engine.stats().terminations.too_slow == 1
    });
    expect_end(&mut stalled, &EndReason::TooSlow);
    let s = engine.stats();
    assert_eq!(s.budget_rounds, 1);
    assert_eq!(
        (s.budget_taken, s.budget_returned),
        (Duration::ZERO, Duration::ZERO)
    );
    assert_eq!(
        s.watchers_active, 1,
        "the dispatcher forgot the ended watcher"
    );
    assert_eq!(healthy.try_recv(), Err(TryRecvError::Empty));
}

/// A second of wall time accrues 50 ms; the round takes it whole, waits
/// for the stalled watcher, and ends it when the clock passes the budget.
#[test]
fn the_round_waits_out_the_budget_then_ends_the_watcher() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace([], 1.into()).unwrap();
    let mut stalled = live_watch(&engine, 1);
    for rv in 2..=11 {
        add(&mut writer, rv);
    }
    clock.advance(Duration::from_secs(1));
    add(&mut writer, 12);
    eventually("the round begins", || engine.stats().budget_rounds == 1);
    assert_eq!(engine.stats().budget_taken, 50 * MS);
    assert_eq!(engine.stats().terminations.too_slow, 0, "still waiting");
    clock.advance(50 * MS);
    eventually("the watcher ends", || {
        engine.stats().terminations.too_slow == 1
    });
    // The whole budget was used: nothing returns.
    assert_eq!(engine.stats().budget_returned, Duration::ZERO);
    expect_end(&mut stalled, &EndReason::TooSlow);
}

/// A watcher that reads while the round waits for it survives, the change
/// it was waiting for arrives in order, and the round returns the unused
/// budget (all of it: the manual clock did not move).
#[test]
fn a_watcher_that_drains_within_the_budget_survives() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace([], 1.into()).unwrap();
    let mut slow = live_watch(&engine, 1);
    for rv in 2..=11 {
        add(&mut writer, rv);
    }
    clock.advance(Duration::from_secs(3));
    add(&mut writer, 12);
    eventually("the round begins", || engine.stats().budget_rounds == 1);
    // Capped at 100 ms.
    assert_eq!(engine.stats().budget_taken, 100 * MS);
    for rv in 2..=12 {
        expect_rv(&mut slow, rv);
    }
    eventually("the budget returns", || {
        engine.stats().budget_returned == 100 * MS
    });
    add(&mut writer, 13);
    expect_rv(&mut slow, 13);
    assert_eq!(engine.stats().terminations.too_slow, 0);
}

/// Once the budget is spent, every other watcher still blocked in the round
/// gets one more non-blocking try: one that made room meanwhile survives.
#[test]
fn after_the_budget_each_blocked_watcher_gets_one_more_try() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace([], 1.into()).unwrap();
    // Registered first: the round waits for it first.
    let mut a = live_watch(&engine, 1);
    let mut b = live_watch(&engine, 2);
    for rv in 2..=11 {
        add(&mut writer, rv);
    }
    clock.advance(Duration::from_secs(1));
    add(&mut writer, 12);
    eventually("the round begins", || engine.stats().budget_rounds == 1);
    // B makes room while the round waits for A; then the budget runs out.
    expect_rv(&mut b, 2);
    clock.advance(50 * MS);
    eventually("A ends", || engine.stats().terminations.too_slow == 1);
    expect_end(&mut a, &EndReason::TooSlow);
    // B's one more try succeeded: it has everything, in order.
    for rv in 3..=12 {
        expect_rv(&mut b, rv);
    }
    add(&mut writer, 13);
    expect_rv(&mut b, 13);
    assert_eq!(engine.stats().terminations.too_slow, 1);
}

/// A watcher that holds its initial-events-end bookmark but has not
/// delivered it drains before it ends (seeds/000 `graceful`): the rest of
/// its initial events, the bookmark, and what was queued, then `TooSlow`.
/// One that has delivered it, or that has not reached it, ends at once.
#[test]
fn the_graceful_drain() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    let objects: Vec<Object> = (0..30).map(|i| obj(&format!("init{i:02}"))).collect();
    writer.replace(objects, 1.into()).unwrap();
    let initial = || {
        WatchRequest::new()
            .send_initial_events(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .allow_bookmarks(true)
    };
    // Received: has taken its snapshot (one initial event read).
    let mut received = engine.watch(initial()).unwrap();
    let Some(WatchItem::Event(first)) = received.recv() else {
        panic!("an initial event")
    };
    assert_eq!(first.kind(), EventKind::Added);
    // Sent: has read through its initial-events-end bookmark.
    let mut sent = engine.watch(initial()).unwrap();
    for _ in 0..30 {
        assert!(matches!(sent.recv(), Some(WatchItem::Event(e)) if e.kind() == EventKind::Added));
    }
    let Some(WatchItem::Event(end)) = sent.recv() else {
        panic!("the bookmark")
    };
    assert!(end.is_initial_events_end());
    // Waiting: never read, so no bookmark has reached it yet.
    let mut waiting = engine.watch(initial()).unwrap();
    eventually("all three registered", || {
        engine.stats().watchers_active == 3
    });

    for rv in 2..=12 {
        add(&mut writer, rv);
    }
    eventually("all three end", || {
        engine.stats().terminations.too_slow == 3
    });

    let mut kinds = Vec::new();
    let reason = loop {
        match received.recv() {
            Some(WatchItem::Event(e)) => kinds.push((e.kind(), e.resource_version().get())),
            Some(WatchItem::End(r)) => break r,
            None => panic!("an end"),
        }
    };
    assert_eq!(reason, EndReason::TooSlow);
    let added = kinds
        .iter()
        .take_while(|(k, _)| *k == EventKind::Added)
        .count();
    assert_eq!(added, 29, "the rest of the initial events");
    assert_eq!(kinds[29], (EventKind::Bookmark, 1), "then the bookmark");
    let live: Vec<u64> = kinds[30..].iter().map(|&(_, rv)| rv).collect();
    assert_eq!(live, (2..=11).collect::<Vec<_>>(), "then what was queued");

    expect_end(&mut sent, &EndReason::TooSlow);
    expect_end(&mut waiting, &EndReason::TooSlow);
}

/// A waiting watcher is due for a bookmark at every tick; once the tick's
/// bookmark has reached its queue it counts as received, and a later
/// `TooSlow` drains: the consumer still gets its initial state and
/// initial-events-end bookmark.
#[test]
fn a_tick_bookmark_makes_a_waiting_watcher_end_gracefully() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace([obj("a")], 1.into()).unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true),
        )
        .unwrap();
    eventually("registered", || engine.stats().watchers_active == 1);
    clock.advance(Duration::from_millis(1250));
    eventually("a tick", || engine.stats().ticks >= 1);
    // The bookmark takes one queue slot: nine changes fit, the tenth ends it.
    for rv in 2..=11 {
        add(&mut writer, rv);
    }
    // The 1.25 s accrued 62.5 ms of budget: the round waits it out.
    eventually("the round begins", || engine.stats().budget_rounds == 1);
    clock.advance(Duration::from_millis(100));
    eventually("ended", || engine.stats().terminations.too_slow == 1);
    let mut seen = Vec::new();
    let reason = loop {
        match w.recv() {
            Some(WatchItem::Event(e)) => seen.push((e.kind(), e.is_initial_events_end())),
            Some(WatchItem::End(r)) => break r,
            None => panic!("an end"),
        }
    };
    assert_eq!(reason, EndReason::TooSlow);
    // Its snapshot is taken now: the current state, then its bookmark.
    // "a" and the ten added objects, then its bookmark.
    assert_eq!(seen.len(), 12);
    assert!(seen[..11].iter().all(|&(k, _)| k == EventKind::Added));
    assert_eq!(seen[11], (EventKind::Bookmark, true));
}

/// Park and resume: a consumer that stalls is parked, loses nothing and
/// repeats nothing when it drains, is fed by the dispatcher again once
/// caught up, and ends with `Gone` only when what it missed has aged out.
#[test]
fn park_stall_drain_resume_then_gone_once_aged_out() {
    let clock = ManualClock::new();
    let (engine, mut writer) = Engine::new(
        Config::default()
            .clock(clock.clone())
            .history_bounds(64, 64)
            // No overflow: a full queue parks at once.
            .spill_limit(0),
    )
    .unwrap();
    writer.replace([], 1.into()).unwrap();
    // Scoped: a watch of everything follows the ring and never parks.
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(1.into()))
                .scope(KeyScope::prefix("ns")),
        )
        .unwrap();
    eventually("the watch is registered", || {
        engine.stats().watchers_active == 1
    });
    // Stall: 40 changes into a queue of 10.
    for rv in 2..=41 {
        add(&mut writer, rv);
    }
    // The dispatcher is done with all of them (the re-list and 40
    // changes) before the consumer moves: one park, one resume.
    eventually("dispatched", || engine.stats().changes_dispatched == 41);
    assert_eq!(engine.stats().parks, 1);
    // Drain: every change once, in order.
    for rv in 2..=41 {
        expect_rv(&mut w, rv);
    }
    eventually("resumed", || engine.stats().resumes == 1);
    for rv in 42..=50 {
        add(&mut writer, rv);
        expect_rv(&mut w, rv);
    }
    // Stall again, long enough for the writer to lap the ring: past the
    // window and past what the ring physically keeps (whole chunks, one
    // more than the window needs, rounded up to a power of two).
    for rv in 51..=1_050 {
        add(&mut writer, rv);
    }
    eventually("dispatched", || engine.stats().changes_dispatched == 1_050);
    assert_eq!(engine.stats().parks, 2);
    let mut next = 51;
    let reason = loop {
        match w.recv() {
            Some(WatchItem::Event(e)) => {
                assert_eq!(e.resource_version().get(), next, "in order, no gap");
                next += 1;
            }
            Some(WatchItem::End(r)) => break r,
            None => panic!("an end"),
        }
    };
    let EndReason::Gone(gone) = reason else {
        panic!("expected Gone, got {reason:?}")
    };
    // It names the last version delivered, and the window's start.
    assert_eq!(gone.requested().get(), next - 1);
    assert!(gone.oldest_servable().get() >= next - 1);
    let s = engine.stats();
    assert_eq!((s.terminations.gone, s.terminations.too_slow), (1, 0));
    assert_eq!(s.budget_rounds, 0, "park never waits");
}
