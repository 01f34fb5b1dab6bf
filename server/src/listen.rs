//! Serving a listener: the accept loop, a task per connection with its
//! kill switch, each request's client address and flight (see the
//! modules `admit` and `conn`), and a graceful close.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;

use crate::admit::Client;
use crate::conn::{ConnKill, FlightBody, Reaper};
use crate::server::Server;

impl Server {
    /// Serves HTTP/1.1 on `listener` until `shutdown` completes, then
    /// stops accepting, lets every connection finish what it is doing
    /// (a watch ends when its engine stops, its deadline passes or its
    /// client goes: stop the engines to end them), and returns.
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
            let router = router.clone();
            let closed = closed.clone();
            let reaper = self.reaper().clone();
            let client = Client(peer.ip());
            tasks.spawn(async move {
                let kill = Arc::new(ConnKill::default());
                let conn_kill = kill.clone();
                let service = hyper::service::service_fn(
                    move |mut req: hyper::Request<hyper::body::Incoming>| {
                        let flight = reaper.flight(conn_kill.clone());
                        req.extensions_mut().insert(flight.clone());
                        req.extensions_mut().insert(client);
                        let mut router = router.clone();
                        let call = tower_service::Service::call(&mut router, req.map(Body::new));
                        async move {
                            let response = call.await?;
                            Ok::<_, std::convert::Infallible>(
                                response.map(|b| FlightBody::new(b, flight)),
                            )
                        }
                    },
                );
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(30))
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
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
            });
            // Forget the finished ones as we go.
            while tasks.try_join_next().is_some() {}
        }
        let _ = closing.send(true);
        while tasks.join_next().await.is_some() {}
        reaper.abort();
        Ok(())
    }
}

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
