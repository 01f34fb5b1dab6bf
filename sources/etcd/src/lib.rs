//! Herald's etcd v3 upstream: an [`EtcdSource`] that lists and watches one
//! key prefix of an etcd cluster over gRPC, for a
//! [`Reflector`](herald::Reflector) to keep an engine in step with. (The
//! launcher for local etcd servers and clusters its tests run against is
//! `herald_testkit::etcd`, in the dev-only fixtures crate.)
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
//!   `RequestProgress`, become [`SourceEvent::Progress`](herald::SourceEvent)
//!   when every member answered at connect with a trusted release
//!   ([`ServerVersion::progress_is_trusted`], etcd#15220); otherwise (an
//!   older member, a version that does not parse, a member that did not
//!   answer) none is passed on, the source says why once on standard error
//!   ([`EtcdSource::progress_distrust`]), and consistent reads are read from
//!   etcd.
//! - **Compaction**: a watch cancelled with a compact revision, or a page
//!   read below it, is [`SourceError::Compacted`](herald::SourceError); the
//!   reflector re-lists.
//! - **Faults**: anything else is `Unavailable`; the reflector backs off and
//!   resumes its watch from the last revision it applied (no re-list while
//!   etcd still holds it). Watches require a leader, so a member cut off
//!   from the cluster ends them and the client's balancer takes another.
//! - **Values**: JSON objects shaped as Kubernetes', read by the
//!   configured [`herald_kube::Decoder`] ([`EtcdConfig::decoder`]), with
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
#![forbid(unsafe_code)]

mod config;
mod source;
mod version;

pub use config::{ConnectError, EtcdConfig, MAX_KEEP_ALIVE};
pub use herald_bridge::{Bridge, NotMultiThread};
pub use herald_kube::UndecodableReport;
pub use source::{EtcdSource, EtcdStats};
pub use version::{Distrust, ProgressTrust, ServerVersion};
