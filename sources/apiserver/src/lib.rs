//! Herald's Kubernetes API upstream: a [`Source`](herald::source::Source) that
//! lists and watches one resource through kube-apiserver, for a Herald
//! in front of a cluster whose etcd it cannot read (a managed cluster,
//! an operator who will not hand etcd out).
//!
//! ```no_run
//! use herald_apiserver::{ApiServer, ApiServerConfig};
//! use herald_kube::{Decoder, ResourceInfo};
//! let apiserver = ApiServer::connect(ApiServerConfig::kubeconfig("/etc/herald/kubeconfig"))?;
//! let pods = apiserver.source(&ResourceInfo::pods(), Decoder::new().field("spec.nodeName"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The map
//!
//! | file | what |
//! | --- | --- |
//! | `config.rs` | [`ApiServerConfig`]: the kubeconfig, the context, pages, watch lengths, protobuf; [`ConnectError`] |
//! | `conn.rs` | the one client (kube-rs: TLS, credentials) on its runtime ([`Bridge`]: its own or one given), requests, a failed answer read as a `Status` |
//! | `shared.rs` | what a source and its watches share; a list, page by page; [`ApiServerStats`] |
//! | `source.rs` | [`ApiServer`] (a connection), [`ApiServerSource`] (one resource): the `Source`: lists, the current version, progress |
//! | `stream.rs` | an open watch stream, read event by event |
//! | `watch.rs` | a watch: streams resumed, short ones for progress, events checked in order |
//! | `watchlist.rs` | a list as a watch-list, its stream then the watch; refused: paged lists |
//! | `frames.rs` | what the apiserver sends, read: a list's page, a stream's events, JSON or protobuf |
//! | `revision.rs` | one request for the current version, shared by every consistent read waiting |
//! | `discovery.rs` | the resources the apiserver serves ([`ApiServer::discover`]) |
//!
//! Layers: `config` <- `conn` <- `frames`, `revision` <- `stream` <-
//! `shared` <- `watch` <- `watchlist` <- `source` <- `discovery`.

mod config;
mod conn;
mod discovery;
mod frames;
mod revision;
mod shared;
mod source;
mod stream;
mod watch;
mod watchlist;

pub use config::{ApiServerConfig, ConnectError};
pub use discovery::Discovered;
pub use herald_bridge::{Bridge, NotMultiThread};
pub use shared::ApiServerStats;
pub use source::{ApiServer, ApiServerSource};
