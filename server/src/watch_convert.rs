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
use herald_kube::encode::ObjectJson;
use herald_kube::wire::{Encoder, Outgoing, Stream};

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

/// What a conversion wrote: the chunk, each event's size in it, the
/// stream's state after it, and whether the watch ends (a conversion
/// failed, or the batch held its end).
pub(crate) struct Written {
    pub(crate) chunk: BytesMut,
    pub(crate) sizes: Vec<usize>,
    pub(crate) stream: Stream,
    pub(crate) ended: bool,
}

/// The future that converts and writes `held`.
pub(crate) type Converting = Pin<Box<dyn Future<Output = Written> + Send>>;

/// Converts `held` to `version` and writes it with `encoder`, in a
/// stream that has written `stream` so far.
pub(crate) fn converting(
    converter: Arc<Converter>,
    version: String,
    encoder: Arc<dyn Encoder>,
    mut stream: Stream,
    held: Vec<Held>,
) -> Converting {
    Box::pin(async move {
        let mut chunk = BytesMut::new();
        let mut sizes = Vec::with_capacity(held.len());
        for h in held {
            let start = chunk.len();
            match h {
                Held::Bookmark(object) => encoder.notice(&mut chunk, "BOOKMARK", &object),
                Held::End(error) => {
                    if let Some(status) = error {
                        encoder.notice(&mut chunk, "ERROR", &status);
                        sizes.push(chunk.len() - start);
                    }
                    return Written {
                        chunk,
                        sizes,
                        stream,
                        ended: true,
                    };
                }
                Held::Object(kind, rv, json) => {
                    match converter.convert(vec![json], &version, false).await {
                        Ok(mut out) => {
                            let json = ObjectJson::Described(out.pop().unwrap_or_default());
                            let item = Outgoing {
                                object: None,
                                json: &json,
                                rv,
                            };
                            encoder.write_event(&mut stream, &mut chunk, kind, item);
                        }
                        Err(_) => {
                            return Written {
                                chunk,
                                sizes,
                                stream,
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
            stream,
            ended: false,
        }
    })
}
