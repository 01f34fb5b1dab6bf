//! The Kubernetes list/watch API over HTTP, served from Herald engines.
//!
//! A [`Server`] serves one or more [`Resource`]s (an engine each, fed by
//! a source through a reflector: the in-memory source, or etcd with the
//! `etcd` feature, on by default) under the apiserver's core v1 paths, for the clients Kubernetes users run
//! (`kubectl`, client-go, kube-rs, the Python client):
//!
//! - `GET /api/v1/{resource}`, `/api/v1/namespaces/{ns}/{resource}`: LIST
//!   with `resourceVersion`, `resourceVersionMatch`, `limit`, `continue`,
//!   `labelSelector`, `fieldSelector`, answered as a `{Kind}List`;
//! - the same with `watch=true`: WATCH, chunked JSON lines
//!   `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":...}`, with
//!   `allowWatchBookmarks`, `sendInitialEvents` (the watch-list's
//!   initial-events-end bookmark) and `timeoutSeconds`;
//! - `GET .../{resource}/{name}`: one object, at a version if asked;
//! - errors as `Status` objects with the apiserver's codes and reasons
//!   ([`herald_kube::ApiError`], written by [`status::response`]); a
//!   version the cache no longer holds, inside a watch, is an `ERROR`
//!   event with code 410 on a 200, which makes clients re-list;
//! - discovery (`/version`, `/api`, `/api/v1`, `/apis`), `/metrics`
//!   (Prometheus text), `/healthz`, `/livez`, `/readyz`.
//!
//! An object is sent as the JSON its source stored (see
//! [`herald_kube::encode`]): each change is encoded once, and every
//! connection that receives it copies the same bytes.
//!
//! The Kubernetes shape (resource names, `Status` bodies, list and watch
//! options, the JSON of objects, events, lists and tables) is
//! `herald_kube`'s; this crate is the HTTP around it: routes, connections,
//! admission, metrics.
//!
//! ```no_run
//! use herald_server::{Demo, Server, ServerConfig, resource_on};
//! use herald_kube::ResourceInfo;
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let demo = Demo::start(1_000, 20.0)?;
//! let pods = resource_on(ResourceInfo::pods(), std::sync::Arc::new(demo.source().clone()))?;
//! let server = Server::new([pods], ServerConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! server.serve(listener, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```

pub mod access;
pub mod access_config;
mod admit;
pub mod audit_log;
mod bound;
pub mod compress;
mod conn;
mod counts;
pub mod crds;
pub mod delegate;
pub mod discovery;
mod guard;
mod listen;
pub mod metrics;
mod names;
mod open_watches;
mod outgoing;
mod parsed;
pub mod rbac_follow;
mod resource;
mod resources;
mod respond;
mod routes;
mod server;
mod shutdown;
mod sources;
pub mod status;
mod target;
mod watch;
mod watch_convert;

pub use access::{Access, Authorization};
pub use access_config::AccessConfig;
pub use bound::ServedLookup;
pub use rbac_follow::{RBAC_RESOURCES, RbacFollower};
pub use resource::{Resource, SourceHealth};
pub use server::{Server, ServerConfig};
pub use sources::{Demo, HISTORY_BACKFILL, apiserver_resource, demo_pod, resource_on};
#[cfg(feature = "etcd")]
pub use sources::{etcd_resource, etcd_resource_with};
pub use watch::{BATCH, WatchBody};
