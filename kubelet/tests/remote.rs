//! The object manager over the Kubernetes API front: a `herald-server`
//! (the `herald-server` library) serving Secrets on loopback, and hostile
//! servers.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use herald::{BackoffConfig, MemorySource, Object};
use herald_kube::{Decoder, ResourceInfo};
use herald_kubelet::{GetError, ManagerConfig, ObjectManager, PodRefs, RemoteUpstream};
use herald_server::{Server, ServerConfig, resource_on};
use herald_testkit::eventually;
use serde_json::json;

/// A Secret as the apiserver stores one, at `rv`.
fn secret(name: &str, data: &str, immutable: bool, rv: u64) -> Object {
    let mut v = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv.to_string()},
        "data": {"v": data},
    });
    if immutable {
        v["immutable"] = json!(true);
    }
    Object::builder("ns", name)
        .payload(serde_json::to_vec(&v).unwrap())
        .build()
}

fn data(object: &Object) -> String {
    let v: serde_json::Value = serde_json::from_slice(object.payload()).unwrap();
    v["data"]["v"].as_str().unwrap().to_owned()
}

fn put(store: &MemorySource, name: &str, data: &str, immutable: bool) {
    store.put_with(|rv| secret(name, data, immutable, rv.get()));
}

/// herald-server for `store`'s Secrets on `addr`, on a runtime of its own
/// (dropping it kills the server mid-stream, as a dying process would).
struct Running {
    addr: SocketAddr,
    server: Server,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    fn start(store: &MemorySource, addr: SocketAddr) -> Running {
        let resource = resource_on(ResourceInfo::secrets(), Arc::new(store.clone())).unwrap();
        let server = Server::new([resource], ServerConfig::default());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            // The port of a server just killed may take a moment to free.
            match runtime.block_on(tokio::net::TcpListener::bind(addr)) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("bind {addr}: {e}"),
            }
        };
        let addr = listener.local_addr().unwrap();
        let serving = server.clone();
        runtime.spawn(async move {
            let _ = serving.serve(listener, std::future::pending()).await;
        });
        eventually("the server's engine lists", || {
            server
                .resources()
                .iter()
                .all(|r| r.engine().lifecycle() == herald::Lifecycle::Ready)
        });
        Running {
            addr,
            server,
            runtime: Some(runtime),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(mut self) {
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

fn manager(url: &str) -> ObjectManager {
    manager_waiting(url, Duration::from_secs(10))
}

fn manager_waiting(url: &str, sync_timeout: Duration) -> ObjectManager {
    let upstream = RemoteUpstream::new(url, "secrets", Decoder::new()).unwrap();
    let backoff = BackoffConfig {
        initial: Duration::from_millis(50),
        max: Duration::from_millis(200),
        ..BackoffConfig::default()
    };
    let config = ManagerConfig::default()
        .sync_timeout(sync_timeout)
        .backoff(backoff);
    ObjectManager::new(upstream, config).unwrap()
}

fn pod(uid: &str, objects: &[&str]) -> PodRefs {
    PodRefs {
        namespace: "ns".into(),
        name: format!("pod-{uid}"),
        uid: uid.into(),
        objects: objects
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    }
}

fn get_data(m: &ObjectManager, name: &str) -> Option<String> {
    m.get("ns", name).unwrap().map(|o| data(&o))
}

#[test]
fn the_manager_follows_objects_served_over_http() {
    let store = MemorySource::new();
    put(&store, "s1", "v1", false);
    put(&store, "imm", "i1", true);
    let server = Running::start(&store, "127.0.0.1:0".parse().unwrap());
    let m = manager(&server.url());
    m.register_pod(&pod("a", &["s1", "absent", "imm"])).unwrap();
    assert_eq!(get_data(&m, "s1").as_deref(), Some("v1"));
    assert_eq!(m.get("ns", "absent"), Ok(None));
    assert_eq!(get_data(&m, "imm").as_deref(), Some("i1"));
    // The immutable one's watch (and connection) is gone.
    eventually("the immutable stop", || m.stats().immutable_stops == 1);
    assert_eq!(m.stats().watches_open, 2);

    put(&store, "s1", "v2", false);
    put(&store, "absent", "here", false);
    put(&store, "imm", "changed", false);
    eventually("the changes", || {
        get_data(&m, "s1").as_deref() == Some("v2")
            && get_data(&m, "absent").as_deref() == Some("here")
    });
    assert_eq!(get_data(&m, "imm").as_deref(), Some("i1"));
    store.delete_with("ns/s1", |last, rv| {
        let mut v: serde_json::Value = serde_json::from_slice(last.payload()).unwrap();
        v["metadata"]["resourceVersion"] = json!(rv.get().to_string());
        Object::builder("ns", "s1")
            .payload(serde_json::to_vec(&v).unwrap())
            .build()
    });
    eventually("the delete", || m.get("ns", "s1") == Ok(None));
    let mut other = pod("a", &[]);
    other.uid = "another".into();
    m.unregister_pod(&other);
    assert_eq!(m.stats().watches_open, 2, "another uid is another pod");
    // Unregistering removes the registered version's references, whatever
    // set is passed.
    m.unregister_pod(&pod("a", &[]));
    assert_eq!(m.stats().watches_open, 0);
    assert_eq!(m.stats().objects, 0);
}

#[test]
fn a_killed_server_is_watched_again_once_it_is_back() {
    let store = MemorySource::new();
    put(&store, "s", "v1", false);
    let server = Running::start(&store, "127.0.0.1:0".parse().unwrap());
    let addr = server.addr;
    let m = manager(&server.url());
    m.add_reference("ns", "s", "p").unwrap();
    assert_eq!(get_data(&m, "s").as_deref(), Some("v1"));

    server.kill();
    eventually("the watch's end", || m.stats().watch_ends >= 1);
    // The last state is served while the server is away.
    assert_eq!(get_data(&m, "s").as_deref(), Some("v1"));
    put(&store, "s", "v2", false);
    let back = Running::start(&store, addr);
    eventually("the new state", || {
        get_data(&m, "s").as_deref() == Some("v2")
    });
    assert!(m.stats().reopens >= 1);
    put(&store, "s", "v3", false);
    eventually("a change after the re-open", || {
        get_data(&m, "s").as_deref() == Some("v3")
    });
    drop(back);
}

/// A server that answers every connection with `status` and `body`,
/// then closes it.
fn hostile(status: &str, body: &str) -> String {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(response.as_bytes());
        }
    });
    format!("http://{addr}")
}

#[test]
fn hostile_servers_end_watches_with_a_reason_and_nothing_panics() {
    let cases = [
        (
            "404 Not Found",
            r#"{"kind":"Status","message":"no such resource"}"#,
            "no such resource",
        ),
        ("200 OK", "not json\n", "malformed watch line"),
        (
            "200 OK",
            "{\"type\":\"ODD\",\"object\":{}}\n",
            "unknown watch event type",
        ),
        // Another object than the one asked for.
        (
            "200 OK",
            r#"{"type":"ADDED","object":{"metadata":{"name":"x","namespace":"ns","resourceVersion":"1"}}}
"#,
            "undecodable",
        ),
        (
            "200 OK",
            r#"{"type":"ADDED","object":{"metadata":{"name":"s","namespace":"ns"}}}
"#,
            "without a valid resourceVersion",
        ),
        (
            "200 OK",
            "{\"type\":\"ADDED\",\"object\":{\"meta",
            "closed the watch",
        ),
        ("200 OK", "", "closed the watch"),
    ];
    for (status, body, expect) in cases {
        let m = manager_waiting(&hostile(status, body), Duration::from_millis(300));
        m.add_reference("ns", "s", "p").unwrap();
        eventually("an end", || m.stats().watch_ends >= 1);
        let started = Instant::now();
        let err = m.get("ns", "s").unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(300));
        let GetError::SyncTimeout { last_end, .. } = err else {
            panic!("{err:?}")
        };
        let why = last_end.unwrap_or_default();
        assert!(why.contains(expect), "{expect:?} not in {why:?}");
        assert_eq!(m.stats().panics, 0);
    }
}

#[test]
fn nothing_listens() {
    // A port just freed: connection refused.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let m = manager(&format!("http://{addr}"));
    m.add_reference("ns", "s", "p").unwrap();
    eventually("ends", || m.stats().watch_ends >= 2);
    assert!(m.stats().reopens >= 1);
    m.stop();
    assert_eq!(m.get("ns", "s"), Err(GetError::Stopped));
}
