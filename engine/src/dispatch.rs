//! The dispatcher: one thread that follows the history ring and fans each
//! change out to the watchers that may see it.
//!
//! # Synchronization
//!
//! The dispatcher is the single producer of every watcher queue and the only
//! writer of the routing table. Per batch of up to [`BATCH`] changes it:
//!
//! 1. loads the routes once (`ArcSwap`, no lock) and, for each change, asks
//!    them for the candidates, evaluates each candidate's filter on the
//!    current and previous object, and pushes a handle (position and
//!    verdict) into its queue: a wait-free push;
//! 2. issues one `SeqCst` fence and wakes only the touched watchers that are
//!    parked (see `watcher.rs`): one wake per watcher per batch at most,
//!    and none for a watcher that is busy draining;
//! 3. publishes its cursor (`dispatched`, `Release`), which lets the writer
//!    reuse ring slots below it.
//!
//! Followers (watchers that admit everything, under the park policy) are
//! pushed nothing: they read the ring up to its head themselves, and the
//! dispatcher only wakes those that sleep, once per batch (`watcher.rs`,
//! Following).
//!
//! Registration happens between batches: a watcher becomes live at the
//! cursor; the watcher replays anything older from the ring by itself, so
//! the dispatcher never does per-watcher catch-up work.
//!
//! ## Full queues
//!
//! Under [`SlowWatchers::Park`] the dispatcher never waits for a watcher. A
//! selective watcher whose queue is full gets the handle in its overflow
//! (up to [`Config::spill_limit`](crate::Config::spill_limit)); one that
//! admits everything, or whose overflow is full, is parked at the change
//! that did not fit and feeds itself from the ring until it has caught up,
//! then asks to be resumed (see `watcher.rs`, Spilling and Parking).
//!
//! Under [`SlowWatchers::TimeBudget`] each change is a round, as in the
//! reference's `dispatchEvent`: a non-blocking push to every candidate
//! first; then, if some queues were full, the round takes the whole time
//! budget and waits for those watchers one after another (parked on the
//! clock, woken by the consumer's pop, polling every [`POLL`] in case that
//! wake raced); once the budget is spent, each watcher still full gets one
//! more non-blocking push and otherwise ends with `TooSlow`; the unused
//! budget goes back.
//!
//! ## Time
//!
//! Every rule reads the engine's [`Clock`](crate::Clock): the tick (jittered
//! by up to a quarter, seeds/004 `wait.Jitter(time.Second, 0.25)`), the
//! bookmark wheel, deadlines, the too-large wait and the budget.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::bookmarks::{Wheel, next_bookmark};
use crate::budget::TimeBudget;
use crate::engine::{Shared, SlowWatchers};
use crate::event::TooLargeResourceVersion;
use crate::index::Routes;
use crate::ring::{ReadCursor, RecordKind};
use crate::stats::Counters;
use crate::sync::{Arc, Ordering, fence};
use crate::watcher::WatcherShared;
use crate::{Clock, EndReason, ResourceVersion};

/// Changes per batch: bounds the latency of registrations and of the
/// dispatcher's cursor publication while amortising the wake-up fence.
const BATCH: u64 = 256;

/// How often a dispatcher waiting for a full queue looks again, in real
/// time, should the consumer's wake have raced with its sleep.
const POLL: Duration = Duration::from_millis(1);

/// The longest the idle dispatcher sleeps in one go (real time); any
/// change, request or clock movement wakes it sooner.
const IDLE: Duration = Duration::from_secs(3600);

/// Changes at positions divisible by this are timed for the applied ->
/// enqueued histogram.
const SAMPLE_MASK: u64 = 7;

pub(crate) fn run(shared: Arc<Shared>) {
    let routes = Routes::new(shared.index_fields.clone());
    let read = shared.ring.cursor();
    let clock = shared.config.clock.clone();
    // The engine's creation, not this thread's start: the first tick, the
    // wheel and the budget count from the moment `Engine::new` returned
    // to its caller, whatever the thread's scheduling.
    let now = shared.epoch;
    let budget = match shared.config.slow_watchers {
        SlowWatchers::Park => None,
        SlowWatchers::TimeBudget {
            refill_per_second,
            cap,
        } => Some(TimeBudget::new(refill_per_second, cap, now)),
    };
    let mut d = Dispatcher {
        routes,
        read,
        cursor: 0,
        generation: 0,
        last_rv: ResourceVersion::ZERO,
        pending: Vec::new(),
        touched: Vec::new(),
        batch_no: 0,
        budget,
        blocked: Vec::new(),
        wheel: Wheel::new(now),
        due: Vec::new(),
        deadlines: BinaryHeap::new(),
        retired_with_deadline: 0,
        routes_dirty: false,
        jitter: Jitter::new(now, &shared),
        next_tick: now,
        clock,
        shared,
    };
    d.next_tick = now + d.jitter.tick(d.shared.config.tick);
    d.run();
}

/// A watcher's deadline in the dispatcher's heap (earliest first).
struct Deadline {
    at: Instant,
    w: Arc<WatcherShared>,
}

impl PartialEq for Deadline {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.w.spec.id) == (other.at, other.w.spec.id)
    }
}

impl Eq for Deadline {}

impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.w.spec.id).cmp(&(other.at, other.w.spec.id))
    }
}

/// The tick's jitter: a small xorshift generator, seeded per engine.
struct Jitter(u64);

impl Jitter {
    fn new(now: Instant, shared: &Shared) -> Jitter {
        // Any seed that differs between engines will do.
        let addr = std::ptr::from_ref(shared) as usize as u64;
        let t = now.elapsed().as_nanos() as u64;
        Jitter((addr ^ t.rotate_left(32)) | 1)
    }

    /// `base` plus a uniform `[0, base / 4)`.
    fn tick(&mut self, base: Duration) -> Duration {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        let quarter = base.as_nanos() / 4;
        let extra = if quarter == 0 {
            0
        } else {
            u128::from(x) % quarter
        };
        base + Duration::from_nanos(u64::try_from(extra).unwrap_or(0))
    }
}

struct Dispatcher {
    shared: Arc<Shared>,
    /// The master copy of the routes; published to `shared.routes`.
    routes: Routes,
    read: ReadCursor,
    /// Positions below this have been fanned out.
    cursor: u64,
    /// The generation of the records up to the cursor (0: not listed yet).
    generation: u64,
    /// Watches waiting for the first list or a future resource version.
    pending: Vec<Arc<WatcherShared>>,
    /// Watchers pushed to in this batch, to wake.
    touched: Vec<Arc<WatcherShared>>,
    batch_no: u64,
    /// The version of the last record dispatched: what a bookmark says
    /// (with the writer's progress, once caught up).
    last_rv: ResourceVersion,
    clock: std::sync::Arc<dyn Clock>,
    /// The time budget (time-budget policy only).
    budget: Option<TimeBudget>,
    /// Watchers whose queue was full for the current change, with their
    /// handle (time-budget policy).
    blocked: Vec<(Arc<WatcherShared>, u64)>,
    /// Bookmark schedule of the live watchers that allow bookmarks, each
    /// with whether it was scheduled for waiting on its initial-events-end
    /// bookmark.
    wheel: Wheel<(Arc<WatcherShared>, bool)>,
    /// Scratch: watchers whose bookmark came due.
    due: Vec<(Arc<WatcherShared>, bool)>,
    /// Watchers with a deadline, earliest first.
    deadlines: BinaryHeap<Reverse<Deadline>>,
    /// Heap entries of watchers that have been unregistered: compacted
    /// when they are the majority.
    retired_with_deadline: usize,
    /// `routes` changed and is not published yet.
    routes_dirty: bool,
    jitter: Jitter,
    next_tick: Instant,
}

impl Dispatcher {
    fn run(&mut self) {
        loop {
            if self.shared.is_stopping() {
                self.shutdown();
                return;
            }
            // Acquire: pairs with the Release in `watch`/`unregister`; the
            // lists themselves are read under the control lock.
            if self.shared.control_pending.swap(false, Ordering::Acquire) {
                self.apply_control();
            }
            let now = self.clock.now();
            if !self.pending.is_empty() {
                self.activate_pending(now);
            }
            self.expire_deadlines(now);
            let head = self.shared.ring.head();
            if now >= self.next_tick {
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
                continue;
            }
            // The park token makes this race-free: a writer's `unpark`
            // after the checks above makes the park return at once; a
            // manual clock unparks us when it moves.
            self.clock.park_until(self.wake_at(), IDLE);
        }
    }

    /// The next time something is due: the tick, a deadline, the end of a
    /// wait for a future resource version.
    fn wake_at(&self) -> Instant {
        let mut at = self.next_tick;
        if let Some(Reverse(d)) = self.deadlines.peek() {
            at = at.min(d.at);
        }
        let timeout = self.shared.config.too_large_timeout;
        for w in &self.pending {
            if w.spec.start.wait_for() > ResourceVersion::ZERO {
                at = at.min(w.spec.created + timeout);
            }
        }
        at
    }

    fn apply_control(&mut self) {
        let (register, unregister, resume) = {
            let mut c = self.shared.lock_control();
            (
                std::mem::take(&mut c.register),
                std::mem::take(&mut c.unregister),
                std::mem::take(&mut c.resume),
            )
        };
        for w in &register {
            if let Some(at) = w.spec.deadline {
                self.deadlines.push(Reverse(Deadline { at, w: w.clone() }));
            }
        }
        self.pending.extend(register);
        for w in resume {
            if !w.is_ended() && w.resume(self.cursor) {
                Counters::add(&self.shared.counters.resumes, 1);
            }
        }
        for w in unregister {
            self.routes_dirty |= self.routes.remove(&w);
            self.pending.retain(|p| p.spec.id != w.spec.id);
            if w.spec.deadline.is_some() {
                self.retired_with_deadline += 1;
            }
        }
        if self.retired_with_deadline > self.deadlines.len() / 2 {
            // Lazy deletion, compacted: ended watchers leave the heap.
            self.deadlines.retain(|Reverse(d)| !d.w.is_ended());
            self.retired_with_deadline = 0;
        }
        self.publish_routes_if_dirty();
        self.update_gauges();
    }

    /// Ends every watch whose deadline has passed.
    fn expire_deadlines(&mut self, now: Instant) {
        while let Some(Reverse(d)) = self.deadlines.peek() {
            if d.at > now {
                break;
            }
            let Some(Reverse(d)) = self.deadlines.pop() else {
                break;
            };
            if d.w.end(EndReason::Deadline, &self.shared.counters) {
                self.retire(&d.w);
            }
        }
        self.publish_routes_if_dirty();
    }

    /// Forgets a watcher the dispatcher has ended (its consumer's
    /// unregistration, later, finds it gone).
    fn retire(&mut self, w: &Arc<WatcherShared>) {
        self.routes_dirty |= self.routes.remove(w);
    }

    fn publish_routes_if_dirty(&mut self) {
        if self.routes_dirty {
            self.routes_dirty = false;
            self.publish_routes();
            self.update_gauges();
        }
    }

    fn activate_pending(&mut self, now: Instant) {
        if self.generation == 0 {
            return; // Not listed yet: everyone waits.
        }
        // Acquire: see `Shared::current_rv`.
        let current = ResourceVersion::new(self.shared.current_rv.load(Ordering::Acquire));
        let timeout = self.shared.config.too_large_timeout;
        let counters = &self.shared.counters;
        let mut activated = false;
        let mut i = 0;
        while i < self.pending.len() {
            let w = &self.pending[i];
            let keep = 'decide: {
                if w.is_ended() {
                    break 'decide false;
                }
                let generation = match w.spec.generation {
                    None => self.generation,
                    Some(g) if g < self.generation => {
                        w.end(EndReason::Relisted, counters);
                        break 'decide false;
                    }
                    // Begun after a re-list the dispatcher has not reached.
                    Some(g) if g > self.generation => break 'decide true,
                    Some(g) => g,
                };
                let need = w.spec.start.wait_for();
                if need > current {
                    if now.saturating_duration_since(w.spec.created) >= timeout {
                        let err = TooLargeResourceVersion::new(need, current);
                        w.end(EndReason::TooLargeResourceVersion(err), counters);
                        break 'decide false;
                    }
                    break 'decide true;
                }
                if w.spec.allow_bookmarks {
                    // Before the activation, which lets the consumer begin
                    // and so leave the waiting state: a watch that asked
                    // for an initial-events-end bookmark is always
                    // scheduled as waiting for it.
                    let frequency = self.shared.config.bookmark_frequency;
                    schedule_bookmark(&mut self.wheel, frequency, now, w.clone());
                }
                w.activate(self.cursor, generation);
                self.routes.insert(w.clone());
                activated = true;
                false
            };
            if keep {
                i += 1;
            } else {
                self.pending.swap_remove(i);
            }
        }
        if activated {
            self.publish_routes();
        }
        self.update_gauges();
    }

    fn publish_routes(&self) {
        self.shared.routes.store(Arc::new(self.routes.clone()));
    }

    fn update_gauges(&self) {
        let c = &self.shared.counters;
        Counters::set(&c.watchers_pending, self.pending.len() as u64);
        Counters::set(&c.watchers_active, self.routes.len() as u64);
    }

    fn dispatch_batch(&mut self, end: u64) {
        self.batch_no += 1;
        let start = self.cursor;
        let mut routes = self.shared.routes.load_full();
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
                    routes = self.shared.routes.load_full();
                }
                RecordKind::Change(kind) => {
                    let Some(object) = rec.object.as_ref() else {
                        continue;
                    };
                    // Relaxed: published by the pushes' Release.
                    rec.enqueued.store(stamp, Ordering::Relaxed);
                    if pos & SAMPLE_MASK == 0 {
                        let lag = now.saturating_duration_since(rec.at);
                        let ns = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX);
                        counters.applied_to_enqueued.record(ns);
                    }
                    let prev = rec.prev.as_ref();
                    let handle_pos = pos << 2;
                    // Followers admit every change and read it themselves.
                    deliveries += routes.followers().len() as u64;
                    routes.for_each_candidate(object, prev, |w| {
                        if !w.is_live() || w.is_ended() {
                            return;
                        }
                        if let Some(v) = w.spec.filter.verdict(kind, object, prev) {
                            deliveries += 1;
                            self.push(w, handle_pos | v as u64);
                        }
                    });
                    if !self.blocked.is_empty() {
                        self.serve_blocked();
                    }
                }
            }
        }
        self.cursor = end;
        self.flush_wakes();
        self.wake_followers();
        self.publish_routes_if_dirty();
        // Release: the writer may reuse slots below `end` only after we are
        // done reading them.
        self.shared.dispatched.store(end, Ordering::Release);
        self.shared.wake_writer_if_waiting();
        Counters::add(&counters.deliveries, deliveries);
        Counters::add(&counters.changes_dispatched, end - start);
    }

    /// Enqueues `handle` for `w`. A full queue parks the watcher, or, under
    /// the time budget, leaves it for [`serve_blocked`](Self::serve_blocked).
    #[inline]
    fn push(&mut self, w: &Arc<WatcherShared>, handle: u64) {
        // `is_spilling` first: while the overflow is active the queue is
        // not ours to push to (order).
        if w.is_spilling() || w.queue.push(handle).is_err() {
            self.push_full(w, handle);
            return;
        }
        self.mark_touched(w);
    }

    #[cold]
    fn push_full(&mut self, w: &Arc<WatcherShared>, handle: u64) {
        if self.budget.is_some() {
            self.blocked.push((w.clone(), handle));
        } else if w.overflow(handle, self.shared.config.spill_limit) {
            Counters::add(&self.shared.counters.spilled, 1);
            self.mark_touched(w);
        } else {
            w.park(handle >> 2);
            Counters::add(&self.shared.counters.parks, 1);
        }
    }

    fn mark_touched(&mut self, w: &Arc<WatcherShared>) {
        // Relaxed: `touched` is the dispatcher's own scratch field.
        if w.touched.load(Ordering::Relaxed) != self.batch_no {
            w.touched.store(self.batch_no, Ordering::Relaxed);
            self.touched.push(w.clone());
        }
    }

    /// The time-budget round for the current change (seeds/004
    /// `dispatchEvent`): wait for each blocked watcher while the budget
    /// lasts; after it, one more non-blocking try, else `TooSlow`.
    fn serve_blocked(&mut self) {
        // Everyone pushed to so far gets to read while we wait.
        self.flush_wakes();
        let Some(budget) = self.budget.as_mut() else {
            return;
        };
        let clock = self.clock.clone();
        let start = clock.now();
        let took = budget.take_available(start);
        let until = start + took;
        let counters = &self.shared.counters;
        Counters::add(&counters.budget_rounds, 1);
        Counters::add(&counters.budget_taken_ns, nanos(took));
        let mut spent = took.is_zero();
        let mut blocked = std::mem::take(&mut self.blocked);
        for (w, handle) in blocked.drain(..) {
            w.wake();
            loop {
                if w.queue.push(handle).is_ok() {
                    self.mark_touched(&w);
                    break;
                }
                if w.is_ended() || self.shared.is_stopping() {
                    break;
                }
                spent = spent || clock.now() >= until;
                if spent {
                    // Its last try was the push above.
                    self.end_too_slow(&w);
                    break;
                }
                w.set_producer_waiting(true);
                // SeqCst: the flag is visible before the re-check reads
                // the consumer's head (pairs with the consumer's pop; a
                // race costs one POLL).
                fence(Ordering::SeqCst);
                if w.queue.push(handle).is_ok() {
                    w.set_producer_waiting(false);
                    self.mark_touched(&w);
                    break;
                }
                clock.park_until(until, POLL);
            }
            w.set_producer_waiting(false);
        }
        self.blocked = blocked;
        let used = clock.now().saturating_duration_since(start);
        let unused = took.saturating_sub(used);
        if let Some(budget) = self.budget.as_mut() {
            budget.return_unused(unused);
        }
        Counters::add(&self.shared.counters.budget_returned_ns, nanos(unused));
        self.flush_wakes();
    }

    /// Ends a watcher that stayed full past the budget: gracefully (after
    /// draining) if it holds an initial-events-end bookmark it has not
    /// delivered yet (seeds/000 `add`, `graceful`).
    fn end_too_slow(&mut self, w: &Arc<WatcherShared>) {
        let counters = &self.shared.counters;
        let ended = if w.initial_end.is_received() {
            w.end_after_drain(EndReason::TooSlow, counters)
        } else {
            w.end(EndReason::TooSlow, counters)
        };
        if ended {
            self.retire(w);
        }
    }

    fn flush_wakes(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        // SeqCst fence: orders the pushes before the `parked` loads; pairs
        // with the consumer's fence in `prepare_park`.
        fence(Ordering::SeqCst);
        for w in self.touched.drain(..) {
            w.wake_if_parked();
        }
        // New stamp: a watcher pushed to again after this flush (in the
        // same batch) must be collected again.
        self.batch_no += 1;
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
    fn relist(&mut self, generation: u64) {
        self.flush_wakes();
        let counters = &self.shared.counters;
        for w in self.routes.iter() {
            w.end(EndReason::Relisted, counters);
        }
        self.routes = Routes::new(self.shared.index_fields.clone());
        self.publish_routes();
        self.generation = generation;
        self.update_gauges();
    }

    /// About once a second: bookmarks that came due, idle shrinking.
    fn tick(&mut self, now: Instant) {
        self.next_tick = now + self.jitter.tick(self.shared.config.tick);
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
                self.mark_touched(&w);
            }
            schedule_bookmark(
                &mut self.wheel,
                self.shared.config.bookmark_frequency,
                now,
                w,
            );
        }
        self.due = due;
        self.flush_wakes();
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

    fn shutdown(&mut self) {
        let (register, unregister) = {
            let mut c = self.shared.lock_control();
            c.closed = true;
            (
                std::mem::take(&mut c.register),
                std::mem::take(&mut c.unregister),
            )
        };
        drop(unregister);
        let counters = &self.shared.counters;
        for w in self.routes.iter().chain(&self.pending).chain(&register) {
            w.end(EndReason::EngineStopped, counters);
        }
        self.pending.clear();
        self.deadlines.clear();
        self.wheel = Wheel::new(self.clock.now());
        self.routes = Routes::new(self.shared.index_fields.clone());
        self.publish_routes();
        self.update_gauges();
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
    let due = next_bookmark(now, frequency, w.spec.deadline, waiting);
    wheel.insert(due, (w, waiting));
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
