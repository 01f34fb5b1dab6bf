//! Connections: a kill switch per connection, what each response holds
//! in flight, and the reaper that closes connections whose client stopped
//! taking what it was sent.
//!
//! Every response body served by [`Server::serve`](crate::Server::serve)
//! is wrapped in a [`FlightBody`]: each chunk it hands hyper is a `Bytes`
//! whose owner counts it in its request's [`Flight`] until hyper has
//! written it to the socket and dropped it. So the server knows, per
//! response and in total, how many bytes it holds that the client has not
//! taken, and when they last moved:
//!
//! - a watch ([`Flight::set_watch`]) hands a new chunk only while it holds
//!   less than [`ServerConfig::watch_in_flight_bytes`](crate::ServerConfig)
//!   (64 KiB): what a connection that never reads pins is that much plus
//!   one event, whatever the change rate (hyper alone would queue 16
//!   chunks or about 400 KiB);
//! - a watch whose bytes in flight have not moved for
//!   `write_stall_timeout` (10 s) is closed (`write_stall`);
//! - any other response that is not written in full within
//!   `request_timeout` (60 s, the apiserver's) is closed (`write_deadline`).
//!
//! The reaper looks once a second (more often for short timeouts) and
//! counts what it closes; once a second it logs what was closed and what
//! admission refused, if anything. An idle watch (nothing to send) never
//! stalls.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

use crate::counts::{Reported, ResourceMetrics, ServerMetrics};

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

/// Why the reaper closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closed {
    /// A watch's bytes in flight did not move for `write_stall_timeout`.
    WriteStall,
    /// A response was not written in full within `request_timeout`.
    WriteDeadline,
}

impl Closed {
    /// The label value of `herald_http_closed_connections_total`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Closed::WriteStall => "write_stall",
            Closed::WriteDeadline => "write_deadline",
        }
    }
}

/// What one response holds in flight, as the reaper and a watch body see
/// it.
#[derive(Debug)]
pub(crate) struct Flight {
    /// Bytes handed to hyper and not yet written and dropped by it.
    in_flight: AtomicUsize,
    /// When the bytes in flight last moved (handed from none, or some
    /// written), in ns since the reaper's epoch.
    moved_ns: AtomicU64,
    /// Past this (ns since the epoch), a response that is not written in
    /// full is closed; `u64::MAX` for watches.
    deadline_ns: AtomicU64,
    /// The body handed its last chunk.
    ended: AtomicBool,
    /// Woken when bytes in flight are written (a watch waits on it).
    waker: AtomicWaker,
    /// A watch's resource, which counts it terminated if it stalls.
    watch_of: OnceLock<Arc<ResourceMetrics>>,
    kill: Arc<ConnKill>,
    reaper: Arc<Reaper>,
}

impl Flight {
    /// Bytes in flight now.
    ///
    /// Orderings: the count publishes no data (the chunks are hyper's);
    /// `AcqRel`/`Acquire` keep a body's second look in [`poll_room`]
    /// after it registered its waker from missing a drop that came
    /// between (the waker's own register/wake pair orders that as well).
    /// The reaper's reads (`moved_ns`, `deadline_ns`, `ended`) are
    /// `Relaxed` or `Acquire` on single words: a verdict a sweep late is
    /// the next sweep's.
    ///
    /// [`poll_room`]: Flight::poll_room
    #[inline]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Marks the response a watch of the resource counted in `metrics`:
    /// no write deadline; the stall rule.
    pub(crate) fn set_watch(&self, metrics: Arc<ResourceMetrics>) {
        let _ = self.watch_of.set(metrics);
        self.deadline_ns.store(u64::MAX, Ordering::Relaxed);
    }

    /// Whether the response is a watch.
    fn is_watch(&self) -> bool {
        self.deadline_ns.load(Ordering::Relaxed) == u64::MAX
    }

    /// Polls for room: `Ready` while less than `limit` bytes are in
    /// flight; otherwise registers `cx` to be woken when some are written.
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>, limit: usize) -> Poll<usize> {
        let room = |n: usize| limit.saturating_sub(n);
        let n = self.in_flight();
        if n < limit {
            return Poll::Ready(room(n));
        }
        self.waker.register(cx.waker());
        let n = self.in_flight();
        if n < limit {
            Poll::Ready(room(n))
        } else {
            Poll::Pending
        }
    }

    fn handed(&self, n: usize) {
        if self.in_flight.fetch_add(n, Ordering::AcqRel) == 0 {
            self.moved_ns.store(self.reaper.now_ns(), Ordering::Relaxed);
        }
        self.reaper
            .metrics
            .unwritten
            .fetch_add(n, Ordering::Relaxed);
    }

    fn written(&self, n: usize) {
        // Progress matters only while something stays in flight (a
        // hand-over from none stamps it again): a reader that keeps up
        // empties its flight with every chunk and reads no clock here.
        if self.in_flight.load(Ordering::Relaxed) > n {
            self.moved_ns.store(self.reaper.now_ns(), Ordering::Relaxed);
        }
        self.in_flight.fetch_sub(n, Ordering::AcqRel);
        self.reaper
            .metrics
            .unwritten
            .fetch_sub(n, Ordering::Relaxed);
        self.waker.wake();
    }

    /// Whether the reaper closes the connection now, and why.
    fn verdict(&self, now: u64, stall: u64) -> Option<Closed> {
        let n = self.in_flight();
        if self.is_watch() {
            let moved = self.moved_ns.load(Ordering::Relaxed);
            return (n > 0 && now.saturating_sub(moved) > stall).then_some(Closed::WriteStall);
        }
        let complete = self.ended.load(Ordering::Acquire) && n == 0;
        (!complete && now > self.deadline_ns.load(Ordering::Relaxed))
            .then_some(Closed::WriteDeadline)
    }
}

/// A chunk handed to hyper, counted in flight until hyper drops it.
struct Held {
    bytes: Bytes,
    flight: Arc<Flight>,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.flight.written(self.bytes.len());
    }
}

/// A response body whose chunks are counted in their request's
/// [`Flight`] until written.
#[derive(Debug)]
pub(crate) struct FlightBody<B> {
    inner: B,
    flight: Arc<Flight>,
}

impl<B> FlightBody<B> {
    pub(crate) fn new(inner: B, flight: Arc<Flight>) -> FlightBody<B> {
        FlightBody { inner, flight }
    }
}

impl<B> Body for FlightBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                let frame = frame.map_data(|bytes| {
                    if bytes.is_empty() {
                        return bytes;
                    }
                    this.flight.handed(bytes.len());
                    Bytes::from_owner(Held {
                        bytes,
                        flight: this.flight.clone(),
                    })
                });
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.flight.ended.store(true, Ordering::Release);
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        let end = self.inner.is_end_stream();
        if end {
            self.flight.ended.store(true, Ordering::Release);
        }
        end
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The reaper of connections that do not take what they are sent.
#[derive(Debug)]
pub(crate) struct Reaper {
    epoch: Instant,
    stall: Duration,
    deadline: Duration,
    flights: Mutex<Vec<Weak<Flight>>>,
    metrics: Arc<ServerMetrics>,
}

impl Reaper {
    /// A reaper closing watches stalled for `stall` and other responses
    /// not written within `deadline`.
    pub(crate) fn new(stall: Duration, deadline: Duration, metrics: Arc<ServerMetrics>) -> Reaper {
        Reaper {
            epoch: Instant::now(),
            stall,
            deadline,
            flights: Mutex::new(Vec::new()),
            metrics,
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Bytes handed to hyper and not yet written, over every response.
    pub(crate) fn in_flight(&self) -> usize {
        self.metrics.unwritten.load(Ordering::Relaxed)
    }

    /// A new response's flight on the connection `kill` closes; its write
    /// deadline starts now.
    pub(crate) fn flight(self: &Arc<Self>, kill: Arc<ConnKill>) -> Arc<Flight> {
        let deadline = self
            .now_ns()
            .saturating_add(u64::try_from(self.deadline.as_nanos()).unwrap_or(u64::MAX))
            .min(u64::MAX - 1);
        let flight = Arc::new(Flight {
            in_flight: AtomicUsize::new(0),
            moved_ns: AtomicU64::new(0),
            deadline_ns: AtomicU64::new(deadline),
            ended: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            watch_of: OnceLock::new(),
            kill,
            reaper: self.clone(),
        });
        self.flights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(&flight));
        flight
    }

    /// One look: closes the connections past their rule, forgets the
    /// responses gone. Returns how many it closed.
    pub(crate) fn sweep(&self) -> usize {
        let now = self.now_ns();
        let stall = u64::try_from(self.stall.as_nanos()).unwrap_or(u64::MAX);
        let mut closed = Vec::new();
        self.flights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|w| {
                let Some(flight) = w.upgrade() else {
                    return false;
                };
                match flight.verdict(now, stall) {
                    Some(why) => {
                        closed.push((flight, why));
                        false
                    }
                    None => true,
                }
            });
        for (flight, why) in &closed {
            self.metrics.closed(why.label());
            if let Some(watch) = flight.watch_of.get() {
                watch.stalled();
            }
            flight.kill.kill();
        }
        closed.len()
    }

    /// Sweeps until `reaper` is dropped elsewhere: once a second, or at
    /// half the shorter timeout if that is less (at least every 50 ms).
    pub(crate) async fn run(reaper: Weak<Reaper>) {
        let every = reaper.upgrade().map_or(Duration::from_secs(1), |r| {
            (r.stall.min(r.deadline) / 2).clamp(Duration::from_millis(50), Duration::from_secs(1))
        });
        let mut tick = tokio::time::interval(every);
        let mut reported = Reported::default();
        let mut last_log = Instant::now();
        loop {
            tick.tick().await;
            let Some(r) = reaper.upgrade() else {
                return;
            };
            r.sweep();
            if last_log.elapsed() >= Duration::from_secs(1) {
                last_log = Instant::now();
                r.metrics.log_news(&mut reported);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn reaper(stall_ms: u64, deadline_ms: u64) -> (Arc<Reaper>, Arc<ServerMetrics>) {
        let metrics = Arc::new(ServerMetrics::default());
        let r = Reaper::new(
            Duration::from_millis(stall_ms),
            Duration::from_millis(deadline_ms),
            metrics.clone(),
        );
        (Arc::new(r), metrics)
    }

    #[tokio::test]
    async fn bytes_count_in_flight_until_dropped() {
        let (reaper, _) = reaper(1_000, 1_000);
        let flight = reaper.flight(Arc::default());
        let body = http_body_util::Full::new(Bytes::from(vec![7u8; 1000]));
        let mut body = FlightBody::new(body, flight.clone());
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!((flight.in_flight(), reaper.in_flight()), (1000, 1000));
        let half = chunk.slice(500..);
        drop(chunk);
        assert_eq!(flight.in_flight(), 1000, "a slice keeps the chunk");
        drop(half);
        assert_eq!((flight.in_flight(), reaper.in_flight()), (0, 0));
        assert!(body.frame().await.is_none());
        assert_eq!(flight.verdict(u64::MAX - 1, 0), None, "written in full");
    }

    #[tokio::test]
    async fn a_response_not_written_by_its_deadline_is_closed() {
        let (reaper, metrics) = reaper(10_000, 20);
        let kill = Arc::new(ConnKill::default());
        let flight = reaper.flight(kill.clone());
        let mut body = FlightBody::new(
            http_body_util::Full::new(Bytes::from_static(b"abc")),
            flight.clone(),
        );
        let held = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(reaper.sweep(), 0, "within the deadline");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(reaper.sweep(), 1);
        assert!(kill.killed.load(Ordering::Acquire));
        assert_eq!(metrics.closed_total("write_deadline"), 1);
        drop(held);
    }

    #[tokio::test]
    async fn a_watch_stalls_only_while_its_bytes_do_not_move() {
        let (reaper, metrics) = reaper(20, 20);
        let (k1, k2) = (Arc::new(ConnKill::default()), Arc::new(ConnKill::default()));
        let (stuck, moving, idle) = (
            reaper.flight(k1.clone()),
            reaper.flight(k2.clone()),
            reaper.flight(Arc::default()),
        );
        let watches = Arc::new(ResourceMetrics::default());
        for f in [&stuck, &moving, &idle] {
            f.set_watch(watches.clone());
        }
        stuck.handed(10);
        moving.handed(10);
        std::thread::sleep(Duration::from_millis(40));
        moving.written(5);
        assert_eq!(
            reaper.sweep(),
            1,
            "only the stuck one; the idle one holds nothing"
        );
        assert!(k1.killed.load(Ordering::Acquire));
        assert!(!k2.killed.load(Ordering::Acquire));
        assert_eq!(metrics.closed_total("write_stall"), 1);
        assert_eq!(
            watches.stalled_total(),
            1,
            "counted as a terminated watcher"
        );
        drop((stuck, idle));
        moving.written(5);
        assert_eq!(reaper.sweep(), 0);
        assert_eq!(reaper.flights.lock().unwrap().len(), 1);
    }

    #[test]
    fn room_is_what_the_limit_leaves() {
        let (reaper, _) = reaper(1_000, 1_000);
        let flight = reaper.flight(Arc::default());
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(flight.poll_room(&mut cx, 100), Poll::Ready(100));
        flight.handed(60);
        assert_eq!(flight.poll_room(&mut cx, 100), Poll::Ready(40));
        flight.handed(60);
        assert_eq!(flight.poll_room(&mut cx, 100), Poll::Pending);
        flight.written(60);
        assert_eq!(flight.poll_room(&mut cx, 100), Poll::Ready(40));
    }
}
