//! The model itself: the writer, the history, the watches and what each
//! receive gives, as plain sequential code.

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::time::Duration;

use herald::engine::Lifecycle;
use herald::event::{ChangeKind, Gone, TooLargeResourceVersion};
use herald::watch::WatchError;
use herald::writer::WriteError;
use herald::{EndReason, EventKind, Object};

use super::filter::{Filter, verdict};
use super::seen::{Recv, Seen};
use super::spec::{Record, RecordKind, Start, State, WatchSpec, at_list, listed_state};

/// Where a watch stands.
#[derive(Debug, Clone)]
enum Phase {
    /// Registered; waiting for Ready and for its start version.
    Waiting,
    /// Activated by the dispatcher; begins at its first receive.
    Activated,
    /// Begun: the initial events still to hand out, then the stream from
    /// history position `cursor` on.
    Streaming {
        initial: VecDeque<Seen>,
        /// The next history position this watch has not passed.
        cursor: usize,
        /// The last version delivered (or the start), for `Gone`.
        last_rv: u64,
    },
}

/// One watch in the model.
#[derive(Debug, Clone)]
pub struct ModelWatch {
    /// Its filter.
    pub filter: Filter,
    /// Its start.
    pub start: Start,
    /// When it was created, on the clock.
    pub created: Duration,
    /// When it ends with `Deadline`, on the clock.
    pub deadline: Option<Duration>,
    /// The generation it was registered against: `None` before the first
    /// list (it begins on whichever generation the dispatcher admits it
    /// in), the current one while ready, the next one while pending after
    /// a list (it waits for that list).
    pub generation: Option<u64>,
    phase: Phase,
    /// Its end, once decided.
    pub end: Option<EndReason>,
    /// [`Allow::waiting_survives_relist`]: the engine may have ended it
    /// with Relisted (until it delivers an event).
    relist_ambiguous: bool,
    /// The End has been received.
    pub finished: bool,
}

/// The reference model. See the module docs.
#[derive(Debug, Clone)]
pub struct Model {
    /// Ring capacity `N` (fixed bounds, a power of two).
    history: usize,
    too_large_timeout: Duration,
    lifecycle: Lifecycle,
    generation: u64,
    rv: u64,
    /// key -> (object, version of its last change).
    store: State,
    /// Every position ever written, in order (the model never forgets, so
    /// it can tell what a watcher needed even after it left the ring).
    records: Vec<Record>,
    /// The first position after the last re-list marker.
    servable_from: usize,
    /// The version of the last (re)list.
    list_rv: u64,
    /// Per generation (index `g - 1`): the list's version and state.
    lists: Vec<(u64, State)>,
    /// The clock, as elapsed time since the engine was created.
    now: Duration,
    watches: Vec<ModelWatch>,
    /// Documented alternatives the harness may switch on (see
    /// [`Allow`]); all off by default.
    allow: Allow,
}

/// Outcomes the contract leaves open, which the model accepts by default
/// (`HERALD_MODEL_STRICT=early_gone,waiting_survives_relist` refuses the
/// named ones, to measure an engine change that would close them):
///
/// - `early_gone`: a replaying (or parked) watch whose next unread ring
///   position has been overwritten ends with `Gone`, even when the record
///   that was there would not have passed its filter. The watch cannot
///   know that without the record, and delivering past it could hide a
///   gap; the model is omniscient, the watch is not. (A parked watch could
///   skip to its first queued handle, since the dispatcher already judged
///   the positions before it; an improvement, not a correctness rule.)
/// - `served_past_window`: a replaying (or parked) watch whose next
///   change has left the logical window (so the model ends it with
///   `Gone`) may still be served that change, and those after it, while
///   the record physically survives: the ring is a power of two with one
///   chunk to spare, and a reader holding a chunk can read it after the
///   writer has replaced it. The records served are exactly the model's;
///   the watch ends with `Gone` once it reaches one that is really gone.
/// - `waiting_survives_relist`: a watch begun before the first list has
///   seen nothing of any generation; whether the dispatcher activates it
///   before or after a re-list marker is a race, and both outcomes keep
///   the invariant (it ends with `Relisted` or is served whole from the
///   new generation). A watch created while the engine is pending *after*
///   a list is not ambiguous: it is registered for the next generation by
///   number, so the dispatcher begins it on that list whichever it sees
///   first, and ends it on the one after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// `early_gone`: see [`Model::accept_early_gone`].
    pub early_gone: bool,
    /// `served_past_window`: see [`Model::accept_served_past_window`].
    pub served_past_window: bool,
    /// `waiting_survives_relist`: a watch begun before the first list that
    /// is still waiting for its start version when a re-list comes may
    /// either end with Relisted (docs/semantics.md §8: a re-list ends every
    /// watcher) or survive and be served from the new generation. The engine
    /// does either, depending on a race inside it (whether its dispatcher
    /// activates the watch, with the version the re-list reached, before or
    /// after it processes the re-list marker), so no harness can make it
    /// deterministic. See [`Model::accept_relisted`].
    pub waiting_survives_relist: bool,
}

impl Allow {
    /// Both open outcomes, minus those named in `HERALD_MODEL_STRICT`.
    pub fn from_env() -> Allow {
        let v = std::env::var("HERALD_MODEL_STRICT").unwrap_or_default();
        let strict = |name: &str| v.split(',').any(|s| s.trim() == name);
        Allow {
            early_gone: !strict("early_gone"),
            served_past_window: !strict("served_past_window"),
            waiting_survives_relist: !strict("waiting_survives_relist"),
        }
    }
}

impl Model {
    /// A model of an engine whose ring holds exactly `history` positions.
    pub fn new(history: usize, too_large_timeout: Duration) -> Model {
        assert!(history.is_power_of_two(), "fixed ring size");
        Model {
            history,
            too_large_timeout,
            lifecycle: Lifecycle::Pending,
            generation: 0,
            rv: 0,
            store: BTreeMap::new(),
            records: Vec::new(),
            servable_from: 0,
            list_rv: 0,
            lists: Vec::new(),
            now: Duration::ZERO,
            watches: Vec::new(),
            allow: Allow::default(),
        }
    }

    /// Accepts the given documented alternatives.
    pub fn with_allow(mut self, allow: Allow) -> Model {
        self.allow = allow;
        self
    }

    // ----- observers ------------------------------------------------------

    /// docs/semantics.md §8.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// docs/semantics.md §8: 0 before the first list, one more per list.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// docs/semantics.md §1.2: the version reached (changes and progress).
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// History positions written so far (changes and re-list markers).
    pub fn positions(&self) -> u64 {
        self.records.len() as u64
    }

    /// The clock.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// The current state (key -> object, version).
    pub fn state(&self) -> &State {
        &self.store
    }

    /// Every record written.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// A watch.
    pub fn watch_state(&self, id: usize) -> &ModelWatch {
        &self.watches[id]
    }

    /// Puts back a watch's state saved with [`Model::watch_state`] (to
    /// undo a receive the harness wants to judge differently).
    pub fn restore_watch(&mut self, id: usize, saved: ModelWatch) {
        self.watches[id] = saved;
    }

    /// How many watches ended with `Deadline` so far.
    pub fn deadline_ends(&self) -> u64 {
        self.watches
            .iter()
            .filter(|w| w.end == Some(EndReason::Deadline))
            .count() as u64
    }

    /// How many watches ended with `TooLargeResourceVersion` so far.
    pub fn too_large_ends(&self) -> u64 {
        self.watches
            .iter()
            .filter(|w| matches!(w.end, Some(EndReason::TooLargeResourceVersion(_))))
            .count() as u64
    }

    /// How many watches wait for a list or for their start version.
    pub fn waiting(&self) -> usize {
        self.watches
            .iter()
            .filter(|w| w.end.is_none() && matches!(w.phase, Phase::Waiting))
            .count()
    }

    fn head(&self) -> usize {
        self.records.len()
    }

    /// The oldest retained position (docs/semantics.md §2.1: the last `N`
    /// positions, none before the last re-list).
    fn tail(&self) -> usize {
        self.servable_from
            .max(self.head().saturating_sub(self.history))
    }

    /// Whether position `p` is still in the (physical) ring: it is until
    /// position `p + N` is written.
    fn in_ring(&self, p: usize) -> bool {
        p + self.history >= self.head()
    }

    /// docs/semantics.md §2.2: `oldest - 1`: the list's version while nothing
    /// was evicted since the last (re)list, else the oldest retained change's
    /// version minus one.
    pub fn oldest_minus_one(&self) -> u64 {
        let tail = self.tail();
        if tail == self.servable_from {
            self.list_rv
        } else {
            self.records[tail].rv - 1
        }
    }

    /// The first retained position whose version is above `rv`.
    fn first_after(&self, rv: u64) -> usize {
        (self.tail()..self.head())
            .find(|&p| self.records[p].rv > rv)
            .unwrap_or(self.head())
    }

    // ----- the writer (docs/semantics.md §1, §2, §8) ----------------------

    /// `Writer::apply`.
    pub fn apply(&mut self, kind: ChangeKind, object: Object, rv: u64) -> Result<(), WriteError> {
        // docs/semantics.md §8: the writer needs a listed, running engine.
        match self.lifecycle {
            Lifecycle::Pending => return Err(WriteError::NotReady),
            Lifecycle::Stopped => return Err(WriteError::Stopped),
            _ => {}
        }
        // docs/semantics.md §1.2: strictly increasing, else refused, nothing
        // changes.
        if rv <= self.rv {
            return Err(WriteError::OutOfOrder {
                given: rv.into(),
                current: self.rv.into(),
            });
        }
        let key = object.key().to_owned();
        let stored = self.store.get(&key).map(|(o, _)| o.clone());
        if kind == ChangeKind::Deleted && stored.is_none() {
            // A deletion of a key the cache never held: no watcher could
            // have seen it, so it is progress (no record, no event), as in
            // the reference (seeds/000 convertToWatchEvent).
            self.rv = rv;
            self.settle();
            return Ok(());
        }
        // docs/semantics.md §1.3: a deletion's prev_object is the last state.
        let prev = stored;
        self.records.push(Record {
            kind: RecordKind::Change(kind),
            rv,
            object: Some(object.clone()),
            prev,
            generation: self.generation,
        });
        if kind == ChangeKind::Deleted {
            self.store.remove(&key);
        } else {
            self.store.insert(key, (object, rv));
        }
        self.rv = rv;
        self.settle();
        Ok(())
    }

    /// `Writer::replace` of a `Relist::new`: a (re-)list, every object at
    /// the list's version.
    pub fn replace(&mut self, objects: Vec<Object>, rv: u64) -> Result<(), WriteError> {
        self.replace_items(at_list(objects, rv), rv)
    }

    /// `Writer::replace` of a `Relist::items`: a (re-)list, each object at
    /// its own version (the version of its last change, at most the
    /// list's).
    pub fn replace_items(&mut self, items: Vec<(Object, u64)>, rv: u64) -> Result<(), WriteError> {
        let store = listed_state(items, rv)?;
        match self.lifecycle {
            Lifecycle::Stopped => Err(WriteError::Stopped),
            // A re-list may keep the version but never go back, whether
            // the engine is ready or has fallen back to pending since its
            // last list.
            _ if self.generation > 0 && rv < self.rv => Err(WriteError::OutOfOrder {
                given: rv.into(),
                current: self.rv.into(),
            }),
            _ => {
                self.relist(store, rv);
                Ok(())
            }
        }
    }

    /// `Writer::replace` of a `Relist::new(..).after_regression()`: a
    /// re-list at a version below the
    /// engine's (the source went back); otherwise a re-list like any other
    /// (docs/semantics.md §14: a new generation, the window emptied, every
    /// watch ended with Relisted).
    pub fn replace_after_regression(
        &mut self,
        objects: Vec<Object>,
        rv: u64,
    ) -> Result<(), WriteError> {
        self.replace_items_after_regression(at_list(objects, rv), rv)
    }

    /// `Writer::replace` of a `Relist::items(..).after_regression()`: the
    /// same, each object at its own version.
    pub fn replace_items_after_regression(
        &mut self,
        items: Vec<(Object, u64)>,
        rv: u64,
    ) -> Result<(), WriteError> {
        let store = listed_state(items, rv)?;
        match self.lifecycle {
            Lifecycle::Stopped => Err(WriteError::Stopped),
            // Nothing listed to go back from (a fall back to pending after
            // a list does not count: the list is still there).
            _ if self.generation == 0 => Err(WriteError::NotReady),
            _ if rv >= self.rv => Err(WriteError::NotARegression {
                given: rv.into(),
                current: self.rv.into(),
            }),
            _ => {
                self.relist(store, rv);
                Ok(())
            }
        }
    }

    /// `Writer::mark_unready`: the writer lost its source. The engine
    /// falls back to Pending until the next list (a stopped one stays
    /// stopped): changes and progress are refused, new watches wait for
    /// the next list, running watches keep running (nothing new reaches
    /// them), and the dispatcher keeps expiring the deadlines and
    /// too-large waits of the watches registered before.
    pub fn mark_unready(&mut self) -> Result<(), WriteError> {
        if self.lifecycle == Lifecycle::Stopped {
            return Err(WriteError::Stopped);
        }
        self.lifecycle = Lifecycle::Pending;
        self.settle();
        Ok(())
    }

    fn relist(&mut self, store: State, rv: u64) {
        // Every list after the first is a re-list, whether the engine was
        // ready or had fallen back to pending.
        let relist = self.generation > 0;
        self.generation += 1;
        // docs/semantics.md §2.3: the marker takes a position and empties the
        // window.
        self.records.push(Record {
            kind: RecordKind::Relist,
            rv,
            object: None,
            prev: None,
            generation: self.generation,
        });
        self.servable_from = self.records.len();
        self.list_rv = rv;
        self.store = store;
        self.lists.push((rv, self.store.clone()));
        self.rv = rv;
        self.lifecycle = Lifecycle::Ready;
        if relist {
            // docs/semantics.md §8: a re-list ends every watcher with Relisted
            // (the first list only makes the engine ready), except those
            // created while the engine was pending after a list: they were
            // registered for this very list, and begin on it.
            let survives = self.allow.waiting_survives_relist;
            let generation = self.generation;
            for w in &mut self.watches {
                if w.end.is_some() || w.generation == Some(generation) {
                    continue;
                }
                let waiting_since_pending =
                    w.generation.is_none() && matches!(w.phase, Phase::Waiting);
                if survives && waiting_since_pending {
                    w.relist_ambiguous = true;
                } else {
                    w.end = Some(EndReason::Relisted);
                }
            }
        }
        self.settle();
    }

    /// `Writer::progress`.
    pub fn progress(&mut self, rv: u64) -> Result<(), WriteError> {
        match self.lifecycle {
            Lifecycle::Pending => return Err(WriteError::NotReady),
            Lifecycle::Stopped => return Err(WriteError::Stopped),
            _ => {}
        }
        if rv < self.rv {
            return Err(WriteError::OutOfOrder {
                given: rv.into(),
                current: self.rv.into(),
            });
        }
        // docs/semantics.md §1.2, §2.1: progress advances the version, takes no
        // position.
        self.rv = rv;
        self.settle();
        Ok(())
    }

    /// Moves the clock.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        self.settle();
    }

    /// `Engine::stop` (final, idempotent): every watch not ended yet ends
    /// with EngineStopped (docs/semantics.md §3.7, §8).
    pub fn stop_engine(&mut self) {
        self.lifecycle = Lifecycle::Stopped;
        for w in &mut self.watches {
            if w.end.is_none() {
                w.end = Some(EndReason::EngineStopped);
            }
        }
    }

    // ----- watches (docs/semantics.md §3) ---------------------------------

    /// `Engine::watch`: the watch's id, or the error the call returns.
    pub fn watch(&mut self, spec: &WatchSpec) -> Result<usize, WatchError> {
        // The options are checked before anything else, even on a stopped
        // engine.
        let mut start = spec.start()?;
        if self.lifecycle == Lifecycle::Stopped {
            return Err(WatchError::EngineStopped);
        }
        if self.lifecycle == Lifecycle::Ready {
            // "Changes from now" are the changes after the version the
            // cache has when the watch is created (while Pending, when it
            // begins).
            if start == Start::Now {
                start = Start::After(self.rv);
            }
            // docs/semantics.md §2.2: a watch from below `oldest - 1` is Gone
            // (known at once when the engine is listed).
            if let Start::After(r) = start {
                let oldest = self.oldest_minus_one();
                if r < oldest {
                    return Err(WatchError::Gone(Gone::new(r.into(), oldest.into())));
                }
            }
        }
        // docs/semantics.md §8: created before the first list, a watch begins
        // on it; created while the engine is pending after a list (it lost its
        // source), on the next list, rather than on a stale cache.
        let generation = match self.lifecycle {
            Lifecycle::Ready => Some(self.generation),
            _ => (self.generation > 0).then_some(self.generation + 1),
        };
        self.watches.push(ModelWatch {
            filter: spec.filter.clone(),
            start,
            created: self.now,
            deadline: spec.timeout.map(|t| self.now + t),
            generation,
            phase: Phase::Waiting,
            end: None,
            relist_ambiguous: false,
            finished: false,
        });
        self.settle();
        Ok(self.watches.len() - 1)
    }

    /// `Watch::stop`: ends the watch with Stopped unless it has ended.
    pub fn stop_watch(&mut self, id: usize) {
        let w = &mut self.watches[id];
        if w.end.is_none() {
            w.end = Some(EndReason::Stopped);
        }
    }

    /// What the dispatcher does with the time and versions as they are now:
    /// waiting watches start or time out (docs/semantics.md §3.2), then
    /// deadlines pass.
    fn settle(&mut self) {
        if self.lifecycle == Lifecycle::Stopped {
            return;
        }
        for w in &mut self.watches {
            if w.end.is_some() || !matches!(w.phase, Phase::Waiting) {
                continue;
            }
            // Waiting for a list: the first (registered before it), or the
            // next (registered while pending after a list). No version is
            // awaited yet, so no too-large timeout runs.
            let awaits_list = match w.generation {
                None => self.generation == 0,
                Some(g) => g > self.generation,
            };
            if awaits_list {
                continue;
            }
            debug_assert!(w.generation.is_none_or(|g| g == self.generation));
            let need = w.start.wait_for();
            if need > self.rv {
                // docs/semantics.md §3.2: R above the current version waits,
                // then fails with TooLargeResourceVersion (counted from the
                // watch's creation; also while the engine is pending after a
                // list, for the watches registered before).
                if self.now - w.created >= self.too_large_timeout {
                    w.end = Some(EndReason::TooLargeResourceVersion(
                        TooLargeResourceVersion::new(need.into(), self.rv.into()),
                    ));
                }
            } else {
                w.phase = Phase::Activated;
            }
        }
        // docs/semantics.md §3.1: the optional deadline.
        for w in &mut self.watches {
            if w.end.is_none() && w.deadline.is_some_and(|d| d <= self.now) {
                w.end = Some(EndReason::Deadline);
            }
        }
    }

    /// The watch's first receive after activation: the snapshot, or the
    /// start version checked against the window once more.
    fn begin(&mut self, id: usize) {
        let head = self.head();
        let oldest = self.oldest_minus_one();
        let (start, filter) = (self.watches[id].start, self.watches[id].filter.clone());
        let phase = match start {
            Start::Snapshot {
                initial_events_end, ..
            } => {
                // docs/semantics.md §3.2, §11.1: the state, in key order, each
                // object as Added at its own version; then the
                // initial-events-end bookmark at the state's version.
                let mut initial: VecDeque<Seen> = self
                    .store
                    .values()
                    .filter(|(o, _)| filter.admits(o))
                    .map(|(o, rv)| Seen::object_event(EventKind::Added, *rv, o))
                    .collect();
                if initial_events_end {
                    initial.push_back(Seen::initial_events_end(self.rv));
                }
                Phase::Streaming {
                    initial,
                    cursor: head,
                    last_rv: self.rv,
                }
            }
            // Created while Pending: the changes after the version the
            // cache has now (the ring's head).
            Start::Now => Phase::Streaming {
                initial: VecDeque::new(),
                cursor: head,
                last_rv: self.rv,
            },
            Start::After(r) => {
                // docs/semantics.md §2.2: below `oldest - 1` is Gone.
                if r < oldest {
                    self.watches[id].end =
                        Some(EndReason::Gone(Gone::new(r.into(), oldest.into())));
                    return;
                }
                Phase::Streaming {
                    initial: VecDeque::new(),
                    cursor: self.first_after(r),
                    last_rv: r,
                }
            }
        };
        self.watches[id].phase = phase;
    }

    /// The next history position at or after `from` whose change the
    /// watch's filter has a verdict on, with that verdict.
    fn next_needed(&self, filter: &Filter, from: usize) -> Option<(usize, Seen)> {
        for p in from..self.head() {
            let r = &self.records[p];
            let RecordKind::Change(kind) = r.kind else {
                // Unreachable in practice: a re-list ends every watch.
                return None;
            };
            let obj = r.object.as_ref().expect("a change has an object");
            if let Some((k, shown)) = verdict(filter, kind, obj, r.prev.as_ref()) {
                return Some((p, Seen::object_event(k, r.rv, shown)));
            }
        }
        None
    }

    /// `Watch::try_recv`: the next item the watch hands out now.
    pub fn recv(&mut self, id: usize) -> Recv {
        if self.watches[id].finished {
            return Recv::Finished;
        }
        // docs/semantics.md §3.7: an end takes effect at once.
        if let Some(reason) = self.watches[id].end.clone() {
            self.watches[id].finished = true;
            return Recv::End(reason);
        }
        match self.watches[id].phase {
            Phase::Waiting => return Recv::Empty,
            Phase::Activated => {
                self.begin(id);
                if let Some(reason) = self.watches[id].end.clone() {
                    self.watches[id].finished = true;
                    return Recv::End(reason);
                }
            }
            Phase::Streaming { .. } => {}
        }
        let oldest = self.oldest_minus_one();
        let filter = self.watches[id].filter.clone();
        let (cursor, last_rv) = match &mut self.watches[id].phase {
            Phase::Streaming {
                initial,
                cursor,
                last_rv,
            } => {
                if let Some(s) = initial.pop_front() {
                    self.watches[id].relist_ambiguous = false;
                    return Recv::Event(s);
                }
                (*cursor, *last_rv)
            }
            _ => unreachable!("begun above"),
        };
        let Some((p, seen)) = self.next_needed(&filter, cursor) else {
            return Recv::Empty;
        };
        if !self.in_ring(p) {
            // docs/semantics.md §5.3: the next change it needs has left the
            // ring.
            let gone = EndReason::Gone(Gone::new(last_rv.into(), oldest.into()));
            self.watches[id].end = Some(gone.clone());
            self.watches[id].finished = true;
            return Recv::End(gone);
        }
        if let Phase::Streaming {
            cursor, last_rv, ..
        } = &mut self.watches[id].phase
        {
            *cursor = p + 1;
            *last_rv = seen.rv;
        }
        self.watches[id].relist_ambiguous = false;
        Recv::Event(seen)
    }

    /// A documented alternative the harnesses may accept (off by default):
    /// the engine ended the watch with `gone` where the model would deliver
    /// the next change it needs, because the engine's catch-up reads every
    /// position after the last one it delivered, and the position right
    /// after that one has left the ring although the change the watch
    /// needs has not. Accepts it (and ends the watch in the model) only if
    /// the watch is streaming, `gone` carries its last delivered version
    /// and the current `oldest - 1`, and that position has really left the
    /// ring.
    pub fn accept_early_gone(&mut self, id: usize, gone: &Gone) -> bool {
        if !self.allow.early_gone {
            return false;
        }
        let oldest = self.oldest_minus_one();
        let head = self.head();
        let Phase::Streaming {
            initial,
            cursor,
            last_rv,
        } = &self.watches[id].phase
        else {
            return false;
        };
        let ok = initial.is_empty()
            && *cursor < head
            && !self.in_ring(*cursor)
            && gone.requested().get() == *last_rv
            && gone.oldest_servable().get() == oldest;
        if ok {
            self.watches[id].end = Some(EndReason::Gone(*gone));
            self.watches[id].finished = true;
        }
        ok
    }

    /// [`Allow::served_past_window`]: the engine delivered `got` where the
    /// model ends the watch with `Gone` because the change it needs next
    /// has left the logical window. Accepts it (and advances the watch) if
    /// `got` is exactly that change as the watch may see it.
    pub fn accept_served_past_window(&mut self, id: usize, got: &Recv) -> bool {
        if !self.allow.served_past_window {
            return false;
        }
        let filter = self.watches[id].filter.clone();
        let Phase::Streaming {
            initial, cursor, ..
        } = &self.watches[id].phase
        else {
            return false;
        };
        if !initial.is_empty() {
            return false;
        }
        let Some((p, seen)) = self.next_needed(&filter, *cursor) else {
            return false;
        };
        if self.in_ring(p) || Recv::Event(seen.clone()) != *got {
            return false;
        }
        if let Phase::Streaming {
            cursor, last_rv, ..
        } = &mut self.watches[id].phase
        {
            *cursor = p + 1;
            *last_rv = seen.rv;
        }
        self.watches[id].relist_ambiguous = false;
        true
    }

    /// [`Allow::waiting_survives_relist`]: the engine ended with Relisted a
    /// watch that was waiting (since before the first list) when a re-list
    /// came, and has delivered nothing since; accepts it (and ends the watch
    /// in the model).
    pub fn accept_relisted(&mut self, id: usize) -> bool {
        let w = &mut self.watches[id];
        if !self.allow.waiting_survives_relist || !w.relist_ambiguous || w.finished {
            return false;
        }
        w.end = Some(EndReason::Relisted);
        w.finished = true;
        true
    }

    // ----- whole views, for checks that cannot be exact -------------------

    /// Every event of generation `generation` a watcher with `filter` sees
    /// after version `after`, ignoring the ring's size.
    pub fn view_after(&self, filter: &Filter, generation: u64, after: u64) -> Vec<Seen> {
        self.records
            .iter()
            .filter(|r| r.generation == generation && r.rv > after)
            .filter_map(|r| {
                let RecordKind::Change(kind) = r.kind else {
                    return None;
                };
                let obj = r.object.as_ref()?;
                let (k, shown) = verdict(filter, kind, obj, r.prev.as_ref())?;
                Some(Seen::object_event(k, r.rv, shown))
            })
            .collect()
    }

    /// The state of generation `generation` at version `at`.
    pub fn state_at(&self, generation: u64, at: u64) -> State {
        let mut state = self.lists[(generation - 1) as usize].1.clone();
        for r in &self.records {
            if r.generation != generation || r.rv > at {
                continue;
            }
            let (RecordKind::Change(kind), Some(o)) = (&r.kind, &r.object) else {
                continue;
            };
            if *kind == ChangeKind::Deleted {
                state.remove(o.key());
            } else {
                state.insert(o.key().to_owned(), (o.clone(), r.rv));
            }
        }
        state
    }

    /// What a snapshot watch of generation `generation` that began at
    /// version `at` sees in all: the initial events, the
    /// initial-events-end bookmark if asked, then every later change.
    pub fn snapshot_view(
        &self,
        filter: &Filter,
        generation: u64,
        at: u64,
        initial_events_end: bool,
    ) -> Vec<Seen> {
        let mut out: Vec<Seen> = self
            .state_at(generation, at)
            .values()
            .filter(|(o, _)| filter.admits(o))
            .map(|(o, rv)| Seen::object_event(EventKind::Added, *rv, o))
            .collect();
        if initial_events_end {
            out.push(Seen::initial_events_end(at));
        }
        out.extend(self.view_after(filter, generation, at));
        out
    }
}
