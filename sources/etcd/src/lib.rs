//! Herald's etcd v3 upstream: an [`EtcdSource`] that lists and watches one
//! key prefix of an etcd cluster over gRPC, for a
//! [`Reflector`](herald::reflector::Reflector) to keep an engine in step with; every
//! resource of one cluster reads through one [`EtcdCluster`] (one client,
//! one connection a member, one runtime). (The launcher for local etcd
//! servers and clusters its tests run against is `herald_testkit::etcd`,
//! in the dev-only fixtures crate.)
//!
//! This is its own crate so that the engine stays free of gRPC, tokio and
//! `protoc`: an embedder that feeds Herald itself builds none of them.
//!
//! # What the source does (seeds/003, the apiserver's `etcd3` store)
//!
//! - **List**: the prefix at one revision, in pages (limit and range end,
//!   as `GetList`), each object at its `mod_revision`.
//! - **Watch**: the prefix from a revision on, with previous values; a
//!   deletion carries the previous value as the object's last state, at
//!   the deletion's revision (`parseKV`, `prevKV`). A deletion whose
//!   previous value is gone or undecodable carries an object built from the
//!   key, so a watcher that saw the object sees it go.
//! - **Progress**: etcd's progress notifications, and answers to
//!   `RequestProgress`, become [`SourceEvent::Progress`](herald::source::SourceEvent)
//!   when every member answered at connect with a trusted release
//!   ([`ServerVersion::progress_is_trusted`], etcd#15220); otherwise (an
//!   older member, a version that does not parse, a member that did not
//!   answer) none is passed on, the cluster says why once on standard error
//!   ([`EtcdCluster::progress_distrust`]), and consistent reads are read from
//!   etcd.
//! - **Compaction**: a watch cancelled with a compact revision, or a page
//!   read below it, is [`SourceError::Compacted`](herald::source::SourceError); the
//!   reflector re-lists.
//! - **Faults**: anything else is `Unavailable`; the reflector backs off and
//!   resumes its watch from the last revision it applied (no re-list while
//!   etcd still holds it). Watches require a leader, so a member cut off
//!   from the cluster ends them and the client's balancer takes another.
//! - **Values**: JSON objects shaped as Kubernetes', read by the
//!   source's [`herald_kube::Decoder`] ([`EtcdCluster::source`]), with
//!   `metadata.resourceVersion` set from the revision: JSON, and the
//!   apiserver's protobuf (`k8s\0`) for the built-in kinds. Undecodable
//!   values (a kind the schema does not know, a value encrypted at rest
//!   with no key, garbage) are counted in
//!   [`EtcdStats::undecodable`] and [`EtcdSource::undecodable`] (which keys
//!   hold one now), logged and skipped; never a stop.
//!
//! A transaction that writes two keys of the prefix at one revision gives
//! two changes at one version, which the engine refuses as out of order:
//! the reflector re-lists past it (the apiserver never writes two objects
//! in one transaction).
//!
//! # The map
//!
//! | file | what |
//! | --- | --- |
//! | `config.rs` | [`ClusterConfig`] (a cluster), [`EtcdConfig`] (one resource of one), what is refused before connecting, [`ConnectError`] |
//! | `version.rs` | which members' progress notifications are trusted (etcd#15220): [`ServerVersion`], [`Distrust`] |
//! | `cluster.rs` | the connection every source of a cluster shares: the client on its runtime ([`Bridge`]), the members' versions at connect |
//! | `calls.rs` | a call from a blocking caller: bounded by the request timeout; reads retried while `Unavailable` |
//! | `progress.rs` | a source's open watches, each sent `RequestProgress` on request |
//! | `shared.rs` | what a source and its watches share: prefix, decoder, open watches, counters ([`EtcdStats`]) |
//! | `decode.rs` | keys and values to objects, watch events to changes; the prefix's key range; what cannot be decoded |
//! | `compaction.rs` | a compaction seen by a read or a watch, and the oldest revision etcd holds |
//! | `list.rs` | a list in pages at one revision, started over across a compaction |
//! | `watch.rs` | one watch: its stream, responses to changes, progress and its end |
//! | `source.rs` | [`EtcdCluster`] and [`EtcdSource`], the public handles; the [`Source`](herald::source::Source) |
//!
//! Layers: `config` <- `version` <- `cluster` <- `calls` <- `progress` <-
//! `shared` <- `decode` <- `compaction` <- `list` <- `watch` <- `source`.
#![forbid(unsafe_code)]

mod calls;
mod cluster;
mod compaction;
mod config;
mod decode;
mod list;
mod progress;
mod shared;
mod source;
mod version;
mod watch;

pub use config::{ClusterConfig, ConnectError, EtcdConfig, MAX_KEEP_ALIVE};
pub use herald_bridge::{Bridge, NotMultiThread};
pub use herald_kube::UndecodableReport;
pub use shared::EtcdStats;
pub use source::{EtcdCluster, EtcdSource};
pub use version::{Distrust, ProgressTrust, ServerVersion};
