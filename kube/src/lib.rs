//! The Kubernetes object shape, as Herald reads and serves it, in one
//! place:
//!
//! - [`Decoder`]: a stored or served value (Kubernetes JSON, the
//!   apiserver's protobuf, a value encrypted at rest) to a Herald
//!   [`Object`](herald::Object), with its names, labels, configured fields
//!   and `metadata.resourceVersion` set ([`DecodeError`] when it is not
//!   one), as the apiserver serves it (the `read` module's conversions);
//! - [`proto`]: the apiserver's protobuf, read and written, with a schema
//!   generated from the real `k8s.io/api` types;
//! - [`served`]: what kube-apiserver v1.37.2 serves (generated from it):
//!   resources, discovery's fields, etcd keys, field labels, table
//!   columns;
//! - [`builtin`]: the built-in resources Herald serves, read from
//!   [`served`], and their etcd keys;
//! - [`ResourceInfo`]: a resource's names (group, version, plural, kind,
//!   list kind), scope, key and selectable fields, as discovery and paths
//!   spell them;
//! - [`wire`]: the one seam between a request and its response's bytes:
//!   a client's `Accept` negotiated once against the registered formats
//!   (JSON, YAML, protobuf, `Table`s), whose encoder writes the object,
//!   the list or the watch stream;
//! - [`ApiError`]: a `metav1.Status` failure (code, reason, message,
//!   details, retry hint), and which of Herald's errors is which
//!   ([`end_error`] for the end of a watch);
//! - [`query`]: a request's query string, parsed once as the apiserver's
//!   Go reads it, for everything that decides on or serves the request;
//! - [`params`]: the list and watch options (`metav1.ListOptions`) parsed
//!   and checked from a [`Query`], and what the apiserver's `RequestInfo`
//!   reads from it ([`params::ListAttributes`]);
//! - [`gojson`]: JSON as Go's `encoding/json` writes it (escaping,
//!   numbers, a custom resource's sorted keys), which every body is;
//! - [`selector_errors`]: the apiserver's words for a selector it
//!   refuses (Go's label and field selector parsers' errors);
//! - [`encode`]: the JSON of objects, watch events, bookmarks and lists,
//!   each object's stored bytes shared, not encoded per client;
//! - [`table`]: `meta.k8s.io/v1` `Table`s, as `kubectl get` asks for them;
//! - [`yaml`]: the YAML of `Accept: application/yaml`;
//! - [`quote`]: Go's `%q`, with which the apiserver quotes names in its
//!   messages;
//! - [`crypt`]: values the apiserver encrypted at rest, decrypted with the
//!   keys of its `EncryptionConfiguration` ([`Keyring`], given to a
//!   [`Decoder`] with [`Decoder::keyring`]).
//!
//! It is its own crate so that the shape does not live by accident in
//! whichever crate needed it first: the etcd upstream (`herald-etcd`), the
//! HTTP front (`herald-server`) and the kubelet's remote upstream
//! (`herald-kubelet`) all depend on it, and none of them on each other for
//! it. It has no network, no gRPC, no `protoc` and no HTTP stack: the
//! kubelet's manager decodes what the front serves without building etcd's
//! client. CBOR, when a client asks for it, is one more file in [`wire`].
#![forbid(unsafe_code)]

pub mod aggregated;
pub mod builtin;
pub mod crypt;
mod decode;
pub mod encode;
mod errors;
pub mod gojson;
mod info;
pub mod params;
mod partial;
pub mod proto;
pub mod query;
pub mod quote;
mod read;
pub mod selector_errors;
pub mod served;
mod status;
pub mod table;
mod undecodable;
pub mod versions;
pub mod wire;
pub mod yaml;

pub use crypt::{CryptError, Keyring};
pub use decode::{DecodeError, Decoder};
pub use errors::end_error;
pub use info::{POD_FIELDS, ResourceInfo};
pub use query::Query;
pub use status::ApiError;
pub use undecodable::{Undecodable, UndecodableReport};
