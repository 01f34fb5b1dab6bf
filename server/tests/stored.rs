//! Hostile stored values, as a real etcd can hold them: herald-server in
//! front of a real etcd whose pods prefix holds the apiserver's protobuf
//! and JSON values beside truncated protobuf, a wrong magic, a kind the
//! schema does not know, a value under the wrong key, values encrypted at
//! rest with no key for them, and a value a hundred times the usual size.
//! Each bad one is a typed error for its key, counted by reason in
//! `/metrics`, shown by `/readyz` (which fails while any is stored), and
//! never served; the good ones are served as stored, the big one too; the
//! server stays up, and when the bad keys go it is ready again. The same
//! holds for values that arrive while the server watches.
//!
//! Needs the `etcd` feature (the default).
#![cfg(feature = "etcd")]

use std::time::{Duration, Instant};

use base64::Engine;
use herald_etcd::{ClusterConfig, EtcdCluster};
use herald_kube::{ResourceInfo, proto};
use herald_server::{Server, ServerConfig, etcd_resource};
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use serde_json::{Value, json};

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

async fn put(http: &reqwest::Client, etcd: &str, key: &str, value: &[u8]) {
    let r = http
        .post(format!("{etcd}/v3/kv/put"))
        .json(&json!({"key": b64(key.as_bytes()), "value": b64(value)}))
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

fn pod(ns: &str, name: &str, note_bytes: usize) -> Value {
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                     "labels": {"app": "web"}, "annotations": {"note": "x".repeat(note_bytes)},
                     "creationTimestamp": "2026-11-27T10:00:00Z"},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx:1.27",
                 "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]},
        "status": {"phase": "Running"},
    })
}

fn protobuf(v: &Value) -> Vec<u8> {
    proto::encode(v.as_object().unwrap()).unwrap()
}

/// `k8s\0` + an envelope naming `kind` around `raw`.
fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
    let field = |out: &mut Vec<u8>, n: u8, b: &[u8]| {
        out.push((n << 3) | 2);
        let mut len = b.len();
        while len >= 0x80 {
            out.push((len as u8) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(b);
    };
    let mut meta = Vec::new();
    field(&mut meta, 1, b"v1");
    field(&mut meta, 2, kind.as_bytes());
    let mut out = proto::MAGIC.to_vec();
    field(&mut out, 1, &meta);
    field(&mut out, 2, raw);
    out
}

async fn get(http: &reqwest::Client, url: &str) -> (u16, String) {
    let r = http.get(url).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn names(http: &reqwest::Client, base: &str) -> Vec<String> {
    let (code, body) = get(http, &format!("{base}/api/v1/pods")).await;
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The value of `name{labels}` in a scrape.
fn sample(metrics: &str, name_and_labels: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(name_and_labels) && l[name_and_labels.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

async fn until(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f().await {
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stored_values_are_typed_counted_visible_and_never_served() {
    let etcd = LocalEtcd::start(&etcd_binary().expect("etcd >= 3.5.13 (scripts/ensure-etcd.sh)"))
        .expect("etcd starts");
    let e = etcd.endpoint();
    let http = reqwest::Client::new();
    let p = "/registry/pods/";
    let good = pod("prod", "good-pb", 10);
    put(&http, &e, &format!("{p}prod/good-pb"), &protobuf(&good)).await;
    put(
        &http,
        &e,
        &format!("{p}prod/good-json"),
        &serde_json::to_vec(&pod("prod", "good-json", 10)).unwrap(),
    )
    .await;
    // A hundred times the usual size (a 3 KB pod): big, but a pod.
    put(
        &http,
        &e,
        &format!("{p}prod/big"),
        &protobuf(&pod("prod", "big", 300_000)),
    )
    .await;
    let whole = protobuf(&good);
    let bad: [(&str, Vec<u8>, &str); 7] = [
        (
            "prod/truncated",
            whole[..whole.len() / 2].to_vec(),
            "protobuf",
        ),
        (
            "prod/magic",
            [b"k9s\0".as_slice(), &whole[4..]].concat(),
            "json",
        ),
        ("prod/gizmo", envelope("Gizmo", b"\x0a\x00"), "unknown_kind"),
        // The value names another pod than its key.
        (
            "prod/other-key",
            protobuf(&pod("prod", "good-pb", 1)),
            "shape",
        ),
        (
            "prod/kms",
            b"k8s:enc:kms:v2:plugin:opaque".to_vec(),
            "encrypted",
        ),
        (
            "prod/aescbc",
            b"k8s:enc:aescbc:v1:key1:0123456789abcdef0123456789abcdef".to_vec(),
            "encrypted",
        ),
        ("prod/garbage", b"\xff\xfe\x00not anything".to_vec(), "json"),
    ];
    for (key, value, _) in &bad {
        put(&http, &e, &format!("{p}{key}"), value).await;
    }

    let cluster = EtcdCluster::connect(ClusterConfig::new([e.clone()])).unwrap();
    let resource = etcd_resource(ResourceInfo::pods(), &cluster, p, &[]).unwrap();
    let server = Server::new([resource], ServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, std::future::pending()).await });
    until("the pods are listed", async || {
        get(&http, &format!("{base}/api/v1/pods")).await.0 == 200
    })
    .await;

    // Served: the good ones only, as stored.
    assert_eq!(names(&http, &base).await, ["big", "good-json", "good-pb"]);
    let (_, body) = get(&http, &format!("{base}/api/v1/namespaces/prod/pods/big")).await;
    let big: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        big["metadata"]["annotations"]["note"]
            .as_str()
            .map(str::len),
        Some(300_000)
    );
    for (key, _, _) in &bad {
        let (code, _) = get(
            &http,
            &format!("{base}/api/v1/namespaces/{key}").replace("prod/", "prod/pods/"),
        )
        .await;
        assert_eq!(code, 404, "{key} is not served");
    }
    // Counted by reason, the keys that hold one a gauge.
    let (_, metrics) = get(&http, &format!("{base}/metrics")).await;
    for reason in ["protobuf", "json", "unknown_kind", "shape", "encrypted"] {
        let want = bad.iter().filter(|(_, _, r)| *r == reason).count() as f64;
        let got = sample(
            &metrics,
            &format!(
                "herald_source_undecodable_values_total{{resource=\"pods\",reason=\"{reason}\"}}"
            ),
        );
        assert_eq!(got, Some(want), "{reason}\n{metrics}");
    }
    assert_eq!(
        sample(
            &metrics,
            "herald_source_undecodable_objects{resource=\"pods\"}"
        ),
        Some(bad.len() as f64)
    );
    // Not ready, and says why; the server answers all the same.
    let (code, ready) = get(&http, &format!("{base}/readyz")).await;
    assert_eq!(code, 503, "{ready}");
    assert!(ready.contains("7 stored values not decodable"), "{ready}");

    // While watching: a bad value that arrives is counted and not sent; a
    // good change is.
    let mut watch = http
        .get(format!(
            "{base}/api/v1/namespaces/prod/pods?watch=1&resourceVersion=0"
        ))
        .send()
        .await
        .unwrap();
    put(&http, &e, &format!("{p}prod/late-bad"), &whole[..10]).await;
    put(
        &http,
        &e,
        &format!("{p}prod/late-good"),
        &protobuf(&pod("prod", "late-good", 1)),
    )
    .await;
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("\"late-good\"") {
        assert!(
            Instant::now() < deadline,
            "the good change did not come: {seen}"
        );
        if let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_secs(1), watch.chunk()).await
        {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    assert!(!seen.contains("late-bad"), "{seen}");
    until("the late bad value is counted", async || {
        let (_, m) = get(&http, &format!("{base}/metrics")).await;
        sample(&m, "herald_source_undecodable_objects{resource=\"pods\"}") == Some(8.0)
    })
    .await;

    // The bad keys go: ready again.
    for (key, _, _) in &bad {
        delete(&http, &e, &format!("{p}{key}")).await;
    }
    delete(&http, &e, &format!("{p}prod/late-bad")).await;
    until("ready once the bad values are gone", async || {
        get(&http, &format!("{base}/readyz")).await.0 == 200
    })
    .await;
    assert_eq!(
        names(&http, &base).await,
        ["big", "good-json", "good-pb", "late-good"]
    );
    for r in server.resources() {
        r.engine().stop();
    }
}
