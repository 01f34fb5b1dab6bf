//! A first list that reaches back (`ReflectorConfig::backfill`) against a
//! real etcd: a cache started after some writes holds them in its history
//! window, so a watch from a version before its start resumes (what a
//! watcher moving from a replica that went away to one that has just
//! started needs) where a cache without it answers 410; and a revision
//! etcd has compacted away falls back to a list at the current revision.

mod support;

use herald::engine::Lifecycle;
use herald::read::ListRequest;
use herald::reflector::ReflectorConfig;
use herald::watch::WatchError;
use herald::*;
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use herald_testkit::eventually;
use support::*;

fn ready(engine: &Engine, rv: i64) {
    eventually("the cache has the last write", || {
        engine.lifecycle() == Lifecycle::Ready && engine.resource_version().get() >= rv as u64
    });
}

#[test]
fn a_first_list_that_reaches_back_resumes_watches_from_before_the_start() {
    let bin = etcd_binary().unwrap_or_else(|e| panic!("NO ETCD: {e}"));
    let _etcd = LocalEtcd::start(&bin).unwrap_or_else(|e| panic!("etcd did not start: {e}"));
    let endpoints = vec![_etcd.endpoint()];
    let rt = runtime();
    let mut c = client(&rt, &endpoints);
    let key = |name: &str| format!("{PREFIX}ns/{name}");
    let put_pod = |c: &mut etcd_client::Client, name: &str, n: u64| {
        rt.block_on(put(c, &key(name), &pod_json("ns", name, "web", "n1", n)))
    };
    let seen = put_pod(&mut c, "a", 0);
    // What a watcher from `seen` is owed: a modification, a creation, a
    // deletion.
    let owed = [
        (EventKind::Modified, put_pod(&mut c, "a", 1)),
        (EventKind::Added, put_pod(&mut c, "b", 0)),
        (EventKind::Deleted, rt.block_on(delete(&mut c, &key("a")))),
    ];
    let last = owed[2].1;
    let source = source(endpoints);

    // Without it: listed at the current revision, nothing before it.
    let (plain, plain_reflector) = engine_on(&source, quick());
    ready(&plain, last);
    let from = WatchRequest::new().resource_version(Some((seen as u64).into()));
    assert!(
        matches!(plain.watch(from.clone()), Err(WatchError::Gone(_))),
        "a cache listed at {last} holds nothing from {seen}"
    );
    assert_eq!(plain_reflector.stats().backfills, 0);

    // Reaching back 100 revisions: the window holds what came after.
    let config = ReflectorConfig {
        backfill: 100,
        ..quick()
    };
    let (filled, filled_reflector) = engine_on(&source, config.clone());
    ready(&filled, last);
    let mut w = filled.watch(from).unwrap();
    let (events, end) = recv_events(&mut w, owed.len());
    assert_eq!(end, None);
    assert_eq!(
        events,
        owed.map(|(kind, rv)| (kind, rv as u64)),
        "the changes after {seen}, once each, in order"
    );
    // One list (the reaching one), and the state is today's.
    let stats = filled_reflector.stats();
    assert_eq!((stats.lists, stats.backfills), (1, 1), "{stats:?}");
    let list = filled_reflector
        .consistent_list(&ListRequest::new())
        .unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .map(|i| i.object.name().to_owned())
        .collect();
    assert_eq!(names, ["b"]);

    // Compacted past where it would reach: listed at the current
    // revision, and the reason noted.
    rt.block_on(c.compact(last, None)).unwrap();
    let (late, late_reflector) = engine_on(&source, config);
    ready(&late, last);
    assert_eq!(late_reflector.stats().backfills, 0);
    let noted = late_reflector.last_error().unwrap_or_default();
    assert!(noted.contains("could not reach back"), "{noted}");
    drop((plain_reflector, filled_reflector, late_reflector));
}

/// (kind, version) of each event until `n` events or the end.
fn recv_events(w: &mut Watch, n: usize) -> (Vec<(EventKind, u64)>, Option<EndReason>) {
    let mut out = Vec::new();
    while out.len() < n {
        match w.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(WatchItem::Event(e)) => out.push((e.kind(), e.resource_version().get())),
            Ok(WatchItem::End(r)) => return (out, Some(r)),
            Err(e) => panic!("no event within 30 s after {out:?}: {e}"),
        }
    }
    (out, None)
}
