//! The workload every system under test receives: a pod-shaped initial list
//! and a stream of changes, built before any clock starts.
//!
//! Each change modifies one pod; some move it to another node, so a
//! per-node watcher sees Added, Modified and Deleted transitions (the
//! verdict on object and previous object, as in the reference). Every
//! system is handed the same changes in the same order; the expected
//! count of deliveries per watcher is computed here, once, from the same
//! rule, and every run is checked against it.

use std::sync::Arc;

use bytes::Bytes;

/// One change, in plain terms every peer can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeSpec {
    /// Resource version (strictly increasing, starting at
    /// [`Workload::FIRST_RV`]).
    pub rv: u64,
    /// The pod's index (`pod-{key}` in namespace `default`).
    pub key: u32,
    /// The node the pod is on after the change.
    pub node: u32,
    /// The node it was on before.
    pub prev_node: u32,
}

/// What a watcher asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Filter {
    /// Every change (no selector).
    All,
    /// The pods of one node: `spec.nodeName=node-{n}`. A change is
    /// delivered when the pod is on the node before or after it (Added,
    /// Modified or Deleted as the reference decides).
    Node(u32),
}

impl Filter {
    /// Whether `change` is delivered to a watcher with this filter.
    #[inline]
    pub fn admits(&self, change: &ChangeSpec) -> bool {
        match *self {
            Filter::All => true,
            Filter::Node(n) => change.node == n || change.prev_node == n,
        }
    }

    /// The field selector that says the same thing to Herald.
    pub fn field_selector(&self) -> Option<String> {
        match self {
            Filter::All => None,
            Filter::Node(n) => Some(format!("spec.nodeName={}", node_name(*n))),
        }
    }
}

/// The node's name, as the pods' `spec.nodeName` carries it.
pub fn node_name(n: u32) -> String {
    format!("node-{n}")
}

/// The pod's name.
pub fn pod_name(key: u32) -> String {
    format!("pod-{key}")
}

/// How to generate a workload.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Distinct pods.
    pub pods: u32,
    /// Nodes the pods are spread over (1 for all-match scenarios).
    pub nodes: u32,
    /// Changes in the stream.
    pub changes: usize,
    /// One change in `move_every` moves its pod to another node (0: never).
    pub move_every: u32,
    /// Payload bytes per object (the consumers read its length).
    pub payload: usize,
}

/// A pre-built workload.
#[derive(Debug)]
pub struct Workload {
    /// The shape it was built from.
    pub shape: Shape,
    /// Node of each pod in the initial list (listed at
    /// [`Workload::LIST_RV`]).
    pub initial: Vec<u32>,
    /// The changes, in order.
    pub changes: Vec<ChangeSpec>,
    /// The payload every object carries (shared, so building objects costs
    /// no copies).
    pub payload: Bytes,
}

impl Workload {
    /// The resource version of the initial list.
    pub const LIST_RV: u64 = 1;
    /// The resource version of the first change.
    pub const FIRST_RV: u64 = 2;

    /// Builds the workload deterministically (a fixed-seed xorshift, so
    /// every run and every system sees the same stream).
    pub fn build(shape: Shape) -> Arc<Workload> {
        assert!(shape.pods > 0 && shape.nodes > 0);
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut at: Vec<u32> = (0..shape.pods).map(|p| p % shape.nodes).collect();
        let initial = at.clone();
        let changes = (0..shape.changes)
            .map(|i| {
                let key = (rng.next() % u64::from(shape.pods)) as u32;
                let prev_node = at[key as usize];
                let moves = shape.move_every > 0
                    && shape.nodes > 1
                    && rng.next().is_multiple_of(u64::from(shape.move_every));
                let node = if moves {
                    let step = 1 + (rng.next() % u64::from(shape.nodes - 1)) as u32;
                    (prev_node + step) % shape.nodes
                } else {
                    prev_node
                };
                at[key as usize] = node;
                ChangeSpec {
                    rv: Workload::FIRST_RV + i as u64,
                    key,
                    node,
                    prev_node,
                }
            })
            .collect();
        Arc::new(Workload {
            shape,
            initial,
            changes,
            payload: Bytes::from(vec![b'x'; shape.payload]),
        })
    }

    /// How many changes of `range` a watcher with `filter` receives.
    pub fn expected(&self, filter: &Filter, range: std::ops::Range<usize>) -> u64 {
        self.changes[range]
            .iter()
            .filter(|c| filter.admits(c))
            .count() as u64
    }

    /// [`expected`](Workload::expected) for every filter at once, in one
    /// pass over `range` (not one per node: at 100,000 nodes that took
    /// longer than the run it prepared).
    pub fn expected_each(&self, filters: &[Filter], range: std::ops::Range<usize>) -> Vec<u64> {
        let changes = &self.changes[range];
        let mut per_node: ahash::AHashMap<u32, u64> = ahash::AHashMap::new();
        if filters.iter().any(|f| matches!(f, Filter::Node(_))) {
            for c in changes {
                *per_node.entry(c.node).or_default() += 1;
                if c.prev_node != c.node {
                    *per_node.entry(c.prev_node).or_default() += 1;
                }
            }
        }
        filters
            .iter()
            .map(|f| match f {
                Filter::All => changes.len() as u64,
                Filter::Node(n) => per_node.get(n).copied().unwrap_or(0),
            })
            .collect()
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_are_reflected_in_prev_node() {
        let w = Workload::build(Shape {
            pods: 50,
            nodes: 7,
            changes: 5_000,
            move_every: 3,
            payload: 16,
        });
        let mut at = w.initial.clone();
        let mut moved = 0;
        for (i, c) in w.changes.iter().enumerate() {
            assert_eq!(c.rv, Workload::FIRST_RV + i as u64);
            assert_eq!(c.prev_node, at[c.key as usize]);
            moved += usize::from(c.node != c.prev_node);
            at[c.key as usize] = c.node;
        }
        assert!(moved > 1_000, "about a third of the changes move: {moved}");
        let all = w.expected(&Filter::All, 0..w.changes.len());
        let per_node: u64 = (0..7).map(|n| w.expected(&Filter::Node(n), 0..5_000)).sum();
        let filters: Vec<Filter> = [Filter::All]
            .into_iter()
            .chain((0..7).map(Filter::Node))
            .collect();
        let each = w.expected_each(&filters, 0..5_000);
        for (f, got) in filters.iter().zip(&each) {
            assert_eq!(*got, w.expected(f, 0..5_000), "{f:?}");
        }
        assert_eq!(all, 5_000);
        assert_eq!(
            per_node,
            5_000 + moved as u64,
            "a move is seen by two nodes"
        );
    }
}
