//! The apiserver's protobuf storage format, read and written.
//!
//! kube-apiserver stores the built-in kinds as `k8s\0` (the magic), then a
//! `runtime.Unknown`: `typeMeta` (apiVersion, kind, field 1), `raw` (the
//! typed message, field 2), `contentEncoding` (3) and `contentType` (4).
//! [`decode`] reads that envelope and turns the typed message into the
//! JSON the apiserver serves for it (`kind` and `apiVersion` first), with
//! a schema generated from the real Go types of one release
//! ([`RELEASE`]). Every malformed input is a [`ProtoError`]; nothing
//! panics and nothing half-decoded is returned.
//!
//! [`encode()`] is the inverse: the JSON of a built-in kind to the bytes the
//! apiserver would store and serve for it (`Accept:
//! application/vnd.kubernetes.protobuf`), written as gogo's generated
//! `Marshal` writes the Go structs that JSON reads into; [`message`] is the
//! typed message alone.

mod encode;
mod envelope;
mod error;
mod frame;
mod json;
mod quantity;
mod schema;
mod time;
pub(crate) mod wire;

pub use encode::{encode, encode_into, message, type_message, unknown};
pub use envelope::{Envelope, decode, envelope, knows, type_json};
pub use error::{MAGIC, ProtoError};
pub use frame::{ListFrame, read_watch_event, watch_event, watch_event_head};
pub use schema::RELEASE;
