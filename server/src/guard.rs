//! The access middleware and what it looks up in the served resources:
//! every request through [`Access::admit`](crate::access::Access) before
//! it reaches a route (see the module `access`), audited on the way (see
//! the module `audit_log`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, USER_AGENT};
use axum::http::uri::PathAndQuery;
use axum::http::{HeaderValue, Uri};
use axum::middleware::Next;
use axum::response::Response;
use herald_auth::RequestInfo;
use herald_auth::audit::event::{DECISION, REASON};
use herald_auth::audit::{Event, ResponseStatus, Stage, new_id};

use crate::access::{PeerCerts, Refusal, always_allowed};
use crate::admit::Client;
use crate::audit_log::{AuditLog, Completes};
use crate::parsed::Parsed;
use crate::server::{Caller, Server};
use crate::status;

/// The edge: reads the request once ([`Parsed`]), authenticates,
/// authorizes and audits it (or answers 400, 401, 403 or 429 itself),
/// then serves it: a resource request from what was decided on (the
/// module `resources`), any other through the routes, matched on the
/// decoded path that was decided on.
pub(crate) async fn guard(State(server): State<Server>, mut req: Request, next: Next) -> Response {
    let parsed = match Parsed::read(req.method(), req.uri()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            server.metrics().access_refused("malformed_request");
            return status::response(e);
        }
    };
    let access = server.access().cloned();
    let audit = server.audit().cloned();
    let info = parsed.info.clone();
    // The event, if the policy logs this request at all (decided once
    // the user is known).
    let pending = audit.map(|log| Pending::new(log, &req, SystemTime::now()));
    let always = always_allowed(&parsed.path);
    let peer = req.extensions().get::<Arc<PeerCerts>>().cloned();
    route_decoded(&mut req, &parsed);
    req.extensions_mut().insert(parsed);
    let Some(access) = access.filter(|_| !always) else {
        let event = pending.and_then(|p| p.decided(None, info, None));
        return run(&server, next, req, event).await;
    };
    // The grant keeps what was asked; the audit event, a copy.
    let asked = pending.as_ref().map(|_| info.clone());
    let admitted = access.admit(peer.as_deref(), req.headers(), info).await;
    match admitted {
        Ok(grant) => {
            let event = pending.zip(asked).and_then(|(p, info)| {
                let decision = Some(("allow", grant.reason().to_owned()));
                // The requester, as the apiserver's audit filter (outside
                // its impersonation filter) saw it; whom it impersonates
                // beside it, from the first stage after RequestReceived.
                let requester = grant.impersonator().unwrap_or(grant.user());
                let mut a = p.decided(Some(requester.clone()), info, decision)?;
                if grant.impersonator().is_some() {
                    a.event.impersonated_user = Some(grant.user().clone());
                }
                Some(a)
            });
            // The credential goes no further, as the apiserver deletes it
            // once it has authenticated; nor do the impersonation
            // headers, once decided on.
            req.headers_mut().remove(AUTHORIZATION);
            strip_impersonation(req.headers_mut());
            req.extensions_mut().insert(Arc::new(grant));
            run(&server, next, req, event).await
        }
        Err(refused) => {
            let Refusal {
                label,
                answer,
                user,
                reason,
            } = *refused;
            server.metrics().access_refused(label);
            if let Some((p, info)) = pending.zip(asked) {
                match user {
                    // Credentials refused: one ResponseStarted event, no
                    // user (`WithFailedAuthenticationAudit`).
                    None => {
                        if let Some(mut a) = p.undecided(info) {
                            a.event.response_status = Some(ResponseStatus::of(&answer));
                            a.finish(Stage::ResponseStarted);
                        }
                    }
                    Some(user) => {
                        // A 429 before the RBAC snapshot exists decided
                        // nothing.
                        let decision = (label == "forbidden").then_some(("forbid", reason));
                        if let Some(mut a) = p.decided(Some(user), info, decision) {
                            a.event.response_status = Some(ResponseStatus::of(&answer));
                            a.respond();
                        }
                    }
                }
            }
            status::response(answer)
        }
    }
}

/// Removes the `Impersonate-*` headers, as the apiserver's filter does
/// once it has decided on them.
fn strip_impersonation(headers: &mut axum::http::HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|n| n.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

/// The request's URI, for the routes behind the edge, with the decoded
/// path authorization saw (its query as it came: the routes read the
/// parsed one).
fn route_decoded(req: &mut Request, parsed: &Parsed) {
    let path = parsed.routed_path();
    if path == req.uri().path() {
        return;
    }
    let pq = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    let mut parts = req.uri().clone().into_parts();
    // Not a URI once re-encoded: nothing is routed to it.
    parts.path_and_query = Some(pq.parse().unwrap_or(PathAndQuery::from_static("/-")));
    if let Ok(uri) = Uri::from_parts(parts) {
        *req.uri_mut() = uri;
    }
}

/// Serves an admitted request: a resource request from its [`Parsed`]
/// (what was decided on), any other through the routes.
async fn serve(server: &Server, next: Next, req: Request) -> Response {
    let Some(parsed) = req.extensions().get::<Arc<Parsed>>().cloned() else {
        return next.run(req).await;
    };
    if !parsed.info.is_resource {
        return next.run(req).await;
    }
    let method = req.method().clone();
    let (mut parts, _body) = req.into_parts();
    let Ok(caller) = Caller::from_request_parts(&mut parts, &()).await;
    crate::resources::serve(server, &method, &parsed, caller).await
}

/// A request's audit event before the policy has decided on it.
struct Pending {
    log: Arc<AuditLog>,
    audit_id: String,
    request_uri: String,
    source_ips: Vec<String>,
    user_agent: String,
    received: SystemTime,
}

/// A request's audit event, to be written.
struct Audited {
    log: Arc<AuditLog>,
    event: Event,
    logs_completion: bool,
    logs_start: bool,
}

impl Pending {
    fn new(log: Arc<AuditLog>, req: &Request, received: SystemTime) -> Pending {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        };
        // The client's `Audit-ID` names the request if it is a sane one
        // (the apiserver takes it as is).
        let given = header("audit-id");
        let audit_id = if !given.is_empty() && given.len() <= 64 {
            given.to_owned()
        } else {
            new_id()
        };
        let address = req.extensions().get::<Client>().and_then(|c| match c {
            Client::Addr(ip) => Some(ip.to_string()),
            Client::User(_) => None,
        });
        Pending {
            audit_id,
            request_uri: req
                .uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned()),
            source_ips: address.into_iter().collect(),
            user_agent: header(USER_AGENT.as_str()).to_owned(),
            received,
            log,
        }
    }

    /// The event of `info` asked by `user`, with the authorizer's
    /// decision, if the policy logs it (its `RequestReceived` written).
    fn decided(
        self,
        user: Option<herald_auth::User>,
        info: RequestInfo,
        decision: Option<(&'static str, String)>,
    ) -> Option<Audited> {
        self.event(user, info, decision, true)
    }

    /// The event of a request whose credentials were refused, if the
    /// policy logs it (no `RequestReceived`: the apiserver's failed
    /// authentication writes its `ResponseStarted` alone).
    fn undecided(self, info: RequestInfo) -> Option<Audited> {
        self.event(None, info, None, false)
    }

    fn event(
        self,
        user: Option<herald_auth::User>,
        info: RequestInfo,
        decision: Option<(&'static str, String)>,
        received: bool,
    ) -> Option<Audited> {
        let decided = self.log.policy().decide(user.as_ref(), &info);
        let logs_any = [
            Stage::RequestReceived,
            Stage::ResponseStarted,
            Stage::ResponseComplete,
        ]
        .iter()
        .any(|s| decided.logs(*s));
        if !logs_any {
            return None;
        }
        let mut annotations = BTreeMap::new();
        if let Some((d, reason)) = decision {
            annotations.insert(DECISION, d.to_owned());
            annotations.insert(REASON, reason);
        }
        let event = Event {
            level: decided.level,
            audit_id: self.audit_id,
            request_uri: self.request_uri,
            info,
            user,
            impersonated_user: None,
            source_ips: self.source_ips,
            user_agent: self.user_agent,
            response_status: None,
            received: self.received,
            annotations,
        };
        if received && decided.logs(Stage::RequestReceived) {
            self.log
                .log(&Arc::new(event.clone()), Stage::RequestReceived);
        }
        Some(Audited {
            logs_completion: decided.logs(Stage::ResponseComplete),
            logs_start: decided.logs(Stage::ResponseStarted),
            log: self.log,
            event,
        })
    }
}

impl Audited {
    /// The response is written in full: a watch's `ResponseStarted`
    /// (any watch's, refused ones too, as the apiserver's long-running
    /// requests), then `ResponseComplete`.
    fn respond(self) {
        if self.event.info.verb == "watch" && self.logs_start {
            self.log
                .log(&Arc::new(self.event.clone()), Stage::ResponseStarted);
        }
        self.finish(Stage::ResponseComplete);
    }

    fn finish(self, stage: Stage) {
        let logs = match stage {
            Stage::ResponseStarted => self.logs_start,
            _ => self.logs_completion,
        };
        if logs {
            self.log.log(&Arc::new(self.event), stage);
        }
    }
}

/// Serves the request; with an event, writes its stages as the response
/// starts and completes, and names it in the `Audit-Id` header.
async fn run(server: &Server, next: Next, req: Request, audited: Option<Audited>) -> Response {
    let Some(mut a) = audited else {
        return serve(server, next, req).await;
    };
    let response = serve(server, next, req).await;
    let status = response
        .extensions()
        .get::<ResponseStatus>()
        .cloned()
        .unwrap_or_else(|| ResponseStatus::code(response.status().as_u16()));
    a.event.response_status = Some(status);
    let (mut parts, body) = response.into_parts();
    if let Ok(id) = HeaderValue::from_str(&a.event.audit_id) {
        parts.headers.insert("audit-id", id);
    }
    // A watch is long-running: its start is an event of its own (the
    // apiserver's on any status: its response writer writes it).
    if a.event.info.verb == "watch" && a.logs_start {
        a.log
            .log(&Arc::new(a.event.clone()), Stage::ResponseStarted);
    }
    let body = if a.logs_completion {
        Body::new(Completes::new(body, a.log, Arc::new(a.event)))
    } else {
        body
    };
    Response::from_parts(parts, body)
}
