//! What a hostile or careless user does through the public API (issue 14):
//! huge durations and bounds, churn, concurrent stops, a clock that panics.
//! Each test failed on the engine before the fix it names; none measures
//! speed: the bounds below are liveness limits, tens of times what a
//! healthy engine needs, so that a stalled or dead dispatcher fails the
//! test instead of hanging it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use herald::clock::{Clock, SystemClock};
use herald::config::ConfigError;
use herald::engine::Lifecycle;
use herald::read::ReadAt;
use herald::watch::{TryRecvError, WatchError};
use herald::writer::WriteError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).build()
}

/// Receives the next event or panics (liveness limit, not a timing claim).
fn next_event(w: &mut Watch) -> Event {
    match w.recv_timeout(Duration::from_secs(20)) {
        Ok(WatchItem::Event(ev)) => ev,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Whether a change at `rv` reaches a new watch, and the engine stops
/// cleanly, ending the watch with a reason. Used after each hostile
/// setting that Engine::new accepted.
fn still_serves(engine: &Engine, writer: &mut Writer, rv: u64) {
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some((rv - 1).into())))
        .unwrap();
    writer
        .apply(Change::added(obj(&format!("o{rv}")), rv.into()))
        .unwrap();
    assert_eq!(next_event(&mut w).resource_version().get(), rv);
    engine.stop();
    assert_eq!(
        w.recv_timeout(Duration::from_secs(20)),
        Ok(WatchItem::End(EndReason::EngineStopped))
    );
}

// Finding 2: a huge duration killed the dispatcher thread (unchecked
// `Instant + Duration`), after which nothing started, ended or stopped.
#[test]
fn huge_durations_are_never_and_the_dispatcher_lives() {
    let hostile: [(&str, Config); 4] = [
        ("tick", Config::default().tick(Duration::MAX)),
        (
            "bookmark_frequency",
            Config::default().bookmark_frequency(Duration::MAX),
        ),
        (
            "too_large_timeout",
            Config::default().too_large_timeout(Duration::MAX),
        ),
        (
            "history_window",
            Config::default().history_window(Duration::MAX),
        ),
    ];
    for (what, config) in hostile {
        let (engine, mut writer) = match Engine::new(config) {
            Ok(pair) => pair,
            Err(e) => panic!("{what}: Duration::MAX is a valid 'never', refused: {e}"),
        };
        writer.replace(Relist::new([], 1.into())).unwrap();
        // A bookmark watch with a deadline at the end of time, and one
        // waiting for a future version: each schedules a wake-up.
        let _bookmarks = engine
            .watch(
                WatchRequest::new()
                    .allow_bookmarks(true)
                    .timeout(Duration::MAX),
            )
            .unwrap();
        let mut future = engine
            .watch(WatchRequest::new().resource_version(Some(3.into())))
            .unwrap();
        writer.apply(Change::added(obj("a"), 2.into())).unwrap();
        writer.apply(Change::added(obj("b"), 3.into())).unwrap();
        writer.apply(Change::added(obj("c"), 4.into())).unwrap();
        assert_eq!(
            next_event(&mut future).resource_version().get(),
            4,
            "{what}"
        );
        still_serves(&engine, &mut writer, 5);
    }
}

// Finding 3: `Duration::MAX` as "no timeout" panicked in the caller.
#[test]
fn duration_max_means_no_timeout_for_callers() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(1.into()))
                .timeout(Duration::MAX),
        )
        .unwrap();
    writer.apply(Change::added(obj("a"), 2.into())).unwrap();
    let Ok(WatchItem::Event(ev)) = w.recv_timeout(Duration::MAX) else {
        panic!("no event");
    };
    assert_eq!(ev.resource_version().get(), 2);
    // A wait with no end, released by the engine's stop.
    let stopper = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            engine.stop();
        })
    };
    assert_eq!(
        w.recv_timeout(Duration::MAX),
        Ok(WatchItem::End(EndReason::EngineStopped))
    );
    stopper.join().unwrap();
}

// Finding 4: huge history bounds overflowed or aborted the process on the
// allocation; they are a configuration error.
#[test]
fn huge_history_bounds_are_a_config_error() {
    for (lower, upper) in [
        (usize::MAX, usize::MAX),
        (1 << 62, 1 << 62),
        (100, usize::MAX),
        (1 << 40, 1 << 40),
    ] {
        let err = Engine::new(Config::default().history_bounds(lower, upper)).unwrap_err();
        assert!(
            matches!(err, ConfigError::HistoryBounds { .. }),
            "{lower}..{upper}: {err}"
        );
    }
}

// Finding 8: a second, concurrent `stop()` returned before the engine had
// stopped (29 rounds in 30).
#[test]
fn every_concurrent_stop_returns_after_the_engine_stopped() {
    for round in 0..30 {
        let (engine, mut writer) = Engine::new(Config::default()).unwrap();
        writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
        let watches: Vec<Watch> = (0..200)
            .map(|_| engine.watch(WatchRequest::new()).unwrap())
            .collect();
        let watches = Arc::new(std::sync::Mutex::new(watches));
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let stoppers: Vec<_> = (0..2)
            .map(|_| {
                let (engine, barrier, watches) = (engine.clone(), barrier.clone(), watches.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    engine.stop();
                    // Stopped means every watch has its end: the first
                    // receive that reaches past the initial list sees it.
                    let mut watches = watches.lock().unwrap();
                    for w in watches.iter_mut() {
                        let ended = w.is_finished()
                            || loop {
                                match w.try_recv() {
                                    Ok(WatchItem::Event(_)) => continue,
                                    Ok(WatchItem::End(r)) => {
                                        assert_eq!(r, EndReason::EngineStopped);
                                        break true;
                                    }
                                    Err(TryRecvError::Finished) => break true,
                                    Err(_) => break false,
                                }
                            };
                        assert!(ended, "round {round}: stop returned before a watch ended");
                    }
                })
            })
            .collect();
        for s in stoppers {
            s.join().unwrap();
        }
    }
}

// Finding 1: creating and dropping watches in a loop left a new watch
// waiting 16-19 s for its first event at 100k (quadratic unregistering,
// applied all at once between batches). The limit below is a liveness
// bound: a healthy engine needs well under a second.
#[test]
fn churn_does_not_stall_the_dispatcher() {
    let (engine, mut writer) = Engine::new(Config::default().index("spec.nodeName")).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let kinds = [
        WatchRequest::new().resource_version(Some(1.into())),
        WatchRequest::new().labels("app=web".parse().unwrap()),
        WatchRequest::new().fields("spec.nodeName=n1".parse().unwrap()),
        WatchRequest::new().fields("metadata.name=x".parse().unwrap()),
        WatchRequest::new().allow_bookmarks(true),
    ];
    for i in 0..200_000 {
        drop(engine.watch(kinds[i % kinds.len()].clone()).unwrap());
    }
    let started = Instant::now();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    writer.apply(Change::added(obj("a"), 2.into())).unwrap();
    match w.recv_timeout(Duration::from_secs(15)) {
        Ok(WatchItem::Event(ev)) => assert_eq!(ev.resource_version().get(), 2),
        other => panic!(
            "after churn, no event in {:?}: {other:?}",
            started.elapsed()
        ),
    }
    // The gauges count what is registered: one live watch, nothing else held.
    eventually("gauges settle", || {
        let s = engine.stats();
        (s.watchers_active, s.watchers_pending, s.watchers_retiring) == (1, 0, 0)
    });
}

// Finding 1, with the writer running: three threads churning starved
// everyone for seconds. A steady watcher must keep receiving.
#[test]
fn churn_beside_the_writer_keeps_changes_flowing() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut steady = engine
        .watch(
            WatchRequest::new()
                .labels("app=web".parse().unwrap())
                .resource_version(Some(1.into())),
        )
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let churning = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churners: Vec<_> = (0..3)
        .map(|t| {
            let (engine, done, churning) = (engine.clone(), done.clone(), churning.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while n == 0 || !done.load(Ordering::Relaxed) {
                    let req = if (n + t) % 2 == 0 {
                        WatchRequest::new().labels("app=db".parse().unwrap())
                    } else {
                        WatchRequest::new().resource_version(Some(1.into()))
                    };
                    drop(engine.watch(req).unwrap());
                    if n == 0 {
                        churning.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    // The writer starts once every churner is churning: on a loaded
    // machine, threads just spawned may not have run before it is done.
    while churning.load(Ordering::Relaxed) < 3 {
        std::thread::yield_now();
    }
    for rv in 2..2_002u64 {
        let o = Object::builder("ns", &format!("p{rv}"))
            .label("app", "web")
            .build();
        writer.apply(Change::added(o, rv.into())).unwrap();
        if rv % 100 == 0 {
            // Each hundred changes must reach the steady watcher while the
            // churn goes on (liveness limit per event in `next_event`).
            for want in (rv - 99).max(2)..=rv {
                assert_eq!(next_event(&mut steady).resource_version().get(), want);
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let churned: u64 = churners.into_iter().map(|c| c.join().unwrap()).sum();
    assert!(churned > 0);
}

/// A clock that panics on the dispatcher's thread once armed: the user's
/// code running inside the engine, failing.
#[derive(Debug, Default)]
struct FailingClock {
    armed: AtomicBool,
}

impl Clock for FailingClock {
    fn now(&self) -> Instant {
        if self.armed.load(Ordering::Relaxed)
            && std::thread::current().name() == Some("herald-dispatch")
        {
            panic!("the clock failed");
        }
        Instant::now()
    }

    fn park_until(&self, deadline: Instant, at_most: Duration) {
        SystemClock.park_until(deadline, at_most)
    }
}

// Finding 2: if the dispatcher panics anyway, every watch ends with a
// reason, the engine reports the failure, and stop still returns.
#[test]
fn a_dispatcher_panic_ends_every_watch_and_is_reported() {
    let clock = Arc::new(FailingClock::default());
    let (engine, mut writer) =
        Engine::new(Config::default().clock(SharedClock(clock.clone()))).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    let mut live = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    writer.apply(Change::added(obj("b"), 2.into())).unwrap();
    assert_eq!(next_event(&mut live).resource_version().get(), 2);
    let mut waiting = engine
        .watch(WatchRequest::new().resource_version(Some(100.into())))
        .unwrap();
    clock.armed.store(true, Ordering::Relaxed);
    let _ = writer.apply(Change::added(obj("c"), 3.into()));
    for w in [&mut live, &mut waiting] {
        loop {
            match w.recv_timeout(Duration::from_secs(20)) {
                Ok(WatchItem::Event(_)) => continue,
                Ok(WatchItem::End(r)) => {
                    assert_eq!(r, EndReason::EngineFailed);
                    break;
                }
                other => panic!("a watch outlived its dispatcher: {other:?}"),
            }
        }
    }
    let failure = engine.failure().expect("the engine reports its failure");
    assert!(failure.contains("the clock failed"), "{failure}");
    assert_eq!(engine.lifecycle(), Lifecycle::Stopped);
    assert!(matches!(
        engine.watch(WatchRequest::new()),
        Err(WatchError::EngineStopped)
    ));
    clock.armed.store(false, Ordering::Relaxed);
    assert_eq!(
        writer.apply(Change::added(obj("d"), 4.into())),
        Err(WriteError::Stopped)
    );
    engine.stop();
}

/// Lends an `Arc`'d clock to the engine, so the test keeps a handle on it.
#[derive(Debug)]
struct SharedClock(Arc<FailingClock>);

impl Clock for SharedClock {
    fn now(&self) -> Instant {
        self.0.now()
    }

    fn park_until(&self, deadline: Instant, at_most: Duration) {
        self.0.park_until(deadline, at_most)
    }
}

// Decided (issue 14): stalled selective watchers held up to `spill_limit`
// handles each, without bound in their number (10k: +325 MiB). The
// overflows now share one budget; past it a full queue parks, which holds
// nothing more, and every watcher still gets exactly what it is owed.
#[test]
fn stalled_watchers_share_one_overflow_budget() {
    let (engine, mut writer) = Engine::new(
        Config::default()
            .spill_limit(1_000)
            .spill_budget(100)
            .history_bounds(4_096, 4_096),
    )
    .unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut stalled: Vec<Watch> = (0..20)
        .map(|_| {
            engine
                .watch(
                    WatchRequest::new()
                        .labels("app=web".parse().unwrap())
                        .resource_version(Some(1.into())),
                )
                .unwrap()
        })
        .collect();
    eventually("registered", || engine.stats().watchers_active == 20);
    let mut peak = 0;
    for rv in 2..502u64 {
        let o = Object::builder("ns", &format!("p{rv}"))
            .label("app", "web")
            .build();
        writer.apply(Change::added(o, rv.into())).unwrap();
        peak = peak.max(engine.stats().overflow_handles);
    }
    eventually("dispatched", || engine.stats().changes_dispatched >= 501);
    let stats = engine.stats();
    assert!(peak <= 100, "overflow held {peak} handles, budget 100");
    assert!(stats.parks > 0, "past the budget, full queues park");
    for w in &mut stalled {
        let (seen, end) = recv_events(w, 500);
        assert_eq!(end, None);
        let rvs: Vec<u64> = seen.iter().map(|s| s.rv).collect();
        assert_eq!(rvs, (2..502).collect::<Vec<_>>());
    }
    drop(stalled);
    eventually("the overflow budget is back", || {
        engine.stats().overflow_handles == 0
    });
}

// Finding 3, reads: a read waiting for a future version with
// `too_large_timeout(Duration::MAX)` panicked in the caller; it waits.
#[test]
fn a_read_waits_without_end_under_duration_max() {
    let (engine, mut writer) =
        Engine::new(Config::default().too_large_timeout(Duration::MAX)).unwrap();
    writer.replace(Relist::new([obj("a")], 1.into())).unwrap();
    let reader = {
        let engine = engine.clone();
        std::thread::spawn(move || engine.get("ns/b", ReadAt::NotOlderThan(2.into())))
    };
    std::thread::sleep(Duration::from_millis(20));
    writer.apply(Change::added(obj("b"), 2.into())).unwrap();
    let got = reader.join().expect("the read panicked").unwrap();
    assert_eq!(got.item.unwrap().resource_version.get(), 2);
}
