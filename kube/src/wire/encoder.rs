//! The seam's two traits: a [`Format`] (an encoding a client can ask
//! for, and which media ranges ask for it) and the [`Encoder`] it makes
//! for one request; and what an encoder is given: the request
//! ([`Request`]), objects on their way out ([`Outgoing`]), a list's head
//! ([`ListHead`]) and a watch stream's state ([`Stream`]).

use std::fmt;
use std::sync::Arc;

use bytes::BytesMut;
use herald::{EventKind, Object, ResourceVersion};
use serde_json::Value;

use super::encodings::Encodings;
use super::range::{MediaRange, Offer};
use crate::encode::ObjectJson;
use crate::info::ResourceInfo;
use crate::status::ApiError;
use crate::table::Printer;

/// An encoding a client can ask for.
pub trait Format: Sync + fmt::Debug {
    /// Its short name (`json`, `protobuf`, `table`, `yaml`), as
    /// `/debug/herald/watches` shows it.
    fn name(&self) -> &'static str;

    /// Whether the media range `range` of an `Accept` header asks for
    /// this encoding, for a response `offer` allows.
    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool;

    /// The media type the apiserver names for this encoding when it
    /// refuses a request's `Accept` (`None`: not named, as `Table`s are
    /// not, or not offered).
    fn advertised(&self, offer: Offer) -> Option<&'static str>;

    /// The encoder of one request's response; the apiserver's `400`
    /// for a request option this encoding reads and refuses (a
    /// `Table`'s `includeObject`).
    fn encoder(&self, request: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError>;

    /// An error's `Status` object as the apiserver writes it to a
    /// request that asked for this encoding (its `ErrorNegotiated`): the
    /// content type and the body; `None` writes it as JSON (JSON itself,
    /// and `Table`s, whose `as=` the apiserver's error writer refuses).
    fn status(&self, status: &Value) -> Option<(&'static str, Vec<u8>)> {
        let _ = status;
        None
    }
}

/// What an encoder is made from: the resource, how `kubectl get` prints
/// it, the request's options that shape the encoding, and the resource's
/// shared encodings.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The resource's names, at the version served.
    pub info: &'a ResourceInfo,
    /// The resource's printer (its `Table` columns).
    pub printer: &'a Printer,
    /// The request's `includeObject` (tables only).
    pub include_object: Option<&'a str>,
    /// Encodings made once per change and shared by every response.
    pub encodings: &'a Arc<Encodings>,
}

/// One object on its way out: its JSON at the version served and, when
/// the JSON is the engine object's own, the object (where an encoding
/// made once per change is kept).
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The engine's object, if the JSON is its (not a conversion's).
    pub object: Option<&'a Object>,
    /// The object's JSON.
    pub json: &'a ObjectJson,
    /// The version it is served at.
    pub rv: ResourceVersion,
}

/// A list's head: what it is a list of, at which version, and where the
/// next page begins.
#[derive(Debug, Clone, Copy)]
pub struct ListHead<'a> {
    /// The resource.
    pub info: &'a ResourceInfo,
    /// The list's version.
    pub rv: ResourceVersion,
    /// The next page's token, if there are more.
    pub continue_token: Option<&'a str>,
    /// How many objects follow this page, when known.
    pub remaining: Option<u64>,
}

/// What a watch stream has written so far, which an encoder may read
/// (a table sends its column definitions with the first object only).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stream {
    /// Object events written.
    pub objects: u64,
}

/// One request's writer: every body its response carries, in one
/// encoding.
pub trait Encoder: Send + Sync + fmt::Debug {
    /// Its format's short name ([`Format::name`]).
    fn name(&self) -> &'static str;

    /// The `Content-Type` of an object or a list.
    fn content_type(&self) -> &'static str;

    /// The `Content-Type` of a watch stream.
    fn stream_content_type(&self) -> &'static str;

    /// A GET's body: one object.
    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError>;

    /// A list's body.
    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError>;

    /// Appends a watch event of `kind` carrying `item`, in a stream that
    /// has written `stream` so far; an object this encoding cannot carry
    /// is written as an `ERROR` event in its place. Callers use
    /// [`Encoder::write_event`], which keeps the stream's count.
    fn event(&self, stream: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>);

    /// [`Encoder::event`], then counts the event in `stream`.
    fn write_event(
        &self,
        stream: &mut Stream,
        buf: &mut BytesMut,
        kind: EventKind,
        item: Outgoing<'_>,
    ) {
        self.event(*stream, buf, kind, item);
        stream.objects += 1;
    }

    /// Appends a watch event whose object is the JSON `json` (a
    /// `BOOKMARK`'s object, an `ERROR`'s `Status`).
    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]);
}
