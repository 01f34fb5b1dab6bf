//! A Herald HTTP server on loopback for the client tests: an in-memory
//! source (the test's store, written through `put_with`/`delete_with` so
//! that every stored pod carries its own `metadata.resourceVersion`), an
//! engine and reflector, the server on a free port; restartable on the
//! same port.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herald::{MemorySource, Object, Source, SourceError};
use herald_kube::ResourceInfo;
use herald_server::{Server, ServerConfig, resource_on};
use serde_json::json;

/// A pod as the apiserver stores one, at `rv`.
pub fn pod(ns: &str, name: &str, app: &str, node: &str, n: u64, rv: u64) -> Object {
    let payload = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}"),
            "resourceVersion": rv.to_string(), "labels": {"app": app},
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
        "status": {"phase": "Running", "n": n},
    });
    Object::builder(ns, name)
        .label("app", app)
        .field("spec.nodeName", node)
        .field("status.phase", "Running")
        .payload(serde_json::to_vec(&payload).unwrap())
        .build()
}

/// The payload with its `metadata.resourceVersion` set to `rv`.
pub fn restamp(object: &Object, rv: u64) -> Object {
    let mut v: serde_json::Value = serde_json::from_slice(object.payload()).unwrap();
    v["metadata"]["resourceVersion"] = json!(rv.to_string());
    let mut b = Object::builder(object.namespace(), object.name());
    for (k, val) in object.labels() {
        b = b.label(k, val);
    }
    for f in ["spec.nodeName", "status.phase"] {
        if let Some(val) = object.field(f) {
            b = b.field(f, val);
        }
    }
    b.payload(serde_json::to_vec(&v).unwrap()).build()
}

/// The store the server serves.
#[derive(Clone)]
pub struct Store(pub MemorySource);

impl Store {
    pub fn new() -> Store {
        Store(MemorySource::new())
    }

    pub fn put(&self, ns: &str, name: &str, app: &str, node: &str, n: u64) -> u64 {
        self.0
            .put_with(|rv| pod(ns, name, app, node, n, rv.get()))
            .get()
    }

    pub fn delete(&self, ns: &str, name: &str) -> Option<u64> {
        self.0
            .delete_with(&format!("{ns}/{name}"), |last, rv| restamp(last, rv.get()))
            .map(|r| r.get())
    }

    /// Compacts everything so far and drops the engine's watch with a
    /// compaction error: the engine re-lists, and its watchers end
    /// `Relisted`.
    pub fn compact_and_cut(&self) {
        let rev = self.0.current_revision().unwrap();
        self.0.compact(rev);
        self.0.fail_watches(SourceError::Compacted {
            requested: rev,
            compacted: rev,
        });
    }

    /// `namespace/name` -> resourceVersion, of what the store holds.
    pub fn state(&self) -> BTreeMap<String, String> {
        self.0
            .list()
            .unwrap()
            .items
            .iter()
            .map(|i| {
                (
                    i.object.key().to_owned(),
                    i.resource_version.get().to_string(),
                )
            })
            .collect()
    }
}

/// A running server, on a runtime of its own: killing it drops the
/// runtime, which closes every connection mid-stream, as a process that
/// dies does.
pub struct Running {
    pub addr: SocketAddr,
    pub server: Server,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Kills it: every connection is dropped where it is.
    pub fn kill(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
        for r in self.server.resources() {
            r.engine().stop();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Starts a server for `store` on `addr` (port 0: a free one).
pub async fn start_on(store: &Store, addr: SocketAddr, config: ServerConfig) -> Running {
    let pods = resource_on(ResourceInfo::pods(), Arc::new(store.0.clone())).unwrap();
    let server = Server::new([pods], config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("test-server")
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime.spawn(bind(addr)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = server.clone();
    runtime.spawn(async move {
        let _ = serving.serve(listener, std::future::pending()).await;
    });
    let running = Running {
        addr,
        server,
        runtime: Some(runtime),
    };
    // Ready once the engine has listed.
    eventually("the engine lists", || {
        running
            .server
            .resources()
            .iter()
            .all(|r| r.engine().lifecycle() == herald::Lifecycle::Ready)
    })
    .await;
    running
}

pub async fn start(store: &Store) -> Running {
    start_on(
        store,
        "127.0.0.1:0".parse().unwrap(),
        ServerConfig::default(),
    )
    .await
}

async fn bind(addr: SocketAddr) -> tokio::net::TcpListener {
    // The port of a server just killed may take a moment to free.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => return l,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("bind {addr}: {e}"),
        }
    }
}

/// Waits up to 30 s for `f`.
pub async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
