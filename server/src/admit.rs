//! Admission: how much blocking work, how many watches and how much
//! selector text the server takes on at once, and who waits for a seat.
//!
//! Reads that do engine work on the blocking pool (a list, a get, a
//! watch's initialisation) take a seat of their class first:
//!
//! - [`Class::Read`]: reads of what the cache holds or is about to hold;
//! - [`Class::Waiting`]: reads of a version the cache has not reached,
//!   which may sit idle for the engine's `too_large_timeout` (3 s); they
//!   have seats of their own, so that a crowd of them never makes an
//!   ordinary list wait.
//!
//! A class has a fixed number of seats; a request that finds none free
//! waits in a queue of its client's ([`Client`]: its user, or its
//! address when no user is known), and a freed seat goes
//! to the next client in turn (round robin over clients, FIFO within
//! one: a client that queues a thousand requests delays its own, not
//! others'). The queues hold at most `max_queued` requests in all, each
//! for at most `queue_wait`; past either the request is refused with
//! `429 TooManyRequests` and `Retry-After`, as the apiserver's priority
//! and fairness does. The seats bound the blocking pool's threads.
//!
//! Watches are counted in all and per client, with the selector text
//! they hold (a parsed selector costs several times its text): past
//! `max_watches`, `max_watches_per_client` or `max_selector_bytes` a new
//! watch is refused with 429. A watch holds no seat once it is serving.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herald_kube::ApiError;
use tokio::sync::oneshot;

use crate::counts::ServerMetrics;

/// Whom a request counts against: its user when access control named
/// one (the apiserver's priority and fairness tells flows apart by user
/// name), else the address its connection came from (access control off,
/// or an anonymous request). A user's requests from many addresses share
/// one queue and one watch bound; many users behind one address (a
/// proxy, a node) do not share theirs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    /// A connection's address.
    Addr(IpAddr),
    /// An authenticated user's name.
    User(Arc<str>),
}

impl Default for Client {
    fn default() -> Self {
        Client::Addr(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }
}

/// Why admission refused a request (a label value of
/// `herald_http_rejected_requests_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every seat taken and the queues full.
    QueueFull,
    /// Queued for `queue_wait` without a seat.
    QueueTimeout,
    /// Too many watches (in all, for the client, or selector text).
    WatchLimit,
    /// Too many response bytes not yet taken by their clients.
    Unwritten,
}

impl Refusal {
    /// The label value.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Refusal::QueueFull => "queue_full",
            Refusal::QueueTimeout => "queue_timeout",
            Refusal::WatchLimit => "watch_limit",
            Refusal::Unwritten => "unwritten_bytes",
        }
    }

    /// The answer: 429 with `Retry-After`.
    pub(crate) fn error(self) -> ApiError {
        let why = match self {
            Refusal::QueueFull | Refusal::QueueTimeout => "the server is busy",
            Refusal::WatchLimit => "too many watches",
            Refusal::Unwritten => "too many responses not yet read by their clients",
        };
        ApiError::too_many_requests(
            format!("Too many requests, please try again later ({why})."),
            Duration::from_secs(1),
        )
    }
}

/// The seat classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Reads of what the cache holds.
    Read,
    /// Reads of a version the cache has not reached.
    Waiting,
}

/// The fair queue of one class's seats.
#[derive(Debug)]
pub(crate) struct Seats {
    seats: usize,
    max_queued: usize,
    wait: Duration,
    state: Mutex<Queue>,
    /// Where the seats taken and requests queued are shown (the class's
    /// index in [`ServerMetrics`]'s gauges).
    gauge: Option<(Arc<ServerMetrics>, usize)>,
}

#[derive(Debug, Default)]
struct Queue {
    running: usize,
    queued: usize,
    next_id: u64,
    /// Each client's waiters, oldest first.
    waiters: HashMap<Client, VecDeque<(u64, oneshot::Sender<()>)>>,
    /// Clients with waiters, in the order they are served.
    turn: VecDeque<Client>,
}

/// A seat; dropping it hands it to the next waiter.
#[derive(Debug)]
pub(crate) struct Seat(Arc<Seats>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A queued request; dropped before it is granted (a timeout, its client
/// gone), it leaves the queue.
struct Waiter<'a> {
    seats: &'a Arc<Seats>,
    client: Client,
    id: u64,
    rx: oneshot::Receiver<()>,
    granted: bool,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        let mut q = self.seats.lock();
        if q.remove(&self.client, self.id) {
            self.seats.publish(&q);
            return;
        }
        drop(q);
        // Granted as it gave up: hand the seat on.
        if self.rx.try_recv().is_ok() {
            self.seats.release();
        }
    }
}

impl Queue {
    fn remove(&mut self, client: &Client, id: u64) -> bool {
        let Some(q) = self.waiters.get_mut(client) else {
            return false;
        };
        let Some(at) = q.iter().position(|(i, _)| *i == id) else {
            return false;
        };
        q.remove(at);
        self.queued -= 1;
        if q.is_empty() {
            self.waiters.remove(client);
            self.turn.retain(|c| c != client);
        }
        true
    }
}

impl Seats {
    /// `seats` seats, at most `max_queued` waiters for at most `wait`.
    #[cfg(test)]
    fn new(seats: usize, max_queued: usize, wait: Duration) -> Arc<Seats> {
        Seats::shown(seats, max_queued, wait, None)
    }

    /// The same, shown in `gauge`.
    fn shown(
        seats: usize,
        max_queued: usize,
        wait: Duration,
        gauge: Option<(Arc<ServerMetrics>, usize)>,
    ) -> Arc<Seats> {
        Arc::new(Seats {
            seats: seats.max(1),
            max_queued,
            wait,
            state: Mutex::default(),
            gauge,
        })
    }

    fn publish(&self, q: &Queue) {
        if let Some((metrics, class)) = &self.gauge {
            metrics.seats(*class, q.running, q.queued);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seats taken now, and requests waiting.
    #[cfg(test)]
    fn load(&self) -> (usize, usize) {
        let q = self.lock();
        (q.running, q.queued)
    }

    /// A seat for `client`: at once if one is free and nobody waits, else
    /// after its turn in the queue.
    pub(crate) async fn acquire(self: &Arc<Self>, client: Client) -> Result<Seat, Refusal> {
        let (id, rx) = {
            let mut q = self.lock();
            if q.running < self.seats && q.queued == 0 {
                q.running += 1;
                self.publish(&q);
                return Ok(Seat(self.clone()));
            }
            if q.queued >= self.max_queued {
                return Err(Refusal::QueueFull);
            }
            let (tx, rx) = oneshot::channel();
            let id = q.next_id;
            q.next_id += 1;
            q.queued += 1;
            let mine = q.waiters.entry(client.clone()).or_default();
            mine.push_back((id, tx));
            if mine.len() == 1 {
                q.turn.push_back(client.clone());
            }
            self.publish(&q);
            (id, rx)
        };
        let mut waiter = Waiter {
            seats: self,
            client,
            id,
            rx,
            granted: false,
        };
        match tokio::time::timeout(self.wait, &mut waiter.rx).await {
            Ok(Ok(())) => {
                waiter.granted = true;
                Ok(Seat(self.clone()))
            }
            // The sender is never dropped unsent but by a release that
            // found the waiter gone, which this one is not.
            Ok(Err(_)) | Err(_) => Err(Refusal::QueueTimeout),
        }
    }

    /// A seat is given back: to the next client's oldest waiter, or free.
    fn release(&self) {
        let mut q = self.lock();
        while let Some(client) = q.turn.pop_front() {
            let Some(mine) = q.waiters.get_mut(&client) else {
                continue;
            };
            let Some((_, tx)) = mine.pop_front() else {
                q.waiters.remove(&client);
                continue;
            };
            if mine.is_empty() {
                q.waiters.remove(&client);
            } else {
                q.turn.push_back(client);
            }
            q.queued -= 1;
            if tx.send(()).is_ok() {
                self.publish(&q);
                return;
            }
        }
        q.running -= 1;
        self.publish(&q);
    }
}

/// The admission limits (see the module's docs).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_inflight_reads: usize,
    pub(crate) max_waiting_reads: usize,
    pub(crate) max_queued_reads: usize,
    pub(crate) queue_wait: Duration,
    pub(crate) max_watches: usize,
    pub(crate) max_watches_per_client: usize,
    pub(crate) max_selector_bytes: usize,
    pub(crate) max_unwritten_bytes: usize,
}

/// The server's admission control.
#[derive(Debug)]
pub(crate) struct Admission {
    read: Arc<Seats>,
    waiting: Arc<Seats>,
    watches: Arc<Mutex<Watches>>,
    limits: Limits,
    metrics: Arc<ServerMetrics>,
}

#[derive(Debug, Default)]
struct Watches {
    total: usize,
    selector_bytes: usize,
    by_client: HashMap<Client, usize>,
}

/// An admitted watch; dropping it counts it gone.
#[derive(Debug)]
pub(crate) struct WatchTicket {
    watches: Arc<Mutex<Watches>>,
    client: Client,
    selector_bytes: usize,
}

impl Drop for WatchTicket {
    fn drop(&mut self) {
        let mut w = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        w.total -= 1;
        w.selector_bytes -= self.selector_bytes;
        if let Some(n) = w.by_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                w.by_client.remove(&self.client);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(limits: Limits, metrics: Arc<ServerMetrics>) -> Admission {
        Admission {
            read: Seats::shown(
                limits.max_inflight_reads,
                limits.max_queued_reads,
                limits.queue_wait,
                Some((metrics.clone(), 0)),
            ),
            waiting: Seats::shown(
                limits.max_waiting_reads,
                limits.max_queued_reads,
                limits.queue_wait,
                Some((metrics.clone(), 1)),
            ),
            watches: Arc::default(),
            limits,
            metrics,
        }
    }

    /// A seat of `class` for `client`, or the 429 that refuses it
    /// (counted).
    pub(crate) async fn seat(&self, class: Class, client: Client) -> Result<Seat, ApiError> {
        let seats = match class {
            Class::Read => &self.read,
            Class::Waiting => &self.waiting,
        };
        seats.acquire(client).await.map_err(|r| self.refuse(r))
    }

    /// Refuses a response when `unwritten` bytes already wait for their
    /// clients (counted).
    pub(crate) fn check_unwritten(&self, unwritten: usize) -> Result<(), ApiError> {
        if unwritten >= self.limits.max_unwritten_bytes {
            return Err(self.refuse(Refusal::Unwritten));
        }
        Ok(())
    }

    /// Admits a watch of `client` holding `selector_bytes` of selector
    /// text, or refuses it (counted).
    pub(crate) fn watch(
        &self,
        client: Client,
        selector_bytes: usize,
    ) -> Result<WatchTicket, ApiError> {
        let mut w = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        let mine = w.by_client.get(&client).copied().unwrap_or(0);
        if w.total >= self.limits.max_watches
            || mine >= self.limits.max_watches_per_client
            || w.selector_bytes + selector_bytes > self.limits.max_selector_bytes
        {
            drop(w);
            return Err(self.refuse(Refusal::WatchLimit));
        }
        w.total += 1;
        w.selector_bytes += selector_bytes;
        *w.by_client.entry(client.clone()).or_default() += 1;
        Ok(WatchTicket {
            watches: self.watches.clone(),
            client,
            selector_bytes,
        })
    }

    fn refuse(&self, r: Refusal) -> ApiError {
        self.metrics.rejected(r.label());
        r.error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(n: u8) -> Client {
        Client::Addr(IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)))
    }

    #[tokio::test]
    async fn seats_go_round_robin_over_clients() {
        let seats = Seats::new(1, 100, Duration::from_secs(10));
        let first = seats.acquire(client(1)).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Client 1 queues three, then client 2 one: 2 is served second.
        for (i, c) in [(0, 1), (1, 1), (2, 1), (3, 2)] {
            let (mine, order) = (seats.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let seat = mine.acquire(client(c)).await.unwrap();
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(seat);
            }));
            // Queue in this order.
            while seats.load().1 <= i {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 3, 1, 2]);
        assert_eq!(seats.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_full_queue_and_a_long_wait_are_refused() {
        let seats = Seats::new(1, 1, Duration::from_millis(30));
        let held = seats.acquire(client(1)).await.unwrap();
        let queued = {
            let seats = seats.clone();
            tokio::spawn(async move { seats.acquire(client(2)).await.map(drop) })
        };
        while seats.load().1 == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            seats.acquire(client(3)).await.unwrap_err(),
            Refusal::QueueFull
        );
        assert_eq!(queued.await.unwrap().unwrap_err(), Refusal::QueueTimeout);
        assert_eq!(seats.load(), (1, 0), "the timed-out waiter left the queue");
        drop(held);
        assert_eq!(seats.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_gives_its_turn_on() {
        let seats = Seats::new(1, 10, Duration::from_secs(10));
        let held = seats.acquire(client(1)).await.unwrap();
        let gone = {
            let seats = seats.clone();
            tokio::spawn(async move { seats.acquire(client(2)).await.map(drop) })
        };
        while seats.load().1 == 0 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        assert_eq!(seats.load(), (1, 0));
        drop(held);
        let again = seats.acquire(client(3)).await.unwrap();
        assert_eq!(seats.load(), (1, 0));
        drop(again);
    }

    #[test]
    fn watches_are_bounded_in_all_per_client_and_in_selector_bytes() {
        let metrics = Arc::new(ServerMetrics::default());
        let a = Admission::new(
            Limits {
                max_inflight_reads: 1,
                max_waiting_reads: 1,
                max_queued_reads: 1,
                queue_wait: Duration::from_secs(1),
                max_watches: 3,
                max_watches_per_client: 2,
                max_selector_bytes: 100,
                max_unwritten_bytes: 10,
            },
            metrics.clone(),
        );
        let w1 = a.watch(client(1), 10).unwrap();
        let _w2 = a.watch(client(1), 10).unwrap();
        assert_eq!(a.watch(client(1), 0).unwrap_err().code, 429);
        let _w3 = a.watch(client(2), 10).unwrap();
        assert_eq!(a.watch(client(3), 0).unwrap_err().code, 429);
        drop(w1);
        assert_eq!(
            a.watch(client(3), 81).unwrap_err().code,
            429,
            "selector bytes"
        );
        let _w4 = a.watch(client(3), 80).unwrap();
        assert_eq!(metrics.rejected_total("watch_limit"), 3);
        assert!(a.check_unwritten(9).is_ok());
        assert_eq!(a.check_unwritten(10).unwrap_err().code, 429);
    }
}
