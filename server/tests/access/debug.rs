//! `/debug/herald/watches`: the open watches, who opened them, what they
//! filter and how far behind they are; authorized like any request.

use std::time::{Duration, Instant};

use herald::Object;
use serde_json::{Value, json};

use crate::fixture::{dir, start};
use crate::proc;

fn listing(c: &crate::fixture::Cluster) -> Value {
    let (code, body) = c.get("/debug/herald/watches?limit=10", Some("root-token"));
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn the_open_watches_show_their_user_filter_lag_and_state() {
    let d = dir("debug");
    let c = start(&d, None, false);
    // Only those allowed the path may read it.
    let (code, body) = c.get("/debug/herald/watches", Some("bob-token"));
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"cannot get path \"/debug/herald/watches\""#),
        "{body}"
    );
    assert_eq!(
        c.get("/debug/herald/watches?limit=0", Some("root-token")).0,
        400
    );
    // bob watches pods labelled app=web and never reads.
    let stream = proc::open_stream(
        c.addr,
        "/api/v1/namespaces/a/pods?watch=1&labelSelector=app%3Dweb",
        "Authorization: Bearer bob-token\r\n",
    );
    // The watch is listed from its first byte; it says "starting" until
    // its initial state is sent, then "following".
    let deadline = Instant::now() + Duration::from_secs(10);
    let l = loop {
        let l = listing(&c);
        if l["watches"][0]["state"] != "starting" || Instant::now() > deadline {
            break l;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(l["open"], 1, "{l}");
    let w = &l["watches"][0];
    assert_eq!(w["user"], "bob");
    assert_eq!(w["address"], "127.0.0.1");
    assert_eq!(w["resource"], "pods");
    assert_eq!(w["path"], "/api/v1/namespaces/a/pods");
    assert_eq!(w["labelSelector"], "app=web");
    assert_eq!(w["media"], "json");
    assert_eq!(w["state"], "following", "{w}");
    assert_eq!(w["lagSeconds"], 0.0);
    // 40 MB of changes it does not read: more than the connection and
    // the kernel's buffers take, so it falls behind.
    let big = "x".repeat(128 << 10);
    for i in 0..320 {
        let big = big.clone();
        c.pods.put_with(move |rv| {
            let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": format!("web-{i}"), "namespace": "a",
                "labels": {"app": "web"}, "annotations": {"big": big},
                "resourceVersion": rv.get().to_string()}});
            Object::builder("a", &format!("web-{i}"))
                .label("app", "web")
                .payload(serde_json::to_vec(&v).unwrap())
                .build()
        });
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let w = loop {
        std::thread::sleep(Duration::from_millis(100));
        let l = listing(&c);
        let w = l["watches"][0].clone();
        if w["lagSeconds"].as_f64().unwrap() > 0.2 {
            break w;
        }
        assert!(Instant::now() < deadline, "never behind: {w}");
    };
    assert!(
        ["queued", "parked"].contains(&w["state"].as_str().unwrap()),
        "{w}"
    );
    assert!(w["lagVersions"].as_u64().unwrap() > 0, "{w}");
    assert!(w["sentResourceVersion"].is_string(), "{w}");
    // Closed: gone from the list.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    while listing(&c)["open"] != 0 {
        assert!(
            Instant::now() < deadline,
            "the closed watch is still listed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
