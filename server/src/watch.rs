//! A watch response's body: a Herald [`Watch`] read as the client's
//! socket takes it.
//!
//! Served by [`crate::Server::serve`], the body hands hyper a new chunk
//! only while its connection holds less than
//! [`ServerConfig::watch_in_flight_bytes`](crate::ServerConfig) (64 KiB)
//! not yet written to the socket, and sizes the chunk to what that leaves
//! (at least one event): a client that does not read stops the body, the
//! watch's backlog stays in the engine, where the slow-watcher policy
//! bounds it (a parked watcher reads the shared history; one the history
//! outruns ends `Gone`), and what the connection holds of its own is that
//! many bytes plus one event, the engine's watch handle and hyper's
//! buffers (see the module `conn`).
//!
//! Each poll visits up to [`BATCH`] events with `Watch::poll_visit_batch`
//! (the connection's task is the waker: an idle watch costs the runtime
//! nothing) and writes them as one chunk with the request's
//! [`Encoder`] (JSON lines, protobuf frames, one-row tables: see
//! [`herald_kube::wire`]); an object's JSON is its stored payload,
//! copied, never encoded here (see [`herald_kube::encode`]), and its
//! protobuf is made once per change and shared.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use herald::{EventKind, Watch};
use herald_kube::encode::{ObjectJson, bookmark_object, event_object};
use herald_kube::wire::{Encoder, Outgoing, Stream};
use herald_kube::{ApiError, end_error};
use http_body::{Body, Frame};

use crate::access::Revocation;
use crate::admit::WatchTicket;
use crate::conn::Flight;
use crate::counts::{OpenWatch, Tally};
use crate::open_watches::Registered;
use crate::resource::Resource;
use crate::watch_convert::{Converting, Held, converting};

/// Events written per chunk at most.
pub const BATCH: usize = 64;

/// The body of a watch response.
pub struct WatchBody {
    watch: Option<Watch>,
    /// An error to send as the only event (a watch refused after the
    /// response began, as the apiserver's error watcher does).
    error: Option<ApiError>,
    resource: Resource,
    tally: Tally,
    buf: BytesMut,
    /// What the connection holds in flight, and the most it may, when
    /// served by [`crate::Server::serve`].
    flight: Option<(Arc<Flight>, usize)>,
    /// The mean size of an event written (bytes, a moving average): how
    /// many events a chunk may carry.
    mean_event: usize,
    /// The watch's admission (counted until the body is dropped).
    _ticket: Option<WatchTicket>,
    /// How its events are written (the request's negotiated encoding:
    /// JSON lines, length-prefixed protobuf `WatchEvent`s, one-row
    /// tables), and what the stream has written so far.
    encoder: Arc<dyn Encoder>,
    stream: Stream,
    /// Decides again when the RBAC snapshot changes (see the module
    /// `access`): a watch its user may no longer make ends with a 403.
    revocation: Option<Revocation>,
    /// Its row in `/debug/herald/watches` (see the module `open_watches`).
    registered: Option<Registered>,
    /// A batch whose objects a conversion webhook is converting (see
    /// the module `watch_convert`): nothing else is sent meanwhile.
    converting: Option<Converting>,
    _open: OpenWatch,
}

impl std::fmt::Debug for WatchBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchBody")
            .field("resource", &self.resource.info.plural)
            .field("open", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

impl WatchBody {
    /// Streams `watch`, its events written by `encoder`.
    pub fn new(resource: Resource, watch: Watch, encoder: Arc<dyn Encoder>) -> WatchBody {
        WatchBody::with(resource, Some(watch), None, encoder)
    }

    /// A stream of one `ERROR` event (`Status`), then the end.
    pub fn error(resource: Resource, error: ApiError, encoder: Arc<dyn Encoder>) -> WatchBody {
        WatchBody::with(resource, None, Some(error), encoder)
    }

    fn with(
        resource: Resource,
        watch: Option<Watch>,
        error: Option<ApiError>,
        encoder: Arc<dyn Encoder>,
    ) -> WatchBody {
        WatchBody {
            _open: resource.metrics.watch_opened(),
            watch,
            error,
            resource,
            tally: Tally::default(),
            buf: BytesMut::new(),
            flight: None,
            mean_event: 1024,
            _ticket: None,
            encoder,
            stream: Stream::default(),
            revocation: None,
            registered: None,
            converting: None,
        }
    }

    /// Shows the watch in `/debug/herald/watches` until the body drops.
    pub(crate) fn registered(mut self, registered: Registered) -> WatchBody {
        self.registered = Some(registered);
        self
    }

    /// Ends the watch with a 403 `ERROR` event when a new RBAC snapshot
    /// no longer allows it.
    pub(crate) fn revocable(mut self, revocation: Revocation) -> WatchBody {
        self.revocation = Some(revocation);
        self
    }

    /// Writes only while `flight` holds less than `limit` bytes (see the
    /// module's docs), and marks it a watch's.
    pub(crate) fn in_flight(mut self, flight: Arc<Flight>, limit: usize) -> WatchBody {
        flight.set_watch(self.resource.metrics.clone());
        self.flight = Some((flight, limit.max(1)));
        self
    }

    /// Keeps the watch's admission until the body is dropped.
    pub(crate) fn admitted(mut self, ticket: WatchTicket) -> WatchBody {
        self._ticket = Some(ticket);
        self
    }

    fn take_chunk(&mut self) -> Option<Bytes> {
        if self.buf.is_empty() {
            self.resource.metrics.flush(&mut self.tally);
            return None;
        }
        self.tally.chunk();
        self.resource.metrics.flush(&mut self.tally);
        Some(self.buf.split().freeze())
    }

    fn chunk_frame(&mut self) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.take_chunk().map(|b| Ok(Frame::data(b))))
    }
}

impl Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(Poll::Ready(refused)) = this.revocation.as_mut().map(|r| r.poll_revoked(cx)) {
            this.revocation = None;
            // Dropping the watch ends it in the engine.
            this.watch = None;
            this.resource.metrics.watch_revoked();
            this.error = Some(refused);
        }
        // Events this chunk may carry: what the bytes in flight leave room
        // for, at the mean event size, at least one.
        let mut max = BATCH;
        if let Some((flight, limit)) = &this.flight {
            match flight.poll_room(cx, *limit) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(room) => max = (room / this.mean_event.max(1)).clamp(1, BATCH),
            }
        }
        if let Some(error) = this.error.take() {
            let start = this.buf.len();
            this.encoder
                .notice(&mut this.buf, "ERROR", &error.to_json());
            this.tally.event(this.buf.len() - start);
            return this.chunk_frame();
        }
        if let Some(conversion) = this.converting.as_mut() {
            let Poll::Ready(written) = conversion.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            this.converting = None;
            this.buf.extend_from_slice(&written.chunk);
            for size in written.sizes {
                this.tally.event(size);
            }
            this.stream = written.stream;
            if written.ended {
                this.watch = None;
            }
            return this.chunk_frame();
        }
        let Some(watch) = this.watch.as_mut() else {
            return Poll::Ready(None);
        };
        let info = &this.resource.info;
        let restamps = &this.resource.restamps;
        let converter = this.resource.converter.as_ref();
        let webhook = converter.is_some_and(|c| c.calls_webhook());
        let mut held = Vec::new();
        let encoder = &this.encoder;
        let (buf, tally, stream) = (&mut this.buf, &mut this.tally, &mut this.stream);
        let mut last_rv = 0;
        let polled = watch.poll_visit_batch(cx, max, |ev| {
            let start = buf.len();
            let rv = ev.resource_version();
            last_rv = rv.get();
            match (ev.kind(), ev.object()) {
                (EventKind::Bookmark, _) | (_, None) => {
                    let object = bookmark_object(info, rv, ev.is_initial_events_end());
                    if webhook {
                        held.push(Held::Bookmark(object));
                        return;
                    }
                    encoder.notice(buf, "BOOKMARK", &object);
                }
                (kind, Some(object)) => {
                    let json = event_object(info, restamps, kind, object, rv);
                    if matches!(json, ObjectJson::Described(_)) {
                        tally.described();
                    }
                    if webhook {
                        held.push(Held::Object(kind, rv, json.bytes().clone()));
                        return;
                    }
                    // `strategy: None`: the `apiVersion` asked.
                    let json = match converter.and_then(|c| c.nop(json.bytes(), &info.version)) {
                        Some(converted) => ObjectJson::Restamped(converted),
                        None => json,
                    };
                    let item = Outgoing {
                        object: Some(object),
                        json: &json,
                        rv,
                    };
                    encoder.write_event(stream, buf, kind, item);
                }
            }
            tally.event(buf.len() - start);
        });
        if !held.is_empty()
            && let Some(converter) = converter
        {
            if let Poll::Ready(visited) = &polled {
                if let Some(r) = this.registered.as_ref().filter(|_| visited.events > 0) {
                    r.busy();
                    r.sent(last_rv);
                }
                if let Some(end) = &visited.end {
                    held.push(Held::End(end_error(end).map(|e| e.to_json())));
                }
            }
            this.converting = Some(converting(
                converter.clone(),
                info.version.clone(),
                this.encoder.clone(),
                this.stream,
                held,
            ));
            // The batch's events go out when it is done (polled now,
            // which registers its waker).
            return Pin::new(this).poll_frame(cx);
        }
        match polled {
            Poll::Pending => {
                if let Some(r) = &this.registered {
                    r.idle();
                }
                Poll::Pending
            }
            Poll::Ready(visited) => {
                if let Some(r) = this.registered.as_ref().filter(|_| visited.events > 0) {
                    r.busy();
                    r.sent(last_rv);
                }
                if let Some(mean) = this.buf.len().checked_div(visited.events) {
                    this.mean_event = (this.mean_event * 3 + mean) / 4;
                }
                if let Some(end) = visited.end {
                    if let Some(error) = end_error(&end) {
                        let start = this.buf.len();
                        this.encoder
                            .notice(&mut this.buf, "ERROR", &error.to_json());
                        this.tally.event(this.buf.len() - start);
                    }
                    this.watch = None;
                } else if visited.events == 0 {
                    // Finished earlier: nothing more will come.
                    this.watch = None;
                }
                this.chunk_frame()
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.watch.is_none() && self.error.is_none() && self.buf.is_empty()
    }
}
