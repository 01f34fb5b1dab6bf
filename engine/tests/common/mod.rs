//! Shared test support: a deterministic workload generator and a plain,
//! sequential model of the watch semantics (docs/semantics.md §1 and §3),
//! written independently of the engine: vectors and maps, no concurrency.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use herald::event::ChangeKind;
use herald::selector::{FieldSelector, KeyScope, LabelSelector};
use herald::watch::RecvTimeoutError;
use herald::*;
use herald_testkit::pod;

/// splitmix64: a tiny deterministic generator, so failures reproduce.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

pub const APPS: [&str; 4] = ["web", "api", "db", "cache"];
pub const TIERS: [&str; 3] = ["a", "b", "c"];

pub fn node(i: u64) -> String {
    format!("node-{i}")
}

/// A stream of changes with strictly increasing resource versions (with
/// gaps, as etcd's revisions have) over `keys` keys in `namespaces`
/// namespaces, moving objects between labels and nodes.
pub fn workload(
    rng: &mut Rng,
    start_rv: u64,
    n: usize,
    keys: u64,
    namespaces: u64,
    nodes: u64,
    live: &mut BTreeMap<String, Object>,
) -> Vec<Change> {
    let mut out = Vec::with_capacity(n);
    let mut rv = start_rv;
    for i in 0..n {
        rv += 1 + rng.below(3);
        let k = rng.below(keys);
        let ns = format!("ns-{}", k % namespaces);
        let name = format!("pod-{k}");
        let key = format!("{ns}/{name}");
        let obj = pod(&ns, &name)
            .app(rng.pick::<&str>(&APPS))
            .label("tier", rng.pick::<&str>(&TIERS))
            .node(&node(rng.below(nodes)))
            .version(i as u64)
            .build();
        let change = match live.get(&key) {
            None => {
                live.insert(key, obj.clone());
                Change::added(obj, rv.into())
            }
            Some(old) if rng.below(5) == 0 => {
                let old = old.clone();
                live.remove(&key);
                Change::deleted(old, rv.into())
            }
            Some(_) => {
                live.insert(key, obj.clone());
                Change::modified(obj, rv.into())
            }
        };
        out.push(change);
    }
    out
}

/// What the model says a watcher sees: the reference model's own type.
pub use herald_testkit::model::Seen;

/// A watcher's filter, evaluated by the model on its own terms.
#[derive(Debug, Clone)]
pub struct ModelFilter {
    pub scope: KeyScope,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl ModelFilter {
    pub fn everything() -> ModelFilter {
        ModelFilter {
            scope: KeyScope::All,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
        }
    }

    /// A filter of `scope` and two selectors (panics on a malformed one:
    /// the tests' own strings).
    pub fn parse(scope: KeyScope, labels: &str, fields: &str) -> ModelFilter {
        ModelFilter {
            scope,
            labels: labels.parse().unwrap(),
            fields: fields.parse().unwrap(),
        }
    }

    pub fn admits(&self, o: &Object) -> bool {
        let in_scope = match &self.scope {
            KeyScope::All => true,
            KeyScope::Exact(k) => o.key() == &**k,
            KeyScope::Prefix(p) => o.key().starts_with(&format!("{p}/")),
            _ => unreachable!(),
        };
        in_scope && self.labels.matches(|k| o.label(k)) && self.fields.matches(|f| o.field(f))
    }

    pub fn request(&self) -> WatchRequest {
        WatchRequest::new()
            .scope(self.scope.clone())
            .labels(self.labels.clone())
            .fields(self.fields.clone())
    }
}

/// docs/semantics.md §3.5, written out plainly: what a watcher with `f` is told
/// of a change, and which object it is shown.
pub fn verdict<'a>(
    f: &ModelFilter,
    kind: ChangeKind,
    obj: &'a Object,
    prev: Option<&'a Object>,
) -> Option<(EventKind, &'a Object)> {
    let cur = kind != ChangeKind::Deleted && f.admits(obj);
    let old = prev.is_some_and(|p| f.admits(p));
    match (cur, old) {
        (true, false) => Some((EventKind::Added, obj)),
        (true, true) => Some((EventKind::Modified, obj)),
        (false, true) => prev.map(|p| (EventKind::Deleted, p)),
        (false, false) => None,
    }
}

/// The sequential model: the state after every change, and what each
/// change looks like through a filter.
#[derive(Debug)]
pub struct Model {
    /// (list rv, listed objects).
    pub base_rv: u64,
    pub base: BTreeMap<String, Object>,
    /// (kind, rv, object, prev).
    pub changes: Vec<(ChangeKind, u64, Object, Option<Object>)>,
}

impl Model {
    pub fn new(base_rv: u64, base: &[Object], changes: &[Change]) -> Model {
        let mut state: BTreeMap<String, Object> = base
            .iter()
            .map(|o| (o.key().to_owned(), o.clone()))
            .collect();
        let base_map = state.clone();
        let mut out = Vec::with_capacity(changes.len());
        for c in changes {
            let key = c.object().key().to_owned();
            let prev = state.get(&key).cloned();
            match c.kind() {
                ChangeKind::Deleted => {
                    state.remove(&key);
                    // A key never held: progress, no event (the engine's
                    // rule; `verdict` with no prev says nothing).
                    out.push((
                        c.kind(),
                        c.resource_version().get(),
                        c.object().clone(),
                        prev,
                    ));
                }
                _ => {
                    state.insert(key, c.object().clone());
                    out.push((
                        c.kind(),
                        c.resource_version().get(),
                        c.object().clone(),
                        prev,
                    ));
                }
            }
        }
        Model {
            base_rv,
            base: base_map,
            changes: out,
        }
    }

    /// The events a watcher with `f` sees for the changes after `after`.
    pub fn changes_after(&self, f: &ModelFilter, after: u64) -> Vec<Seen> {
        let first = self.changes.partition_point(|c| c.1 <= after);
        self.changes[first..]
            .iter()
            .filter_map(|(kind, rv, obj, prev)| {
                let (k, o) = verdict(f, *kind, obj, prev.as_ref())?;
                Some(Seen {
                    kind: k,
                    rv: *rv,
                    key: o.key().to_owned(),
                    object: Some(o.clone()),
                    initial_events_end: false,
                })
            })
            .collect()
    }

    /// The state at `rv`, as (key -> (object, rv of its last change)).
    pub fn state_at(&self, rv: u64) -> BTreeMap<String, (Object, u64)> {
        let mut state: BTreeMap<String, (Object, u64)> = self
            .base
            .iter()
            .map(|(k, o)| (k.clone(), (o.clone(), self.base_rv)))
            .collect();
        for (kind, crv, obj, _) in &self.changes {
            if *crv > rv {
                break;
            }
            if *kind == ChangeKind::Deleted {
                state.remove(obj.key());
            } else {
                state.insert(obj.key().to_owned(), (obj.clone(), *crv));
            }
        }
        state
    }
}

/// Receives until `n` events have arrived (or the watch ends), with a
/// generous liveness limit so a bug fails the test instead of hanging it.
pub fn recv_events(w: &mut Watch, n: usize) -> (Vec<Seen>, Option<EndReason>) {
    let limit = Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    while out.len() < n {
        let left = limit.saturating_duration_since(Instant::now());
        match w.recv_timeout(left) {
            Ok(WatchItem::Event(ev)) => out.push(Seen::from_event(&ev)),
            Ok(WatchItem::End(r)) => return (out, Some(r)),
            Err(e) => panic!(
                "no item within the liveness limit after {} events: {e}",
                out.len()
            ),
        }
    }
    (out, None)
}

/// Receives until the watch ends; returns the events and the end.
pub fn recv_to_end(w: &mut Watch) -> (Vec<Seen>, EndReason) {
    let (evs, end) = recv_events(w, usize::MAX);
    (evs, end.expect("recv_events only returns early on an end"))
}

/// Asserts that nothing is ready and nothing arrives for a moment (used
/// only where the expected state is "nothing"; a late arrival fails).
pub fn assert_quiet(w: &mut Watch) {
    match w.recv_timeout(Duration::from_millis(50)) {
        Err(RecvTimeoutError::Timeout) => {}
        other => panic!("expected nothing, got {other:?}"),
    }
}
