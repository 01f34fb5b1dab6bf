//! Legacy tokens (issuer `kubernetes/serviceaccount`, from a
//! `kubernetes.io/service-account-token` Secret), checked as the
//! apiserver's `legacyValidator` checks them with
//! `--service-account-lookup` (its default, true): `legacy.go`,
//! `Validate`.

use serde_json::{Map, Value};

use super::claims::{self, Public};
use super::lookup::{JwtError, Lookup, sa_user};
use super::object::Object;
use crate::user::User;

/// The label that marks a legacy token invalid (`InvalidSinceLabelKey`).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

const NAMESPACE: &str = "kubernetes.io/serviceaccount/namespace";
const SECRET_NAME: &str = "kubernetes.io/serviceaccount/secret.name";
const SA_NAME: &str = "kubernetes.io/serviceaccount/service-account.name";
const SA_UID: &str = "kubernetes.io/serviceaccount/service-account.uid";

/// The user of the legacy token `token`, whose payload is `claims`.
pub(super) fn validate(
    token: &str,
    public: &Public<'_>,
    claims: &Map<String, Value>,
    lookup: &dyn Lookup,
) -> Result<User, JwtError> {
    // The private claims, as go-jose unmarshals `legacyPrivateClaims`.
    let field = |k: &str| claims::string(claims, k, k);
    let (sa, sa_uid, secret_name, ns) = (
        field(SA_NAME)?,
        field(SA_UID)?,
        field(SECRET_NAME)?,
        field(NAMESPACE)?,
    );
    for (value, what) in [
        (public.sub, "sub"),
        (ns, "namespace"),
        (secret_name, "secretName"),
        (sa, "serviceAccountName"),
        (sa_uid, "serviceAccountUID"),
    ] {
        if value.is_empty() {
            return Err(JwtError(format!("{what} claim is missing")));
        }
    }
    if split_username(public.sub) != Some((ns, sa)) {
        return Err(JwtError("sub claim is invalid".into()));
    }
    // The Secret must still hold this very token, and not be going away
    // (legacy.go: GetSecret, DeletionTimestamp, ConstantTimeCompare).
    let secret = lookup.get("secrets", ns, secret_name);
    if let Some(secret) = &secret {
        let Some(secret) = secret else {
            return Err(JwtError(format!(
                "Token has been invalidated: secret {ns}/{secret_name} not found"
            )));
        };
        if secret.deletion.is_some() {
            return Err(JwtError(format!(
                "Token has been invalidated: secret {ns}/{secret_name} is being deleted"
            )));
        }
        if !same(
            secret.token.as_deref().unwrap_or_default(),
            token.as_bytes(),
        ) {
            return Err(JwtError(format!(
                "Token does not match server's copy (secret {ns}/{secret_name})"
            )));
        }
    }
    // The ServiceAccount must exist, not be going away, and have the UID.
    match lookup.get("serviceaccounts", ns, sa) {
        None => {}
        Some(None) => return Err(JwtError(format!("serviceaccounts {sa:?} not found"))),
        Some(Some(account)) => {
            if account.deletion.is_some() {
                return Err(JwtError(format!(
                    "ServiceAccount {ns}/{sa} has been deleted"
                )));
            }
            if account.uid != sa_uid {
                return Err(JwtError(format!(
                    "ServiceAccount UID ({}) does not match claim ({sa_uid})",
                    account.uid
                )));
            }
        }
    }
    let marked = |s: &Object| {
        s.labels
            .get(INVALID_SINCE_LABEL)
            .is_some_and(|v| !v.is_empty())
    };
    if secret.as_ref().and_then(Option::as_ref).is_some_and(marked) {
        return Err(JwtError(format!(
            "the token in secret {ns}/{secret_name} for service account {ns}/{sa} has been \
             marked invalid. Use tokens from the TokenRequest API or manually created \
             secret-based tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret \
             to temporarily allow use of this token"
        )));
    }
    Ok(sa_user(ns, sa, sa_uid))
}

/// Whether `a` and `b` are equal, in time independent of where they
/// differ (Go's `subtle.ConstantTimeCompare`).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The namespace and name of a service account's user name, as the
/// apiserver's `serviceaccount.SplitUsername` reads it: both valid names
/// (a DNS label, a DNS subdomain).
fn split_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!name.contains(':') && dns_label(ns) && dns_subdomain(name)).then_some((ns, name))
}

fn dns_label(s: &str) -> bool {
    s.len() <= 63 && dns_part(s)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn dns_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(dns_part)
}
