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
//! Registration happens between batches: a watcher becomes live at the
//! cursor; the watcher replays anything older from the ring by itself, so
//! the dispatcher never does per-watcher catch-up work.
//!
//! ## Full queues
//!
//! The dispatcher never waits for a watcher. A watcher whose queue is full
//! is parked at the change that did not fit and feeds itself from the ring
//! until it has caught up, then asks to be resumed (see `watcher.rs`,
//! Parking). The reference's alternative, a shared time budget after which
//! still-full watchers end with `TooSlow`, is a policy that plugs in at
//! [`Dispatcher::push`].

use std::time::{Duration, Instant};

use crate::engine::Shared;
use crate::event::TooLargeResourceVersion;
use crate::index::Routes;
use crate::ring::{ReadCursor, RecordKind};
use crate::stats::Counters;
use crate::sync::{Arc, Ordering, fence, park_timeout};
use crate::watcher::WatcherShared;
use crate::{EndReason, ResourceVersion};

/// Changes per batch: bounds the latency of registrations and of the
/// dispatcher's cursor publication while amortising the wake-up fence.
const BATCH: u64 = 256;

pub(crate) fn run(shared: Arc<Shared>) {
    let routes = Routes::new(shared.index_fields.clone());
    let read = shared.ring.cursor();
    let mut d = Dispatcher {
        routes,
        read,
        cursor: 0,
        generation: 0,
        pending: Vec::new(),
        touched: Vec::new(),
        batch_no: 0,
        last_tick: Instant::now(),
        shared,
    };
    d.run();
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
    last_tick: Instant,
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
            if !self.pending.is_empty() {
                self.activate_pending();
            }
            let head = self.shared.ring.head();
            if self.cursor < head {
                self.dispatch_batch(head.min(self.cursor + BATCH));
                continue;
            }
            let now = Instant::now();
            if now.duration_since(self.last_tick) >= self.shared.config.tick {
                self.maintain(now);
            }
            // The park token makes this race-free: a writer's `unpark` after
            // the checks above makes `park_timeout` return at once.
            park_timeout(self.sleep_for(now));
        }
    }

    fn sleep_for(&self, now: Instant) -> Duration {
        let mut d = self.shared.config.tick;
        let timeout = self.shared.config.too_large_timeout;
        for w in &self.pending {
            if w.start.wait_for() > ResourceVersion::ZERO {
                let due = w.created + timeout;
                d = d.min(due.saturating_duration_since(now));
            }
        }
        d.max(Duration::from_micros(100))
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
        self.pending.extend(register);
        for w in resume {
            if !w.is_ended() && w.resume(self.cursor) {
                Counters::add(&self.shared.counters.resumes, 1);
            }
        }
        let mut changed = false;
        for w in unregister {
            changed |= self.routes.remove(&w);
            self.pending.retain(|p| p.id != w.id);
        }
        if changed {
            self.publish_routes();
        }
        self.update_gauges();
    }

    fn activate_pending(&mut self) {
        if self.generation == 0 {
            return; // Not listed yet: everyone waits.
        }
        let now = Instant::now();
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
                let generation = match w.generation {
                    None => self.generation,
                    Some(g) if g < self.generation => {
                        w.end(EndReason::Relisted, counters);
                        break 'decide false;
                    }
                    // Begun after a re-list the dispatcher has not reached.
                    Some(g) if g > self.generation => break 'decide true,
                    Some(g) => g,
                };
                let need = w.start.wait_for();
                if need > current {
                    if now.saturating_duration_since(w.created) >= timeout {
                        let err = TooLargeResourceVersion::new(need, current);
                        w.end(EndReason::TooLargeResourceVersion(err), counters);
                        break 'decide false;
                    }
                    break 'decide true;
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
        for pos in self.cursor..end {
            let Ok(rec) = self.shared.ring.read(&mut self.read, pos) else {
                // The writer never reuses an undispatched slot (it is gated
                // on `dispatched`), so this cannot happen.
                debug_assert!(false, "undispatched record {pos} was overwritten");
                continue;
            };
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
                    let prev = rec.prev.as_ref();
                    let handle_pos = pos << 2;
                    routes.for_each_candidate(object, prev, |w| {
                        if !w.is_live() || w.is_ended() {
                            return;
                        }
                        if let Some(v) = w.filter.verdict(kind, object, prev) {
                            deliveries += 1;
                            self.push(w, handle_pos | v as u64);
                        }
                    });
                }
            }
        }
        self.cursor = end;
        self.flush_wakes();
        // Release: the writer may reuse slots below `end` only after we are
        // done reading them.
        self.shared.dispatched.store(end, Ordering::Release);
        self.shared.wake_writer_if_waiting();
        let c = &self.shared.counters;
        Counters::add(&c.deliveries, deliveries);
        Counters::add(&c.changes_dispatched, end - start);
    }

    /// Enqueues `handle` for `w`; a full queue parks the watcher.
    fn push(&mut self, w: &Arc<WatcherShared>, handle: u64) {
        if w.queue.push(handle).is_err() {
            w.park(handle >> 2);
            Counters::add(&self.shared.counters.parks, 1);
            return;
        }
        // Relaxed: `touched` is the dispatcher's own scratch field.
        if w.touched.load(Ordering::Relaxed) != self.batch_no {
            w.touched.store(self.batch_no, Ordering::Relaxed);
            self.touched.push(w.clone());
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

    fn maintain(&mut self, now: Instant) {
        self.last_tick = now;
        if let Ok(mut st) = self.shared.state.try_lock() {
            if st.ring.shrink_if_idle(now, self.cursor).is_some() {
                let c = &self.shared.counters;
                Counters::add(&c.ring_shrinks, 1);
                Counters::set(&c.ring_capacity, st.ring.capacity() as u64);
                Counters::set(&c.ring_len, st.ring.len() as u64);
            }
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
        self.routes = Routes::new(self.shared.index_fields.clone());
        self.publish_routes();
        self.update_gauges();
    }
}
