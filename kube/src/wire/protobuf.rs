//! The apiserver's protobuf (`application/vnd.kubernetes.protobuf`),
//! for built-in kinds, as client-go's typed clients and every controller
//! built on them ask for it:
//!
//! - an object: `k8s\0`, then a `runtime.Unknown` holding the typed
//!   message ([`crate::proto::encode`] of its JSON);
//! - a list and a watch stream's events: [`ListFrame`] and
//!   [`watch_event_head`] around those envelopes (events length-prefixed).
//!
//! Each object's envelope comes from the resource's [`Encodings`], made
//! once per change and shared.

use std::sync::Arc;

use bytes::BytesMut;
use herald::EventKind;
use serde_json::Value;

use super::encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
use super::encodings::{Encodings, envelope};
use super::range::{MediaRange, Offer};
use crate::encode::{event_type, push_event};
use crate::proto::{self, ListFrame, watch_event_head};
use crate::status::ApiError;

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The protobuf media type of a watch stream.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// `application/vnd.kubernetes.protobuf`, for a kind with a protobuf
/// form.
#[derive(Debug)]
pub(super) struct Protobuf;

impl Format for Protobuf {
    fn name(&self) -> &'static str {
        "protobuf"
    }

    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool {
        offer.protobuf
            && range.param("as").is_none()
            && range.media_type() == ("application", "vnd.kubernetes.protobuf")
    }

    fn advertised(&self, offer: Offer) -> Option<&'static str> {
        offer.protobuf.then_some(if offer.watch {
            PROTOBUF_WATCH
        } else {
            PROTOBUF
        })
    }

    fn encoder(&self, request: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        Ok(Arc::new(ProtobufEncoder {
            encodings: request.encodings.clone(),
        }))
    }

    fn status(&self, status: &Value) -> Option<(&'static str, Vec<u8>)> {
        // `v1` `Status`, enveloped as any object (a watch's error too:
        // the apiserver writes it with the non-stream serializer).
        Some((PROTOBUF, proto::encode(status.as_object()?).ok()?))
    }
}

/// Writes protobuf, each object's envelope from the resource's shared
/// [`Encodings`].
#[derive(Debug)]
struct ProtobufEncoder {
    encodings: Arc<Encodings>,
}

impl Encoder for ProtobufEncoder {
    fn name(&self) -> &'static str {
        "protobuf"
    }

    fn content_type(&self) -> &'static str {
        PROTOBUF
    }

    fn stream_content_type(&self) -> &'static str {
        PROTOBUF_WATCH
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        Ok(self.encodings.protobuf(item.object, item.json)?.to_vec())
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        let mut body = ListFrame::paged(
            &head.info.api_version(),
            &head.info.list_kind,
            head.rv.get(),
            head.continue_token,
            head.remaining,
        );
        for item in items {
            body.push(&self.encodings.protobuf(item.object, item.json)?)
                .map_err(|e| ApiError::internal(format!("an object's protobuf: {e}")))?;
        }
        Ok(body.finish())
    }

    fn event(&self, _: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        match self.encodings.protobuf(item.object, item.json) {
            Ok(pb) => push_proto(buf, event_type(kind), &pb),
            Err(e) => self.notice(buf, "ERROR", &e.to_json()),
        }
    }

    /// An object with no protobuf form (which a built-in kind's bookmark
    /// and a `Status` always have) goes as the end of the stream's JSON,
    /// which a protobuf client reports as a decoding error rather than
    /// misread.
    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        match envelope(json) {
            Ok(pb) => push_proto(buf, kind, &pb),
            Err(_) => push_event(buf, kind, json),
        }
    }
}

/// Appends a protobuf watch event whose object's envelope is `pb` (the
/// shared envelope copied once, into the chunk).
pub(super) fn push_proto(buf: &mut BytesMut, kind: &str, pb: &[u8]) {
    buf.extend_from_slice(&watch_event_head(kind, pb.len()));
    buf.extend_from_slice(pb);
}
