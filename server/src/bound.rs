//! The objects a service-account token names (its ServiceAccount, and
//! the Pod, Secret or Node it is bound to), looked up in what the server
//! serves, for `herald_auth::jwt`'s checks.
//!
//! The apiserver's getter reads its informers' caches and, for an object
//! they lack, the apiserver itself; this reads the served engines'
//! cached objects only. A resource the server does not serve cannot be
//! looked up: its checks are skipped (a difference from the apiserver,
//! listed in `herald_auth::jwt`).

use herald_auth::jwt::{Lookup, Object};

use crate::server::Server;

/// The objects a service-account token names, looked up in what the
/// server serves (a resource it does not serve cannot be checked).
#[derive(Debug, Clone)]
pub struct ServedLookup(pub Server);

impl Lookup for ServedLookup {
    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Option<Object>> {
        let served = self.0.snapshot();
        let r = served.get(resource)?;
        let key = if namespace.is_empty() {
            name.to_owned()
        } else {
            format!("{namespace}/{name}")
        };
        let got = r.engine.get(&key, herald::read::ReadAt::Any).ok()?;
        Some(got.item.map(|item| {
            serde_json::from_slice::<serde_json::Value>(item.object.payload())
                .map(|v| Object::from_json(&v))
                .unwrap_or_default()
        }))
    }
}
