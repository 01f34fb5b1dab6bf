//! The wire: how a response is written, chosen once per request.
//!
//! [`negotiate`] reads the client's `Accept` header against [`FORMATS`]
//! (the registry of encodings: JSON, YAML, the apiserver's protobuf,
//! `meta.k8s.io/v1` `Table`s, `PartialObjectMetadata`) and what the response may be ([`Offer`]),
//! and picks one [`Format`]; its [`Format::encoder`] makes the request's
//! [`Encoder`], which writes everything the response carries: one object
//! (a GET), a list, and a watch stream's events in the format's framing
//! (JSON lines, length-prefixed protobuf `WatchEvent`s, one-row tables).
//! The server never branches on the media type: it asks the encoder.
//!
//! A new encoding (CBOR, which client-go can turn on) is one file: a
//! [`Format`] that says which media ranges it takes, and its
//! [`Encoder`]; and its line in [`FORMATS`].
//!
//! Objects reach an encoder as their JSON ([`ObjectJson`](crate::encode::ObjectJson): the stored
//! payload, shared, never encoded per client) with the engine's object
//! when there is one, so an encoding made once per change can be kept on
//! the object ([`Encodings`] does this for protobuf).

mod encoder;
mod encodings;
mod formats;
mod json;
mod metadata;
mod negotiate;
mod protobuf;
mod range;
mod table;
mod yaml;

pub use encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
pub use encodings::{Encodings, envelope};
pub use formats::FORMATS;
pub use negotiate::{negotiate, ranked};
pub use protobuf::{PROTOBUF, PROTOBUF_WATCH};
pub use range::{MediaRange, Offer};
pub use yaml::{YAML, yaml};
