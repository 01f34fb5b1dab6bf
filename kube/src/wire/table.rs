//! `meta.k8s.io/v1` `Table`s (`application/json;as=Table;v=v1;g=meta.k8s.io`),
//! as `kubectl get` asks for them: a GET's object and a list's items as
//! rows printed by the resource's printer, embedding what the request's
//! `includeObject` asks for; a watch's events each a one-row table, the
//! column definitions with the first object only. Ages are printed as
//! they are when the body is written.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::BytesMut;
use herald::EventKind;
use serde_json::json;

use super::encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
use super::json::JsonEncoder;
use super::range::{MediaRange, Offer};
use crate::encode::{event_type, push_event};
use crate::status::ApiError;
use crate::table::{CONTENT_TYPE, Printer, list_table_at, table_at};

/// `application/json;as=Table;v=v1;g=meta.k8s.io`.
#[derive(Debug)]
pub(super) struct Tables;

impl Format for Tables {
    fn name(&self) -> &'static str {
        "table"
    }

    fn takes(&self, range: &MediaRange<'_>, _: Offer) -> bool {
        range.param("as") == Some("Table")
            && range.media_type() == ("application", "json")
            && range.param("g") == Some("meta.k8s.io")
            && range.param("v") == Some("v1")
    }

    /// The apiserver's 406 does not name tables.
    fn advertised(&self, _: Offer) -> Option<&'static str> {
        None
    }

    fn encoder(&self, request: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        let printer = request
            .printer
            .for_request(request.include_object, request.info)?;
        Ok(Arc::new(TableEncoder { printer }))
    }
}

/// Writes tables with one request's printer.
#[derive(Debug)]
struct TableEncoder {
    printer: Printer,
}

impl Encoder for TableEncoder {
    fn name(&self) -> &'static str {
        "table"
    }

    fn content_type(&self) -> &'static str {
        CONTENT_TYPE
    }

    fn stream_content_type(&self) -> &'static str {
        JsonEncoder.stream_content_type()
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        let mut body = table_at(
            &self.printer,
            json!({"resourceVersion": item.rv.get().to_string()}),
            std::iter::once(&item.json.bytes()[..]),
            true,
            SystemTime::now(),
        );
        body.push(b'\n');
        Ok(body)
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        let mut metadata = json!({"resourceVersion": head.rv.get().to_string()});
        if let Some(t) = head.continue_token {
            metadata["continue"] = json!(t);
        }
        if let Some(n) = head.remaining {
            metadata["remainingItemCount"] = json!(n);
        }
        let mut body = list_table_at(
            &self.printer,
            metadata,
            items.iter().map(|i| &i.json.bytes()[..]),
            true,
            SystemTime::now(),
        );
        body.push(b'\n');
        Ok(body)
    }

    fn event(&self, stream: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        let t = table_at(
            &self.printer,
            json!({"resourceVersion": item.rv.get().to_string()}),
            std::iter::once(&item.json.bytes()[..]),
            stream.objects == 0,
            SystemTime::now(),
        );
        push_event(buf, event_type(kind), &t);
    }

    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        JsonEncoder.notice(buf, kind, json);
    }
}
