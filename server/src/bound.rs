//! The objects a service-account token is bound to (its ServiceAccount,
//! and the Pod, Secret or Node it names), looked up in what the server
//! serves, for `herald_auth::jwt`'s checks.

use herald_auth::jwt::Lookup;

use crate::server::Server;

/// The objects a service-account token is bound to, looked up in what
/// the server serves (a resource it does not serve cannot be checked).
#[derive(Debug, Clone)]
pub struct ServedLookup(pub Server);

impl Lookup for ServedLookup {
    fn uid(&self, resource: &str, namespace: &str, name: &str) -> Option<Option<String>> {
        let served = self.0.snapshot();
        let r = served.get(resource)?;
        let key = if namespace.is_empty() {
            name.to_owned()
        } else {
            format!("{namespace}/{name}")
        };
        let got = r.engine.get(&key, herald::ReadAt::Any).ok()?;
        Some(got.item.map(|item| {
            serde_json::from_slice::<serde_json::Value>(item.object.payload())
                .ok()
                .and_then(|v| v["metadata"]["uid"].as_str().map(str::to_owned))
                .unwrap_or_default()
        }))
    }
}
