//! Per-object watches from a remote Herald (or any apiserver) over the
//! Kubernetes list/watch API, as a kubelet opens them.
//!
//! Each watch is `GET /api/v1/namespaces/{ns}/{resource}?watch=1` with
//! `fieldSelector=metadata.name=<name>`, `sendInitialEvents=true`,
//! `resourceVersionMatch=NotOlderThan` and `allowWatchBookmarks=true`:
//! the object's state as `ADDED` (or nothing), a `BOOKMARK` annotated
//! `k8s.io/initial-events-end`, then its changes. A task on the
//! upstream's own runtime reads the chunked JSON lines and hands updates
//! to the manager through a small channel, so a manager that does not
//! keep up slows the reading of that one connection only.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use herald::{Object, ResourceVersion};
use herald_kube::Decoder;
use http_body_util::{BodyExt, Empty};
use hyper::{Request, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::upstream::{ObjectStream, Update, Upstream, object_key};

/// The longest watch line read (a Secret is at most 1 MiB; its JSON
/// encoding a little more).
const MAX_LINE: usize = 8 << 20;

/// Updates buffered per watch between its task and the manager.
const CHANNEL: usize = 16;

/// Why a [`RemoteUpstream`] could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum RemoteError {
    /// The base address is not an `http://host[:port]` URL.
    InvalidUrl(String),
    /// The resource is not a plural resource name (`secrets`).
    InvalidResource(String),
    /// The runtime's thread could not start.
    Runtime(std::io::Error),
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::InvalidUrl(why) => write!(f, "invalid base URL: {why}"),
            RemoteError::InvalidResource(r) => {
                write!(
                    f,
                    "invalid resource {r:?}: a lower-case plural name such as secrets"
                )
            }
            RemoteError::Runtime(e) => write!(f, "cannot start the HTTP runtime: {e}"),
        }
    }
}

impl std::error::Error for RemoteError {}

/// Per-object watches of a core v1 resource served over HTTP/1.1
/// (`herald-server`, or an apiserver without authentication).
///
/// It runs one tokio thread of its own; each watch is a task and a
/// connection (HTTP/1.1 has no streams to share one).
#[derive(Debug)]
pub struct RemoteUpstream {
    base: String,
    resource: String,
    decoder: Decoder,
    client: Client<HttpConnector, Empty<Bytes>>,
    runtime: tokio::runtime::Runtime,
}

impl RemoteUpstream {
    /// Watches `resource` (`secrets`, `configmaps`) at `base`
    /// (`http://127.0.0.1:8080`). Objects are decoded with `decoder` plus
    /// the field `immutable` (for
    /// [`is_immutable`](crate::is_immutable)).
    pub fn new(
        base: &str,
        resource: &str,
        decoder: Decoder,
    ) -> Result<RemoteUpstream, RemoteError> {
        let base = base.trim_end_matches('/');
        let uri: Uri = base
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| RemoteError::InvalidUrl(e.to_string()))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(RemoteError::InvalidUrl(format!(
                "{base:?}: http://host[:port] expected (no TLS here)"
            )));
        }
        if uri.path() != "/" && !uri.path().is_empty() || uri.query().is_some() {
            return Err(RemoteError::InvalidUrl(format!(
                "{base:?}: no path or query expected"
            )));
        }
        if resource.is_empty() || !resource.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(RemoteError::InvalidResource(resource.to_owned()));
        }
        let decoder = if decoder.fields().any(|f| f == "immutable") {
            decoder
        } else {
            decoder.field("immutable")
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("herald-remote")
            .enable_all()
            .build()
            .map_err(RemoteError::Runtime)?;
        let client = Client::builder(TokioExecutor::new()).build_http();
        Ok(RemoteUpstream {
            base: base.to_owned(),
            resource: resource.to_owned(),
            decoder,
            client,
            runtime,
        })
    }

    fn watch_uri(&self, namespace: &str, name: &str) -> Result<Uri, String> {
        let scope = if namespace.is_empty() {
            String::new()
        } else {
            format!("/namespaces/{}", percent(namespace))
        };
        let selector = crate::upstream::object_selector(name)
            .map_err(|e| e.to_string())?
            .to_string();
        format!(
            "{}/api/v1{scope}/{}?watch=1&fieldSelector={}&sendInitialEvents=true\
             &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            self.base,
            self.resource,
            percent(&selector)
        )
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| e.to_string())
    }
}

impl Upstream for RemoteUpstream {
    fn watch_object(&self, namespace: &str, name: &str) -> ObjectStream {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let uri = match self.watch_uri(namespace, name) {
            Ok(uri) => uri,
            Err(why) => {
                // Capacity for one: cannot fail.
                let _ = tx.try_send(Update::Ended(why));
                return Box::pin(RemoteStream { rx, task: None });
            }
        };
        let reader = Reader {
            key: object_key(namespace, name),
            decoder: self.decoder.clone(),
            tx,
            initial: None,
            synced: false,
        };
        let task = self.runtime.spawn(reader.run(self.client.clone(), uri));
        Box::pin(RemoteStream {
            rx,
            task: Some(task.abort_handle()),
        })
    }
}

/// The manager's end of one watch; dropping it aborts the task, which
/// closes the connection.
struct RemoteStream {
    rx: mpsc::Receiver<Update>,
    task: Option<tokio::task::AbortHandle>,
}

impl Stream for RemoteStream {
    type Item = Update;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Update>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for RemoteStream {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// One watch's task.
struct Reader {
    key: String,
    decoder: Decoder,
    tx: mpsc::Sender<Update>,
    initial: Option<Object>,
    synced: bool,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    metadata: MetaFields,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct MetaFields {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<HashMap<String, String>>,
}

impl Reader {
    async fn run(mut self, client: Client<HttpConnector, Empty<Bytes>>, uri: Uri) {
        let why = self.read(client, uri).await;
        // The manager may have dropped its end: nothing to tell then.
        let _ = self.tx.send(Update::Ended(why)).await;
    }

    /// Reads the watch until it ends; returns why.
    async fn read(&mut self, client: Client<HttpConnector, Empty<Bytes>>, uri: Uri) -> String {
        let req = match Request::get(uri)
            .header("accept", "application/json")
            .body(Empty::new())
        {
            Ok(req) => req,
            Err(e) => return format!("request: {e}"),
        };
        let resp = match client.request(req).await {
            Ok(resp) => resp,
            Err(e) => return format!("request failed: {e}"),
        };
        let status = resp.status();
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        if status != StatusCode::OK {
            while let Some(Ok(frame)) = body.frame().await {
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
                if buf.len() > 64 << 10 {
                    break;
                }
            }
            let message = serde_json::from_slice::<Meta>(&buf)
                .ok()
                .and_then(|m| m.message)
                .unwrap_or_else(|| String::from_utf8_lossy(&buf).into_owned());
            return format!("HTTP {status}: {message}");
        }
        loop {
            let frame = match body.frame().await {
                None => return "the server closed the watch".into(),
                Some(Err(e)) => return format!("reading the watch: {e}"),
                Some(Ok(frame)) => frame,
            };
            let Some(data) = frame.data_ref() else {
                continue;
            };
            buf.extend_from_slice(data);
            let mut start = 0;
            while let Some(end) = buf[start..].iter().position(|&b| b == b'\n') {
                let line = &buf[start..start + end];
                start += end + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match self.line(line) {
                    Ok(Some(update)) => {
                        if self.tx.send(update).await.is_err() {
                            return "the manager stopped the watch".into();
                        }
                    }
                    Ok(None) => {}
                    Err(why) => return why,
                }
            }
            buf.drain(..start);
            if buf.len() > MAX_LINE {
                return format!("a watch line longer than {MAX_LINE} bytes");
            }
        }
    }

    /// One watch event: the update it makes, if any, or why the watch
    /// cannot go on.
    fn line(&mut self, line: &[u8]) -> Result<Option<Update>, String> {
        let line: Line<'_> =
            serde_json::from_slice(line).map_err(|e| format!("a malformed watch line: {e}"))?;
        let raw = line.object.get().as_bytes();
        let meta: Meta = serde_json::from_slice(raw)
            .map_err(|e| format!("a malformed {} object: {e}", line.kind))?;
        let object = || -> Result<Object, String> {
            let rv = meta
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or("")
                .parse::<ResourceVersion>()
                .map_err(|e| format!("{} without a valid resourceVersion: {e}", line.kind))?;
            self.decoder
                .decode(self.key.as_bytes(), raw, rv)
                .map_err(|e| format!("an undecodable {} object: {e}", line.kind))
        };
        Ok(match (line.kind, self.synced) {
            ("ADDED" | "MODIFIED", false) => {
                self.initial = Some(object()?);
                None
            }
            ("ADDED" | "MODIFIED", true) => Some(Update::Put(object()?)),
            ("DELETED", false) => {
                self.initial = None;
                None
            }
            ("DELETED", true) => Some(Update::Deleted),
            ("BOOKMARK", false) => {
                let end = meta
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("k8s.io/initial-events-end"))
                    .is_some_and(|v| v == "true");
                if end {
                    self.synced = true;
                    Some(Update::Synced(self.initial.take()))
                } else {
                    None
                }
            }
            ("BOOKMARK", true) => None,
            ("ERROR", _) => {
                return Err(format!(
                    "the server ended the watch: {}",
                    meta.message.as_deref().unwrap_or("(no message)")
                ));
            }
            (other, _) => return Err(format!("an unknown watch event type {other:?}")),
        })
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let r = RemoteUpstream::new("http://127.0.0.1:8080/", "secrets", Decoder::new()).unwrap();
        assert_eq!(
            r.watch_uri("prod", "a b,c").unwrap().to_string(),
            "http://127.0.0.1:8080/api/v1/namespaces/prod/secrets?watch=1\
             &fieldSelector=metadata.name%3Da%20b%5C%2Cc&sendInitialEvents=true\
             &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        );
        assert!(
            r.watch_uri("", "n")
                .unwrap()
                .path()
                .ends_with("/api/v1/secrets")
        );
        for bad in [
            "",
            "ftp://x",
            "http://",
            "http://h/p",
            "http://h?q=1",
            "not a url",
        ] {
            assert!(
                matches!(
                    RemoteUpstream::new(bad, "secrets", Decoder::new()),
                    Err(RemoteError::InvalidUrl(_))
                ),
                "{bad:?}"
            );
        }
        for bad in ["", "Secrets", "a/b", "x?y"] {
            assert!(matches!(
                RemoteUpstream::new("http://h", bad, Decoder::new()),
                Err(RemoteError::InvalidResource(_))
            ));
        }
    }

    fn reader() -> Reader {
        let (tx, _rx) = mpsc::channel(1);
        Reader {
            key: "ns/a".into(),
            decoder: Decoder::new().field("immutable"),
            tx,
            initial: None,
            synced: false,
        }
    }

    #[test]
    fn lines() {
        let mut r = reader();
        let obj =
            r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"immutable":true}"#;
        let added = format!(r#"{{"type":"ADDED","object":{obj}}}"#);
        assert_eq!(r.line(added.as_bytes()), Ok(None));
        let end = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        let Ok(Some(Update::Synced(Some(o)))) = r.line(end.as_bytes()) else {
            panic!("no sync")
        };
        assert_eq!((o.name(), o.field("immutable")), ("a", Some("true")));
        let del = format!(r#"{{"type":"DELETED","object":{obj}}}"#);
        assert_eq!(r.line(del.as_bytes()), Ok(Some(Update::Deleted)));
        let err =
            r#"{"type":"ERROR","object":{"kind":"Status","message":"too old resource version"}}"#;
        assert!(
            r.line(err.as_bytes())
                .unwrap_err()
                .contains("too old resource version")
        );
        // Hostile lines end the watch with a reason; none panics.
        let other = r#"{"type":"ADDED","object":{"metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}"#;
        for bad in [
            "{",
            r#"{"type":"ADDED"}"#,
            r#"{"type":"NOPE","object":{}}"#,
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns"}}}"#,
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"x"}}}"#,
            r#"{"type":"MODIFIED","object":[1]}"#,
            other,
        ] {
            assert!(r.line(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
