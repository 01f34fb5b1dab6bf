//! One referenced object: its watch, its last state, the `get`s waiting
//! for its sync (seeds/002 `objectCacheItem` and `cacheStore` in one).
//!
//! # States
//!
//! | | stream | `stopped` | `synced` |
//! | --- | --- | --- | --- |
//! | watching, before the first sync | open | no | no |
//! | watching | open | no | yes |
//! | its watch ended, waiting for the backoff | none, `retry_at` set | no | as before |
//! | idle (stopped by the recycler) | none | yes | no: the next `get` restarts it and waits |
//! | immutable | none | yes | yes, for good |
//! | removed (last reference gone), or the manager stopped | none | yes | no (immutable: yes when stopped) |
//!
//! The object's state is kept across a stop, as the reference's store
//! keeps it, but a `get` answers only once a sync has landed after the
//! restart.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use herald::Object;
use herald::reflector::Backoff;

use crate::config::ManagerConfig;
use crate::error::GetError;
use crate::upstream::{ObjectStream, Update, Upstream};

/// The most updates one object's stream yields per turn of the pump,
/// before the others get theirs.
const POLL_BUDGET: usize = 64;

/// A waiting thread re-checks at least this often (real time), whatever
/// the clock does.
pub(crate) const PARK_AT_MOST: Duration = Duration::from_secs(1);

/// What every object shares: the upstream, the settings, the counters and
/// the pump's queues. Holds no object but those queued, so nothing keeps
/// an object alive once its watch is closed and it is unqueued.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) upstream: Box<dyn Upstream>,
    pub(crate) config: ManagerConfig,
    pub(crate) stats: Counters,
    pub(crate) pump: Pump,
}

/// The counters behind [`ManagerStats`](crate::ManagerStats): statistics
/// only, read and written `Relaxed` (nothing is ordered by them).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) watches_open: AtomicUsize,
    pub(crate) syncs: AtomicU64,
    pub(crate) updates: AtomicU64,
    pub(crate) watch_ends: AtomicU64,
    pub(crate) reopens: AtomicU64,
    pub(crate) immutable_stops: AtomicU64,
    pub(crate) idle_stops: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) sync_timeouts: AtomicU64,
    pub(crate) panics: AtomicU64,
}

/// The objects to poll, and the re-open times.
#[derive(Debug, Default)]
pub(crate) struct Pump {
    queue: Mutex<Vec<Arc<Item>>>,
    /// (when, a sequence number for ties) -> the object.
    timers: Mutex<BTreeMap<(Instant, u64), Weak<Item>>>,
    seq: AtomicU64,
    thread: OnceLock<Thread>,
    pub(crate) stopping: AtomicBool,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section here is a push, a take or a split.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pump {
    pub(crate) fn push(&self, item: Arc<Item>) {
        lock(&self.queue).push(item);
        self.unpark();
    }

    pub(crate) fn timer(&self, at: Instant, item: &Arc<Item>) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        lock(&self.timers).insert((at, seq), Arc::downgrade(item));
        self.unpark();
    }

    /// Names the calling thread as the pump, before its first look at the
    /// queue.
    pub(crate) fn attach(&self) {
        let _ = self.thread.set(thread::current());
    }

    pub(crate) fn unpark(&self) {
        // Set by the pump before its first look at the queue, so a push
        // that finds no thread yet is seen by that look.
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// Empties the queues (the manager stopped): the objects they hold
    /// are released.
    pub(crate) fn clear(&self) {
        let queued = std::mem::take(&mut *lock(&self.queue));
        drop(queued);
        lock(&self.timers).clear();
    }

    /// The objects queued so far, in the order they were woken.
    pub(crate) fn take(&self) -> Vec<Arc<Item>> {
        std::mem::take(&mut *lock(&self.queue))
    }

    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.queue).is_empty()
    }

    /// The timers due at `now`, and the next one after them.
    pub(crate) fn due(&self, now: Instant) -> (Vec<Weak<Item>>, Option<Instant>) {
        let mut timers = lock(&self.timers);
        let later = timers.split_off(&(now, u64::MAX));
        let due = std::mem::replace(&mut *timers, later);
        let next = timers.keys().next().map(|(at, _)| *at);
        (due.into_values().collect(), next)
    }
}

pub(crate) struct Item {
    pub(crate) namespace: Box<str>,
    pub(crate) name: Box<str>,
    core: Arc<Core>,
    /// In the pump's queue (or about to be).
    queued: AtomicBool,
    /// References per pod uid (seeds/002 `refMap`), changed under the
    /// manager's map lock: apart from `state`, so that registering pods
    /// never waits for the pump.
    pub(crate) refs: Mutex<HashMap<Box<str>, u32>>,
    state: Mutex<State>,
}

pub(crate) struct State {
    stream: Option<ObjectStream>,
    removed: bool,
    /// The manager stopped.
    shut: bool,
    stopped: bool,
    immutable: bool,
    synced: bool,
    object: Option<Object>,
    last_access: Instant,
    retry_at: Option<Instant>,
    backoff: Backoff,
    last_end: Option<String>,
    waiters: Vec<Thread>,
}

impl Item {
    /// A new object, watched at once unless `start` is false (the
    /// manager is stopped).
    pub(crate) fn new(core: &Arc<Core>, namespace: &str, name: &str, start: bool) -> Arc<Item> {
        let now = core.config.clock.now();
        let item = Arc::new(Item {
            namespace: namespace.into(),
            name: name.into(),
            core: core.clone(),
            queued: AtomicBool::new(false),
            refs: Mutex::new(HashMap::new()),
            state: Mutex::new(State {
                stream: None,
                removed: false,
                shut: !start,
                stopped: !start,
                immutable: false,
                synced: false,
                object: None,
                // The idle time counts from the watch's start (the
                // reference's from the zero time: a watch no one read
                // would stop at the first recycling after its sync).
                last_access: now,
                retry_at: None,
                backoff: Backoff::new(core.config.backoff.clone()),
                last_end: None,
                waiters: Vec::new(),
            }),
        });
        if start {
            let mut st = item.lock();
            item.open(&mut st);
        }
        item
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state whole: a panic in a
        // user's predicate or stream happens between updates.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(self: &Arc<Self>, st: &mut State) {
        self.close(st);
        st.stream = Some(self.core.upstream.watch_object(&self.namespace, &self.name));
        self.core.stats.watches_open.fetch_add(1, Ordering::Relaxed);
        st.stopped = false;
        st.retry_at = None;
        self.schedule();
    }

    fn close(&self, st: &mut State) {
        if st.stream.take().is_some() {
            self.core.stats.watches_open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Stops the watch (seeds/002 `stopThreadUnsafe`): the state is kept,
    /// but unless the object is immutable a `get` waits for a new sync.
    fn halt(&self, st: &mut State) {
        self.close(st);
        st.stopped = true;
        st.retry_at = None;
        if !st.immutable {
            st.synced = false;
        }
        wake_all(st);
    }

    /// Puts this object in the pump's queue, once.
    pub(crate) fn schedule(self: &Arc<Self>) {
        // Pairs with the swap in `poll`: whichever comes second sees the
        // other's writes.
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.core.pump.push(self.clone());
        }
    }

    /// Reads what the stream has (the pump's thread only).
    pub(crate) fn poll(self: &Arc<Self>) {
        // Cleared before the poll: a wake from here on queues it again.
        self.queued.swap(false, Ordering::AcqRel);
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let mut st = self.lock();
        for _ in 0..POLL_BUDGET {
            let Some(stream) = st.stream.as_mut() else {
                return;
            };
            let update = match stream.as_mut().poll_next(&mut cx) {
                Poll::Pending => return,
                Poll::Ready(Some(update)) => update,
                Poll::Ready(None) => Update::Ended("the upstream closed the watch".into()),
            };
            self.apply(&mut st, update);
        }
        drop(st);
        self.schedule();
    }

    fn apply(self: &Arc<Self>, st: &mut State, update: Update) {
        let stats = &self.core.stats;
        let object = match update {
            Update::Synced(object) => {
                stats.syncs.fetch_add(1, Ordering::Relaxed);
                st.synced = true;
                st.last_end = None;
                wake_all(st);
                object
            }
            Update::Put(object) => {
                stats.updates.fetch_add(1, Ordering::Relaxed);
                Some(object)
            }
            Update::Deleted => {
                stats.updates.fetch_add(1, Ordering::Relaxed);
                None
            }
            Update::Ended(why) => {
                stats.watch_ends.fetch_add(1, Ordering::Relaxed);
                self.close(st);
                st.last_end = Some(why);
                if !st.stopped && !st.removed {
                    let now = self.core.config.clock.now();
                    let at = now.checked_add(st.backoff.next_delay(now)).unwrap_or(now);
                    st.retry_at = Some(at);
                    self.core.pump.timer(at, self);
                }
                return;
            }
        };
        let immutable = object.as_ref().is_some_and(|o| {
            let test = &self.core.config.immutable;
            // A predicate that panics is counted, and the object taken as
            // mutable (watched): the update is applied either way.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(o))).unwrap_or_else(
                |_| {
                    stats.panics.fetch_add(1, Ordering::Relaxed);
                    false
                },
            )
        });
        st.object = object;
        if immutable {
            // Seen immutable, now or later: its last value is served for
            // as long as it is referenced, without a watch.
            st.immutable = true;
            stats.immutable_stops.fetch_add(1, Ordering::Relaxed);
            self.halt(st);
        }
    }

    /// Opens the watch again once its backoff is over (the pump's timer).
    pub(crate) fn reopen_if_due(self: &Arc<Self>, now: Instant) {
        let mut st = self.lock();
        let due = st.retry_at.is_some_and(|at| at <= now);
        if due && st.stream.is_none() && !st.stopped && !st.removed {
            self.core.stats.reopens.fetch_add(1, Ordering::Relaxed);
            self.open(&mut st);
        }
    }

    /// Stops the watch if no `get` read it for `max_idle` (seeds/002
    /// `stopIfIdle`: only a synced one, so a slow first list is not
    /// thrown away).
    pub(crate) fn stop_if_idle(&self, now: Instant, max_idle: Duration) -> bool {
        let mut st = self.lock();
        let idle = st
            .last_access
            .checked_add(max_idle)
            .is_some_and(|until| now > until);
        if !st.stopped && st.synced && idle {
            self.halt(&mut st);
            return true;
        }
        false
    }

    /// The last reference is gone.
    pub(crate) fn remove(&self) {
        let mut st = self.lock();
        st.removed = true;
        self.halt(&mut st);
    }

    /// The manager stops.
    pub(crate) fn shut(&self) {
        let mut st = self.lock();
        st.shut = true;
        self.halt(&mut st);
    }

    /// The object's state once synced, waiting up to the sync timeout
    /// (seeds/002 `Get`: restart if idle, then wait for the sync).
    pub(crate) fn get(self: &Arc<Self>) -> Result<Option<Object>, GetError> {
        let clock = &self.core.config.clock;
        let start = clock.now();
        let deadline = start.checked_add(self.core.config.sync_timeout);
        let me = thread::current();
        let mut st = self.lock();
        // Recorded whether or not this get succeeds (the reference: it
        // protects from a racy stop).
        st.last_access = start;
        if st.stopped && !st.immutable && !st.removed && !st.shut {
            self.core.stats.restarts.fetch_add(1, Ordering::Relaxed);
            self.open(&mut st);
        }
        let answer = loop {
            if st.removed {
                break Err(GetError::NotRegistered {
                    namespace: self.namespace.to_string(),
                    name: self.name.to_string(),
                });
            }
            if st.synced {
                break Ok(st.object.clone());
            }
            if st.shut {
                break Err(GetError::Stopped);
            }
            let now = clock.now();
            if deadline.is_some_and(|d| now >= d) {
                self.core
                    .stats
                    .sync_timeouts
                    .fetch_add(1, Ordering::Relaxed);
                break Err(GetError::SyncTimeout {
                    namespace: self.namespace.to_string(),
                    name: self.name.to_string(),
                    waited: now.saturating_duration_since(start),
                    last_end: st.last_end.clone(),
                });
            }
            if !st.waiters.iter().any(|t| t.id() == me.id()) {
                st.waiters.push(me.clone());
            }
            drop(st);
            // A sync between the unlock and the park unparks us first, and
            // the park returns at once.
            match deadline {
                Some(d) => clock.park_until(d, PARK_AT_MOST),
                None => thread::park_timeout(PARK_AT_MOST),
            }
            st = self.lock();
        };
        st.waiters.retain(|t| t.id() != me.id());
        answer
    }
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Item({:?}/{:?})", self.namespace, self.name)
    }
}

fn wake_all(st: &mut State) {
    for t in st.waiters.drain(..) {
        t.unpark();
    }
}

impl Wake for Item {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}
