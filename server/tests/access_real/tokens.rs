//! Service-account tokens through their objects' lifecycles: a legacy
//! token whose Secret is replaced, marked invalid or being deleted, bound
//! tokens whose Pod, Secret, Node or ServiceAccount goes away, and claims
//! the apiserver reads strictly. Herald (deciding itself, and
//! delegating) must answer 401 exactly where the apiserver does.
//!
//! Tokens are minted with the apiserver's own key ([`Cluster::mint`]),
//! as its TokenRequest API and its (absent here) token controller would
//! mint them. Each expectation is polled for up to 15 s: Herald's cache
//! (and the delegating Herald's TokenReview cache) follows the apiserver.

#![allow(unreachable_pub)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::cluster::{self, Cluster, Who};

const NS: &str = "ns-b";
/// What the service account `tok` may list (a RoleBinding to
/// `widget-watcher`): 200 with a good token, 401 with a refused one.
const PROBE: &str = "/apis/example.com/v1/namespaces/ns-b/widgets";
const SERVERS: [&str; 3] = ["apiserver", "herald", "delegating"];

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn root() -> Who {
    Who::token("root", "root-token")
}

impl Cluster {
    /// The `metadata.uid` of the object at `path`, read from the
    /// apiserver.
    fn uid_of(&self, path: &str) -> String {
        let (code, body) = self.apiserver_get(&root(), path);
        assert_eq!(code, 200, "GET {path}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Waits (up to 15 s) until every server answers `want` to `token`
    /// on [`PROBE`].
    fn expect(&self, what: &str, token: &str, want: u16) {
        let who = Who::token(what, token);
        for server in SERVERS {
            let start = Instant::now();
            loop {
                let (code, body) = self.get_as(server, &who, PROBE);
                if code == want {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(15),
                    "{what}: the {server} answers {code}, not {want}: {body}"
                );
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }

    /// A legacy token Secret `name` holding `token`, with `labels` and
    /// `finalizers`.
    fn legacy_secret(&self, name: &str, token: &str, labels: Value, finalizers: Value) {
        self.create(
            &format!("/api/v1/namespaces/{NS}/secrets"),
            json!({
                "metadata": {
                    "name": name, "labels": labels, "finalizers": finalizers,
                    "annotations": {"kubernetes.io/service-account.name": "tok"},
                },
                "type": "kubernetes.io/service-account-token",
                "data": {"token": STANDARD.encode(token)},
            }),
        );
    }
}

/// The claims of a legacy token of `tok` from the Secret `secret`.
fn legacy(sa_uid: &str, secret: &str) -> Value {
    json!({
        "iss": "kubernetes/serviceaccount", "sub": format!("system:serviceaccount:{NS}:tok"),
        "kubernetes.io/serviceaccount/namespace": NS,
        "kubernetes.io/serviceaccount/secret.name": secret,
        "kubernetes.io/serviceaccount/service-account.name": "tok",
        "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
    })
}

/// The claims of a bound token of `tok`, with `bound` (`pod`, `secret`,
/// `node` refs) in its `kubernetes.io` claim.
fn bound(sa_uid: &str, bound: Value) -> Value {
    let now = now();
    let mut k = json!({"namespace": NS, "serviceaccount": {"name": "tok", "uid": sa_uid}});
    for (key, r) in bound.as_object().unwrap() {
        k[key] = r.clone();
    }
    json!({
        "iss": cluster::ISSUER, "aud": [cluster::ISSUER],
        "sub": format!("system:serviceaccount:{NS}:tok"),
        "iat": now, "nbf": now, "exp": now + 3600, "jti": format!("jti-{now}"),
        "kubernetes.io": k,
    })
}

pub fn service_account_token_lifecycle(c: &Cluster) {
    let sas = format!("/api/v1/namespaces/{NS}/serviceaccounts");
    c.create(&sas, json!({"metadata": {"name": "tok"}}));
    c.create(
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings"),
        json!({"metadata": {"name": "tok-widgets"},
            "subjects": [{"kind": "ServiceAccount", "name": "tok", "namespace": NS}],
            "roleRef": {"kind": "ClusterRole", "name": "widget-watcher", "apiGroup": "rbac.authorization.k8s.io"}}),
    );
    let sa_uid = c.service_account_uid(NS, "tok");
    let secrets = format!("/api/v1/namespaces/{NS}/secrets");

    // A legacy token its Secret holds: taken; once the Secret holds
    // another token, refused.
    let token = c.mint(&legacy(&sa_uid, "tok-legacy"));
    c.legacy_secret("tok-legacy", &token, json!({}), json!([]));
    c.expect("legacy token", &token, 200);
    c.delete(&format!("{secrets}/tok-legacy"));
    c.expect("legacy token, Secret deleted", &token, 401);
    c.legacy_secret("tok-legacy", "another-token", json!({}), json!([]));
    c.expect("legacy token, Secret holding another", &token, 401);

    // Its Secret labelled invalid.
    let marked = c.mint(&legacy(&sa_uid, "tok-marked"));
    c.legacy_secret(
        "tok-marked",
        &marked,
        json!({"kubernetes.io/legacy-token-invalid-since": "2026-01-01"}),
        json!([]),
    );
    c.expect("legacy token, Secret marked invalid", &marked, 401);

    // Its Secret being deleted (held by a finalizer): refused at once.
    let held = c.mint(&legacy(&sa_uid, "tok-held"));
    c.legacy_secret("tok-held", &held, json!({}), json!(["example.com/hold"]));
    c.expect("legacy token, Secret held", &held, 200);
    c.delete(&format!("{secrets}/tok-held"));
    c.expect("legacy token, Secret being deleted", &held, 401);

    // Bound to a pod: taken while it is there, refused once it is gone.
    c.create(
        &format!("/api/v1/namespaces/{NS}/pods"),
        json!({"metadata": {"name": "tok-pod"}, "spec": {
            "serviceAccountName": "tok", "automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": "example.com/none"}]}}),
    );
    let pod_uid = c.uid_of(&format!("/api/v1/namespaces/{NS}/pods/tok-pod"));
    let pod_token = c.mint(&bound(
        &sa_uid,
        json!({"pod": {"name": "tok-pod", "uid": pod_uid},
               "node": {"name": "nowhere", "uid": "node-uid"}}),
    ));
    c.expect("pod-bound token", &pod_token, 200);
    c.delete(&format!("/api/v1/namespaces/{NS}/pods/tok-pod"));
    c.expect("pod-bound token, pod deleted", &pod_token, 401);

    // Bound to a Secret, and to a Node.
    c.create(&secrets, json!({"metadata": {"name": "tok-bound"}}));
    let secret_uid = c.uid_of(&format!("{secrets}/tok-bound"));
    let secret_token = c.mint(&bound(
        &sa_uid,
        json!({"secret": {"name": "tok-bound", "uid": secret_uid}}),
    ));
    c.create("/api/v1/nodes", json!({"metadata": {"name": "tok-node"}}));
    let node_uid = c.uid_of("/api/v1/nodes/tok-node");
    let node_token = c.mint(&bound(
        &sa_uid,
        json!({"node": {"name": "tok-node", "uid": node_uid}}),
    ));
    c.expect("secret-bound token", &secret_token, 200);
    c.expect("node-bound token", &node_token, 200);
    c.delete(&format!("{secrets}/tok-bound"));
    c.delete("/api/v1/nodes/tok-node");
    c.expect("secret-bound token, Secret deleted", &secret_token, 401);
    c.expect("node-bound token, Node deleted", &node_token, 401);

    // A pod being deleted (held by a finalizer) stays good for the
    // apiserver's leeway (a minute), then not.
    c.create(
        &format!("/api/v1/namespaces/{NS}/pods"),
        json!({"metadata": {"name": "tok-held", "finalizers": ["example.com/hold"]}, "spec": {
            "serviceAccountName": "tok", "automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": "example.com/none"}]}}),
    );
    let held_uid = c.uid_of(&format!("/api/v1/namespaces/{NS}/pods/tok-held"));
    let held_token = c.mint(&bound(
        &sa_uid,
        json!({"pod": {"name": "tok-held", "uid": held_uid}}),
    ));
    c.delete(&format!("/api/v1/namespaces/{NS}/pods/tok-held"));
    c.expect("pod-bound token, pod just being deleted", &held_token, 200);
    std::thread::sleep(Duration::from_secs(62));
    c.expect("pod-bound token, pod being deleted", &held_token, 401);

    // Claims the apiserver reads strictly.
    let mut no_uid = bound(&sa_uid, json!({}));
    no_uid["kubernetes.io"]["serviceaccount"]["uid"] = json!("");
    c.expect("empty service account UID", &c.mint(&no_uid), 401);
    let mut legacy_claims = legacy(&sa_uid, "tok-legacy");
    legacy_claims["iss"] = json!(cluster::ISSUER);
    c.expect("legacy claims, bound issuer", &c.mint(&legacy_claims), 401);
    let mut text_exp = bound(&sa_uid, json!({}));
    text_exp["exp"] = json!(text_exp["exp"].to_string());
    c.expect("exp a string", &c.mint(&text_exp), 401);

    // The service account deleted: its tokens refused.
    let sa_token = c.mint(&bound(&sa_uid, json!({})));
    c.expect("service account token", &sa_token, 200);
    c.delete(&format!("{sas}/tok"));
    c.expect("service account deleted", &sa_token, 401);
}
