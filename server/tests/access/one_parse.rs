//! One parse: what authorization decided on is what is served. alice may
//! read the pod `a` of namespace `n` alone (a Role with `resourceNames`);
//! generated query strings (repeated parameters, malformed escapes, bytes
//! that are not UTF-8, `;`, empty values, keys in other cases, selector
//! terms in any order, the apiserver's booleans) ask for the collection.
//! Whatever the query, a response alice gets holds no object but `a`: a
//! handler that read a parameter authorization did not see (the first of
//! two `fieldSelector`s, a lossily decoded one) would serve `b` and `c`.
//! bob, who may read every pod, gets the same objects as a query that
//! spells the same selector plainly: nothing read twice differs.

use std::collections::BTreeSet;

use herald_server::ServerConfig;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::fixture::{Cluster, dir, object, pod, start_with};

const KEYS: &[&str] = &[
    "fieldSelector",
    "fieldSelector",
    "fieldSelector",
    "watch",
    "limit",
    "labelSelector",
    "timeoutSeconds",
    "resourceVersion",
    "FieldSelector",
    "field%53elector",
    "x",
];

const VALUES: &[&str] = &[
    "metadata.name%3Da",
    "metadata.name=a",
    "metadata.name%3D%3Da",
    "metadata.name%3Db",
    "metadata.name%3Db%2Cmetadata.name%3Da",
    "metadata.name%3Da%2Cmetadata.name%3Db",
    "metadata.name!%3Da",
    "+metadata.name%3Da",
    "metadata.name%3D%61",
    "%ZZ",
    "%ff",
    "%",
    "%4",
    "metadata.name%3D%ff",
    "",
    "1",
    "true",
    "yes",
    "0",
    "false",
    "a%3Db",
    "x",
];

/// A query string: pairs of the pieces above, joined by `&` (sometimes
/// `&&`, a `;`, or a pair without `=`).
fn queries() -> impl Strategy<Value = String> {
    let pair = (
        prop::sample::select(KEYS),
        prop::sample::select(VALUES),
        0..10u8,
    )
        .prop_map(|(k, v, shape)| match shape {
            0 => k.to_owned(),
            1 => format!("{k}={v};y=1"),
            2 => format!("{k}={v}&"),
            _ => format!("{k}={v}"),
        });
    prop::collection::vec(pair, 0..6).prop_map(|pairs| pairs.join("&"))
}

/// The `namespace/name`s of a list's items or a watch's events.
fn names(body: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in body.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let objects: Vec<&Value> = match v["items"].as_array() {
            Some(items) => items.iter().collect(),
            None if v["type"] == "ADDED" || v["type"] == "MODIFIED" => vec![&v["object"]],
            None => vec![],
        };
        for o in objects {
            out.insert(format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            ));
        }
    }
    out
}

fn cluster() -> (crate::fixture::Dir, Cluster) {
    let d = dir("one-parse");
    let c = start_with(
        &d,
        None,
        // A watch without a timeout of its own ends within 2 s.
        ServerConfig {
            min_request_timeout: std::time::Duration::from_secs(1),
            ..ServerConfig::default()
        },
        herald_server::AccessConfig::default(),
    );
    for name in ["a", "b", "c"] {
        c.pods.put_with(pod("n", name));
    }
    c.rbac.roles.put_with(object(
        "n",
        "pod-a",
        json!({"metadata": {"name": "pod-a", "namespace": "n"},
               "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""],
                          "resources": ["pods"], "resourceNames": ["a"]}]}),
    ));
    c.rbac.bindings.put_with(object(
        "n",
        "alice-pod-a",
        json!({"metadata": {"name": "alice-pod-a", "namespace": "n"},
               "subjects": [{"kind": "User", "name": "alice"}],
               "roleRef": {"kind": "Role", "name": "pod-a"}}),
    ));
    c.until(
        "/api/v1/namespaces/n/pods?fieldSelector=metadata.name%3Da",
        "alice-token",
        200,
    );
    (d, c)
}

#[test]
fn what_is_served_is_what_authorization_decided_on() {
    let (_d, c) = cluster();
    let path = "/api/v1/namespaces/n/pods";
    let only_a: BTreeSet<String> = ["n/a".to_owned()].into();
    let mut runner = TestRunner::new(Config {
        cases: 160,
        failure_persistence: None,
        ..Config::default()
    });
    let (allowed, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let result = runner.run(&queries(), |q| {
        let (code, body) = c.get(&format!("{path}?{q}"), Some("alice-token"));
        let served = names(&body);
        if code == 200 {
            allowed.set(allowed.get() + 1);
            prop_assert!(
                served.is_subset(&only_a),
                "alice, allowed pod a alone, was served {served:?} for ?{q}"
            );
        } else {
            refused.set(refused.get() + 1);
            prop_assert!(served.is_empty(), "{code} with objects for ?{q}");
        }
        Ok(())
    });
    let (allowed, refused) = (allowed.get(), refused.get());
    eprintln!("one parse: {allowed} of alice's queries allowed, {refused} refused");
    result.unwrap();
    assert!(
        allowed > 5 && refused > 5,
        "{allowed} allowed, {refused} refused"
    );
}

#[test]
fn the_first_decodable_field_selector_is_the_one_served() {
    let (_d, c) = cluster();
    let path = "/api/v1/namespaces/n/pods";
    for (q, want) in [
        // Class 1 of issue 49: a malformed or non-UTF-8 first value, then
        // the name alice may read.
        ("fieldSelector=%ZZ&fieldSelector=metadata.name%3Da", 200),
        // Bytes that are not UTF-8 name nothing: a list alice may not do.
        ("fieldSelector=%ff&fieldSelector=metadata.name%3Da", 403),
        ("fieldSelector=metadata.name%3Da&fieldSelector=%ZZ", 200),
        (
            "fieldSelector=metadata.name%3Da;x&fieldSelector=metadata.name%3Db",
            403,
        ),
        // Terms in another order: Go sorts them, and the served selector
        // requires both names (nothing).
        ("fieldSelector=metadata.name%3Db%2Cmetadata.name%3Da", 200),
        (
            "watch=&fieldSelector=metadata.name%3Da&timeoutSeconds=1",
            200,
        ),
    ] {
        let (code, body) = c.get(&format!("{path}?{q}"), Some("alice-token"));
        assert_eq!(code, want, "?{q}: {body}");
        let served = names(&body);
        assert!(served.iter().all(|n| n == "n/a"), "?{q}: {served:?}");
    }
    // bob reads everything: a query spelled oddly serves what its plain
    // spelling serves.
    for (odd, plain) in [
        (
            "fieldSelector=%ZZ&fieldSelector=metadata.name%3Db",
            "fieldSelector=metadata.name%3Db",
        ),
        (
            "fieldSelector=metadata.name%3Dc;x&fieldSelector=metadata.name%3Db",
            "fieldSelector=metadata.name%3Db",
        ),
        ("x=%ff&labelSelector=", ""),
    ] {
        let (a, b) = (
            c.get(&format!("{path}?{odd}"), Some("bob-token")),
            c.get(&format!("{path}?{plain}"), Some("bob-token")),
        );
        assert_eq!((a.0, names(&a.1)), (b.0, names(&b.1)), "?{odd} vs ?{plain}");
    }
}

#[test]
fn a_named_get_is_a_get_whatever_its_query() {
    let (_d, c) = cluster();
    // `?watch=1` on an object is ignored (the apiserver's GET handler
    // reads `resourceVersion` alone): the object, not a watch replaying
    // its history to a caller allowed only `get`.
    let (code, body) = c.get(
        "/api/v1/namespaces/n/pods/a?watch=1&resourceVersion=1",
        Some("alice-token"),
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("one object, not a stream");
    assert_eq!(v["metadata"]["name"], "a");
    // The legacy watch path is a watch, decided as one.
    let (code, body) = c.get(
        "/api/v1/watch/namespaces/n/pods/a?timeoutSeconds=1",
        Some("alice-token"),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(names(&body), ["n/a".to_owned()].into());
    let (code, _) = c.get(
        "/api/v1/watch/namespaces/n/pods/b?timeoutSeconds=1",
        Some("alice-token"),
    );
    assert_eq!(code, 403);
    // HEAD of a resource path: 405, as the apiserver (after the decision).
    let (code, _) = c.raw_head("/api/v1/namespaces/n/pods/a", "alice-token");
    assert_eq!(code, 405);
    // An encoded slash separates segments before anything is decided.
    let (code, _) = c.get("/api/v1/namespaces/n%2Fpods", Some("alice-token"));
    assert_eq!(code, 403);
    let (code, body) = c.get("/api/v1/namespaces/n%2Fpods", Some("bob-token"));
    assert_eq!((code, names(&body).len()), (200, 3), "{body}");
}
