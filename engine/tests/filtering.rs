//! Filters through the engine: selectors, the four transitions, key scopes
//! and trigger-index routing (docs/semantics.md §3 and §4).

mod common;

use common::*;
use futures::StreamExt;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::*;
use herald_testkit::eventually;

fn pod(name: &str, labels: &[(&str, &str)], node: &str) -> Object {
    herald_testkit::pod("ns", name)
        .labels(labels)
        .node(node)
        .build()
}

fn listed(config: Config) -> (Engine, Writer) {
    let (engine, mut writer) = Engine::new(config).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    (engine, writer)
}

fn watch(engine: &Engine, labels: &str, fields: &str) -> Watch {
    engine
        .watch(
            WatchRequest::new()
                .labels(labels.parse().unwrap())
                .fields(fields.parse().unwrap())
                .resource_version(Some(1.into())),
        )
        .unwrap()
}

fn summary(seen: &[Seen]) -> Vec<(EventKind, u64)> {
    seen.iter().map(|s| (s.kind, s.rv)).collect()
}

#[test]
fn the_four_transitions_through_the_engine() {
    let (engine, mut writer) = listed(Config::default());
    let mut w = watch(&engine, "app=web", "");
    let web = |tier: &str| pod("a", &[("app", "web"), ("tier", tier)], "n1");
    let db = pod("a", &[("app", "db")], "n1");
    writer.apply(Change::added(web("x"), 2.into())).unwrap(); // cur only: Added
    writer.apply(Change::modified(web("y"), 3.into())).unwrap(); // both: Modified
    writer
        .apply(Change::modified(db.clone(), 4.into()))
        .unwrap(); // prev only: Deleted
    writer
        .apply(Change::modified(db.clone(), 5.into()))
        .unwrap(); // neither
    writer.apply(Change::modified(web("z"), 6.into())).unwrap(); // cur only: Added
    writer.apply(Change::deleted(web("z"), 7.into())).unwrap(); // deletion: Deleted
    let (seen, _) = recv_events(&mut w, 5);
    assert_eq!(
        summary(&seen),
        [
            (EventKind::Added, 2),
            (EventKind::Modified, 3),
            (EventKind::Deleted, 4),
            (EventKind::Added, 6),
            (EventKind::Deleted, 7),
        ]
    );
    // A Deleted seen through the filter carries the last state the watcher
    // could see (the previous object) with the change's version.
    assert_eq!(seen[2].object.as_ref().unwrap().label("tier"), Some("y"));
    assert_eq!(seen[2].object.as_ref().unwrap().label("app"), Some("web"));
    assert_quiet(&mut w);
}

/// Watches with each `(selector, keys it must select)` case, then applies
/// `objects` and checks each watch received exactly its keys.
fn check_selects(labels: bool, cases: &[(&str, &[&str])], objects: &[Object]) {
    let (engine, mut writer) = listed(Config::default());
    let mut watches: Vec<_> = cases
        .iter()
        .map(|(sel, _)| match labels {
            true => watch(&engine, sel, ""),
            false => watch(&engine, "", sel),
        })
        .collect();
    for (i, o) in objects.iter().enumerate() {
        writer
            .apply(Change::added(o.clone(), (2 + i as u64).into()))
            .unwrap();
    }
    for ((sel, want), w) in cases.iter().zip(&mut watches) {
        let (seen, _) = recv_events(w, want.len());
        let keys: Vec<_> = seen.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, *want, "selector {sel:?}");
        assert_quiet(w);
    }
}

#[test]
fn each_label_operator_selects_what_it_says() {
    let objects = [
        pod("p1", &[("app", "web"), ("size", "3")], "n"),
        pod("p2", &[("app", "db"), ("size", "12")], "n"),
        pod("p3", &[("tier", "x")], "n"),
    ];
    let cases: [(&str, &[&str]); 9] = [
        ("app=web", &["ns/p1"]),
        ("app==db", &["ns/p2"]),
        ("app!=web", &["ns/p2", "ns/p3"]),
        ("app in (web,db)", &["ns/p1", "ns/p2"]),
        ("app notin (web)", &["ns/p2", "ns/p3"]),
        ("app", &["ns/p1", "ns/p2"]),
        ("!app", &["ns/p3"]),
        ("size>5", &["ns/p2"]),
        ("size<5", &["ns/p1"]),
    ];
    check_selects(true, &cases, &objects);
}

#[test]
fn each_field_operator_selects_what_it_says() {
    let cases: [(&str, &[&str]); 5] = [
        ("spec.nodeName=n1", &["ns/p1"]),
        ("spec.nodeName==n2", &["ns/p2"]),
        ("spec.nodeName!=n1", &["ns/p2"]),
        ("metadata.name=p2", &["ns/p2"]),
        ("metadata.namespace=ns,spec.nodeName=n1", &["ns/p1"]),
    ];
    check_selects(false, &cases, &[pod("p1", &[], "n1"), pod("p2", &[], "n2")]);
}

#[test]
fn key_scopes() {
    let (engine, mut writer) = listed(Config::default());
    let mk = |scope| {
        engine
            .watch(
                WatchRequest::new()
                    .scope(scope)
                    .resource_version(Some(1.into())),
            )
            .unwrap()
    };
    let mut exact = mk(KeyScope::exact("team/a"));
    let mut prefix = mk(KeyScope::prefix("team"));
    let mut cluster = mk(KeyScope::exact("node-1"));
    let objs = [
        Object::builder("team", "a").build(),
        Object::builder("team", "b").build(),
        Object::builder("teams", "a").build(),
        Object::builder("", "node-1").build(),
    ];
    for (i, o) in objs.into_iter().enumerate() {
        writer
            .apply(Change::added(o, (2 + i as u64).into()))
            .unwrap();
    }
    let keys = |w: &mut Watch, n| {
        let (seen, _) = recv_events(w, n);
        assert_quiet(w);
        seen.into_iter().map(|s| s.key).collect::<Vec<_>>()
    };
    assert_eq!(keys(&mut exact, 1), ["team/a"]);
    assert_eq!(keys(&mut prefix, 2), ["team/a", "team/b"]);
    assert_eq!(keys(&mut cluster, 1), ["node-1"]);
}

#[test]
fn index_routing_notifies_the_old_and_the_new_value() {
    routing_notifies_the_old_and_the_new_value(
        Config::default().index("spec.nodeName").index("spec.zone"),
    );
}

/// Without indexes, exact field selectors are routed by the fields they
/// name (selector routes): the same deliveries, moves included.
#[test]
fn selector_routing_notifies_the_old_and_the_new_value() {
    routing_notifies_the_old_and_the_new_value(Config::default());
    // One configured index, the other field routed by selector.
    routing_notifies_the_old_and_the_new_value(Config::default().index("spec.zone"));
}

fn routing_notifies_the_old_and_the_new_value(config: Config) {
    let (engine, mut writer) = listed(config);
    let mut n1 = watch(&engine, "", "spec.nodeName=n1");
    let mut n2 = watch(&engine, "", "spec.nodeName=n2");
    let mut n3 = watch(&engine, "", "spec.nodeName=n3");
    let mut z1 = watch(&engine, "", "spec.zone=z1");
    let mut all = watch(&engine, "", "");
    // An indexed watcher with a further, non-indexed condition.
    let mut n2_web = watch(&engine, "app=web", "spec.nodeName=n2");
    let at = |node: &str, zone: &str| {
        Object::builder("ns", "p")
            .label("app", "web")
            .field("spec.nodeName", node)
            .field("spec.zone", zone)
            .build()
    };
    writer
        .apply(Change::added(at("n1", "z1"), 2.into()))
        .unwrap();
    writer
        .apply(Change::modified(at("n2", "z1"), 3.into()))
        .unwrap(); // moves n1 -> n2
    writer
        .apply(Change::modified(at("n2", "z2"), 4.into()))
        .unwrap(); // moves z1 -> z2
    writer
        .apply(Change::deleted(at("n2", "z2"), 5.into()))
        .unwrap();
    let got = |w: &mut Watch, n| {
        let (seen, _) = recv_events(w, n);
        assert_quiet(w);
        summary(&seen)
    };
    use EventKind::*;
    assert_eq!(got(&mut n1, 2), [(Added, 2), (Deleted, 3)]);
    assert_eq!(got(&mut n2, 3), [(Added, 3), (Modified, 4), (Deleted, 5)]);
    assert_eq!(
        got(&mut n2_web, 3),
        [(Added, 3), (Modified, 4), (Deleted, 5)]
    );
    assert_eq!(got(&mut n3, 0), []);
    assert_eq!(got(&mut z1, 3), [(Added, 2), (Modified, 3), (Deleted, 4)]);
    assert_eq!(
        got(&mut all, 4),
        [(Added, 2), (Modified, 3), (Modified, 4), (Deleted, 5)]
    );
    let s = engine.stats();
    assert_eq!(s.watchers_active, 6);
    // Stopped watchers leave their routes.
    drop((n1, n2, n3, z1, n2_web));
    eventually("unregistered", || engine.stats().watchers_active == 1);
    writer
        .apply(Change::added(at("n1", "z1"), 6.into()))
        .unwrap();
    assert_eq!(got(&mut all, 1), [(Added, 6)]);
}

#[test]
fn watches_are_streams() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (engine, mut writer) = listed(Config::default());
    let mut w = watch(&engine, "", "");
    let (got_all, all_received) = std::sync::mpsc::channel();
    let reader = rt.spawn(async move {
        let mut rvs = Vec::new();
        while let Some(item) = w.next().await {
            match item {
                WatchItem::Event(ev) => {
                    rvs.push(ev.resource_version().get());
                    if rvs.len() == 499 {
                        got_all.send(()).unwrap();
                    }
                }
                WatchItem::End(reason) => {
                    assert_eq!(reason, EndReason::EngineStopped);
                    assert!(w.next().await.is_none());
                    return rvs;
                }
            }
        }
        unreachable!("a stream yields its End before None")
    });
    for rv in 2..=500 {
        writer
            .apply(Change::added(pod(&rv.to_string(), &[], "n"), rv.into()))
            .unwrap();
    }
    all_received
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the stream delivers every change");
    engine.stop();
    let rvs = rt.block_on(reader).unwrap();
    assert_eq!(rvs, (2..=500).collect::<Vec<_>>());
}

#[test]
fn a_stream_catching_up_yields_to_its_executor() {
    let (engine, mut writer) = listed(Config::default());
    for rv in 2..=5_000u64 {
        let app = if rv == 5_000 { "rare" } else { "common" };
        writer
            .apply(Change::added(
                pod(&rv.to_string(), &[("app", app)], "n"),
                rv.into(),
            ))
            .unwrap();
    }
    // Begun after the fact, once the dispatcher has passed every change
    // (a watch it met while still behind would have the match queued by
    // the dispatcher, with no replay to yield in): the replay scans 4,999
    // changes for one match.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while engine.stats().changes_dispatched < engine.stats().changes_received {
        assert!(std::time::Instant::now() < deadline, "{:?}", engine.stats());
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut w = watch(&engine, "app=rare", "");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let progress = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let neighbour_progress = progress.clone();
    let (first, neighbour_ran) = rt.block_on(async move {
        // A neighbour on the same single-threaded executor: it only runs
        // while the catching-up stream yields.
        let neighbour = tokio::spawn(async move {
            loop {
                neighbour_progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        });
        let first = w.next().await;
        let ran = progress.load(std::sync::atomic::Ordering::Relaxed);
        neighbour.abort();
        (first, ran)
    });
    let Some(WatchItem::Event(ev)) = first else {
        panic!("expected the one match, got {first:?}");
    };
    assert_eq!(ev.resource_version().get(), 5_000);
    // The scan gave the executor back between budgets.
    assert!(
        neighbour_ran > 0,
        "the stream held the executor for the whole scan"
    );
}

/// A watch's initial events walk only the keys its scope covers, or the
/// list index its field selector names: the same events, in key order, as
/// the whole store filtered (a per-object watch's snapshot is a look-up).
#[test]
fn initial_events_of_a_narrow_watch_are_the_filtered_store() {
    let (engine, mut writer) = Engine::new(Config::default().list_index("spec.nodeName")).unwrap();
    let mut objects = Vec::new();
    for ns in ["a", "ab", "b"] {
        for i in 0..20 {
            objects.push(
                Object::builder(ns, &format!("o{i:02}"))
                    .label("even", if i % 2 == 0 { "yes" } else { "no" })
                    .field("spec.nodeName", &format!("n{}", i % 3))
                    .build(),
            );
        }
    }
    writer
        .replace(Relist::new(objects.clone(), 5.into()))
        .unwrap();
    let initial = |req: WatchRequest| -> Vec<String> {
        let req = req
            .send_initial_events(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .allow_bookmarks(true);
        let mut w = engine.watch(req).unwrap();
        let mut keys = Vec::new();
        loop {
            match w.recv_timeout(std::time::Duration::from_secs(10)) {
                Ok(WatchItem::Event(ev)) if ev.is_initial_events_end() => return keys,
                Ok(WatchItem::Event(ev)) => keys.push(ev.object().unwrap().key().to_owned()),
                other => panic!("{other:?}"),
            }
        }
    };
    let expect = |f: &dyn Fn(&Object) -> bool| -> Vec<String> {
        let mut keys: Vec<String> = objects
            .iter()
            .filter(|o| f(o))
            .map(|o| o.key().to_owned())
            .collect();
        keys.sort();
        keys
    };
    let exact = initial(WatchRequest::new().scope(KeyScope::exact("ab/o07")));
    assert_eq!(exact, ["ab/o07"]);
    let by_name = initial(
        WatchRequest::new()
            .scope(KeyScope::exact("a/o03"))
            .fields("metadata.name=o03".parse().unwrap()),
    );
    assert_eq!(by_name, ["a/o03"]);
    assert!(initial(WatchRequest::new().scope(KeyScope::exact("a/zz"))).is_empty());
    // "a/" does not cover "ab/".
    let prefix = initial(WatchRequest::new().scope(KeyScope::prefix("a")));
    assert_eq!(prefix, expect(&|o| o.namespace() == "a"));
    let indexed = initial(
        WatchRequest::new()
            .fields("spec.nodeName=n1".parse().unwrap())
            .labels("even=yes".parse().unwrap()),
    );
    assert_eq!(
        indexed,
        expect(&|o| o.field("spec.nodeName") == Some("n1") && o.label("even") == Some("yes"))
    );
    let both = initial(
        WatchRequest::new()
            .scope(KeyScope::prefix("b"))
            .fields("spec.nodeName=n2".parse().unwrap()),
    );
    assert_eq!(
        both,
        expect(&|o| o.namespace() == "b" && o.field("spec.nodeName") == Some("n2"))
    );
}
