use std::collections::HashMap;

use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde_json::json;

use super::*;
use crate::keys::parse_keys;

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
        assert_eq!(object::unix_seconds(t), want, "{t}");
    }
    let odd = json!({"metadata": {"deletionTimestamp": "yesterday"}});
    assert_eq!(Object::from_json(&odd).deletion, Some(i64::MIN));
    assert_eq!(o.labels["a"], "b");
    assert_eq!(o.token.as_deref(), Some(&b"token"[..]));
}
