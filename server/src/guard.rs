//! The access middleware and what it looks up in the served resources:
//! every request through [`Access::admit`](crate::access::Access) before
//! it reaches a route (see the module `access`), and the objects a
//! service-account token is bound to ([`ServedLookup`]).

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;
use herald_auth::jwt::Lookup;
use std::sync::Arc;

use crate::access::{PeerCerts, always_allowed};
use crate::server::Server;
use crate::status;

/// Authenticates and authorizes, or answers 401, 403 or 429 itself.
pub(crate) async fn guard(State(server): State<Server>, mut req: Request, next: Next) -> Response {
    let Some(access) = server.access() else {
        return next.run(req).await;
    };
    if always_allowed(req.uri().path()) {
        return next.run(req).await;
    }
    let peer = req.extensions().get::<Arc<PeerCerts>>().cloned();
    let admitted = access.admit(
        peer.as_deref(),
        req.headers().get(AUTHORIZATION).map(|v| v.as_bytes()),
        req.method().as_str(),
        req.uri().path(),
        req.uri().query(),
    );
    match admitted {
        Ok(grant) => {
            // The credential goes no further, as the apiserver deletes it
            // once it has authenticated.
            req.headers_mut().remove(AUTHORIZATION);
            req.extensions_mut().insert(Arc::new(grant));
            next.run(req).await
        }
        Err((reason, answer)) => {
            server.metrics().access_refused(reason);
            status::response(answer)
        }
    }
}

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
