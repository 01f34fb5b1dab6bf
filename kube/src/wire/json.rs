//! JSON: an object as its JSON (the stored payload, copied), a list as
//! [`ListBody`] writes it, a watch stream as JSON lines
//! (`{"type":T,"object":O}\n`). Every body ends with a newline, as the
//! apiserver's (Go's `json.Encoder`) does.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use herald::EventKind;

use super::encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
use super::range::{MediaRange, Offer};
use crate::encode::{ListBody, event_type, push_event};
use crate::status::ApiError;

/// `application/json` (and `*/*`; `application/*` for a kind with no
/// protobuf form: the apiserver's handler of built-in kinds takes it
/// for none of its types).
#[derive(Debug)]
pub(super) struct Json;

impl Format for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool {
        range.param("as").is_none()
            && match range.media_type() {
                ("application", "json") | ("*", "*") => true,
                ("application", "*") => !offer.protobuf,
                _ => false,
            }
    }

    fn advertised(&self, offer: Offer) -> Option<&'static str> {
        Some(if offer.watch {
            "application/json;stream=watch"
        } else {
            "application/json"
        })
    }

    fn encoder(&self, _: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        Ok(Arc::new(JsonEncoder))
    }
}

/// Writes JSON.
#[derive(Debug)]
pub(super) struct JsonEncoder;

/// A list's JSON body (with its newline).
pub(super) fn list_body(head: ListHead<'_>, items: &[Outgoing<'_>]) -> Bytes {
    let mut body = ListBody::paged(head.info, head.rv, head.continue_token, head.remaining);
    for item in items {
        body.push(item.json.bytes());
    }
    body.finish()
}

impl Encoder for JsonEncoder {
    fn name(&self) -> &'static str {
        "json"
    }

    fn content_type(&self) -> &'static str {
        "application/json"
    }

    fn stream_content_type(&self) -> &'static str {
        "application/json"
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        let json = item.json.bytes();
        let mut body = Vec::with_capacity(json.len() + 1);
        body.extend_from_slice(json);
        body.push(b'\n');
        Ok(body)
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        Ok(list_body(head, items).into())
    }

    fn event(&self, _: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        push_event(buf, event_type(kind), item.json.bytes());
    }

    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        push_event(buf, kind, json);
    }
}
