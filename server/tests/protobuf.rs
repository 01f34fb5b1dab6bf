//! Protobuf clients that fall behind: each change's protobuf is made once,
//! however many connections send it and however far behind they are.
//!
//! Eight protobuf watch connections open at one version and read nothing
//! while 3,000 changes are written (far more than any cache of recent
//! encodings would hold, and more than the connections' bytes in flight);
//! then each reads the whole stream. Every connection gets every change,
//! in order, each object's protobuf decoding to the JSON the store holds;
//! `herald_http_protobuf_encodings_total` says 3,000: one encoding per
//! change, not one per connection (it was up to 8 per change when the
//! server kept only the last 1,024 encodings).

mod support;

use futures::StreamExt;
use herald::Object;
use herald_kube::proto;
use serde_json::{Value, json};
use support::*;

const CHANGES: u64 = 3_000;
const WATCHES: usize = 8;

/// A pod the protobuf schema knows entirely (no field of the tests'
/// usual pod that `v1.PodStatus` lacks).
fn pod(name: &str, n: u64, rv: u64) -> Object {
    let payload = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "resourceVersion": rv.to_string(), "labels": {"app": "web"},
                     "annotations": {"n": n.to_string()}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "pause"}]},
        "status": {"phase": "Running"},
    });
    Object::builder("ns", name)
        .label("app", "web")
        .field("spec.nodeName", "n1")
        .payload(serde_json::to_vec(&payload).unwrap())
        .build()
}

fn varint(b: &mut &[u8]) -> u64 {
    let mut v = 0;
    for shift in (0..64).step_by(7) {
        let (byte, rest) = b.split_first().expect("a varint runs off the end");
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    v
}

/// The length-delimited fields of a message, as (number, bytes).
fn fields(mut b: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        assert_eq!(key & 7, 2, "a WatchEvent has only bytes fields");
        let len = varint(&mut b) as usize;
        out.push((key >> 3, &b[..len]));
        b = &b[len..];
    }
    out
}

/// One watch stream's events: (type, the object as JSON), read from the
/// 4-byte-length frames client-go's protobuf watch decoder reads.
fn events(mut body: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while body.len() >= 4 {
        let len = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
        let event = fields(&body[4..4 + len]);
        let kind = String::from_utf8(event[0].1.to_vec()).unwrap();
        let raw = fields(event[1].1)[0].1;
        out.push((kind, Value::Object(proto::decode(raw).unwrap())));
        body = &body[4 + len..];
    }
    assert!(body.is_empty(), "a frame cut short");
    out
}

fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_protobuf_watchers_share_one_encoding_per_change() {
    let store = Store::new();
    let from = store.0.put_with(|rv| pod("p0", 0, rv.get())).get();
    let server = start(&store).await;
    let http = reqwest::Client::new();
    let url = format!(
        "{}/api/v1/namespaces/ns/pods?watch=true&resourceVersion={from}&timeoutSeconds=60",
        server.url()
    );
    let mut watches = Vec::new();
    for _ in 0..WATCHES {
        let r = http
            .get(&url)
            .header("accept", "application/vnd.kubernetes.protobuf;type=watch")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"],
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
        watches.push(r.bytes_stream());
    }
    let mut want = Vec::new();
    for n in 1..=CHANGES {
        let name = format!("p{}", n % 50);
        let rv = store.0.put_with(|rv| pod(&name, n, rv.get())).get();
        want.push((name, rv, n));
    }
    let last = want.last().unwrap().1;
    for (i, mut stream) in watches.into_iter().enumerate() {
        let mut body = Vec::new();
        // Until the last change's frame is in: read whole frames only.
        let done = |body: &[u8]| {
            let mut at = 0;
            let mut seen = 0;
            while body.len() >= at + 4 {
                let len = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
                if body.len() < at + 4 + len {
                    break;
                }
                at += 4 + len;
                seen += 1;
            }
            (seen as u64 >= CHANGES, at)
        };
        loop {
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), stream.next())
                .await
                .unwrap_or_else(|_| panic!("watch {i}: stalled"))
                .unwrap_or_else(|| panic!("watch {i}: ended early"))
                .unwrap();
            body.extend_from_slice(&chunk);
            let (all, at) = done(&body);
            if all {
                body.truncate(at);
                break;
            }
        }
        let got = events(&body);
        assert_eq!(got.len() as u64, CHANGES, "watch {i}");
        for ((kind, object), (name, rv, n)) in got.iter().zip(&want) {
            assert!(kind == "ADDED" || kind == "MODIFIED", "watch {i}: {kind}");
            assert_eq!(object["metadata"]["name"], json!(name), "watch {i}");
            assert_eq!(
                object["metadata"]["resourceVersion"],
                json!(rv.to_string()),
                "watch {i}"
            );
            assert_eq!(object["metadata"]["annotations"]["n"], json!(n.to_string()));
            assert_eq!(object["spec"]["containers"][0]["image"], "pause");
        }
        assert_eq!(
            got.last().unwrap().1["metadata"]["resourceVersion"],
            json!(last.to_string())
        );
    }
    let metrics = http
        .get(format!("{}/metrics", server.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let made = sample(
        &metrics,
        "herald_http_protobuf_encodings_total{resource=\"pods\"}",
    );
    assert_eq!(made, CHANGES as f64, "one protobuf per change");
}
