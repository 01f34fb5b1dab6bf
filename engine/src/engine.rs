//! The engine: configuration, lifecycle, the writer handle and watch
//! creation.
//!
//! # Synchronization
//!
//! - The writer's state (the store, the ring's bookkeeping, the current
//!   resource version and generation) lives in one `Mutex`, held for O(1) or
//!   O(log n) work per change. Besides the writer, only watches resolving
//!   their start (a snapshot clone or a binary search) and the dispatcher's
//!   maintenance tick (with `try_lock`) take it. Replays and live delivery
//!   never do.
//! - The writer waits only for the dispatcher, and only when the ring is at
//!   its upper bound and the slot it needs holds an undispatched change; it
//!   waits without holding the lock.
//! - Registrations and removals reach the dispatcher through a small
//!   mutex-protected queue (they are rare next to changes), with a flag the
//!   dispatcher polls once per batch.

use std::time::{Duration, Instant};

use crate::clock::{Clock, SystemClock};
use crate::dispatch::{self, Request};
use crate::error::{ConfigError, WatchError, WriteError};
use crate::event::{Change, ChangeKind, Gone};
use crate::filter::Filter;
use crate::index::Routes;
use crate::read::{VIEW_EVERY, View};
use crate::ring::{Gated, Record, RecordKind, Resize, Ring, RingWriter, Sizing};
use crate::stats::{Counters, Stats};
use crate::store::{State, Stored};
use crate::sync::{
    Arc, ArcSwap, AtomicBool, AtomicU8, AtomicU64, CachePadded, JoinHandle, Mutex, MutexGuard,
    OnceLock, Ordering, Thread, fence, park_timeout,
};
use crate::watcher::{Route, Start, Watch, WatchRequest, WatcherShared, WatcherSpec};
use crate::{GetResponse, ListRequest, ListResponse, ReadAt, ReadError};
use crate::{Object, ResourceVersion};

/// Engine settings. The defaults are the reference's constants.
///
/// ```
/// use std::time::Duration;
/// use herald::Config;
/// let config = Config::default()
///     .index("spec.nodeName")
///     .history_bounds(100, 102_400)
///     .history_window(Duration::from_secs(75))
///     .too_large_timeout(Duration::from_secs(3));
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) history_lower: usize,
    pub(crate) history_upper: usize,
    pub(crate) history_window: Duration,
    pub(crate) history_max_bytes: Option<usize>,
    pub(crate) indexes: Vec<String>,
    pub(crate) list_indexes: Vec<String>,
    pub(crate) too_large_timeout: Duration,
    pub(crate) tick: Duration,
    pub(crate) bookmark_frequency: Duration,
    pub(crate) slow_watchers: SlowWatchers,
    pub(crate) spill_limit: usize,
    pub(crate) spill_budget: u64,
    pub(crate) clock: std::sync::Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            // seeds: watch_cache.go defaultLowerBoundCapacity, defaultUpperBoundCapacity
            history_lower: 100,
            history_upper: 100 * 1024,
            // seeds: watch_cache.go eventFreshDuration
            history_window: Duration::from_secs(75),
            history_max_bytes: None,
            indexes: Vec::new(),
            list_indexes: Vec::new(),
            // seeds: cacher.go blockTimeout (waitUntilFreshAndBlock)
            too_large_timeout: Duration::from_secs(3),
            // seeds: cacher.go dispatchEvents (bookmark timer, jittered 25%)
            tick: Duration::from_secs(1),
            // seeds: cacher.go defaultBookmarkFrequency
            bookmark_frequency: Duration::from_secs(60),
            slow_watchers: SlowWatchers::default(),
            spill_limit: DEFAULT_SPILL_LIMIT,
            spill_budget: DEFAULT_SPILL_BUDGET,
            clock: std::sync::Arc::new(SystemClock),
        }
    }
}

/// What the dispatcher does with a watcher whose queue is full. See the
/// crate docs, [Slow watchers](crate#slow-watchers), for the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SlowWatchers {
    /// Park the watcher at the first change it missed; it feeds itself from
    /// the history ring and is resumed once it has caught up; it ends with
    /// `Gone` only if that change leaves the ring first. The dispatcher
    /// never waits. The default: one slow reader costs no one else
    /// anything, and a reader that is slow for a moment is not cut off.
    #[default]
    Park,
    /// The reference's rule: wait for full queues out of a shared time
    /// budget (refilled at `refill_per_second` per second of wall time, at
    /// most `cap`, starting empty); a watcher still full when the budget is
    /// spent gets one more try and otherwise ends with `TooSlow` (after
    /// draining, if it holds an undelivered initial-events-end bookmark).
    TimeBudget {
        /// Budget accrued per second (reference 50 ms).
        refill_per_second: Duration,
        /// The most the budget holds (reference 100 ms).
        cap: Duration,
    },
}

impl SlowWatchers {
    /// [`SlowWatchers::TimeBudget`] with the reference's constants: 50 ms
    /// per second, capped at 100 ms.
    pub const fn reference_budget() -> SlowWatchers {
        SlowWatchers::TimeBudget {
            refill_per_second: Duration::from_millis(50),
            cap: Duration::from_millis(100),
        }
    }
}

impl Config {
    /// The largest history bound [`Config::history_bounds`] accepts: 2^30
    /// changes, ten thousand times the reference's upper bound. The ring's
    /// slot array for `lower` is allocated up front (a pointer per 32
    /// changes), and a position must stay far from `u64`'s end; a bound
    /// past this is a mistake, not a wish.
    pub const MAX_HISTORY: usize = 1 << 30;

    /// Adds a trigger index on a field (e.g. `spec.nodeName`). Watches whose
    /// field selector requires an exact value of it are routed by that value.
    pub fn index(mut self, field: &str) -> Self {
        self.indexes.push(field.to_owned());
        self
    }

    /// Adds a list index on a field: [`Engine::list`] with a field
    /// selector that requires an exact value of it is served from the
    /// index, not a scan. Separate from [`Config::index`], as the
    /// reference's `Indexers` are from its trigger: the writer maintains a
    /// list index on every change that moves an object between values,
    /// which costs it (in the kubelet-shaped perf run, 100,000 nodes, one
    /// change in ten a move, about a third of its rate), and a cache whose
    /// watchers need routing may not serve lists by that field at all.
    pub fn list_index(mut self, field: &str) -> Self {
        self.list_indexes.push(field.to_owned());
        self
    }

    /// The history ring's capacity bounds, in changes (reference 100 and
    /// 102,400). The ring starts at `lower`. `1 <= lower <= upper <=`
    /// [`Config::MAX_HISTORY`], or [`Engine::new`] refuses the
    /// configuration.
    ///
    /// ```
    /// use herald::{Config, ConfigError, Engine};
    /// let huge = Config::default().history_bounds(100, usize::MAX);
    /// assert!(matches!(Engine::new(huge), Err(ConfigError::HistoryBounds { .. })));
    /// ```
    pub fn history_bounds(mut self, lower: usize, upper: usize) -> Self {
        self.history_lower = lower;
        self.history_upper = upper;
        self
    }

    /// The history window (reference 75 s): the ring doubles while all it
    /// holds is younger, halves when even its newest quarter is older.
    pub fn history_window(mut self, window: Duration) -> Self {
        self.history_window = window;
        self
    }

    /// Bounds the history by the approximate bytes of the objects it holds:
    /// the oldest changes are evicted to stay under it.
    pub fn history_max_bytes(mut self, bytes: usize) -> Self {
        self.history_max_bytes = Some(bytes);
        self
    }

    /// How long a watch from a future resource version waits for the cache
    /// before ending with `TooLargeResourceVersion` (reference 3 s).
    /// `Duration::MAX` waits for ever. Every duration setting saturates
    /// the same way: a time past the clock's range is never.
    pub fn too_large_timeout(mut self, timeout: Duration) -> Self {
        self.too_large_timeout = timeout;
        self
    }

    /// The dispatcher's tick (reference 1 s): bookmarks come due, and the
    /// history shrinks when idle. Each tick is jittered by up to a quarter
    /// (1 s to 1.25 s by default), as in the reference, so that engines
    /// started together do not tick together.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// How often a watcher that allows bookmarks gets one (reference 1
    /// min); one also comes 2 s before its deadline.
    pub fn bookmark_frequency(mut self, every: Duration) -> Self {
        self.bookmark_frequency = every;
        self
    }

    /// The slow-watcher policy (default [`SlowWatchers::Park`]).
    pub fn slow_watchers(mut self, policy: SlowWatchers) -> Self {
        self.slow_watchers = policy;
        self
    }

    /// Under [`SlowWatchers::Park`]: how many changes a selective watcher
    /// (one with a key scope or a selector) may have waiting beyond its
    /// full queue before it is parked (default 4,096, at most 32 KiB per
    /// watcher, and only while it is behind; 0 parks at the first full
    /// queue).
    ///
    /// A parked watcher feeds itself from the history ring, which costs it
    /// a filter evaluation per change in the ring, not per change it may
    /// see: cheap for a watcher that admits most changes, costly for one
    /// that admits a few (a kubelet's node watcher under a burst). The
    /// overflow holds only the changes the watcher admits, in order, so a
    /// selective watcher that falls behind for a moment catches up at the
    /// cost of what it is owed. A watcher that admits everything never
    /// overflows: its replay is as cheap as its queue.
    pub fn spill_limit(mut self, changes: usize) -> Self {
        self.spill_limit = changes;
        self
    }

    /// Under [`SlowWatchers::Park`]: how many change handles (8 bytes
    /// each) all the overflows of the engine may hold together (default
    /// 4 Mi handles, 32 MiB; [`Stats::overflow_handles`](crate::Stats::overflow_handles)
    /// says how many they hold). Once they hold that many, a selective
    /// watcher whose queue is full is parked instead of spilling: a parked
    /// watcher holds nothing beyond its queue and feeds itself from the
    /// history ring, so it loses nothing and ends only if the writer laps
    /// it (`Gone`). A stalled consumer therefore costs at most its queue
    /// plus its share of this budget, and ten thousand of them cost this
    /// budget, not ten thousand overflows. Handles come back to the budget
    /// when a consumer takes its overflow, is parked, or ends.
    ///
    /// ```
    /// use herald::Config;
    /// // 1 MiB of overflow for the whole engine.
    /// let config = Config::default().spill_budget(128 * 1024);
    /// ```
    pub fn spill_budget(mut self, handles: u64) -> Self {
        self.spill_budget = handles;
        self
    }

    /// The clock every time rule reads (default [`SystemClock`]); tests use
    /// a [`ManualClock`](crate::ManualClock).
    ///
    /// ```
    /// use herald::{Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let config = Config::default().clock(clock.clone());
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = std::sync::Arc::new(clock);
        self
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.history_lower == 0
            || self.history_lower > self.history_upper
            || self.history_upper > Config::MAX_HISTORY
        {
            return Err(ConfigError::HistoryBounds {
                lower: self.history_lower,
                upper: self.history_upper,
            });
        }
        for (d, what) in [
            (self.history_window, "history_window"),
            (self.too_large_timeout, "too_large_timeout"),
            (self.tick, "tick"),
            (self.bookmark_frequency, "bookmark_frequency"),
        ] {
            if d.is_zero() {
                return Err(ConfigError::ZeroDuration(what));
            }
        }
        for indexes in [&self.indexes, &self.list_indexes] {
            for (i, f) in indexes.iter().enumerate() {
                if f.is_empty() || indexes[..i].contains(f) {
                    return Err(ConfigError::BadIndex(f.clone()));
                }
            }
        }
        Ok(())
    }

    /// The reference's watcher queue size (`suggestedWatchChannelSize`,
    /// seeds/004): about one second of history, at least 10, at most 10 for
    /// an indexed watcher, 1000 for an unindexed one when an index exists,
    /// 100 without indexes.
    fn queue_capacity(&self, ring_capacity: usize, indexed: bool) -> usize {
        let per_second = (ring_capacity as f64 / self.history_window.as_secs_f64()).ceil();
        let max = match (self.indexes.is_empty(), indexed) {
            (false, true) => 10,
            (false, false) => 1000,
            (true, _) => 100,
        };
        (per_second as usize).clamp(MIN_QUEUE, max.max(MIN_QUEUE))
    }
}

/// [`Config::spill_limit`]'s default.
const DEFAULT_SPILL_LIMIT: usize = 4096;

/// [`Config::spill_budget`]'s default: 4 Mi handles, 32 MiB.
const DEFAULT_SPILL_BUDGET: u64 = 4 << 20;

/// The smallest watcher queue (the reference's 10). One under loom, so
/// that a model fills a queue with a single change.
const MIN_QUEUE: usize = if cfg!(herald_loom) { 1 } else { 10 };

/// Where the engine is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Before the first `replace` (the initial list). Watches wait.
    Pending,
    /// Serving.
    Ready,
    /// Stopped; final.
    Stopped,
}

const PENDING: u8 = 0;
const READY: u8 = 1;
const STOPPED: u8 = 2;

/// What only the writer changes, under `Shared::state`.
#[derive(Debug)]
pub(crate) struct WriterState {
    pub(crate) ring: RingWriter,
    /// key -> (object, the resource version of its last change), and the
    /// field indexes.
    pub(crate) store: State,
    /// Changes since the last published view.
    pub(crate) since_view: u32,
    pub(crate) rv: ResourceVersion,
    pub(crate) generation: u64,
}

/// Registrations, removals and resumes on their way to the dispatcher, in
/// the order they were made (a watch's removal never overtakes its
/// registration).
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub(crate) requests: Vec<Request>,
    /// Set by the dispatcher when it exits: nothing more will be served.
    pub(crate) closed: bool,
}

/// Why one write attempt did not go through.
enum Attempt {
    /// Refused for good: the error goes back to the caller.
    Refused(WriteError),
    /// The ring has no free slot yet: wait for the dispatcher and retry.
    Gated(Gated),
}

impl From<WriteError> for Attempt {
    fn from(e: WriteError) -> Self {
        Attempt::Refused(e)
    }
}

impl From<Gated> for Attempt {
    fn from(g: Gated) -> Self {
        Attempt::Gated(g)
    }
}

/// Which way a re-list may move the engine's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relist {
    /// `Writer::replace`: not below the engine's.
    Forward,
    /// `Writer::replace_after_regression`: below it.
    Back,
}

/// Everything the engine's threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) ring: Arc<Ring>,
    pub(crate) state: Mutex<WriterState>,
    /// `PENDING`, `READY` or `STOPPED`. Written only under `state`'s lock;
    /// read with `Acquire` (pairs with the `Release` stores) by callers
    /// outside the lock, which want it ordered with the state it announces.
    lifecycle: AtomicU8,
    /// The writer's resource version (changes and progress), for waits and
    /// `Engine::resource_version`. Written under `state`'s lock with
    /// `Release`; read with `Acquire`. The dispatcher only compares it with
    /// the versions watches wait for; the start itself is resolved under
    /// the lock, so a stale read only delays an activation by one loop.
    pub(crate) current_rv: AtomicU64,
    /// Positions below this have been fanned out by the dispatcher (its
    /// `Release` store after the batch pairs with the writer's `Acquire`
    /// load before it reuses a slot).
    pub(crate) dispatched: CachePadded<AtomicU64>,
    pub(crate) dispatcher: OnceLock<Thread>,
    /// The writer waits for the dispatcher: set by the writer before it
    /// re-checks `dispatched`, cleared by whoever wakes it; each side
    /// fences between its store and its load (see `wait_for_dispatcher`).
    writer_waiting: AtomicBool,
    writer_thread: Mutex<Option<Thread>>,
    pub(crate) control: Mutex<Control>,
    /// Set (`Release`) after a request is queued under `control`'s lock;
    /// the dispatcher swaps it (`Acquire`) once per loop and then takes the
    /// lock, which orders the lists themselves.
    pub(crate) control_pending: AtomicBool,
    /// Set once by `stop` (`Release`, after the lifecycle store); read with
    /// `Acquire` by the dispatcher and by waiting writers.
    pub(crate) stop_requested: AtomicBool,
    pub(crate) routes: ArcSwap<Routes>,
    pub(crate) index_fields: std::sync::Arc<[Box<str>]>,
    /// The list indexes' fields (`Config::list_index`).
    pub(crate) list_fields: std::sync::Arc<[Box<str>]>,
    /// The state as last published, for readers (see `read.rs`).
    pub(crate) view: ArcSwap<View>,
    /// A reader found the view stale: the writer publishes at its next
    /// change (`Relaxed`: a missed or late request costs only a replay).
    pub(crate) view_wanted: AtomicBool,
    pub(crate) counters: Counters,
    /// Watcher ids: unique is all that matters, so `Relaxed`.
    next_id: AtomicU64,
    /// When the engine was created, on its clock: time zero for the
    /// latency stamps and the dispatcher's tick, wheel and budget.
    pub(crate) epoch: Instant,
    /// Why the dispatcher failed (its panic's message), set once before
    /// the engine stops; see [`Engine::failure`].
    pub(crate) failure: OnceLock<String>,
    /// This engine's random id, carried by its continue tokens so it
    /// refuses another engine's (`read.rs`).
    pub(crate) engine_id: u64,
}

impl Shared {
    pub(crate) fn lock_state(&self) -> MutexGuard<'_, WriterState> {
        // A panic while holding the lock leaves consistent state behind
        // (every mutation completes before the guard drops), so poisoning
        // carries no information here.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn lock_control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer's calls need a listed, running engine. Call with the
    /// writer lock held (lifecycle changes happen under it).
    fn check_ready(&self) -> Result<(), WriteError> {
        match self.lifecycle.load(Ordering::Acquire) {
            READY => Ok(()),
            PENDING => Err(WriteError::NotReady),
            _ => Err(WriteError::Stopped),
        }
    }

    pub(crate) fn wake_dispatcher(&self) {
        if let Some(t) = self.dispatcher.get() {
            t.unpark();
        }
    }

    /// Dispatcher (after advancing `dispatched`) and `stop` (after
    /// `stop_requested`): wakes a writer waiting for either.
    pub(crate) fn wake_writer_if_waiting(&self) {
        // SeqCst fence: orders the caller's store before the flag's load;
        // pairs with the fence in `wait_for_dispatcher` (Dekker): either
        // the writer sees the store or this sees the flag. One fence per
        // batch of up to 256 changes.
        fence(Ordering::SeqCst);
        if self.writer_waiting.load(Ordering::Relaxed)
            && self.writer_waiting.swap(false, Ordering::Relaxed)
        {
            if let Some(t) = self
                .writer_thread
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                t.unpark();
            }
        }
    }

    /// Nanoseconds since the engine's epoch, plus one (a stamp; 0 means
    /// none).
    pub(crate) fn stamp(&self, at: Instant) -> u64 {
        let ns = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(ns).unwrap_or(u64::MAX - 1) + 1
    }

    /// A watch received `rec` from its queue: samples enqueued -> received.
    pub(crate) fn record_received(&self, rec: &Record) {
        // Relaxed: written before the push whose pop ordered it.
        let enqueued = rec.enqueued.load(Ordering::Relaxed);
        if enqueued != 0 {
            let now = self.stamp(self.config.clock.now());
            self.counters
                .enqueued_to_received
                .record(now.saturating_sub(enqueued));
        }
    }

    /// Publishes the writer's state for readers (under the writer lock).
    pub(crate) fn publish_view(&self, st: &mut WriterState) -> Arc<View> {
        st.since_view = 0;
        self.view_wanted.store(false, Ordering::Relaxed);
        let view = Arc::new(View {
            state: st.store.clone(),
            rv: st.rv,
            pos: st.ring.head(),
            generation: st.generation,
        });
        self.view.store(view.clone());
        view
    }

    pub(crate) fn lifecycle(&self) -> Lifecycle {
        match self.lifecycle.load(Ordering::Acquire) {
            PENDING => Lifecycle::Pending,
            READY => Lifecycle::Ready,
            _ => Lifecycle::Stopped,
        }
    }

    /// Marks the engine stopped (final), tells the dispatcher, and wakes
    /// a writer waiting for it.
    pub(crate) fn request_stop(&self) {
        {
            let _st = self.lock_state();
            self.lifecycle.store(STOPPED, Ordering::Release);
        }
        self.stop_requested.store(true, Ordering::Release);
        self.wake_dispatcher();
        self.wake_writer_if_waiting();
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stop_requested.load(Ordering::Acquire)
    }

    /// Queues the removal of an ended watcher (idempotent).
    pub(crate) fn unregister(&self, w: &Arc<WatcherShared>) {
        self.send_control(|c| c.requests.push(Request::Unregister(w.clone())));
    }

    /// Asks the dispatcher to feed a parked watcher again.
    pub(crate) fn request_resume(&self, w: &Arc<WatcherShared>) {
        self.send_control(|c| c.requests.push(Request::Resume(w.clone())));
    }

    /// Hands a request to the dispatcher; returns false once it has exited.
    fn send_control(&self, request: impl FnOnce(&mut Control)) -> bool {
        let mut c = self.lock_control();
        if c.closed {
            return false;
        }
        request(&mut c);
        // Release: pairs with the dispatcher's Acquire swap of the flag. A
        // swap rather than a store: the same on the hardware for a rare
        // request, and loom 0.7 can let a plain store race past a
        // concurrent swap (tokio-rs/loom#254), losing the request in the
        // model though never in the real memory model.
        self.control_pending.swap(true, Ordering::Release);
        drop(c);
        self.wake_dispatcher();
        true
    }

    /// Runs one write under the writer lock, waiting (without the lock)
    /// for the dispatcher and retrying while the ring refuses with
    /// [`Gated`]. `attempt` gets the state and the dispatcher's cursor.
    fn write(
        &self,
        mut attempt: impl FnMut(&mut WriterState, u64) -> Result<Option<Resize>, Attempt>,
    ) -> Result<(), WriteError> {
        loop {
            let mut st = self.lock_state();
            let dispatched = self.dispatched.load(Ordering::Acquire);
            match attempt(&mut st, dispatched) {
                Err(Attempt::Refused(e)) => return Err(e),
                Err(Attempt::Gated(Gated { reused })) => {
                    drop(st);
                    self.wait_for_dispatcher(reused);
                }
                Ok(resize) => {
                    let c = &self.counters;
                    match resize {
                        Some(Resize::Grew) => Counters::add(&c.ring_grows, 1),
                        Some(Resize::Shrank) => Counters::add(&c.ring_shrinks, 1),
                        None => {}
                    }
                    Counters::set(&c.ring_capacity, st.ring.capacity() as u64);
                    Counters::set(&c.ring_len, st.ring.len() as u64);
                    drop(st);
                    self.wake_dispatcher();
                    return Ok(());
                }
            }
        }
    }

    /// Waits (without the writer lock) until the dispatcher has moved past
    /// `pos`, or the engine stops.
    fn wait_for_dispatcher(&self, pos: u64) {
        Counters::add(&self.counters.writer_gated_waits, 1);
        *self.writer_thread.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(crate::sync::current());
        loop {
            // Announce, fence, then look: pairs with the fence in
            // `wake_writer_if_waiting` (Dekker), so a wake cannot be lost
            // (the loom model `a_gated_writer_is_woken` checks it). A swap,
            // not a store: see `send_control` (loom#254).
            self.writer_waiting.swap(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if self.dispatched.load(Ordering::Acquire) > pos || self.is_stopping() {
                self.writer_waiting.swap(false, Ordering::Relaxed);
                return;
            }
            self.wake_dispatcher();
            // The timeout only bounds the damage of a bug; the protocol
            // above needs no poll.
            park_timeout(Duration::from_millis(100));
        }
    }

    /// A re-list under the writer lock: the marker, the store, the
    /// version, the view, in that order. The version is stored before the
    /// view is published, so a reader that finds the new generation's
    /// view, having loaded it before the version, also loads a version of
    /// that generation; one that loads the new version with an older view
    /// finds the marker below the head it loads next and starts over (see
    /// `read.rs`, Snapshots). A re-list after a regression lowers the
    /// version, so a version read across it would mislabel the state.
    fn relist_locked(
        &self,
        st: &mut WriterState,
        store: State,
        rv: ResourceVersion,
        dispatched: u64,
    ) -> Result<Option<Resize>, Attempt> {
        let generation = st.generation + 1;
        let at = self.config.clock.now();
        let (_, resize) = st.ring.append(
            RecordKind::Relist,
            rv,
            None,
            None,
            None,
            generation,
            at,
            dispatched,
        )?;
        st.store = store;
        st.rv = rv;
        st.generation = generation;
        self.current_rv.store(rv.get(), Ordering::Release);
        self.publish_view(st);
        self.lifecycle.store(READY, Ordering::Release);
        Counters::add(&self.counters.relists, 1);
        Ok(resize)
    }
}

/// The engine: a watch cache for one resource type. Cheap to clone (a
/// shared handle); the last clone to drop stops it.
///
/// See the [crate docs](crate) for the model and an example.
#[derive(Debug, Clone)]
pub struct Engine {
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        stop(&self.shared, &self.dispatcher);
    }
}

/// Stops the engine and returns once its dispatcher has exited (so every
/// watch has its end), whoever else is stopping it at the same time.
fn stop(shared: &Shared, dispatcher: &Mutex<Option<JoinHandle<()>>>) {
    shared.request_stop();
    // The dispatcher itself (user code it calls, such as a clock, may stop
    // the engine) must not wait for its own exit.
    if shared
        .dispatcher
        .get()
        .is_some_and(|t| t.id() == crate::sync::current().id())
    {
        return;
    }
    // Joined under the lock: a concurrent caller waits on the lock until
    // the join is done, then finds the handle taken.
    let mut handle = dispatcher.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = handle.take() {
        // A panic inside the dispatcher is caught in `dispatch::run`, which
        // then ends every watch; the thread itself returns normally.
        let _ = h.join();
    }
}

impl Engine {
    /// Starts an engine and its dispatcher thread; returns the engine and
    /// its one writer.
    ///
    /// ```
    /// let (engine, writer) = herald::Engine::new(herald::Config::default())?;
    /// assert_eq!(engine.lifecycle(), herald::Lifecycle::Pending);
    /// # drop(writer);
    /// # Ok::<(), herald::ConfigError>(())
    /// ```
    pub fn new(config: Config) -> Result<(Engine, Writer), ConfigError> {
        config.validate()?;
        let (ring_writer, ring) = RingWriter::new(Sizing {
            lower: config.history_lower,
            upper: config.history_upper,
            window: config.history_window,
            max_bytes: config.history_max_bytes,
        });
        let index_fields: std::sync::Arc<[Box<str>]> =
            config.indexes.iter().map(|f| f.as_str().into()).collect();
        let list_fields: std::sync::Arc<[Box<str>]> = config
            .list_indexes
            .iter()
            .map(|f| f.as_str().into())
            .collect();
        let counters = Counters::default();
        Counters::set(&counters.ring_capacity, ring_writer.capacity() as u64);
        let shared = Arc::new(Shared {
            ring,
            state: Mutex::new(WriterState {
                ring: ring_writer,
                store: State::new(list_fields.clone()),
                since_view: 0,
                rv: ResourceVersion::ZERO,
                generation: 0,
            }),
            lifecycle: AtomicU8::new(PENDING),
            current_rv: AtomicU64::new(0),
            dispatched: CachePadded::new(AtomicU64::new(0)),
            dispatcher: OnceLock::new(),
            writer_waiting: AtomicBool::new(false),
            writer_thread: Mutex::new(None),
            control: Mutex::new(Control::default()),
            control_pending: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            routes: ArcSwap::from_pointee(Routes::new(index_fields.clone())),
            view: ArcSwap::from_pointee(View {
                state: State::new(list_fields.clone()),
                rv: ResourceVersion::ZERO,
                pos: 0,
                generation: 0,
            }),
            view_wanted: AtomicBool::new(false),
            index_fields,
            list_fields,
            counters,
            next_id: AtomicU64::new(0),
            epoch: config.clock.now(),
            failure: OnceLock::new(),
            engine_id: crate::read::engine_id(),
            config,
        });
        let for_thread = shared.clone();
        let join = crate::sync::spawn("herald-dispatch".into(), move || {
            dispatch::run(for_thread);
        })
        .map_err(ConfigError::Spawn)?;
        // Set before anyone else holds the engine: no wake can be lost.
        let _ = shared.dispatcher.set(join.thread().clone());
        let engine = Engine {
            handle: Arc::new(Handle {
                shared: shared.clone(),
                dispatcher: Mutex::new(Some(join)),
            }),
        };
        Ok((engine, Writer { shared }))
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// Starts a watch. Validation and a too-old start version are reported
    /// here; what can only be known later (the cache never reaching a future
    /// version, falling out of history, a re-list) ends the watch with a
    /// reason instead.
    ///
    /// # When a watch begins
    ///
    /// The start is checked here, but *resolved* at the watch's first
    /// receive: the snapshot of an initial list is the state then, and a
    /// watch from version `R` replays from the ring then. A watch created at
    /// `R` and first read after the writer has pushed `R + 1` out of the
    /// history ends with [`EndReason::Gone`](crate::EndReason::Gone), as a
    /// Kubernetes watch whose client connects late does. Pinning the
    /// history for every created watch would let an unread handle hold the
    /// ring (and the writer) back; read a watch promptly, or size the
    /// history ([`Config::history_bounds`]) for the delay.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default().history_bounds(4, 4))?;
    /// writer.replace([], 10.into())?;
    /// for rv in 11..=20 {
    ///     writer.apply(Change::added(Object::builder("ns", &rv.to_string()).build(), rv.into()))?;
    /// }
    /// let err = engine.watch(WatchRequest::new().resource_version(Some(12.into()))).unwrap_err();
    /// assert_eq!(err.to_string(), "too old resource version: 12 (16)");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn watch(&self, req: WatchRequest) -> Result<Watch, WatchError> {
        let shared = self.shared();
        if req.send_initial_events && !req.allow_bookmarks {
            return Err(WatchError::InitialEventsNeedBookmarks);
        }
        let start = match (req.resource_version, req.send_initial_events) {
            (None, initial_events_end) => Start::Snapshot {
                min_rv: ResourceVersion::ZERO,
                initial_events_end,
            },
            (Some(rv), true) => Start::Snapshot {
                min_rv: rv,
                initial_events_end: true,
            },
            (Some(rv), false) if rv == ResourceVersion::ZERO => Start::Snapshot {
                min_rv: rv,
                initial_events_end: false,
            },
            (Some(rv), false) => Start::After(rv),
        };
        let route = shared
            .index_fields
            .iter()
            .enumerate()
            .find_map(|(i, f)| {
                req.fields
                    .requires_exact(f)
                    .map(|v| Route::Indexed(i as u32, v.into()))
            })
            .or_else(|| {
                req.fields
                    .first_exact()
                    .map(|(f, v)| Route::Selected(Box::new((f.into(), v.into()))))
            })
            .unwrap_or(Route::All);
        let filter = Filter::new(req.scope, req.labels, req.fields);
        let route = if route == Route::All
            && filter.is_everything()
            && shared.config.slow_watchers == SlowWatchers::Park
        {
            Route::Follow
        } else {
            route
        };
        let (generation, ring_capacity) = {
            let st = shared.lock_state();
            match shared.lifecycle.load(Ordering::Acquire) {
                STOPPED => return Err(WatchError::EngineStopped),
                READY => {
                    if let Start::After(rv) = start {
                        let oldest = st.ring.oldest_minus_one();
                        if rv < oldest {
                            return Err(WatchError::Gone(Gone::new(rv, oldest)));
                        }
                    }
                    (Some(st.generation), st.ring.capacity())
                }
                _ => (None, st.ring.capacity()),
            }
        };
        let queue = if route == Route::Follow {
            // A follower's queue carries at most one bookmark marker.
            1
        } else {
            shared
                .config
                .queue_capacity(ring_capacity, matches!(route, Route::Indexed(..)))
        };
        let created = shared.config.clock.now();
        let w = Arc::new(WatcherShared::new(
            WatcherSpec {
                id: shared.next_id.fetch_add(1, Ordering::Relaxed),
                filter,
                route,
                start,
                generation,
                created,
                // Past the clock's range: no deadline.
                deadline: req.timeout.and_then(|t| created.checked_add(t)),
                allow_bookmarks: req.allow_bookmarks,
            },
            queue,
        ));
        // Counted before the request can be taken (the dispatcher counts
        // it down when it takes the registration up).
        Counters::add(&shared.counters.registrations_queued, 1);
        if !shared.send_control(|c| c.requests.push(Request::Register(w.clone()))) {
            Counters::sub(&shared.counters.registrations_queued, 1);
            return Err(WatchError::EngineStopped);
        }
        Counters::add(&shared.counters.watches_started, 1);
        Ok(Watch::new(w, shared.clone()))
    }

    /// Stops the engine: every watch ends with
    /// [`EndReason::EngineStopped`](crate::EndReason::EngineStopped), the
    /// writer's calls fail with [`WriteError::Stopped`], new watches fail.
    /// Final; idempotent. Waits for the dispatcher thread to exit.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// engine.stop();
    /// assert_eq!(engine.lifecycle(), Lifecycle::Stopped);
    /// assert_eq!(writer.replace([], 1.into()), Err(WriteError::Stopped));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stop(&self) {
        stop(&self.handle.shared, &self.handle.dispatcher);
    }

    /// The engine's lifecycle state.
    pub fn lifecycle(&self) -> Lifecycle {
        self.shared().lifecycle()
    }

    /// Why the engine stopped on its own, if it did: its dispatcher
    /// failed (a panic, for instance in a user-supplied
    /// [`Clock`](crate::Clock)). The engine is then stopped, every watch
    /// ended with [`EndReason::EngineFailed`](crate::EndReason::EngineFailed),
    /// and this holds the panic's message. `None` for a healthy or
    /// normally stopped engine.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, _writer) = Engine::new(Config::default())?;
    /// assert_eq!(engine.failure(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure(&self) -> Option<String> {
        self.shared().failure.get().cloned()
    }

    /// Reads one object by key (`namespace/name`, or `name`), without
    /// taking the writer's lock (see [`ReadAt`] for which state).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build()], 5.into())?;
    /// writer.apply(Change::added(Object::builder("ns", "b").build(), 6.into()))?;
    /// let now = engine.get("ns/b", ReadAt::Any)?;
    /// assert_eq!(now.resource_version.get(), 6);
    /// assert_eq!(now.item.unwrap().resource_version.get(), 6);
    /// // At version 5, "ns/b" did not exist yet.
    /// assert!(engine.get("ns/b", ReadAt::Exact(5.into()))?.item.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: &str, at: ReadAt) -> Result<GetResponse, ReadError> {
        self.shared().get(key, at)
    }

    /// Lists objects: by key scope and selectors, served from a list index
    /// ([`Config::list_index`]) when the field selector requires an exact
    /// value of its field; at the present or at an exact version inside the history
    /// window; in pages with continue tokens. Never takes the writer's
    /// lock.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default().list_index("spec.nodeName"))?;
    /// let pod = |name: &str, node: &str| {
    ///     Object::builder("ns", name).field("spec.nodeName", node).build()
    /// };
    /// writer.replace([pod("a", "n1"), pod("b", "n2"), pod("c", "n1")], 10.into())?;
    /// let on_n1 = engine.list(&ListRequest::new().fields("spec.nodeName=n1".parse()?))?;
    /// let names: Vec<_> = on_n1.items.iter().map(|i| i.object.name()).collect();
    /// assert_eq!(names, ["a", "c"]);
    ///
    /// // Pages: each names the version of the first.
    /// let first = engine.list(&ListRequest::new().limit(2))?;
    /// writer.apply(Change::deleted(pod("c", "n1"), 11.into()))?;
    /// let token = first.continue_token.unwrap();
    /// let rest = engine.list(&ListRequest::new().limit(2).continue_from(token))?;
    /// assert_eq!(rest.items[0].object.name(), "c");
    /// assert_eq!(rest.resource_version.get(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list(&self, req: &ListRequest) -> Result<ListResponse, ReadError> {
        self.shared().list(req)
    }

    /// The generation: 0 before the first list, then one more per `replace`.
    pub fn generation(&self) -> u64 {
        self.shared().lock_state().generation
    }

    /// The resource version the cache has reached (changes and progress).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// assert_eq!(engine.resource_version().get(), 0);
    /// writer.replace([], 3.into())?;
    /// writer.progress(8.into())?;
    /// assert_eq!(engine.resource_version().get(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_version(&self) -> ResourceVersion {
        ResourceVersion::new(self.shared().current_rv.load(Ordering::Acquire))
    }

    /// A snapshot of the engine's counters.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 1.into())?;
    /// assert_eq!(engine.stats().relists, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared().counters.snapshot()
    }
}

/// The one writer of an engine: applies changes, re-lists and progress, in
/// resource-version order. Refused calls return a typed error and change
/// nothing.
#[derive(Debug)]
pub struct Writer {
    shared: Arc<Shared>,
}

impl Writer {
    /// Applies one change. Its resource version must be greater than the
    /// engine's; the previous state is taken from the engine's store. An
    /// object whose name or namespace is not a valid path segment is
    /// refused ([`WriteError::InvalidName`], see [`Object`'s names](Object#names)).
    ///
    /// A deletion of a key the engine does not hold is delivered to no
    /// watcher and leaves no history: it advances the version as
    /// [`Writer::progress`] does (the reference's behaviour; see the crate
    /// docs' differences).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// let a = Object::builder("ns", "a").build();
    /// assert_eq!(writer.apply(Change::added(a.clone(), 1.into())), Err(WriteError::NotReady));
    /// writer.replace([], 1.into())?;
    /// writer.apply(Change::added(a.clone(), 2.into()))?;
    /// assert_eq!(
    ///     writer.apply(Change::modified(a, 2.into())),
    ///     Err(WriteError::OutOfOrder { given: 2.into(), current: 2.into() })
    /// );
    /// // A deletion of a key it never held: no event, the version moves.
    /// writer.apply(Change::deleted(Object::builder("ns", "ghost").build(), 3.into()))?;
    /// assert_eq!(engine.resource_version().get(), 3);
    /// assert_eq!(engine.stats().progress_updates, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply(&mut self, change: Change) -> Result<(), WriteError> {
        let (kind, object, rv) = change.into_parts();
        object.check_names()?;
        let shared = &*self.shared;
        shared.write(|st, dispatched| {
            shared.check_ready()?;
            if rv <= st.rv {
                return Err(WriteError::OutOfOrder {
                    given: rv,
                    current: st.rv,
                }
                .into());
            }
            let stored = st.store.get(object.key());
            if kind == ChangeKind::Deleted && stored.is_none() {
                // A key the cache never held: no watcher can have seen the
                // object, so none is told of its deletion; the version
                // moves as with progress (the reference: a deletion with no
                // previous object passes no filter, seeds/000
                // convertToWatchEvent).
                st.rv = rv;
                shared.current_rv.store(rv.get(), Ordering::Release);
                Counters::add(&shared.counters.progress_updates, 1);
                return Ok(None);
            }
            let prev_rv = stored.map(|e| e.rv);
            // SEMANTICS 1: a deletion's previous object is its last state.
            let prev = stored.map(|e| e.object.clone());
            let (_, resize) = st.ring.append(
                RecordKind::Change(kind),
                rv,
                Some(object.clone()),
                prev,
                prev_rv,
                st.generation,
                shared.config.clock.now(),
                dispatched,
            )?;
            match kind {
                ChangeKind::Deleted => {
                    st.store.delete(object.key());
                }
                _ => {
                    st.store.put(Stored {
                        object: object.clone(),
                        rv,
                    });
                }
            }
            st.rv = rv;
            st.since_view += 1;
            if st.since_view >= VIEW_EVERY && shared.view_wanted.load(Ordering::Relaxed) {
                shared.publish_view(st);
            }
            shared.current_rv.store(rv.get(), Ordering::Release);
            Counters::add(&shared.counters.changes_received, 1);
            Ok(resize)
        })
    }

    /// Replaces the whole state (a re-list) at `rv`, which must not be older
    /// than the engine's. The first call makes the engine ready; every later
    /// call ends every watch with [`EndReason::Relisted`](crate::EndReason::Relisted)
    /// and starts a new generation. Objects with the same key: the last wins.
    /// One object with an invalid name refuses the whole list
    /// ([`WriteError::InvalidName`]). A source whose history went back (restored from a backup) is
    /// followed with [`Writer::replace_after_regression`] instead.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build()], 5.into())?;
    /// assert_eq!((engine.lifecycle(), engine.generation()), (Lifecycle::Ready, 1));
    /// assert_eq!(engine.resource_version().get(), 5);
    /// assert_eq!(
    ///     writer.replace([], 4.into()),
    ///     Err(WriteError::OutOfOrder { given: 4.into(), current: 5.into() })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace(
        &mut self,
        objects: impl IntoIterator<Item = Object>,
        rv: ResourceVersion,
    ) -> Result<(), WriteError> {
        self.relist(objects, rv, Relist::Forward)
    }

    /// Replaces the whole state with a list at `rv`, which must be *older*
    /// than the engine's: the source's history went back (an etcd restored
    /// from a backup without `--bump-revision`), so the versions after `rv`
    /// that the engine has seen belong to a history that no longer exists.
    /// [`Writer::replace`] refuses such a list ([`WriteError::OutOfOrder`])
    /// to guard against careless writers; this call is the deliberate way
    /// through, as the reference's reflector, which re-lists into the watch
    /// cache whatever the version (seeds/004 `Replace`).
    ///
    /// As any re-list it starts a new generation and ends every watch with
    /// [`EndReason::Relisted`](crate::EndReason::Relisted) (so each client
    /// re-lists too); the history ring restarts empty at `rv`, so a watch
    /// or an exact read from an older version is `Gone`, a continue token
    /// of the old generation is `Gone`, and a watch or read waiting for a
    /// version the old history had reached waits for the new history to
    /// reach it. The engine's version goes back to `rv`.
    ///
    /// Refused, changing nothing: before the first list
    /// ([`WriteError::NotReady`]: there is nothing to go back from), with a
    /// version not older than the engine's ([`WriteError::NotARegression`]:
    /// use [`Writer::replace`]), after a stop ([`WriteError::Stopped`]).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build()], 20.into())?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// // The source was restored to a backup taken at version 12.
    /// writer.replace_after_regression([Object::builder("ns", "b").build()], 12.into())?;
    /// assert_eq!((engine.resource_version().get(), engine.generation()), (12, 2));
    /// assert_eq!(engine.list(&ListRequest::new())?.items[0].object.name(), "b");
    /// // Whatever it had received of the old state, the watch has ended.
    /// let last = std::iter::from_fn(|| watch.recv()).last();
    /// assert_eq!(last, Some(WatchItem::End(EndReason::Relisted)));
    /// assert_eq!(
    ///     writer.replace_after_regression([], 12.into()),
    ///     Err(WriteError::NotARegression { given: 12.into(), current: 12.into() })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace_after_regression(
        &mut self,
        objects: impl IntoIterator<Item = Object>,
        rv: ResourceVersion,
    ) -> Result<(), WriteError> {
        self.relist(objects, rv, Relist::Back)
    }

    /// `replace` and `replace_after_regression`.
    fn relist(
        &mut self,
        objects: impl IntoIterator<Item = Object>,
        rv: ResourceVersion,
        direction: Relist,
    ) -> Result<(), WriteError> {
        let shared = &*self.shared;
        let mut store = State::new(shared.list_fields.clone());
        for object in objects {
            object.check_names()?;
            store.put(Stored { object, rv });
        }
        shared.write(|st, dispatched| {
            let lifecycle = shared.lifecycle.load(Ordering::Acquire);
            let out_of_order = match (lifecycle, direction) {
                (STOPPED, _) => return Err(WriteError::Stopped.into()),
                (READY, Relist::Forward) if rv < st.rv => WriteError::OutOfOrder {
                    given: rv,
                    current: st.rv,
                },
                (READY, Relist::Back) if rv >= st.rv => WriteError::NotARegression {
                    given: rv,
                    current: st.rv,
                },
                (PENDING, Relist::Back) => WriteError::NotReady,
                // A clone of a persistent map: O(1), once per attempt.
                _ => return shared.relist_locked(st, store.clone(), rv, dispatched),
            };
            Err(out_of_order.into())
        })
    }
    /// Advances the resource version with no change (a progress
    /// notification). A version equal to the engine's is a no-op.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 5.into())?;
    /// writer.progress(9.into())?;
    /// assert_eq!(engine.resource_version().get(), 9);
    /// assert!(writer.progress(8.into()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn progress(&mut self, rv: ResourceVersion) -> Result<(), WriteError> {
        let mut st = self.shared.lock_state();
        self.shared.check_ready()?;
        if rv < st.rv {
            return Err(WriteError::OutOfOrder {
                given: rv,
                current: st.rv,
            });
        }
        if rv > st.rv {
            st.rv = rv;
            self.shared.current_rv.store(rv.get(), Ordering::Release);
            Counters::add(&self.shared.counters.progress_updates, 1);
            drop(st);
            self.shared.wake_dispatcher();
        }
        Ok(())
    }
}
