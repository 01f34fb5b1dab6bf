//! A watch: the request, the state the dispatcher shares with the watcher,
//! and the consumer handle.
//!
//! # Synchronization
//!
//! Each watcher has one producer (the dispatcher) and one consumer (the
//! [`Watch`] handle, `&mut self` on every receive). They share:
//!
//! - `queue`: an SPSC queue of handles `(position << 2) | verdict` (see
//!   `queue.rs`). Event bodies stay in the history ring; the consumer reads
//!   the record at the position and learns from its stamp whether it was
//!   overwritten meanwhile (then the watch ends with `Gone`).
//! - `attach`: written only by the dispatcher, `Release`; read by the
//!   consumer with `Acquire`. Either "not yet", "live from `d`" (the
//!   dispatcher's cursor when it registered or resumed the watcher: from
//!   `d` on it enqueues every admitted change) or "parked at `p`" (the queue
//!   was full when change `p` came; the dispatcher enqueues nothing more).
//!   The consumer replays every position below `d`, or everything while
//!   parked, from the ring itself, and skips queued positions it has
//!   already passed: each hand-over loses and repeats nothing. See
//!   [Parking](#parking).
//! - `end`: set once (first writer wins) by whoever ends the watch; followed
//!   by an unconditional wake.
//! - `parked` + `waker`: wake-up coalescing. The consumer registers its
//!   waker, stores `parked = true`, issues a `SeqCst` fence and looks once
//!   more before sleeping. The dispatcher, after a batch of pushes, issues
//!   one `SeqCst` fence and wakes only the touched watchers that are parked.
//!   The two fences order each side's store before its load (Dekker), so
//!   either the consumer sees the push or the dispatcher sees `parked`.
//!
//! # Parking
//!
//! Under [`SlowWatchers::Park`](crate::SlowWatchers::Park) a full queue
//! never makes the dispatcher wait (after KEP-6268 "stall and resume" and
//! etcd's client cache). It parks the watcher at the change
//! that did not fit and moves on. The consumer, seeing "parked", discards
//! what is queued (all of it older than the park, none of it lost: the
//! replay re-derives it), replays from its next position through the ring,
//! and once caught up with the ring's head asks the dispatcher to resume
//! it; the dispatcher makes it live from its cursor. While the watcher is
//! parked the dispatcher does not touch its queue, so the discard cannot
//! race with a push. If the writer laps the replay, the watch ends with
//! `Gone`: the only way a slow watcher ends under this policy, and it costs
//! no one else. (Under the time budget the dispatcher waits instead and
//! ends a watcher still full with `TooSlow`; see `dispatch.rs`.)
//!
//! # Following
//!
//! Under the park policy a watcher that admits everything (no key scope,
//! no selector) is a follower: the dispatcher pushes it nothing. Its
//! consumer reads the history ring from its next position up to the
//! writer's head, as a parked watcher does, without ever asking to be
//! resumed; so a change reaches it without the dispatcher's hop (the
//! publish-to-receive latency of a disruptor's consumer), and fanning a
//! change out to a thousand followers costs the dispatcher nothing. After
//! each batch the dispatcher issues its `SeqCst` fence and wakes the
//! followers that sleep (the Dekker pair above, with the head in place of
//! the queue). Its queue, of one slot, carries only bookmark markers, read
//! once the replay has reached the head (a marker behind its position says
//! nothing new and is dropped). Like a parked watcher, a follower the
//! writer laps ends with `Gone`.
//!
//! # Bookmarks
//!
//! A periodic bookmark travels through the queue as a marker handle (low
//! bits 0) with its version in `bookmark_rv`; at most one is in flight per
//! watcher, so the version cannot be overwritten before it is read.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::bookmarks::InitialEventsEnd;
use crate::engine::Shared;
use crate::event::{Event, EventKind, Gone, WatchItem};
use crate::filter::{Filter, Verdict};
use crate::queue::Queue;
use crate::ring::{ReadCursor, Record, RecordKind, RecordRef};
use crate::stats::Counters;
use crate::sync::{
    Arc, AtomicBool, AtomicU8, AtomicU64, AtomicWaker, Mutex, MutexGuard, OnceLock, Ordering,
    Thread, ThreadId, fence, park, park_timeout,
};
use crate::{EndReason, FieldSelector, KeyScope, LabelSelector, Object, ResourceVersion};

/// What to watch and from where. Built with chained setters.
///
/// ```
/// use herald::{KeyScope, WatchRequest};
/// let req = WatchRequest::new()
///     .scope(KeyScope::prefix("team-a"))
///     .labels("app in (web,api),tier!=canary".parse()?)
///     .fields("spec.nodeName=node-7".parse()?)
///     .resource_version(Some(42.into()));
/// # Ok::<(), herald::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WatchRequest {
    pub(crate) scope: KeyScope,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
    pub(crate) resource_version: Option<ResourceVersion>,
    pub(crate) send_initial_events: bool,
    pub(crate) allow_bookmarks: bool,
    pub(crate) timeout: Option<Duration>,
}

impl WatchRequest {
    /// Every object, from the current state (resource version unset).
    pub fn new() -> Self {
        Self::default()
    }

    crate::filter::selection_setters!(
        "An exact requirement on a field with a trigger index \
         ([`Config::index`](crate::Config::index)) routes the watcher \
         through that index."
    );

    /// Where to start:
    /// - `None` (the wire form `""`) or `Some(0)`: the current state first,
    ///   each object as Added in key order, then every later change;
    /// - `Some(R)`: every change after `R`, replayed from history (a watch
    ///   from an `R` older than the history ends with `Gone`); if the cache
    ///   has not reached `R` yet, the watch waits for it, and ends with
    ///   `TooLargeResourceVersion` when the wait times out.
    ///
    /// Parse the wire form with [`ResourceVersion::parse_param`].
    ///
    /// ```
    /// use herald::{ResourceVersion, WatchRequest};
    /// // `?resourceVersion=` from a request's query string:
    /// let rv = ResourceVersion::parse_param("1234")?;
    /// let req = WatchRequest::new().resource_version(rv);
    /// # Ok::<(), herald::InvalidResourceVersion>(())
    /// ```
    pub fn resource_version(mut self, rv: Option<ResourceVersion>) -> Self {
        self.resource_version = rv;
        self
    }

    /// Sends the state at the start (at or after the requested version) as
    /// Added events, then a Bookmark marked
    /// [`initial-events-end`](Event::is_initial_events_end), then changes.
    /// Requires [`allow_bookmarks`](WatchRequest::allow_bookmarks).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build()], 7.into())?;
    /// let mut w = engine.watch(
    ///     WatchRequest::new().send_initial_events(true).allow_bookmarks(true),
    /// )?;
    /// let Some(WatchItem::Event(added)) = w.recv() else { panic!() };
    /// let Some(WatchItem::Event(end)) = w.recv() else { panic!() };
    /// assert_eq!(added.kind(), EventKind::Added);
    /// assert!(end.is_initial_events_end() && end.resource_version().get() == 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_initial_events(mut self, yes: bool) -> Self {
        self.send_initial_events = yes;
        self
    }

    /// Whether the watcher accepts Bookmark events: one every
    /// [`bookmark_frequency`](crate::Config::bookmark_frequency) (1 min by
    /// default) and one 2 s before the deadline, each carrying the version
    /// the engine has processed, so that a client re-watching from it
    /// skips the replay. Never blocking and never ending a watch.
    pub fn allow_bookmarks(mut self, yes: bool) -> Self {
        self.allow_bookmarks = yes;
        self
    }

    /// Ends the watch with [`EndReason::Deadline`] once `timeout` has
    /// passed on the engine's clock, counted from [`Engine::watch`](crate::Engine::watch)
    /// (the Kubernetes `timeoutSeconds`). With bookmarks allowed, the last
    /// one comes 2 s before.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Where a watcher is registered in the trigger index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    All,
    /// (index number, value). A `u32`, so the route is 24 bytes.
    Indexed(u32, Box<str>),
    /// Admits everything, under the park policy: follows the history ring
    /// itself, never fed by the dispatcher (see [Following](#following)).
    Follow,
    /// (field, value): the selector requires an exact value of a field no
    /// index was configured for; routed by it all the same (see
    /// `index.rs`, Selector routes). Sized as an unindexed watcher.
    /// Boxed: the route would otherwise cost every watcher 16 bytes more.
    Selected(Box<(Box<str>, Box<str>)>),
}

/// How a watch begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// The current state first (once the cache is at `min_rv` or later),
    /// then changes; optionally an initial-events-end bookmark between.
    Snapshot {
        min_rv: ResourceVersion,
        initial_events_end: bool,
    },
    /// Every change after `rv`, once the cache has reached it.
    After(ResourceVersion),
}

impl Start {
    /// The version the cache must have reached before the watch starts.
    pub(crate) fn wait_for(self) -> ResourceVersion {
        match self {
            Start::Snapshot { min_rv, .. } => min_rv,
            Start::After(rv) => rv,
        }
    }
}

/// `attach` before the dispatcher has registered the watcher.
const NOT_ATTACHED: u64 = u64::MAX;
/// `attach` flag: parked at the position in the low bits.
const PARKED: u64 = 1 << 63;

/// The decoded `attach` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attach {
    NotYet,
    Live(u64),
    Parked(u64),
}

fn decode(raw: u64) -> Attach {
    if raw == NOT_ATTACHED {
        Attach::NotYet
    } else if raw & PARKED != 0 {
        Attach::Parked(raw & !PARKED)
    } else {
        Attach::Live(raw)
    }
}

/// What a watcher is, as [`Engine::watch`](crate::Engine::watch) resolved
/// it: immutable for the watcher's life.
#[derive(Debug)]
pub(crate) struct WatcherSpec {
    pub(crate) id: u64,
    pub(crate) filter: Filter,
    pub(crate) route: Route,
    pub(crate) start: Start,
    /// The engine generation the watch was begun against, `None` if begun
    /// before the first list.
    pub(crate) generation: Option<u64>,
    /// When the watch was begun, on the engine's clock.
    pub(crate) created: Instant,
    /// When the watch ends with `Deadline`, on the engine's clock.
    pub(crate) deadline: Option<Instant>,
    pub(crate) allow_bookmarks: bool,
}

/// The state the dispatcher and the consumer share.
pub(crate) struct WatcherShared {
    pub(crate) spec: WatcherSpec,
    /// The initial-events-end state machine (seeds/000).
    pub(crate) initial_end: InitialEventsEnd,
    pub(crate) queue: Queue,
    attach: AtomicU64,
    active_generation: AtomicU64,
    /// The end, and whether it waits until the consumer has drained what
    /// it holds (a graceful `TooSlow`): set once, both together, so a
    /// concurrent end for another reason can never inherit the drain.
    /// Boxed: an end is rare, and unboxed it would cost every watcher
    /// 24 bytes more.
    end: OnceLock<Box<(EndReason, bool)>>,
    /// The consumer sleeps (or is about to). Only the `true` store matters
    /// for correctness, and it is ordered by the `SeqCst` fences (see the
    /// module docs); clearing it is `Relaxed` because a stale `true` only
    /// costs one spurious wake.
    parked: AtomicBool,
    /// Dispatcher-private: where the dispatcher holds this watcher
    /// (`dispatch::Place`). `Relaxed`: no other thread reads it.
    pub(crate) place: AtomicU8,
    waker: AtomicWaker,
    /// Dispatcher-private: the batch in which it last pushed to this watcher.
    pub(crate) touched: AtomicU64,
    /// The dispatcher waits for room in this queue (time-budget policy).
    /// The consumer, after a pop, wakes it. Best effort (`Relaxed`, no
    /// fence on the consumer's hot path): the dispatcher's wait also polls,
    /// so a wake lost to a race costs at most one poll interval.
    producer_waiting: AtomicBool,
    /// The resource version of the one bookmark in flight; valid while
    /// `bookmark_pending`. Written by the dispatcher before the marker's
    /// push (whose `Release` publishes it), read by the consumer after the
    /// marker's pop.
    bookmark_rv: AtomicU64,
    /// A bookmark marker is in the queue. Set by the dispatcher, cleared by
    /// the consumer (`Release`, after reading `bookmark_rv`; the
    /// dispatcher's `Acquire` load pairs with it before it overwrites
    /// `bookmark_rv`).
    bookmark_pending: AtomicBool,
    /// Handles that did not fit in the queue (see [Spilling](#spilling)),
    /// in dispatch order, all newer than what the queue holds while
    /// `spilling`.
    spill: Mutex<Vec<u64>>,
    /// The overflow is active: the dispatcher pushes to it, not to the
    /// queue, until the consumer takes its items. Written only under the
    /// `spill` lock: set by the dispatcher, cleared by the consumer; so a
    /// `false` read by the dispatcher is never stale, and a stale `true`
    /// only sends it to the locked path.
    spilling: AtomicBool,
}

impl fmt::Debug for WatcherShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatcherShared")
            .field("spec", &self.spec)
            .field("end", &self.end.get().map(|end| &end.0))
            .finish_non_exhaustive()
    }
}

/// The low bits of a queue handle that mark a bookmark (a change's
/// handle carries its verdict, 1 to 3, there).
const BOOKMARK: u64 = 0;

impl WatcherShared {
    pub(crate) fn new(spec: WatcherSpec, queue_capacity: usize) -> WatcherShared {
        let initial_end = match spec.start {
            Start::Snapshot {
                min_rv,
                initial_events_end,
            } => InitialEventsEnd::new(initial_events_end, min_rv),
            Start::After(_) => InitialEventsEnd::new(false, ResourceVersion::ZERO),
        };
        WatcherShared {
            spec,
            initial_end,
            queue: Queue::new(queue_capacity),
            attach: AtomicU64::new(NOT_ATTACHED),
            active_generation: AtomicU64::new(0),
            end: OnceLock::new(),
            parked: AtomicBool::new(false),
            place: AtomicU8::new(0),
            waker: AtomicWaker::new(),
            touched: AtomicU64::new(u64::MAX),
            producer_waiting: AtomicBool::new(false),
            bookmark_rv: AtomicU64::new(0),
            bookmark_pending: AtomicBool::new(false),
            spill: Mutex::new(Vec::new()),
            spilling: AtomicBool::new(false),
        }
    }

    fn lock_spill(&self) -> MutexGuard<'_, Vec<u64>> {
        // Every mutation under the lock completes before the guard drops.
        self.spill.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Dispatcher: whether handles go to the overflow rather than the
    /// queue (`Relaxed`: see the field).
    #[inline]
    pub(crate) fn is_spilling(&self) -> bool {
        self.spilling.load(Ordering::Relaxed)
    }

    /// Dispatcher (park policy): `handle` did not fit, or the overflow is
    /// active. Keeps it in order, in the queue if the consumer has taken
    /// the overflow meanwhile and made room, else in the overflow. Returns
    /// false if the watcher is to be parked instead (it admits everything,
    /// or the overflow holds `limit` handles already).
    ///
    /// `held` counts the handles in every overflow of the engine (changed
    /// only under each watcher's `spill` lock, so exact); past `budget` a
    /// full queue parks the watcher, which holds no more memory than its
    /// queue: the engine's overflow memory is bounded by configuration
    /// ([`Config::spill_budget`](crate::Config::spill_budget)), not by the
    /// number of stalled consumers.
    pub(crate) fn overflow(
        &self,
        handle: u64,
        limit: usize,
        held: &std::sync::atomic::AtomicU64,
        budget: u64,
    ) -> bool {
        if self.spec.filter.is_everything() {
            return false;
        }
        let mut spill = self.lock_spill();
        // Relaxed: written only under the lock we hold.
        if !self.spilling.load(Ordering::Relaxed) {
            // The consumer took the overflow since we looked: everything
            // before this handle is out of the way.
            if self.queue.push(handle).is_ok() {
                return true;
            }
            if limit == 0 {
                return false;
            }
            // Release: pairs with the consumer's Acquire in `take_spill`.
            self.spilling.store(true, Ordering::Release);
        }
        // Relaxed: a statistic and a budget; only this thread (the
        // dispatcher) adds to it, so the check below is never stale.
        if spill.len() >= limit || held.load(Ordering::Relaxed) >= budget {
            return false;
        }
        spill.push(handle);
        held.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Consumer, on a park: forgets the overflow (the park's replay
    /// re-derives it; the dispatcher does not touch it while parked).
    /// Dispatcher, on retiring an ended watcher: gives its overflow back
    /// to the budget. Either way the memory is freed.
    pub(crate) fn discard_spill(&self, held: &std::sync::atomic::AtomicU64) {
        let mut spill = self.lock_spill();
        // Relaxed: see `overflow`.
        held.fetch_sub(spill.len() as u64, Ordering::Relaxed);
        *spill = Vec::new();
        self.spilling.store(false, Ordering::Relaxed);
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.end.get().is_some()
    }

    /// Ends the watch unless it has ended already; returns whether this call
    /// ended it. Always wakes the consumer.
    pub(crate) fn end(&self, reason: EndReason, counters: &Counters) -> bool {
        self.set_end(reason, false, counters)
    }

    /// Dispatcher: ends the watch once the consumer has drained what it
    /// holds (initial events, the initial-events-end bookmark, the queue).
    pub(crate) fn end_after_drain(&self, reason: EndReason, counters: &Counters) -> bool {
        self.set_end(reason, true, counters)
    }

    fn set_end(&self, reason: EndReason, drain: bool, counters: &Counters) -> bool {
        let won = self.end.set(Box::new((reason, drain))).is_ok();
        if let (true, Some(end)) = (won, self.end.get()) {
            counters.ended(&end.0);
        }
        self.waker.wake();
        won
    }

    /// Dispatcher: enqueues a bookmark marker at dispatcher position `pos`
    /// carrying `rv`, unless one is already in flight, the version is below
    /// the one the watch waits for, or the queue is full (bookmarks never
    /// block, park or end a watcher). Returns whether it was enqueued.
    pub(crate) fn offer_bookmark(&self, pos: u64, rv: ResourceVersion) -> bool {
        // Not while the overflow is active: the marker would overtake it.
        if !self.is_live() || self.is_ended() || self.is_spilling() || !self.initial_end.admits(rv)
        {
            return false;
        }
        // Acquire: pairs with the consumer's Release clear; it has read
        // `bookmark_rv`, which may now be overwritten.
        if self.bookmark_pending.load(Ordering::Acquire) {
            return false;
        }
        // Relaxed: published by the push's Release.
        self.bookmark_rv.store(rv.get(), Ordering::Relaxed);
        self.bookmark_pending.store(true, Ordering::Relaxed);
        if self.queue.push(pos << 2 | BOOKMARK).is_err() {
            self.bookmark_pending.store(false, Ordering::Relaxed);
            return false;
        }
        self.initial_end.mark_received();
        true
    }

    /// Dispatcher (time-budget policy): announces that it waits for room.
    /// Call, then issue a `SeqCst` fence, then retry the push before
    /// sleeping.
    pub(crate) fn set_producer_waiting(&self, yes: bool) {
        // A swap, not a store: the consumer clears the flag with a swap
        // (see `Shared::send_control` on loom#254).
        self.producer_waiting.swap(yes, Ordering::Relaxed);
    }

    /// Wakes the consumer (a watcher the dispatcher is about to wait for).
    pub(crate) fn wake(&self) {
        self.waker.wake();
    }

    /// Dispatcher: registers the watcher as live from `pos`.
    pub(crate) fn activate(&self, pos: u64, generation: u64) {
        // Relaxed: published by the Release store of `attach` below.
        self.active_generation.store(generation, Ordering::Relaxed);
        // Release: publishes `active_generation` with `attach`.
        self.attach.store(pos, Ordering::Release);
        self.waker.wake();
    }

    /// Dispatcher: whether changes are to be enqueued for this watcher (it
    /// is registered and not parked). `Relaxed`: only the dispatcher
    /// writes `attach`.
    pub(crate) fn is_live(&self) -> bool {
        self.attach.load(Ordering::Relaxed) & PARKED == 0
    }

    /// Dispatcher: the queue was full for change `pos`; stop enqueuing.
    pub(crate) fn park(&self, pos: u64) {
        debug_assert!(self.is_live());
        // Release: every push before it is visible to a consumer that
        // sees the park (it discards them).
        self.attach.store(PARKED | pos, Ordering::Release);
        self.waker.wake();
    }

    /// Dispatcher: the consumer has caught up; live again from `pos`.
    /// Returns false if the watcher was not parked.
    pub(crate) fn resume(&self, pos: u64) -> bool {
        if matches!(
            decode(self.attach.load(Ordering::Relaxed)),
            Attach::Parked(_)
        ) {
            self.attach.store(pos, Ordering::Release);
            self.waker.wake();
            true
        } else {
            false
        }
    }

    /// Dispatcher: whether the consumer sleeps and needs a wake. Call after
    /// a `SeqCst` fence that follows the pushes (see the module docs).
    pub(crate) fn wake_if_parked(&self) {
        // Relaxed: ordered by the caller's SeqCst fence (Dekker with the
        // consumer's fence in `prepare_park`); the store below only saves a
        // repeated wake, and the wake itself goes through `AtomicWaker`.
        if self.parked.load(Ordering::Relaxed) {
            self.parked.store(false, Ordering::Relaxed);
            self.waker.wake();
        }
    }
}

/// A live watch: receives the events its filter admits, in resource-version
/// order, with no gap and no duplicate, then exactly one
/// [`WatchItem::End`] saying why it ended.
///
/// Receive with [`recv`](Watch::recv) (blocking), [`try_recv`](Watch::try_recv),
/// [`recv_timeout`](Watch::recv_timeout), [`recv_batch`](Watch::recv_batch),
/// or as a [`futures_core::Stream`] (so `watch.next().await` works with
/// `futures::StreamExt` or `tokio_stream::StreamExt`). Dropping the handle
/// stops the watch and unregisters it.
pub struct Watch {
    w: Arc<WatcherShared>,
    engine: Arc<Shared>,
    phase: Phase,
    /// The last `attach` value seen as a park (to discard the queue once
    /// per park).
    park_seen: u64,
    /// A resume has been asked for the current park.
    resume_requested: bool,
    /// The next position this watch has not passed.
    next_pos: u64,
    generation: u64,
    cursor: ReadCursor,
    /// The last resource version delivered (or the start), for `Gone`.
    last_rv: ResourceVersion,
    /// The version the watch started at: bookmarks at or below it say
    /// nothing new and are dropped (seeds/000 `process`).
    start_rv: ResourceVersion,
    /// A draining end has found nothing more to deliver.
    drained: bool,
    /// Queue pops until the next latency sample.
    sample_in: u32,
    /// [`Route::Follow`]: reads the ring up to its head, not its queue.
    follower: bool,
    /// The dispatcher has been asked to forget this watch (once is
    /// enough: a second request would only cost it a control round).
    unregistered: bool,
    /// Boxed on first use, so that an idle watch stays small.
    occasional: Option<Box<Occasional>>,
}

/// The consumer's state for what a watch does now and then: serve its
/// initial list, take an overflow, block a thread.
#[derive(Default)]
struct Occasional {
    /// The initial list (dropped, with its buffer, once served).
    initial: VecDeque<(Object, ResourceVersion)>,
    initial_end: Option<ResourceVersion>,
    /// Handles taken from the queue and the overflow together, served
    /// before the queue (see [Spilling](#spilling)); `spilled_at` is the
    /// next one.
    spilled: Vec<u64>,
    spilled_at: usize,
    thread_waker: Option<(ThreadId, Waker)>,
}

/// One queue pop in this many is timed for the enqueued -> received
/// histogram.
const SAMPLE_EVERY: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the dispatcher to register the watch.
    Activating,
    /// Serving the initial state.
    Initial,
    /// Replaying history, then following the queue.
    Stream,
    /// The terminal item has been returned.
    Done,
}

/// One step of the consumer.
enum Step<T> {
    Item(T),
    Empty,
    Done,
}

/// Work remains (a replay scanned its budget of records without finding one
/// for this watch): call again, after yielding if cooperative.
struct Busy;

/// Records a replay scans per step before it yields ([`Busy`]), so a
/// selective watch catching up never holds an async executor's thread for
/// long.
const SCAN_BUDGET: u32 = 1024;

/// What the consumer found next, before it is turned into an owned
/// [`WatchItem`] or lent out as an [`EventRef`]. A ring record stays in the
/// ring: lending it costs no reference-count traffic on the object.
enum Raw {
    Initial(Object, ResourceVersion),
    Bookmark {
        rv: ResourceVersion,
        initial_events_end: bool,
    },
    Record(RecordRef, Verdict),
    End(EndReason),
}

impl Raw {
    fn into_item(self) -> WatchItem {
        match self {
            Raw::End(reason) => WatchItem::End(reason),
            Raw::Initial(object, rv) => {
                WatchItem::Event(Event::object_event(EventKind::Added, rv, object))
            }
            Raw::Bookmark {
                rv,
                initial_events_end,
            } => WatchItem::Event(Event::bookmark(rv, initial_events_end)),
            Raw::Record(rec, v) => {
                let (kind, rv, object) = record_event(&rec, v);
                WatchItem::Event(Event::object_event(kind, rv, object.clone()))
            }
        }
    }
}

/// The kind, version and visible object of a record seen through a
/// verdict: Deleted carries the state the watcher could see, with the
/// change's resource version (seeds/004 `convertToWatchEvent`).
#[inline]
fn record_event(rec: &Record, v: Verdict) -> (EventKind, ResourceVersion, &Object) {
    let object = rec.object.as_ref();
    let shown = match v {
        Verdict::Deleted => rec.prev.as_ref().or(object),
        Verdict::Added | Verdict::Modified => object,
    };
    // Records handed out as events are changes, which carry an object.
    let shown = shown.unwrap_or_else(|| unreachable!("a change record without an object"));
    (v.event_kind(), rec.rv, shown)
}

/// An event lent to a [`Watch::visit_batch`] callback: like [`Event`], but
/// borrowing the object from the history ring instead of holding a
/// reference count on it. Keep what you need with
/// [`to_event`](EventRef::to_event).
///
/// ```
/// # use herald::*;
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// writer.replace([], 1.into())?;
/// let mut w = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
/// writer.apply(Change::added(Object::builder("ns", "a").payload("{}").build(), 2.into()))?;
/// let mut bytes = 0;
/// while bytes == 0 {
///     w.visit_batch(16, |ev| bytes += ev.object().map_or(0, |o| o.payload().len()));
/// }
/// assert_eq!(bytes, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    kind: EventKind,
    rv: ResourceVersion,
    object: Option<&'a Object>,
    initial_events_end: bool,
}

impl<'a> EventRef<'a> {
    /// The kind of event.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The resource version (see [`Event::resource_version`]).
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }

    /// The object, none for a bookmark (see [`Event::object`]).
    pub fn object(&self) -> Option<&'a Object> {
        self.object
    }

    /// Whether this is the initial-events-end bookmark.
    pub fn is_initial_events_end(&self) -> bool {
        self.initial_events_end
    }

    /// An owned copy (one reference count on the object).
    pub fn to_event(&self) -> Event {
        match self.object {
            Some(o) => Event::object_event(self.kind, self.rv, o.clone()),
            None => Event::bookmark(self.rv, self.initial_events_end),
        }
    }
}

/// What [`Watch::visit_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Visited {
    /// Events passed to the callback.
    pub events: usize,
    /// The watch's end, if this call reached it (the terminal item; it is
    /// reported once, and the watch is finished afterwards).
    pub end: Option<EndReason>,
}

/// [`Watch::try_recv`] found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryRecvError {
    /// Nothing is ready now.
    Empty,
    /// The terminal item has already been received.
    Finished,
}

/// [`Watch::recv_timeout`] found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvTimeoutError {
    /// Nothing arrived in time.
    Timeout,
    /// The terminal item has already been received.
    Finished,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "no event ready",
            TryRecvError::Finished => "the watch has ended",
        })
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvTimeoutError::Timeout => "timed out waiting for an event",
            RecvTimeoutError::Finished => "the watch has ended",
        })
    }
}

impl std::error::Error for TryRecvError {}
impl std::error::Error for RecvTimeoutError {}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("id", &self.w.spec.id)
            .field("phase", &self.phase)
            .field("next_pos", &self.next_pos)
            .field("last_rv", &self.last_rv)
            .finish_non_exhaustive()
    }
}

impl Watch {
    pub(crate) fn new(w: Arc<WatcherShared>, engine: Arc<Shared>) -> Watch {
        let cursor = engine.ring.cursor();
        let follower = w.spec.route == Route::Follow;
        Watch {
            w,
            engine,
            phase: Phase::Activating,
            park_seen: NOT_ATTACHED,
            resume_requested: false,
            follower,
            unregistered: false,
            next_pos: 0,
            generation: 0,
            cursor,
            last_rv: ResourceVersion::ZERO,
            start_rv: ResourceVersion::ZERO,
            drained: false,
            sample_in: SAMPLE_EVERY,
            occasional: None,
        }
    }

    fn occasional(&mut self) -> &mut Occasional {
        self.occasional.get_or_insert_with(Box::default)
    }

    /// Blocks until the next item. Returns `None` once the terminal
    /// [`WatchItem::End`] has been received.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// writer.apply(Change::added(Object::builder("ns", "a").build(), 2.into()))?;
    /// let Some(WatchItem::Event(ev)) = watch.recv() else { panic!() };
    /// assert_eq!((ev.kind(), ev.resource_version().get()), (EventKind::Added, 2));
    /// watch.stop();
    /// assert_eq!(watch.recv(), Some(WatchItem::End(EndReason::Stopped)));
    /// assert_eq!(watch.recv(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self) -> Option<WatchItem> {
        self.recv_deadline(None).ok()
    }

    /// Blocks until the next item or until `timeout` passes.
    ///
    /// ```
    /// # use herald::*;
    /// # use std::time::Duration;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// assert_eq!(watch.recv_timeout(Duration::from_millis(5)), Err(RecvTimeoutError::Timeout));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<WatchItem, RecvTimeoutError> {
        // A timeout past the clock's range (`Duration::MAX`) is no timeout.
        self.recv_deadline(Instant::now().checked_add(timeout))
    }

    /// Returns the next item if one is ready, without blocking.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// assert_eq!(watch.try_recv(), Err(TryRecvError::Empty));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv(&mut self) -> Result<WatchItem, TryRecvError> {
        match self.step_owned() {
            Step::Item(item) => Ok(item),
            Step::Empty => Err(TryRecvError::Empty),
            Step::Done => Err(TryRecvError::Finished),
        }
    }

    /// Moves up to `max` ready items into `out` without blocking; returns how
    /// many it moved. Amortises the per-item checks over a batch.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build(), Object::builder("ns", "b").build()], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// let mut out = Vec::new();
    /// while out.len() < 2 {
    ///     watch.recv_batch(&mut out, 64);
    /// }
    /// assert_eq!(out.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_batch(&mut self, out: &mut Vec<WatchItem>, max: usize) -> usize {
        let (mut n, more) = self.stream_batch(max, &mut |ev: EventRef<'_>| {
            out.push(WatchItem::Event(ev.to_event()));
        });
        while more && n < max {
            match self.step_owned() {
                Step::Item(item) => {
                    out.push(item);
                    n += 1;
                }
                Step::Empty | Step::Done => break,
            }
        }
        n
    }

    /// Lends up to `max` ready events to `f`, without blocking and without
    /// copying or reference-counting objects: the fastest way to drain a
    /// watch (an embedding server serialises straight from the borrowed
    /// object). Stops at the end of the watch and reports it.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([Object::builder("ns", "a").build()], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// engine.stop();
    /// let mut keys = Vec::new();
    /// let mut end = None;
    /// while end.is_none() {
    ///     let visited = watch.visit_batch(64, |ev| {
    ///         keys.push(ev.object().map(|o| o.key().to_owned()));
    ///     });
    ///     end = visited.end;
    /// }
    /// // The engine stopped before the watch began: it ends at once.
    /// assert_eq!(end, Some(EndReason::EngineStopped));
    /// assert!(watch.is_finished());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_batch(&mut self, max: usize, mut f: impl FnMut(EventRef<'_>)) -> Visited {
        let (events, more) = self.stream_batch(max, &mut f);
        let mut visited = Visited { events, end: None };
        while more && visited.events < max {
            let raw = match self.step() {
                Step::Item(raw) => raw,
                Step::Empty | Step::Done => break,
            };
            let ev = match &raw {
                Raw::End(reason) => {
                    visited.end = Some(reason.clone());
                    break;
                }
                Raw::Initial(object, rv) => EventRef {
                    kind: EventKind::Added,
                    rv: *rv,
                    object: Some(object),
                    initial_events_end: false,
                },
                Raw::Bookmark {
                    rv,
                    initial_events_end,
                } => EventRef {
                    kind: EventKind::Bookmark,
                    rv: *rv,
                    object: None,
                    initial_events_end: *initial_events_end,
                },
                Raw::Record(rec, v) => {
                    let (kind, rv, object) = record_event(rec, *v);
                    EventRef {
                        kind,
                        rv,
                        object: Some(object),
                        initial_events_end: false,
                    }
                }
            };
            f(ev);
            visited.events += 1;
        }
        visited
    }

    /// [`visit_batch`](Watch::visit_batch) for an event loop: if nothing
    /// is ready, registers `cx`'s waker and returns `Poll::Pending`; the
    /// waker is woken once something is (an event, a bookmark, the end).
    /// With one waker per watch that names it, the wakes form a readiness
    /// list: a thread serving many watches visits only those that have
    /// something, and an idle watch costs it nothing (the dispatcher wakes
    /// only the watches it pushed to, once per batch).
    ///
    /// `Ready` carries at least one event or the end, except on a watch
    /// already finished or with `max` 0 (then at once, with nothing).
    ///
    /// ```
    /// # use herald::*;
    /// use std::task::{Context, Poll, Waker};
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace([], 1.into())?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut seen = 0;
    /// // Nothing yet: the waker is registered.
    /// while watch.poll_visit_batch(&mut cx, 64, |_| seen += 1).is_ready() {}
    /// writer.apply(Change::added(Object::builder("ns", "a").build(), 2.into()))?;
    /// while seen == 0 {
    ///     let _ = watch.poll_visit_batch(&mut cx, 64, |_| seen += 1);
    /// }
    /// assert_eq!(seen, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_visit_batch(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Poll<Visited> {
        let ready = |w: &Watch, v: &Visited| v.events > 0 || v.end.is_some() || w.is_finished();
        let visited = self.visit_batch(max, &mut f);
        if ready(self, &visited) || max == 0 {
            return Poll::Ready(visited);
        }
        self.arm(cx.waker());
        // Look once more: whatever came before the fence is seen here, and
        // whatever comes after it wakes the waker.
        let visited = self.visit_batch(max, &mut f);
        if ready(self, &visited) {
            self.w.parked.store(false, Ordering::Relaxed);
            return Poll::Ready(visited);
        }
        Poll::Pending
    }

    /// Stops the watch: the next receive returns
    /// [`EndReason::Stopped`] (unless it had already ended for another
    /// reason), and the dispatcher forgets it.
    pub fn stop(&mut self) {
        if self.w.end(EndReason::Stopped, &self.engine.counters) {
            self.unregister();
        }
    }

    /// Asks the dispatcher to forget this (ended) watch, once.
    fn unregister(&mut self) {
        if !std::mem::replace(&mut self.unregistered, true) {
            self.engine.unregister(&self.w);
        }
    }

    /// Whether the terminal item has been received.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done
    }

    fn recv_deadline(&mut self, deadline: Option<Instant>) -> Result<WatchItem, RecvTimeoutError> {
        loop {
            match self.step_owned() {
                Step::Item(item) => return Ok(item),
                Step::Done => return Err(RecvTimeoutError::Finished),
                Step::Empty => {}
            }
            let waker = self.thread_waker();
            match self.prepare_park(&waker) {
                Step::Item(item) => return Ok(item),
                Step::Done => return Err(RecvTimeoutError::Finished),
                Step::Empty => {}
            }
            match deadline {
                None => park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        self.w.parked.store(false, Ordering::Relaxed);
                        return Err(RecvTimeoutError::Timeout);
                    }
                    park_timeout(d - now);
                }
            }
            self.w.parked.store(false, Ordering::Relaxed);
        }
    }

    /// A waker that unparks the calling thread (cached: a `Watch` may move
    /// between threads, so the cache is keyed by thread).
    fn thread_waker(&mut self) -> Waker {
        let me = crate::sync::current();
        let cached = &mut self.occasional().thread_waker;
        match cached {
            Some((id, w)) if *id == me.id() => w.clone(),
            _ => {
                let w = Waker::from(std::sync::Arc::new(ThreadWaker(me.clone())));
                *cached = Some((me.id(), w.clone()));
                w
            }
        }
    }

    /// Registers `waker` and announces sleep; the caller then looks once
    /// more before sleeping.
    fn arm(&self, waker: &Waker) {
        self.w.waker.register(waker);
        // Relaxed: the fence below orders it before the re-check.
        self.w.parked.store(true, Ordering::Relaxed);
        // SeqCst fence: orders the `parked` store before the re-check's
        // loads; pairs with the dispatcher's fence after its pushes.
        fence(Ordering::SeqCst);
    }

    /// Registers `waker`, announces sleep, and looks once more.
    fn prepare_park(&mut self, waker: &Waker) -> Step<WatchItem> {
        self.arm(waker);
        let step = self.step_owned();
        if !matches!(step, Step::Empty) {
            self.w.parked.store(false, Ordering::Relaxed);
        }
        step
    }

    /// The streaming fast path of the batch calls: lends up to `max`
    /// changes from the replay and the queue in one tight loop, checking
    /// the watch's end once per batch rather than once per event. It
    /// serves only the steady state (streaming, not ended, no park
    /// transition pending) and stops at anything else, which the general
    /// step ([`Watch::step`]) then handles: the end, a park to take on, a
    /// re-list, a record the writer has lapped. Returns the events lent
    /// and whether the general step has work (false: the queue ran dry or
    /// a parked replay reached the head, so a batch call returns at once
    /// and polling an idle watch costs a few loads).
    fn stream_batch(&mut self, max: usize, f: &mut impl FnMut(EventRef<'_>)) -> (usize, bool) {
        if self.phase != Phase::Stream || self.w.end.get().is_some() {
            return (0, true);
        }
        // Acquire: pairs with the dispatcher's Release stores of `attach`.
        let raw = self.w.attach.load(Ordering::Acquire);
        let (replay_to, live) = match decode(raw) {
            Attach::Live(d) => (self.live_to(d), true),
            // A park already taken on: keep replaying up to the head.
            Attach::Parked(_) if self.park_seen == raw => (self.engine.ring.head(), false),
            _ => return (0, true),
        };
        let mut n = 0;
        while n < max && self.next_pos < replay_to {
            let pos = self.next_pos;
            let Ok(rec) = self.engine.ring.read_borrowed(&mut self.cursor, pos) else {
                return (n, true);
            };
            if rec.generation != self.generation || rec.kind == RecordKind::Relist {
                return (n, true);
            }
            self.next_pos = pos + 1;
            let (RecordKind::Change(kind), Some(object)) = (rec.kind, rec.object.as_ref()) else {
                continue;
            };
            if let Some(v) = self.w.spec.filter.verdict(kind, object, rec.prev.as_ref()) {
                self.last_rv = rec.rv;
                let (kind, rv, object) = record_event(rec, v);
                f(EventRef {
                    kind,
                    rv,
                    object: Some(object),
                    initial_events_end: false,
                });
                n += 1;
            }
        }
        if !live {
            self.maybe_request_resume(replay_to);
            return (n, false);
        }
        while n < max {
            let Some(handle) = self.pop_handle() else {
                break;
            };
            if self.w.producer_waiting.load(Ordering::Relaxed)
                && self.w.producer_waiting.swap(false, Ordering::Relaxed)
            {
                self.engine.wake_dispatcher();
            }
            let pos = handle >> 2;
            if handle & 3 == BOOKMARK {
                if let Some(rv) = self.take_bookmark(pos) {
                    f(EventRef {
                        kind: EventKind::Bookmark,
                        rv,
                        object: None,
                        initial_events_end: false,
                    });
                    n += 1;
                }
                continue;
            }
            if pos < self.next_pos {
                // Already served by a replay.
                continue;
            }
            let Ok(rec) = self.engine.ring.read_borrowed(&mut self.cursor, pos) else {
                // The handle is spent: end here; the general step reports it.
                self.lapped();
                return (n, true);
            };
            self.next_pos = pos + 1;
            if rec.object.is_none() {
                continue;
            }
            self.sample_in -= 1;
            if self.sample_in == 0 {
                self.sample_in = SAMPLE_EVERY;
                self.engine.record_received(rec);
            }
            self.last_rv = rec.rv;
            let (kind, rv, object) = record_event(rec, Verdict::from_bits(handle));
            f(EventRef {
                kind,
                rv,
                object: Some(object),
                initial_events_end: false,
            });
            n += 1;
        }
        (n, false)
    }

    fn step_owned(&mut self) -> Step<WatchItem> {
        match self.step() {
            Step::Item(raw) => Step::Item(raw.into_item()),
            Step::Empty => Step::Empty,
            Step::Done => Step::Done,
        }
    }

    /// A step that runs through [`Busy`] (for the blocking and batch calls).
    fn step(&mut self) -> Step<Raw> {
        loop {
            if let Ok(step) = self.step_budgeted() {
                return step;
            }
        }
    }

    fn step_budgeted(&mut self) -> Result<Step<Raw>, Busy> {
        loop {
            if self.phase == Phase::Done {
                return Ok(Step::Done);
            }
            let end = self.w.end.get();
            let ended = end.is_some();
            if let Some(end) = end {
                let (reason, drain) = &**end;
                if self.drained || !drain {
                    let reason = reason.clone();
                    self.phase = Phase::Done;
                    // Ended by anyone: the dispatcher may forget it now
                    // rather than when the handle drops.
                    self.unregister();
                    return Ok(Step::Item(Raw::End(reason)));
                }
            }
            let step = match self.phase {
                Phase::Activating => {
                    // Acquire: pairs with `activate`'s Release.
                    if self.w.attach.load(Ordering::Acquire) == NOT_ATTACHED {
                        Step::Empty
                    } else {
                        // Relaxed: ordered by the Acquire load of `attach`.
                        self.generation = self.w.active_generation.load(Ordering::Relaxed);
                        self.begin();
                        continue;
                    }
                }
                Phase::Initial => {
                    let occasional = self.occasional();
                    if let Some((object, rv)) = occasional.initial.pop_front() {
                        Counters::add(&self.engine.counters.initial_events_sent, 1);
                        return Ok(Step::Item(Raw::Initial(object, rv)));
                    }
                    // Served: give its buffer back.
                    occasional.initial = VecDeque::new();
                    let initial_end = occasional.initial_end.take();
                    self.phase = Phase::Stream;
                    if let Some(rv) = initial_end {
                        self.w.initial_end.mark_sent();
                        Counters::add(&self.engine.counters.bookmarks_sent, 1);
                        return Ok(Step::Item(Raw::Bookmark {
                            rv,
                            initial_events_end: true,
                        }));
                    }
                    continue;
                }
                Phase::Stream => self.next_change()?,
                Phase::Done => unreachable!(),
            };
            if !matches!(step, Step::Empty) {
                return Ok(step);
            }
            if ended {
                // A draining end, and nothing is left that was enqueued
                // before it (the end was seen before this pass).
                self.drained = true;
            } else if !self.w.is_ended() {
                return Ok(Step::Empty);
            }
            // Ended during this pass: one more pass, now ordered after the
            // end, finds everything enqueued before it.
        }
    }

    /// Ends the watch from the consumer's side (a replay that cannot go
    /// on). If it had ended already while draining, the drain stops here:
    /// the first reason stands.
    fn end_now(&mut self, reason: EndReason) -> Step<Raw> {
        self.w.end(reason, &self.engine.counters);
        self.drained = true;
        self.step()
    }

    /// Resolves the start under the writer lock (O(1) for a snapshot, a
    /// binary search for a version), so it is consistent with the ring.
    fn begin(&mut self) {
        let st = self.engine.lock_state();
        if st.generation != self.generation {
            drop(st);
            self.w.end(EndReason::Relisted, &self.engine.counters);
            // Ends now, even if a draining end came first: nothing to drain.
            self.drained = true;
            return;
        }
        match self.w.spec.start {
            Start::Snapshot {
                initial_events_end, ..
            } => {
                let store = st.store.clone();
                let rv = st.rv;
                self.next_pos = st.ring.head();
                drop(st);
                // The store is a persistent map: the clone above is O(1) and
                // the walk below runs outside the writer lock.
                let filter = &self.w.spec.filter;
                let initial = store
                    .iter()
                    .filter(|e| filter.admits(&e.object))
                    .map(|e| (e.object.clone(), e.rv))
                    .collect();
                let occasional = self.occasional();
                occasional.initial = initial;
                occasional.initial_end = initial_events_end.then_some(rv);
                self.last_rv = rv;
                self.start_rv = rv;
                // The snapshot is at or after the version asked for
                // (activation waited for it): its bookmark is received.
                self.w.initial_end.mark_received();
                self.phase = Phase::Initial;
            }
            Start::After(rv) => {
                let oldest = st.ring.oldest_minus_one();
                if rv < oldest {
                    drop(st);
                    let gone = Gone::new(rv, oldest);
                    self.w.end(EndReason::Gone(gone), &self.engine.counters);
                    self.drained = true;
                    return;
                }
                self.next_pos = st.ring.first_after(rv);
                drop(st);
                self.last_rv = rv;
                self.start_rv = rv;
                self.phase = Phase::Stream;
            }
        }
    }

    fn next_change(&mut self) -> Result<Step<Raw>, Busy> {
        // Acquire: pairs with the dispatcher's Release stores of `attach`.
        let raw = self.w.attach.load(Ordering::Acquire);
        let (replay_to, live) = match decode(raw) {
            Attach::Live(d) => (self.live_to(d), true),
            Attach::Parked(_) => {
                if self.park_seen != raw {
                    // Everything queued predates the park and the replay
                    // below re-derives it; the dispatcher does not push
                    // while we are parked, so this cannot drop a newer one.
                    while self.w.queue.pop().is_some() {}
                    if let Some(o) = &mut self.occasional {
                        o.spilled.clear();
                        o.spilled_at = 0;
                    }
                    self.w.discard_spill(&self.engine.counters.overflow_handles);
                    // A discarded bookmark marker is no longer in flight
                    // (Release: see the field).
                    self.w.bookmark_pending.store(false, Ordering::Release);
                    self.park_seen = raw;
                    self.resume_requested = false;
                }
                (self.engine.ring.head(), false)
            }
            Attach::NotYet => unreachable!("streaming before registration"),
        };
        // Replay from the ring: what happened between the start and the
        // dispatcher taking over, or everything while parked.
        let mut scanned = 0;
        while self.next_pos < replay_to {
            scanned += 1;
            if scanned > SCAN_BUDGET {
                return Err(Busy);
            }
            let pos = self.next_pos;
            let Ok(rec) = self.engine.ring.read(&mut self.cursor, pos) else {
                return self.fell_behind();
            };
            if rec.generation != self.generation || rec.kind == RecordKind::Relist {
                // Only a parked replay can reach a re-list (the dispatcher
                // ends us when it gets there); never cross it.
                drop(rec);
                return Ok(self.end_now(EndReason::Relisted));
            }
            self.next_pos = pos + 1;
            let RecordKind::Change(kind) = rec.kind else {
                continue;
            };
            let Some(object) = rec.object.as_ref() else {
                continue;
            };
            if let Some(v) = self.w.spec.filter.verdict(kind, object, rec.prev.as_ref()) {
                self.last_rv = rec.rv;
                if !live {
                    self.maybe_request_resume(replay_to);
                }
                return Ok(Step::Item(Raw::Record(rec, v)));
            }
        }
        if !live {
            self.maybe_request_resume(replay_to);
            return Ok(Step::Empty);
        }
        loop {
            let Some(handle) = self.pop_handle() else {
                return Ok(Step::Empty);
            };
            if self.w.producer_waiting.load(Ordering::Relaxed)
                && self.w.producer_waiting.swap(false, Ordering::Relaxed)
            {
                self.engine.wake_dispatcher();
            }
            let pos = handle >> 2;
            if handle & 3 == BOOKMARK {
                if let Some(rv) = self.take_bookmark(pos) {
                    return Ok(Step::Item(Raw::Bookmark {
                        rv,
                        initial_events_end: false,
                    }));
                }
                continue;
            }
            if pos < self.next_pos {
                // Already served by a replay.
                continue;
            }
            let Ok(rec) = self.engine.ring.read(&mut self.cursor, pos) else {
                return self.fell_behind();
            };
            self.next_pos = pos + 1;
            if rec.object.is_none() {
                continue;
            }
            self.sample_in -= 1;
            if self.sample_in == 0 {
                self.sample_in = SAMPLE_EVERY;
                self.engine.record_received(&rec);
            }
            self.last_rv = rec.rv;
            return Ok(Step::Item(Raw::Record(rec, Verdict::from_bits(handle))));
        }
    }

    /// Where a live watch replays up to before it turns to its queue: the
    /// dispatcher's cursor when it took over, or, for a follower, the
    /// ring's head (its queue carries only bookmark markers).
    #[inline]
    fn live_to(&self, taken_over: u64) -> u64 {
        if self.follower {
            self.engine.ring.head()
        } else {
            taken_over
        }
    }

    /// The next handle: what was taken with the overflow, then the queue,
    /// then the overflow.
    #[inline]
    fn pop_handle(&mut self) -> Option<u64> {
        self.next_spilled()
            .or_else(|| self.w.queue.pop())
            .or_else(|| self.take_spill())
    }

    /// The queue is empty: takes the overflow, if the dispatcher started
    /// one. While it is active the dispatcher pushes nothing to the queue,
    /// so whatever the queue holds now is older than the overflow: it is
    /// taken first, outside the lock, then the overflow under it; clearing
    /// `spilling` hands the queue back to the dispatcher.
    #[cold]
    fn take_spill(&mut self) -> Option<u64> {
        // Acquire: pairs with the dispatcher's Release in `overflow`.
        if !self.w.spilling.load(Ordering::Acquire) {
            return None;
        }
        let w = &self.w;
        let o = self.occasional.get_or_insert_with(Box::default);
        o.spilled.clear();
        o.spilled_at = 0;
        while let Some(handle) = w.queue.pop() {
            o.spilled.push(handle);
        }
        {
            let mut spill = w.lock_spill();
            // Taken whole (its buffer freed after the copy, not kept at
            // its high-water mark), and given back to the budget.
            let taken = std::mem::take(&mut *spill);
            let held = &self.engine.counters.overflow_handles;
            // Relaxed: see `WatcherShared::overflow`.
            held.fetch_sub(taken.len() as u64, Ordering::Relaxed);
            o.spilled.extend_from_slice(&taken);
            w.spilling.store(false, Ordering::Relaxed);
        }
        self.next_spilled()
    }

    /// The next handle taken with the overflow, if any is left.
    #[inline]
    fn next_spilled(&mut self) -> Option<u64> {
        let o = self.occasional.as_deref_mut()?;
        let handle = o.spilled.get(o.spilled_at).copied();
        if handle.is_some() {
            o.spilled_at += 1;
        } else if o.spilled_at > 0 {
            // Served: free the buffer rather than keep its high-water mark
            // for the watch's life (once per overflow taken).
            o.spilled = Vec::new();
            o.spilled_at = 0;
        }
        handle
    }

    /// A bookmark marker popped at dispatcher position `pos`: its version,
    /// unless it says nothing new (a replay has passed it, or it is not
    /// above the start).
    fn take_bookmark(&mut self, pos: u64) -> Option<ResourceVersion> {
        // Relaxed: the pop's Acquire orders it after the dispatcher's store.
        let rv = ResourceVersion::new(self.w.bookmark_rv.load(Ordering::Relaxed));
        // Release: we are done reading `bookmark_rv` (see the field).
        self.w.bookmark_pending.store(false, Ordering::Release);
        if pos < self.next_pos || rv < self.last_rv || rv <= self.start_rv {
            return None;
        }
        self.last_rv = rv;
        Counters::add(&self.engine.counters.bookmarks_sent, 1);
        Some(rv)
    }

    /// A parked watch asks to be fed again once it is within a few changes
    /// of the ring's head (`head`): the dispatcher resumes it from its own
    /// cursor, and whatever lies between is replayed here.
    fn maybe_request_resume(&mut self, head: u64) {
        const SLACK: u64 = 64;
        if !self.resume_requested && head - self.next_pos.min(head) <= SLACK {
            self.resume_requested = true;
            self.engine.request_resume(&self.w);
        }
    }

    /// The writer reused the slot of the next record this watch needs.
    fn fell_behind(&mut self) -> Result<Step<Raw>, Busy> {
        self.lapped();
        Ok(self.step())
    }

    /// Ends the watch because the writer lapped it (`Gone`), or because a
    /// re-list emptied the window (`Relisted`); the next step reports it.
    fn lapped(&mut self) {
        let (generation, oldest) = {
            let st = self.engine.lock_state();
            (st.generation, st.ring.oldest_minus_one())
        };
        // A re-list empties the window, so the writer reuses the old
        // generation's slots freely: that is the re-list, not lagging.
        let reason = if generation != self.generation {
            EndReason::Relisted
        } else {
            EndReason::Gone(Gone::new(self.last_rv, oldest))
        };
        self.w.end(reason, &self.engine.counters);
        self.drained = true;
    }
}

impl futures_core::Stream for Watch {
    type Item = WatchItem;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchItem>> {
        let this = self.get_mut();
        match this.step_budgeted() {
            Ok(Step::Item(raw)) => return Poll::Ready(Some(raw.into_item())),
            Ok(Step::Done) => return Poll::Ready(None),
            Err(Busy) => {
                // Cooperative: let the executor run others, then resume.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Ok(Step::Empty) => {}
        }
        match this.prepare_park(cx.waker()) {
            Step::Item(item) => Poll::Ready(Some(item)),
            Step::Done => Poll::Ready(None),
            Step::Empty => Poll::Pending,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.phase != Phase::Done {
            self.w.end(EndReason::Stopped, &self.engine.counters);
            self.unregister();
        }
    }
}
