//! A server-shaped embedding: an in-memory MVCC source (standing in for
//! etcd), a reflector keeping the engine in step with it, three watchers
//! with different filters on their own threads, consistent and paged
//! lists, a compaction that forces a re-list, and the watchers' ends.
//!
//! ```text
//! cargo run --release -p herald --example server
//! ```

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use herald::read::ListRequest;
use herald::reflector::{Reflector, ReflectorConfig};
use herald::selector::KeyScope;
use herald::source::{MemorySource, Source, SourceError};
use herald::{Config, Engine, EventKind, Object, WatchItem, WatchRequest};

fn pod(ns: &str, name: &str, node: &str, app: &str) -> Object {
    Object::builder(ns, name)
        .label("app", app)
        .field("spec.nodeName", node)
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The store: a few pods before the server starts.
    let source = MemorySource::new();
    for i in 0..6 {
        source.put(pod(
            "prod",
            &format!("web-{i}"),
            &format!("node-{}", i % 2),
            "web",
        ));
    }
    source.put(pod("dev", "db-0", "node-1", "db"));

    // The server: an engine (trigger index and list index on the node),
    // filled and kept current by a reflector.
    let config = Config::default()
        .index("spec.nodeName")
        .list_index("spec.nodeName");
    let (engine, writer) = Engine::new(config)?;
    let reflector = Reflector::spawn(
        Arc::new(source.clone()),
        engine.clone(),
        writer,
        ReflectorConfig::default(),
    )?;

    // A consistent list: what the store has now.
    let all = reflector.consistent_list(&ListRequest::new())?;
    println!("list at {}: {} pods", all.resource_version, all.items.len());

    // Three clients watch from that version.
    let requests = [
        (
            "kubelet node-1",
            WatchRequest::new().fields("spec.nodeName=node-1".parse()?),
        ),
        (
            "prod web",
            WatchRequest::new()
                .scope(KeyScope::prefix("prod"))
                .labels("app=web".parse()?),
        ),
        ("everything", WatchRequest::new()),
    ];
    let clients: Vec<_> = requests
        .into_iter()
        .map(|(who, req)| {
            let mut watch = engine.watch(req.resource_version(Some(all.resource_version)))?;
            Ok(thread::spawn(move || {
                while let Some(item) = watch.recv() {
                    match item {
                        WatchItem::Event(ev) => {
                            let key = ev.object().map_or("-", |o| o.key()).to_owned();
                            let kind = match ev.kind() {
                                EventKind::Added => "ADDED",
                                EventKind::Modified => "MODIFIED",
                                EventKind::Deleted => "DELETED",
                                _ => "BOOKMARK",
                            };
                            println!("[{who}] {kind} {key} @ {}", ev.resource_version());
                        }
                        WatchItem::End(reason) => println!("[{who}] END: {reason}"),
                    }
                }
            }))
        })
        .collect::<Result<_, herald::watch::WatchError>>()?;

    // The store changes: a pod moves, one is deleted, one is added.
    source.put(pod("prod", "web-0", "node-1", "web"));
    source.delete("prod/web-3");
    source.put(pod("prod", "api-0", "node-1", "api"));

    // Reads from the cache: consistent, by the node index, and in pages.
    let on_node_1 =
        reflector.consistent_list(&ListRequest::new().fields("spec.nodeName=node-1".parse()?))?;
    let names: Vec<_> = on_node_1.items.iter().map(|i| i.object.key()).collect();
    println!("node-1 at {}: {names:?}", on_node_1.resource_version);
    let mut page = engine.list(&ListRequest::new().limit(3))?;
    let mut n = 1;
    loop {
        let keys: Vec<_> = page.items.iter().map(|i| i.object.key()).collect();
        println!("page {n} at {}: {keys:?}", page.resource_version);
        let Some(token) = page.continue_token.take() else {
            break;
        };
        page = engine.list(&ListRequest::new().limit(3).continue_from(token))?;
        n += 1;
    }

    // The store compacts past the reflector's watch and drops it: the
    // reflector lists again, and every watcher ends with a reason.
    let rev = source.current_revision()?;
    source.compact(rev);
    source.fail_watches(SourceError::Compacted {
        requested: rev,
        compacted: rev,
    });
    for c in clients {
        c.join().expect("client thread");
    }
    thread::sleep(Duration::from_millis(50));
    println!("reflector: {:?}", reflector.stats());
    let writer = reflector.stop();
    println!("stopped (writer returned: {})", writer.is_some());
    engine.stop();
    Ok(())
}
