//! The Kubernetes object shape, as Herald reads and serves it, in one
//! place:
//!
//! - [`Decoder`]: a stored or served value (Kubernetes JSON) to a Herald
//!   [`Object`](herald::Object), with its names, labels, configured fields
//!   and `metadata.resourceVersion` set ([`DecodeError`] when it is not
//!   one);
//! - [`ResourceInfo`]: a resource's names (plural, kind, list kind), scope,
//!   key and selectable fields, as discovery and paths spell them;
//! - [`ApiError`]: a `metav1.Status` failure (code, reason, message,
//!   details, retry hint), and which of Herald's errors is which
//!   ([`end_error`] for the end of a watch);
//! - [`params`]: the list and watch options (`metav1.ListOptions`) parsed
//!   and checked from a query's pairs;
//! - [`encode`]: the JSON of objects, watch events, bookmarks and lists,
//!   each object's stored bytes shared, not encoded per client;
//! - [`table`]: `meta.k8s.io/v1` `Table`s, as `kubectl get` asks for them.
//!
//! It is its own crate so that the shape does not live by accident in
//! whichever crate needed it first: the etcd upstream (`herald-etcd`), the
//! HTTP front (`herald-http`) and the kubelet's remote upstream
//! (`herald-kubelet`) all depend on it, and none of them on each other for
//! it. It has no network, no gRPC, no `protoc` and no HTTP stack: the
//! kubelet's manager decodes what the front serves without building etcd's
//! client. The next codecs (protobuf, the apiserver's `k8s\0` storage
//! format, and CBOR) live here too.
#![forbid(unsafe_code)]

pub mod builtin;
mod decode;
pub mod encode;
mod errors;
mod info;
pub mod negotiate;
pub mod params;
pub mod proto;
mod read;
mod status;
pub mod table;
pub mod yaml;

pub use decode::{DecodeError, Decoder};
pub use errors::end_error;
pub use info::{POD_FIELDS, ResourceInfo};
pub use status::ApiError;
