//! A stall among many (docs/semantics.md §5), with real threads and the system
//! clock, under both slow-watcher policies: 1% of 1,000 watchers stop
//! reading while the writer runs (one before the first change, the others
//! part-way through). Only outcomes are asserted, never timings:
//!
//! - every other watcher receives exactly its filter's view of every
//!   change (in order, nothing missing, nothing repeated), nothing more,
//!   and then `EngineStopped` when the engine stops;
//! - every stalled watcher ends with its policy's reason (`Gone` once the
//!   writer has lapped it under [`SlowWatchers::Park`], `TooSlow` under the
//!   reference's time budget), after a gap-free, in-order prefix of that
//!   same view.
//!
//! The writer is paced by outcomes, not by time: it writes a few changes,
//! then waits until every watcher that is not (yet) stalled has received
//! them. A healthy watcher's queue therefore never fills, so whatever ends
//! a watcher here is its stall, never a slow or noisy machine.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use herald::config::SlowWatchers;
use herald::stats::Stats;
use herald::watch::TryRecvError;
use herald::*;
use herald_testkit::eventually;

const WATCHERS: usize = 1_000;
/// Watchers 0, 101, ..., 909 stall: 1%, spread over every filter.
const STALL_EVERY: usize = 101;
const STALLED: usize = 10;
const CHANGES: usize = 20_000;
/// Changes written between two waits for the watchers: fewer than the
/// smallest queue (10), so no queue of a watcher that reads ever fills.
const CHUNK: usize = 5;
/// The history ring, fixed: after the last stall the writer laps it
/// several times.
const HISTORY: usize = 512;
const CONSUMERS: usize = 4;
const LIST_RV: u64 = 1;
/// Liveness only: a bug fails the test instead of hanging it.
const LIVENESS: Duration = Duration::from_secs(60);

fn is_stalled(i: usize) -> bool {
    i % STALL_EVERY == 0
}

/// Half the watchers see everything; the others select by labels, which
/// the workload changes, so they also see objects enter (Added) and leave
/// (Deleted) their view.
fn filter_class(i: usize) -> usize {
    match i % 4 {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    }
}

fn filters() -> [ModelFilter; 3] {
    let labels = |s: &str| ModelFilter {
        labels: s.parse().unwrap(),
        ..ModelFilter::everything()
    };
    [
        ModelFilter::everything(),
        labels("app=web"),
        labels("app in (api,db),tier!=c"),
    ]
}

/// One watch, as a consumer thread holds it.
struct Slot {
    i: usize,
    watch: Watch,
    /// Its filter's view of every change after `LIST_RV`.
    want: Arc<[Seen]>,
    /// It is read until it has received this many events: all of them, or
    /// (stalled) the point where it stops reading.
    limit: usize,
    /// Events received so far, each checked against `want`.
    got: usize,
    /// An end received while reading (a failure unless stalled).
    end: Option<EndReason>,
}

fn same(ev_kind: EventKind, ev_rv: u64, ev_key: Option<&str>, want: &Seen) -> bool {
    (ev_kind, ev_rv, ev_key) == (want.kind, want.rv, Some(want.key.as_str()))
}

/// Drains its watches round-robin without blocking, checking every event
/// as it comes and publishing each watch's count in `progress`, until
/// `done`.
fn consume(mut slots: Vec<Slot>, progress: Arc<[AtomicUsize]>, done: Arc<AtomicBool>) -> Vec<Slot> {
    while !done.load(Ordering::Acquire) {
        let mut moved = 0;
        for s in &mut slots {
            if s.got >= s.limit || s.end.is_some() {
                continue;
            }
            let (i, want, got) = (s.i, &s.want, &mut s.got);
            let visited = s.watch.visit_batch(s.limit - *got, |ev| {
                let w = &want[*got];
                let key = ev.object().map(Object::key);
                assert!(
                    same(ev.kind(), ev.resource_version().get(), key, w),
                    "watcher {i}, event {}: got {:?} {} {key:?}, want {:?} {} {}",
                    *got,
                    ev.kind(),
                    ev.resource_version().get(),
                    w.kind,
                    w.rv,
                    w.key
                );
                *got += 1;
            });
            if visited.events > 0 {
                progress[i].store(*got, Ordering::Release);
                moved += visited.events;
            }
            if let Some(end) = visited.end {
                assert!(
                    is_stalled(i),
                    "healthy watcher {i} ended after {got} events: {end}"
                );
                s.end = Some(end);
            }
        }
        if moved == 0 {
            std::thread::yield_now();
        }
    }
    slots
}

/// The whole scenario under `policy`; `stalled_end` says which end a
/// stalled watcher must come to. Returns the engine's final counters.
fn run(policy: SlowWatchers, stalled_end: fn(&EndReason) -> bool) -> Stats {
    // The changes (adds, label moves, deletes over 300 keys) and what each
    // filter sees of them, from the sequential model.
    let mut rng = Rng::new(0x5354_414C_4C21);
    let changes = workload(
        &mut rng,
        LIST_RV,
        CHANGES,
        300,
        10,
        20,
        &mut BTreeMap::new(),
    );
    let model = Model::new(LIST_RV, &[], &changes);
    let views: Vec<Arc<[Seen]>> = filters()
        .iter()
        .map(|f| model.changes_after(f, LIST_RV).into())
        .collect();
    // After chunk m, a watcher of class c has received counts[c][m] events.
    let counts: Vec<Vec<usize>> = views
        .iter()
        .map(|view| {
            changes
                .chunks(CHUNK)
                .map(|chunk| {
                    let last = chunk.last().unwrap().resource_version().get();
                    view.partition_point(|s| s.rv <= last)
                })
                .collect()
        })
        .collect();
    // Watcher 101 k stops after k/20 of its view: the first stalls before
    // any change, the last with more than half of the changes to come.
    let limit = |i: usize| {
        let n = views[filter_class(i)].len();
        if is_stalled(i) {
            (i / STALL_EVERY) * n / 20
        } else {
            n
        }
    };
    assert_eq!((0..WATCHERS).filter(|&i| is_stalled(i)).count(), STALLED);

    let (engine, mut writer) = Engine::new(
        Config::default()
            .history_bounds(HISTORY, HISTORY)
            .slow_watchers(policy),
    )
    .unwrap();
    writer.replace(Relist::new([], LIST_RV.into())).unwrap();
    let fs = filters();
    let mut watches: Vec<Watch> = (0..WATCHERS)
        .map(|i| {
            let req = fs[filter_class(i)].request();
            engine
                .watch(req.resource_version(Some(LIST_RV.into())))
                .unwrap()
        })
        .collect();
    // Every watch begun (registered, its start resolved) before the first
    // change: each must see every change after the list.
    eventually("all watches registered", || {
        engine.stats().watchers_active == WATCHERS as u64
    });
    for w in &mut watches {
        assert_eq!(w.try_recv(), Err(TryRecvError::Empty));
    }

    let progress: Arc<[AtomicUsize]> = (0..WATCHERS).map(|_| AtomicUsize::new(0)).collect();
    let done = Arc::new(AtomicBool::new(false));
    let mut shares: Vec<Vec<Slot>> = (0..CONSUMERS).map(|_| Vec::new()).collect();
    for (i, watch) in watches.into_iter().enumerate() {
        shares[i % CONSUMERS].push(Slot {
            i,
            watch,
            want: views[filter_class(i)].clone(),
            limit: limit(i),
            got: 0,
            end: None,
        });
    }
    let consumers: Vec<JoinHandle<Vec<Slot>>> = shares
        .into_iter()
        .map(|slots| {
            let (progress, done) = (progress.clone(), done.clone());
            std::thread::spawn(move || consume(slots, progress, done))
        })
        .collect();

    // The writer: a chunk, then wait until every watcher that reads has
    // received all of it that its filter admits.
    for (m, chunk) in changes.chunks(CHUNK).enumerate() {
        for c in chunk {
            writer.apply(c.clone()).unwrap();
        }
        let give_up = Instant::now() + LIVENESS;
        for (i, p) in progress.iter().enumerate() {
            let target = counts[filter_class(i)][m].min(limit(i));
            while p.load(Ordering::Acquire) < target {
                assert!(
                    !consumers.iter().any(JoinHandle::is_finished),
                    "a consumer thread failed (see its panic above)"
                );
                assert!(
                    Instant::now() < give_up,
                    "chunk {m}: watcher {i} stuck at {} of {target} events",
                    p.load(Ordering::Acquire)
                );
                std::thread::yield_now();
            }
        }
    }
    done.store(true, Ordering::Release);
    let mut slots: Vec<Slot> = consumers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    slots.sort_by_key(|s| s.i);

    // The healthy: everything, checked event by event, and nothing more.
    for s in slots.iter_mut().filter(|s| !is_stalled(s.i)) {
        assert_eq!(s.got, s.want.len(), "watcher {}", s.i);
        assert_eq!(s.end, None, "watcher {}", s.i);
        assert_eq!(
            s.watch.try_recv(),
            Err(TryRecvError::Empty),
            "watcher {}: more than every change",
            s.i
        );
    }

    // The stalled, read to their end before the engine stops (a parked
    // watcher learns it is gone only when it reads): a gap-free prefix of
    // their view, then the policy's end.
    for s in slots.iter_mut().filter(|s| is_stalled(s.i)) {
        let i = s.i;
        let (more, end) = match s.end.take() {
            Some(end) => (Vec::new(), end),
            None => recv_to_end(&mut s.watch),
        };
        for (n, seen) in more.iter().enumerate() {
            let w = s.want.get(s.got + n);
            assert!(
                w.is_some_and(|w| same(seen.kind, seen.rv, Some(&seen.key), w)),
                "stalled watcher {i}, event {}: got {seen:?}, want {w:?}",
                s.got + n
            );
        }
        let total = s.got + more.len();
        assert!(total < s.want.len(), "stalled watcher {i} got everything");
        assert!(stalled_end(&end), "stalled watcher {i} ended with {end:?}");
        if let EndReason::Gone(gone) = &end {
            // It names the last version it received, and the change it
            // needs next really has left the history.
            let last = total.checked_sub(1).map_or(LIST_RV, |n| s.want[n].rv);
            assert_eq!(gone.requested().get(), last, "stalled watcher {i}");
            assert!(
                s.want[total].rv <= gone.oldest_servable().get(),
                "stalled watcher {i}: {gone} while rv {} was still servable",
                s.want[total].rv
            );
        }
        assert_eq!(s.watch.recv(), None, "stalled watcher {i}: after its end");
    }
    let stats = engine.stats();
    assert_eq!(stats.changes_received, CHANGES as u64);
    assert_eq!(stats.terminations.total(), STALLED as u64, "{stats:?}");

    // Then the engine stops: the healthy end with EngineStopped, and only
    // with it.
    engine.stop();
    for s in slots.iter_mut().filter(|s| !is_stalled(s.i)) {
        assert_eq!(
            s.watch.recv(),
            Some(WatchItem::End(EndReason::EngineStopped)),
            "watcher {}",
            s.i
        );
        assert_eq!(s.watch.recv(), None, "watcher {}", s.i);
    }
    let stats = engine.stats();
    assert_eq!(
        stats.terminations.engine_stopped,
        (WATCHERS - STALLED) as u64
    );
    assert_eq!(stats.terminations.total(), WATCHERS as u64);
    stats
}

#[test]
fn parked_stalled_watchers_end_gone_and_the_others_get_everything() {
    let stats = run(SlowWatchers::Park, |end| matches!(end, EndReason::Gone(_)));
    // The selective stalled watchers overflow, then park; those that admit
    // everything follow the ring and never park: all end Gone.
    assert!(stats.parks >= 1, "{stats:?}");
    assert_eq!(stats.terminations.gone, STALLED as u64);
    assert_eq!(stats.budget_rounds, 0);
}

#[test]
fn time_budget_ends_stalled_watchers_too_slow_and_the_others_get_everything() {
    let stats = run(SlowWatchers::reference_budget(), |end| {
        *end == EndReason::TooSlow
    });
    assert_eq!(stats.terminations.too_slow, STALLED as u64);
    assert!(stats.budget_rounds >= 1, "{stats:?}");
    assert_eq!(stats.parks, 0);
}
