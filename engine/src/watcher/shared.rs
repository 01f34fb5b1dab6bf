//! The state a watcher's producer (the dispatcher) and its consumer (the
//! [`Watch`](crate::Watch) handle) share, and the protocol between them:
//! every atomic of a watcher is here, behind methods that name the step of
//! the protocol they take. The slow-watcher policies (`policy/`) and the
//! consumer's state machine (`consumer.rs`) are written in those steps.
//!
//! # Synchronization
//!
//! Each watcher has one producer (the dispatcher) and one consumer (the
//! [`Watch`](crate::Watch) handle, `&mut self` on every receive). They share:
//!
//! - `queue`: an SPSC queue of handles `(position << 2) | verdict` (see
//!   `queue.rs`). Event bodies stay in the history ring; the consumer reads
//!   the record at the position and learns from its stamp whether it was
//!   overwritten meanwhile (then the watch ends with `Gone`).
//! - `attach`: written only by the dispatcher, `Release`; read by the
//!   consumer with `Acquire`. Either "not yet", "live from `d`" (the
//!   writer's head when the dispatcher registered the watcher, its own
//!   cursor when it resumed it: from `d` on it enqueues every admitted
//!   change, and nothing below `d`, even while its cursor is still behind
//!   it) or "parked at `p`" (the queue was full when change `p` came; the
//!   dispatcher enqueues nothing more).
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
//! Under [`SlowWatchers::Park`](crate::config::SlowWatchers::Park) a full queue
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
//! no one else. (Under the time budget the dispatcher waits instead, with
//! [`WatcherShared::push_until`], and ends a watcher still full with
//! `TooSlow`; see `policy/time_budget.rs`.)
//!
//! # Spilling
//!
//! Before parking a selective watcher, the park policy may give it an
//! overflow ([`WatcherShared::overflow`]): a locked vector of handles, in
//! dispatch order, all newer than what the queue holds. While `spilling`
//! is set the dispatcher pushes to the overflow, never to the queue, so
//! order holds; the consumer, once its queue is empty, takes the queue's
//! remainder and then the whole overflow under the lock and clears
//! `spilling` ([`WatcherShared::take_overflow`]), which hands the queue
//! back. The handles held in every overflow of the engine are counted in
//! one gauge (`Stats::overflow_handles`) that the policy bounds.
//!
//! # Waiting for room
//!
//! Under the time budget the dispatcher may wait for a full queue
//! ([`WatcherShared::push_until`]): it sets `producer_waiting`, fences
//! (`SeqCst`) and tries once more before sleeping on the clock; the
//! consumer, after a pop, clears the flag and wakes it
//! ([`WatcherShared::take_producer_waiting`]). Best effort on the
//! consumer's side (no fence on its hot path): the dispatcher also polls,
//! so a lost wake costs at most one poll interval.
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

use std::fmt;
use std::task::Waker;
use std::time::{Duration, Instant};

use super::probe::{WatchProbe, WatchState};
use super::spec::{Packed, Start, WatcherSpec};
use crate::bookmarks::InitialEventsEnd;
use crate::clock::Clock;
use crate::event::EndReason;
use crate::queue::Queue;
use crate::rv::ResourceVersion;
use crate::stats::Counters;
use crate::sync::{
    AtomicBool, AtomicU8, AtomicU64, AtomicWaker, Mutex, MutexGuard, OnceBox, OnceLock, Ordering,
    fence,
};

/// `attach` before the dispatcher has registered the watcher.
const NOT_ATTACHED: u64 = u64::MAX;
/// `attach` flag: parked at the position in the low bits.
const PARKED: u64 = 1 << 63;

/// The decoded `attach` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// Not registered yet.
    NotYet,
    /// Live: the dispatcher enqueues every admitted change from this
    /// position on.
    Live(u64),
    /// Parked at this position: the dispatcher enqueues nothing.
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

/// `generation` of a watch begun before the first list (a list's
/// generation is 1 or more).
const UNLISTED: u64 = 0;

/// The state the dispatcher and the consumer share.
///
/// Every idle watcher holds one, so it is kept small (208 bytes on
/// x86-64 Linux, 224 with the `Arc`'s counts; `lib.rs` pins it): what is
/// rare is boxed on first use (the end and the overflow, the queue's
/// ring), what is derivable is not stored (a route's value, the bookmark
/// floor, the deadline), what is small is packed (the start and its
/// flags, the timeout), and the byte-wide flags share one word.
pub(crate) struct WatcherShared {
    pub(crate) spec: WatcherSpec,
    /// How the watch begins, and whether it takes bookmarks: immutable,
    /// packed (`Packed`: the version here, the kind and the flags in
    /// `shape`, a byte among the flags below).
    start_rv: ResourceVersion,
    shape: u8,
    /// The initial-events-end state machine (seeds/000).
    pub(crate) initial_end: InitialEventsEnd,
    pub(crate) queue: Queue,
    attach: AtomicU64,
    /// The engine generation the watch was begun against ([`UNLISTED`]:
    /// before the first list) until the dispatcher activates it, then the
    /// generation it activated it in (one word for both: the first is
    /// read only before the activation, the second only after).
    /// `Relaxed`: before the activation only the creator has written it,
    /// published to the dispatcher with the registration (the control
    /// queue's lock); the activation's store is published by `attach`'s
    /// `Release`.
    generation: AtomicU64,
    /// What a watcher needs only once it ends or overflows ([`Cold`]),
    /// allocated by the first of the two: most watchers hold one word here
    /// until they end.
    cold: OnceBox<Cold>,
    /// The end is set (`Cold::end`). Set, never cleared, by whoever tried
    /// to end the watch, after its attempt (won or lost): `Release`,
    /// publishing the end; the `Acquire` loads of `is_ended` and
    /// `end_state` pair with it. The flag, not the cell, answers "ended?",
    /// so that question stays one load (the dispatcher asks it per
    /// candidate, the consumer per batch).
    ended: AtomicBool,
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
    /// The overflow is active: the dispatcher pushes to it, not to the
    /// queue, until the consumer takes its items. Written only under the
    /// `spill` lock (`Cold::spill`): set by the dispatcher, cleared by the
    /// consumer; so a `false` read by the dispatcher is never stale, and a
    /// stale `true` only sends it to the locked path.
    spilling: AtomicBool,
}

/// The part of a watcher's shared state that is used only once it ends
/// or overflows (`WatcherShared::cold`): boxed on first use, so that an
/// idle watcher holds a pointer instead of 40 bytes (the end's `OnceBox`
/// and the overflow's lock and vector), kept for the watcher's life once
/// it is there.
struct Cold {
    /// The end, and whether it waits until the consumer has drained what
    /// it holds (a graceful `TooSlow`): set once, both together, so a
    /// concurrent end for another reason can never inherit the drain.
    /// `WatcherShared::ended` says whether it is set.
    end: OnceLock<(EndReason, bool)>,
    /// Handles that did not fit in the queue (see [Spilling](#spilling)),
    /// in dispatch order, all newer than what the queue holds while
    /// `spilling`.
    spill: Mutex<Vec<u64>>,
}

impl fmt::Debug for WatcherShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatcherShared")
            .field("spec", &self.spec)
            .field("end", &self.end_state().map(|end| end.0))
            .finish_non_exhaustive()
    }
}

/// The low bits of a queue handle that mark a bookmark (a change's
/// handle carries its verdict, 1 to 3, there).
pub(crate) const BOOKMARK: u64 = 0;

impl WatcherShared {
    /// A watcher of `spec`, beginning at `start`, with bookmarks if
    /// `allow_bookmarks`, begun against engine generation `generation`
    /// (`None`: before the first list).
    pub(crate) fn new(
        spec: WatcherSpec,
        start: Start,
        allow_bookmarks: bool,
        generation: Option<u64>,
        queue_capacity: usize,
    ) -> WatcherShared {
        let packed = Packed::new(start, allow_bookmarks);
        let initial_end = match start {
            Start::Snapshot {
                initial_events_end, ..
            } => InitialEventsEnd::new(initial_events_end),
            Start::After(_) | Start::Now => InitialEventsEnd::new(false),
        };
        debug_assert_ne!(generation, Some(UNLISTED), "generations start at 1");
        WatcherShared {
            spec,
            start_rv: packed.rv,
            shape: packed.shape,
            initial_end,
            queue: Queue::new(queue_capacity),
            attach: AtomicU64::new(NOT_ATTACHED),
            generation: AtomicU64::new(generation.unwrap_or(UNLISTED)),
            cold: OnceBox::new(),
            ended: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            place: AtomicU8::new(0),
            waker: AtomicWaker::new(),
            touched: AtomicU64::new(u64::MAX),
            producer_waiting: AtomicBool::new(false),
            bookmark_rv: AtomicU64::new(0),
            bookmark_pending: AtomicBool::new(false),
            spilling: AtomicBool::new(false),
        }
    }

    /// The cold part, allocated by the first call (the first end or
    /// overflow). Racing first calls each allocate one; one is kept (the
    /// `OnceBox`'s compare-exchange), the other dropped unused.
    fn cold(&self) -> &Cold {
        self.cold.get_or_init(|| {
            Box::new(Cold {
                end: OnceLock::new(),
                spill: Mutex::new(Vec::new()),
            })
        })
    }

    /// The overflow's lock (allocating the cold part if need be: the
    /// dispatcher's first overflow).
    fn lock_spill(&self) -> MutexGuard<'_, Vec<u64>> {
        // Every mutation under the lock completes before the guard drops.
        self.cold().spill.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The overflow's lock, if the cold part is there.
    fn lock_spill_if_any(&self) -> Option<MutexGuard<'_, Vec<u64>>> {
        let cold = self.cold.get()?;
        // Every mutation under the lock completes before the guard drops.
        Some(cold.spill.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How the watch begins.
    pub(crate) fn start(&self) -> Start {
        self.packed().start()
    }

    /// Whether the watch takes bookmarks.
    pub(crate) fn allow_bookmarks(&self) -> bool {
        self.packed().allow_bookmarks()
    }

    fn packed(&self) -> Packed {
        Packed {
            shape: self.shape,
            rv: self.start_rv,
        }
    }

    /// Dispatcher, before activating: the generation the watch was begun
    /// against, `None` if before the first list.
    pub(crate) fn begun_generation(&self) -> Option<u64> {
        // Relaxed: see the field; only the dispatcher writes it after the
        // creator, and it reads this before it activates the watcher.
        let g = self.generation.load(Ordering::Relaxed);
        (g != UNLISTED).then_some(g)
    }

    /// Dispatcher: whether handles go to the overflow rather than the
    /// queue (`Relaxed`: see the field).
    #[inline]
    pub(crate) fn is_spilling(&self) -> bool {
        self.spilling.load(Ordering::Relaxed)
    }

    /// Dispatcher: `handle` did not fit, or the overflow is active. Keeps
    /// it in order, in the queue if the consumer has taken the overflow
    /// meanwhile and made room, else in the overflow. Returns false, and
    /// keeps nothing, if the overflow holds `limit` handles already or all
    /// overflows together hold `budget`: the caller parks the watcher.
    ///
    /// `held` counts the handles in every overflow of the engine (changed
    /// only under each watcher's `spill` lock, so exact); past `budget` a
    /// full queue parks the watcher, which holds no more memory than its
    /// queue: the engine's overflow memory is bounded by configuration
    /// ([`Config::spill_budget`](crate::Config::spill_budget)), not by the
    /// number of stalled consumers. See [Spilling](#spilling).
    pub(crate) fn overflow(
        &self,
        handle: u64,
        limit: usize,
        held: &std::sync::atomic::AtomicU64,
        budget: u64,
    ) -> bool {
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
        // No cold part: never an overflow, so `spilling` is false.
        let Some(mut spill) = self.lock_spill_if_any() else {
            return;
        };
        // Relaxed: see `overflow`.
        held.fetch_sub(spill.len() as u64, Ordering::Relaxed);
        *spill = Vec::new();
        self.spilling.store(false, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn is_ended(&self) -> bool {
        // Acquire: pairs with the Release in `set_end` (see `ended`).
        self.ended.load(Ordering::Acquire)
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
        let cold = self.cold();
        // A lost `set` returns once the winner's value is in place (the
        // cell's contract), so either way the end is set here.
        let won = cold.end.set((reason, drain)).is_ok();
        // Release: publishes the end; pairs with the Acquire loads of
        // `ended`. The loser stores it too, so that its caller, which may
        // look next (`Watch::end_now`), never finds the watch not ended
        // in the moment between the winner's set and its store.
        self.ended.store(true, Ordering::Release);
        if let (true, Some(end)) = (won, cold.end.get()) {
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
        // The reference's `nonblockingAdd` rule: a bookmark below the
        // version a watch-list asked for is dropped, never enqueued.
        let below = rv < self.start().bookmarks_from();
        if !self.is_live() || self.is_ended() || self.is_spilling() || below {
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

    /// Dispatcher: pushes `handle`, waiting for the consumer to make room
    /// until `until` on `clock` (`None`: as long as it takes), and giving
    /// up early if the watch ends or `stopping` says so. The consumer is
    /// woken first, so that it drains. Tries at least once, and once more
    /// after the time is up (see [Waiting for room](#waiting-for-room)).
    pub(crate) fn push_until(
        &self,
        handle: u64,
        clock: &dyn Clock,
        until: Option<Instant>,
        stopping: impl Fn() -> bool,
    ) -> Pushed {
        /// How often the wait looks again, in real time, should the
        /// consumer's wake have raced with its sleep.
        const POLL: Duration = Duration::from_millis(1);
        self.wake();
        let pushed = loop {
            if self.queue.push(handle).is_ok() {
                break Pushed::Yes;
            }
            if self.is_ended() || stopping() {
                break Pushed::Gave;
            }
            if until.is_some_and(|u| clock.now() >= u) {
                // Its last try was the push above.
                break Pushed::TimedOut;
            }
            // A swap, not a store: the consumer clears the flag with a
            // swap (see `Shared::send_control` on loom#254).
            self.producer_waiting.swap(true, Ordering::Relaxed);
            // SeqCst: the flag is visible before the re-check reads the
            // consumer's head (pairs with the consumer's pop; a race costs
            // one POLL).
            fence(Ordering::SeqCst);
            if self.queue.push(handle).is_ok() {
                break Pushed::Yes;
            }
            let now = clock.now();
            let wake = until.or_else(|| now.checked_add(POLL)).unwrap_or(now);
            clock.park_until(wake, POLL);
        };
        self.producer_waiting.swap(false, Ordering::Relaxed);
        pushed
    }

    /// Consumer, after a pop: whether the dispatcher waits for room (then
    /// the caller wakes it). Clears the flag.
    #[inline]
    pub(crate) fn take_producer_waiting(&self) -> bool {
        // Relaxed: best effort (see Waiting for room); the load first keeps
        // the common case a read of a shared line.
        self.producer_waiting.load(Ordering::Relaxed)
            && self.producer_waiting.swap(false, Ordering::Relaxed)
    }

    /// Wakes the consumer (a watcher the dispatcher is about to wait for).
    pub(crate) fn wake(&self) {
        self.waker.wake();
    }

    /// Dispatcher: registers the watcher as live from `pos`: the changes
    /// from `pos` on are enqueued for it ([`takes`](Self::takes)), and
    /// whatever it needs below `pos` its consumer replays from the ring.
    pub(crate) fn activate(&self, pos: u64, generation: u64) {
        // Relaxed: published by the Release store of `attach` below.
        self.generation.store(generation, Ordering::Relaxed);
        // Release: publishes `generation` with `attach`.
        self.attach.store(pos, Ordering::Release);
        self.waker.wake();
    }

    /// Dispatcher: whether changes are to be enqueued for this watcher (it
    /// is registered and not parked). `Relaxed`: only the dispatcher
    /// writes `attach`.
    pub(crate) fn is_live(&self) -> bool {
        self.attach.load(Ordering::Relaxed) & PARKED == 0
    }

    /// Dispatcher: whether the change at `pos` is to be enqueued for this
    /// watcher: it is live, from `pos` or before. A change below where it
    /// went live is never queued, even while the dispatcher's cursor is
    /// behind that point: the consumer replays what it needs of those from
    /// the ring, and a queue filled with the others (at or below its start)
    /// would make a reader that pauses look slow for changes it never
    /// delivers. One load, as [`is_live`](Self::is_live) (`Relaxed`: only
    /// the dispatcher writes `attach`).
    #[inline]
    pub(crate) fn takes(&self, pos: u64) -> bool {
        let raw = self.attach.load(Ordering::Relaxed);
        // Not attached (all ones) and parked both have the `PARKED` bit.
        raw & PARKED == 0 && raw <= pos
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

    /// Consumer: where the watcher stands (`Acquire`: pairs with the
    /// dispatcher's `Release` stores in `activate`, `park` and `resume`,
    /// which publish the generation and every push before a park).
    #[inline]
    pub(crate) fn attach(&self) -> Attach {
        decode(self.attach.load(Ordering::Acquire))
    }

    /// Consumer, after [`attach`](Self::attach) found it registered: the
    /// generation the dispatcher activated it in.
    pub(crate) fn active_generation(&self) -> u64 {
        // Relaxed: ordered by the Acquire load of `attach`.
        self.generation.load(Ordering::Relaxed)
    }

    /// Any thread: where the watcher stands and how much waits for its
    /// consumer ([`WatchStopper::probe`](crate::watch::WatchStopper::probe)):
    /// racing loads, an operator's view.
    pub(crate) fn probe(&self) -> WatchProbe {
        // Relaxed: a statistic (the lock below orders the overflow's
        // length itself).
        let spilled = if self.spilling.load(Ordering::Relaxed) {
            self.lock_spill_if_any().map_or(0, |s| s.len() as u64)
        } else {
            0
        };
        let mut queued = self.queue.len() + spilled;
        let state = if self.is_ended() {
            WatchState::Ended
        } else {
            match self.attach() {
                Attach::NotYet => WatchState::Starting,
                Attach::Parked(_) => {
                    // What the queue still holds is older than the park,
                    // to be discarded: the replay re-derives it.
                    queued = 0;
                    WatchState::Parked
                }
                Attach::Live(_) if queued > 0 => WatchState::Queued,
                Attach::Live(_) => WatchState::Following,
            }
        };
        WatchProbe { state, queued }
    }

    /// The end, if the watch has ended, and whether it waits for the
    /// consumer to drain first.
    #[inline]
    pub(crate) fn end_state(&self) -> Option<(&EndReason, bool)> {
        if !self.is_ended() {
            return None;
        }
        let end = self.cold.get()?.end.get()?;
        Some((&end.0, end.1))
    }

    /// Consumer, on seeing a new park: forgets what it was fed. Everything
    /// queued predates the park and the consumer's replay re-derives it;
    /// the dispatcher does not push while the watcher is parked, so this
    /// cannot drop a newer handle. The overflow goes back to the budget,
    /// and a discarded bookmark marker is no longer in flight.
    pub(crate) fn forget_fed(&self, held: &std::sync::atomic::AtomicU64) {
        while self.queue.pop().is_some() {}
        self.discard_spill(held);
        // Release: see `bookmark_pending`.
        self.bookmark_pending.store(false, Ordering::Release);
    }

    /// Consumer, on popping a bookmark marker: its version. The marker is
    /// then no longer in flight.
    pub(crate) fn take_bookmark_rv(&self) -> ResourceVersion {
        // Relaxed: the pop's Acquire orders it after the dispatcher's store.
        let rv = ResourceVersion::new(self.bookmark_rv.load(Ordering::Relaxed));
        // Release: we are done reading `bookmark_rv` (see the field).
        self.bookmark_pending.store(false, Ordering::Release);
        rv
    }

    /// Consumer: whether the dispatcher has started an overflow
    /// ([Spilling](#spilling)).
    #[inline]
    pub(crate) fn has_overflow(&self) -> bool {
        // Acquire: pairs with the dispatcher's Release in `overflow`.
        self.spilling.load(Ordering::Acquire)
    }

    /// Consumer, its queue empty: if the dispatcher started an overflow,
    /// appends what the queue still holds and then the whole overflow to
    /// `out` and hands the queue back ([Spilling](#spilling)). Returns
    /// whether there was one.
    #[cold]
    pub(crate) fn take_overflow(
        &self,
        out: &mut Vec<u64>,
        held: &std::sync::atomic::AtomicU64,
    ) -> bool {
        if !self.has_overflow() {
            return false;
        }
        // While the overflow is active the dispatcher pushes nothing to
        // the queue: what it holds is older than the overflow; taken
        // outside the lock.
        while let Some(handle) = self.queue.pop() {
            out.push(handle);
        }
        let mut spill = self.lock_spill();
        // Taken whole (its buffer freed after the copy, not kept at its
        // high-water mark), and given back to the budget.
        let taken = std::mem::take(&mut *spill);
        // Relaxed: see `overflow`.
        held.fetch_sub(taken.len() as u64, Ordering::Relaxed);
        out.extend_from_slice(&taken);
        self.spilling.store(false, Ordering::Relaxed);
        true
    }

    /// Consumer: registers `waker` and announces that it is about to
    /// sleep; the caller then looks once more before sleeping.
    pub(crate) fn prepare_sleep(&self, waker: &Waker) {
        self.waker.register(waker);
        // Relaxed: the fence below orders it before the re-check.
        self.parked.store(true, Ordering::Relaxed);
        // SeqCst fence: orders the `parked` store before the re-check's
        // loads; pairs with the dispatcher's fence after its pushes.
        fence(Ordering::SeqCst);
    }

    /// Consumer: awake after all (its re-check found something, or it woke).
    #[inline]
    pub(crate) fn awake(&self) {
        // Relaxed: a stale `true` costs one spurious wake (see the field).
        self.parked.store(false, Ordering::Relaxed);
    }
}

/// What [`WatcherShared::push_until`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// The handle is in the queue.
    Yes,
    /// Not pushed: the watch ended or the engine is stopping.
    Gave,
    /// Not pushed: the time ran out.
    TimedOut,
}
