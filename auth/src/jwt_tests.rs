use std::collections::HashMap;

use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde_json::json;

use super::*;
use crate::keys::parse_keys;
use crate::user::CREDENTIAL_ID;

const ISSUER: &str = "https://kubernetes.default.svc";
const NOW: u64 = 1_800_000_000;

struct Signer {
    pair: EcdsaKeyPair,
    pem: String,
}

fn signer() -> Signer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    Signer {
        pair,
        pem: format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n"),
    }
}

impl Signer {
    fn sign(&self, header: Value, claims: Value) -> String {
        let enc = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        let signed = format!("{}.{}", enc(&header), enc(&claims));
        let sig = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

fn bound(ns: &str, sa: &str) -> Value {
    json!({
        "iss": ISSUER, "aud": [ISSUER], "sub": format!("system:serviceaccount:{ns}:{sa}"),
        "exp": NOW + 3600, "iat": NOW - 10, "nbf": NOW - 10, "jti": "j-1",
        "kubernetes.io": {
            "namespace": ns,
            "serviceaccount": {"name": sa, "uid": "sa-uid"},
            "pod": {"name": "web-0", "uid": "pod-uid"},
        },
    })
}

struct Objects(HashMap<(&'static str, &'static str), &'static str>);

impl Lookup for Objects {
    fn get(&self, resource: &str, ns: &str, name: &str) -> Option<Option<Object>> {
        if resource == "nodes" {
            return None;
        }
        let key = format!("{resource}/{ns}/{name}");
        Some(
            self.0
                .iter()
                .find(|((r, n), _)| format!("{r}/{n}") == key)
                .map(|(_, u)| Object {
                    uid: (*u).to_owned(),
                    ..Object::default()
                }),
        )
    }
}

fn tokens(s: &Signer) -> ServiceAccountTokens {
    ServiceAccountTokens::new(
        parse_keys(&s.pem).unwrap(),
        vec![ISSUER.into()],
        vec![ISSUER.into()],
    )
}

#[test]
fn a_bound_token_is_its_service_account() {
    let s = signer();
    let t = tokens(&s);
    let kid = parse_keys(&s.pem).unwrap()[0].kid.clone();
    let token = s.sign(json!({"alg": "ES256", "kid": kid}), bound("ns", "bot"));
    let user = t.authenticate_at(&token, &NoLookup, NOW).unwrap().unwrap();
    assert_eq!(user.name, "system:serviceaccount:ns:bot");
    assert_eq!(user.uid, "sa-uid");
    assert_eq!(
        user.groups,
        ["system:serviceaccounts", "system:serviceaccounts:ns"]
    );
    assert_eq!(
        user.extra["authentication.kubernetes.io/pod-name"],
        ["web-0"]
    );
    assert_eq!(user.extra[CREDENTIAL_ID], ["JTI=j-1"]);
    // Without a kid every key is tried.
    let plain = s.sign(json!({"alg": "ES256"}), bound("ns", "bot"));
    assert!(t.authenticate_at(&plain, &NoLookup, NOW).unwrap().is_some());
}

#[test]
fn forged_expired_and_foreign_tokens_are_refused() {
    let s = signer();
    let t = tokens(&s);
    let h = json!({"alg": "ES256"});
    let refused = |token: &str| t.authenticate_at(token, &NoLookup, NOW).unwrap_err().0;
    // Another key's signature.
    let forged = signer().sign(h.clone(), bound("ns", "bot"));
    assert_eq!(refused(&forged), "invalid signature");
    // A claim changed after signing.
    let good = s.sign(h.clone(), bound("ns", "bot"));
    let parts: Vec<&str> = good.split('.').collect();
    let mut claims = bound("ns", "bot");
    claims["kubernetes.io"]["namespace"] = json!("kube-system");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap()),
        parts[2]
    );
    assert_eq!(refused(&tampered), "invalid signature");
    // An algorithm the key does not have ("none", RS256 on an EC key).
    assert_eq!(
        refused(&s.sign(json!({"alg": "none"}), bound("ns", "bot"))),
        "invalid signature"
    );
    assert_eq!(
        refused(&s.sign(json!({"alg": "ES256", "kid": "other"}), bound("ns", "bot"))),
        "invalid signature, no keys found"
    );
    let mut c = bound("ns", "bot");
    c["exp"] = json!(NOW - 61);
    assert_eq!(
        refused(&s.sign(h.clone(), c)),
        "service account token has expired"
    );
    let mut c = bound("ns", "bot");
    c["exp"] = json!(NOW - 59);
    assert!(
        t.authenticate_at(&s.sign(h.clone(), c), &NoLookup, NOW)
            .is_ok(),
        "within the leeway"
    );
    let mut c = bound("ns", "bot");
    c["nbf"] = json!(NOW + 120);
    assert_eq!(
        refused(&s.sign(h.clone(), c)),
        "service account token is not valid yet"
    );
    let mut c = bound("ns", "bot");
    c["iat"] = json!(NOW + 120);
    assert_eq!(
        refused(&s.sign(h.clone(), c)),
        "service account token is issued in the future"
    );
    let mut c = bound("ns", "bot");
    c["aud"] = json!(["vault"]);
    assert!(refused(&s.sign(h.clone(), c)).starts_with("token audiences"));
    let mut c = bound("ns", "bot");
    c["sub"] = json!("system:serviceaccount:ns:admin");
    assert_eq!(refused(&s.sign(h.clone(), c)), "sub claim is invalid");
    // Another issuer's token, or no JWT at all: not ours.
    let mut c = bound("ns", "bot");
    c["iss"] = json!("https://elsewhere");
    assert_eq!(
        t.authenticate_at(&s.sign(h.clone(), c), &NoLookup, NOW),
        Ok(None)
    );
    for junk in ["", "a.b", "{}", "a.b.c", "...", "x.eyJpc3MiOjF9.y"] {
        assert_eq!(t.authenticate_at(junk, &NoLookup, NOW), Ok(None), "{junk}");
    }
}

#[test]
fn bound_objects_must_exist_with_their_uids() {
    let s = signer();
    let t = tokens(&s);
    let token = s.sign(json!({"alg": "ES256"}), bound("ns", "bot"));
    let all = Objects(HashMap::from([
        (("serviceaccounts", "ns/bot"), "sa-uid"),
        (("pods", "ns/web-0"), "pod-uid"),
    ]));
    assert!(t.authenticate_at(&token, &all, NOW).unwrap().is_some());
    let recreated = Objects(HashMap::from([
        (("serviceaccounts", "ns/bot"), "sa-uid"),
        (("pods", "ns/web-0"), "another-pod"),
    ]));
    assert!(
        t.authenticate_at(&token, &recreated, NOW)
            .unwrap_err()
            .0
            .contains("does not match")
    );
    let deleted = Objects(HashMap::from([(("serviceaccounts", "ns/bot"), "sa-uid")]));
    assert!(
        t.authenticate_at(&token, &deleted, NOW)
            .unwrap_err()
            .0
            .contains("not found")
    );
}

/// A cluster's objects, keyed `resource/ns/name` (`resource/name` for a
/// node); the resources in `unserved` cannot be looked up.
#[derive(Default)]
struct Cluster {
    objects: HashMap<String, Object>,
    unserved: Vec<&'static str>,
}

impl Cluster {
    fn with(mut self, key: &str, object: Object) -> Cluster {
        self.objects.insert(key.to_owned(), object);
        self
    }
}

impl Lookup for Cluster {
    fn get(&self, resource: &str, ns: &str, name: &str) -> Option<Option<Object>> {
        if self.unserved.contains(&resource) {
            return None;
        }
        let key = if ns.is_empty() {
            format!("{resource}/{name}")
        } else {
            format!("{resource}/{ns}/{name}")
        };
        Some(self.objects.get(&key).cloned())
    }
}

fn obj(uid: &str) -> Object {
    Object {
        uid: uid.to_owned(),
        ..Object::default()
    }
}

fn deleted(uid: &str, seconds_ago: i64) -> Object {
    Object {
        deletion: Some(NOW as i64 - seconds_ago),
        ..obj(uid)
    }
}

fn legacy_claims() -> Value {
    json!({
        "iss": LEGACY_ISSUER, "sub": "system:serviceaccount:ns:bot",
        "kubernetes.io/serviceaccount/namespace": "ns",
        "kubernetes.io/serviceaccount/secret.name": "bot-token",
        "kubernetes.io/serviceaccount/service-account.name": "bot",
        "kubernetes.io/serviceaccount/service-account.uid": "sa-uid",
    })
}

fn both_issuers(s: &Signer) -> ServiceAccountTokens {
    ServiceAccountTokens::new(
        parse_keys(&s.pem).unwrap(),
        vec![ISSUER.into(), LEGACY_ISSUER.into()],
        vec![ISSUER.into()],
    )
}

/// A legacy token and a cluster whose Secret holds it and whose
/// ServiceAccount has its UID.
fn legacy_setup(s: &Signer) -> (String, Cluster) {
    let token = s.sign(json!({"alg": "ES256"}), legacy_claims());
    let secret = Object {
        token: Some(token.as_bytes().to_vec()),
        ..obj("secret-uid")
    };
    let cluster = Cluster::default()
        .with("secrets/ns/bot-token", secret)
        .with("serviceaccounts/ns/bot", obj("sa-uid"));
    (token, cluster)
}

fn refusal(t: &ServiceAccountTokens, token: &str, lookup: &dyn Lookup) -> String {
    match t.authenticate_at(token, lookup, NOW) {
        Err(e) => e.0,
        Ok(user) => panic!("accepted: {user:?}"),
    }
}

#[test]
fn a_legacy_token_must_be_its_secrets_token() {
    let s = signer();
    let t = both_issuers(&s);
    let (token, cluster) = legacy_setup(&s);
    let user = t.authenticate_at(&token, &cluster, NOW).unwrap().unwrap();
    assert_eq!(user.name, "system:serviceaccount:ns:bot");
    // The Secret now holds another token (legacy.go:125), or none.
    for held in [Some(b"another".to_vec()), None] {
        let mut secret = cluster.objects["secrets/ns/bot-token"].clone();
        secret.token = held;
        let c = Cluster::default()
            .with("secrets/ns/bot-token", secret)
            .with("serviceaccounts/ns/bot", obj("sa-uid"));
        assert_eq!(
            refusal(&t, &token, &c),
            "Token does not match server's copy (secret ns/bot-token)"
        );
    }
    // Without the Secret (legacy.go:116).
    let c = Cluster::default().with("serviceaccounts/ns/bot", obj("sa-uid"));
    assert_eq!(
        refusal(&t, &token, &c),
        "Token has been invalidated: secret ns/bot-token not found"
    );
}

#[test]
fn a_legacy_token_of_a_secret_being_deleted_is_refused_at_once() {
    let s = signer();
    let t = both_issuers(&s);
    let (token, mut cluster) = legacy_setup(&s);
    // Any deletionTimestamp, even one just set (legacy.go:121): no grace.
    cluster
        .objects
        .get_mut("secrets/ns/bot-token")
        .unwrap()
        .deletion = Some(NOW as i64);
    assert_eq!(
        refusal(&t, &token, &cluster),
        "Token has been invalidated: secret ns/bot-token is being deleted"
    );
}

#[test]
fn a_legacy_token_marked_invalid_is_refused() {
    let s = signer();
    let t = both_issuers(&s);
    let (token, mut cluster) = legacy_setup(&s);
    let secret = cluster.objects.get_mut("secrets/ns/bot-token").unwrap();
    secret.labels.insert(
        "kubernetes.io/legacy-token-last-used".into(),
        "2026-01-01".into(),
    );
    assert!(t.authenticate_at(&token, &cluster, NOW).unwrap().is_some());
    let secret = cluster.objects.get_mut("secrets/ns/bot-token").unwrap();
    secret.labels.insert(
        "kubernetes.io/legacy-token-invalid-since".into(),
        "2026-01-01".into(),
    );
    let reason = refusal(&t, &token, &cluster);
    assert!(
        reason.starts_with(
            "the token in secret ns/bot-token for service account ns/bot has been marked invalid"
        ),
        "{reason}"
    );
    // An empty value is no mark (legacy.go:149).
    let secret = cluster.objects.get_mut("secrets/ns/bot-token").unwrap();
    secret
        .labels
        .insert("kubernetes.io/legacy-token-invalid-since".into(), "".into());
    assert!(t.authenticate_at(&token, &cluster, NOW).unwrap().is_some());
}

#[test]
fn a_legacy_tokens_service_account_must_not_be_deleted_or_being_deleted() {
    let s = signer();
    let t = both_issuers(&s);
    let (token, mut cluster) = legacy_setup(&s);
    // Being deleted, however recently (legacy.go:136): no grace.
    cluster
        .objects
        .insert("serviceaccounts/ns/bot".into(), deleted("sa-uid", 0));
    assert_eq!(
        refusal(&t, &token, &cluster),
        "ServiceAccount ns/bot has been deleted"
    );
    cluster
        .objects
        .insert("serviceaccounts/ns/bot".into(), obj("other"));
    assert_eq!(
        refusal(&t, &token, &cluster),
        "ServiceAccount UID (other) does not match claim (sa-uid)"
    );
    cluster.objects.remove("serviceaccounts/ns/bot");
    assert_eq!(
        refusal(&t, &token, &cluster),
        "serviceaccounts \"bot\" not found"
    );
    // Where Secrets are not served, the ServiceAccount is still checked.
    cluster.unserved.push("secrets");
    assert_eq!(
        refusal(&t, &token, &cluster),
        "serviceaccounts \"bot\" not found"
    );
}

/// A bound token of `ns/bot` (UID `sa-uid`) bound to `what` (`pod`,
/// `secret` or `node`), with the objects it names.
fn bound_to(what: &str) -> (Value, Cluster) {
    let mut claims = bound("ns", "bot");
    let k = claims["kubernetes.io"].as_object_mut().unwrap();
    k.remove("pod");
    let mut cluster = Cluster::default().with("serviceaccounts/ns/bot", obj("sa-uid"));
    match what {
        "pod" => {
            k.insert("pod".into(), json!({"name": "web-0", "uid": "pod-uid"}));
            k.insert("node".into(), json!({"name": "n1", "uid": "node-uid"}));
            cluster = cluster.with("pods/ns/web-0", obj("pod-uid"));
        }
        "secret" => {
            k.insert("secret".into(), json!({"name": "s", "uid": "secret-uid"}));
            cluster = cluster.with("secrets/ns/s", obj("secret-uid"));
        }
        _ => {
            k.insert("node".into(), json!({"name": "n1", "uid": "node-uid"}));
            cluster = cluster.with("nodes/n1", obj("node-uid"));
        }
    }
    (claims, cluster)
}

#[test]
fn bound_objects_being_deleted_longer_than_the_grace_are_refused() {
    let s = signer();
    let t = tokens(&s);
    for (what, key, uid) in [
        ("pod", "serviceaccounts/ns/bot", "sa-uid"),
        ("pod", "pods/ns/web-0", "pod-uid"),
        ("secret", "secrets/ns/s", "secret-uid"),
        ("node", "nodes/n1", "node-uid"),
    ] {
        let (claims, mut cluster) = bound_to(what);
        let token = s.sign(json!({"alg": "ES256"}), claims);
        assert!(t.authenticate_at(&token, &cluster, NOW).unwrap().is_some());
        // Within a minute of its deletionTimestamp (jwt.DefaultLeeway,
        // claims.go:191): still good.
        cluster.objects.insert(key.into(), deleted(uid, 60));
        assert!(
            t.authenticate_at(&token, &cluster, NOW).unwrap().is_some(),
            "{key}"
        );
        cluster.objects.insert(key.into(), deleted(uid, 61));
        let want = match what {
            _ if key.starts_with("serviceaccounts") => "service account ns/bot has been deleted",
            "pod" => {
                "service account token has been invalidated: pod ns/web-0 is being deleted, for over 60s"
            }
            "secret" => {
                "service account token has been invalidated: secret ns/s is being deleted, for over 60s"
            }
            _ => {
                "service account token has been invalidated: node n1 is being deleted, for over 60s"
            }
        };
        assert_eq!(refusal(&t, &token, &cluster), want, "{key}");
    }
}

#[test]
fn bound_objects_must_exist_with_exactly_the_uids_claimed() {
    let s = signer();
    let t = tokens(&s);
    // A missing or empty UID claim is no wildcard (claims.go:206, 222, 240, 272).
    for (what, at, key) in [
        ("pod", "serviceaccount", "serviceaccounts/ns/bot"),
        ("pod", "pod", "pods/ns/web-0"),
        ("secret", "secret", "secrets/ns/s"),
        ("node", "node", "nodes/n1"),
    ] {
        for uid in [json!(""), Value::Null] {
            let (mut claims, cluster) = bound_to(what);
            let r = claims["kubernetes.io"][at].as_object_mut().unwrap();
            match &uid {
                Value::Null => r.remove("uid"),
                u => r.insert("uid".into(), u.clone()),
            };
            let token = s.sign(json!({"alg": "ES256"}), claims);
            let reason = refusal(&t, &token, &cluster);
            assert!(reason.contains("does not match"), "{key}: {reason}");
            assert!(reason.contains("claim ()"), "{key}: {reason}");
        }
    }
    // A pod, secret or node named by nothing but an empty object.
    for (what, named) in [
        ("pod", "pod ns/"),
        ("secret", "secret ns/"),
        ("node", "node "),
    ] {
        let (mut claims, cluster) = bound_to(what);
        claims["kubernetes.io"][what] = json!({});
        let token = s.sign(json!({"alg": "ES256"}), claims);
        assert_eq!(
            refusal(&t, &token, &cluster),
            format!("service account token has been invalidated: {named} not found"),
        );
    }
    // The deleted bound objects (claims.go:217, 235, 267).
    for (what, key, named) in [
        ("pod", "pods/ns/web-0", "pod ns/web-0"),
        ("secret", "secrets/ns/s", "secret ns/s"),
        ("node", "nodes/n1", "node n1"),
    ] {
        let (claims, mut cluster) = bound_to(what);
        cluster.objects.remove(key);
        let token = s.sign(json!({"alg": "ES256"}), claims);
        assert_eq!(
            refusal(&t, &token, &cluster),
            format!("service account token has been invalidated: {named} not found"),
        );
    }
    // Where the server cannot tell (it does not serve the resource), the
    // check is skipped.
    let (mut claims, mut cluster) = bound_to("node");
    claims["kubernetes.io"]["node"]["uid"] = json!("");
    cluster.unserved.push("nodes");
    let token = s.sign(json!({"alg": "ES256"}), claims);
    assert!(t.authenticate_at(&token, &cluster, NOW).unwrap().is_some());
}

#[test]
fn legacy_claims_under_the_bound_issuer_are_refused() {
    let s = signer();
    let t = both_issuers(&s);
    let (_, cluster) = legacy_setup(&s);
    let mut claims = legacy_claims();
    claims["iss"] = json!(ISSUER);
    let token = s.sign(json!({"alg": "ES256"}), claims.clone());
    assert_eq!(
        refusal(&t, &token, &cluster),
        "service account claims are missing"
    );
    assert_eq!(
        refusal(&t, &token, &NoLookup),
        "service account claims are missing"
    );
    // And kubernetes.io claims under the legacy issuer are not read.
    let (token, cluster) = legacy_setup(&s);
    let mut claims = legacy_claims();
    claims["kubernetes.io"] = json!(5);
    let other = s.sign(json!({"alg": "ES256"}), claims);
    let mut c = cluster;
    c.objects.get_mut("secrets/ns/bot-token").unwrap().token = Some(other.clone().into_bytes());
    assert!(t.authenticate_at(&other, &c, NOW).unwrap().is_some());
    assert!(t.authenticate_at(&token, &c, NOW).is_err());
}

#[test]
fn claims_of_the_wrong_json_type_are_refused() {
    let s = signer();
    let t = both_issuers(&s);
    let h = json!({"alg": "ES256"});
    for (path, value, want) in [
        (
            "exp",
            json!("1800003600"),
            "expected number value to unmarshal NumericDate",
        ),
        (
            "nbf",
            json!("1"),
            "expected number value to unmarshal NumericDate",
        ),
        (
            "iat",
            json!(true),
            "expected number value to unmarshal NumericDate",
        ),
        (
            "aud",
            json!(5),
            "expected string or array value to unmarshal to Audience",
        ),
        (
            "aud",
            Value::Null,
            "expected string or array value to unmarshal to Audience",
        ),
        (
            "aud",
            json!([ISSUER, 5]),
            "expected string or array value to unmarshal to Audience",
        ),
        ("sub", json!(5), "cannot unmarshal"),
        ("jti", json!(5), "cannot unmarshal"),
        ("kubernetes.io", json!(5), "cannot unmarshal"),
        ("kubernetes.io/namespace", json!(5), "cannot unmarshal"),
        ("kubernetes.io/pod/uid", json!(5), "cannot unmarshal"),
        (
            "kubernetes.io/warnafter",
            json!("x"),
            "expected number value to unmarshal NumericDate",
        ),
    ] {
        let mut claims = bound("ns", "bot");
        let mut at = &mut claims;
        let keys: Vec<&str> = path.split('/').collect();
        for k in &keys[..keys.len() - 1] {
            at = &mut at[*k];
        }
        at[keys[keys.len() - 1]] = value;
        let reason = refusal(&t, &s.sign(h.clone(), claims), &NoLookup);
        assert!(reason.contains(want), "{path}: {reason}");
    }
    // A legacy token too (its times are read, if not checked).
    let mut claims = legacy_claims();
    claims["exp"] = json!("soon");
    let reason = refusal(&t, &s.sign(h.clone(), claims), &NoLookup);
    assert!(reason.contains("NumericDate"), "{reason}");
    let mut claims = legacy_claims();
    claims["kubernetes.io/serviceaccount/namespace"] = json!(["ns"]);
    let reason = refusal(&t, &s.sign(h.clone(), claims), &NoLookup);
    assert!(reason.contains("cannot unmarshal"), "{reason}");
    // Null is absent, as Go reads it.
    let mut claims = bound("ns", "bot");
    claims["exp"] = Value::Null;
    claims["kubernetes.io"]["pod"] = Value::Null;
    assert!(
        t.authenticate_at(&s.sign(h, claims), &NoLookup, NOW)
            .unwrap()
            .is_some()
    );
}

#[test]
fn webhook_bound_tokens_are_refused_without_their_feature_gate() {
    let s = signer();
    let t = tokens(&s);
    for at in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        let mut claims = bound("ns", "bot");
        claims["kubernetes.io"][at] = json!({"name": "w", "uid": "w-uid"});
        let token = s.sign(json!({"alg": "ES256"}), claims);
        assert_eq!(
            refusal(&t, &token, &NoLookup),
            "feature gate \"APIServerWebhookAuthenticationToken\" is disabled, but token is webhook bound"
        );
    }
}

#[test]
fn deletion_timestamps_read_as_rfc3339() {
    let o = Object::from_json(&json!({
        "metadata": {"uid": "u", "deletionTimestamp": "2027-01-15T08:00:00Z", "labels": {"a": "b"}},
        "data": {"token": "dG9rZW4="},
    }));
    assert_eq!(o.uid, "u");
    assert_eq!(o.deletion, Some(1_800_000_000));
    for (t, want) in [
        ("1969-12-31T23:00:00Z", Some(-3600)),
        ("2024-02-29T12:30:15.123+05:30", Some(1_709_190_015)),
        ("2023-02-29T12:30:15Z", None),
        ("2024-02-29 12:30:15Z", None),
        ("2024-02-29T12:30:15", None),
        ("2024-02-29T12:30:15.Z", None),
    ] {
        assert_eq!(herald_kube::table::unix_seconds(t), want, "{t}");
    }
    let odd = json!({"metadata": {"deletionTimestamp": "yesterday"}});
    assert_eq!(Object::from_json(&odd).deletion, Some(i64::MIN));
    assert_eq!(o.labels["a"], "b");
    assert_eq!(o.token.as_deref(), Some(&b"token"[..]));
}

#[test]
fn a_legacy_tokens_subject_must_split_as_the_apiserver_splits_it() {
    let s = signer();
    let t = both_issuers(&s);
    // legacy.go:109 (serviceaccount.SplitUsername): a namespace with a
    // colon, or names that are not DNS names, make no subject.
    for (ns, sa) in [("a:b", "bot"), ("NS", "bot"), ("ns", "Bot"), ("ns", "-bot")] {
        let mut claims = legacy_claims();
        claims["sub"] = json!(format!("system:serviceaccount:{ns}:{sa}"));
        claims["kubernetes.io/serviceaccount/namespace"] = json!(ns);
        claims["kubernetes.io/serviceaccount/service-account.name"] = json!(sa);
        let token = s.sign(json!({"alg": "ES256"}), claims);
        assert_eq!(
            refusal(&t, &token, &NoLookup),
            "sub claim is invalid",
            "{ns}:{sa}"
        );
    }
    let mut claims = legacy_claims();
    claims["sub"] = json!("system:serviceaccount:ns:bot.sub.domain");
    claims["kubernetes.io/serviceaccount/service-account.name"] = json!("bot.sub.domain");
    let token = s.sign(json!({"alg": "ES256"}), claims);
    assert!(t.authenticate_at(&token, &NoLookup, NOW).unwrap().is_some());
}

#[test]
fn pod_and_node_extras_are_set_as_the_apiserver_sets_them() {
    let s = signer();
    let t = tokens(&s);
    // Pods and nodes not served: an empty pod UID claim passes, but makes
    // no pod extras (UserInfo sets them with both name and UID).
    let (mut claims, mut cluster) = bound_to("pod");
    claims["kubernetes.io"]["pod"]["uid"] = json!("");
    claims["kubernetes.io"]["node"]["uid"] = json!("");
    cluster.unserved = vec!["pods", "nodes"];
    let token = s.sign(json!({"alg": "ES256"}), claims);
    let user = t.authenticate_at(&token, &cluster, NOW).unwrap().unwrap();
    assert!(
        !user
            .extra
            .contains_key("authentication.kubernetes.io/pod-name")
    );
    assert!(
        !user
            .extra
            .contains_key("authentication.kubernetes.io/pod-uid")
    );
    assert_eq!(user.extra["authentication.kubernetes.io/node-name"], ["n1"]);
    assert!(
        !user
            .extra
            .contains_key("authentication.kubernetes.io/node-uid")
    );
}
