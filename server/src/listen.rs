//! Serving a listener: the accept loop, a task per connection with its
//! kill switch, each request's client address and flight (see the
//! modules `admit` and `conn`), TLS with its client certificates (see
//! the module `access`), and a graceful close.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use herald_auth::tls::ServingTls;

use crate::access::PeerCerts;
use crate::admit::Client;
use crate::conn::{ConnKill, FlightBody, Reaper};
use crate::counts::ServerMetrics;
use crate::server::Server;
use crate::shutdown::DRAIN_EVERY;

impl Server {
    /// Serves HTTP/1.1 on `listener` until `shutdown` completes, then goes
    /// away as the module `shutdown` tells: not ready (if
    /// [`Server::terminate`] was not called already), the listener
    /// closed, keep-alive off, every watch drained (a bookmark, then a
    /// clean end its client resumes from), the connections closed once
    /// their responses are written or
    /// [`ServerConfig::shutdown_grace`](crate::ServerConfig::shutdown_grace)
    /// has passed. The engines keep running: stop them after.
    ///
    /// Each connection runs in a task of its own with a kill switch, and
    /// each response counts what it holds in flight (see the module
    /// `conn`): a watch holds at most
    /// [`ServerConfig::watch_in_flight_bytes`](crate::ServerConfig::watch_in_flight_bytes) and is closed when its
    /// client stops reading for [`ServerConfig::write_stall_timeout`](crate::ServerConfig::write_stall_timeout);
    /// any other response is closed if not written within
    /// [`ServerConfig::request_timeout`](crate::ServerConfig::request_timeout). Requests are admitted by their
    /// client's address (see the module `admit`).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with(listener, None, shutdown).await
    }

    /// [`Server::serve`] over TLS: each connection's handshake (within
    /// 10 s, or it is dropped and counted) with what `tls` serves now,
    /// its client certificate (if the client sent one) checked per
    /// request against the client CA (see the module `access`). The
    /// files are read again every 10 s; a change that does not load is
    /// logged and counted (`herald_http_tls_reload_failures_total`), and
    /// the previous certificate keeps serving.
    pub async fn serve_tls(
        self,
        listener: tokio::net::TcpListener,
        tls: Arc<ServingTls>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let reload = tokio::spawn(reload_every(tls.clone(), self.metrics().clone()));
        let served = self.serve_with(listener, Some(tls), shutdown).await;
        reload.abort();
        served
    }

    /// Marks the server going away: `/readyz` fails from now on (with
    /// `[-] shutdown`), while everything is still served. Call it first
    /// when told to go (SIGTERM), wait for the load balancer to notice,
    /// then complete [`Server::serve`]'s `shutdown`. Idempotent.
    pub fn terminate(&self) {
        if self.termination().begin() {
            eprintln!("herald-server: terminating: /readyz fails from now on");
        }
    }

    /// Drains every engine (see the module `shutdown`).
    fn drain_watches(&self) {
        for r in self.resources() {
            r.engine().drain();
        }
    }

    async fn serve_with(
        self,
        listener: tokio::net::TcpListener,
        tls: Option<Arc<ServingTls>>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.router();
        let reaper = tokio::spawn(Reaper::run(Arc::downgrade(self.reaper())));
        let (closing, closed) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    // Out of descriptors, a connection reset before it
                    // was taken: keep serving the others.
                    Err(e) => {
                        if is_fatal_accept_error(&e) {
                            reaper.abort();
                            return Err(e);
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let conn = Conn {
                router: router.clone(),
                closed: closed.clone(),
                reaper: self.reaper().clone(),
                client: Client::Addr(peer.ip()),
                peer: None,
            };
            match &tls {
                None => {
                    tasks.spawn(conn.serve(stream));
                }
                Some(tls) => {
                    let (tls, metrics) = (tls.clone(), self.metrics().clone());
                    tasks.spawn(async move {
                        let acceptor =
                            tokio_rustls::TlsAcceptor::from(tls.current().config.clone());
                        let handshake =
                            tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                        let Ok(Ok(stream)) = handshake.await else {
                            metrics.access_refused("tls_handshake");
                            return;
                        };
                        let chain: Vec<_> = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
                            .unwrap_or_default();
                        let conn = Conn {
                            peer: Some(Arc::new(PeerCerts::new(chain, tls))),
                            ..conn
                        };
                        conn.serve(stream).await;
                    });
                }
            }
            // Forget the finished ones as we go.
            while tasks.try_join_next().is_some() {}
        }
        // Refused from now on: the balancer sends new clients elsewhere.
        drop(listener);
        self.terminate();
        let _ = closing.send(true);
        let open = tasks.len();
        let grace = tokio::time::sleep(self.config().shutdown_grace);
        tokio::pin!(grace);
        loop {
            self.drain_watches();
            tokio::select! {
                () = &mut grace => break,
                () = tokio::time::sleep(DRAIN_EVERY) => {}
                () = async { while tasks.join_next().await.is_some() {} } => break,
            }
        }
        let cut = tasks.len();
        for _ in 0..cut {
            self.metrics().closed("shutdown_grace");
        }
        tasks.shutdown().await;
        eprintln!(
            "herald-server: drained: {} of {open} connections closed in time, {cut} cut after the grace",
            open - cut
        );
        reaper.abort();
        Ok(())
    }
}

/// How long a TLS handshake may take (a client that opens connections
/// and never finishes one holds no more than this).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the TLS files are read again.
const TLS_RELOAD_EVERY: Duration = Duration::from_secs(10);

/// Reads the TLS files every [`TLS_RELOAD_EVERY`]; logs what changed and
/// what failed (each distinct failure once).
async fn reload_every(tls: Arc<ServingTls>, metrics: Arc<ServerMetrics>) {
    let mut last_error = None;
    loop {
        tokio::time::sleep(TLS_RELOAD_EVERY).await;
        let tls = tls.clone();
        let result = tokio::task::spawn_blocking(move || tls.reload()).await;
        match result {
            Ok(Ok(true)) => {
                eprintln!("herald-server: TLS certificate, key or client CA reloaded");
                last_error = None;
            }
            Ok(Ok(false)) => last_error = None,
            Ok(Err(e)) => {
                metrics.tls_reload_failures.fetch_add(1, Ordering::Relaxed);
                let e = e.to_string();
                if last_error.as_ref() != Some(&e) {
                    eprintln!(
                        "herald-server: TLS reload failed, still serving the previous files: {e}"
                    );
                    last_error = Some(e);
                }
            }
            Err(_) => {}
        }
    }
}

/// One accepted connection, served over whatever stream it came in on.
struct Conn {
    router: axum::Router,
    closed: tokio::sync::watch::Receiver<bool>,
    reaper: Arc<Reaper>,
    client: Client,
    /// Its TLS client certificates, over TLS.
    peer: Option<Arc<PeerCerts>>,
}

impl Conn {
    /// Serves HTTP/1.1 on `io` until the client goes, the reaper kills
    /// the connection, or the server closes.
    async fn serve<I>(self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Conn {
            router,
            closed,
            reaper,
            client,
            peer,
        } = self;
        let kill = Arc::new(ConnKill::default());
        let conn_kill = kill.clone();
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                let flight = reaper.flight(conn_kill.clone());
                req.extensions_mut().insert(flight.clone());
                req.extensions_mut().insert(client.clone());
                if let Some(peer) = &peer {
                    req.extensions_mut().insert(peer.clone());
                }
                let mut router = router.clone();
                let call = tower_service::Service::call(&mut router, req.map(Body::new));
                async move {
                    let response = call.await?;
                    Ok::<_, std::convert::Infallible>(response.map(|b| FlightBody::new(b, flight)))
                }
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(Duration::from_secs(30))
            // A request head as large as Go's server takes
            // (`http.DefaultMaxHeaderBytes` and its 4 KiB of slack), so
            // that a credential the apiserver would read and refuse (401)
            // is read and refused here too, not cut off with a 431. The
            // buffer grows to it only for a head that large.
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(hyper_util::rt::TokioIo::new(io), service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            () = kill.killed() => {}
            () = until_closing(closed) => {
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    _ = conn.as_mut() => {}
                    () = kill.killed() => {}
                }
            }
        }
    }
}

/// The largest request head read (Go's `DefaultMaxHeaderBytes`, 1 MiB,
/// plus the 4 KiB its server allows past it).
const MAX_HEAD_BYTES: usize = (1 << 20) + 4096;

/// Whether an accept error ends the server (the listener itself is
/// broken) rather than one connection.
fn is_fatal_accept_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    !matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    ) && e.raw_os_error().is_none_or(|code| {
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: out of resources for now.
        ![24, 23, 105, 12].contains(&code)
    })
}

/// Completes once the server is closing.
async fn until_closing(mut closing: tokio::sync::watch::Receiver<bool>) {
    while !*closing.borrow_and_update() {
        if closing.changed().await.is_err() {
            // The server is gone without closing: never.
            std::future::pending::<()>().await;
        }
    }
}
