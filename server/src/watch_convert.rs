//! A watch's events whose objects a conversion webhook converts (a
//! custom resource's, `strategy: Webhook`): the events of one batch are
//! held, in order, and a future converts their objects one event at a
//! time (one `ConversionReview` each, as the apiserver's watch encodes
//! each event alone) and writes the chunk; the watch body sends nothing
//! else meanwhile. A conversion that fails ends the watch after the
//! events before it, as the apiserver's watch handler ends a watch whose
//! event it cannot encode.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use herald::{EventKind, ResourceVersion};
use herald_kube::encode::{event_type, push_event};
use herald_kube::table::{self, Printer};

use crate::crds::Converter;

/// An event of the batch being converted.
#[derive(Debug)]
pub(crate) enum Held {
    /// A bookmark's object, written as it is.
    Bookmark(Vec<u8>),
    /// An object's event: its JSON, to convert.
    Object(EventKind, ResourceVersion, Bytes),
    /// The watch's end, with the `ERROR` event's `Status` if it ended
    /// with one.
    End(Option<Vec<u8>>),
}

/// What a conversion wrote: the chunk, each event's size in it, whether
/// the table's column definitions were sent, and whether the watch ends
/// (a conversion failed, or the batch held its end).
pub(crate) struct Written {
    pub(crate) chunk: BytesMut,
    pub(crate) sizes: Vec<usize>,
    pub(crate) table: Option<bool>,
    pub(crate) ended: bool,
}

/// The future that converts and writes `held`.
pub(crate) type Converting = Pin<Box<dyn Future<Output = Written> + Send>>;

/// Writes one object's event: its JSON, or as a one-row table (`table`
/// says whether the column definitions were sent).
pub(crate) fn write_object(
    buf: &mut BytesMut,
    table: &mut Option<bool>,
    printer: &Printer,
    kind: EventKind,
    rv: ResourceVersion,
    json: &[u8],
) {
    match table {
        None => push_event(buf, event_type(kind), json),
        Some(headers_sent) => {
            let t = table::table_at(
                printer,
                serde_json::json!({"resourceVersion": rv.get().to_string()}),
                std::iter::once(json),
                !*headers_sent,
                std::time::SystemTime::now(),
            );
            *headers_sent = true;
            push_event(buf, event_type(kind), &t);
        }
    }
}

/// Converts `held` to `version` and writes it.
pub(crate) fn converting(
    converter: Arc<Converter>,
    version: String,
    printer: Arc<Printer>,
    mut table: Option<bool>,
    held: Vec<Held>,
) -> Converting {
    Box::pin(async move {
        let mut chunk = BytesMut::new();
        let mut sizes = Vec::with_capacity(held.len());
        for h in held {
            let start = chunk.len();
            match h {
                Held::Bookmark(object) => push_event(&mut chunk, "BOOKMARK", &object),
                Held::End(error) => {
                    if let Some(status) = error {
                        push_event(&mut chunk, "ERROR", &status);
                        sizes.push(chunk.len() - start);
                    }
                    return Written {
                        chunk,
                        sizes,
                        table,
                        ended: true,
                    };
                }
                Held::Object(kind, rv, json) => {
                    match converter.convert(vec![json], &version, false).await {
                        Ok(mut out) => {
                            let json = out.pop().unwrap_or_default();
                            write_object(&mut chunk, &mut table, &printer, kind, rv, &json);
                        }
                        Err(_) => {
                            return Written {
                                chunk,
                                sizes,
                                table,
                                ended: true,
                            };
                        }
                    }
                }
            }
            sizes.push(chunk.len() - start);
        }
        Written {
            chunk,
            sizes,
            table,
            ended: false,
        }
    })
}
