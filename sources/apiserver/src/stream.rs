//! An open watch stream: its body, split into events as they come
//! ([`frames::Splitter`]), read one event at a time ([`OpenStream::next`],
//! safe to drop mid-read: nothing read is lost while the stream lives).
//! Shared by watches and by lists made as watch-lists.

use futures_util::StreamExt;
use http::StatusCode;
use http_body_util::{BodyDataStream, BodyExt};
use kube_client::client::Body;

use crate::conn::{Conn, Failure, content_type, is_protobuf, status_failure};
use crate::frames::{self, Splitter};

/// The longest event read (a Secret is at most 1 MiB; its JSON a little
/// more; a CRD's schema can be several).
const MAX_EVENT: usize = 16 << 20;

/// A stream the apiserver answered 200 to.
pub(crate) struct OpenStream {
    body: BodyDataStream<Body>,
    split: Splitter,
    protobuf: bool,
    /// The request, for messages.
    pub(crate) uri: String,
}

impl std::fmt::Debug for OpenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenStream")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

/// Why a stream could not be opened: the status (none when there was no
/// answer) and what it means.
pub(crate) type Refused = (Option<StatusCode>, Failure);

impl OpenStream {
    /// Sends the watch `uri`; its stream, or the answer read as a
    /// `Status`.
    pub(crate) async fn open(
        conn: &Conn,
        uri: String,
        accept: &str,
    ) -> Result<OpenStream, Refused> {
        let response = conn.send(&uri, accept).await.map_err(|e| (None, e))?;
        let status = response.status();
        let protobuf = is_protobuf(&content_type(&response));
        let mut body = response.into_body().into_data_stream();
        if status != StatusCode::OK {
            let mut bytes = Vec::new();
            while let Some(Ok(chunk)) = body.next().await {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > 1 << 20 {
                    break;
                }
            }
            return Err((Some(status), status_failure(&uri, status, &bytes)));
        }
        Ok(OpenStream {
            body,
            split: Splitter::new(protobuf, MAX_EVENT),
            protobuf,
            uri,
        })
    }

    /// The next event; `None` when the apiserver ended the stream between
    /// events; an error when it ended inside one, failed, or sent bytes
    /// that are not an event.
    pub(crate) async fn next(&mut self) -> Result<Option<frames::Event>, String> {
        loop {
            if let Some(frame) = self
                .split
                .next_frame()
                .map_err(|e| format!("GET {}: {e}", self.uri))?
            {
                return frames::event(self.protobuf, &frame)
                    .map(Some)
                    .map_err(|e| format!("GET {}: {e}", self.uri));
            }
            match self.body.next().await {
                None if self.split.partial() => {
                    return Err(format!(
                        "GET {}: the stream ended inside an event",
                        self.uri
                    ));
                }
                None => return Ok(None),
                Some(Err(e)) => return Err(format!("GET {}: the stream: {e}", self.uri)),
                Some(Ok(chunk)) => self.split.push(&chunk),
            }
        }
    }
}
