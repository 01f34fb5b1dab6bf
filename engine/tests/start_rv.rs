//! Every way a watch can start (docs/semantics.md §3.2), Gone (§2.2) and
//! TooLargeResourceVersion.

mod common;

use std::time::Duration;

use common::*;
use herald::engine::Lifecycle;
use herald::event::Gone;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::WatchError;
use herald::writer::WriteError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).label("app", "web").build()
}

/// An engine listed at 10 with objects b, a, then changes at 12, 14, 16.
fn engine_with_history(config: Config) -> (Engine, Writer) {
    let (engine, mut writer) = Engine::new(config).unwrap();
    writer
        .replace(Relist::new([obj("b"), obj("a")], 10.into()))
        .unwrap();
    writer.apply(Change::added(obj("c"), 12.into())).unwrap();
    writer.apply(Change::modified(obj("a"), 14.into())).unwrap();
    writer.apply(Change::deleted(obj("b"), 16.into())).unwrap();
    (engine, writer)
}

fn kinds_rvs(seen: &[Seen]) -> Vec<(EventKind, u64, String)> {
    seen.iter().map(|s| (s.kind, s.rv, s.key.clone())).collect()
}

fn ev(kind: EventKind, rv: u64, key: &str) -> (EventKind, u64, String) {
    (kind, rv, key.to_owned())
}

#[test]
fn unset_and_zero_send_the_state_sorted_by_key_then_changes() {
    for rv in [None, Some(ResourceVersion::ZERO)] {
        let (engine, mut writer) = engine_with_history(Config::default());
        let mut w = engine
            .watch(WatchRequest::new().resource_version(rv))
            .unwrap();
        let (seen, end) = recv_events(&mut w, 2);
        assert_eq!(end, None);
        // State at 16: a (modified at 14), c (added at 12); b is deleted.
        assert_eq!(
            kinds_rvs(&seen),
            [
                ev(EventKind::Added, 14, "ns/a"),
                ev(EventKind::Added, 12, "ns/c")
            ]
        );
        writer.apply(Change::added(obj("d"), 20.into())).unwrap();
        let (seen, _) = recv_events(&mut w, 1);
        assert_eq!(kinds_rvs(&seen), [ev(EventKind::Added, 20, "ns/d")]);
        assert_quiet(&mut w);
    }
}

#[test]
fn exact_rv_replays_every_later_change() {
    let (engine, _writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(12.into())))
        .unwrap();
    let (seen, _) = recv_events(&mut w, 2);
    assert_eq!(
        kinds_rvs(&seen),
        [
            ev(EventKind::Modified, 14, "ns/a"),
            ev(EventKind::Deleted, 16, "ns/b")
        ]
    );
    assert_quiet(&mut w);
}

#[test]
fn rv_between_changes_starts_after_it() {
    let (engine, _writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(13.into())))
        .unwrap();
    let (seen, _) = recv_events(&mut w, 2);
    assert_eq!(seen[0].rv, 14);
    assert_eq!(seen[1].rv, 16);
}

#[test]
fn the_list_rv_is_servable_while_nothing_was_evicted() {
    let (engine, _writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(10.into())))
        .unwrap();
    let (seen, _) = recv_events(&mut w, 3);
    assert_eq!(seen.iter().map(|s| s.rv).collect::<Vec<_>>(), [12, 14, 16]);
    // Older than the list: Gone, with the reference's message.
    let err = engine
        .watch(WatchRequest::new().resource_version(Some(9.into())))
        .unwrap_err();
    assert_eq!(err.to_string(), "too old resource version: 9 (10)");
    assert!(matches!(err, WatchError::Gone(g) if g.requested().get() == 9));
}

#[test]
fn gone_below_the_oldest_kept_change() {
    let (engine, mut writer) = Engine::new(Config::default().history_bounds(4, 4)).unwrap();
    writer.replace(Relist::new([], 100.into())).unwrap();
    for rv in 101..=110 {
        writer
            .apply(Change::added(obj(&rv.to_string()), rv.into()))
            .unwrap();
    }
    // The ring keeps 107..=110: oldest - 1 = 106.
    let err = engine
        .watch(WatchRequest::new().resource_version(Some(105.into())))
        .unwrap_err();
    assert_eq!(err.to_string(), "too old resource version: 105 (106)");
    // 106 itself is servable: everything after it is kept.
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(106.into())))
        .unwrap();
    let (seen, _) = recv_events(&mut w, 4);
    assert_eq!(
        seen.iter().map(|s| s.rv).collect::<Vec<_>>(),
        [107, 108, 109, 110]
    );
}

#[test]
fn a_replay_overtaken_by_eviction_ends_with_gone() {
    // History of 500 changes (several of the ring's chunks), a window that
    // holds them all.
    let (engine, mut writer) = Engine::new(Config::default().history_bounds(512, 512)).unwrap();
    writer.replace(Relist::new([], 100.into())).unwrap();
    for rv in 101..=600 {
        writer
            .apply(Change::added(obj(&rv.to_string()), rv.into()))
            .unwrap();
    }
    eventually("history dispatched", || {
        engine.stats().changes_dispatched == 501
    });
    // Live from after 600: the watch replays 101..=600 from the ring
    // itself.
    let mut w = engine
        .watch(
            WatchRequest::new()
                .labels("app=web".parse().unwrap())
                .resource_version(Some(100.into())),
        )
        .unwrap();
    let (seen, _) = recv_events(&mut w, 1);
    assert_eq!(seen[0].rv, 101);
    // The writer laps the replay many times over with changes the watch
    // does not select (so its queue stays empty and the dispatcher never
    // waits for it).
    for rv in 601..=10_000 {
        let other = Object::builder("ns", &rv.to_string())
            .label("app", "db")
            .build();
        writer.apply(Change::added(other, rv.into())).unwrap();
    }
    let (seen, end) = recv_to_end(&mut w);
    // It may still read what it physically can (the rest of the chunk of
    // history it already holds), in order from 102; then Gone, never a
    // silent gap.
    let rvs: Vec<u64> = seen.iter().map(|s| s.rv).collect();
    let expected: Vec<u64> = (102..=600).collect();
    assert!(expected.starts_with(&rvs), "no silent gap: {rvs:?}");
    assert!(rvs.len() < expected.len(), "the replay was overtaken");
    let last = rvs.last().copied().unwrap_or(101);
    // The ring keeps 9489..=10000.
    assert_eq!(end, EndReason::Gone(Gone::new(last.into(), 9_488.into())));
    assert_eq!(
        end.to_string(),
        format!("too old resource version: {last} (9488)")
    );
    assert_eq!(w.recv(), None);
}

#[test]
fn a_queued_change_overwritten_before_it_is_read_ends_with_gone() {
    let (engine, mut writer) = Engine::new(Config::default().history_bounds(4, 4)).unwrap();
    writer.replace(Relist::new([], 100.into())).unwrap();
    let mut w = engine
        .watch(
            WatchRequest::new()
                .scope(KeyScope::exact("ns/x"))
                .resource_version(Some(100.into())),
        )
        .unwrap();
    eventually("the watch is live", || engine.stats().watchers_active == 1);
    // Begin the watch (its start is resolved on the first receive), so the
    // change below reaches it through its queue, not through a start check.
    assert_quiet(&mut w);
    writer.apply(Change::added(obj("x"), 101.into())).unwrap();
    // Changes the watch does not select: nothing is queued for it, so the
    // dispatcher never waits, and the writer laps the one queued change.
    for rv in 102..=400 {
        writer
            .apply(Change::added(obj(&rv.to_string()), rv.into()))
            .unwrap();
    }
    let (seen, end) = recv_to_end(&mut w);
    assert!(seen.is_empty());
    // The ring keeps 397..=400.
    assert_eq!(end, EndReason::Gone(Gone::new(100.into(), 396.into())));
}

#[test]
fn a_future_rv_waits_until_the_cache_reaches_it() {
    let (engine, mut writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(20.into())))
        .unwrap();
    assert_quiet(&mut w);
    assert_eq!(engine.stats().watchers_pending, 1);
    writer.apply(Change::added(obj("d"), 18.into())).unwrap();
    writer.apply(Change::added(obj("e"), 20.into())).unwrap();
    writer.apply(Change::added(obj("f"), 22.into())).unwrap();
    let (seen, _) = recv_events(&mut w, 1);
    // Only changes after 20.
    assert_eq!(kinds_rvs(&seen), [ev(EventKind::Added, 22, "ns/f")]);
    assert_quiet(&mut w);
}

#[test]
fn progress_reaching_a_future_rv_starts_the_watch() {
    let (engine, mut writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(30.into())))
        .unwrap();
    writer.progress(30.into()).unwrap();
    eventually("the watch is live", || engine.stats().watchers_active == 1);
    writer.apply(Change::added(obj("d"), 31.into())).unwrap();
    let (seen, _) = recv_events(&mut w, 1);
    assert_eq!(seen[0].rv, 31);
}

#[test]
fn a_future_rv_not_reached_in_time_ends_with_too_large() {
    let config = Config::default().too_large_timeout(Duration::from_millis(30));
    let (engine, _writer) = engine_with_history(config);
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(99.into())))
        .unwrap();
    let (seen, end) = recv_to_end(&mut w);
    assert!(seen.is_empty());
    let EndReason::TooLargeResourceVersion(t) = end else {
        panic!("expected TooLargeResourceVersion, got {end:?}");
    };
    assert_eq!(t.to_string(), "Too large resource version: 99, current: 16");
    assert_eq!(t.retry_after(), Duration::from_secs(1));
    assert_eq!(engine.stats().terminations.too_large_resource_version, 1);
}

#[test]
fn send_initial_events_ends_the_state_with_a_bookmark() {
    let (engine, mut writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(
            WatchRequest::new()
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true),
        )
        .unwrap();
    let (seen, _) = recv_events(&mut w, 3);
    assert_eq!(
        kinds_rvs(&seen),
        [
            ev(EventKind::Added, 14, "ns/a"),
            ev(EventKind::Added, 12, "ns/c"),
            ev(EventKind::Bookmark, 16, ""),
        ]
    );
    assert!(seen[2].initial_events_end && !seen[0].initial_events_end);
    writer.apply(Change::added(obj("d"), 17.into())).unwrap();
    let (seen, _) = recv_events(&mut w, 1);
    assert_eq!(seen[0].rv, 17);
}

#[test]
fn send_initial_events_at_a_future_rv_waits_for_it() {
    let (engine, mut writer) = engine_with_history(Config::default());
    let mut w = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(18.into()))
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true),
        )
        .unwrap();
    assert_quiet(&mut w);
    writer.apply(Change::added(obj("d"), 18.into())).unwrap();
    let (seen, _) = recv_events(&mut w, 4);
    assert_eq!(
        kinds_rvs(&seen),
        [
            ev(EventKind::Added, 14, "ns/a"),
            ev(EventKind::Added, 12, "ns/c"),
            ev(EventKind::Added, 18, "ns/d"),
            ev(EventKind::Bookmark, 18, ""),
        ]
    );
}

#[test]
fn watches_begun_before_the_first_list_wait_for_it() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    assert_eq!(engine.lifecycle(), Lifecycle::Pending);
    let mut from_state = engine.watch(WatchRequest::new()).unwrap();
    let mut from_rv = engine
        .watch(WatchRequest::new().resource_version(Some(5.into())))
        .unwrap();
    assert_quiet(&mut from_state);
    writer.replace(Relist::new([obj("a")], 5.into())).unwrap();
    assert_eq!(engine.lifecycle(), Lifecycle::Ready);
    writer.apply(Change::added(obj("b"), 6.into())).unwrap();
    let (seen, _) = recv_events(&mut from_state, 2);
    assert_eq!(
        kinds_rvs(&seen),
        [
            ev(EventKind::Added, 5, "ns/a"),
            ev(EventKind::Added, 6, "ns/b")
        ]
    );
    let (seen, _) = recv_events(&mut from_rv, 1);
    assert_eq!(kinds_rvs(&seen), [ev(EventKind::Added, 6, "ns/b")]);
}

#[test]
fn out_of_order_writes_are_refused_and_change_nothing() {
    let (engine, mut writer) = engine_with_history(Config::default());
    let before = engine.stats().changes_received;
    for rv in [16, 15, 0] {
        assert_eq!(
            writer.apply(Change::added(obj("z"), rv.into())),
            Err(WriteError::OutOfOrder {
                given: rv.into(),
                current: 16.into()
            })
        );
    }
    assert_eq!(
        writer.replace(Relist::new([], 15.into())),
        Err(WriteError::OutOfOrder {
            given: 15.into(),
            current: 16.into()
        })
    );
    assert!(writer.progress(15.into()).is_err());
    assert_eq!(engine.stats().changes_received, before);
    assert_eq!(engine.resource_version().get(), 16);
    // The state is unchanged: z never appeared.
    let mut w = engine.watch(WatchRequest::new()).unwrap();
    let (seen, _) = recv_events(&mut w, 2);
    assert_eq!(
        seen.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
        ["ns/a", "ns/c"]
    );
    assert_quiet(&mut w);
    // The writer's error messages name the problem.
    assert_eq!(
        writer
            .apply(Change::added(obj("z"), 3.into()))
            .unwrap_err()
            .to_string(),
        "out-of-order resource version 3: the cache is at 16"
    );
}
