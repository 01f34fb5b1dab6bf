//! Who may read what, decided as the kube-apiserver decides it.
//!
//! `herald-server` serves a cluster's objects, Secrets included; this
//! crate is what stands between a connection and them, in the
//! apiserver's order (its `DefaultBuildHandlerChain`):
//!
//! 1. **TLS** ([`tls`]): the serving certificate and key, reloaded when
//!    they change on disk, and client certificates *requested* (never
//!    required, never refused at the handshake, as Go's
//!    `tls.RequestClientCert`): a certificate the client CA did not sign
//!    is refused per request, with a 401, as the apiserver refuses it.
//! 2. **Authentication** ([`authn`]): a client certificate (user from its
//!    CN, groups from its O values), then a bearer token: the static
//!    token file ([`token_file`], kube-apiserver's `--token-auth-file`),
//!    then service-account JWTs ([`jwt`]) checked against the cluster's
//!    public keys with issuer, audience and expiry. A request with bad
//!    credentials is refused (401), never served as anonymous; one with
//!    none is `system:anonymous` only where the operator allows it.
//! 3. **Authorization** ([`rbac`]): the RBAC authorizer's decision over
//!    the cluster's own Roles, ClusterRoles and bindings, with
//!    `system:masters` allowed first as the apiserver's privileged-group
//!    authorizer does; a refusal is the apiserver's 403 `Status`
//!    ([`forbidden`](mod@forbidden)), message and details alike.
//!
//! What a request asks for (verb, resource, namespace, name) is read from
//! its method, path and query as the apiserver's `RequestInfo` reads it
//! ([`request`]), so that a `watch` of one name through a field selector
//! is checked against `resourceNames` as the apiserver checks it.
//!
//! The map (each file one policy; lower layers never import higher):
//!
//! | layer | files | what |
//! |---|---|---|
//! | 0 | `user` | an identity |
//! | 1 | `request`, `rbac/model`, `rbac/rules` | what a request asks; RBAC objects and rule matching |
//! | 2 | `rbac/index`, `forbidden`, `token_file`, `keys`, `jwt`, `x509`, `review` | the decision; the 403; each credential; the reviews delegated to the apiserver and their cache |
//! | 3 | `authn`, `tls`, `audit/policy`, `audit/event` | the authenticator chain; TLS serving and the client CA; the audit policy and its events |
//! | 3 | `impersonate/` | `Impersonate-*` headers: the apiserver's constrained and legacy modes, each an authorization of the requester |

pub mod audit;
pub mod authn;
pub mod forbidden;
pub mod impersonate;
pub mod jwt;
pub mod keys;
pub mod rbac;
pub mod request;
pub mod review;
pub mod tls;
pub mod token_file;
pub mod user;
pub mod x509;

pub use authn::{Authenticator, Credentials, Refused};
pub use forbidden::{forbidden, unauthorized};
pub use rbac::{Decision, Rbac};
pub use request::RequestInfo;
pub use user::User;
