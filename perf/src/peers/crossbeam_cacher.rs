//! The idiomatic Rust cacher: one bounded `crossbeam-channel` per watcher
//! carrying `Arc<PeerEvent>`, and a publisher that routes each change
//! itself.
//!
//! ## Routing
//!
//! Watchers without a selector get every change. With `spec.indexed`, a
//! per-node watcher is registered in an `AHashMap<node, watchers>` index
//! and gets the changes whose object or previous object is on its node
//! (looked up under `node` and `prev_node`, once when they are equal);
//! without it, the publisher evaluates every per-node watcher's filter on
//! every change.
//!
//! ## Back-pressure
//!
//! A full channel blocks the publisher (`send`) until its watcher drains:
//! simple and lossless, and one stalled watcher stalls everyone.
//!
//! ## History
//!
//! The publisher keeps the last `spec.ring` events in a `VecDeque`. A
//! watcher that starts before the preloaded head replays them from a
//! snapshot taken at registration (shared by all watchers, filtered as it
//! is read) before its channel; a start that has left the history is
//! refused, like the reference's 410 Gone.

use std::collections::VecDeque;
use std::sync::Arc;

use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, TryRecvError};

use crate::peers::event::{Backlog, PeerEvent, replay_from};
use crate::system::{Drained, Publisher, Spec, Subscriber, System};
use crate::workload::{Filter, Workload};

/// Per-watcher crossbeam channels routed by the publisher.
#[derive(Debug, Clone, Copy, Default)]
pub struct CrossbeamCacher {}

/// The router: every watcher's sender, the routing tables, the history.
#[derive(Debug)]
pub struct CrossbeamPub {
    events: Vec<Arc<PeerEvent>>,
    senders: Vec<Sender<Arc<PeerEvent>>>,
    /// Watchers that get every change without a check (no selector).
    everything: Vec<usize>,
    /// Per-node watchers checked on every change (no index).
    scanned: Vec<(usize, Filter)>,
    /// Per-node watchers by node (with an index).
    index: AHashMap<u32, Vec<usize>>,
    history: VecDeque<Arc<PeerEvent>>,
    ring: usize,
}

impl CrossbeamPub {
    #[inline]
    fn send(&self, w: usize, ev: &Arc<PeerEvent>) {
        // An error only says the watcher's receiver is gone.
        let _ = self.senders[w].send(ev.clone());
    }

    fn remember(&mut self, ev: Arc<PeerEvent>) {
        if self.history.len() == self.ring {
            self.history.pop_front();
        }
        self.history.push_back(ev);
    }
}

impl Publisher for CrossbeamPub {
    #[inline]
    fn publish(&mut self, i: usize) {
        let ev = &self.events[i];
        for &w in &self.everything {
            self.send(w, ev);
        }
        for &(w, filter) in &self.scanned {
            if ev.admitted_by(&filter) {
                self.send(w, ev);
            }
        }
        if !self.index.is_empty() {
            if let Some(ws) = self.index.get(&ev.node) {
                for &w in ws {
                    self.send(w, ev);
                }
            }
            if ev.prev_node != ev.node
                && let Some(ws) = self.index.get(&ev.prev_node)
            {
                for &w in ws {
                    self.send(w, ev);
                }
            }
        }
        let ev = ev.clone();
        self.remember(ev);
    }
}

/// One watcher's receiver, after its replay.
#[derive(Debug)]
pub struct CrossbeamSub {
    rx: Receiver<Arc<PeerEvent>>,
    backlog: Backlog,
    filter: Filter,
}

impl Subscriber for CrossbeamSub {
    #[inline]
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        let mut out = Drained::default();
        let mut n = 0;
        // The replay is not routed: the filter is applied as it is read.
        while n < max
            && let Some(ev) = self.backlog.next_event()
        {
            n += 1;
            if ev.admitted_by(&self.filter) {
                out.delivered += 1;
                f(ev.rv, ev.payload.len());
            }
        }
        while n < max {
            match self.rx.try_recv() {
                Ok(ev) => {
                    n += 1;
                    out.delivered += 1;
                    f(ev.rv, ev.payload.len());
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    out.ended = true;
                    break;
                }
            }
        }
        out
    }
}

impl System for CrossbeamCacher {
    type Pub = CrossbeamPub;
    type Sub = CrossbeamSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(CrossbeamPub, Vec<CrossbeamSub>)> {
        let events = PeerEvent::all(workload);
        let ring = spec.ring.max(1);
        let mut publisher = CrossbeamPub {
            events,
            senders: Vec::with_capacity(spec.filters.len()),
            everything: Vec::new(),
            scanned: Vec::new(),
            index: AHashMap::new(),
            history: VecDeque::with_capacity(ring.min(spec.preloaded.max(1))),
            ring,
        };
        for i in 0..spec.preloaded {
            let ev = publisher.events[i].clone();
            publisher.remember(ev);
        }
        let backlog = if spec.preloaded > spec.start {
            Backlog::new(replay_from(
                publisher.history.iter(),
                spec.start,
                spec.preloaded,
            )?)
        } else {
            Backlog::empty()
        };
        let mut subs = Vec::with_capacity(spec.filters.len());
        for (w, &filter) in spec.filters.iter().enumerate() {
            // A zero-capacity crossbeam channel is a rendezvous: keep one slot.
            let (tx, rx) = crossbeam_channel::bounded(spec.queue.max(1));
            publisher.senders.push(tx);
            match filter {
                Filter::All => publisher.everything.push(w),
                Filter::Node(n) if spec.indexed => publisher.index.entry(n).or_default().push(w),
                Filter::Node(_) => publisher.scanned.push((w, filter)),
            }
            subs.push(CrossbeamSub {
                rx,
                backlog: backlog.clone(),
                filter,
            });
        }
        Ok((publisher, subs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::event::testkit;

    #[test]
    fn all_match_receives_everything() {
        testkit::all_match_is_clean(&CrossbeamCacher::default(), |s| s);
    }

    #[test]
    fn node_watchers_indexed_and_scanned() {
        testkit::node_filters_are_clean(&CrossbeamCacher::default(), |s| s);
    }

    #[test]
    fn watchers_replay_history_then_go_live() {
        let w = testkit::node_workload();
        let mut spec = testkit::spec(testkit::node_filters(), true);
        spec.ring = 1_200;
        spec.start = 500;
        spec.preloaded = 1_500;
        testkit::run_clean(&CrossbeamCacher::default(), &spec, &w);
        // Everything preloaded, replayed, nothing live.
        spec.preloaded = testkit::CHANGES;
        spec.start = 1_000;
        testkit::run_clean(&CrossbeamCacher::default(), &spec, &w);
    }

    #[test]
    fn a_start_that_left_the_history_is_refused() {
        let w = testkit::all_workload();
        let mut spec = testkit::spec(vec![Filter::All; 2], false);
        spec.ring = 100;
        spec.preloaded = 1_000;
        spec.start = 899;
        assert!(CrossbeamCacher::default().build(&spec, &w).is_err());
        spec.start = 900;
        assert!(CrossbeamCacher::default().build(&spec, &w).is_ok());
    }

    #[test]
    #[ignore = "sanity measurement: 10^8 deliveries"]
    fn sanity_rate() {
        testkit::sanity("crossbeam-cacher", &CrossbeamCacher::default());
    }
}
