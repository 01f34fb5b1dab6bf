//! The consumer's state machine: how a [`Watch`] turns its start, its
//! queue, its overflow and the history ring into one gap-free stream.
//!
//! A watch moves through four phases: `Activating` (until the dispatcher
//! registers it), `Initial` (serving the snapshot of a list-then-watch
//! start, then the initial-events-end bookmark if asked), `Stream`
//! (replaying the ring up to where the dispatcher took over, then its
//! queue; or, parked or following, the ring up to its head), `Done` (the
//! end has been returned). Every step reads the watcher's shared state
//! through the protocol's methods (`watcher/shared.rs`); the receive calls
//! (`recv.rs`) drive the steps.

use std::collections::VecDeque;
use std::fmt;
use std::task::Waker;

use super::item::{EventRef, Raw, record_event};
use crate::event::{EndReason, Gone, WatchItem};
use crate::filter::Verdict;
use crate::object::Object;
use crate::ring::{Chunk, ReadCursor, Record, RecordKind};
use crate::rv::ResourceVersion;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::sync::{Arc, ThreadId};
use crate::watcher::{Attach, BOOKMARK, Route, Start, WatcherShared};

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
    pub(super) w: Arc<WatcherShared>,
    pub(super) engine: Arc<Shared>,
    pub(super) phase: Phase,
    /// The position of the last park seen (to discard the queue once per
    /// park), [`NO_PARK`] before the first. The position is all that the
    /// decoded `Attach::Parked` compared by, in 8 bytes rather than 16.
    park_seen: u64,
    /// A resume has been asked for the current park.
    resume_requested: bool,
    /// The next position this watch has not passed.
    next_pos: u64,
    cursor: ReadCursor,
    /// The last resource version delivered (or the start), for `Gone`.
    last_rv: ResourceVersion,
    /// The version the watch started at: bookmarks at or below it say
    /// nothing new and are dropped (seeds/000 `process`).
    start_rv: ResourceVersion,
    /// A draining end has found nothing more to deliver.
    drained: bool,
    /// Queue pops until the next latency sample (a `u8`: it packs with
    /// the flags).
    sample_in: u8,
    /// [`Route::Follow`]: reads the ring up to its head, not its queue.
    follower: bool,
    /// The dispatcher has been asked to forget this watch (once is
    /// enough: a second request would only cost it a control round).
    unregistered: bool,
    /// Boxed on first use, so that an idle watch stays small.
    pub(super) occasional: Option<Box<Occasional>>,
}

/// The consumer's state for what a watch does now and then: serve its
/// initial list, take an overflow, block a thread.
#[derive(Default)]
pub(super) struct Occasional {
    /// The initial list (dropped, with its buffer, once served).
    initial: VecDeque<(Object, ResourceVersion)>,
    initial_end: Option<ResourceVersion>,
    /// Handles taken from the queue and the overflow together, served
    /// before the queue (see `watcher/shared.rs`, Spilling); `spilled_at`
    /// is the next one.
    spilled: Vec<u64>,
    spilled_at: usize,
    pub(super) thread_waker: Option<(ThreadId, Waker)>,
}

/// One queue pop in this many is timed for the enqueued -> received
/// histogram.
const SAMPLE_EVERY: u8 = 64;

/// `park_seen` before any park (a position is below 2^62).
const NO_PARK: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
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
pub(super) enum Step<T> {
    Item(T),
    Empty,
    Done,
}

/// Work remains (a replay scanned its budget of records without finding one
/// for this watch): call again, after yielding if cooperative.
pub(super) struct Busy;

/// Records a replay scans per step before it yields ([`Busy`]), so a
/// selective watch catching up never holds an async executor's thread for
/// long.
const SCAN_BUDGET: u32 = 1024;

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
            park_seen: NO_PARK,
            resume_requested: false,
            follower,
            unregistered: false,
            next_pos: 0,
            cursor,
            last_rv: ResourceVersion::ZERO,
            start_rv: ResourceVersion::ZERO,
            drained: false,
            sample_in: SAMPLE_EVERY,
            occasional: None,
        }
    }

    pub(super) fn occasional(&mut self) -> &mut Occasional {
        self.occasional.get_or_insert_with(Box::default)
    }

    /// Asks the dispatcher to forget this (ended) watch, once.
    pub(super) fn unregister(&mut self) {
        if !std::mem::replace(&mut self.unregistered, true) {
            self.engine.unregister(&self.w);
        }
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
    /// The history chunk the cursor holds (one count), if any.
    pub(super) fn cursor_chunk(&self) -> Option<Arc<Chunk>> {
        self.cursor.chunk().cloned()
    }

    pub(super) fn stream_batch(
        &mut self,
        max: usize,
        f: &mut impl FnMut(EventRef<'_>),
        keep: &mut impl FnMut(Arc<Chunk>),
    ) -> (usize, bool) {
        if self.phase != Phase::Stream || self.w.is_ended() {
            return (0, true);
        }
        let attach = self.w.attach();
        let (replay_to, live) = match attach {
            Attach::Live(d) => (self.live_to(d), true),
            // A park already taken on: keep replaying up to the head.
            Attach::Parked(at) if self.park_seen == at => (self.engine.ring.head(), false),
            _ => return (0, true),
        };
        let mut n = 0;
        // Read once per call, and only if there is a record to replay.
        let generation = if self.next_pos < replay_to {
            self.generation()
        } else {
            0
        };
        while n < max && self.next_pos < replay_to {
            let pos = self.next_pos;
            let Ok(rec) = self
                .engine
                .ring
                .read_borrowed_keeping(&mut self.cursor, pos, keep)
            else {
                return (n, true);
            };
            if rec.generation != generation || rec.kind == RecordKind::Relist {
                return (n, true);
            }
            self.next_pos = pos + 1;
            let (RecordKind::Change(kind), Some(object)) = (rec.kind, rec.object.as_ref()) else {
                continue;
            };
            if let Some(v) = self.w.spec.filter.verdict(kind, object, rec.prev.as_ref()) {
                self.last_rv = rec.rv;
                let (kind, rv, object) = record_event(rec, v);
                f(EventRef::of(kind, rv, object));
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
            if self.w.take_producer_waiting() {
                self.engine.wake_dispatcher();
            }
            let pos = handle >> 2;
            if handle & 3 == BOOKMARK {
                if let Some(rv) = self.take_bookmark(pos) {
                    f(EventRef::bookmark(rv, false));
                    n += 1;
                }
                continue;
            }
            if pos < self.next_pos {
                // Already served by a replay.
                continue;
            }
            let Ok(rec) = self
                .engine
                .ring
                .read_borrowed_keeping(&mut self.cursor, pos, keep)
            else {
                // The handle is spent: end here; the general step reports it.
                self.lapped();
                return (n, true);
            };
            self.next_pos = pos + 1;
            if rec.object.is_none() {
                continue;
            }
            Self::sample(&mut self.sample_in, &self.engine, rec);
            self.last_rv = rec.rv;
            let (kind, rv, object) = record_event(rec, Verdict::from_bits(handle));
            f(EventRef::of(kind, rv, object));
            n += 1;
        }
        (n, false)
    }

    pub(super) fn step_owned(&mut self) -> Step<WatchItem> {
        match self.step() {
            Step::Item(raw) => Step::Item(raw.into_item()),
            Step::Empty => Step::Empty,
            Step::Done => Step::Done,
        }
    }

    /// A step that runs through [`Busy`] (for the blocking and batch calls).
    pub(super) fn step(&mut self) -> Step<Raw> {
        loop {
            if let Ok(step) = self.step_budgeted() {
                return step;
            }
        }
    }

    pub(super) fn step_budgeted(&mut self) -> Result<Step<Raw>, Busy> {
        loop {
            if self.phase == Phase::Done {
                return Ok(Step::Done);
            }
            let end = self.w.end_state();
            let ended = end.is_some();
            if let Some((reason, drain)) = end {
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
                    if self.w.attach() == Attach::NotYet {
                        Step::Empty
                    } else {
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
        if st.generation != self.generation() {
            drop(st);
            self.w.end(EndReason::Relisted, &self.engine.counters);
            // Ends now, even if a draining end came first: nothing to drain.
            self.drained = true;
            return;
        }
        match self.w.start() {
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
                let scope = filter.key_scope();
                let initial = store
                    .candidates(&scope, filter.fields(), None)
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
            Start::Now => {
                // Whatever the cache holds now, under the lock: the ring's
                // head and the version it stands for.
                self.next_pos = st.ring.head();
                self.last_rv = st.rv;
                self.start_rv = st.rv;
                drop(st);
                self.phase = Phase::Stream;
            }
        }
    }

    fn next_change(&mut self) -> Result<Step<Raw>, Busy> {
        let attach = self.w.attach();
        let (replay_to, live) = match attach {
            Attach::Live(d) => (self.live_to(d), true),
            Attach::Parked(at) => {
                if self.park_seen != at {
                    // What it was fed predates the park, and the replay
                    // below re-derives it.
                    if let Some(o) = &mut self.occasional {
                        o.spilled.clear();
                        o.spilled_at = 0;
                    }
                    self.w.forget_fed(&self.engine.counters.overflow_handles);
                    self.park_seen = at;
                    self.resume_requested = false;
                }
                (self.engine.ring.head(), false)
            }
            Attach::NotYet => unreachable!("streaming before registration"),
        };
        // Replay from the ring: what happened between the start and the
        // dispatcher taking over, or everything while parked. The
        // generation is read once per call, and only if there is a record
        // to replay.
        let generation = if self.next_pos < replay_to {
            self.generation()
        } else {
            0
        };
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
            if rec.generation != generation || rec.kind == RecordKind::Relist {
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
            if self.w.take_producer_waiting() {
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
            Self::sample(&mut self.sample_in, &self.engine, &rec);
            self.last_rv = rec.rv;
            return Ok(Step::Item(Raw::Record(rec, Verdict::from_bits(handle))));
        }
    }

    /// Counts a change popped from the queue: one pop in [`SAMPLE_EVERY`]
    /// is timed for the enqueued -> received histogram. (Fields, not
    /// `self`: the record borrows the cursor.)
    #[inline]
    fn sample(sample_in: &mut u8, engine: &Shared, rec: &Record) {
        *sample_in -= 1;
        if *sample_in == 0 {
            *sample_in = SAMPLE_EVERY;
            engine.record_received(rec);
        }
    }

    /// The generation the dispatcher activated the watch in (the shared
    /// state's, written once before the activation this watch has seen:
    /// not copied into the handle, which it would grow by a word).
    #[inline]
    fn generation(&self) -> u64 {
        self.w.active_generation()
    }

    /// Where a live watch replays up to before it turns to its queue: the
    /// position the dispatcher took over from, or, for a follower, the
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
    /// one, with what the queue still holds before it (`watcher/shared.rs`,
    /// Spilling).
    #[cold]
    fn take_spill(&mut self) -> Option<u64> {
        if !self.w.has_overflow() {
            return None;
        }
        let o = self.occasional.get_or_insert_with(Box::default);
        o.spilled.clear();
        o.spilled_at = 0;
        let held = &self.engine.counters.overflow_handles;
        self.w.take_overflow(&mut o.spilled, held);
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
    /// above the start), or, for a follower, unless the replay has not
    /// reached it: the head it replayed to was read before the writer and
    /// the dispatcher moved past it, and a bookmark now would come before
    /// changes it covers.
    fn take_bookmark(&mut self, pos: u64) -> Option<ResourceVersion> {
        let rv = self.w.take_bookmark_rv();
        let ahead = self.follower && pos > self.next_pos;
        if ahead || pos < self.next_pos || rv < self.last_rv || rv <= self.start_rv {
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
        let reason = if generation != self.generation() {
            EndReason::Relisted
        } else {
            EndReason::Gone(Gone::new(self.last_rv, oldest))
        };
        self.w.end(reason, &self.engine.counters);
        self.drained = true;
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
