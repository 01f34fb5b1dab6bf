//! A source whose history went back (issue 14, finding 5): an upstream
//! restored from a backup serves revisions below the cache's. The writer's
//! re-list after a regression, and the reflector following a restore:
//! watchers end `Relisted`, later watches and reads see the restored
//! state, and a consistent read never answers from the old history.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use herald::clock::ManualClock;
use herald::engine::Lifecycle;
use herald::object::Item;
use herald::read::{ListRequest, ReadAt, ReadError};
use herald::reflector::{BackoffConfig, Reflector, ReflectorConfig};
use herald::source::{MemorySource, Source, SourceError};
use herald::watch::WatchError;
use herald::writer::WriteError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str, v: &str) -> Object {
    Object::builder("ns", name).label("v", v).build()
}

/// (key, label v) of every item, in key order.
fn contents(items: &[Item]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|i| {
            (
                i.object.key().to_owned(),
                i.object.label("v").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn pairs(xs: &[(&str, &str)]) -> Vec<(String, String)> {
    xs.iter()
        .map(|(k, v)| (format!("ns/{k}"), (*v).to_owned()))
        .collect()
}

/// A source at revision 20 holding a..e ("old"), and its backup at 10
/// holding a, b ("backup").
fn old_source() -> MemorySource {
    let source = MemorySource::seeded([], 10.into());
    for name in ["a", "b", "c", "d", "e"] {
        source.put(obj(name, "old"));
    }
    source.advance_revision(5);
    assert_eq!(source.current_revision().unwrap().get(), 20);
    source
}

fn backup() -> Vec<Object> {
    vec![obj("a", "backup"), obj("b", "backup")]
}

fn fast_backoff() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(20),
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

fn start(source: &MemorySource, config: ReflectorConfig) -> (Engine, Reflector) {
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let r = Reflector::spawn(Arc::new(source.clone()), engine.clone(), writer, config).unwrap();
    (engine, r)
}

#[test]
fn a_restore_that_restarts_the_source_is_followed() {
    let source = old_source();
    let (engine, reflector) = start(&source, fast_backoff());
    let before = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(before.items.len(), 5);
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(before.resource_version)))
        .unwrap();
    // Restored from the backup at 10, restarted (clients dropped), and
    // written to: revision 11 now names a change of the new history.
    source.restore(backup(), 10.into());
    source.fail_watches(SourceError::Unavailable("restarted".into()));
    source.put(obj("f", "new"));
    let (_, end) = recv_to_end(&mut watch);
    assert_eq!(end, EndReason::Relisted);
    let after = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(
        contents(&after.items),
        pairs(&[("a", "backup"), ("b", "backup"), ("f", "new")])
    );
    assert_eq!(after.resource_version.get(), 11);
    assert_eq!(engine.resource_version().get(), 11);
    let got = reflector.consistent_get("ns/c").unwrap();
    assert!(got.item.is_none(), "an object of the old history: {got:?}");
    // A new watch starts from the restored state and follows it.
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(after.resource_version)))
        .unwrap();
    source.put(obj("g", "new"));
    let (seen, end) = recv_events(&mut watch, 1);
    assert_eq!((seen[0].key.as_str(), seen[0].rv, end), ("ns/g", 12, None));
}

/// The restarted source is quiet: nothing is written after the restore,
/// so only the resumed watch's source can tell the cache is ahead (a watch
/// from revision 20 on a store at 10 would wait, silent, for a revision
/// that names a different history).
#[test]
fn a_restore_seen_only_as_a_dropped_watch_is_followed() {
    let source = old_source();
    let (engine, reflector) = start(&source, fast_backoff());
    let before = reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(before.resource_version)))
        .unwrap();
    source.restore(backup(), 10.into());
    source.fail_watches(SourceError::Unavailable("restarted".into()));
    let (seen, end) = recv_to_end(&mut watch);
    assert_eq!((seen.len(), end), (0, EndReason::Relisted));
    // The reflector counts the regression after the re-list that the
    // engine's version shows: wait for both.
    eventually("the cache follows the restore", || {
        engine.resource_version().get() == 10 && reflector.stats().regressions == 1
    });
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(10.into())))
        .unwrap();
    source.put(obj("f", "new"));
    let (seen, end) = recv_events(&mut watch, 1);
    assert_eq!((seen[0].key.as_str(), seen[0].rv, end), ("ns/f", 11, None));
}

#[test]
fn a_restore_under_an_open_watch_is_followed_without_a_backoff() {
    let source = old_source();
    let (engine, reflector) = start(&source, fast_backoff());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut watch = engine.watch(WatchRequest::new()).unwrap();
    let (initial, _) = recv_events(&mut watch, 5);
    assert_eq!(initial.len(), 5);
    // The store keeps its clients: the reflector's watch sees revision 11
    // of the new history, behind the 20 it has.
    source.restore(backup(), 10.into());
    source.put(obj("f", "new"));
    let (_, end) = recv_to_end(&mut watch);
    assert_eq!(end, EndReason::Relisted);
    eventually("the cache follows the restore", || {
        engine.resource_version().get() == 11
    });
    let now = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(
        contents(&now.items),
        pairs(&[("a", "backup"), ("b", "backup"), ("f", "new")])
    );
    let error = reflector.last_error().unwrap_or_default();
    assert!(error.contains("went back from 20 to 11"), "{error}");
    assert_eq!(reflector.stats().backoffs, 0);
}

#[test]
fn a_consistent_read_never_answers_from_the_old_history() {
    let source = old_source();
    let (_engine, reflector) = start(&source, fast_backoff());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    // Restored, clients kept, nothing written since: the reflector's watch
    // is quiet, so only the read can tell the cache is ahead.
    source.restore(backup(), 10.into());
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(
        contents(&list.items),
        pairs(&[("a", "backup"), ("b", "backup")])
    );
    assert_eq!(list.resource_version.get(), 10);
    let got = reflector.consistent_get("ns/e").unwrap();
    assert!(got.item.is_none(), "an object of the old history: {got:?}");
}

#[test]
fn a_consistent_read_fails_rather_than_wait_forever_for_the_relist() {
    let clock = ManualClock::new();
    let source = old_source();
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_secs(3600),
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        regression_wait: Duration::from_secs(1),
        clock: Arc::new(clock.clone()),
        ..ReflectorConfig::default()
    };
    let (engine, reflector) = start(&source, config);
    eventually("the first list", || engine.resource_version().get() == 20);
    // Restored and restarted: the reflector backs off for an hour (on the
    // manual clock) before it lists again.
    source.restore(backup(), 10.into());
    source.fail_watches(SourceError::Unavailable("restarted".into()));
    eventually("the failed watch", || reflector.stats().backoffs == 1);
    let reflector = Arc::new(reflector);
    let r = reflector.clone();
    let read = std::thread::spawn(move || r.consistent_list(&ListRequest::new()));
    while !read.is_finished() {
        clock.advance(Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(2));
    }
    match read.join().unwrap() {
        Ok(list) => panic!("answered from the old history: {list:?}"),
        Err(e) => assert!(
            e.to_string()
                .contains("source's revision 10 is behind the cache's 20"),
            "{e}"
        ),
    }
    // Once the reflector lists again, the read is served.
    clock.advance(Duration::from_secs(3600));
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(list.items.len(), 2);
}

#[test]
fn the_writer_refuses_a_misused_relist_after_regression_and_changes_nothing() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    // Nothing listed yet: nothing to go back from.
    assert_eq!(
        writer.replace(Relist::new([obj("a", "x")], 5.into()).after_regression()),
        Err(WriteError::NotReady)
    );
    assert_eq!(engine.lifecycle(), Lifecycle::Pending);
    writer
        .replace(Relist::new([obj("a", "old")], 10.into()))
        .unwrap();
    // Not behind: a plain replace is the call.
    for rv in [10, 11] {
        assert_eq!(
            writer.replace(Relist::new([obj("b", "x")], rv.into()).after_regression()),
            Err(WriteError::NotARegression {
                given: rv.into(),
                current: 10.into()
            })
        );
    }
    assert_eq!(
        (engine.generation(), engine.resource_version().get()),
        (1, 10)
    );
    let list = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(contents(&list.items), pairs(&[("a", "old")]));
    // The careless writer's guard stays: replace still refuses to go back.
    assert_eq!(
        writer.replace(Relist::new([], 9.into())),
        Err(WriteError::OutOfOrder {
            given: 9.into(),
            current: 10.into()
        })
    );
    engine.stop();
    assert_eq!(
        writer.replace(Relist::new([], 5.into()).after_regression()),
        Err(WriteError::Stopped)
    );
}

#[test]
fn the_old_history_is_gone_after_a_relist_after_regression() {
    let config = Config::default().too_large_timeout(Duration::from_millis(50));
    let (engine, mut writer) = Engine::new(config).unwrap();
    writer
        .replace(Relist::new([obj("a", "old")], 10.into()))
        .unwrap();
    for rv in 11..=20u64 {
        let change = Change::added(obj(&format!("o{rv}"), "old"), rv.into());
        writer.apply(change).unwrap();
    }
    let page = engine.list(&ListRequest::new().limit(3)).unwrap();
    let token = page.continue_token.unwrap();
    let mut live = engine.watch(WatchRequest::new()).unwrap();
    // A watch waiting for a version of the old history's future.
    let mut waiting = engine
        .watch(WatchRequest::new().resource_version(Some(25.into())))
        .unwrap();
    writer
        .replace(Relist::new([obj("a", "backup")], 12.into()).after_regression())
        .unwrap();
    assert_eq!(recv_to_end(&mut live).1, EndReason::Relisted);
    assert_eq!(recv_to_end(&mut waiting).1, EndReason::Relisted);
    assert_eq!(
        (engine.generation(), engine.resource_version().get()),
        (2, 12)
    );
    // The old generation's token, and versions before the list: Gone.
    let token_read = engine.list(&ListRequest::new().limit(3).continue_from(token));
    assert!(
        matches!(token_read, Err(ReadError::Gone(_))),
        "{token_read:?}"
    );
    let old = engine.list(&ListRequest::new().at(ReadAt::Exact(11.into())));
    assert!(matches!(old, Err(ReadError::Gone(_))), "{old:?}");
    let old_watch = engine.watch(WatchRequest::new().resource_version(Some(11.into())));
    assert!(
        matches!(old_watch, Err(WatchError::Gone(_))),
        "{old_watch:?}"
    );
    // A version only the old history reached is not served until the new
    // history reaches it.
    for at in [ReadAt::Exact(15.into()), ReadAt::NotOlderThan(15.into())] {
        let r = engine.list(&ListRequest::new().at(at));
        assert!(
            matches!(r, Err(ReadError::TooLargeResourceVersion(_))),
            "{at:?}: {r:?}"
        );
    }
    let at_list = engine
        .list(&ListRequest::new().at(ReadAt::Exact(12.into())))
        .unwrap();
    assert_eq!(contents(&at_list.items), pairs(&[("a", "backup")]));
    // A watch from a version above the list, in the new history: only the
    // new history's changes after it.
    let mut from_13 = engine
        .watch(WatchRequest::new().resource_version(Some(13.into())))
        .unwrap();
    for rv in 13..=15u64 {
        let change = Change::added(obj(&format!("n{rv}"), "new"), rv.into());
        writer.apply(change).unwrap();
    }
    let (seen, end) = recv_events(&mut from_13, 2);
    let seen: Vec<_> = seen.iter().map(|s| (s.key.as_str(), s.rv)).collect();
    assert_eq!((seen, end), (vec![("ns/n14", 14), ("ns/n15", 15)], None));
    let exact = engine
        .list(&ListRequest::new().at(ReadAt::Exact(13.into())))
        .unwrap();
    assert_eq!(
        contents(&exact.items),
        pairs(&[("a", "backup"), ("n13", "new")])
    );
    assert_eq!(engine.stats().relists, 2);
}
