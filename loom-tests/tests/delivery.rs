//! The whole engine under loom: the writer (the model's main thread), the
//! dispatcher (the engine's own thread) and a consumer. Capacities are
//! shrunk under the cfg (a watcher queue holds one handle), the clock is
//! frozen, and every wake-up must be an explicit unpark: a consumer that
//! sleeps with an item waiting, or a dispatcher that sleeps with a change
//! or a request waiting, deadlocks the model and loom reports it.
#![cfg(herald_loom)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herald::config::SlowWatchers;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::{
    Change, Config, EndReason, Engine, EventKind, Object, Relist, Watch, WatchItem, WatchRequest,
    Writer,
};
use herald_loom_tests::{FrozenClock, model};
use loom::thread;

fn engine(config: Config) -> (Engine, Writer) {
    let (engine, mut writer) =
        Engine::new(config.clock(FrozenClock::new()).history_bounds(4, 4)).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    (engine, writer)
}

fn pod(name: &str, node: &str) -> Object {
    Object::builder("ns", name)
        .field("spec.nodeName", node)
        .build()
}

/// (kind, rv) of each event until `n` events or the end.
fn recv(w: &mut Watch, n: usize) -> (Vec<(EventKind, u64)>, Option<EndReason>) {
    let mut out = Vec::new();
    while out.len() < n {
        match w.recv() {
            Some(WatchItem::Event(ev)) => out.push((ev.kind(), ev.resource_version().get())),
            Some(WatchItem::End(r)) => return (out, Some(r)),
            None => panic!("recv after the end"),
        }
    }
    (out, None)
}

/// A queue of one, three changes (Added at 2, 3, 4), a consumer of `req`
/// from rv 1 that starts late: it gets all three in order, once each.
/// Returns the engine's counters after.
fn three_in_order(config: Config, req: WatchRequest) -> herald::stats::Stats {
    let (engine, mut writer) = engine(config);
    let mut w = engine.watch(req.resource_version(Some(1.into()))).unwrap();
    let consumer = thread::spawn(move || {
        let (events, end) = recv(&mut w, 3);
        assert_eq!(end, None);
        assert_eq!(
            events,
            [
                (EventKind::Added, 2),
                (EventKind::Added, 3),
                (EventKind::Added, 4)
            ]
        );
    });
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        writer
            .apply(Change::added(pod(name, "n1"), (i as u64 + 2).into()))
            .unwrap();
    }
    consumer.join().unwrap();
    engine.stats()
}

/// A watch of everything is a follower: it reads the ring itself and the
/// dispatcher only wakes it after each batch (the Dekker pair on the
/// ring's head).
#[test]
fn changes_reach_a_sleeping_consumer() {
    model(|| {
        let (engine, mut writer) = engine(Config::default());
        let mut w = engine
            .watch(WatchRequest::new().resource_version(Some(1.into())))
            .unwrap();
        let consumer = thread::spawn(move || {
            let (events, end) = recv(&mut w, 2);
            assert_eq!(end, None);
            assert_eq!(events, [(EventKind::Added, 2), (EventKind::Added, 3)]);
        });
        writer
            .apply(Change::added(pod("a", "n1"), 2.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("b", "n1"), 3.into()))
            .unwrap();
        consumer.join().unwrap();
        drop(engine);
    });
}

/// Park and resume: a queue of one, three changes, a consumer that starts
/// late. Whatever the interleaving, the consumer gets all three in order,
/// once each: the dispatcher parks it when its queue is full, it replays
/// from the ring, asks to be resumed, and the dispatcher makes it live
/// again at its cursor. (Scoped and without an overflow, so that it parks
/// at once: a watch of everything follows the ring, which
/// `changes_reach_a_sleeping_consumer` covers.)
#[test]
fn park_and_resume_lose_and_repeat_nothing() {
    static PARKED_RUNS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let stats = three_in_order(
            Config::default().spill_limit(0),
            WatchRequest::new().scope(KeyScope::prefix("ns")),
        );
        if stats.parks > 0 {
            PARKED_RUNS.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert!(
        PARKED_RUNS.load(Ordering::Relaxed) > 0,
        "no execution parked the watcher: the model does not cover the hand-over"
    );
}

/// The overflow: a selective watcher (so a full queue spills instead of
/// parking), a queue of one, three changes, a consumer that starts late.
/// Whatever the interleaving of the dispatcher's pushes and spills with
/// the consumer's pops and its taking of the overflow, the consumer gets
/// all three in order, once each, and nothing parks.
#[test]
fn a_spilled_overflow_keeps_order_and_loses_nothing() {
    static SPILLED_RUNS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let stats = three_in_order(
            Config::default(),
            WatchRequest::new().fields("spec.nodeName=n1".parse().unwrap()),
        );
        assert_eq!(
            stats.parks, 0,
            "a selective watcher spills, it does not park"
        );
        if stats.spilled > 0 {
            SPILLED_RUNS.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert!(
        SPILLED_RUNS.load(Ordering::Relaxed) > 0,
        "no execution spilled: the model does not cover the overflow"
    );
}

/// A selective watcher dropped while the dispatcher may be spilling to it
/// (queue of one, three changes, the consumer gone after the first): every
/// handle that reached its overflow goes back to the engine's budget, by
/// the dispatcher's retirement or by its shutdown, whatever the
/// interleaving of the drop with the pushes.
#[test]
fn a_dropped_watcher_gives_its_overflow_back() {
    static SPILLED_RUNS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let (engine, mut writer) = engine(Config::default());
        let mut w = engine
            .watch(
                WatchRequest::new()
                    .fields("spec.nodeName=n1".parse().unwrap())
                    .resource_version(Some(1.into())),
            )
            .unwrap();
        let consumer = thread::spawn(move || {
            let (events, _) = recv(&mut w, 1);
            assert_eq!(events, [(EventKind::Added, 2)]);
            drop(w);
        });
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            writer
                .apply(Change::added(pod(name, "n1"), (i as u64 + 2).into()))
                .unwrap();
        }
        consumer.join().unwrap();
        engine.stop();
        let stats = engine.stats();
        if stats.spilled > 0 {
            SPILLED_RUNS.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(stats.overflow_handles, 0, "overflow handles not given back");
    });
    assert!(
        SPILLED_RUNS.load(Ordering::Relaxed) > 0,
        "no execution spilled: the model does not cover the overflow"
    );
}

/// The trigger index: a watcher indexed under `spec.nodeName=n1`,
/// registered by its own thread while the writer changes things. It hears
/// of the pod that arrives on n1, of the pod leaving n1 (found through the
/// previous object's value), not of the pod on n2, and of the last change:
/// each once, in order, wherever its registration fell.
#[test]
fn registration_racing_dispatch_sees_each_admitted_change_once() {
    model(|| {
        let (engine, mut writer) = engine(Config::default().index("spec.nodeName"));
        let e = engine.clone();
        let consumer = thread::spawn(move || {
            let mut w = e
                .watch(
                    WatchRequest::new()
                        .fields("spec.nodeName=n1".parse().unwrap())
                        .resource_version(Some(1.into())),
                )
                .unwrap();
            let (events, end) = recv(&mut w, 3);
            assert_eq!(end, None);
            assert_eq!(
                events,
                [
                    (EventKind::Added, 2),
                    (EventKind::Deleted, 3),
                    (EventKind::Added, 5)
                ]
            );
        });
        writer
            .apply(Change::added(pod("a", "n1"), 2.into()))
            .unwrap();
        writer
            .apply(Change::modified(pod("a", "n2"), 3.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("b", "n2"), 4.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("c", "n1"), 5.into()))
            .unwrap();
        consumer.join().unwrap();
    });
}

/// Removal racing dispatch: a watcher stopped while changes flow gets its
/// terminal item next, and nothing after it.
#[test]
fn a_stopped_watcher_receives_nothing_after_its_end() {
    model(|| {
        let (engine, mut writer) = engine(Config::default());
        let mut w = engine
            .watch(WatchRequest::new().resource_version(Some(1.into())))
            .unwrap();
        let consumer = thread::spawn(move || {
            let (events, _) = recv(&mut w, 1);
            assert_eq!(events, [(EventKind::Added, 2)]);
            w.stop();
            assert_eq!(w.recv(), Some(WatchItem::End(EndReason::Stopped)));
            assert_eq!(w.recv(), None);
        });
        writer
            .apply(Change::added(pod("a", "n1"), 2.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("b", "n1"), 3.into()))
            .unwrap();
        consumer.join().unwrap();
    });
}

/// The end under the time budget (an empty one: a watcher whose queue of
/// one is full ends at once, gracefully if its initial-events-end bookmark
/// is received but not yet delivered; nobody waits). The stream is the
/// initial state, the initial-events-end bookmark, a gap-free run of
/// changes, then exactly one terminal item and nothing after it; a change
/// that found the queue full is never delivered, and the first reason to
/// end stands.
#[test]
fn a_budget_end_is_gap_free_and_final() {
    model(|| {
        let config = Config::default().slow_watchers(SlowWatchers::TimeBudget {
            refill_per_second: Duration::ZERO,
            cap: Duration::ZERO,
        });
        let (engine, mut writer) =
            Engine::new(config.clock(FrozenClock::new()).history_bounds(4, 4)).unwrap();
        writer
            .replace(Relist::new([pod("z", "n1")], 1.into()))
            .unwrap();
        let mut w = engine
            .watch(
                WatchRequest::new()
                    .send_initial_events(true)
                    .resource_version_match(ResourceVersionMatch::NotOlderThan)
                    .allow_bookmarks(true),
            )
            .unwrap();
        let consumer = thread::spawn(move || {
            let mut items = Vec::new();
            let end = loop {
                match w.recv() {
                    Some(WatchItem::Event(ev)) => items.push((
                        ev.kind(),
                        ev.resource_version().get(),
                        ev.is_initial_events_end(),
                    )),
                    Some(WatchItem::End(r)) => break r,
                    None => panic!("recv after the end"),
                }
            };
            assert_eq!(w.recv(), None, "an item after the terminal one");
            (items, end)
        });
        writer
            .apply(Change::added(pod("a", "n1"), 2.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("b", "n1"), 3.into()))
            .unwrap();
        let ended_by_dispatcher = engine.stats().terminations.too_slow > 0;
        engine.stop();
        let (items, end) = consumer.join().unwrap();
        // The snapshot is the state at S (1, 2 or 3, wherever the consumer
        // took it), keys in order (a, b, z), then the initial-events-end
        // bookmark at S, then the changes after S. The stream is a prefix
        // of that for one S: in order, no gap, no repeat.
        let full = |s: u64| {
            let mut v = Vec::new();
            v.extend(
                [(EventKind::Added, 2, false)]
                    .into_iter()
                    .filter(|_| s >= 2),
            );
            v.extend(
                [(EventKind::Added, 3, false)]
                    .into_iter()
                    .filter(|_| s >= 3),
            );
            v.push((EventKind::Added, 1, false));
            v.push((EventKind::Bookmark, s, true));
            v.extend((s + 1..=3).map(|rv| (EventKind::Added, rv, false)));
            v
        };
        assert!(
            (1..=3).any(|s| full(s).starts_with(&items)),
            "not a prefix of any snapshot's stream: {items:?}"
        );
        let changes_after_bookmark = items
            .iter()
            .skip_while(|i| i.0 != EventKind::Bookmark)
            .skip(1)
            .count();
        match end {
            // Ended for a full queue at the second change queued: that
            // change is never delivered.
            EndReason::TooSlow => assert!(changes_after_bookmark <= 1, "{items:?}"),
            // The end is set once: one the dispatcher set stands.
            EndReason::EngineStopped => assert!(!ended_by_dispatcher),
            other => panic!("unexpected end {other:?}"),
        }
    });
}

/// The writer gate: a ring of two slots, three changes after the list. The
/// writer must wait for the dispatcher to move past the slot it reuses,
/// and must be woken when it has (a lost wake deadlocks the model).
#[test]
fn a_gated_writer_is_woken() {
    model(|| {
        let (engine, mut writer) = Engine::new(
            Config::default()
                .clock(FrozenClock::new())
                .history_bounds(2, 2),
        )
        .unwrap();
        writer.replace(Relist::new([], 1.into())).unwrap();
        for rv in 2..=4 {
            writer
                .apply(Change::added(pod(&rv.to_string(), "n1"), rv.into()))
                .unwrap();
        }
        assert_eq!(engine.resource_version().get(), 4);
    });
}

/// Inline dispatch: the writer fans its changes out itself when it finds
/// the dispatcher's state free, else leaves them to the dispatcher thread
/// and wakes it. Whichever interleaving (the thread in a turn, parked, or
/// waiting for the state the writer holds), a sleeping follower gets both
/// changes.
#[test]
fn changes_reach_a_sleeping_consumer_inline() {
    model(|| {
        let (engine, mut writer) = engine(Config::default().inline_dispatch(true));
        let mut w = engine
            .watch(WatchRequest::new().resource_version(Some(1.into())))
            .unwrap();
        let consumer = thread::spawn(move || {
            let (events, end) = recv(&mut w, 2);
            assert_eq!(end, None);
            assert_eq!(events, [(EventKind::Added, 2), (EventKind::Added, 3)]);
        });
        writer
            .apply(Change::added(pod("a", "n1"), 2.into()))
            .unwrap();
        writer
            .apply(Change::added(pod("b", "n1"), 3.into()))
            .unwrap();
        consumer.join().unwrap();
        drop(engine);
    });
}

/// Inline dispatch with queues of one: pushes, parks and resumes split
/// between the writer and the dispatcher thread lose and repeat nothing.
#[test]
fn park_and_resume_lose_and_repeat_nothing_inline() {
    model(|| {
        three_in_order(
            Config::default().spill_limit(0).inline_dispatch(true),
            WatchRequest::new().scope(KeyScope::prefix("ns")),
        );
    });
}

/// A drain racing the writer and a registration: whatever the order, a
/// bookmark comes only after the change it covers, and nothing follows a
/// bookmark that it covers. The watch sees the change at 2, or the drain's
/// end (a watch registered after the drain is not ended by it).
fn drained_in_order(req: WatchRequest, inline: bool) {
    let (engine, mut writer) = engine(Config::default().inline_dispatch(inline));
    let e = engine.clone();
    let consumer = thread::spawn(move || {
        let mut w = e
            .watch(req.resource_version(Some(1.into())).allow_bookmarks(true))
            .unwrap();
        let (mut items, mut end) = (Vec::new(), None);
        while !items.contains(&(EventKind::Added, 2)) {
            match w.recv() {
                Some(WatchItem::Event(ev)) => {
                    items.push((ev.kind(), ev.resource_version().get()));
                }
                Some(WatchItem::End(r)) => {
                    end = Some(r);
                    break;
                }
                None => panic!("recv after the end"),
            }
        }
        assert!(
            matches!(
                items[..],
                [] | [(EventKind::Added, 2)] | [(EventKind::Added, 2), (EventKind::Bookmark, 2)]
            ),
            "{items:?}"
        );
        assert!(matches!(end, None | Some(EndReason::Drained)), "{end:?}");
    });
    writer
        .apply(Change::added(pod("a", "n1"), 2.into()))
        .unwrap();
    engine.drain();
    consumer.join().unwrap();
}

/// A filtered watch is fed by the dispatcher: a drain taken up with its
/// registration dispatches to it what the catch-up covers. (The route
/// table the catch-up used to read was the one published before the
/// registration; `engine/tests/drain.rs` found that, under load, and the
/// bound of two preemptions does not reach it.)
#[test]
fn a_drain_racing_a_registration_keeps_order() {
    model(|| {
        drained_in_order(
            WatchRequest::new().fields("spec.nodeName=n1".parse().unwrap()),
            false,
        );
    });
}

/// A follower replays the ring itself: the drain's bookmark never comes
/// before the change its replay has not reached.
#[test]
fn a_drained_follower_keeps_order() {
    model(|| drained_in_order(WatchRequest::new(), true));
}
