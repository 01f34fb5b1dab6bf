//! Going away without a re-list: the state of a server that is
//! terminating. The sequence is the apiserver's graceful termination
//! with a drain in place of its cut, carried out by
//! [`Server::terminate`](crate::Server::terminate) and
//! [`Server::serve`](crate::Server::serve):
//!
//! 1. **Not ready.** From [`Server::terminate`](crate::Server::terminate)
//!    (`herald-server`: SIGTERM), `/readyz` fails with `[-] shutdown`
//!    while everything is still served, for as long as the load balancer
//!    takes to notice (`--shutdown-delay`, the apiserver's
//!    `--shutdown-delay-duration`).
//! 2. **No new connections.** The listener closes; every connection stops
//!    keep-alive: an idle one closes now, one with a response in progress
//!    once it is written.
//! 3. **Drain.** Every engine is drained ([`herald::Engine::drain`]):
//!    each watch is sent what had been dispatched, a bookmark at that
//!    version if it allows bookmarks, and ends with no `ERROR` event. Its
//!    client watches again from that version, through the balancer, on
//!    another replica of the same upstream: no re-list, no gap, no
//!    duplicate. The drain is repeated every [`DRAIN_EVERY`] for watches
//!    a handler registered after it (their request was already in).
//! 4. **Close.** Connections still open after
//!    [`ServerConfig::shutdown_grace`](crate::ServerConfig::shutdown_grace)
//!    (30 s; a client that does not read its last bytes) are closed, and
//!    counted.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often a terminating server drains its engines again.
pub(crate) const DRAIN_EVERY: Duration = Duration::from_millis(200);

/// Whether, and since when, the server is going away.
#[derive(Debug, Default)]
pub(crate) struct Termination {
    since: OnceLock<Instant>,
}

impl Termination {
    /// Marks the server terminating; `false` if it already was.
    pub(crate) fn begin(&self) -> bool {
        self.since.set(Instant::now()).is_ok()
    }

    /// When the server began terminating, if it has.
    pub(crate) fn since(&self) -> Option<Instant> {
        self.since.get().copied()
    }
}
