//! The dispatcher's thread and its loop (see the module above for what
//! one batch does).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::bookmarks::{Wheel, next_bookmark};
use crate::clock::{Clock, Jitter, earliest, later};
use crate::event::{EndReason, TooLargeResourceVersion};
use crate::index::Routes;
use crate::policy::{self, Full, SlowWatcherPolicy};
use crate::ring::{ReadCursor, RecordKind};
use crate::rv::ResourceVersion;
use crate::shared::{Request, Shared};
use crate::stats::Counters;
use crate::sync::{Arc, Mutex, MutexGuard, Ordering, fence};
use crate::wakes::Wakes;

use super::held::{Deadline, DeadlineKind, RvWaiter, place, retain_heap, shrink};

mod ending;
use crate::watcher::WatcherShared;

/// Changes per batch: bounds the latency of registrations and of the
/// dispatcher's cursor publication while amortising the wake-up fence.
const BATCH: u64 = 256;

/// Control requests taken up per loop, between batches: a flood of
/// registrations and removals (a client churning watches) delays the
/// changes by at most this much work per batch, never by the whole flood.
const CONTROL_BUDGET: usize = 1024;

/// Requests' room the backlog keeps once empty (1 KiB): enough for the
/// trickle of a steady state, where a burst of registrations would
/// otherwise leave up to [`CONTROL_BUDGET`] entries' room (16 KiB) held
/// for good. Giving it back costs a burst one allocation.
const BACKLOG_KEPT: usize = 64;

/// The longest the idle dispatcher sleeps in one go (real time); any
/// change, request or clock movement wakes it sooner.
const IDLE: Duration = Duration::from_secs(3600);

/// Changes at positions divisible by this are timed for the applied ->
/// enqueued histogram.
const SAMPLE_MASK: u64 = 7;

/// The dispatcher's state, shared by its thread and (with
/// [`Config::inline_dispatch`](crate::Config::inline_dispatch)) the
/// writer, which fans its own changes out when it finds the state free
/// ([`Slot::dispatch_inline`]). The thread holds the lock for one turn of
/// its loop and parks without it; it empties the slot when it exits.
#[derive(Clone)]
pub(crate) struct Slot(Arc<Mutex<Option<Dispatcher>>>);

impl Default for Slot {
    fn default() -> Slot {
        Slot(Arc::new(Mutex::new(None)))
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Option<Dispatcher>> {
        // A panic in a turn is caught and ends the engine (see `run`);
        // the state is only used to shut down after it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer, after appending a change: fans out what the ring holds
    /// beyond the dispatcher's cursor (one batch) on the calling thread, if
    /// the dispatcher's state is free. Returns whether the dispatcher
    /// thread has nothing left to do for it (false: wake it, as without
    /// inline dispatch). Never waits: a thread in its turn keeps the
    /// change, and its wake.
    pub(crate) fn dispatch_inline(&self) -> bool {
        let Ok(mut guard) = self.0.try_lock() else {
            return false;
        };
        let Some(d) = guard.as_mut() else {
            return false;
        };
        if d.shared.is_stopping() {
            return false;
        }
        INLINE.with(|f| f.set(true));
        let done = catch_unwind(AssertUnwindSafe(|| d.inline()));
        INLINE.with(|f| f.set(false));
        match done {
            Ok(done) => done,
            Err(panic) => {
                // As a panic in the thread: the engine fails and stops;
                // the thread ends every watch with `EngineFailed`.
                let _ = d.shared.failure.set(panic_message(panic.as_ref()));
                d.shared.request_stop();
                false
            }
        }
    }
}

std::thread_local! {
    /// Set while this thread dispatches inline: a waker that stops the
    /// engine from here must not wait for the dispatcher thread, which may
    /// be waiting for the state this thread holds.
    static INLINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is dispatching inline (a waker run by
/// [`Slot::dispatch_inline`]).
pub(crate) fn in_inline_dispatch() -> bool {
    INLINE.with(std::cell::Cell::get)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the dispatcher panicked".to_owned())
}

/// What one turn of the dispatcher's loop leaves to do.
enum Turn {
    /// Another turn at once.
    Again,
    /// Park until then (or a wake).
    Park(Instant),
    /// The engine stopped: every watch has its end.
    Exit,
}

/// The dispatcher's thread. A panic inside it (a bug, or user code it
/// calls, such as a [`Clock`]) is caught: the engine records it
/// ([`Engine::failure`](crate::Engine::failure)), stops, and ends every
/// watch with [`EndReason::EngineFailed`], so no receiver, writer or
/// `stop` is left waiting for a thread that is gone.
pub(crate) fn run(shared: Arc<Shared>, slot: Option<Slot>) {
    let clock = shared.config.clock.clone();
    // Without inline dispatch no one else ever takes the state: the thread
    // owns it and takes no lock per turn.
    let mut own = None;
    match &slot {
        Some(slot) => *slot.lock() = Some(Dispatcher::new(shared.clone())),
        None => own = Some(Dispatcher::new(shared.clone())),
    }
    let turns = catch_unwind(AssertUnwindSafe(|| {
        loop {
            // The lock is held for one turn, never while parked.
            let turn = match &slot {
                Some(slot) => slot.lock().as_mut().map_or(Turn::Exit, Dispatcher::turn),
                None => own.as_mut().map_or(Turn::Exit, Dispatcher::turn),
            };
            match turn {
                Turn::Again => {}
                // The park token makes this race-free: a writer's
                // `unpark` after the turn's checks (or while the writer
                // held the state) makes the park return at once; a manual
                // clock unparks us when it moves.
                Turn::Park(at) => clock.park_until(at, IDLE),
                Turn::Exit => break,
            }
        }
    }));
    let mut guard = slot.as_ref().map(Slot::lock);
    let state = match &mut guard {
        Some(guard) => &mut **guard,
        None => &mut own,
    };
    if let Err(panic) = turns {
        let _ = shared.failure.set(panic_message(panic.as_ref()));
        shared.request_stop();
        // Ending watches calls no user code (no clock); should it fail all
        // the same, the engine is already stopped and the control channel
        // closed first, so nothing new waits on this thread.
        if let Some(d) = state.as_mut() {
            let _ = catch_unwind(AssertUnwindSafe(|| d.shutdown(EndReason::EngineFailed)));
        }
    }
    // Gone with the thread: a writer finds nothing to dispatch.
    *state = None;
}

struct Dispatcher {
    shared: Arc<Shared>,
    /// The master copy of the routes, changed in place by registrations,
    /// removals and sweeps.
    routes: Routes,
    /// The routes a batch fans out by: a copy of `routes` taken when they
    /// last changed (`publish_routes`), so the batch walks them while the
    /// policy and the wakes borrow the dispatcher mutably.
    published: Arc<Routes>,
    read: ReadCursor,
    /// Positions below this have been fanned out.
    cursor: u64,
    /// The generation of the records up to the cursor (0: not listed yet).
    generation: u64,
    /// Requests taken from `shared.control`, not yet applied (at most
    /// [`CONTROL_BUDGET`] are applied per loop).
    backlog: VecDeque<Request>,
    /// Watches waiting for the first list, or for a re-list the dispatcher
    /// has not reached.
    waiting_list: Vec<Arc<WatcherShared>>,
    /// Watches waiting for a future resource version, lowest first.
    waiting_rv: BinaryHeap<Reverse<RvWaiter>>,
    /// A re-list was dispatched: every waiting watch is looked at again.
    readmit: bool,
    /// Watches waiting (`WAIT_LIST`, `WAIT_RV`), routed (`ROUTED`), and
    /// retired but still held somewhere (`RETIRED`, until the next sweep).
    waiting: usize,
    routed: usize,
    retired: usize,
    /// Of `waiting`, those waiting for a version (`WAIT_RV`).
    waiting_rv_n: usize,
    /// Watchers pushed to in this batch, to wake.
    wakes: Wakes,
    /// The version of the last record dispatched: what a bookmark says
    /// (with the writer's progress, once caught up).
    last_rv: ResourceVersion,
    clock: std::sync::Arc<dyn Clock>,
    /// What a full queue gets (`policy/`).
    policy: Box<dyn SlowWatcherPolicy>,
    /// The policy kept handles for the current change
    /// ([`Full::Kept`]): serve them once its candidates are done.
    kept: bool,
    /// Scratch: watchers the policy ended, to forget.
    ended: Vec<Arc<WatcherShared>>,
    /// Bookmark schedule of the live watchers that allow bookmarks, each
    /// with whether it was scheduled for waiting on its initial-events-end
    /// bookmark.
    wheel: Wheel<(Arc<WatcherShared>, bool)>,
    /// Scratch: watchers whose bookmark came due.
    due: Vec<(Arc<WatcherShared>, bool)>,
    /// Deadlines and too-large waits, earliest first.
    deadlines: BinaryHeap<Reverse<Deadline>>,
    /// `routes` changed and is not published yet.
    routes_dirty: bool,
    jitter: Jitter,
    /// The next tick; `None` with a tick past the clock's range.
    next_tick: Option<Instant>,
}

impl Dispatcher {
    fn new(shared: Arc<Shared>) -> Dispatcher {
        // The engine's creation, not this thread's start: the first tick,
        // the wheel and the budget count from the moment `Engine::new`
        // returned to its caller, whatever the thread's scheduling.
        let now = shared.epoch;
        let policy = policy::new(&shared.config, now);
        // Any seed that differs between engines will do.
        let mut jitter = Jitter::new(now, Arc::as_ptr(&shared) as usize as u64);
        let next_tick = later(now, jitter.tick(shared.config.tick));
        Dispatcher {
            routes: Routes::new(shared.index_fields.clone()),
            published: Arc::new(Routes::new(shared.index_fields.clone())),
            read: shared.ring.cursor(),
            cursor: 0,
            generation: 0,
            last_rv: ResourceVersion::ZERO,
            backlog: VecDeque::new(),
            waiting_list: Vec::new(),
            waiting_rv: BinaryHeap::new(),
            readmit: false,
            waiting: 0,
            routed: 0,
            retired: 0,
            waiting_rv_n: 0,
            wakes: Wakes::default(),
            policy,
            kept: false,
            ended: Vec::new(),
            wheel: Wheel::new(now),
            due: Vec::new(),
            deadlines: BinaryHeap::new(),
            routes_dirty: false,
            jitter,
            next_tick,
            clock: shared.config.clock.clone(),
            shared,
        }
    }

    /// One turn of the loop: control requests, waits, a batch of changes.
    fn turn(&mut self) -> Turn {
        if self.shared.is_stopping() {
            // A panic in an inline dispatch failed the engine.
            let reason = if self.shared.failure.get().is_some() {
                EndReason::EngineFailed
            } else {
                EndReason::EngineStopped
            };
            self.shutdown(reason);
            return Turn::Exit;
        }
        // Acquire: pairs with the Release in `send_control`; the list
        // itself is read under the control lock.
        if self.shared.control_pending.swap(false, Ordering::Acquire) {
            let taken = std::mem::take(&mut self.shared.lock_control().requests);
            self.backlog.extend(taken);
        }
        let now = self.clock.now();
        if !self.backlog.is_empty() {
            self.apply_control(now);
        }
        self.admit_waiters(now);
        self.expire_deadlines(now);
        self.sweep_if_due();
        self.publish_routes_if_dirty();
        self.update_gauges();
        let head = self.shared.ring.head();
        if self.next_tick.is_some_and(|t| now >= t) {
            // Catch up first, so a bookmark carries what the watchers
            // (followers read the ring themselves) have already been
            // served, not a version behind it.
            while self.cursor < head {
                self.dispatch_batch(head.min(self.cursor + BATCH));
            }
            self.tick(now);
        }
        if self.cursor < head {
            self.dispatch_batch(head.min(self.cursor + BATCH));
            return Turn::Again;
        }
        if !self.backlog.is_empty() || self.readmit {
            return Turn::Again;
        }
        // Looked at once more right before the park: a wait for a full
        // queue in the tick's catch-up above (time-budget policy) may
        // have consumed the park token of a stop, a change or a
        // request that came after the checks at the top.
        if self.shared.is_stopping()
            || self.cursor < self.shared.ring.head()
            || self.shared.control_pending.load(Ordering::Acquire)
        {
            return Turn::Again;
        }
        Turn::Park(self.wake_at().or_else(|| later(now, IDLE)).unwrap_or(now))
    }

    /// The writer's inline dispatch ([`Slot::dispatch_inline`]): one batch
    /// from the cursor, then whether the thread has nothing left to do
    /// that the write could have caused (more changes, a re-list's
    /// re-admissions, a watch waiting for the version just reached).
    fn inline(&mut self) -> bool {
        let head = self.shared.ring.head();
        if self.cursor < head {
            self.dispatch_batch(head.min(self.cursor + BATCH));
        }
        let current = self.reached();
        self.cursor >= self.shared.ring.head()
            && !self.readmit
            && self.backlog.is_empty()
            && self
                .waiting_rv
                .peek()
                .is_none_or(|Reverse(r)| r.need > current)
    }

    /// The next time something is due: the tick, a deadline, the end of a
    /// wait for a future resource version. `None`: nothing ever is.
    fn wake_at(&self) -> Option<Instant> {
        let deadline = self.deadlines.peek().map(|Reverse(d)| d.at);
        earliest(self.next_tick, deadline)
    }

    /// Applies up to [`CONTROL_BUDGET`] requests, each in O(1) (amortised;
    /// a registration's route may copy a bucket: see `index.rs`).
    fn apply_control(&mut self, now: Instant) {
        let current = self.reached();
        let n = self.backlog.len().min(CONTROL_BUDGET);
        for _ in 0..n {
            let Some(request) = self.backlog.pop_front() else {
                break;
            };
            match request {
                Request::Register(w) => {
                    Counters::sub(&self.shared.counters.registrations_queued, 1);
                    if w.is_ended() {
                        // Ended before it was taken up: nothing to hold.
                        w.place.store(place::RETIRED, Ordering::Relaxed);
                        continue;
                    }
                    if let Some(at) = w.spec.deadline() {
                        let kind = DeadlineKind::Watch;
                        let w = w.clone();
                        self.deadlines.push(Reverse(Deadline { at, kind, w }));
                    }
                    self.admit(w, now, current);
                }
                Request::Unregister(w) => self.retire(&w),
                Request::Resume(w) => {
                    if !w.is_ended() && w.resume(self.cursor) {
                        Counters::add(&self.shared.counters.resumes, 1);
                    }
                }
                Request::Drain => self.drain(now),
            }
        }
        if self.backlog.is_empty() && self.backlog.capacity() > BACKLOG_KEPT {
            // A flood is over: give its memory back.
            self.backlog = VecDeque::new();
        }
    }

    /// Moves `w` to `to`, keeping the counts.
    fn move_to(&mut self, w: &WatcherShared, to: u8) {
        // Relaxed: only this thread reads or writes `place`.
        let from = w.place.swap(to, Ordering::Relaxed);
        for (p, delta) in [(from, usize::wrapping_neg(1)), (to, 1)] {
            if p == place::WAIT_RV {
                self.waiting_rv_n = self.waiting_rv_n.wrapping_add(delta);
            }
            let count = match p {
                place::WAIT_LIST | place::WAIT_RV => &mut self.waiting,
                place::ROUTED => &mut self.routed,
                place::RETIRED => &mut self.retired,
                _ => continue,
            };
            *count = count.wrapping_add(delta);
        }
    }

    /// Forgets a watcher that has ended, in O(1): it is counted as retired
    /// and skipped wherever it is still held, until the next sweep.
    /// Idempotent.
    fn retire(&mut self, w: &WatcherShared) {
        // Relaxed: only this thread reads or writes `place`.
        match w.place.load(Ordering::Relaxed) {
            place::UNSEEN => w.place.store(place::RETIRED, Ordering::Relaxed),
            place::RETIRED => {}
            _ => {
                self.move_to(w, place::RETIRED);
                self.policy.forget(w, &self.shared);
            }
        }
    }

    /// Decides what a registered (or re-examined) watch waits for, or
    /// activates it.
    fn admit(&mut self, w: Arc<WatcherShared>, now: Instant, current: ResourceVersion) {
        let shared = self.shared.clone();
        let counters = &shared.counters;
        if w.is_ended() {
            self.retire(&w);
            return;
        }
        let generation = match w.begun_generation() {
            // Not listed yet, or begun after a re-list the dispatcher has
            // not reached: waits for it.
            None if self.generation == 0 => return self.wait_for_list(w),
            Some(g) if g > self.generation => return self.wait_for_list(w),
            None => self.generation,
            Some(g) if g < self.generation => {
                w.end(EndReason::Relisted, counters);
                self.retire(&w);
                return;
            }
            Some(g) => g,
        };
        let need = w.start().wait_for();
        if need > current {
            let too_large_at = later(w.spec.created, self.shared.config.too_large_timeout);
            if too_large_at.is_some_and(|at| now >= at) {
                let err = TooLargeResourceVersion::new(need, current);
                w.end(EndReason::TooLargeResourceVersion(err), counters);
                self.retire(&w);
                return;
            }
            self.move_to(&w, place::WAIT_RV);
            if let Some(at) = too_large_at {
                let (kind, w) = (DeadlineKind::TooLarge, w.clone());
                self.deadlines.push(Reverse(Deadline { at, kind, w }));
            }
            self.waiting_rv.push(Reverse(RvWaiter { need, w }));
            return;
        }
        if w.allow_bookmarks() {
            // Before the activation, which lets the consumer begin and so
            // leave the waiting state: a watch that asked for an
            // initial-events-end bookmark is always scheduled as waiting
            // for it.
            let frequency = self.shared.config.bookmark_frequency;
            schedule_bookmark(&mut self.wheel, frequency, now, w.clone());
        }
        // Live from the writer's head, not the cursor: whatever lies between
        // (a dispatcher that lags) was published before the version this
        // watch was admitted against (`reached`), so none of it is newer
        // than a start from the current version, and the consumer replays
        // what a start from an older one needs itself. Queued, it would
        // fill the queue of a reader that pauses, which the time budget
        // then ends `TooSlow` (seeds/000 `process`: only events newer than
        // the watcher's version are sent).
        let live_from = self.shared.ring.head();
        debug_assert!(live_from >= self.cursor);
        w.activate(live_from, generation);
        self.move_to(&w, place::ROUTED);
        self.routes.insert(w);
        self.routes_dirty = true;
    }

    fn wait_for_list(&mut self, w: Arc<WatcherShared>) {
        self.move_to(&w, place::WAIT_LIST);
        self.waiting_list.push(w);
    }

    /// The version the cache has reached, as waiting watches see it: the
    /// writer's (changes and progress), or the last record dispatched if
    /// that is newer. The writer publishes a record before it stores its
    /// version, so the dispatcher can be a record ahead, and a watch from
    /// before the first list must not find the list dispatched but its
    /// version "not reached".
    fn reached(&self) -> ResourceVersion {
        // Acquire: see `Shared::current_rv`.
        let current = ResourceVersion::new(self.shared.current_rv.load(Ordering::Acquire));
        current.max(self.last_rv)
    }

    /// Activates the watches whose version the writer has reached, and
    /// after a re-list looks at every waiting watch again: O(log n) per
    /// watch that moves, nothing for those that still wait.
    fn admit_waiters(&mut self, now: Instant) {
        let current = self.reached();
        if std::mem::take(&mut self.readmit) {
            let listed = std::mem::take(&mut self.waiting_list);
            let by_rv = std::mem::take(&mut self.waiting_rv);
            let again = listed
                .into_iter()
                .filter(|w| w.place.load(Ordering::Relaxed) == place::WAIT_LIST)
                .chain(
                    by_rv
                        .into_iter()
                        .map(|Reverse(r)| r.w)
                        .filter(|w| w.place.load(Ordering::Relaxed) == place::WAIT_RV),
                );
            for w in again.collect::<Vec<_>>() {
                self.admit(w, now, current);
            }
        } else {
            while self
                .waiting_rv
                .peek()
                .is_some_and(|Reverse(r)| r.need <= current)
            {
                let Some(Reverse(r)) = self.waiting_rv.pop() else {
                    break;
                };
                // Relaxed: only this thread reads or writes `place`.
                if r.w.place.load(Ordering::Relaxed) == place::WAIT_RV {
                    self.admit(r.w, now, current);
                }
            }
        }
    }

    /// Ends every watch whose deadline has passed, and every wait for a
    /// future version that has timed out.
    fn expire_deadlines(&mut self, now: Instant) {
        let shared = self.shared.clone();
        let counters = &shared.counters;
        while self.deadlines.peek().is_some_and(|Reverse(d)| d.at <= now) {
            let Some(Reverse(d)) = self.deadlines.pop() else {
                break;
            };
            // Relaxed: only this thread reads or writes `place`.
            let timed_out = |w: &WatcherShared| {
                let too_large_at = later(w.spec.created, shared.config.too_large_timeout);
                too_large_at.is_some_and(|at| at <= now)
            };
            match (d.kind, d.w.place.load(Ordering::Relaxed)) {
                (_, place::RETIRED) => {}
                // A wait for a version that has timed out too ends with
                // TooLargeResourceVersion, whichever came first in the
                // same pass (the reference waits before it registers the
                // watcher, so its deadline cannot cut the wait short).
                (DeadlineKind::Watch, p) if p != place::WAIT_RV || !timed_out(&d.w) => {
                    d.w.end(EndReason::Deadline, counters);
                    self.retire(&d.w);
                }
                (_, place::WAIT_RV) => {
                    let current = self.reached();
                    let err = TooLargeResourceVersion::new(d.w.start().wait_for(), current);
                    d.w.end(EndReason::TooLargeResourceVersion(err), counters);
                    self.retire(&d.w);
                }
                // Activated (or waiting for a list) meanwhile.
                _ => {}
            }
        }
    }

    /// Drops every entry of a retired watcher once they are at least half
    /// of what the dispatcher holds: a sweep costs O(held), and at least
    /// held / 2 retirements paid for it, so a removal costs O(1) amortised
    /// and dropped watches never hold more memory than live ones.
    fn sweep_if_due(&mut self) {
        if self.retired == 0 || self.retired < self.waiting + self.routed {
            return;
        }
        let kept = |w: &WatcherShared| w.place.load(Ordering::Relaxed) != place::RETIRED;
        if self.routes.retain(|w| kept(w)) {
            self.routes_dirty = true;
        }
        self.waiting_list.retain(|w| kept(w));
        shrink(&mut self.waiting_list);
        retain_heap(&mut self.waiting_rv, |r| kept(&r.w));
        retain_heap(&mut self.deadlines, |d| kept(&d.w));
        self.wheel.retain(|(w, _)| kept(w));
        self.retired = 0;
    }

    fn publish_routes_if_dirty(&mut self) {
        if self.routes_dirty {
            self.routes_dirty = false;
            self.publish_routes();
        }
    }

    fn publish_routes(&mut self) {
        self.routes.trim();
        self.published = Arc::new(self.routes.clone());
    }

    fn update_gauges(&self) {
        let c = &self.shared.counters;
        // Registrations still in the backlog are counted by
        // `registrations_queued` until `apply_control` takes them up.
        Counters::set(&c.watchers_pending, self.waiting as u64);
        Counters::set(&c.watchers_active, self.routed as u64);
        Counters::set(&c.watchers_retiring, self.retired as u64);
        // Relaxed: a demand signal (see `Shared::wants_progress`).
        let waiting_rv = self.waiting_rv_n as u64;
        self.shared
            .watch_waiters
            .store(waiting_rv, Ordering::Relaxed);
    }

    fn dispatch_batch(&mut self, end: u64) {
        // What the batch routes by is what the dispatcher holds: a drain or
        // a tick dispatches right after control requests and admissions.
        self.publish_routes_if_dirty();
        self.wakes.begin_batch();
        let start = self.cursor;
        let mut routes = self.published.clone();
        let mut deliveries = 0u64;
        let now = self.clock.now();
        let stamp = self.shared.stamp(now);
        let shared = self.shared.clone();
        let counters = &shared.counters;
        for pos in self.cursor..end {
            let Ok(rec) = self.shared.ring.read(&mut self.read, pos) else {
                // The writer never reuses an undispatched slot (it is gated
                // on `dispatched`), so this cannot happen.
                debug_assert!(false, "undispatched record {pos} was overwritten");
                continue;
            };
            self.last_rv = rec.rv;
            match rec.kind {
                RecordKind::Relist => {
                    self.cursor = pos + 1;
                    self.relist(rec.generation);
                    routes = self.published.clone();
                }
                RecordKind::Change(kind) => {
                    let Some(object) = rec.object.as_ref() else {
                        continue;
                    };
                    // Relaxed: published by the pushes' Release.
                    rec.enqueued.store(stamp, Ordering::Relaxed);
                    if pos & SAMPLE_MASK == 0 {
                        // Both count from the engine's epoch (the stamp
                        // one past it).
                        let ns = (stamp - 1).saturating_sub(rec.at);
                        counters.applied_to_enqueued.record(ns);
                    }
                    let prev = rec.prev.as_ref();
                    let handle_pos = pos << 2;
                    // Followers admit every change and read it themselves.
                    deliveries += routes.followers().len() as u64;
                    routes.for_each_candidate(object, prev, |w, routed| {
                        if !w.takes(pos) || w.is_ended() {
                            return;
                        }
                        if let Some(v) = w.spec.filter.verdict_routed(kind, object, prev, routed) {
                            deliveries += 1;
                            self.push(w, handle_pos | v as u64);
                        }
                    });
                    if self.kept {
                        self.serve_kept();
                    }
                }
            }
        }
        self.cursor = end;
        self.wakes.flush();
        self.wake_followers();
        self.publish_routes_if_dirty();
        // Release: the writer may reuse slots below `end` only after we are
        // done reading them.
        self.shared.dispatched.store(end, Ordering::Release);
        self.shared.wake_writer_if_waiting();
        Counters::add(&counters.deliveries, deliveries);
        Counters::add(&counters.changes_dispatched, end - start);
    }

    /// Enqueues `handle` for `w`; a full queue is the policy's.
    #[inline]
    fn push(&mut self, w: &Arc<WatcherShared>, handle: u64) {
        // `is_spilling` first: while the overflow is active the queue is
        // not ours to push to (order).
        if w.is_spilling() || w.queue.push(handle).is_err() {
            self.push_full(w, handle);
            return;
        }
        self.wakes.mark(w);
    }

    #[cold]
    fn push_full(&mut self, w: &Arc<WatcherShared>, handle: u64) {
        match self.policy.full(w, handle, &self.shared) {
            Full::Delivered => self.wakes.mark(w),
            Full::Parked => {}
            Full::Kept => self.kept = true,
        }
    }

    /// The policy serves what it kept for this change (the time budget's
    /// round); the watchers it ended are forgotten, and the gauges say so
    /// at once: this may run in a tick's catch-up, or the writer's inline
    /// batch, after which the dispatcher may sleep until its next tick.
    #[cold]
    fn serve_kept(&mut self) {
        self.kept = false;
        let mut ended = std::mem::take(&mut self.ended);
        self.policy
            .serve_kept(&self.shared, &mut self.wakes, &mut ended);
        if !ended.is_empty() {
            for w in ended.drain(..) {
                self.retire(&w);
            }
            self.update_gauges();
        }
        self.ended = ended;
    }

    /// Wakes the followers that sleep: they read the records of this batch
    /// from the ring themselves.
    fn wake_followers(&self) {
        let followers = self.routes.followers();
        if followers.is_empty() {
            return;
        }
        // SeqCst fence: orders our read of the head that covered this
        // batch (its records published) before the `parked` loads; pairs
        // with the consumer's fence in `prepare_park`, which re-reads the
        // head after storing `parked`.
        fence(Ordering::SeqCst);
        for w in followers {
            w.wake_if_parked();
        }
    }

    /// A re-list marker: every live watcher ends with `Relisted`.
    /// Every waiting watch is looked at again at the next loop: those of
    /// the new generation start, those of an older one end `Relisted`.
    fn relist(&mut self, generation: u64) {
        self.wakes.flush();
        let shared = self.shared.clone();
        let old = std::mem::replace(&mut self.routes, Routes::new(shared.index_fields.clone()));
        for w in old.iter() {
            w.end(EndReason::Relisted, &shared.counters);
            self.retire(w);
        }
        self.publish_routes();
        self.generation = generation;
        self.readmit = true;
        self.update_gauges();
    }

    /// About once a second: bookmarks that came due, idle shrinking.
    fn tick(&mut self, now: Instant) {
        self.next_tick = later(now, self.jitter.tick(self.shared.config.tick));
        self.send_bookmarks(now);
        if let Ok(mut st) = self.shared.state.try_lock() {
            if st.ring.shrink_if_idle(now, self.cursor).is_some() {
                let c = &self.shared.counters;
                Counters::add(&c.ring_shrinks, 1);
                Counters::set(&c.ring_capacity, st.ring.capacity() as u64);
                Counters::set(&c.ring_len, st.ring.len() as u64);
            }
        }
        Counters::add(&self.shared.counters.ticks, 1);
    }

    /// Offers a bookmark to every watcher whose time has come (never
    /// blocking: a full queue or one still holding a bookmark skips this
    /// one) and schedules its next (seeds/004 `dispatchEvents`,
    /// `startDispatchingBookmarkEventsLocked`, `finishDispatching`).
    fn send_bookmarks(&mut self, now: Instant) {
        if self.generation == 0 {
            // Nothing listed yet: no bookmark (and no watcher is live).
            return;
        }
        let rv = self.bookmark_rv();
        let mut due = std::mem::take(&mut self.due);
        self.wheel.pop_expired(now, &mut due);
        for (w, for_initial_end) in due.drain(..) {
            if w.is_ended() {
                continue;
            }
            // Due at this tick only to deliver the initial-events-end
            // bookmark, which the watch has meanwhile taken from its own
            // snapshot: nothing to send until its regular time.
            let stale = for_initial_end && !w.initial_end.is_waiting();
            if !stale && w.offer_bookmark(self.cursor, rv) {
                self.wakes.mark(&w);
            }
            schedule_bookmark(
                &mut self.wheel,
                self.shared.config.bookmark_frequency,
                now,
                w,
            );
        }
        self.due = due;
        self.wakes.flush();
    }

    /// The version a bookmark carries now: the last record dispatched, or
    /// the writer's version (progress included) when everything it wrote
    /// has been dispatched.
    fn bookmark_rv(&self) -> ResourceVersion {
        // Acquire: pairs with the writer's Release store, which follows its
        // append of the change at that version; the head load below then
        // sees that append.
        let current = ResourceVersion::new(self.shared.current_rv.load(Ordering::Acquire));
        if self.cursor == self.shared.ring.head() {
            self.last_rv.max(current)
        } else {
            self.last_rv
        }
    }
}

/// Puts a watcher on the wheel at its next bookmark time (none once its
/// deadline is less than 2 s away).
fn schedule_bookmark(
    wheel: &mut Wheel<(Arc<WatcherShared>, bool)>,
    frequency: Duration,
    now: Instant,
    w: Arc<WatcherShared>,
) {
    let waiting = w.initial_end.is_waiting();
    let due = next_bookmark(now, frequency, w.spec.deadline(), waiting);
    wheel.insert(due, (w, waiting));
}
