//! Custom resources at every served version, in front of a real etcd:
//! herald-server `--resources all` with a CRD of two versions (v1, v2;
//! `strategy: None`) whose objects are stored some under v1, some under
//! v2. Each version lists, gets and watches every object at that version
//! (its `apiVersion` rewritten, as the apiserver's `nopConverter` does);
//! discovery lists both versions, v2 preferred. A change to the CRD that
//! keeps what is stored (a category added, the storage version switched)
//! keeps the engine: the custom resource never answers 404 meanwhile and
//! an open watch goes on; deleting the CRD ends the watch.
//!
//! Needs the `etcd` feature (the default).
#![cfg(feature = "etcd")]

#[path = "support/proc.rs"]
mod proc;

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use proc::{Proc, open_stream};
use serde_json::{Value, json};

const CRD_KEY: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.herald.dev";
const WIDGETS: &str = "/registry/herald.dev/widgets/";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

async fn put(http: &reqwest::Client, etcd: &str, key: &str, value: &Value) {
    let r = http
        .post(format!("{etcd}/v3/kv/put"))
        .json(
            &json!({"key": b64(key.as_bytes()), "value": b64(&serde_json::to_vec(value).unwrap())}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "put {key}: {}", r.status());
}

async fn delete(http: &reqwest::Client, etcd: &str, key: &str) {
    let r = http
        .post(format!("{etcd}/v3/kv/deleterange"))
        .json(&json!({"key": b64(key.as_bytes())}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
}

/// The CRD as the apiserver stores it: v1 and v2 served, `storage` the
/// storage version, in `categories`.
fn crd(storage: &str, categories: &[&str]) -> Value {
    let versions: Vec<Value> = ["v1", "v2"]
        .iter()
        .map(|v| json!({"name": v, "served": true, "storage": *v == storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}))
        .collect();
    json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"name": "widgets.herald.dev", "uid": "crd-uid", "creationTimestamp": "2026-12-01T00:00:00Z"},
        "spec": {"group": "herald.dev", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                "categories": categories},
            "versions": versions,
            "conversion": {"strategy": "None"}},
        "status": {"conditions": [{"type": "Established", "status": "True"}],
            "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1", "v2"]}})
}

/// A widget as the apiserver stores one (keys sorted) under `version`.
fn widget(version: &str, name: &str) -> Value {
    json!({"apiVersion": format!("herald.dev/{version}"), "kind": "Widget",
        "metadata": {"creationTimestamp": "2026-12-01T00:00:00Z", "name": name, "namespace": "ns",
            "uid": format!("uid-{name}")},
        "spec": {"size": 1}})
}

fn body(p: &Proc, path: &str) -> Value {
    let (code, body) = p.get(path);
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// The next watch event (skipping the chunked encoding's size lines).
fn next_event(watch: &mut impl BufRead) -> Option<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        if watch.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let text = line.trim();
        if text == "0" {
            return None;
        }
        if text.starts_with('{') {
            return Some(serde_json::from_str(text).unwrap());
        }
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_version_converted_and_engines_kept_across_crd_changes() {
    let etcd = LocalEtcd::start(&etcd_binary().expect("etcd >= 3.5.13 (scripts/ensure-etcd.sh)"))
        .expect("etcd starts");
    let e = etcd.endpoint();
    let http = reqwest::Client::new();
    put(&http, &e, CRD_KEY, &crd("v2", &[])).await;
    put(&http, &e, &format!("{WIDGETS}ns/a"), &widget("v1", "a")).await;
    put(&http, &e, &format!("{WIDGETS}ns/b"), &widget("v2", "b")).await;
    let p = Proc::start(&["--etcd", &e, "--resources", "all"]);

    // Discovery: both versions, v2 (higher priority) preferred.
    let group = body(&p, "/apis/herald.dev");
    assert_eq!(group["preferredVersion"]["version"], "v2", "{group}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    for v in ["v1", "v2"] {
        let list = body(&p, &format!("/apis/herald.dev/{v}"));
        assert_eq!(list["resources"][0]["name"], "widgets", "{v}: {list}");
    }

    // Lists and GETs at each version: every object at that version.
    for v in ["v1", "v2"] {
        let want = format!("herald.dev/{v}");
        let list = body(&p, &format!("/apis/herald.dev/{v}/namespaces/ns/widgets"));
        assert_eq!(
            (list["apiVersion"].as_str(), list["kind"].as_str()),
            (Some(&*want), Some("WidgetList"))
        );
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{list}");
        for item in items {
            assert_eq!(item["apiVersion"], want, "{item}");
            assert_eq!(item["spec"], json!({"size": 1}));
        }
        for name in ["a", "b"] {
            let got = body(
                &p,
                &format!("/apis/herald.dev/{v}/namespaces/ns/widgets/{name}"),
            );
            assert_eq!(got["apiVersion"], want);
            // The rest as stored.
            let mut stored = widget("v1", name);
            stored["apiVersion"] = json!(want);
            stored["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"].clone();
            assert_eq!(got, stored);
        }
    }
    assert_eq!(p.get("/apis/herald.dev/v3/namespaces/ns/widgets").0, 404);

    // A watch at v1: the initial events at v1.
    let mut watch = open_stream(
        p.addr,
        "/apis/herald.dev/v1/namespaces/ns/widgets?watch=true&resourceVersion=0",
        "",
    );
    for _ in 0..2 {
        let ev = next_event(&mut watch).expect("an initial event");
        assert_eq!(
            (ev["type"].as_str(), ev["object"]["apiVersion"].as_str()),
            (Some("ADDED"), Some("herald.dev/v1"))
        );
    }

    // The CRD changes twice (a category, then the storage version), a
    // client listing all the while: never a 404.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = {
        let (stop, addr) = (stop.clone(), p.addr);
        std::thread::spawn(move || {
            let probe = ProbeAddr(addr);
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let code = probe.code("/apis/herald.dev/v1/namespaces/ns/widgets");
                if code != 200 {
                    failures.push(code);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            failures
        })
    };
    put(&http, &e, CRD_KEY, &crd("v2", &["herald"])).await;
    wait_for("the category served", || {
        body(&p, "/apis/herald.dev/v1")["resources"][0]["categories"] == json!(["herald"])
    });
    put(&http, &e, &format!("{WIDGETS}ns/c"), &widget("v2", "c")).await;
    let ev = next_event(&mut watch).expect("the watch goes on after a category is added");
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "c");
    assert_eq!(ev["object"]["apiVersion"], "herald.dev/v1");
    put(&http, &e, CRD_KEY, &crd("v1", &["herald"])).await;
    std::thread::sleep(Duration::from_millis(2500));
    put(&http, &e, &format!("{WIDGETS}ns/d"), &widget("v1", "d")).await;
    let ev = next_event(&mut watch).expect("the watch goes on after the storage version switched");
    assert_eq!(ev["object"]["metadata"]["name"], "d");
    assert_eq!(ev["object"]["apiVersion"], "herald.dev/v1");
    stop.store(true, Ordering::Relaxed);
    let failures = failures.join().unwrap();
    assert!(
        failures.is_empty(),
        "answers other than 200 while the CRD changed: {failures:?}"
    );
    let got = body(&p, "/apis/herald.dev/v2/namespaces/ns/widgets/d");
    assert_eq!(got["apiVersion"], "herald.dev/v2");

    // The CRD goes: its watches end, its resource is not found.
    delete(&http, &e, CRD_KEY).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Some(ev) = next_event(&mut watch) {
        assert!(Instant::now() < deadline, "the watch did not end");
        assert_ne!(ev["type"], "ADDED", "{ev}");
    }
    wait_for("the resource gone", || {
        p.get("/apis/herald.dev/v1/namespaces/ns/widgets").0 == 404
    });
}

/// A plain GET's status code, from a thread of its own.
struct ProbeAddr(std::net::SocketAddr);

impl ProbeAddr {
    fn code(&self, path: &str) -> u16 {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(self.0) else {
            return 0;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out)
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }
}
