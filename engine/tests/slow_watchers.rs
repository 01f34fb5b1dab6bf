//! Slow watchers on a manual clock: the reference's time budget (its
//! arithmetic through the engine, `TooSlow` after it, the one-more-try rule,
//! the graceful drain) and park-and-resume (a consumer that stalls, then
//! drains; `Gone` once aged out). Nothing here sleeps or asserts a time:
//! the clock moves only when a test moves it, and the tests wait only for
//! outcomes.

use std::time::Duration;

use herald::clock::ManualClock;
use herald::config::SlowWatchers;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::TryRecvError;
use herald::*;
use herald_testkit::eventually;

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
    writer.replace(Relist::new([], 1.into())).unwrap();
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
    writer.replace(Relist::new([], 1.into())).unwrap();
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
    writer.replace(Relist::new([], 1.into())).unwrap();
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
    writer.replace(Relist::new([], 1.into())).unwrap();
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
    writer.replace(Relist::new(objects, 1.into())).unwrap();
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
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
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
    writer.replace(Relist::new([], 1.into())).unwrap();
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

/// Watches begun from the current version while the dispatcher lags
/// about 2,000 changes behind the writer are handed nothing of that lag:
/// every change between the dispatcher's cursor and their start is at or
/// below their version, which the reference never sends (seeds/000
/// `process`: only events newer than the watcher's version), so it must
/// neither fill their queues nor count against them. Readers that pause
/// through it are never waited for and never end `TooSlow`, however far
/// the clock moves; the next changes reach each of them once, in order.
#[test]
fn watches_begun_while_the_dispatcher_lags_are_not_handed_the_lag() {
    const LAG: u64 = 2_000;
    const WATCHES: usize = 1_000;
    let clock = ManualClock::new();
    // A fixed ring with room for the lag: the writer never waits for the
    // held dispatcher.
    let (engine, mut writer) = Engine::new(
        Config::default()
            .clock(clock.clone())
            .history_bounds(4096, 4096)
            .slow_watchers(SlowWatchers::reference_budget()),
    )
    .unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    // Hold the dispatcher in a budget round: a blocker that never reads,
    // budget accrued (2 s: the 100 ms cap), then changes until its queue
    // is full and the round begins.
    let blocker = live_watch(&engine, 1);
    clock.advance(Duration::from_secs(2));
    let mut rv = 1;
    while engine.stats().budget_rounds == 0 {
        rv += 1;
        add(&mut writer, rv);
        // Dispatched (the relist and every change), or the round began.
        eventually("the change is dispatched", || {
            let s = engine.stats();
            s.changes_dispatched == rv || s.budget_rounds == 1
        });
    }
    // The dispatcher waits for the blocker (on the still clock): the
    // writer runs ahead of it.
    for _ in 0..LAG {
        rv += 1;
        add(&mut writer, rv);
    }
    let start = engine.resource_version();
    assert_eq!(start.get(), rv);
    let mut watches: Vec<Watch> = (0..WATCHES)
        .map(|_| {
            engine
                .watch(WatchRequest::new().resource_version(Some(start)))
                .unwrap()
        })
        .collect();
    // The round's budget runs out: the blocker ends, the dispatcher takes
    // the watches up, LAG changes behind the writer.
    clock.advance(100 * MS);
    eventually("the watches are registered", || {
        let s = engine.stats();
        s.terminations.too_slow == 1 && s.watchers_active == WATCHES as u64
    });
    // No one reads. Move the clock past any budget, again while the
    // dispatcher has not caught up (a round it waits in ends within the
    // cap), then once more.
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    clock.advance(Duration::from_secs(1));
    while engine.stats().changes_dispatched < rv {
        assert!(
            std::time::Instant::now() < give_up,
            "never caught up: {:?}",
            engine.stats()
        );
        clock.advance(100 * MS);
        std::thread::sleep(MS);
    }
    clock.advance(Duration::from_secs(1));
    let s = engine.stats();
    assert_eq!(
        (s.terminations.too_slow, s.terminations.total()),
        (1, 1),
        "only the blocker ended: nothing newer than the watches' start exists"
    );
    assert_eq!(s.budget_rounds, 1, "never waited for a watch of the lag");
    assert_eq!(s.watchers_active, WATCHES as u64);
    // Every watch has no event, and no end, to give.
    for w in &mut watches {
        assert_eq!(w.try_recv(), Err(TryRecvError::Empty));
    }
    // The changes after their start: each exactly once, in order.
    add(&mut writer, rv + 1);
    add(&mut writer, rv + 2);
    for w in &mut watches {
        expect_rv(w, rv + 1);
        expect_rv(w, rv + 2);
        assert_eq!(w.try_recv(), Err(TryRecvError::Empty));
    }
    assert_eq!(engine.stats().terminations.total(), 1);
    drop(blocker);
}

/// The gauges are current: a watcher the time budget ends while the tick
/// catches up is no longer counted in `watchers_active` at once, not a
/// turn later; after the catch-up the dispatcher sleeps until its next
/// tick, which on a still clock never comes.
#[test]
fn a_watcher_ended_in_the_ticks_catch_up_is_no_longer_active() {
    let clock = ManualClock::new();
    let (engine, mut writer) = engine(&clock, SlowWatchers::reference_budget());
    writer.replace(Relist::new([], 1.into())).unwrap();
    // Three watchers that never read, one per namespace.
    let watch = |ns| {
        engine
            .watch(
                WatchRequest::new()
                    .resource_version(Some(1.into()))
                    .scope(KeyScope::prefix(ns)),
            )
            .unwrap()
    };
    let (a, b, c) = (watch("a"), watch("b"), watch("c"));
    eventually("all three registered", || {
        engine.stats().watchers_active == 3
    });
    let write = |writer: &mut Writer, ns: &str, rv: u64| {
        let o = Object::builder(ns, &format!("o{rv}")).build();
        writer.apply(Change::added(o, rv.into())).unwrap();
    };
    // Fill each queue (10 changes), no round yet.
    let mut rv = 1;
    for ns in ["a", "b", "c"] {
        for _ in 0..10 {
            rv += 1;
            write(&mut writer, ns, rv);
        }
    }
    eventually("dispatched", || engine.stats().changes_dispatched == rv);
    assert_eq!(engine.stats().budget_rounds, 0);
    // The first tick (at 1 s to 1.25 s), and 65 ms of budget.
    clock.advance(Duration::from_millis(1300));
    eventually("the first tick", || engine.stats().ticks == 1);
    // A's next change: a round that holds the dispatcher (a turn that is
    // not a tick's: the next is 1 s to 1.25 s away).
    write(&mut writer, "a", rv + 1);
    eventually("A's round", || engine.stats().budget_rounds == 1);
    // Meanwhile B's and C's next changes wait in the ring.
    write(&mut writer, "b", rv + 2);
    write(&mut writer, "c", rv + 3);
    // Past A's budget and the next tick: A ends; the next turn is a
    // tick's, whose catch-up meets B's change (100 ms of budget).
    clock.advance(Duration::from_secs(2));
    eventually("B's round", || engine.stats().budget_rounds == 2);
    assert_eq!(engine.stats().ticks, 1, "B's round is in the catch-up");
    assert_eq!(engine.stats().terminations.too_slow, 1);
    // B's budget runs out: B ends, and the catch-up goes on to C's change,
    // whose round (5 ms accrued since B's) holds the dispatcher in the
    // same turn: no clock move, no write since B ended.
    clock.advance(100 * MS);
    eventually("C's round", || engine.stats().budget_rounds == 3);
    let s = engine.stats();
    assert_eq!(s.ticks, 1, "C's round is in the same catch-up");
    assert_eq!(s.terminations.too_slow, 2);
    assert_eq!(
        (s.watchers_active, s.watchers_retiring),
        (1, 2),
        "B ended in this catch-up: no longer active"
    );
    // C's budget runs out: C ends, the tick follows, and the dispatcher
    // sleeps until the next one.
    clock.advance(5 * MS);
    eventually("C ends and the tick is done", || {
        let s = engine.stats();
        s.terminations.too_slow == 3 && s.ticks == 2
    });
    // No further clock move or write: the gauges say so all the same.
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while engine.stats().watchers_active != 0 {
        assert!(
            std::time::Instant::now() < give_up,
            "an ended watcher still counted as active: {:?}",
            engine.stats()
        );
        std::thread::sleep(MS);
    }
    assert_eq!(engine.stats().watchers_retiring, 3);
    drop((a, b, c));
}
