//! Delegation to the apiserver, as a delegating apiserver does it
//! (`k8s.io/apiserver/pkg/authentication/authenticatorfactory` and
//! `pkg/authorization/authorizerfactory`): a bearer token none of the
//! local authenticators takes is sent in a `TokenReview`, and a request
//! is authorized by a `SubjectAccessReview`. Each answer is kept for a
//! while (10 s by default, for success and failure alike, as the
//! delegating apiserver's caches), so that a client's requests cost one
//! review per interval, not one each.
//!
//! This file builds the reviews and reads their answers; the server
//! sends them (see `herald-server`'s `delegate`).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::rbac::Decision;
use crate::request::RequestInfo;
use crate::user::User;

/// The path reviews of tokens are created at.
pub const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
/// The path reviews of access are created at.
pub const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// The `TokenReview` of `token`, for `audiences` (none: the apiserver's).
pub fn token_review(token: &str, audiences: &[String]) -> Value {
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})
}

/// The user a `TokenReview` answer names, or why none.
pub fn reviewed_user(answer: &Value) -> Result<User, String> {
    let status = &answer["status"];
    if status["authenticated"] != json!(true) {
        let error = status["error"].as_str().unwrap_or("");
        return Err(if error.is_empty() {
            "the token was not authenticated".into()
        } else {
            format!("the token was not authenticated: {error}")
        });
    }
    let u = &status["user"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let name = u["username"].as_str().unwrap_or("").to_owned();
    if name.is_empty() {
        return Err("the review named no user".into());
    }
    let extra: BTreeMap<String, Vec<String>> = u["extra"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default();
    Ok(User {
        name,
        uid: u["uid"].as_str().unwrap_or("").to_owned(),
        groups: strings(&u["groups"]),
        extra,
    })
}

/// The `SubjectAccessReview` of `user` asking `info`.
pub fn access_review(user: &User, info: &RequestInfo) -> Value {
    let mut spec = json!({"user": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        spec["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        spec["extra"] = json!(user.extra);
    }
    if info.is_resource {
        spec["resourceAttributes"] = json!({
            "namespace": info.namespace, "verb": info.verb, "group": info.api_group,
            "version": info.api_version, "resource": info.resource,
            "subresource": info.subresource, "name": info.name,
        });
    } else {
        spec["nonResourceAttributes"] = json!({"path": info.path, "verb": info.verb});
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
}

/// The decision a `SubjectAccessReview` answer carries (an evaluation
/// error with a refusal says why, as the webhook authorizer reports it).
pub fn reviewed_decision(answer: &Value) -> Decision {
    let status = &answer["status"];
    let allowed = status["allowed"] == json!(true) && status["denied"] != json!(true);
    let mut reason = status["reason"].as_str().unwrap_or("").to_owned();
    if !allowed {
        if let Some(e) = status["evaluationError"].as_str().filter(|e| !e.is_empty()) {
            if !reason.is_empty() {
                reason.push_str(": ");
            }
            reason.push_str(e);
        }
    }
    Decision { allowed, reason }
}

/// The key a token is cached under: its SHA-256 (the cache never holds
/// a token itself).
pub fn token_key(token: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut k = [0u8; 32];
    k.copy_from_slice(d.as_ref());
    k
}

/// The key an access review is cached under: everything it asks.
pub fn access_key(user: &User, info: &RequestInfo) -> String {
    access_review(user, info)["spec"].to_string()
}

/// Answers kept for a while: `ok` ones for one TTL, failed ones for
/// another; at most `capacity`, the soonest to expire going first when
/// full.
#[derive(Debug)]
pub struct Cache<K, V> {
    ok_ttl: Duration,
    failed_ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> Cache<K, V> {
    /// A cache keeping successes `ok_ttl`, failures `failed_ttl`, at most
    /// `capacity` entries (a TTL of zero keeps nothing).
    pub fn new(ok_ttl: Duration, failed_ttl: Duration, capacity: usize) -> Cache<K, V> {
        Cache {
            ok_ttl,
            failed_ttl,
            capacity: capacity.max(1),
            entries: Mutex::default(),
        }
    }

    /// What is kept for `key`, if it has not expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match m.get(key) {
            Some((until, v)) if *until > Instant::now() => Some(v.clone()),
            Some(_) => {
                m.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` for `key` (a success if `ok`).
    pub fn put(&self, key: K, value: V, ok: bool) {
        let ttl = if ok { self.ok_ttl } else { self.failed_ttl };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= self.capacity && !m.contains_key(&key) {
            m.retain(|_, (until, _)| *until > now);
            if m.len() >= self.capacity {
                let soonest = m
                    .iter()
                    .min_by_key(|(_, (u, _))| *u)
                    .map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    m.remove(&k);
                }
            }
        }
        m.insert(key, (now + ttl, value));
    }

    /// Entries held (expired ones included until they are met).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_the_apis_and_answers_are_read() {
        let alice = User {
            name: "alice".into(),
            uid: "u1".into(),
            groups: vec!["devs".into()],
            extra: BTreeMap::from([("k".into(), vec!["v".into()])]),
        };
        let info = RequestInfo::new(
            "GET",
            "/api/v1/namespaces/a/pods/p",
            &herald_kube::Query::parse(None),
        );
        let r = access_review(&alice, &info);
        assert_eq!(
            r["spec"],
            json!({"user": "alice", "groups": ["devs"], "uid": "u1", "extra": {"k": ["v"]},
                   "resourceAttributes": {"namespace": "a", "verb": "get", "group": "",
                   "version": "v1", "resource": "pods", "subresource": "", "name": "p"}})
        );
        let r = access_review(
            &alice,
            &RequestInfo::new("GET", "/healthz", &herald_kube::Query::parse(None)),
        );
        assert_eq!(
            r["spec"]["nonResourceAttributes"],
            json!({"path": "/healthz", "verb": "get"})
        );
        let d = reviewed_decision(&json!({"status": {"allowed": true, "reason": "RBAC: ok"}}));
        assert!(d.allowed && d.reason == "RBAC: ok");
        let d = reviewed_decision(&json!({"status": {"allowed": true, "denied": true}}));
        assert!(!d.allowed);
        let d =
            reviewed_decision(&json!({"status": {"allowed": false, "evaluationError": "boom"}}));
        assert_eq!((d.allowed, d.reason.as_str()), (false, "boom"));
        assert_eq!(
            reviewed_user(&json!({"status": {"authenticated": true, "user": {
                "username": "system:serviceaccount:a:b", "uid": "x", "groups": ["g"],
                "extra": {"e": ["1"]}}}}))
            .unwrap(),
            User {
                name: "system:serviceaccount:a:b".into(),
                uid: "x".into(),
                groups: vec!["g".into()],
                extra: BTreeMap::from([("e".into(), vec!["1".into()])]),
            }
        );
        assert!(
            reviewed_user(&json!({"status": {"authenticated": false, "error": "expired"}}))
                .unwrap_err()
                .contains("expired")
        );
        assert!(reviewed_user(&json!({"status": {"authenticated": true}})).is_err());
        assert!(reviewed_user(&json!("garbage")).is_err());
        assert_eq!(token_review("t", &[])["spec"], json!({"token": "t"}));
        assert_ne!(token_key("a"), token_key("b"));
    }

    #[test]
    fn the_cache_keeps_each_answer_for_its_ttl_and_stays_bounded() {
        let c = Cache::new(Duration::from_secs(60), Duration::ZERO, 2);
        c.put(1, "one", true);
        c.put(2, "refused", false);
        assert_eq!(c.get(&1), Some("one"));
        assert_eq!(c.get(&2), None, "a zero TTL keeps nothing");
        c.put(2, "two", true);
        c.put(3, "three", true);
        assert_eq!(c.len(), 2, "bounded");
        assert_eq!(c.get(&3), Some("three"));
        let short = Cache::new(Duration::from_millis(1), Duration::ZERO, 8);
        short.put("k", 1, true);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(short.get(&"k"), None, "expired");
        assert!(short.is_empty());
    }
}
