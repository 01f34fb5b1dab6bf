//! Herald against a real etcd (one member): list and watch convergence
//! under concurrent writers, previous values on delete, progress-driven
//! consistent reads and future-version watches, the fallback on a server
//! with etcd#15220, compaction mid-watch, `kill -9` and restart, and
//! garbage values. Each engine watcher's stream is checked against etcd's
//! own history, read back with a fresh etcd watch.
//!
//! The tests need an etcd binary (`scripts/ensure-etcd.sh`, which the test
//! command runs); without one they fail and say so.

mod support;

use std::time::Duration;

use herald::event::ChangeKind;
use herald::read::{ListRequest, ReadAt};
use herald::reflector::{BackoffConfig, ReflectorConfig};
use herald::selector::LabelSelector;
use herald::source::{Listing, Source, SourceError};
use herald::watch::WatchError;
use herald::*;
use herald_etcd::{ClusterConfig, Distrust, EtcdConfig, EtcdSource, ProgressTrust};
use herald_testkit::etcd::{LocalEtcd, etcd_binary, old_etcd_binary};
use herald_testkit::eventually;
use support::*;

/// A member, its endpoints, a runtime and a client for the test's writes.
fn one(
    etcd: LocalEtcd,
) -> (
    LocalEtcd,
    Vec<String>,
    tokio::runtime::Runtime,
    etcd_client::Client,
) {
    let endpoints = vec![etcd.endpoint()];
    let rt = runtime();
    let c = client(&rt, &endpoints);
    (etcd, endpoints, rt, c)
}

/// Puts pod `ns/name`; its revision.
fn put_pod(rt: &tokio::runtime::Runtime, c: &mut etcd_client::Client, name: &str) -> i64 {
    rt.block_on(put(
        c,
        &format!("{PREFIX}ns/{name}"),
        &pod_json("ns", name, "web", "n1", 0),
    ))
}

/// `config` with its cluster's settings changed by `set`.
fn tuned(mut config: EtcdConfig, set: impl FnOnce(&mut ClusterConfig)) -> EtcdConfig {
    set(&mut config.cluster);
    config
}

fn etcd() -> LocalEtcd {
    let bin = etcd_binary().unwrap_or_else(|e| panic!("NO ETCD: {e}"));
    LocalEtcd::start(&bin).unwrap_or_else(|e| panic!("etcd did not start: {e}"))
}

#[test]
fn list_and_watch_converge_with_10k_objects_and_concurrent_writers() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    // 10,000 objects before the engine lists (several pages).
    rt.block_on(async {
        let mut tasks = Vec::new();
        for t in 0..8u64 {
            let mut c = c.clone();
            tasks.push(tokio::spawn(async move {
                for i in (t..10_000).step_by(8) {
                    let ns = format!("ns-{}", i % 4);
                    let v = pod_json(&ns, &format!("p{i}"), "web", &format!("n{}", i % 7), i);
                    put(&mut c, &format!("{PREFIX}{ns}/p{i}"), &v).await;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let writers = Writers::start(&rt, &endpoints, 3, 500);
    let source = EtcdSource::connect(
        tuned(EtcdConfig::new(endpoints.clone(), PREFIX), |c| {
            c.page_size = 1_000
        })
        .decoder(decoder()),
    )
    .unwrap();
    let (engine, reflector) = engine_on(&source, quick());
    let first = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert!(
        first.items.len() >= 10_000,
        "{} {:?} {:?} {:?} {}",
        first.items.len(),
        source.stats(),
        reflector.stats(),
        reflector.last_error(),
        first.continue_token.is_some()
    );
    assert!(source.stats().list_pages >= 10, "{:?}", source.stats());
    // Watchers from the list, one of them filtered.
    let mut all = engine
        .watch(WatchRequest::new().resource_version(Some(first.resource_version)))
        .unwrap();
    let selector: LabelSelector = "app=db".parse().unwrap();
    let mut dbs = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(first.resource_version))
                .labels(selector.clone()),
        )
        .unwrap();
    writers.wait_for(3_000);
    writers.stop(&rt);
    let (etcd_now, rev) = etcd_state(&rt, &mut c);
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert!(list.resource_version.get() >= rev);
    assert_eq!(
        engine_state(&list.items),
        etcd_now,
        "the engine's list is etcd's"
    );
    let upto = last_prefix_revision(&rt, &mut c, first.resource_version.get(), rev);
    let history = etcd_history(&rt, &mut c, first.resource_version.get(), upto);
    // Deleting a key that is not there writes nothing.
    assert!(history.len() >= 1_000, "{}", history.len());
    let (seen, end) = collect(&mut all, upto);
    assert_eq!(end, None);
    assert_same(&seen, &history, "the watcher's stream is etcd's history");
    // The filtered watcher: no event it may not see, in order, no gap (a
    // change that moves an object out of the selection is its deletion).
    // The engine has reached `upto` (the list above): what the filtered
    // watcher has not been sent within a second is not coming.
    let seen = collect_quiet(&mut dbs, Duration::from_secs(1));
    assert!(!seen.is_empty());
    let rvs: Vec<_> = seen.iter().map(|e| e.resource_version().get()).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "in order, once each");
    assert!(
        rvs.iter().all(|rv| history.iter().any(|h| h.2 == *rv)),
        "only etcd's changes"
    );
    // Never an object the selector forbids (a deletion carries the last
    // state the watcher saw).
    assert!(
        seen.iter()
            .all(|e| e.object().unwrap().label("app") == Some("db"))
    );
    let full = engine
        .list(
            &ListRequest::new()
                .labels(selector)
                .at(ReadAt::Exact(ResourceVersion::new(upto))),
        )
        .unwrap();
    assert!(
        full.items
            .iter()
            .all(|i| i.object.label("app") == Some("db"))
    );
    assert_eq!(reflector.stats().lists, 1);
    assert_eq!(source.stats().undecodable, 0);
}

#[test]
fn a_deletion_carries_the_previous_value_at_its_revision() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    let key = format!("{PREFIX}prod/web-1");
    rt.block_on(put(
        &mut c,
        &key,
        &pod_json("prod", "web-1", "web", "n3", 1),
    ));
    let source = source(endpoints);
    let (engine, reflector) = engine_on(&source, quick());
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut web = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(listed.resource_version))
                .labels("app=web".parse().unwrap()),
        )
        .unwrap();
    let deleted_at = rt.block_on(delete(&mut c, &key)) as u64;
    let WatchItem::Event(e) = web.recv_timeout(Duration::from_secs(10)).unwrap() else {
        panic!("an event")
    };
    assert_eq!(
        (e.kind(), e.resource_version().get()),
        (EventKind::Deleted, deleted_at)
    );
    let o = e.object().unwrap();
    assert_eq!(
        (o.key(), o.label("app"), o.field("spec.nodeName")),
        ("prod/web-1", Some("web"), Some("n3"))
    );
    // The payload is the last state the cache held (docs/semantics.md §1.3),
    // with the version of its last change; the event carries the deletion's.
    let payload: serde_json::Value = serde_json::from_slice(o.payload()).unwrap();
    assert_eq!(
        payload["metadata"]["resourceVersion"],
        (deleted_at - 1).to_string()
    );
    assert_eq!(payload["spec"]["nodeName"], "n3");
    assert_eq!(source.stats().bare_deletes, 0);
}

#[test]
fn progress_drives_consistent_reads_and_future_version_watches() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    put_pod(&rt, &mut c, "a");
    let source = source(endpoints);
    assert!(
        source.progress_trusted(),
        "etcd {:?}: {:?}",
        source.server_version(),
        source.progress_distrust()
    );
    let (engine, reflector) = engine_on(&source, quick());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    // Writes to another resource move etcd's revision and send this
    // prefix's watch nothing: only progress brings the engine there.
    let mut other = 0;
    for i in 0..5 {
        other = rt.block_on(put(&mut c, &format!("/registry/configmaps/ns/c{i}"), "{}"));
    }
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert!(
        list.resource_version.get() >= other as u64,
        "{} < {other}",
        list.resource_version
    );
    assert_eq!(list.items.len(), 1);
    assert!(source.stats().progress_passed >= 1, "{:?}", source.stats());
    assert!(reflector.stats().progress_requests >= 1);
    // A watch from a future version waits, then starts there.
    let future = ResourceVersion::new(other as u64 + 3);
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(future)))
        .unwrap();
    rt.block_on(put(
        &mut c,
        &format!("{PREFIX}ns/b"),
        &pod_json("ns", "b", "web", "n1", 0),
    ));
    for i in 0..3 {
        rt.block_on(put(&mut c, &format!("/registry/configmaps/ns/d{i}"), "{}"));
    }
    let after = rt.block_on(put(
        &mut c,
        &format!("{PREFIX}ns/c"),
        &pod_json("ns", "c", "web", "n1", 0),
    ));
    let (seen, end) = collect(&mut w, after as u64);
    assert_eq!(end, None);
    assert_eq!(
        seen,
        vec![(ChangeKind::Added, "ns/c".to_owned(), after as u64)],
        "only what follows {future}"
    );
    // A consistent get too.
    assert!(reflector.consistent_get("ns/c").unwrap().item.is_some());
}

/// etcd 3.4.23 (Debian bookworm's) has etcd#15220: the source refuses to
/// pass its progress on, and consistent reads are read from etcd.
#[test]
fn an_old_server_is_not_trusted_and_consistent_reads_fall_back_to_etcd() {
    let bin = old_etcd_binary().unwrap_or_else(|e| panic!("NO OLD ETCD: {e}"));
    assert_eq!((bin.version().0, bin.version().1), (3, 4));
    let (_etcd, endpoints, rt, mut c) = one(LocalEtcd::start(&bin).unwrap());
    put_pod(&rt, &mut c, "a");
    let source = source(endpoints);
    assert!(!source.progress_trusted());
    assert_eq!(source.server_version().map(|v| v.minor), Some(4));
    assert!(
        matches!(
            source.progress_distrust(),
            Some(Distrust::OldServer { version, .. }) if version.minor == 4
        ),
        "{:?}",
        source.progress_distrust()
    );
    check_fallback(&rt, &mut c, &source);
}

/// The same fallback on a trusted server, forced by configuration.
#[test]
fn progress_can_be_refused_by_configuration() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    put_pod(&rt, &mut c, "a");
    let source = EtcdSource::connect(tuned(
        EtcdConfig::new(endpoints, PREFIX).decoder(decoder()),
        |c| c.progress = ProgressTrust::Never,
    ))
    .unwrap();
    assert!(!source.progress_trusted());
    assert_eq!(source.progress_distrust(), Some(&Distrust::Configured));
    check_fallback(&rt, &mut c, &source);
}

/// Consistent reads on an untrusted source are read from etcd. Writes to
/// another prefix after the cache's last change (`b`) move etcd's revision
/// to `newer` and send the engine's watch nothing; with no progress passed
/// on, the engine stays at `b`. A consistent read that answers at `newer`
/// or later can therefore only have come from etcd: one served from the
/// cache would wait for the engine to reach `newer`, which never happens,
/// and fail after the engine's too-large timeout.
fn check_fallback(rt: &tokio::runtime::Runtime, c: &mut etcd_client::Client, source: &EtcdSource) {
    let (engine, reflector) = engine_on(source, quick());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    let cached = engine.resource_version();
    let mut other = 0;
    for i in 0..5 {
        other = rt.block_on(put(c, &format!("/registry/configmaps/ns/c{i}"), "{}"));
    }
    let b = rt.block_on(put(
        c,
        &format!("{PREFIX}ns/b"),
        &pod_json("ns", "b", "db", "n1", 0),
    )) as u64;
    assert!(cached.get() < other as u64 && (other as u64) < b);
    // The cache moves only with changes, never with progress: it reaches
    // `b` through its watch, and no further.
    eventually("the cache reaches b", || {
        engine.resource_version().get() == b
    });
    let mut newer = 0;
    for i in 0..3 {
        newer = rt.block_on(put(c, &format!("/registry/configmaps/ns/n{i}"), "{}")) as u64;
    }
    assert!(newer > b);
    // Read from etcd: at its revision (`newer` or later), with `b`,
    // selectors applied, well within the request timeout.
    let timeout = source.cluster().config().request_timeout;
    let started = std::time::Instant::now();
    let list = reflector
        .consistent_list(&ListRequest::new().labels("app=db".parse().unwrap()))
        .unwrap();
    assert!(
        list.resource_version.get() >= newer,
        "{} < {newer}",
        list.resource_version
    );
    assert_eq!(
        engine_state(&list.items).keys().collect::<Vec<_>>(),
        ["ns/b"]
    );
    let got = reflector.consistent_get("ns/b").unwrap();
    assert!(got.resource_version.get() >= newer, "{got:?}");
    assert_eq!(got.item.unwrap().resource_version.get(), b);
    let missing = reflector.consistent_get("ns/zz").unwrap();
    assert!(missing.item.is_none() && missing.resource_version.get() >= newer);
    assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
    // The engine never saw `newer`: the answers above were not its own.
    assert_eq!(engine.resource_version().get(), b);
    let cached_read = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(cached_read.resource_version.get(), b);
    assert_eq!(source.stats().progress_passed, 0);
    assert_eq!(reflector.stats().progress_requests, 0);
}

#[test]
fn compaction_past_a_lost_watch_relists_and_ends_watchers_relisted() {
    let (mut etcd, endpoints, rt, mut c) = one(etcd());
    for i in 0..20 {
        rt.block_on(put(
            &mut c,
            &format!("{PREFIX}ns/p{i}"),
            &pod_json("ns", &format!("p{i}"), "web", "n1", 0),
        ));
    }
    let source = source(endpoints.clone());
    // The first resume comes 4 s after the loss: time to restart, write
    // and compact (the restart takes about one).
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_secs(4),
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    };
    let (engine, reflector) = engine_on(&source, config);
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(listed.resource_version)))
        .unwrap();
    etcd.kill();
    etcd.restart().unwrap();
    let mut c = client(&rt, &endpoints);
    let mut last = 0;
    for i in 0..20 {
        last = rt.block_on(put(
            &mut c,
            &format!("{PREFIX}ns/p{i}"),
            &pod_json("ns", &format!("p{i}"), "api", "n2", 1),
        ));
    }
    rt.block_on(c.compact(last, None)).unwrap();
    eventually("a re-list after the compaction", || {
        reflector.stats().compactions >= 1 && reflector.stats().lists >= 2
    });
    let (_, end) = collect(&mut w, u64::MAX);
    assert_eq!(end, Some(EndReason::Relisted));
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    let (etcd_now, _) = etcd_state(&rt, &mut c);
    assert_eq!(engine_state(&list.items), etcd_now);
    assert!(
        list.items
            .iter()
            .all(|i| i.object.label("app") == Some("api"))
    );
    // A watch from before the compaction is told its history is gone.
    let gone = engine.watch(WatchRequest::new().resource_version(Some(listed.resource_version)));
    assert!(matches!(gone, Err(WatchError::Gone(_))), "{gone:?}");
}

/// Lists the prefix with one object a page while another thread compacts
/// past the list's revision `times` times. Each compaction comes once the
/// source has read two more pages since the last one: after the first
/// page of the attempt it hits, and before the last (200 pages). Returns
/// the list's outcome, the compactions' revisions and the pages read.
fn list_across_compactions(
    times: usize,
) -> (
    Result<Listing, SourceError>,
    Vec<u64>,
    u64,
    std::collections::BTreeMap<String, u64>,
) {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    for i in 0..200 {
        put_pod(&rt, &mut c, &format!("p{i:03}"));
    }
    let source = EtcdSource::connect(tuned(
        EtcdConfig::new(endpoints.clone(), PREFIX).decoder(decoder()),
        |c| c.page_size = 1,
    ))
    .unwrap();
    // The list has returned: no compaction is coming for it.
    let done = std::sync::atomic::AtomicBool::new(false);
    let (listed, compactions) = std::thread::scope(|s| {
        let compactor = s.spawn(|| {
            let mut c = client(&rt, &endpoints);
            let mut revisions = Vec::new();
            let mut last = source.stats().list_pages;
            while revisions.len() < times && !done.load(std::sync::atomic::Ordering::Relaxed) {
                if source.stats().list_pages < last + 2 {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                let rev = rt.block_on(put(&mut c, "/registry/configmaps/ns/c", "{}"));
                rt.block_on(c.compact(rev, None)).unwrap();
                revisions.push(rev as u64);
                last = source.stats().list_pages;
            }
            revisions
        });
        let listed = source.list();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (listed, compactor.join().unwrap())
    });
    let (state, _) = etcd_state(&rt, &mut c);
    (listed, compactions, source.stats().list_pages, state)
}

/// A compaction past a list's revision while it pages starts the list
/// over, at a revision etcd still holds.
#[test]
fn a_list_paged_across_a_compaction_starts_over() {
    let (listed, compactions, pages, etcd_now) = list_across_compactions(1);
    assert_eq!(compactions.len(), 1);
    let listing = listed.unwrap();
    assert_eq!(engine_state(&listing.items), etcd_now);
    assert!(listing.revision.get() >= compactions[0], "{listing:?}");
    // The first attempt read at least two pages before it was cut short.
    assert!(pages >= 200 + 2, "{pages}");
}

/// A list that keeps being compacted under gives up after three attempts:
/// `Compacted`, with the revision it read at and the oldest one etcd
/// still holds (the last compaction's).
#[test]
fn a_list_compacted_under_three_times_fails_compacted_with_the_compact_revision() {
    let (listed, compactions, pages, _) = list_across_compactions(3);
    assert_eq!(compactions.len(), 3);
    match listed {
        Err(SourceError::Compacted {
            requested,
            compacted,
        }) => {
            assert!(requested.get() < compactions[2], "{requested}");
            assert_eq!(compacted.get(), compactions[2]);
        }
        other => panic!("{other:?}"),
    }
    assert!(pages < 3 * 200, "{pages}");
}

#[test]
fn kill_9_and_restart_resumes_without_a_relist_and_loses_nothing() {
    let (mut etcd, endpoints, rt, _) = one(etcd());
    let source = source(endpoints.clone());
    let (engine, reflector) = engine_on(&source, quick());
    let writers = Writers::start(&rt, &endpoints, 2, 200);
    writers.wait_for(300);
    let start = reflector
        .consistent_list(&ListRequest::new())
        .unwrap()
        .resource_version;
    let mut all = engine
        .watch(WatchRequest::new().resource_version(Some(start)))
        .unwrap();
    let mut ns1 = engine
        .watch(
            WatchRequest::new()
                .resource_version(Some(start))
                .fields("metadata.namespace=ns-1".parse().unwrap()),
        )
        .unwrap();
    writers.wait_for(600);
    etcd.kill();
    std::thread::sleep(Duration::from_millis(300));
    etcd.restart().unwrap();
    writers.wait_for(1_200);
    writers.stop(&rt);
    let mut c2 = client(&rt, &endpoints);
    let (etcd_now, rev) = etcd_state(&rt, &mut c2);
    let upto = last_prefix_revision(&rt, &mut c2, start.get(), rev);
    let history = etcd_history(&rt, &mut c2, start.get(), upto);
    let (seen, end) = collect(&mut all, upto);
    assert_eq!(end, None, "the watcher was not ended");
    assert_same(
        &seen,
        &history,
        "nothing lost or duplicated across the restart",
    );
    let expected: Vec<_> = history
        .iter()
        .filter(|s| s.1.starts_with("ns-1/"))
        .cloned()
        .collect();
    let (seen_ns1, _) = collect_n(&mut ns1, expected.len());
    assert_same(&seen_ns1, &expected, "the namespace's watcher");
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(engine_state(&list.items), etcd_now);
    let stats = reflector.stats();
    assert_eq!(stats.lists, 1, "resumed, not re-listed: {stats:?}");
    assert!(stats.resumes >= 1, "{stats:?}");
}

#[test]
fn garbage_values_are_counted_and_skipped_never_a_stop() {
    let (etcd, endpoints, rt, mut c) = one(etcd());
    let good = |name: &str| pod_json("ns", name, "web", "n1", 0);
    rt.block_on(async {
        put(&mut c, &format!("{PREFIX}ns/g0"), &good("g0")).await;
        put(&mut c, &format!("{PREFIX}ns/bad-list"), "not json at all").await;
        put(&mut c, &format!("{PREFIX}a/b/c"), &good("c")).await;
    });
    let source = source(endpoints);
    let (engine, reflector) = engine_on(&source, quick());
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(
        engine_state(&listed.items).keys().collect::<Vec<_>>(),
        ["ns/g0"]
    );
    assert_eq!(source.stats().undecodable, 2);
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(listed.resource_version)))
        .unwrap();
    let last = rt.block_on(async {
        put(&mut c, &format!("{PREFIX}ns/g1"), &good("g1")).await;
        put(
            &mut c,
            &format!("{PREFIX}ns/x"),
            "k8s\u{0}\u{a}\u{2}v1protobuf",
        )
        .await;
        put(
            &mut c,
            &format!("{PREFIX}ns/y"),
            r#"{"metadata":{"name":"other","namespace":"ns"}}"#,
        )
        .await;
        put(
            &mut c,
            &format!("{PREFIX}ns/z"),
            r#"{"metadata":{"name":"z","namespace":"ns","labels":{"n":1}}}"#,
        )
        .await;
        // A name the engine refuses: skipped, not a refused list.
        put(
            &mut c,
            &format!("{PREFIX}ns/bad%name"),
            r#"{"metadata":{"name":"bad%name","namespace":"ns"}}"#,
        )
        .await;
        // Garbage over a good object, then its deletion: watchers that
        // saw it see it go.
        put(&mut c, &format!("{PREFIX}ns/g0"), "\u{ff}\u{fe}").await;
        delete(&mut c, &format!("{PREFIX}ns/g0")).await;
        delete(&mut c, &format!("{PREFIX}ns/x")).await;
        put(&mut c, &format!("{PREFIX}ns/g2"), &good("g2")).await
    }) as u64;
    let (seen, end) = collect(&mut w, last);
    assert_eq!(end, None);
    let kinds: Vec<_> = seen.iter().map(|s| (s.0, s.1.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (ChangeKind::Added, "ns/g1"),
            (ChangeKind::Deleted, "ns/g0"),
            (ChangeKind::Added, "ns/g2")
        ]
    );
    let stats = source.stats();
    assert_eq!(stats.undecodable, 7, "{stats:?}");
    assert_eq!(stats.bare_deletes, 2, "{stats:?}");
    let list = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(
        engine_state(&list.items).keys().collect::<Vec<_>>(),
        ["ns/g1", "ns/g2"]
    );
    assert_eq!(reflector.stats().lists, 1);
    // A re-list over the same garbage (the bad name among it) still works.
    let fresh = source_of(&etcd);
    let (_, again) = engine_on(&fresh, quick());
    let relisted = again.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(
        engine_state(&relisted.items).keys().collect::<Vec<_>>(),
        ["ns/g1", "ns/g2"]
    );
    // bad-list, a/b/c, y, z, bad%name.
    assert_eq!(fresh.stats().undecodable, 5, "{:?}", fresh.stats());
}

fn source_of(etcd: &LocalEtcd) -> EtcdSource {
    source(vec![etcd.endpoint()])
}

#[test]
fn bad_configurations_are_typed_errors() {
    use herald_etcd::ConnectError;
    let base = || EtcdConfig::new(["http://127.0.0.1:1"], PREFIX);
    let refused = |what: &str, config: EtcdConfig, says: &str| {
        let e = EtcdSource::connect(config).unwrap_err();
        match &e {
            ConnectError::Config(why) => assert!(why.contains(says), "{what}: {why}"),
            e => panic!("{what}: {e:?}"),
        }
    };
    refused(
        "no endpoints",
        EtcdConfig::new(Vec::<String>::new(), PREFIX),
        "no endpoints",
    );
    refused(
        "a zero page size",
        tuned(base(), |c| c.page_size = 0),
        "page size",
    );
    refused(
        "an empty prefix",
        EtcdConfig::new(["http://127.0.0.1:1"], ""),
        "empty",
    );
    refused(
        "a prefix without its '/'",
        EtcdConfig::new(["http://127.0.0.1:1"], "/registry/pods"),
        "does not end in '/'",
    );
    refused(
        "a zero request timeout",
        tuned(base(), |c| c.request_timeout = Duration::ZERO),
        "request timeout",
    );
    refused(
        "a zero connect timeout",
        tuned(base(), |c| c.connect_timeout = Duration::ZERO),
        "connect timeout",
    );
    for keep_alive in [
        (Duration::ZERO, Duration::from_secs(1)),
        (Duration::from_secs(1), Duration::ZERO),
        (Duration::MAX, Duration::from_secs(1)),
        (Duration::from_secs(1), Duration::MAX),
    ] {
        refused(
            &format!("keep-alive {keep_alive:?}"),
            tuned(base(), |c| c.keep_alive = keep_alive),
            "keep-alive",
        );
    }
    // Malformed URLs are the configuration's fault, and named.
    for endpoint in [
        "not a url",
        "http://[::1",
        "http://127.0.0.1:99999",
        "http://",
    ] {
        refused(
            endpoint,
            EtcdConfig::new(["http://127.0.0.1:1", endpoint], PREFIX),
            endpoint,
        );
    }
    // Nothing listening: the cluster's fault.
    let e = EtcdSource::connect(tuned(base(), |c| {
        c.connect_timeout = Duration::from_millis(300);
        c.request_timeout = Duration::from_millis(500);
    }))
    .unwrap_err();
    assert!(matches!(e, ConnectError::Unreachable(_)), "{e:?}");
    assert!(!e.to_string().is_empty());
}

/// Timeouts too long for the clock wait for ever: they are no panic (a
/// read's deadline was `now + timeout`, which overflowed).
#[test]
fn timeouts_too_long_for_the_clock_are_no_panic() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    let rev = put_pod(&rt, &mut c, "p1") as u64;
    let source = EtcdSource::connect(tuned(
        EtcdConfig::new(endpoints, PREFIX).decoder(decoder()),
        |c| {
            c.request_timeout = Duration::MAX;
            c.connect_timeout = Duration::MAX;
        },
    ))
    .unwrap();
    assert!(source.current_revision().unwrap().get() >= rev);
    let (item, _) = source.get("ns/p1").unwrap();
    assert_eq!(item.map(|i| i.resource_version.get()), Some(rev));
    assert_eq!(source.list().unwrap().items.len(), 1);
    let (engine, reflector) = engine_on(&source, quick());
    assert_eq!(
        reflector
            .consistent_list(&ListRequest::new())
            .unwrap()
            .items
            .len(),
        1
    );
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(ResourceVersion::new(rev))))
        .unwrap();
    let next = put_pod(&rt, &mut c, "p2") as u64;
    let (seen, end) = collect(&mut w, next);
    assert_eq!((seen.len(), end), (1, None));
}

#[test]
fn reads_go_around_an_endpoint_that_is_down() {
    let (_etcd, endpoints, rt, mut c) = one(etcd());
    let rev = put_pod(&rt, &mut c, "p1");
    // A port nothing listens on: the client's balancer holds it among the
    // endpoints, and a read it sends there fails `Unavailable` (connection
    // refused) until it is tried again on the live one.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let source = source(vec![dead.clone(), endpoints[0].clone()]);
    // Its version was not checked: progress is not trusted.
    assert!(
        matches!(
            source.progress_distrust(),
            Some(Distrust::Unchecked { endpoint, .. }) if *endpoint == dead
        ),
        "{:?}",
        source.progress_distrust()
    );
    for i in 0..100 {
        let at = source
            .current_revision()
            .unwrap_or_else(|e| panic!("read {i}: {e}"));
        assert!(at.get() >= rev as u64);
        let (item, _) = source
            .get("ns/p1")
            .unwrap_or_else(|e| panic!("get {i}: {e}"));
        assert_eq!(item.map(|i| i.resource_version.get()), Some(rev as u64));
        if i % 10 == 0 {
            let listing = source.list().unwrap_or_else(|e| panic!("list {i}: {e}"));
            assert_eq!(listing.items.len(), 1);
        }
    }
}
