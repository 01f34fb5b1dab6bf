//! A custom resource converted by a real conversion webhook (HTTPS on
//! loopback, its own CA as the CRD's `caBundle`), served in process:
//! objects stored under v1 and v2 are listed, got and watched at each
//! version through the webhook (a list in one review); when the webhook
//! refuses, a list and a GET are the apiserver's 500 (no reason, its
//! message) and an open watch ends without an `ERROR` event, as the
//! apiserver's watch handler ends one whose event it cannot encode.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::StreamExt;
use herald::{MemorySource, Object};
use herald_kube::table::Printer;
use herald_server::crds::{Converter, custom_of};
use herald_server::{Server, ServerConfig, resource_on};
use herald_testkit::webhook::ConversionWebhook;
use serde_json::{Value, json};

/// v1's `spec.size` is v2's `spec.replicas`.
fn rename(object: &Value, desired: &str) -> Result<Value, String> {
    let mut out = object.clone();
    let spec = out["spec"].as_object_mut().ok_or("no spec")?;
    let (from, to) = match desired {
        "herald.dev/v2" => ("size", "replicas"),
        _ => ("replicas", "size"),
    };
    let v = spec.remove(from).ok_or("nothing to rename")?;
    spec.insert(to.into(), v);
    out["apiVersion"] = json!(desired);
    Ok(out)
}

fn put(source: &MemorySource, version: &str, name: &str) -> u64 {
    let field = if version == "v1" { "size" } else { "replicas" };
    source
        .put_with(|rv| {
            let object = json!({"apiVersion": format!("herald.dev/{version}"), "kind": "Widget",
                "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                    "resourceVersion": rv.get().to_string()},
                "spec": {field: 3}});
            Object::builder("ns", name)
                .payload(serde_json::to_vec(&object).unwrap())
                .build()
        })
        .get()
}

async fn get(http: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = http.get(url).send().await.unwrap();
    let code = r.status().as_u16();
    (code, r.json().await.unwrap())
}

/// The next event of a watch's byte stream (`None`: the stream ended).
async fn next_event(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    pending: &mut Vec<u8>,
) -> Option<Value> {
    loop {
        if let Some(i) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=i).collect();
            return Some(serde_json::from_slice(&line).unwrap());
        }
        match tokio::time::timeout(Duration::from_secs(20), stream.next()).await {
            Ok(Some(Ok(chunk))) => pending.extend_from_slice(&chunk),
            Ok(_) => return None,
            Err(_) => panic!("no event within 20 s"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_gets_and_watches_go_through_the_webhook() {
    let hook = ConversionWebhook::start(rename);
    let ca = base64::engine::general_purpose::STANDARD.encode(hook.ca_pem());
    let crd = json!({"metadata": {"name": "widgets.herald.dev"}, "spec": {
        "group": "herald.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}],
        "conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": hook.url(), "caBundle": ca}, "conversionReviewVersions": ["v1"]}}}});
    let custom = custom_of(&crd, "/registry").unwrap();
    let source = MemorySource::new();
    put(&source, "v1", "a");
    put(&source, "v2", "b");
    let versions = custom
        .versions
        .iter()
        .map(|(info, columns)| (info.clone(), Printer::custom(columns.clone())))
        .collect();
    let widgets = resource_on(custom.info.clone(), Arc::new(source.clone()))
        .unwrap()
        .with_versions(versions, Converter::new(&custom, None).unwrap());
    let server = Server::new([widgets], ServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/apis/herald.dev", listener.local_addr().unwrap());
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, std::future::pending()).await });
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.resources()[0].engine().lifecycle() != herald::Lifecycle::Ready {
        assert!(Instant::now() < deadline, "the engine never listed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let http = reqwest::Client::new();

    // A list at v2: a converted, b as stored, in one review.
    let (code, list) = get(&http, &format!("{base}/v2/namespaces/ns/widgets")).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(hook.reviews(), 1);
    assert_eq!(list["apiVersion"], "herald.dev/v2");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items[0]["apiVersion"], "herald.dev/v2");
    assert_eq!(items[0]["spec"], json!({"replicas": 3}));
    assert_eq!(items[0]["metadata"]["uid"], "uid-a");
    assert_eq!(items[1]["spec"], json!({"replicas": 3}));
    // GETs at v1: a as stored (no review), b converted.
    let (_, a) = get(&http, &format!("{base}/v1/namespaces/ns/widgets/a")).await;
    assert_eq!(
        (a["apiVersion"].as_str(), &a["spec"]),
        (Some("herald.dev/v1"), &json!({"size": 3}))
    );
    assert_eq!(hook.reviews(), 1);
    let (_, b) = get(&http, &format!("{base}/v1/namespaces/ns/widgets/b")).await;
    assert_eq!(
        (b["apiVersion"].as_str(), &b["spec"]),
        (Some("herald.dev/v1"), &json!({"size": 3}))
    );
    assert_eq!(hook.reviews(), 2);

    // A watch at v1: its initial events and a new object, converted.
    let watch = http
        .get(format!(
            "{base}/v1/namespaces/ns/widgets?watch=true&resourceVersion=0"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let mut stream = watch.bytes_stream();
    let mut pending = Vec::new();
    for name in ["a", "b"] {
        let ev = next_event(&mut stream, &mut pending).await.unwrap();
        assert_eq!(ev["object"]["metadata"]["name"], name);
        assert_eq!(ev["object"]["apiVersion"], "herald.dev/v1");
        assert_eq!(ev["object"]["spec"], json!({"size": 3}));
    }
    put(&source, "v2", "c");
    let ev = next_event(&mut stream, &mut pending).await.unwrap();
    assert_eq!(
        (
            ev["type"].as_str(),
            ev["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("c"))
    );
    assert_eq!(ev["object"]["spec"], json!({"size": 3}));

    // The webhook refuses: the apiserver's 500s, and the watch ends.
    hook.set_failing(true);
    let (code, status) = get(&http, &format!("{base}/v1/namespaces/ns/widgets")).await;
    assert_eq!(code, 500);
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "conversion webhook for herald.dev/v1, Kind=WidgetList failed: conversion refused",
            "code": 500})
    );
    let (code, status) = get(&http, &format!("{base}/v1/namespaces/ns/widgets/b")).await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        "conversion webhook for herald.dev/v2, Kind=Widget failed: conversion refused"
    );
    // Nothing to convert: still served.
    let (code, _) = get(&http, &format!("{base}/v1/namespaces/ns/widgets/a")).await;
    assert_eq!(code, 200);
    put(&source, "v2", "d");
    assert_eq!(
        next_event(&mut stream, &mut pending).await,
        None,
        "the watch ends"
    );
}
