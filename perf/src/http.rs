//! The http-fanout scenario's systems: Herald's Kubernetes API front
//! (`herald-server`) serving N watch connections on loopback, against the
//! same watchers in-process (what the network costs) and, where an etcd
//! is found, against etcd's own watch fan-out to N gRPC watchers (the
//! scenario, `scenarios/http_fanout.rs`, starts that etcd and owns it).
//!
//! - `herald-server`: a server process of its own ([`child`]: this binary,
//!   started as `herald-perf __http-server`) holds a [`MemorySource`]
//!   of JSON pods (realistic ones, [`crate::pods`], about 3.7 KB each,
//!   with their `metadata.resourceVersion`), a reflector
//!   feeding an engine, and a [`Server`](herald_server::Server) on a
//!   two-thread tokio runtime, on 127.0.0.1. The publisher sends it each
//!   change's index over a pipe (one 5-byte write; the change is stamped
//!   as it is handed over, so latency includes that hop, as etcd's
//!   includes its put). Each watcher is an HTTP/1.1 connection (`GET
//!   /api/v1/pods?watch=1&resourceVersion=1[&fieldSelector=...]`), read
//!   by the harness's consumer threads themselves: each polls its
//!   connections' sockets with its readiness list's waker, de-chunks the
//!   body, splits the JSON lines and reads each event's
//!   `resourceVersion` (what a client must do at least), so the client
//!   side's cost shows in the harness's cores, as the etcd watchers' does,
//!   and the server's CPU is measured alone, as etcd's is (the child's
//!   threads' CPU time: the server process only, no client in it).
//! - `herald-server-protobuf`: the same server, the clients asking for
//!   protobuf (`Accept: application/vnd.kubernetes.protobuf`): the server
//!   encodes each change once (shared by every connection) and sends
//!   length-prefixed `WatchEvent`s, which the clients split and read each
//!   event's `metadata.resourceVersion` from by walking the wire format
//!   (`pbwatch`).
//! - `herald+source`: the same source, reflector and engine, watched
//!   in-process (`Herald { source: true }`).
//! - `etcd`: etcd-fanout's `etcd` system (N etcd watches with previous
//!   values, on 10 connections), on a fresh etcd; watchers of everything
//!   only (etcd has no selectors).
//!
//! Memory per connection is the live heap after the watches are open,
//! minus before, over N, from the counting allocator in both processes:
//! the server's (its connection task, hyper's buffers, the engine's
//! watch) and the client's (its buffers); the table shows both ends and
//! the server's share.
//!
//! [`MemorySource`]: herald::MemorySource

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use herald::Object;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use crate::alloc::Counting;
use crate::consume::{self, RunOpts, RunResult};
use crate::etcd::{EtcdEnv, Sampler};
use crate::kind::SystemKind;
use crate::peers::herald::NODE_FIELD;
use crate::pods::{Placement, Template};
use crate::runner::run_system;
use crate::system::{Drained, PeerUse, Publisher, Spec, Stamps, Subscriber, System};
use crate::workload::{Filter, Workload, node_name, pod_name};

/// How long the set-up waits for the connections and the engine.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The child server's pods: a realistic pod per key ([`crate::pods`]:
/// about 3.7 KB of JSON), its node and version set per change.
struct Pods {
    templates: Vec<Template>,
}

impl Pods {
    /// Pods `0..n` of namespace `default`.
    fn new(n: u32) -> Pods {
        Pods {
            templates: (0..n)
                .map(|key| Template::new(&placement(key), u64::from(key)))
                .collect(),
        }
    }

    /// Pod `key` on `node` at `rv`, as the apiserver serves it.
    fn object(&self, key: u32, node: u32, rv: u64) -> Object {
        let node = node_name(node);
        let payload = self.templates[key as usize].render(&node, rv);
        Object::builder("default", &pod_name(key))
            .label("app", "web")
            .field(NODE_FIELD, &node)
            .payload(payload.into_bytes())
            .build()
    }
}

/// Where pod `key` is (its node aside).
fn placement(key: u32) -> Placement {
    Placement {
        namespace: "default".into(),
        name: pod_name(key),
        node: String::new(),
        app: "web".into(),
        hash: "5d8f9c7b4".into(),
    }
}

pub mod child;
mod pbwatch;
pub mod secure;

/// Herald's HTTP front on loopback, served by a child process.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeraldHttp {
    /// The clients ask for protobuf (`Accept:
    /// application/vnd.kubernetes.protobuf`) and read length-prefixed
    /// `WatchEvent`s; else JSON lines.
    pub protobuf: bool,
    /// Over TLS, with a bearer token and RBAC (see [`secure`]).
    pub tls: bool,
}

/// The publisher: the child server, and the client side's reactor.
pub struct HttpPub {
    server: child::ServerProcess,
    /// The runtime whose reactor the client sockets are registered with
    /// (the consumers poll them with their own wakers).
    runtime: Option<Runtime>,
    sampler: Option<Sampler>,
    cpu_at_begin: Option<u64>,
    /// Heap per connection once all were open, both ends (bytes).
    bytes_per_connection: f64,
    /// The server's share of it.
    server_bytes_per_connection: f64,
    /// Set once a put could not be sent: the run will time out, and says
    /// why once.
    broken: bool,
    /// The TLS material the server reads (again every 10 s), kept while
    /// it serves.
    _material: Option<secure::Material>,
}

impl std::fmt::Debug for HttpPub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPub")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Publisher for HttpPub {
    #[inline]
    fn publish(&mut self, i: usize) {
        if let Err(e) = self.server.put(i)
            && !std::mem::replace(&mut self.broken, true)
        {
            eprintln!("herald-perf: http-fanout: {e:#}");
        }
    }

    fn finish(&mut self) {
        match self.server.taken() {
            Ok(0) => {}
            Ok(n) => eprintln!(
                "herald-perf: http-fanout: {n} put(s) got a revision other than the workload's"
            ),
            Err(e) => eprintln!("herald-perf: http-fanout: {e:#}"),
        }
    }

    fn begin(&mut self, _sent: &Arc<Stamps>, _acked: &Arc<Stamps>) {
        self.cpu_at_begin = crate::machine::process_cpu_ns(self.server.pid());
        self.sampler = Some(Sampler::start(self.server.pid()));
    }

    fn end(&mut self) -> Option<PeerUse> {
        let cpu = crate::machine::process_cpu_ns(self.server.pid());
        let (rss, heap) = self.sampler.take().map(Sampler::finish).unwrap_or_default();
        let cpu_ns = cpu
            .zip(self.cpu_at_begin)
            .map_or(0, |(b, a)| b.saturating_sub(a));
        Some(PeerUse {
            cpu_s: cpu_ns as f64 / 1e9,
            rss_peak_bytes: rss,
            heap_peak_bytes: heap,
            bytes_per_connection: Some(self.bytes_per_connection),
            server_bytes_per_connection: Some(self.server_bytes_per_connection),
            ..PeerUse::default()
        })
    }
}

impl Drop for HttpPub {
    fn drop(&mut self) {
        if let Some(s) = self.sampler.take() {
            s.finish();
        }
        Counting::disable();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The query a watcher's filter becomes.
fn query(filter: &Filter, from: u64) -> String {
    let mut q = format!("watch=1&resourceVersion={from}&timeoutSeconds=3600");
    if let Some(sel) = filter.field_selector() {
        q.push_str("&fieldSelector=");
        q.push_str(&sel.replace('=', "%3D"));
    }
    q
}

impl System for HeraldHttp {
    type Pub = HttpPub;
    type Sub = HttpSub<secure::Stream>;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(HttpPub, Vec<HttpSub<secure::Stream>>)> {
        anyhow::ensure!(
            spec.start == 0 && spec.preloaded == 0,
            "http-fanout watches from the list's version"
        );
        let material = if self.tls {
            Some(secure::Material::make()?)
        } else {
            None
        };
        let mut server = child::ServerProcess::start(workload, material.as_ref())?;
        let connector = material
            .as_ref()
            .map(secure::Material::connector)
            .transpose()?;
        let addr = server.addr();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("perf-http-clients")
            .enable_all()
            .build()
            .context("the clients' runtime")?;
        // The connections: opened on the clients' runtime (their sockets
        // registered with its reactor), read by the consumers.
        let n = spec.filters.len();
        Counting::enable();
        let heap_before = Counting::live();
        let server_before = server.wait_watchers(0)?;
        let queries: Vec<String> = spec
            .filters
            .iter()
            .map(|f| query(f, Workload::LIST_RV))
            .collect();
        let opened = runtime
            .block_on(async {
                tokio::time::timeout(SETUP_TIMEOUT, async {
                    let mut out = Vec::with_capacity(n);
                    // A few hundred at a time: the listener's backlog.
                    for chunk in queries.chunks(256) {
                        let tasks: Vec<_> = chunk
                            .iter()
                            .map(|q| {
                                tokio::spawn(open(
                                    addr,
                                    q.clone(),
                                    self.protobuf,
                                    connector.clone(),
                                ))
                            })
                            .collect();
                        for t in tasks {
                            out.push(t.await.context("a connection task")??);
                        }
                    }
                    anyhow::Ok(out)
                })
                .await
            })
            .map_err(|_| {
                anyhow::anyhow!("opening {n} connections took over {SETUP_TIMEOUT:?}")
            })??;
        let server_after = server.wait_watchers(n)?;
        let per = |bytes: i64| bytes as f64 / n.max(1) as f64;
        let client = Counting::live() - heap_before;
        let served = server_after - server_before;
        Counting::disable();
        Ok((
            HttpPub {
                server,
                runtime: Some(runtime),
                sampler: None,
                cpu_at_begin: None,
                bytes_per_connection: per(client + served),
                server_bytes_per_connection: per(served),
                broken: false,
                _material: material,
            },
            opened,
        ))
    }
}

/// Opens a watch: the request, the response's head; what arrived past
/// the head is kept. With `tls`, over TLS with the bearer token.
async fn open(
    addr: std::net::SocketAddr,
    query: String,
    protobuf: bool,
    tls: Option<tokio_rustls::TlsConnector>,
) -> anyhow::Result<HttpSub<secure::Stream>> {
    let stream = TcpStream::connect(addr).await.context("connect")?;
    stream.set_nodelay(true)?;
    let accept = if protobuf {
        "Accept: application/vnd.kubernetes.protobuf\r\n"
    } else {
        ""
    };
    let (stream, auth) = match tls {
        None => (secure::Stream::Plain(stream), String::new()),
        Some(tls) => (
            secure::Stream::Tls(Box::new(secure::handshake(&tls, stream).await?)),
            format!("Authorization: Bearer {}\r\n", secure::TOKEN),
        ),
    };
    let request = format!("GET /api/v1/pods?{query} HTTP/1.1\r\nHost: perf\r\n{accept}{auth}\r\n");
    start_watch(stream, &request, protobuf).await
}

/// Sends a watch's `request` (a whole HTTP/1.1 request, head only) on
/// `stream` and reads the response's head: a 200 with a chunked body (of
/// protobuf frames when `protobuf`), else an error with the head. What
/// arrived past the head is kept. Each event's version is read by
/// [`line_rv`] unless the caller sets another reader.
pub(crate) async fn start_watch<S>(
    mut stream: S,
    request: &str,
    protobuf: bool,
) -> anyhow::Result<HttpSub<S>>
where
    S: AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;
    let mut raw = Vec::with_capacity(8192);
    let head_end = loop {
        let mut buf = [0u8; 4096];
        let got = stream.read(&mut buf).await?;
        anyhow::ensure!(got > 0, "the server closed before answering");
        raw.extend_from_slice(&buf[..got]);
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        anyhow::ensure!(raw.len() < 65536, "no end of headers");
    };
    let head = String::from_utf8_lossy(&raw[..head_end]);
    anyhow::ensure!(
        head.starts_with("HTTP/1.1 200"),
        "the watch was refused: {head}{}",
        String::from_utf8_lossy(&raw[head_end..])
    );
    let lower = head.to_ascii_lowercase();
    anyhow::ensure!(
        lower.contains("transfer-encoding: chunked"),
        "not a chunked stream: {head}"
    );
    anyhow::ensure!(
        !protobuf
            || lower.contains("content-type: application/vnd.kubernetes.protobuf;stream=watch"),
        "asked for protobuf, not served it: {head}"
    );
    let mut sub = HttpSub {
        stream,
        protobuf,
        version: line_rv,
        // Grown as events come: an idle client holds little.
        raw: Vec::new(),
        body: Vec::new(),
        chunk_left: 0,
        ended: false,
    };
    sub.raw.extend_from_slice(&raw[head_end..]);
    Ok(sub)
}

/// One watch connection as a client reads it (plain TCP, or TLS).
pub struct HttpSub<S = TcpStream> {
    stream: S,
    /// The body is length-prefixed protobuf frames, not JSON lines.
    protobuf: bool,
    /// Reads the harness's resource version from an event's JSON line.
    pub(crate) version: fn(&[u8]) -> Option<u64>,
    /// Bytes read and not de-chunked yet.
    raw: Vec<u8>,
    /// De-chunked body bytes not split into lines yet.
    body: Vec<u8>,
    /// Bytes left in the current chunk (0: at a chunk's size line).
    chunk_left: usize,
    ended: bool,
}

impl<S> std::fmt::Debug for HttpSub<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSub")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// The `resourceVersion` of an event line's object.
pub(crate) fn line_rv(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"resourceVersion\":\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let digits = &line[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

impl<S> HttpSub<S> {
    /// Moves whole chunks' data from `raw` to `body`; false once the
    /// stream's last chunk came.
    fn dechunk(&mut self) -> bool {
        let mut at = 0;
        loop {
            if self.chunk_left > 0 {
                let take = self.chunk_left.min(self.raw.len() - at);
                self.body.extend_from_slice(&self.raw[at..at + take]);
                at += take;
                self.chunk_left -= take;
                if self.chunk_left > 0 {
                    break;
                }
                // The chunk's trailing CRLF is read with the next size line.
                continue;
            }
            // `[\r\n]size\r\n`
            let rest = &self.raw[at..];
            let skip = if rest.starts_with(b"\r\n") { 2 } else { 0 };
            let Some(eol) = rest[skip..].windows(2).position(|w| w == b"\r\n") else {
                break;
            };
            let size = std::str::from_utf8(&rest[skip..skip + eol])
                .ok()
                .and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
            at += skip + eol + 2;
            match size {
                Some(0) | None => {
                    self.raw.clear();
                    return false;
                }
                Some(n) => self.chunk_left = n,
            }
        }
        self.raw.drain(..at);
        true
    }

    /// Hands out up to `max` whole events (lines, or protobuf frames).
    fn lines<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> usize {
        if self.protobuf {
            return self.frames(max, f);
        }
        let mut n = 0;
        let mut start = 0;
        while n < max {
            let Some(eol) = memchr::memchr(b'\n', &self.body[start..]) else {
                break;
            };
            let line = &self.body[start..start + eol];
            // Bookmarks are not deliveries; an ERROR ends the watch.
            if line.starts_with(b"{\"type\":\"ERROR\"") {
                self.ended = true;
            } else if !line.starts_with(b"{\"type\":\"BOOKMARK\"")
                && let Some(rv) = (self.version)(line)
            {
                f(rv, line.len());
                n += 1;
            }
            start += eol + 1;
        }
        self.body.drain(..start);
        n
    }
}

impl<S> HttpSub<S> {
    /// Hands out up to `max` whole protobuf frames' events.
    fn frames<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> usize {
        let mut n = 0;
        let mut ended = false;
        let taken = pbwatch::frames(&self.body, |event, len| {
            match event {
                pbwatch::Event::Object(rv) => {
                    f(rv, len);
                    n += 1;
                }
                pbwatch::Event::Bookmark => {}
                pbwatch::Event::End => ended = true,
            }
            n < max && !ended
        });
        self.ended |= ended;
        self.body.drain(..taken);
        n
    }
}

impl<S: AsyncRead + Unpin + Send + 'static> Subscriber for HttpSub<S> {
    fn has_readiness(&self) -> bool {
        true
    }

    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        crate::system::drain_now(self, max, f)
    }

    fn poll_drain<F: FnMut(u64, usize)>(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut F,
    ) -> Poll<Drained> {
        let mut delivered = 0;
        loop {
            delivered += self.lines(max - delivered, f);
            if delivered >= max || self.ended {
                return Poll::Ready(Drained {
                    delivered,
                    ended: self.ended,
                });
            }
            let mut buf = [0u8; 16 * 1024];
            let mut rb = ReadBuf::new(&mut buf);
            match Pin::new(&mut self.stream).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => self.ended = true,
                Poll::Ready(Ok(())) => {
                    self.raw.extend_from_slice(rb.filled());
                    if !self.dechunk() {
                        // The last chunk: whatever lines remain, then the end.
                        delivered += self.lines(usize::MAX, f);
                        self.ended = true;
                    }
                }
                Poll::Ready(Err(_)) => self.ended = true,
                Poll::Pending if delivered > 0 => {
                    return Poll::Ready(Drained {
                        delivered,
                        ended: false,
                    });
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Runs `herald-server`, `herald+source` and, against `etcd` when there
/// is one, etcd's own fan-out; any other system as [`run_system`] does.
pub fn run_on(
    etcd: Option<&Arc<EtcdEnv>>,
    kind: SystemKind,
    spec: &Spec,
    workload: &Arc<Workload>,
    opts: &RunOpts,
) -> anyhow::Result<RunResult> {
    match (kind, etcd) {
        (SystemKind::HeraldHttp, _) => consume::run(&HeraldHttp::default(), spec, workload, opts),
        (SystemKind::HeraldHttpProtobuf, _) => consume::run(
            &HeraldHttp {
                protobuf: true,
                ..HeraldHttp::default()
            },
            spec,
            workload,
            opts,
        ),
        (SystemKind::HeraldHttpTls, _) => consume::run(
            &HeraldHttp {
                tls: true,
                ..HeraldHttp::default()
            },
            spec,
            workload,
            opts,
        ),
        (SystemKind::Etcd, Some(env)) => crate::etcd::run_on(env, kind, spec, workload, opts),
        _ => run_system(kind, spec, workload, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_of_an_event_line() {
        let p = Pods::new(4).object(3, 1, 42);
        let line = format!(
            "{{\"type\":\"MODIFIED\",\"object\":{}}}",
            String::from_utf8_lossy(p.payload())
        );
        assert_eq!(line_rv(line.as_bytes()), Some(42));
        assert_eq!(line_rv(b"{}"), None);
    }
}
