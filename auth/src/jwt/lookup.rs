//! What every check of a token shares: the objects it names, looked up
//! ([`Lookup`]), why it is refused ([`JwtError`]), the time claims'
//! leeway, and the user a service account is.

use super::object::Object;
use crate::user::User;

/// The leeway of the time claims.
pub(super) const LEEWAY: u64 = 60;

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

/// The user of the service account `ns/name` with `uid`.
pub(super) fn sa_user(ns: &str, name: &str, uid: &str) -> User {
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
