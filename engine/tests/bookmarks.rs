//! Bookmarks and deadlines on a manual clock: every schedule case
//! (frequency, 2 s before the deadline, none after it, none before the
//! first list, none unless allowed), the version a bookmark carries
//! (progress included; nothing at or below the start), that bookmarks never
//! block or end a watcher, and deadlines. The tests move the clock and wait
//! for the dispatcher's tick counter: outcomes only, no sleeps.

use std::time::Duration;

use herald::clock::ManualClock;
use herald::config::SlowWatchers;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::TryRecvError;
use herald::*;
use herald_testkit::eventually;

const S: Duration = Duration::from_secs(1);

struct Rig {
    clock: ManualClock,
    engine: Engine,
    writer: Writer,
}

impl Rig {
    fn new(config: Config) -> Rig {
        let clock = ManualClock::new();
        let (engine, writer) = Engine::new(config.clock(clock.clone())).unwrap();
        Rig {
            clock,
            engine,
            writer,
        }
    }

    /// Moves the clock and waits for the tick it causes (the tick comes 1
    /// to 1.25 s after the previous one, so a step of at least 1.25 s
    /// always causes one).
    fn advance(&self, by: Duration) {
        assert!(by >= Duration::from_millis(1250), "a step that ticks");
        let ticks = self.engine.stats().ticks;
        self.clock.advance(by);
        eventually("a tick", || self.engine.stats().ticks > ticks);
    }

    fn watch(&self, req: WatchRequest) -> Watch {
        let active = self.engine.stats().watchers_active;
        let w = self.engine.watch(req).unwrap();
        eventually("registered", || {
            self.engine.stats().watchers_active > active
        });
        w
    }

    fn add(&mut self, rv: u64) {
        let o = Object::builder("ns", &format!("o{rv}")).build();
        self.writer.apply(Change::added(o, rv.into())).unwrap();
    }
}

fn after(rv: u64) -> WatchRequest {
    WatchRequest::new()
        .resource_version(Some(rv.into()))
        .allow_bookmarks(true)
}

#[track_caller]
fn expect_bookmark(w: &mut Watch, rv: u64) {
    match w.try_recv() {
        Ok(WatchItem::Event(e)) => {
            assert_eq!(e.kind(), EventKind::Bookmark);
            assert_eq!(e.resource_version().get(), rv);
            assert!(!e.is_initial_events_end());
            assert!(e.object().is_none());
        }
        other => panic!("expected a bookmark at {rv}, got {other:?}"),
    }
}

#[track_caller]
fn expect_nothing(w: &mut Watch) {
    assert_eq!(w.try_recv(), Err(TryRecvError::Empty));
}

#[track_caller]
fn expect_event(w: &mut Watch, rv: u64) {
    match w.recv() {
        Some(WatchItem::Event(e)) => assert_eq!(e.resource_version().get(), rv),
        other => panic!("expected the change at {rv}, got {other:?}"),
    }
}

#[test]
fn one_bookmark_per_frequency_carrying_the_last_version() {
    let mut rig = Rig::new(Config::default());
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(after(1));
    rig.add(2);
    expect_event(&mut w, 2);
    // Due 60 s after it began: in the one-second bucket of 60 s.
    rig.advance(59 * S);
    expect_nothing(&mut w);
    rig.advance(2 * S);
    expect_bookmark(&mut w, 2);
    rig.add(3);
    expect_event(&mut w, 3);
    // The next one a frequency later, not before.
    rig.advance(58 * S);
    expect_nothing(&mut w);
    rig.advance(2 * S);
    expect_bookmark(&mut w, 3);
    assert_eq!(rig.engine.stats().bookmarks_sent, 2);
}

#[test]
fn the_frequency_is_a_setting() {
    let mut rig = Rig::new(Config::default().bookmark_frequency(5 * S));
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(after(1));
    rig.add(2);
    expect_event(&mut w, 2);
    rig.advance(3 * S);
    expect_nothing(&mut w);
    rig.advance(3 * S);
    expect_bookmark(&mut w, 2);
}

#[test]
fn only_for_watchers_that_allow_them() {
    let mut rig = Rig::new(Config::default());
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(WatchRequest::new().resource_version(Some(1.into())));
    rig.add(2);
    expect_event(&mut w, 2);
    rig.advance(61 * S);
    expect_nothing(&mut w);
    assert_eq!(rig.engine.stats().bookmarks_sent, 0);
}

#[test]
fn two_seconds_before_the_deadline_then_deadline() {
    let mut rig = Rig::new(Config::default());
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(after(1).timeout(30 * S));
    rig.add(2);
    expect_event(&mut w, 2);
    // min(now + 60 s, deadline - 2 s) = 28 s.
    rig.advance(27 * S);
    expect_nothing(&mut w);
    rig.advance(Duration::from_millis(1500));
    expect_bookmark(&mut w, 2);
    assert!(!w.is_finished());
    rig.advance(2 * S);
    assert_eq!(w.recv(), Some(WatchItem::End(EndReason::Deadline)));
    assert_eq!(w.recv(), None);
    assert_eq!(rig.engine.stats().terminations.deadline, 1);
}

#[test]
fn no_bookmark_when_the_deadline_is_less_than_two_seconds_away() {
    let mut rig = Rig::new(Config::default());
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(after(1).timeout(S));
    rig.add(2);
    expect_event(&mut w, 2);
    rig.advance(Duration::from_millis(1250));
    assert_eq!(w.recv(), Some(WatchItem::End(EndReason::Deadline)));
    assert_eq!(rig.engine.stats().bookmarks_sent, 0);
}

#[test]
fn none_before_the_first_list() {
    let mut rig = Rig::new(Config::default());
    let mut w = rig
        .engine
        .watch(
            after(0)
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan),
        )
        .unwrap();
    for _ in 0..3 {
        rig.advance(30 * S);
    }
    expect_nothing(&mut w);
    assert_eq!(rig.engine.stats().bookmarks_sent, 0);
    // Listed: the initial-events-end bookmark, then periodic ones.
    rig.writer.replace(Relist::new([], 7.into())).unwrap();
    let Some(WatchItem::Event(end)) = w.recv() else {
        panic!("the initial-events-end bookmark")
    };
    assert!(end.is_initial_events_end() && end.resource_version().get() == 7);
    rig.add(8);
    expect_event(&mut w, 8);
    // It waited for that bookmark, so it was due at the next tick; that
    // tick finds it delivered and schedules the next a frequency later.
    rig.advance(30 * S);
    expect_nothing(&mut w);
    rig.advance(59 * S);
    expect_nothing(&mut w);
    rig.advance(2 * S);
    expect_bookmark(&mut w, 8);
}

#[test]
fn progress_advances_the_bookmark_version() {
    let mut rig = Rig::new(Config::default());
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut w = rig.watch(after(1));
    rig.add(2);
    expect_event(&mut w, 2);
    rig.writer.progress(50.into()).unwrap();
    rig.advance(61 * S);
    // Not forwarded as such: it only advances the version of the next one.
    expect_bookmark(&mut w, 50);
    rig.add(51);
    expect_event(&mut w, 51);
}

/// Nothing new, nothing sent: a bookmark at or below the version the watch
/// started from is dropped (seeds/000 `process`).
#[test]
fn a_bookmark_at_the_start_version_is_dropped() {
    let rig = Rig::new(Config::default());
    let mut rig = rig;
    rig.writer.replace(Relist::new([], 10.into())).unwrap();
    let mut w = rig.watch(after(10));
    rig.advance(61 * S);
    expect_nothing(&mut w);
    rig.add(11);
    expect_event(&mut w, 11);
    rig.advance(61 * S);
    expect_bookmark(&mut w, 11);
}

/// The initial-events-end bookmark comes once, marked, at the snapshot's
/// version; the periodic ones after it are plain.
#[test]
fn the_initial_events_end_bookmark_once_then_plain_ones() {
    let mut rig = Rig::new(Config::default());
    rig.writer
        .replace(Relist::new([Object::builder("ns", "a").build()], 3.into()))
        .unwrap();
    let mut w = rig.watch(
        after(0)
            .send_initial_events(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan),
    );
    let Some(WatchItem::Event(a)) = w.recv() else {
        panic!("the initial event")
    };
    assert_eq!(a.kind(), EventKind::Added);
    let Some(WatchItem::Event(end)) = w.recv() else {
        panic!("the bookmark")
    };
    assert!(end.is_initial_events_end() && end.resource_version().get() == 3);
    // The ticks while it waited for it send nothing more.
    rig.advance(2 * S);
    expect_nothing(&mut w);
    rig.add(4);
    expect_event(&mut w, 4);
    rig.advance(61 * S);
    expect_bookmark(&mut w, 4);
    assert_eq!(rig.engine.stats().bookmarks_sent, 2);
}

/// Bookmarks never block, park or end anyone: a watcher whose queue is
/// full skips its bookmark, under either policy. (A scoped watcher: one
/// that admits everything follows the ring under the park policy, and its
/// queue never fills.)
#[test]
fn bookmarks_never_block_or_end_a_watcher() {
    for policy in [SlowWatchers::Park, SlowWatchers::reference_budget()] {
        let mut rig = Rig::new(Config::default().slow_watchers(policy));
        rig.writer.replace(Relist::new([], 1.into())).unwrap();
        let mut w = rig.watch(after(1).scope(KeyScope::prefix("ns")));
        // Exactly full (10).
        for rv in 2..=11 {
            rig.add(rv);
        }
        eventually("all dispatched", || {
            rig.engine.stats().changes_dispatched == 11
        });
        rig.advance(61 * S);
        let s = rig.engine.stats();
        assert_eq!(s.terminations.total(), 0, "{policy:?}");
        assert_eq!((s.parks, s.budget_rounds), (0, 0), "{policy:?}");
        for rv in 2..=11 {
            expect_event(&mut w, rv);
        }
        // The skipped bookmark comes at its next time.
        expect_nothing(&mut w);
        rig.advance(61 * S);
        expect_bookmark(&mut w, 11);
    }
}

#[test]
fn deadlines_end_waiting_and_live_watches() {
    let mut rig = Rig::new(Config::default());
    // Begun before the first list: the deadline runs while it waits.
    let mut waiting = rig
        .engine
        .watch(WatchRequest::new().timeout(5 * S))
        .unwrap();
    rig.writer.replace(Relist::new([], 1.into())).unwrap();
    let mut live = rig.watch(
        WatchRequest::new()
            .resource_version(Some(1.into()))
            .timeout(10 * S),
    );
    let mut forever = rig.watch(WatchRequest::new().resource_version(Some(1.into())));
    rig.add(2);
    expect_event(&mut live, 2);
    expect_event(&mut forever, 2);
    rig.advance(6 * S);
    // `waiting` was served its (empty) initial state already; its deadline
    // ends it all the same.
    assert_eq!(waiting.recv(), Some(WatchItem::End(EndReason::Deadline)));
    expect_nothing(&mut live);
    rig.advance(5 * S);
    assert_eq!(live.recv(), Some(WatchItem::End(EndReason::Deadline)));
    rig.add(3);
    expect_event(&mut forever, 3);
    assert_eq!(rig.engine.stats().terminations.deadline, 2);
}
