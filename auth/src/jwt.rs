//! Service-account tokens (JWTs), checked as the apiserver's
//! `jwtTokenAuthenticator` checks them (`pkg/serviceaccount/jwt.go`,
//! `claims.go`, `legacy.go`):
//!
//! 1. a token that is not a JWT, or whose issuer is not one of ours, is
//!    not ours: the next authenticator tries it;
//! 2. its signature must verify with one of the keys (those of its `kid`
//!    if it names one): RS256 with an RSA key, ES256/ES384 with P-256 and
//!    P-384 keys;
//! 3. its audiences must meet the server's (a token without `aud` is a
//!    legacy token, for the server's own audiences);
//! 4. `exp`, `nbf` and `iat`, where present, hold within a minute's
//!    leeway;
//! 5. the service account, and the pod, secret or node the token is
//!    bound to, must exist with the UIDs it names, where the server can
//!    look them up ([`Lookup`]: it serves that resource);
//! 6. the user is `system:serviceaccount:<ns>:<name>`, in
//!    `system:serviceaccounts` and `system:serviceaccounts:<ns>`, with
//!    its pod and node in its extra values.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;

use crate::keys::{KeyKind, PublicKey};
use crate::user::{CREDENTIAL_ID, User};

/// The legacy tokens' issuer.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The leeway of the time claims.
const LEEWAY: u64 = 60;

mod object;

pub use object::Object;

/// The objects a token names (its ServiceAccount, and the Pod, Secret or
/// Node it is bound to), looked up where the server serves them.
pub trait Lookup: Send + Sync {
    /// `resource` (`serviceaccounts`, `pods`, `secrets`, `nodes`)
    /// `namespace/name` (`name` for a cluster-scoped one): `None` if the
    /// server cannot tell (it does not serve that resource), `Some(None)`
    /// if there is none.
    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Option<Object>>;
}

/// A [`Lookup`] that can tell nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLookup;

impl Lookup for NoLookup {
    fn get(&self, _: &str, _: &str, _: &str) -> Option<Option<Object>> {
        None
    }
}

/// Why a token of ours was refused (the client sees a 401; the server
/// logs and counts this).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtError(pub String);

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JwtError {}

/// The service-account token authenticator.
#[derive(Debug, Clone)]
pub struct ServiceAccountTokens {
    keys: Vec<PublicKey>,
    issuers: Vec<String>,
    audiences: Vec<String>,
}

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    alg: String,
    #[serde(default)]
    kid: String,
}

fn claim_str<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl ServiceAccountTokens {
    /// Tokens of `issuers` (the apiserver's `--service-account-issuer`
    /// values, and [`LEGACY_ISSUER`] if legacy tokens are taken) signed
    /// by one of `keys`, for `audiences` (the apiserver's
    /// `--api-audiences`, by default its first issuer).
    pub fn new(keys: Vec<PublicKey>, issuers: Vec<String>, audiences: Vec<String>) -> Self {
        ServiceAccountTokens {
            keys,
            issuers,
            audiences,
        }
    }

    /// The user of `token`: `Ok(None)` if it is not a token of ours.
    pub fn authenticate(&self, token: &str, lookup: &dyn Lookup) -> Result<Option<User>, JwtError> {
        self.authenticate_at(token, lookup, now())
    }

    /// [`ServiceAccountTokens::authenticate`] at the Unix time `now`.
    pub fn authenticate_at(
        &self,
        token: &str,
        lookup: &dyn Lookup,
        now: u64,
    ) -> Result<Option<User>, JwtError> {
        if token.starts_with('{') {
            return Ok(None);
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, sig] = parts[..] else {
            return Ok(None);
        };
        let Some(claims) = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            return Ok(None);
        };
        let issuer = claim_str(&claims, &["iss"]);
        if !self.issuers.iter().any(|i| i == issuer) {
            return Ok(None);
        }
        let (Some(header), Some(sig)) = (
            URL_SAFE_NO_PAD
                .decode(header)
                .ok()
                .and_then(|b| serde_json::from_slice::<Header>(&b).ok()),
            URL_SAFE_NO_PAD.decode(sig).ok(),
        ) else {
            return Ok(None);
        };
        self.verify(&header, &token[..parts[0].len() + 1 + parts[1].len()], &sig)?;
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let legacy = audiences.is_empty();
        if !legacy
            && !audiences
                .iter()
                .any(|a| self.audiences.iter().any(|b| b == a))
        {
            return Err(JwtError(format!(
                "token audiences {audiences:?} is invalid for the target audiences {:?}",
                self.audiences
            )));
        }
        let time = |k: &str| {
            claims
                .get(k)
                .and_then(Value::as_f64)
                .map(|t| t.max(0.0) as u64)
        };
        if time("exp").is_some_and(|exp| now > exp + LEEWAY) {
            return Err(JwtError("service account token has expired".into()));
        }
        if time("nbf").is_some_and(|nbf| now + LEEWAY < nbf) {
            return Err(JwtError("service account token is not valid yet".into()));
        }
        if time("iat").is_some_and(|iat| now + LEEWAY < iat) {
            return Err(JwtError(
                "service account token is issued in the future".into(),
            ));
        }
        let user = if issuer == LEGACY_ISSUER || claims.get("kubernetes.io").is_none() {
            legacy_user(&claims, lookup)?
        } else {
            bound_user(&claims, lookup)?
        };
        Ok(Some(user))
    }

    /// Checks the signature of `signed` with the keys of the header's
    /// `kid` (all keys without one).
    fn verify(&self, header: &Header, signed: &str, sig: &[u8]) -> Result<(), JwtError> {
        let candidates: Vec<&PublicKey> = self
            .keys
            .iter()
            .filter(|k| header.kid.is_empty() || k.kid == header.kid)
            .collect();
        if candidates.is_empty() {
            return Err(JwtError("invalid signature, no keys found".into()));
        }
        for key in candidates {
            let alg: &dyn signature::VerificationAlgorithm = match (key.kind, header.alg.as_str()) {
                (KeyKind::Rsa, "RS256") => &signature::RSA_PKCS1_2048_8192_SHA256,
                (KeyKind::P256, "ES256") => &signature::ECDSA_P256_SHA256_FIXED,
                (KeyKind::P384, "ES384") => &signature::ECDSA_P384_SHA384_FIXED,
                _ => continue,
            };
            if UnparsedPublicKey::new(alg, &key.key)
                .verify(signed.as_bytes(), sig)
                .is_ok()
            {
                return Ok(());
            }
        }
        Err(JwtError("invalid signature".into()))
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Checks that `resource` `ns/name` exists with `uid` (an empty `uid`:
/// any), where the server can tell.
fn check(
    lookup: &dyn Lookup,
    resource: &str,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), JwtError> {
    match lookup.get(resource, ns, name).map(|o| o.map(|o| o.uid)) {
        None => Ok(()),
        Some(None) => Err(JwtError(format!("{resource} {ns}/{name} not found"))),
        Some(Some(found)) if !uid.is_empty() && found != uid => Err(JwtError(format!(
            "{resource} UID ({found}) does not match claim ({uid})"
        ))),
        Some(Some(_)) => Ok(()),
    }
}

fn sa_user(ns: &str, name: &str, uid: &str) -> User {
    User {
        name: format!("system:serviceaccount:{ns}:{name}"),
        uid: uid.to_owned(),
        groups: vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{ns}"),
        ],
        ..User::default()
    }
}

/// The user of a bound token (`kubernetes.io` claims).
fn bound_user(claims: &Value, lookup: &dyn Lookup) -> Result<User, JwtError> {
    let ns = claim_str(claims, &["kubernetes.io", "namespace"]);
    let sa = claim_str(claims, &["kubernetes.io", "serviceaccount", "name"]);
    let sa_uid = claim_str(claims, &["kubernetes.io", "serviceaccount", "uid"]);
    if ns.is_empty() || sa.is_empty() {
        return Err(JwtError("service account claims are missing".into()));
    }
    let sub = claim_str(claims, &["sub"]);
    if sub != format!("system:serviceaccount:{ns}:{sa}") {
        return Err(JwtError("sub claim is invalid".into()));
    }
    check(lookup, "serviceaccounts", ns, sa, sa_uid)?;
    let mut user = sa_user(ns, sa, sa_uid);
    let pod = claim_str(claims, &["kubernetes.io", "pod", "name"]);
    if !pod.is_empty() {
        let uid = claim_str(claims, &["kubernetes.io", "pod", "uid"]);
        check(lookup, "pods", ns, pod, uid)?;
        user.extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec![pod.into()],
        );
        user.extra.insert(
            "authentication.kubernetes.io/pod-uid".into(),
            vec![uid.into()],
        );
    }
    let secret = claim_str(claims, &["kubernetes.io", "secret", "name"]);
    if !secret.is_empty() {
        let uid = claim_str(claims, &["kubernetes.io", "secret", "uid"]);
        check(lookup, "secrets", ns, secret, uid)?;
    }
    let node = claim_str(claims, &["kubernetes.io", "node", "name"]);
    if !node.is_empty() {
        let uid = claim_str(claims, &["kubernetes.io", "node", "uid"]);
        if pod.is_empty() {
            check(lookup, "nodes", "", node, uid)?;
        }
        user.extra.insert(
            "authentication.kubernetes.io/node-name".into(),
            vec![node.into()],
        );
        user.extra.insert(
            "authentication.kubernetes.io/node-uid".into(),
            vec![uid.into()],
        );
    }
    let jti = claim_str(claims, &["jti"]);
    if !jti.is_empty() {
        user.extra
            .insert(CREDENTIAL_ID.into(), vec![format!("JTI={jti}")]);
    }
    Ok(user)
}

/// The user of a legacy token (`kubernetes.io/serviceaccount/*` claims).
fn legacy_user(claims: &Value, lookup: &dyn Lookup) -> Result<User, JwtError> {
    let field = |k: &str| claim_str(claims, &[k]);
    let ns = field("kubernetes.io/serviceaccount/namespace");
    let sa = field("kubernetes.io/serviceaccount/service-account.name");
    let uid = field("kubernetes.io/serviceaccount/service-account.uid");
    let secret = field("kubernetes.io/serviceaccount/secret.name");
    for (value, what) in [
        (ns, "namespace"),
        (sa, "serviceAccountName"),
        (uid, "serviceAccountUID"),
        (secret, "secretName"),
    ] {
        if value.is_empty() {
            return Err(JwtError(format!("{what} claim is missing")));
        }
    }
    if field("sub") != format!("system:serviceaccount:{ns}:{sa}") {
        return Err(JwtError("sub claim is invalid".into()));
    }
    check(lookup, "serviceaccounts", ns, sa, uid)?;
    check(lookup, "secrets", ns, secret, "")?;
    Ok(sa_user(ns, sa, uid))
}

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
