//! Custom resources against the real kube-apiserver v1.37.2: one etcd,
//! the apiserver writing a CRD of v1 and v2 (`strategy: None`) and
//! objects under each storage version (a stored under v1, then the
//! storage version switched to v2, b under v2), and two `herald-server
//! --resources all`: one in front of the same etcd (`--etcd`), one in
//! front of the apiserver (`--kubeconfig`, watching the storage version
//! and converting itself). For each and each version, discovery, the
//! list's items and every GET are Herald's exactly as the apiserver's; a
//! watch at each version sends each object as the apiserver's GET at
//! that version.
//!
//! Needs the `etcd` feature (the default) and the kube-apiserver
//! (`HERALD_KUBE_APISERVER`, `scripts/ensure-kube-apiserver.sh`):
//! `--ignored` runs it.
#![cfg(feature = "etcd")]

#[path = "support/proc.rs"]
mod proc;

use std::io::BufRead;
use std::process::Command;
use std::time::{Duration, Instant};

use herald_testkit::apiserver::LocalApiserver;
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use proc::{Proc, open_stream};
use serde_json::{Value, json};

/// `curl` to the apiserver as `system:masters`: (status, body).
fn kas(k: &LocalApiserver, method: &str, path: &str, body: Option<(&str, &Value)>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--max-time", "30", "--cacert"])
        .arg(k.ca())
        .args([
            "-w",
            "\n%{http_code}",
            "-X",
            method,
            "-H",
            "Authorization: Bearer root-token",
        ]);
    if let Some((content_type, body)) = body {
        cmd.args([
            "-H",
            &format!("Content-Type: {content_type}"),
            "--data-binary",
        ])
        .arg(body.to_string());
    }
    let out = cmd
        .arg(format!("{}{path}", k.url()))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn herald(p: &Proc, path: &str) -> (u16, Value) {
    let (code, body) = p.get(path);
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn versions(storage: &str) -> Value {
    json!(["v1", "v2"]
        .iter()
        .map(|v| json!({"name": v, "served": true, "storage": *v == storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}))
        .collect::<Vec<_>>())
}

#[test]
#[ignore = "needs the real kube-apiserver (HERALD_KUBE_APISERVER): run with --ignored"]
fn every_version_answers_as_the_apiserver() {
    let etcd = LocalEtcd::start(&etcd_binary().expect("etcd (scripts/ensure-etcd.sh)"))
        .expect("start etcd");
    let k = LocalApiserver::start(&etcd.endpoint(), &["root-token"])
        .expect("the kube-apiserver (scripts/ensure-kube-apiserver.sh)");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.herald.dev"},
        "spec": {"group": "herald.dev", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                "categories": ["herald"]},
            "versions": versions("v1"), "conversion": {"strategy": "None"}}});
    let (code, body) = kas(&k, "POST", crds, Some(("application/json", &crd)));
    assert_eq!(code, 201, "{body}");
    let widgets = |v: &str| format!("/apis/herald.dev/{v}/namespaces/default/widgets");
    until("the CRD served", || {
        kas(&k, "GET", &widgets("v1"), None).0 == 200
    });
    let widget = |v: &str, name: &str| {
        json!({"apiVersion": format!("herald.dev/{v}"), "kind": "Widget",
            "metadata": {"name": name, "labels": {"made-at": v}}, "spec": {"size": 1, "note": name}})
    };
    let (code, body) = kas(
        &k,
        "POST",
        &widgets("v1"),
        Some(("application/json", &widget("v1", "a"))),
    );
    assert_eq!(code, 201, "{body}");
    let switch = json!({"spec": {"versions": versions("v2")}});
    let (code, body) = kas(
        &k,
        "PATCH",
        &format!("{crds}/widgets.herald.dev"),
        Some(("application/merge-patch+json", &switch)),
    );
    assert_eq!(code, 200, "{body}");
    // Written at v2 once the apiserver's handler took the switch.
    until("the storage version switched", || {
        let _ = kas(&k, "DELETE", &format!("{}/b", widgets("v2")), None);
        let (code, _) = kas(
            &k,
            "POST",
            &widgets("v2"),
            Some(("application/json", &widget("v2", "b"))),
        );
        code == 201 && etcd_value_version(&etcd, "b") == "herald.dev/v2"
    });
    assert_eq!(etcd_value_version(&etcd, "a"), "herald.dev/v1");

    let kubeconfig = k.dir().join("herald.kubeconfig");
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": k.url(), "certificate-authority": k.ca()}}],
        "users": [{"name": "u", "user": {"token": "root-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    });
    std::fs::write(&kubeconfig, config.to_string()).unwrap();
    let on_etcd = Proc::start(&["--etcd", &etcd.endpoint(), "--resources", "all"]);
    let kubeconfig = kubeconfig.display().to_string();
    let on_apiserver = Proc::start(&["--kubeconfig", &kubeconfig, "--resources", "all"]);
    for (upstream, p) in [("etcd", &on_etcd), ("apiserver", &on_apiserver)] {
        compare(&k, p, upstream);
    }
}

/// Herald `p` (in front of `upstream`) answers as the apiserver `k`.
fn compare(k: &LocalApiserver, p: &Proc, upstream: &str) {
    let widgets = |v: &str| format!("/apis/herald.dev/{v}/namespaces/default/widgets");
    until("Herald serves the widgets", || {
        herald(p, &widgets("v2")).0 == 200
    });
    until("Herald sees b", || {
        herald(p, &widgets("v2")).1["items"]
            .as_array()
            .map_or(0, Vec::len)
            == 2
    });
    let (_, want) = kas(k, "GET", "/apis/herald.dev", None);
    let (_, got) = herald(p, "/apis/herald.dev");
    assert_eq!(got, want, "{upstream}: /apis/herald.dev");
    for v in ["v1", "v2"] {
        let (_, want) = kas(k, "GET", &widgets(v), None);
        assert_eq!(want["items"].as_array().map(Vec::len), Some(2), "{want}");
        let (code, got) = herald(p, &widgets(v));
        assert_eq!(code, 200, "{upstream}: {v}");
        for key in ["apiVersion", "kind", "items"] {
            assert_eq!(got[key], want[key], "{upstream}: {v}: the list's {key}");
        }
        for name in ["a", "b"] {
            let path = format!("{}/{name}", widgets(v));
            let (_, want) = kas(k, "GET", &path, None);
            let (code, got) = herald(p, &path);
            assert_eq!(code, 200, "{upstream}: {path}");
            assert_eq!(got, want, "{upstream}: {path}");
        }
        let mut watch = open_stream(
            p.addr,
            &format!("{}?watch=true&resourceVersion=0", widgets(v)),
            "",
        );
        for _ in 0..2 {
            let mut line = String::new();
            let ev = loop {
                line.clear();
                assert!(watch.read_line(&mut line).unwrap() > 0, "the watch ended");
                if line.trim_start().starts_with('{') {
                    break serde_json::from_str::<Value>(line.trim()).unwrap();
                }
            };
            let name = ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned();
            let (_, want) = kas(k, "GET", &format!("{}/{name}", widgets(v)), None);
            assert_eq!(ev["object"], want, "{upstream}: {v}: the watch's {name}");
        }
    }
}

/// The `apiVersion` the value stored for widget `name` carries.
fn etcd_value_version(etcd: &LocalEtcd, name: &str) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = format!("/registry/herald.dev/widgets/default/{name}");
    let out = Command::new("curl")
        .args([
            "-s",
            "-X",
            "POST",
            &format!("{}/v3/kv/range", etcd.endpoint()),
            "-d",
        ])
        .arg(json!({"key": b64.encode(key)}).to_string())
        .output()
        .expect("curl");
    let range: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let Some(value) = range["kvs"][0]["value"].as_str() else {
        return String::new();
    };
    let stored: Value = serde_json::from_slice(&b64.decode(value).unwrap()).unwrap_or(Value::Null);
    stored["apiVersion"].as_str().unwrap_or_default().to_owned()
}
