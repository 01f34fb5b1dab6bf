//! `Config::inline_dispatch`: the writer fans its changes out itself when
//! the dispatcher is idle. What it must keep (each watch gets exactly its
//! changes, in order; waits for a version, re-lists, stops and the time
//! budget work as without it) and what it is for (a watch is woken from
//! the writer's own thread). The differential, delivery and stress tests
//! run every other case with it on as well.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::Duration;

use herald::config::SlowWatchers;
use herald::engine::Lifecycle;
use herald::selector::FieldSelector;
use herald::*;

const LIVENESS: Duration = Duration::from_secs(20);

fn engine(inline: bool) -> (Engine, Writer) {
    Engine::new(
        Config::default()
            .index("spec.nodeName")
            .inline_dispatch(inline),
    )
    .unwrap()
}

fn on_node(name: &str, node: u64) -> Object {
    Object::builder("ns", name)
        .field("spec.nodeName", &format!("node-{node}"))
        .build()
}

fn next_event(w: &mut Watch) -> Event {
    match w.recv_timeout(LIVENESS) {
        Ok(WatchItem::Event(ev)) => ev,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Waits until the dispatcher thread has taken up `n` watches.
fn wait_active(engine: &Engine, n: u64) {
    let deadline = std::time::Instant::now() + LIVENESS;
    while engine.stats().watchers_active < n {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Records the threads it was woken from.
#[derive(Default)]
struct Recorder {
    threads: Mutex<Vec<ThreadId>>,
    wakes: AtomicUsize,
}

impl Wake for Recorder {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls until nothing is ready (the waker armed); returns what it saw.
fn drain(w: &mut Watch, cx: &mut Context<'_>) -> Vec<u64> {
    let mut seen = Vec::new();
    while let Poll::Ready(v) =
        w.poll_visit_batch(cx, 64, |ev| seen.push(ev.resource_version().get()))
    {
        assert!(v.end.is_none(), "ended: {:?}", v.end);
    }
    seen
}

/// Waits (up to the liveness bound) for `rec`'s first wake, and checks it
/// came from another thread than the test's (the dispatcher's, not an
/// inline dispatch).
fn woken_elsewhere(rec: &Recorder) {
    let deadline = std::time::Instant::now() + LIVENESS;
    while rec.wakes.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_ne!(rec.threads.lock().unwrap()[0], std::thread::current().id());
}

#[test]
fn a_write_wakes_its_watch_from_the_writers_thread() {
    let (engine, mut writer) = engine(true);
    writer
        .replace(Relist::new([on_node("a", 1)], 1.into()))
        .unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(1.into()))
                .fields(FieldSelector::parse("spec.nodeName=node-1").unwrap()),
        )
        .unwrap();
    let rec = Arc::new(Recorder::default());
    let waker = Waker::from(rec.clone());
    let mut cx = Context::from_waker(&waker);
    wait_active(&engine, 1);
    assert!(drain(&mut w, &mut cx).is_empty());
    // The dispatcher thread may be in a turn (a tick) when a write comes:
    // then it dispatches the change, as without inline dispatch. Most
    // writes find it idle and wake the watch before `apply` returns.
    let me = std::thread::current().id();
    let mut rv = 1;
    let mut inline_wakes = 0;
    for _ in 0..50 {
        rv += 1;
        let before = rec.wakes.load(Ordering::SeqCst);
        writer
            .apply(Change::modified(on_node("a", 1), rv.into()))
            .unwrap();
        if rec.wakes.load(Ordering::SeqCst) > before
            && rec.threads.lock().unwrap().last() == Some(&me)
        {
            inline_wakes += 1;
        }
        let deadline = std::time::Instant::now() + LIVENESS;
        let mut seen = Vec::new();
        while seen.is_empty() {
            assert!(std::time::Instant::now() < deadline);
            seen = drain(&mut w, &mut cx);
        }
        assert_eq!(seen, [rv]);
    }
    assert!(
        inline_wakes >= 25,
        "{inline_wakes} of 50 writes woke from the writer"
    );
}

#[test]
fn without_it_the_dispatcher_thread_wakes() {
    let (engine, mut writer) = engine(false);
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let rec = Arc::new(Recorder::default());
    let waker = Waker::from(rec.clone());
    let mut cx = Context::from_waker(&waker);
    wait_active(&engine, 1);
    assert!(drain(&mut w, &mut cx).is_empty());
    writer
        .apply(Change::added(on_node("a", 1), 2.into()))
        .unwrap();
    woken_elsewhere(&rec);
}

#[test]
fn many_watches_get_exactly_their_changes_in_order() {
    const NODES: u64 = 16;
    const CHANGES: u64 = 4000;
    let (engine, mut writer) = engine(true);
    writer.replace(Relist::new([], 1.into())).unwrap();
    let watches: Vec<Watch> = (0..NODES)
        .map(|n| {
            engine
                .watch(
                    WatchRequest::new()
                        .resource_version(Some(1.into()))
                        .fields(FieldSelector::parse(&format!("spec.nodeName=node-{n}")).unwrap()),
                )
                .unwrap()
        })
        .chain(std::iter::once(
            engine
                .watch(WatchRequest::new().resource_version(Some(1.into())))
                .unwrap(),
        ))
        .collect();
    let readers: Vec<_> = watches
        .into_iter()
        .enumerate()
        .map(|(i, mut w)| {
            std::thread::spawn(move || {
                let i = i as u64;
                let expected: Vec<u64> = (0..CHANGES)
                    .filter(|k| i == NODES || k % NODES == i)
                    .map(|k| k + 2)
                    .collect();
                let mut got = Vec::new();
                while got.len() < expected.len() {
                    got.push(next_event(&mut w).resource_version().get());
                }
                assert_eq!(got, expected, "watch {i}");
            })
        })
        .collect();
    for k in 0..CHANGES {
        // Each key keeps its node (k % 64 fixes k % NODES): a change
        // never moves an object out of a watch's selection.
        let object = on_node(&format!("o{}", k % 64), k % NODES);
        let change = if k < 64 {
            Change::added(object, (k + 2).into())
        } else {
            Change::modified(object, (k + 2).into())
        };
        writer.apply(change).unwrap();
        if k % 256 == 0 {
            std::thread::yield_now();
        }
    }
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn a_watch_waiting_for_a_version_starts_when_an_inline_write_reaches_it() {
    let (engine, mut writer) = engine(true);
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(5.into())))
        .unwrap();
    for rv in 2..=7 {
        writer
            .apply(Change::added(on_node(&format!("o{rv}"), 0), rv.into()))
            .unwrap();
    }
    assert_eq!(next_event(&mut w).resource_version().get(), 6);
    assert_eq!(next_event(&mut w).resource_version().get(), 7);
}

#[test]
fn a_relist_ends_watches_and_later_writes_reach_new_ones() {
    for _ in 0..200 {
        for inline in [true, false] {
            relist_case(inline);
        }
    }
}

fn relist_case(inline: bool) {
    let (engine, mut writer) = engine(inline);
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut old = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    writer
        .apply(Change::added(on_node("a", 0), 2.into()))
        .unwrap();
    writer
        .replace(Relist::new([on_node("a", 0)], 3.into()))
        .unwrap();
    let mut new = engine
        .watch(WatchRequest::new().resource_version(Some(3.into())))
        .unwrap();
    writer
        .apply(Change::modified(on_node("a", 0), 4.into()))
        .unwrap();
    // The old watch may end before it is served its change (a re-list
    // reached first ends it), with or without inline dispatch.
    loop {
        match old.recv_timeout(LIVENESS) {
            Ok(WatchItem::Event(ev)) => assert_eq!(ev.resource_version().get(), 2),
            Ok(WatchItem::End(EndReason::Relisted)) => break,
            other => panic!("inline {inline}: {other:?}"),
        }
    }
    match new.recv_timeout(LIVENESS) {
        Ok(WatchItem::Event(ev)) => assert_eq!(ev.resource_version().get(), 4),
        other => panic!("inline {inline}: {other:?}"),
    }
}

/// Stops the engine from its wake (which an inline dispatch runs on the
/// writer's thread, holding the dispatcher's state).
struct Stopper(Mutex<Option<Engine>>);

impl Wake for Stopper {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let e = self.0.lock().unwrap().take();
        if let Some(e) = e {
            e.stop();
        }
    }
}

#[test]
fn a_waker_that_stops_the_engine_does_not_deadlock() {
    for inline in [true, false] {
        let (engine, mut writer) = engine(inline);
        writer.replace(Relist::new([], 1.into())).unwrap();
        let mut w = engine
            .watch(WatchRequest::new().resource_version(Some(1.into())))
            .unwrap();
        wait_active(&engine, 1);
        let stopper = Arc::new(Stopper(Mutex::new(Some(engine.clone()))));
        let waker = Waker::from(stopper.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(drain(&mut w, &mut cx).is_empty());
        let _ = writer.apply(Change::added(on_node("a", 0), 2.into()));
        // Whichever thread woke it, the engine stops and the watch ends.
        let deadline = std::time::Instant::now() + LIVENESS;
        while engine.lifecycle() != Lifecycle::Stopped {
            assert!(std::time::Instant::now() < deadline, "inline {inline}");
            std::thread::sleep(Duration::from_millis(1));
        }
        engine.stop();
        loop {
            match w.recv_timeout(LIVENESS) {
                Ok(WatchItem::End(EndReason::EngineStopped)) => break,
                Ok(WatchItem::Event(_)) => {}
                other => panic!("inline {inline}: {other:?}"),
            }
        }
    }
}

#[test]
fn the_time_budget_keeps_dispatching_on_its_thread() {
    let (engine, mut writer) = Engine::new(
        Config::default()
            .slow_watchers(SlowWatchers::reference_budget())
            .inline_dispatch(true),
    )
    .unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let rec = Arc::new(Recorder::default());
    let waker = Waker::from(rec.clone());
    let mut cx = Context::from_waker(&waker);
    assert!(drain(&mut w, &mut cx).is_empty());
    writer
        .apply(Change::added(on_node("a", 0), 2.into()))
        .unwrap();
    woken_elsewhere(&rec);
    assert_eq!(next_event(&mut w).resource_version().get(), 2);
}
