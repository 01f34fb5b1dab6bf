//! The converter against a real HTTPS webhook on loopback (its own CA
//! as the CRD's `caBundle`), and `strategy: None`.

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use herald_testkit::webhook::ConversionWebhook;
use serde_json::{Value, json};

use super::*;
use crate::crds::custom_of;

/// A CRD of `widgets.herald.dev` at v1 and v2 (storage), converted by
/// `conversion`.
fn crd(conversion: Value) -> Custom {
    let crd = json!({"metadata": {"name": "widgets.herald.dev"}, "spec": {
        "group": "herald.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {"name": "v1", "served": true, "storage": false},
            {"name": "v2", "served": true, "storage": true}],
        "conversion": conversion}});
    custom_of(&crd, "/registry").unwrap()
}

fn widget(version: &str, name: &str, spec: Value) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({"apiVersion": format!("herald.dev/{version}"), "kind": "Widget",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "7",
                "labels": {"app": "w"}},
            "spec": spec}))
        .unwrap(),
    )
}

fn parsed(b: &Bytes) -> Value {
    serde_json::from_slice(b).unwrap()
}

/// v1's `spec.size` is v2's `spec.replicas`.
fn rename(object: &Value, desired: &str) -> Result<Value, String> {
    let mut out = object.clone();
    let spec = out["spec"].as_object_mut().ok_or("no spec")?;
    match desired {
        "herald.dev/v2" => {
            let size = spec.remove("size").ok_or("no size")?;
            spec.insert("replicas".into(), size);
        }
        "herald.dev/v1" => {
            let replicas = spec.remove("replicas").ok_or("no replicas")?;
            spec.insert("size".into(), replicas);
        }
        other => return Err(format!("cannot convert to {other}")),
    }
    out["apiVersion"] = json!(desired);
    Ok(out)
}

fn webhook_crd(hook: &ConversionWebhook, review: &[&str]) -> Custom {
    let ca = base64::engine::general_purpose::STANDARD.encode(hook.ca_pem());
    crd(json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": hook.url(), "caBundle": ca},
        "conversionReviewVersions": review}}))
}

#[test]
fn none_rewrites_the_api_version_of_those_at_another_version() {
    let c = Converter::new(&crd(json!({"strategy": "None"})), None).unwrap();
    assert!(!c.calls_webhook());
    let (a, b) = (
        widget("v1", "a", json!({"size": 1})),
        widget("v2", "b", json!({"replicas": 2})),
    );
    let got = c
        .convert_blocking(vec![a.clone(), b.clone()], "v2", true)
        .unwrap();
    assert_eq!(got[1], b, "already at v2: the same bytes");
    assert_eq!(
        parsed(&got[0]),
        json!({"apiVersion": "herald.dev/v2", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a", "resourceVersion": "7", "labels": {"app": "w"}},
            "spec": {"size": 1}})
    );
    let back = c.convert_blocking(got, "v1", true).unwrap();
    assert_eq!(back[0], a);
    assert_eq!(parsed(&back[1])["apiVersion"], "herald.dev/v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_converts_a_list_in_one_review() {
    let hook = ConversionWebhook::start(rename);
    for review in [["v1"], ["v1beta1"]] {
        let c = Converter::new(&webhook_crd(&hook, &review), None).unwrap();
        assert!(c.calls_webhook());
        let before = hook.reviews();
        let a = widget("v1", "a", json!({"size": 1}));
        let b = widget("v2", "b", json!({"replicas": 2}));
        let got = c.convert(vec![a, b.clone()], "v2", true).await.unwrap();
        assert_eq!(
            hook.reviews(),
            before + 1,
            "{review:?}: one review for the list"
        );
        assert_eq!(got[1], b);
        // Converted, its original metadata kept, keys in Go's order.
        assert_eq!(
            std::str::from_utf8(&got[0]).unwrap(),
            r#"{"apiVersion":"herald.dev/v2","kind":"Widget","metadata":{"labels":{"app":"w"},"name":"a","namespace":"ns","resourceVersion":"7","uid":"uid-a"},"spec":{"replicas":1}}"#
        );
        // Nothing to convert: no review.
        let same = c.convert(vec![b.clone()], "v2", false).await.unwrap();
        assert_eq!(same, vec![b]);
        assert_eq!(hook.reviews(), before + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_failure_is_the_apiservers_500() {
    let hook = ConversionWebhook::start(rename);
    let c = Converter::new(&webhook_crd(&hook, &["v1"]), None).unwrap();
    let a = widget("v1", "a", json!({"size": 1}));
    hook.set_failing(true);
    let e = c.convert(vec![a.clone()], "v2", true).await.unwrap_err();
    assert_eq!((e.code, e.reason), (500, ""));
    assert_eq!(
        e.message,
        "conversion webhook for herald.dev/v2, Kind=WidgetList failed: conversion refused"
    );
    let status: Value = serde_json::from_slice(&e.to_json()).unwrap();
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": e.message, "code": 500})
    );
    let e = c.convert(vec![a.clone()], "v2", false).await.unwrap_err();
    assert_eq!(
        e.message,
        "conversion webhook for herald.dev/v2, Kind=Widget failed: conversion refused"
    );
    hook.set_failing(false);
    // An object the webhook cannot convert: its message.
    let odd = widget("v1", "b", json!({"color": "red"}));
    let e = c.convert(vec![odd], "v2", true).await.unwrap_err();
    assert!(e.message.ends_with("failed: no size"), "{}", e.message);
    // No supported review version.
    let c = Converter::new(&webhook_crd(&hook, &["v2"]), None).unwrap();
    let e = c.convert(vec![a], "v2", true).await.unwrap_err();
    assert_eq!(e.message, "no supported conversion review versions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_trusted_only_through_its_ca_bundle() {
    let hook = ConversionWebhook::start(rename);
    let other = ConversionWebhook::start(rename);
    // The other webhook's CA: the certificate is not trusted.
    let ca = base64::engine::general_purpose::STANDARD.encode(other.ca_pem());
    let c = Converter::new(
        &crd(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": hook.url(), "caBundle": ca}, "conversionReviewVersions": ["v1"]}})),
        None,
    )
    .unwrap();
    let e = c
        .convert(vec![widget("v1", "a", json!({"size": 1}))], "v2", true)
        .await
        .unwrap_err();
    let head = format!(
        "conversion webhook for herald.dev/v2, Kind=WidgetList failed: Post \"{}\": ",
        hook.url()
    );
    assert!(e.message.starts_with(&head), "{}", e.message);
    assert_eq!(hook.reviews(), 0);
    // Unreachable.
    let port = hook.addr().port();
    drop(hook);
    let c = Converter::new(
        &crd(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/convert"), "caBundle": ca},
            "conversionReviewVersions": ["v1"]}})),
        None,
    )
    .unwrap();
    let e = c
        .convert(vec![widget("v1", "a", json!({"size": 1}))], "v2", true)
        .await
        .unwrap_err();
    assert!(
        e.message.contains("failed: Post \"https://127.0.0.1:"),
        "{}",
        e.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_reference_is_dialled_at_its_cluster_ip() {
    let hook = ConversionWebhook::start(rename);
    let ca = base64::engine::general_purpose::STANDARD.encode(hook.ca_pem());
    let spec = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"namespace": "webhooks", "name": "conv", "path": "/convert",
            "port": hook.addr().port()}, "caBundle": ca},
        "conversionReviewVersions": ["v1"]}});
    let ips: ServiceIps = Arc::new(|ns: &str, name: &str| {
        ((ns, name) == ("webhooks", "conv")).then(|| "127.0.0.1".parse().unwrap())
    });
    let c = Converter::new(&crd(spec.clone()), Some(ips)).unwrap();
    let got = c
        .convert(vec![widget("v2", "a", json!({"replicas": 3}))], "v1", false)
        .await
        .unwrap();
    assert_eq!(parsed(&got[0])["spec"], json!({"size": 3}));
    // Without the service's address: the name the apiserver dials,
    // which does not resolve here.
    let c = Converter::new(&crd(spec), None).unwrap();
    let e = c
        .convert(vec![widget("v2", "a", json!({"replicas": 3}))], "v1", false)
        .await
        .unwrap_err();
    let head = format!(
        "conversion webhook for herald.dev/v2, Kind=Widget failed: Post \"https://conv.webhooks.svc:{}/convert\": ",
        hook.addr().port()
    );
    assert!(e.message.starts_with(&head), "{}", e.message);
}
