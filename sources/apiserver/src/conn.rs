//! One connection to the apiserver, shared by every resource's source:
//! kube-rs's client (TLS, credentials, connection pool) on a tokio
//! runtime ([`Bridge`]: its own, or one it is given), and the requests
//! the sources make, with their answers mapped to [`Failure`]s.

use std::future::Future;
use std::num::NonZeroUsize;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use herald_bridge::Bridge;
use herald_kube::proto;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use kube_client::client::Body;
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use serde_json::Value;

use crate::config::{ApiServerConfig, ConnectError};

/// The media types asked for.
pub(crate) const JSON: &str = "application/json";
/// Protobuf where the kind has it, JSON where not (client-go's typed
/// clients send the same).
pub(crate) const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// 410 Gone (a version or continue token too old), with the
    /// apiserver's message.
    Gone(String),
    /// Anything else: no answer, a 5xx, a 429, a refusal, a body that is
    /// not what was asked for. The message says which.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Gone(why) => write!(f, "410 Gone: {why}"),
            Failure::Other(why) => f.write_str(why),
        }
    }
}

/// The client, its runtime, the settings.
pub(crate) struct Conn {
    client: Client,
    bridge: Bridge,
    pub(crate) config: ApiServerConfig,
    /// The cluster's address, for messages.
    pub(crate) url: String,
    /// The apiserver's `/version` `gitVersion`.
    pub(crate) version: String,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("url", &self.url)
            .field("version", &self.version)
            .field("bridge", &self.bridge)
            .finish_non_exhaustive()
    }
}

/// The workers of a runtime of the connection's own: they run the
/// client's connections and every watch's task (`watch.rs`).
const WORKERS: NonZeroUsize = NonZeroUsize::new(2).unwrap();

/// A runtime of the connection's own ([`WORKERS`], `herald-apiserver`).
pub(crate) fn own_runtime() -> Result<Bridge, ConnectError> {
    Bridge::new("herald-apiserver", WORKERS).map_err(ConnectError::Runtime)
}

impl Conn {
    /// Reads the configuration, connects on `bridge`'s runtime, and asks
    /// `/version`.
    pub(crate) fn connect(config: ApiServerConfig, bridge: Bridge) -> Result<Conn, ConnectError> {
        let kube = bridge.block_on(load(&config))?;
        let url = kube.cluster_url.to_string();
        let client = {
            // The client's tower stack spawns onto the current runtime.
            let _enter = bridge.enter();
            Client::try_from(kube).map_err(|e| ConnectError::Config(e.to_string()))?
        };
        let mut conn = Conn {
            client,
            bridge,
            config,
            url,
            version: String::new(),
        };
        let version = conn
            .block(conn.get("/version", JSON))
            .map_err(|e| ConnectError::Unreachable(format!("{} /version: {e}", conn.url)))?;
        let v: Value = serde_json::from_slice(&version.1).map_err(|e| {
            ConnectError::Unreachable(format!("{} /version is not JSON: {e}", conn.url))
        })?;
        conn.version = v["gitVersion"].as_str().unwrap_or("unknown").to_owned();
        Ok(conn)
    }

    /// Runs `f` on the connection's runtime and waits for it, from any
    /// thread ([`Bridge::block_on`]).
    pub(crate) fn block<F>(&self, f: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        self.bridge.block_on(f)
    }

    /// Starts `f` on the connection's runtime.
    pub(crate) fn spawn<F>(&self, f: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.bridge.spawn(f);
    }

    /// The runtime the connection runs on.
    pub(crate) fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    /// Sends a GET for `uri` (a path and query) accepting `accept`.
    pub(crate) async fn send(&self, uri: &str, accept: &str) -> Result<Response<Body>, Failure> {
        let request = Request::get(uri)
            .header(header::ACCEPT, accept)
            .body(Body::empty())
            .map_err(|e| Failure::Other(format!("GET {uri}: {e}")))?;
        self.client
            .send(request)
            .await
            .map_err(|e| Failure::Other(format!("GET {uri}: {e}")))
    }

    /// A GET's whole body, with its content type, or why not: a status
    /// other than 200 is read as the apiserver's `Status`.
    pub(crate) async fn get(&self, uri: &str, accept: &str) -> Result<(String, Bytes), Failure> {
        let within = self.config.request_timeout;
        let read = async {
            let response = self.send(uri, accept).await?;
            let status = response.status();
            let content_type = content_type(&response);
            let body = read_body(response.into_body(), self.config.max_body)
                .await
                .map_err(|e| Failure::Other(format!("GET {uri}: the body: {e}")))?;
            if status != StatusCode::OK {
                return Err(status_failure(uri, status, &body));
            }
            Ok((content_type, body))
        };
        match tokio::time::timeout(within, read).await {
            Ok(got) => got,
            Err(_) => Err(Failure::Other(format!(
                "GET {uri}: no answer within {within:?}"
            ))),
        }
    }
}

impl Conn {
    /// POSTs `body` (JSON) to `path` and reads the `201`/`200` answer as
    /// JSON, within the request timeout.
    pub(crate) async fn post(&self, path: &str, body: Vec<u8>) -> Result<Value, Failure> {
        let within = self.config.request_timeout;
        let call = async {
            let request = Request::post(path)
                .header(header::ACCEPT, JSON)
                .header(header::CONTENT_TYPE, JSON)
                .body(Body::from(body))
                .map_err(|e| Failure::Other(format!("POST {path}: {e}")))?;
            let response = self
                .client
                .send(request)
                .await
                .map_err(|e| Failure::Other(format!("POST {path}: {e}")))?;
            let status = response.status();
            let body = read_body(response.into_body(), self.config.max_body)
                .await
                .map_err(|e| Failure::Other(format!("POST {path}: the body: {e}")))?;
            if status != StatusCode::CREATED && status != StatusCode::OK {
                let why = status_message(&body).unwrap_or_else(|| "no Status".into());
                return Err(Failure::Other(format!("POST {path}: {status}: {why}")));
            }
            serde_json::from_slice(&body)
                .map_err(|e| Failure::Other(format!("POST {path}: not JSON: {e}")))
        };
        match tokio::time::timeout(within, call).await {
            Ok(got) => got,
            Err(_) => Err(Failure::Other(format!(
                "POST {path}: no answer within {within:?}"
            ))),
        }
    }
}

/// The response's content type, lower-case, "" when none.
pub(crate) fn content_type<B>(response: &Response<B>) -> String {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Whether a content type is the apiserver's protobuf.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.starts_with("application/vnd.kubernetes.protobuf")
}

/// A body, up to `max` bytes.
async fn read_body(body: Body, max: usize) -> Result<Bytes, String> {
    let mut out = bytes::BytesMut::new();
    let mut frames = body.into_data_stream();
    while let Some(chunk) = frames.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if out.len() + chunk.len() > max {
            return Err(format!("longer than {max} bytes"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// What a status other than 200 means, from the apiserver's `Status`
/// body (JSON or protobuf) where there is one.
pub(crate) fn status_failure(uri: &str, status: StatusCode, body: &[u8]) -> Failure {
    let message = status_message(body).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body[..body.len().min(256)]).into_owned();
        if text.is_empty() {
            "no body".to_owned()
        } else {
            text
        }
    });
    if status == StatusCode::GONE {
        Failure::Gone(message)
    } else {
        Failure::Other(format!("GET {uri}: {status}: {message}"))
    }
}

/// A `Status` body's message (and reason), JSON or protobuf.
pub(crate) fn status_message(body: &[u8]) -> Option<String> {
    let status = status_object(body)?;
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    Some(match (reason, message) {
        ("", m) => m.to_owned(),
        (r, "") => r.to_owned(),
        (r, m) => format!("{r}: {m}"),
    })
}

/// A body read as a `Status` object, JSON or protobuf.
pub(crate) fn status_object(body: &[u8]) -> Option<serde_json::Map<String, Value>> {
    let object = if body.starts_with(proto::MAGIC) {
        proto::decode(body).ok()?
    } else {
        serde_json::from_slice(body).ok()?
    };
    (object.get("kind").and_then(Value::as_str) == Some("Status")).then_some(object)
}

/// kube-rs's configuration from `config`, as kubectl finds it.
async fn load(config: &ApiServerConfig) -> Result<Config, ConnectError> {
    let options = KubeConfigOptions {
        context: config.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut kube = match &config.kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)
                .map_err(|e| ConnectError::Config(format!("{}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| ConnectError::Config(format!("{}: {e}", path.display())))?
        }
        None if config.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ConnectError::Config(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| ConnectError::Config(e.to_string()))?,
    };
    // Watches are long: no read timeout on the transport (a request's own
    // is applied where it is made; a watch's is the server's
    // `timeoutSeconds` and its bookmarks).
    kube.read_timeout = None;
    kube.connect_timeout = Some(Duration::from_secs(10));
    Ok(kube)
}
