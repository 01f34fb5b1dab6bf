//! Access control: every request is authenticated and authorized before
//! it reaches a route (the middleware is `guard`), as the apiserver's
//! handler chain does it
//! (`WithAuthentication`, then `WithAuthorization`; see `herald_auth`):
//!
//! - credentials that are not accepted: 401 `Unauthorized`;
//! - a user who may not do what the request asks: 403 `Forbidden`, the
//!   apiserver's message and details;
//! - before the RBAC snapshot exists: 429 with a retry hint (and
//!   `/readyz` fails), never a guess.
//!
//! `/healthz`, `/livez` and `/readyz` are always answered (a load
//! balancer's probe carries no credentials; they say nothing of the
//! cluster's objects, as the delegating apiserver's always-allowed
//! paths).
//!
//! The decision is made once per request. A watch keeps its `Grant`
//! and is decided again only when the RBAC snapshot changes (its body
//! wakes on the change, `Revocation`): one whose user may no longer
//! watch ends at once with an `ERROR` event carrying the 403, so a
//! revoked binding ends the watches it allowed within the cache's watch
//! latency plus a rebuild. Nothing on a delivery's path decides
//! anything.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use herald_auth::impersonate::{Impersonated, Mode, Wanted, impersonate};
use herald_auth::rbac::Decision;
use herald_auth::tls::ServingTls;
use herald_auth::x509::CertError;
use herald_auth::{Authenticator, Credentials, Refused, RequestInfo, User, forbidden};
use herald_kube::ApiError;
use rustls_pki_types::CertificateDer;

use crate::delegate::Delegate;
use crate::rbac_follow::RbacFollower;

/// Who may read what: the authenticators and the authorizer.
#[derive(Debug)]
pub struct Access {
    authn: Authenticator,
    /// Reviews the tokens `authn` does not take, if delegation is on.
    delegate: Option<Arc<Delegate>>,
    authz: Authorization,
    /// The impersonation mode that last allowed each requester.
    modes: Mutex<HashMap<String, Mode>>,
}

/// How requests are authorized.
#[derive(Debug, Clone)]
pub enum Authorization {
    /// Every authenticated request is allowed (`--authorization-mode
    /// AlwaysAllow`).
    AlwaysAllow,
    /// RBAC over the cluster's roles and bindings.
    Rbac(Arc<RbacFollower>),
    /// The upstream apiserver's `SubjectAccessReview`s (see the module
    /// `delegate`).
    Webhook(Arc<Delegate>),
}

impl Access {
    /// Authenticates with `authn` (and `delegate`'s token reviews, for
    /// tokens `authn` does not take), authorizes with `authz`.
    pub fn new(
        authn: Authenticator,
        delegate: Option<Arc<Delegate>>,
        authz: Authorization,
    ) -> Access {
        Access {
            authn,
            delegate,
            authz,
            modes: Mutex::default(),
        }
    }

    /// Whether the authorizer can decide (its RBAC snapshot exists).
    pub fn ready(&self) -> bool {
        match &self.authz {
            Authorization::AlwaysAllow | Authorization::Webhook(_) => true,
            Authorization::Rbac(f) => f.snapshot().is_some(),
        }
    }
}

/// What a client certificate proved: a user, none (no CN), or a refusal.
type CertIdentity = Arc<Result<Option<User>, CertError>>;

/// The next RBAC snapshot's arrival, handing its receiver back (`None`:
/// the follower is gone).
type NextChange = Pin<Box<dyn Future<Output = Option<tokio::sync::watch::Receiver<u64>>> + Send>>;

/// A connection's client certificate chain, and its identity as last
/// checked against the client CA (per CA: a reloaded CA checks again).
#[derive(Debug)]
pub(crate) struct PeerCerts {
    chain: Vec<CertificateDer<'static>>,
    tls: Arc<ServingTls>,
    checked: Mutex<Option<(usize, CertIdentity)>>,
}

impl PeerCerts {
    pub(crate) fn new(chain: Vec<CertificateDer<'static>>, tls: Arc<ServingTls>) -> PeerCerts {
        PeerCerts {
            chain,
            tls,
            checked: Mutex::new(None),
        }
    }

    /// The identity the chain proves under the current client CA.
    fn identity(&self) -> CertIdentity {
        let serving = self.tls.current();
        let key = Arc::as_ptr(&serving) as usize;
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, id)) = checked.as_ref().filter(|(k, _)| *k == key) {
            return id.clone();
        }
        let id = Arc::new(serving.identify(&self.chain));
        *checked = Some((key, id.clone()));
        id
    }
}

/// What a request was allowed as: a watch decides again with it when the
/// RBAC snapshot changes.
#[derive(Debug)]
pub(crate) struct Grant {
    /// The user it is served as (the impersonated one, if any).
    user: User,
    /// Who asked, when it impersonates `user`.
    impersonator: Option<User>,
    info: RequestInfo,
    rbac: Option<Arc<RbacFollower>>,
    /// The authorizer's reason (`RBAC: allowed by ...`).
    reason: String,
}

impl Grant {
    /// The user the request was allowed as.
    pub(crate) fn user(&self) -> &User {
        &self.user
    }

    /// The authorizer's reason for allowing it.
    pub(crate) fn reason(&self) -> &str {
        &self.reason
    }

    /// Who asked, when the request impersonates [`Grant::user`].
    pub(crate) fn impersonator(&self) -> Option<&User> {
        self.impersonator.as_ref()
    }
}

/// The paths answered whoever asks.
pub(crate) fn always_allowed(path: &str) -> bool {
    matches!(path, "/healthz" | "/livez" | "/readyz")
}

/// Why a request was refused: the label value
/// (`herald_http_access_refused_requests`), the answer, who asked (if
/// that much was established) and the authorizer's reason.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) label: &'static str,
    pub(crate) answer: ApiError,
    pub(crate) user: Option<User>,
    pub(crate) reason: String,
}

impl Access {
    /// Authenticates and authorizes a request asking `info`: what it is
    /// allowed as, or why not.
    pub(crate) async fn admit(
        &self,
        peer: Option<&PeerCerts>,
        headers: &HeaderMap,
        info: RequestInfo,
    ) -> Result<Grant, Box<Refusal>> {
        let authorization = headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        let certificate = peer
            .filter(|p| !p.chain.is_empty())
            .map(PeerCerts::identity);
        let refuse = |refused: &Refused| {
            Box::new(Refusal {
                label: refused.label(),
                answer: herald_auth::unauthorized(),
                user: None,
                reason: String::new(),
            })
        };
        let local = self.authn.authenticate(Credentials {
            certificate: certificate.as_deref(),
            authorization,
        });
        let user = match (local, &self.delegate) {
            (Ok(user), _) => user,
            // A token none of ours takes: the apiserver's review.
            (Err(refused @ Refused::Token(_)), Some(delegate)) => {
                let token = authorization.and_then(herald_auth::authn::bearer);
                match token {
                    Some(Ok(token)) => delegate
                        .authenticate(token)
                        .await
                        .map(User::authenticated)
                        .map_err(|_| refuse(&refused))?,
                    Some(Err(_)) | None => return Err(refuse(&refused)),
                }
            }
            (Err(refused), _) => return Err(refuse(&refused)),
        };
        let (user, impersonator) = self.impersonation(headers, user, &info).await?;
        let (rbac, decision) = match &self.authz {
            Authorization::AlwaysAllow => (None, None),
            Authorization::Rbac(follower) => {
                let Some(snapshot) = follower.snapshot() else {
                    return Err(not_ready(user));
                };
                let decision = snapshot.authorize(&user, &info);
                (Some(follower.clone()), Some(decision))
            }
            Authorization::Webhook(delegate) => match delegate.authorize(&user, &info).await {
                Ok(decision) => (None, Some(decision)),
                Err(e) => {
                    return Err(Box::new(Refusal {
                        label: "authorizer_error",
                        answer: ApiError::internal(e),
                        user: Some(user),
                        reason: String::new(),
                    }));
                }
            },
        };
        let reason = match decision {
            None => String::new(),
            Some(d) if d.allowed => d.reason,
            Some(d) => {
                return Err(Box::new(Refusal {
                    label: "forbidden",
                    answer: forbidden(&user, &info, &d.reason),
                    user: Some(user),
                    reason: d.reason,
                }));
            }
        };
        Ok(Grant {
            user,
            impersonator,
            info,
            rbac,
            reason,
        })
    }

    /// The user `requester` asks to be served as (`Impersonate-*`
    /// headers), decided as the apiserver decides it (see
    /// `herald_auth::impersonate`), with the requester (the impersonator)
    /// beside it; the requester itself when nothing is asked.
    async fn impersonation(
        &self,
        headers: &HeaderMap,
        requester: User,
        info: &RequestInfo,
    ) -> Result<(User, Option<User>), Box<Refusal>> {
        let asked = headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes()));
        let wanted = match Wanted::from_headers(asked) {
            Ok(None) => return Ok((requester, None)),
            Ok(Some(w)) => w,
            Err(answer) => {
                return Err(Box::new(Refusal {
                    label: "impersonation_malformed",
                    answer,
                    user: Some(requester),
                    reason: String::new(),
                }));
            }
        };
        let first = self
            .modes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&requester.name)
            .copied();
        let decided = match &self.authz {
            Authorization::AlwaysAllow => {
                let allow = |_: User, _: RequestInfo| {
                    std::future::ready(Ok(Decision {
                        allowed: true,
                        reason: String::new(),
                    }))
                };
                impersonate(&wanted, &requester, info, first, allow).await
            }
            Authorization::Rbac(follower) => {
                let Some(snapshot) = follower.snapshot() else {
                    return Err(not_ready(requester));
                };
                let rbac =
                    |u: User, a: RequestInfo| std::future::ready(Ok(snapshot.authorize(&u, &a)));
                impersonate(&wanted, &requester, info, first, rbac).await
            }
            Authorization::Webhook(delegate) => {
                let review = |u: User, a: RequestInfo| {
                    let delegate = delegate.clone();
                    async move { delegate.authorize(&u, &a).await }
                };
                impersonate(&wanted, &requester, info, first, review).await
            }
        };
        match decided {
            Ok(Impersonated { user, mode, .. }) => {
                let mut modes = self.modes.lock().unwrap_or_else(|e| e.into_inner());
                // Bounded: a cache of hints, rebuilt as requesters return.
                if modes.len() >= MODES_REMEMBERED {
                    modes.clear();
                }
                modes.insert(requester.name.clone(), mode);
                Ok((user, Some(requester)))
            }
            Err(refused) => Err(Box::new(Refusal {
                label: "impersonation_forbidden",
                answer: refused.error,
                user: Some(requester),
                reason: refused.reason,
            })),
        }
    }
}

/// How many requesters' last impersonation mode are remembered (the
/// apiserver's cache tries it first, which decides which refusal a later
/// failure names).
const MODES_REMEMBERED: usize = 10_000;

/// The 429 of a request that came before the RBAC snapshot.
fn not_ready(user: User) -> Box<Refusal> {
    Box::new(Refusal {
        label: "authorizer_not_ready",
        answer: ApiError::not_ready(
            "the authorizer has not yet read the cluster's RBAC objects",
            Duration::from_secs(1),
        ),
        user: Some(user),
        reason: String::new(),
    })
}

/// A watch's re-decision: wakes its body when the RBAC snapshot changes;
/// [`Revocation::poll_revoked`] then decides again.
pub(crate) struct Revocation {
    grant: Arc<Grant>,
    follower: Arc<RbacFollower>,
    seen: u64,
    /// Whether `changed` has been polled (the task's waker is with it).
    registered: bool,
    /// Completes on the next snapshot (a boxed `changed()`: made again
    /// after each change, which is rare).
    changed: Option<NextChange>,
}

impl std::fmt::Debug for Revocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revocation")
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

fn next_change(mut rx: tokio::sync::watch::Receiver<u64>) -> NextChange {
    Box::pin(async move { rx.changed().await.ok().map(|()| rx) })
}

impl Revocation {
    /// The re-decision of a watch allowed by `grant`, if RBAC decided it.
    pub(crate) fn of(grant: &Arc<Grant>) -> Option<Revocation> {
        let rbac = grant.rbac.as_ref()?;
        let mut rx = rbac.subscribe();
        let seen = *rx.borrow_and_update();
        Some(Revocation {
            grant: grant.clone(),
            follower: rbac.clone(),
            seen,
            registered: false,
            changed: Some(next_change(rx)),
        })
    }

    /// The 403 that ends the watch, once a new snapshot no longer allows
    /// it; `Pending` (the task woken on the next snapshot) while it is
    /// allowed.
    pub(crate) fn poll_revoked(&mut self, cx: &mut Context<'_>) -> Poll<ApiError> {
        // The delivery path's whole cost: one load, while the snapshot
        // this watch was decided on is current (the task's waker stays
        // with the pending `changed()` until a new one comes).
        if self.registered && self.follower.generation() == self.seen {
            return Poll::Pending;
        }
        self.registered = true;
        loop {
            let Some(changed) = self.changed.as_mut() else {
                return Poll::Pending;
            };
            let rx = match changed.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(rx) => rx,
            };
            let Some(mut rx) = rx else {
                // The follower is gone (the server is stopping).
                self.changed = None;
                return Poll::Pending;
            };
            self.seen = *rx.borrow_and_update();
            let Grant {
                user, info, rbac, ..
            } = &*self.grant;
            let decision = rbac
                .as_ref()
                .and_then(|r| r.snapshot())
                .map(|s| s.authorize(user, info));
            match decision {
                Some(d) if !d.allowed => return Poll::Ready(forbidden(user, info, &d.reason)),
                _ => self.changed = Some(next_change(rx)),
            }
        }
    }
}
