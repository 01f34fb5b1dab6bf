//! Connections: the accept loop, a kill switch per connection, and the
//! reaper that closes watch connections whose client stopped reading.
//!
//! hyper asks a response body for its next chunk only when the connection
//! can take it, so a watch whose client never reads is simply not polled:
//! it holds one chunk and the engine's handle, and the engine's
//! slow-watcher policy governs its backlog. But nothing would ever close
//! it. So each watch body notes when it handed hyper a chunk and has not
//! been asked for the next one; a connection that stays in that state for
//! [`ServerConfig::write_stall_timeout`](crate::ServerConfig) is closed
//! (its socket dropped) by the reaper, which looks once a second, and
//! counted in `apiserver_terminated_watchers_total`. An idle watch (no
//! event to send) is never in that state.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::metrics::ResourceMetrics;

/// A connection's kill switch, in every request's extensions.
#[derive(Debug, Default)]
pub(crate) struct ConnKill {
    killed: AtomicBool,
    notify: Notify,
}

impl ConnKill {
    /// Closes the connection (its task drops the socket).
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    /// Completes once killed.
    pub(crate) async fn killed(&self) {
        loop {
            let notified = self.notify.notified();
            if self.killed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// What the reaper knows of one watch body.
#[derive(Debug)]
pub(crate) struct Stall {
    /// When the body handed hyper a chunk that hyper has not followed
    /// with a request for the next (ns since the reaper's epoch; 0: none
    /// pending).
    pending_since: AtomicU64,
    kill: Arc<ConnKill>,
    metrics: Arc<ResourceMetrics>,
}

impl Stall {
    /// hyper asked for the next chunk.
    #[inline]
    pub(crate) fn polled(&self) {
        self.pending_since.store(0, Ordering::Relaxed);
    }

    /// A chunk was handed over.
    #[inline]
    pub(crate) fn handed(&self, reaper: &Reaper) {
        self.pending_since
            .store(reaper.now_ns().max(1), Ordering::Relaxed);
    }
}

/// The reaper of stalled watch connections.
#[derive(Debug)]
pub(crate) struct Reaper {
    epoch: Instant,
    timeout: Duration,
    watches: Mutex<Vec<Weak<Stall>>>,
}

impl Reaper {
    pub(crate) fn new(timeout: Duration) -> Reaper {
        Reaper {
            epoch: Instant::now(),
            timeout,
            watches: Mutex::new(Vec::new()),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Registers a watch body on the connection `kill` closes.
    pub(crate) fn register(
        &self,
        kill: Arc<ConnKill>,
        metrics: Arc<ResourceMetrics>,
    ) -> Arc<Stall> {
        let stall = Arc::new(Stall {
            pending_since: AtomicU64::new(0),
            kill,
            metrics,
        });
        self.watches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(&stall));
        stall
    }

    /// One look: closes the connections stalled past the timeout, forgets
    /// the bodies gone. Returns how many it closed.
    pub(crate) fn sweep(&self) -> usize {
        let now = self.now_ns();
        let limit = u64::try_from(self.timeout.as_nanos()).unwrap_or(u64::MAX);
        let mut closed = 0;
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.retain(|w| {
            let Some(stall) = w.upgrade() else {
                return false;
            };
            let since = stall.pending_since.load(Ordering::Relaxed);
            if since != 0 && now.saturating_sub(since) > limit {
                stall.metrics.stalled();
                stall.kill.kill();
                closed += 1;
                return false;
            }
            true
        });
        closed
    }

    /// Sweeps once a second until `reaper` is dropped elsewhere.
    pub(crate) async fn run(reaper: Weak<Reaper>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1).min(
            reaper.upgrade().map_or(Duration::from_secs(1), |r| {
                (r.timeout / 2).max(Duration::from_millis(50))
            }),
        ));
        loop {
            tick.tick().await;
            let Some(r) = reaper.upgrade() else {
                return;
            };
            r.sweep();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_body_is_reaped_and_a_polled_one_is_not() {
        let reaper = Reaper::new(Duration::from_millis(20));
        let metrics = Arc::new(ResourceMetrics::default());
        let (k1, k2) = (Arc::new(ConnKill::default()), Arc::new(ConnKill::default()));
        let stalled = reaper.register(k1.clone(), metrics.clone());
        let healthy = reaper.register(k2.clone(), metrics.clone());
        stalled.handed(&reaper);
        healthy.handed(&reaper);
        std::thread::sleep(Duration::from_millis(40));
        healthy.polled();
        assert_eq!(reaper.sweep(), 1);
        assert!(k1.killed.load(Ordering::Acquire));
        assert!(!k2.killed.load(Ordering::Acquire));
        drop(healthy);
        assert_eq!(reaper.sweep(), 0);
        assert!(reaper.watches.lock().unwrap().is_empty());
    }
}
