//! `tokio::sync::broadcast`: one bounded channel of `Arc<PeerEvent>`, one
//! [`Receiver`](broadcast::Receiver) per watcher, drained with `try_recv`
//! from the consumer pool.
//!
//! ## Filtering
//!
//! The channel has no notion of a filter (or of an index): every receiver
//! sees every change and applies its watcher's filter itself, handing the
//! consumer only what passes. `spec.indexed` changes nothing here.
//!
//! ## Lagging
//!
//! The sender never waits. A receiver that falls more than the capacity
//! behind gets `TryRecvError::Lagged`: the changes it missed are gone, so a
//! cacher built on it would have to close that watcher; the subscriber
//! reports `ended` and stays ended.
//!
//! ## History
//!
//! Receivers see only what is sent after they subscribe: a watcher cannot
//! start from an older version, so [`TokioBroadcast`] refuses specs with
//! `preloaded > start`.

use std::sync::Arc;

use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::peers::event::PeerEvent;
use crate::system::{Drained, Publisher, Spec, Subscriber, System};
use crate::workload::{Filter, Workload};

/// `tokio::sync::broadcast` with receiver-side filters.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioBroadcast {}

/// The sender and the pre-built events.
#[derive(Debug)]
pub struct TokioPub {
    tx: broadcast::Sender<Arc<PeerEvent>>,
    events: Vec<Arc<PeerEvent>>,
}

impl Publisher for TokioPub {
    #[inline]
    fn publish(&mut self, i: usize) {
        // An error only says that no receiver is left: nothing to deliver.
        let _ = self.tx.send(self.events[i].clone());
    }
}

/// One receiver and its watcher's filter.
#[derive(Debug)]
pub struct TokioSub {
    rx: broadcast::Receiver<Arc<PeerEvent>>,
    filter: Filter,
    ended: bool,
}

impl Subscriber for TokioSub {
    /// Takes up to `max` changes off the channel (the bound counts changes
    /// examined, so a selective watcher's batch costs the same work as an
    /// all-match one's) and hands on those the filter admits.
    #[inline]
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        let mut out = Drained {
            delivered: 0,
            ended: self.ended,
        };
        if self.ended {
            return out;
        }
        for _ in 0..max {
            match self.rx.try_recv() {
                Ok(ev) => {
                    if ev.admitted_by(&self.filter) {
                        out.delivered += 1;
                        f(ev.rv, ev.payload.len());
                    }
                }
                Err(TryRecvError::Empty) => break,
                // Lagged: changes were overwritten before this receiver read
                // them; the watcher has lost events and must end. Closed:
                // the sender is gone and everything sent has been read.
                Err(TryRecvError::Lagged(_) | TryRecvError::Closed) => {
                    self.ended = true;
                    out.ended = true;
                    break;
                }
            }
        }
        out
    }
}

impl System for TokioBroadcast {
    type Pub = TokioPub;
    type Sub = TokioSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(TokioPub, Vec<TokioSub>)> {
        if spec.preloaded > spec.start {
            anyhow::bail!(
                "tokio broadcast keeps no history: watchers cannot replay the {} changes before the head",
                spec.preloaded - spec.start
            );
        }
        // tokio rounds the capacity up to a power of two (and panics on 0).
        let capacity = spec.ring.max(1).next_power_of_two();
        let (tx, _) = broadcast::channel(capacity);
        let events = PeerEvent::all(workload);
        // The preloaded changes were applied before anyone subscribed: they
        // would have gone to no receiver, so they are not sent at all.
        let subs = spec
            .filters
            .iter()
            .map(|&filter| TokioSub {
                rx: tx.subscribe(),
                filter,
                ended: false,
            })
            .collect();
        Ok((TokioPub { tx, events }, subs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::event::testkit;
    use crate::workload::Filter;

    #[test]
    fn all_match_receives_everything() {
        testkit::all_match_is_clean(&TokioBroadcast::default(), |s| s);
    }

    #[test]
    fn node_filters_are_applied_by_the_receiver() {
        testkit::node_filters_are_clean(&TokioBroadcast::default(), |s| s);
    }

    #[test]
    fn history_is_refused() {
        let w = testkit::all_workload();
        let mut spec = testkit::spec(vec![Filter::All; 2], false);
        spec.preloaded = 10;
        spec.start = 5;
        assert!(TokioBroadcast::default().build(&spec, &w).is_err());
        // Starting at the head after preloading is fine.
        spec.start = 10;
        assert!(TokioBroadcast::default().build(&spec, &w).is_ok());
    }

    #[test]
    fn a_lagging_receiver_ends() {
        let w = testkit::all_workload();
        let mut spec = testkit::spec(vec![Filter::All; 2], false);
        spec.ring = 16;
        let (mut p, mut subs) = TokioBroadcast::default().build(&spec, &w).expect("builds");
        // The first watcher keeps up with the first 8 changes.
        for i in 0..8 {
            p.publish(i);
        }
        let mut seen = Vec::new();
        let d = subs[0].drain(100, &mut |rv, _| seen.push(rv));
        assert_eq!((d.delivered, d.ended), (8, false));
        // Then both fall 100 changes behind a ring of 16.
        for i in 8..108 {
            p.publish(i);
        }
        for sub in &mut subs {
            let d = sub.drain(100, &mut |_, _| {});
            assert_eq!((d.delivered, d.ended), (0, true));
            // And stay ended.
            assert!(sub.drain(100, &mut |_, _| {}).ended);
        }
        assert_eq!(seen, (0..8).map(|i| w.changes[i].rv).collect::<Vec<_>>());
    }

    #[test]
    #[ignore = "sanity measurement: 10^8 deliveries"]
    fn sanity_rate() {
        testkit::sanity("tokio-broadcast", &TokioBroadcast::default());
    }
}
