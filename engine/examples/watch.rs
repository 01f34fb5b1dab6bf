//! A writer, a few filtered watchers, and what each receives.
//!
//! ```text
//! cargo run --release -p herald --example watch
//! ```

use std::thread;

use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::TryRecvError;
use herald::{Change, Config, Engine, EventKind, Object, Relist, WatchItem, WatchRequest};

fn pod(ns: &str, name: &str, app: &str, node: &str) -> Object {
    Object::builder(ns, name)
        .label("app", app)
        .field("spec.nodeName", node)
        .payload(format!("{{\"kind\":\"Pod\",\"name\":\"{name}\"}}"))
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (engine, mut writer) = Engine::new(Config::default().index("spec.nodeName"))?;

    // The initial list: the engine is ready from here on.
    writer.replace(Relist::new(
        [
            pod("team-a", "web-1", "web", "node-1"),
            pod("team-a", "db-1", "db", "node-2"),
            pod("team-b", "web-2", "web", "node-2"),
        ],
        100.into(),
    ))?;

    let watches = [
        (
            "node-1 (indexed)",
            WatchRequest::new()
                .fields("spec.nodeName=node-1".parse()?)
                .resource_version(Some(100.into())),
        ),
        (
            "app=web",
            WatchRequest::new()
                .labels("app=web".parse()?)
                .resource_version(Some(100.into())),
        ),
        (
            "team-b/*",
            WatchRequest::new()
                .scope(KeyScope::prefix("team-b"))
                .resource_version(Some(100.into())),
        ),
        (
            "everything, initial events",
            WatchRequest::new()
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true),
        ),
    ];

    // Start every watch and take what it has before the first change (the
    // snapshot watch's initial events), once the dispatcher has registered
    // them all; then hand each to a reader thread.
    let mut started: Vec<_> = watches
        .into_iter()
        .map(|(name, req)| (name, engine.watch(req).expect("valid request")))
        .collect();
    while engine.stats().watchers_active < started.len() as u64 {
        thread::yield_now();
    }
    // Each reader prints what its watch receives. Once every change has been
    // dispatched, an empty watch has received all it will get of them: the
    // reader stops it, and its last item says so.
    let readers: Vec<_> = started
        .drain(..)
        .map(|(name, mut watch)| {
            let mut lines: Vec<String> = std::iter::from_fn(|| watch.try_recv().ok())
                .map(describe)
                .collect();
            let engine = engine.clone();
            thread::spawn(move || {
                loop {
                    let item = match watch.try_recv() {
                        Ok(item) => item,
                        Err(TryRecvError::Empty) => {
                            if engine.stats().changes_dispatched >= 5 {
                                watch.stop();
                            } else {
                                thread::yield_now();
                            }
                            continue;
                        }
                        Err(_) => break,
                    };
                    lines.push(describe(item));
                }
                (name, lines)
            })
        })
        .collect();

    // The writer: a pod moves between nodes, one is added, one changes its
    // app, one goes.
    for change in [
        Change::modified(pod("team-a", "web-1", "web", "node-2"), 101.into()),
        Change::added(pod("team-b", "api-1", "api", "node-1"), 103.into()),
        Change::modified(pod("team-b", "web-2", "api", "node-2"), 104.into()),
        Change::deleted(pod("team-a", "db-1", "db", "node-2"), 107.into()),
    ] {
        writer.apply(change)?;
    }
    writer.progress(110.into())?;

    for r in readers {
        let (name, lines) = r.join().expect("reader thread");
        println!("watch {name}:");
        for l in lines {
            println!("{l}");
        }
    }
    engine.stop();
    let s = engine.stats();
    println!(
        "stats: {} changes, {} dispatched, {} live deliveries, {} initial events, {} watches ended",
        s.changes_received,
        s.changes_dispatched,
        s.deliveries,
        s.initial_events_sent,
        s.watchers_ended
    );
    Ok(())
}

/// One line per item.
fn describe(item: WatchItem) -> String {
    match item {
        WatchItem::Event(ev) if ev.kind() == EventKind::Bookmark => format!(
            "  bookmark  rv={}{}",
            ev.resource_version(),
            if ev.is_initial_events_end() {
                " (initial-events-end)"
            } else {
                ""
            }
        ),
        WatchItem::Event(ev) => {
            let o = ev.object().expect("object events carry one");
            format!(
                "  {:<9} rv={} {} app={} node={}",
                format!("{:?}", ev.kind()),
                ev.resource_version(),
                o.key(),
                o.label("app").unwrap_or("-"),
                o.field("spec.nodeName").unwrap_or("-"),
            )
        }
        WatchItem::End(reason) => format!("  end: {reason}"),
    }
}
