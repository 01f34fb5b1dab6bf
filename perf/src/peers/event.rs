//! The event every peer carries, and the replay of history that the peers
//! with one share.
//!
//! Each workload change becomes one [`PeerEvent`] behind an [`Arc`],
//! built before the clock starts (as Herald pre-builds its objects), so the
//! timed loop only moves reference counts, as the reference moves
//! `*watchCacheEvent` pointers.

use std::sync::Arc;

use bytes::Bytes;

use crate::workload::{ChangeSpec, Filter, Workload};

/// One change as the peers carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEvent {
    /// Resource version.
    pub rv: u64,
    /// The pod's index.
    pub key: u32,
    /// The node the pod is on after the change.
    pub node: u32,
    /// The node it was on before.
    pub prev_node: u32,
    /// The object's payload (shared with the workload, never copied).
    pub payload: Bytes,
}

impl PeerEvent {
    /// The event for change `c`, carrying `payload`.
    pub fn new(c: &ChangeSpec, payload: Bytes) -> PeerEvent {
        PeerEvent {
            rv: c.rv,
            key: c.key,
            node: c.node,
            prev_node: c.prev_node,
            payload,
        }
    }

    /// One event per workload change, in order.
    pub fn all(workload: &Workload) -> Vec<Arc<PeerEvent>> {
        workload
            .changes
            .iter()
            .map(|c| Arc::new(PeerEvent::new(c, workload.payload.clone())))
            .collect()
    }

    /// The change in the workload's terms.
    #[inline]
    pub fn change(&self) -> ChangeSpec {
        ChangeSpec {
            rv: self.rv,
            key: self.key,
            node: self.node,
            prev_node: self.prev_node,
        }
    }

    /// Whether a watcher with `filter` receives this event (the workload's
    /// rule: the pod is on the node before or after the change).
    #[inline]
    pub fn admitted_by(&self, filter: &Filter) -> bool {
        filter.admits(&self.change())
    }
}

/// History a watcher replays before its live events: a shared snapshot of
/// the events after its start version (one copy for all watchers) and the
/// watcher's position in it.
#[derive(Debug, Clone)]
pub struct Backlog {
    events: Arc<[Arc<PeerEvent>]>,
    next: usize,
}

impl Backlog {
    /// Nothing to replay.
    pub fn empty() -> Backlog {
        Backlog {
            events: Arc::from(Vec::new()),
            next: 0,
        }
    }

    /// Replays `events` from the first.
    pub fn new(events: Arc<[Arc<PeerEvent>]>) -> Backlog {
        Backlog { events, next: 0 }
    }

    /// The next event to replay, if any is left.
    #[inline]
    pub fn next_event(&mut self) -> Option<&Arc<PeerEvent>> {
        let ev = self.events.get(self.next)?;
        self.next += 1;
        Some(ev)
    }

    /// Whether everything has been replayed.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.next >= self.events.len()
    }
}

/// The history snapshot for watchers starting at `spec.start` when
/// `history` holds the last `history.len()` of the first `preloaded`
/// changes; an error (the reference's "too old resource version", 410
/// Gone) when change `start` has already left the history.
pub fn replay_from<'a>(
    history: impl ExactSizeIterator<Item = &'a Arc<PeerEvent>>,
    start: usize,
    preloaded: usize,
) -> anyhow::Result<Arc<[Arc<PeerEvent>]>> {
    let oldest = preloaded - history.len();
    if start < oldest {
        anyhow::bail!(
            "too old resource version: change {start} has left the history (oldest kept: change {oldest})"
        );
    }
    Ok(history.skip(start - oldest).cloned().collect())
}

#[cfg(test)]
pub(crate) mod testkit {
    //! What the peers' tests share: small workloads, specs, options and
    //! the clean-run assertions.

    use std::sync::Arc;
    use std::time::Duration;

    use crate::consume::{RunOpts, RunResult, run};
    use crate::system::{Spec, System};
    use crate::workload::{Filter, Shape, Workload};

    /// Watchers in the small runs.
    pub(crate) const WATCHERS: usize = 20;
    /// Changes in the small runs.
    pub(crate) const CHANGES: usize = 2_000;
    /// Nodes in the selective runs.
    pub(crate) const NODES: u32 = 7;

    /// All pods on one node.
    pub(crate) fn all_workload() -> Arc<Workload> {
        Workload::build(Shape {
            pods: 100,
            nodes: 1,
            changes: CHANGES,
            move_every: 0,
            payload: 16,
        })
    }

    /// Pods over [`NODES`] nodes, one change in three moving its pod.
    pub(crate) fn node_workload() -> Arc<Workload> {
        Workload::build(Shape {
            pods: 200,
            nodes: NODES,
            changes: CHANGES,
            move_every: 3,
            payload: 16,
        })
    }

    /// Mostly per-node watchers, one in five watching everything.
    pub(crate) fn node_filters() -> Vec<Filter> {
        (0..WATCHERS)
            .map(|w| {
                if w % 5 == 4 {
                    Filter::All
                } else {
                    Filter::Node(w as u32 % NODES)
                }
            })
            .collect()
    }

    /// A spec with small queues.
    pub(crate) fn spec(filters: Vec<Filter>, indexed: bool) -> Spec {
        Spec {
            filters,
            indexed,
            queue: 16,
            ring: CHANGES + 1,
            start: 0,
            preloaded: 0,
        }
    }

    /// `system` delivers every change to [`WATCHERS`] watchers of
    /// everything, in order, and no watcher ends early (`build` adapts the
    /// spec to the system's sizing).
    pub(crate) fn all_match_is_clean<S: System>(system: &S, build: impl Fn(Spec) -> Spec) {
        run_clean(
            system,
            &build(spec(vec![Filter::All; WATCHERS], false)),
            &all_workload(),
        );
    }

    /// `system` delivers exactly what each node filter admits, with and
    /// without its index (`build` as above).
    pub(crate) fn node_filters_are_clean<S: System>(system: &S, build: impl Fn(Spec) -> Spec) {
        let w = node_workload();
        for indexed in [false, true] {
            run_clean(system, &build(spec(node_filters(), indexed)), &w);
        }
    }

    /// Every delivery checked and sampled, a short timeout.
    pub(crate) fn opts() -> RunOpts {
        RunOpts {
            check_filters: true,
            sample_every: 1,
            timeout: Duration::from_secs(20),
            ..RunOpts::default()
        }
    }

    /// Runs and asserts a clean, complete run.
    pub(crate) fn run_clean<S: System>(
        system: &S,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> RunResult {
        let r = run(system, spec, workload, &opts()).expect("builds");
        assert!(!r.timed_out, "timed out: {} of {}", r.delivered, r.owed);
        assert_eq!(r.violations, 0);
        assert_eq!(r.ended, 0);
        assert_eq!(r.delivered, r.owed);
        assert!(r.owed > 0);
        r
    }

    /// The sanity measurement: 1,000 all-match watchers, 100,000 changes,
    /// the default consumer pool; prints and returns the rate.
    pub(crate) fn sanity<S: System>(name: &str, system: &S) -> f64 {
        let changes = 100_000;
        let workload = Workload::build(Shape {
            pods: 1_000,
            nodes: 1,
            changes,
            move_every: 0,
            payload: 64,
        });
        let spec = Spec {
            filters: vec![Filter::All; 1_000],
            indexed: false,
            queue: 1_000,
            ring: changes + 1,
            start: 0,
            preloaded: 0,
        };
        let r = run(system, &spec, &workload, &RunOpts::default()).expect("builds");
        assert!(!r.timed_out);
        assert_eq!(r.violations, 0);
        println!(
            "{name}: {:.2} M deliveries/s ({} of {} owed, {} watchers ended, in {:.2?}, publish {:.2?}, setup {:.2?}, p50 {} us, p99 {} us)",
            r.rate() / 1e6,
            r.delivered,
            r.owed,
            r.ended,
            r.elapsed,
            r.publish_elapsed,
            r.setup,
            r.latency.value_at_quantile(0.5) / 1_000,
            r.latency.value_at_quantile(0.99) / 1_000,
        );
        r.rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Shape;

    #[test]
    fn events_follow_the_workload() {
        let w = testkit::node_workload();
        let evs = PeerEvent::all(&w);
        assert_eq!(evs.len(), w.changes.len());
        for (ev, c) in evs.iter().zip(&w.changes) {
            assert_eq!(ev.change(), *c);
            assert_eq!(ev.payload.len(), 16);
            assert_eq!(ev.admitted_by(&Filter::Node(3)), Filter::Node(3).admits(c));
        }
    }

    #[test]
    fn replay_serves_what_the_history_holds() {
        let w = Workload::build(Shape {
            pods: 10,
            nodes: 1,
            changes: 100,
            move_every: 0,
            payload: 1,
        });
        let evs = PeerEvent::all(&w);
        // The history kept the last 40 of the first 90 changes: 50..90.
        let history = &evs[50..90];
        let r = replay_from(history.iter(), 60, 90).expect("inside");
        assert_eq!(r.len(), 30);
        assert_eq!(r[0].rv, evs[60].rv);
        assert!(replay_from(history.iter(), 50, 90).is_ok());
        assert!(replay_from(history.iter(), 49, 90).is_err());
        let mut b = Backlog::new(r);
        let mut n = 0;
        while b.next_event().is_some() {
            n += 1;
        }
        assert_eq!(n, 30);
        assert!(b.is_done());
        assert!(Backlog::empty().is_done());
    }
}
