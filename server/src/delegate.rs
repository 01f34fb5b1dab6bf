//! Delegation to the upstream apiserver (`--kubeconfig`): bearer tokens
//! no local authenticator takes are reviewed with a `TokenReview`
//! (`--delegate-authentication`), and requests are authorized with a
//! `SubjectAccessReview` (`--authorization-mode Webhook`), each answer
//! cached as the delegating apiserver caches it (10 s for success and
//! failure unless the flags say otherwise; see `herald_auth::review`).
//!
//! A review that gets no answer (the apiserver unreachable, the
//! credentials of `--kubeconfig` refused) is not cached: the request is
//! refused (401 for a token, 500 for an authorization, as the
//! apiserver's `WithAuthorization` answers an authorizer's error) and
//! counted (`herald_http_delegated_reviews_total{result="failed"}`).
//!
//! A watch that a `SubjectAccessReview` allowed is not decided again
//! while it lasts (the apiserver does not decide its own watches again
//! either); revocation ends watches in RBAC mode, where Herald reads
//! the bindings itself.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use herald_apiserver::ApiServer;
use herald_auth::review::{
    ACCESS_REVIEWS, Cache, TOKEN_REVIEWS, access_key, access_review, reviewed_decision,
    reviewed_user, token_key, token_review,
};
use herald_auth::{Decision, RequestInfo, User};

use crate::counts::ServerMetrics;

/// Cached answers held at most, per kind.
const CAPACITY: usize = 16_384;

/// The TTLs of the delegated answers.
#[derive(Debug, Clone, Copy)]
pub struct DelegateTtls {
    /// A token's review (`--authentication-token-webhook-cache-ttl`).
    pub token: Duration,
    /// An allowed access review
    /// (`--authorization-webhook-cache-authorized-ttl`).
    pub allowed: Duration,
    /// A refused access review
    /// (`--authorization-webhook-cache-unauthorized-ttl`).
    pub refused: Duration,
}

impl Default for DelegateTtls {
    fn default() -> Self {
        let ten = Duration::from_secs(10);
        DelegateTtls {
            token: ten,
            allowed: ten,
            refused: ten,
        }
    }
}

/// The reviews sent to the apiserver, and their caches.
pub struct Delegate {
    apiserver: ApiServer,
    audiences: Vec<String>,
    tokens: Cache<[u8; 32], Result<User, String>>,
    access: Cache<String, Decision>,
    metrics: Arc<ServerMetrics>,
}

impl std::fmt::Debug for Delegate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegate")
            .field("apiserver", &self.apiserver.url())
            .field("tokens", &self.tokens.len())
            .field("access", &self.access.len())
            .finish()
    }
}

/// The kinds of review (the `kind` label).
pub(crate) const REVIEW_KINDS: [&str; 2] = ["token", "access"];
/// How a review was answered (the `result` label).
pub(crate) const REVIEW_RESULTS: [&str; 3] = ["cached", "sent", "failed"];

impl Delegate {
    /// Reviews through `apiserver`; tokens for `audiences` (none: the
    /// apiserver's own).
    pub(crate) fn new(
        apiserver: ApiServer,
        audiences: Vec<String>,
        ttls: DelegateTtls,
        metrics: Arc<ServerMetrics>,
    ) -> Delegate {
        Delegate {
            apiserver,
            audiences,
            tokens: Cache::new(ttls.token, ttls.token, CAPACITY),
            access: Cache::new(ttls.allowed, ttls.refused, CAPACITY),
            metrics,
        }
    }

    /// Counts a review. Relaxed: an independent counter for `/metrics`.
    fn count(&self, kind: usize, result: usize) {
        self.metrics.reviews[kind][result].fetch_add(1, Ordering::Relaxed);
    }

    /// The user the apiserver says `token` is, or why not.
    pub(crate) async fn authenticate(&self, token: &str) -> Result<User, String> {
        let key = token_key(token);
        if let Some(cached) = self.tokens.get(&key) {
            self.count(0, 0);
            return cached;
        }
        match self
            .apiserver
            .create(TOKEN_REVIEWS, &token_review(token, &self.audiences))
            .await
        {
            Ok(answer) => {
                self.count(0, 1);
                let user = reviewed_user(&answer);
                self.tokens.put(key, user.clone(), user.is_ok());
                user
            }
            Err(e) => {
                self.count(0, 2);
                Err(format!("the token review failed: {e}"))
            }
        }
    }

    /// The apiserver's decision on `user` asking `info`, or why there is
    /// none.
    pub(crate) async fn authorize(
        &self,
        user: &User,
        info: &RequestInfo,
    ) -> Result<Decision, String> {
        let key = access_key(user, info);
        if let Some(cached) = self.access.get(&key) {
            self.count(1, 0);
            return Ok(cached);
        }
        match self
            .apiserver
            .create(ACCESS_REVIEWS, &access_review(user, info))
            .await
        {
            Ok(answer) => {
                self.count(1, 1);
                let decision = reviewed_decision(&answer);
                self.access.put(key, decision.clone(), decision.allowed);
                Ok(decision)
            }
            Err(e) => {
                self.count(1, 2);
                Err(format!("the access review failed: {e}"))
            }
        }
    }
}
