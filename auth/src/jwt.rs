//! Service-account tokens (JWTs), checked as the kube-apiserver (v1.37,
//! its default flags and feature gates) checks them with its two
//! `jwtTokenAuthenticator`s, one per issuer kind (`pkg/serviceaccount/`
//! `jwt.go`, `claims.go`, `legacy.go`):
//!
//! 1. a token that is not a JWT, or whose issuer is not one of ours, is
//!    not ours: the next authenticator tries it;
//! 2. its signature must verify with one of the keys (those of its `kid`
//!    if it names one): RS256 with an RSA key, ES256/ES384 with P-256 and
//!    P-384 keys;
//! 3. its claims must have the JSON types go-jose reads them as (`exp`,
//!    `nbf`, `iat` numbers, `aud` a string or strings, ...; `null` is
//!    absent);
//! 4. its audiences must meet the server's (a token without `aud` is a
//!    legacy token, for the server's own audiences);
//! 5. `exp`, `nbf` and `iat`, where present, hold within a minute's
//!    leeway;
//! 6. its issuer decides which claims it is read by: the legacy issuer's
//!    tokens by their `kubernetes.io/serviceaccount/*` claims
//!    (checked in `legacy.rs`: their Secret must still hold this very
//!    token, not be being deleted nor labelled
//!    `kubernetes.io/legacy-token-invalid-since`; their ServiceAccount
//!    must exist with their UID and not be being deleted); any other's by
//!    its `kubernetes.io` claims (its ServiceAccount, and the Pod, Secret
//!    or Node it is bound to, must exist with exactly the UIDs it names,
//!    and not have been being deleted for over a minute; a
//!    webhook-configuration-bound token is refused, its feature gate being
//!    off);
//! 7. the user is `system:serviceaccount:<ns>:<name>`, in
//!    `system:serviceaccounts` and `system:serviceaccounts:<ns>`, with
//!    its pod and node in its extra values.
//!
//! Differences from the apiserver:
//!
//! - objects are looked up in what the server serves ([`Lookup`]); where
//!   it does not serve a resource it cannot tell, and the checks of that
//!   object are skipped (the apiserver reads its informers, and the
//!   apiserver itself for an object they lack). An object created in the
//!   apiserver but not yet in the server's cache is not found;
//! - legacy tokens' `exp`, `nbf` and `iat` are checked too (the
//!   apiserver's legacy validator reads but does not check them), and a
//!   bound token's `sub` must name its service account (the apiserver
//!   does not read it): stricter, for tokens the apiserver never mints;
//! - a legacy token's Secret is not labelled
//!   `kubernetes.io/legacy-token-last-used` (the server does not write);
//! - go-jose refuses a payload with a duplicate key; here the last one
//!   counts.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;

use crate::keys::{KeyKind, PublicKey};
use crate::user::User;

/// The legacy tokens' issuer.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

mod bound;
mod claims;
mod legacy;
mod lookup;
mod object;

pub use legacy::INVALID_SINCE_LABEL;
pub use lookup::{JwtError, Lookup, NoLookup};
pub use object::Object;

use lookup::LEEWAY;

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
        let Some(Value::Object(claims)) = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            return Ok(None);
        };
        let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("");
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
        let public = claims::Public::read(&claims)?;
        if !public.aud.is_empty()
            && !public
                .aud
                .iter()
                .any(|a| self.audiences.iter().any(|b| b == a))
        {
            return Err(JwtError(format!(
                "token audiences {:?} is invalid for the target audiences {:?}",
                public.aud, self.audiences
            )));
        }
        // go-jose's ValidateWithLeeway, in its order.
        let now = now as f64;
        let leeway = LEEWAY as f64;
        if public.nbf.is_some_and(|nbf| now + leeway < nbf) {
            return Err(JwtError("service account token is not valid yet".into()));
        }
        if public.exp.is_some_and(|exp| now - leeway > exp) {
            return Err(JwtError("service account token has expired".into()));
        }
        if public.iat.is_some_and(|iat| now + leeway < iat) {
            return Err(JwtError(
                "service account token is issued in the future".into(),
            ));
        }
        let user = if issuer == LEGACY_ISSUER {
            legacy::validate(token, &public, &claims, lookup)?
        } else {
            bound::validate(&public, &claims, lookup, now as u64)?
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

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
