//! kube-rs (a client nobody here wrote) against Herald's HTTP front:
//! `kube_runtime::watcher` feeding a `reflector` store, both with the
//! default list-then-watch and with `streaming_lists()` (a watch-list:
//! `sendInitialEvents=true`). The store converges to the source through
//! creates, updates and deletes, a compaction (the cache re-lists, the
//! client gets a 410 in its watch and re-lists) and a server restart on
//! the same port (the client re-connects; its version is not in the new
//! engine's history, so it re-lists).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store as Reader};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Config};
use support::*;

fn client(url: &str) -> Client {
    Client::try_from(Config::new(url.parse().unwrap())).unwrap()
}

fn state(reader: &Reader<Pod>) -> BTreeMap<String, String> {
    reader
        .state()
        .iter()
        .map(|p| {
            let m = &p.metadata;
            (
                format!(
                    "{}/{}",
                    m.namespace.clone().unwrap(),
                    m.name.clone().unwrap()
                ),
                m.resource_version.clone().unwrap(),
            )
        })
        .collect()
}

async fn converges(store: &Store, reader: &Reader<Pod>, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (want, got) = (store.state(), state(reader));
        if want == got {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the client's store did not converge: want {} objects, got {}; first difference: {:?}",
            want.len(),
            got.len(),
            want.iter().find(|(k, v)| got.get(*k) != Some(*v))
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn churn(store: &Store, round: u64) {
    for i in 0..40u64 {
        let ns = format!("ns-{}", i % 3);
        store.put(&ns, &format!("p{i}"), "web", &format!("n{}", i % 5), round);
    }
    for i in (0..40u64).step_by(7) {
        store.delete(&format!("ns-{}", i % 3), &format!("p{i}"));
    }
    tokio::task::yield_now().await;
}

async fn run(streaming: bool) {
    let store = Store::new();
    for i in 0..50u64 {
        store.put("seed", &format!("s{i}"), "db", "n0", 0);
    }
    let server = start(&store).await;
    let addr = server.addr;
    let api: Api<Pod> = Api::all(client(&server.url()));
    let mut config = watcher::Config::default();
    if streaming {
        config = config.streaming_lists();
    }
    let (reader, writer) = reflector::store::<Pod>();
    let inits = Arc::new(AtomicUsize::new(0));
    let counted = inits.clone();
    let stream = reflector::reflector(writer, watcher::watcher(api, config))
        .inspect(move |e| {
            if matches!(e, Ok(Event::Init)) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .default_backoff();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });

    converges(&store, &reader, "the initial list").await;
    assert_eq!(inits.load(Ordering::SeqCst), 1);
    // A streaming list is a watch (sendInitialEvents=true), never a LIST.
    let metrics = reqwest::get(format!("{}/metrics", server.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let listed = metrics
        .lines()
        .any(|l| l.starts_with("apiserver_request_total{verb=\"list\""));
    assert_eq!(listed, !streaming, "{metrics}");
    assert!(
        metrics.contains("apiserver_request_total{verb=\"watch\",resource=\"pods\",code=\"200\"}"),
        "{metrics}"
    );

    churn(&store, 1).await;
    converges(&store, &reader, "creates, updates and deletes").await;
    assert_eq!(
        inits.load(Ordering::SeqCst),
        1,
        "no re-list without a reason"
    );

    // A compaction: the cache re-lists; the client's watch ends with a
    // 410 and it lists again.
    store.compact_and_cut();
    churn(&store, 2).await;
    converges(&store, &reader, "after the compaction").await;
    eventually("the client re-listed on the 410", || {
        inits.load(Ordering::SeqCst) >= 2
    })
    .await;

    // A restart on the same port: a new engine (new history).
    let before = inits.load(Ordering::SeqCst);
    server.kill();
    churn(&store, 3).await;
    let server = start_on(&store, addr, herald_server::ServerConfig::default()).await;
    churn(&store, 4).await;
    converges(&store, &reader, "after the server's restart").await;
    assert!(
        inits.load(Ordering::SeqCst) > before,
        "re-listed after the restart"
    );

    task.abort();
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_and_reflector_converge_list_then_watch() {
    run(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_and_reflector_converge_with_streaming_lists() {
    run(true).await;
}
