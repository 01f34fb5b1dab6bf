//! How the dispatcher ends the watches it holds: all at once when the
//! engine stops ([`Dispatcher::shutdown`]), or each after what it was
//! sent when the engine is drained ([`Dispatcher::drain`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::event::EndReason;
use crate::index::Routes;
use crate::shared::Request;
use crate::stats::Counters;

use super::{BATCH, Dispatcher};

impl Dispatcher {
    /// Ends every watch open now after what the engine has dispatched
    /// (caught up to the writer's head first): each is offered a bookmark
    /// at the version that stands for that point, if it allows bookmarks
    /// (refused, as any bookmark is, by a full queue, an active overflow or
    /// a bookmark still in flight: its last event's version then stands),
    /// and ends [`EndReason::Drained`] once its consumer has taken what
    /// was enqueued before (a follower, what the ring held). Watches the
    /// catch-up makes eligible (the list or the version they waited for
    /// is now dispatched) are admitted first, so they replay what they
    /// are owed; a watch still waiting ends with nothing. Watches
    /// registered after the drain's request are served as usual.
    pub(super) fn drain(&mut self, now: Instant) {
        let head = self.shared.ring.head();
        while self.cursor < head {
            self.dispatch_batch(head.min(self.cursor + BATCH));
        }
        self.admit_waiters(now);
        let (pos, rv) = (self.cursor, self.bookmark_rv());
        let listed = self.generation != 0;
        let counters = &self.shared.counters;
        for w in self.routes.iter() {
            if w.is_ended() {
                continue;
            }
            if listed && w.allow_bookmarks() {
                w.offer_bookmark(pos, rv);
            }
            w.end_after_drain(EndReason::Drained, counters);
        }
        let waiting = self.waiting_rv.iter().map(|Reverse(r)| &r.w);
        for w in self.waiting_list.iter().chain(waiting) {
            w.end(EndReason::Drained, counters);
        }
        Counters::add(&counters.drains, 1);
    }

    /// Ends every watch the dispatcher holds or has been asked to hold
    /// with `reason`, closes the control channel (new watches then fail
    /// with `EngineStopped`) and drops everything. Calls no user code.
    pub(super) fn shutdown(&mut self, reason: EndReason) {
        let queued = {
            let mut c = self.shared.lock_control();
            c.closed = true;
            std::mem::take(&mut c.requests)
        };
        self.backlog.extend(queued);
        let counters = &self.shared.counters;
        for request in self.backlog.drain(..) {
            if let Request::Register(w) = request {
                Counters::sub(&counters.registrations_queued, 1);
                w.end(reason.clone(), counters);
            }
        }
        let waiting = self.waiting_rv.drain().map(|Reverse(r)| r.w);
        for w in self
            .routes
            .iter()
            .chain(&self.waiting_list)
            .chain(&waiting.collect::<Vec<_>>())
        {
            w.end(reason.clone(), counters);
            // Ended: nothing more is pushed; its overflow goes back.
            w.discard_spill(&counters.overflow_handles);
        }
        self.waiting_list = Vec::new();
        self.deadlines = BinaryHeap::new();
        self.wheel.retain(|_| false);
        self.routes = Routes::new(self.shared.index_fields.clone());
        self.publish_routes();
        (self.waiting, self.routed, self.retired, self.waiting_rv_n) = (0, 0, 0, 0);
        self.update_gauges();
    }
}
