//! A writer, a few filtered watchers, and what each receives.
//!
//! ```text
//! cargo run --release -p herald --example watch
//! ```

use std::thread;

use herald::{Change, Config, Engine, EventKind, KeyScope, Object, WatchItem, WatchRequest};

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
    writer.replace(
        [
            pod("team-a", "web-1", "web", "node-1"),
            pod("team-a", "db-1", "db", "node-2"),
            pod("team-b", "web-2", "web", "node-2"),
        ],
        100.into(),
    )?;

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
                .allow_bookmarks(true),
        ),
    ];

    let readers: Vec<_> = watches
        .into_iter()
        .map(|(name, req)| {
            let mut watch = engine.watch(req).expect("valid request");
            thread::spawn(move || {
                let mut lines = Vec::new();
                while let Some(item) = watch.recv() {
                    lines.push(match item {
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
                    });
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

    // Let the readers drain, then stop: each watch ends with a reason.
    while engine.stats().changes_dispatched < 5 {
        thread::yield_now();
    }
    thread::sleep(std::time::Duration::from_millis(50));
    engine.stop();

    for r in readers {
        let (name, lines) = r.join().expect("reader thread");
        println!("watch {name}:");
        for l in lines {
            println!("{l}");
        }
    }
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
