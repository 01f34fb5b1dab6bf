//! A replica going away (the module `shutdown`): `/readyz` fails first
//! while everything is still served; then the listener closes and every
//! watch is drained: its events, a `BOOKMARK` at the dispatched version
//! if it asked for bookmarks, and a clean end, never an `ERROR`; a watch
//! from that bookmark on another server of the same source continues with
//! nothing missed or repeated; `serve` returns.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use herald_kube::ResourceInfo;
use herald_server::{Server, ServerConfig, resource_on};
use support::{Store, eventually};

/// A server of `store` on a free port, served until `shutdown` fires.
async fn serve(
    store: &Store,
) -> (
    Server,
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let pods = resource_on(ResourceInfo::pods(), Arc::new(store.0.clone())).unwrap();
    let config = ServerConfig {
        shutdown_grace: Duration::from_secs(5),
        ..ServerConfig::default()
    };
    let server = Server::new([pods], config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.clone().serve(listener, async move {
        let _ = rx.await;
    }));
    eventually("the engine lists", || {
        server
            .resources()
            .iter()
            .all(|r| r.engine().lifecycle() == herald::Lifecycle::Ready)
    })
    .await;
    (server, url, tx, serving)
}

/// A watch's lines as they come.
struct Lines {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: Vec<u8>,
}

impl Lines {
    async fn open(url: &str, query: &str) -> Lines {
        let r = reqwest::get(format!("{url}/api/v1/pods?watch=1&{query}"))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        Lines {
            stream: Box::pin(r.bytes_stream()),
            buf: Vec::new(),
        }
    }

    /// The next event's type and resourceVersion; `None` at a clean end.
    async fn next(&mut self) -> Option<(String, u64)> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
                let rv = v["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("0")
                    .parse()
                    .unwrap();
                return Some((v["type"].as_str().unwrap().to_owned(), rv));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.stream.next())
                .await
                .expect("an event or the end within 20 s");
            match chunk {
                Some(Ok(b)) => self.buf.extend_from_slice(&b),
                Some(Err(e)) => panic!("the stream broke instead of ending: {e}"),
                None => {
                    assert!(self.buf.is_empty(), "a partial line at the end");
                    return None;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_server_drains_its_watches_and_another_continues_them() {
    let store = Store::new();
    for i in 0..3 {
        store.put("ns", &format!("p{i}"), "web", "n1", 0);
    }
    let (server, url, shutdown, serving) = serve(&store).await;
    let (_other, other_url, _other_shutdown, _other_serving) = serve(&store).await;
    let list: serde_json::Value = reqwest::get(format!("{url}/api/v1/pods"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let from: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut marked = Lines::open(
        &url,
        &format!("resourceVersion={from}&allowWatchBookmarks=true"),
    )
    .await;
    let mut plain = Lines::open(&url, &format!("resourceVersion={from}")).await;
    let rv = store.put("ns", "p0", "web", "n1", 1);
    assert_eq!(marked.next().await, Some(("MODIFIED".into(), rv)));
    assert_eq!(plain.next().await, Some(("MODIFIED".into(), rv)));

    // Not ready, and still serving.
    server.terminate();
    let ready = reqwest::get(format!("{url}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 503);
    let text = ready.text().await.unwrap();
    assert!(text.contains("[-] shutdown: terminating"), "{text}");
    let listed = reqwest::get(format!("{url}/api/v1/pods")).await.unwrap();
    assert_eq!(listed.status(), 200);
    let rv2 = store.put("ns", "p1", "web", "n1", 1);
    assert_eq!(marked.next().await, Some(("MODIFIED".into(), rv2)));
    assert_eq!(plain.next().await, Some(("MODIFIED".into(), rv2)));

    // The drain: a bookmark at the dispatched version, then a clean end.
    shutdown.send(()).unwrap();
    let (kind, bookmark) = marked.next().await.expect("a bookmark before the end");
    assert_eq!(kind, "BOOKMARK");
    assert!(
        bookmark >= rv2,
        "bookmark {bookmark} below the last event {rv2}"
    );
    assert_eq!(marked.next().await, None, "the end, with no ERROR event");
    assert_eq!(plain.next().await, None, "the end, with no ERROR event");
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returns once its connections are closed")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
            .await
            .is_err(),
        "the listener is closed"
    );
    let terminated = server.resources()[0].engine().stats().terminations.drained;
    assert_eq!(terminated, 2);

    // Another server of the same source continues from the bookmark: the
    // next change, and nothing before it again.
    let mut resumed = Lines::open(
        &other_url,
        &format!("resourceVersion={bookmark}&allowWatchBookmarks=true"),
    )
    .await;
    let rv3 = store.put("ns", "p2", "web", "n1", 1);
    assert_eq!(resumed.next().await, Some(("MODIFIED".into(), rv3)));
}
