//! The `disruptor` crate: one shared ring written by a single producer,
//! one [`EventPoller`] per watcher (a cursor over the shared ring, drained
//! from the consumer pool). This is the ceiling for a shared ring without
//! filters: a delivery is a cursor step and a read of the slot.
//!
//! ## Limits
//!
//! All-match only: the ring has no filters and no index, so
//! [`DisruptorRing`] refuses any `Filter::Node` watcher rather than
//! measure something else.
//!
//! ## Back-pressure
//!
//! The producer spins while the slowest cursor is a ring behind (the
//! disruptor's back-pressure): one stalled watcher stalls the writer.
//!
//! ## History
//!
//! The pollers are registered before anything is published, so the ring
//! itself is the history: changes `start..preloaded` are published while
//! building and every watcher reads them first. A replay longer than the
//! ring is refused.
//!
//! ## Shutdown
//!
//! No thread of the disruptor's runs (pollers are driven by the consumer
//! pool, so the wait strategy is never used; `Sleep` is named so that none
//! would ever burn a core). Dropping the publisher drops the producer,
//! which marks the shutdown sequence: a poller that has read everything
//! then reports the end.

use std::sync::Arc;
use std::time::Duration;

use disruptor::{
    EventPoller, MultiConsumerBarrier, Polling, Producer, SingleProducer, SingleProducerBarrier,
    Sleep,
};

use crate::peers::event::PeerEvent;
use crate::system::{Drained, Publisher, Spec, Subscriber, System};
use crate::workload::{Filter, Workload};

/// Smallest ring, whatever the spec says.
pub const MIN_RING: usize = 1_024;

/// A ring slot: the shared event (the consumer reads its version and its
/// payload's length through it, as every other peer's consumer does).
type Slot = Option<Arc<PeerEvent>>;

type Poller = EventPoller<Slot, SingleProducerBarrier>;

/// The `disruptor` crate, single producer, one poller per watcher.
#[derive(Debug, Clone, Copy, Default)]
pub struct DisruptorRing {}

/// The producer and the pre-built events.
pub struct DisruptorPub {
    producer: SingleProducer<Slot, MultiConsumerBarrier>,
    events: Vec<Arc<PeerEvent>>,
    /// With no watcher, the disruptor still needs one cursor to gate the
    /// producer: the publisher owns it and keeps it at the head.
    sink: Option<Poller>,
}

impl std::fmt::Debug for DisruptorPub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DisruptorPub")
            .field("events", &self.events.len())
            .field("sink", &self.sink.is_some())
            .finish_non_exhaustive()
    }
}

impl DisruptorPub {
    #[inline]
    fn put(&mut self, i: usize) {
        let ev = self.events[i].clone();
        // Spins while the ring is full.
        self.producer.publish(move |slot| *slot = Some(ev));
        if let Some(sink) = &mut self.sink {
            // Dropping the guard at once moves the cursor past all it
            // covered.
            let _ = sink.poll();
        }
    }
}

impl Publisher for DisruptorPub {
    #[inline]
    fn publish(&mut self, i: usize) {
        self.put(i);
    }
}

/// One watcher's cursor.
pub struct DisruptorSub {
    poller: Poller,
    ended: bool,
}

impl std::fmt::Debug for DisruptorSub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DisruptorSub")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Subscriber for DisruptorSub {
    #[inline]
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        let mut out = Drained {
            delivered: 0,
            ended: self.ended,
        };
        if self.ended {
            return out;
        }
        match self.poller.take(max as u64) {
            Ok(mut guard) => {
                for ev in (&mut guard).flatten() {
                    out.delivered += 1;
                    f(ev.rv, ev.payload.len());
                }
                // The guard's drop releases the slots to the producer.
            }
            Err(Polling::NoEvents) => {}
            Err(Polling::Shutdown) => {
                self.ended = true;
                out.ended = true;
            }
        }
        out
    }
}

impl System for DisruptorRing {
    type Pub = DisruptorPub;
    type Sub = DisruptorSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(DisruptorPub, Vec<DisruptorSub>)> {
        if let Some(f) = spec.filters.iter().find(|f| **f != Filter::All) {
            anyhow::bail!("the disruptor ring has no filters: cannot serve {f:?} watchers");
        }
        let size = spec.ring.max(MIN_RING).next_power_of_two();
        let replay = spec.preloaded.saturating_sub(spec.start);
        if replay > size {
            anyhow::bail!("a replay of {replay} changes does not fit the ring of {size}");
        }
        let mut builder =
            disruptor::build_single_producer(size, || None, Sleep::new(Duration::from_micros(50)))
                .with_multi_consumer();
        let mut pollers = Vec::with_capacity(spec.filters.len().max(1));
        for _ in 0..spec.filters.len().max(1) {
            let (poller, next) = builder.new_event_poller();
            pollers.push(poller);
            builder = next;
        }
        let producer = builder.build();
        let sink = if spec.filters.is_empty() {
            pollers.pop()
        } else {
            None
        };
        let mut publisher = DisruptorPub {
            producer,
            events: PeerEvent::all(workload),
            sink,
        };
        // The history the watchers start from (fits: checked above).
        for i in spec.start..spec.preloaded {
            publisher.put(i);
        }
        let subs = pollers
            .into_iter()
            .map(|poller| DisruptorSub {
                poller,
                ended: false,
            })
            .collect();
        Ok((publisher, subs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::event::testkit::{self, WATCHERS};

    #[test]
    fn all_match_receives_everything() {
        let w = testkit::all_workload();
        testkit::run_clean(
            &DisruptorRing::default(),
            &testkit::spec(vec![Filter::All; WATCHERS], false),
            &w,
        );
        // A ring smaller than the run: the producer laps, gated by the
        // slowest cursor.
        let mut spec = testkit::spec(vec![Filter::All; WATCHERS], false);
        spec.ring = 1;
        testkit::run_clean(&DisruptorRing::default(), &spec, &w);
    }

    #[test]
    fn watchers_replay_the_ring() {
        let w = testkit::all_workload();
        let mut spec = testkit::spec(vec![Filter::All; WATCHERS], false);
        spec.start = 300;
        spec.preloaded = 1_200;
        testkit::run_clean(&DisruptorRing::default(), &spec, &w);
        spec.ring = 1;
        spec.start = 0;
        spec.preloaded = 1_500;
        assert!(
            DisruptorRing::default().build(&spec, &w).is_err(),
            "1,500 back in a ring of 1,024"
        );
    }

    #[test]
    fn filters_are_refused() {
        let w = testkit::node_workload();
        assert!(
            DisruptorRing::default()
                .build(&testkit::spec(testkit::node_filters(), true), &w)
                .is_err()
        );
    }

    #[test]
    fn no_watchers_and_shutdown() {
        let w = testkit::all_workload();
        // No watcher: the publisher's own cursor keeps the ring free.
        let (mut p, subs) = DisruptorRing::default()
            .build(&testkit::spec(Vec::new(), false), &w)
            .expect("builds");
        assert!(subs.is_empty());
        for i in 0..testkit::CHANGES {
            p.publish(i);
        }
        drop(p);
        // A watcher that has read everything sees the end once the
        // producer is dropped.
        let (mut p, mut subs) = DisruptorRing::default()
            .build(&testkit::spec(vec![Filter::All], false), &w)
            .expect("builds");
        for i in 0..10 {
            p.publish(i);
        }
        let d = subs[0].drain(4, &mut |_, _| {});
        assert_eq!((d.delivered, d.ended), (4, false));
        drop(p);
        let d = subs[0].drain(100, &mut |_, _| {});
        assert_eq!((d.delivered, d.ended), (6, false));
        assert!(subs[0].drain(100, &mut |_, _| {}).ended);
    }

    #[test]
    #[ignore = "sanity measurement: 10^8 deliveries"]
    fn sanity_rate() {
        testkit::sanity("disruptor", &DisruptorRing::default());
    }
}
