//! The state every thread of an engine shares ([`Shared`]), and the few
//! operations each of them performs on it: the writer's locked write and
//! its wait for the dispatcher, the control channel to the dispatcher, the
//! lifecycle, the readers' published view. Everything above it (the
//! facade, the dispatcher, the watches, the reads) uses it; it uses
//! nothing above it.
//!
//! # Synchronization
//!
//! - The writer's state (the store, the ring's bookkeeping, the current
//!   resource version and generation) lives in one `Mutex`, held for O(1) or
//!   O(log n) work per change. Besides the writer, only watches resolving
//!   their start (a snapshot clone or a binary search) and the dispatcher's
//!   maintenance tick (with `try_lock`) take it. Replays and live delivery
//!   never do.
//! - The writer waits only for the dispatcher, and only when the ring is at
//!   its upper bound and the slot it needs holds an undispatched change; it
//!   waits without holding the lock (`Shared::wait_for_dispatcher`: a
//!   Dekker pair of `SeqCst` fences with the dispatcher's
//!   `wake_writer_if_waiting`).
//! - Registrations, removals and resumes reach the dispatcher through one
//!   small mutex-protected queue (they are rare next to changes), with a
//!   flag the dispatcher polls once per loop (`Shared::send_control`).
//! - Readers find the last published [`View`] through an `ArcSwap`; the
//!   writer publishes one under its lock when a reader asked for it (see
//!   `read/`).

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::WriteError;
use crate::ring::{Gated, NewRecord, Record, Resize, Ring, RingWriter, Sizing};
use crate::rv::ResourceVersion;
use crate::source::{SourceError, Upstream, UpstreamError};
use crate::stats::Counters;
use crate::store::State;
use crate::sync::{
    Arc, ArcSwap, AtomicBool, AtomicU8, AtomicU64, CachePadded, Mutex, MutexGuard, OnceLock,
    Ordering, Thread, fence, park_timeout,
};
use crate::watcher::WatcherShared;

/// Where the engine is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Before the first `replace` (the initial list), or since the writer
    /// lost its source ([`Writer::mark_unready`](crate::Writer::mark_unready))
    /// until the next one. New watches wait; reads that need a fresh cache
    /// fail with [`ReadError::NotReady`](crate::read::ReadError::NotReady).
    Pending,
    /// Serving.
    Ready,
    /// Stopped; final.
    Stopped,
}

const PENDING: u8 = 0;
const READY: u8 = 1;
const STOPPED: u8 = 2;

/// What only the writer changes, under `Shared::state`.
#[derive(Debug)]
pub(crate) struct WriterState {
    pub(crate) ring: RingWriter,
    /// key -> (object, the resource version of its last change), and the
    /// field indexes.
    pub(crate) store: State,
    /// Changes since the last published view.
    pub(crate) since_view: u32,
    pub(crate) rv: ResourceVersion,
    pub(crate) generation: u64,
}

/// Registrations, removals and resumes on their way to the dispatcher, in
/// the order they were made (a watch's removal never overtakes its
/// registration).
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub(crate) requests: Vec<Request>,
    /// Set by the dispatcher when it exits: nothing more will be served.
    pub(crate) closed: bool,
}

/// Why one write attempt did not go through.
pub(crate) enum Attempt {
    /// Refused for good: the error goes back to the caller.
    Refused(WriteError),
    /// The ring has no free slot yet: wait for the dispatcher and retry.
    Gated(Gated),
}

/// What one change under the writer lock did (see `Writer`'s
/// `apply_locked`): the ring's resize, if any, and whether it wrote a
/// history record (a deletion of a key never held writes none).
pub(crate) struct Written {
    pub(crate) resize: Option<Resize>,
    pub(crate) recorded: bool,
}

/// The most changes [`Shared::write_many`] applies under one lock (and
/// one clock reading): a run of 64 holds the lock some tens of
/// microseconds, so readers and watch registrations wait no longer.
pub(crate) const WRITE_RUN: usize = 64;

impl From<WriteError> for Attempt {
    fn from(e: WriteError) -> Self {
        Attempt::Refused(e)
    }
}

impl From<Gated> for Attempt {
    fn from(g: Gated) -> Self {
        Attempt::Gated(g)
    }
}

/// A request to the dispatcher (`Shared::control`).
#[derive(Debug)]
pub(crate) enum Request {
    /// A new watch ([`Engine::watch`](crate::Engine::watch)).
    Register(Arc<WatcherShared>),
    /// A watch that has ended: forget it.
    Unregister(Arc<WatcherShared>),
    /// A parked watcher has caught up with the ring: feed it again.
    Resume(Arc<WatcherShared>),
    /// End every watch open now after what it was sent
    /// ([`Engine::drain`](crate::Engine::drain)).
    Drain,
}

/// A reader asks the writer for a fresh [`View`] when the one it found is
/// more than this many records behind; the writer publishes one once this
/// many changes have passed since its last.
pub(crate) const VIEW_EVERY: u32 = 32;

/// A state as the writer published it, for readers (`read/`).
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub(crate) state: State,
    /// The version of the last change applied to `state` (the list's at a
    /// re-list).
    pub(crate) rv: ResourceVersion,
    /// The ring position after the last record `state` reflects.
    pub(crate) pos: u64,
    pub(crate) generation: u64,
}

/// A random id for a new engine, for its continue tokens. Random, not a
/// counter: an engine in another process, or in this one after a restart,
/// must not share it. `RandomState` draws its SipHash keys from the
/// operating system once per thread and steps them for each new state, so
/// two engines hash `0` to different values whatever thread makes them.
fn engine_id() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u64)
}

/// Everything the engine's threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) ring: Arc<Ring>,
    pub(crate) state: Mutex<WriterState>,
    /// `PENDING`, `READY` or `STOPPED`. Written only under `state`'s lock;
    /// read with `Acquire` (pairs with the `Release` stores) by callers
    /// outside the lock, which want it ordered with the state it announces.
    lifecycle: AtomicU8,
    /// The writer's resource version (changes and progress), for waits and
    /// `Engine::resource_version`. Written under `state`'s lock with
    /// `Release`; read with `Acquire`. The dispatcher only compares it with
    /// the versions watches wait for; the start itself is resolved under
    /// the lock, so a stale read only delays an activation by one loop.
    pub(crate) current_rv: AtomicU64,
    /// Positions below this have been fanned out by the dispatcher (its
    /// `Release` store after the batch pairs with the writer's `Acquire`
    /// load before it reuses a slot).
    pub(crate) dispatched: CachePadded<AtomicU64>,
    pub(crate) dispatcher: OnceLock<Thread>,
    /// The writer waits for the dispatcher: set by the writer before it
    /// re-checks `dispatched`, cleared by whoever wakes it; each side
    /// fences between its store and its load (see `wait_for_dispatcher`).
    writer_waiting: AtomicBool,
    writer_thread: Mutex<Option<Thread>>,
    pub(crate) control: Mutex<Control>,
    /// Set (`Release`) after a request is queued under `control`'s lock;
    /// the dispatcher swaps it (`Acquire`) once per loop and then takes the
    /// lock, which orders the lists themselves.
    pub(crate) control_pending: AtomicBool,
    /// Set once by `stop` (`Release`, after the lifecycle store); read with
    /// `Acquire` by the dispatcher and by waiting writers.
    pub(crate) stop_requested: AtomicBool,
    /// The trigger indexes' fields (`Config::index`), by index number: a
    /// watch's route names one (`WatchRequest::resolve`), the
    /// dispatcher's routes (`index.rs`) are keyed by them.
    pub(crate) index_fields: std::sync::Arc<[Box<str>]>,
    /// The list indexes' fields (`Config::list_index`).
    pub(crate) list_fields: std::sync::Arc<[Box<str>]>,
    /// The state as last published, for readers (see `read/`).
    pub(crate) view: ArcSwap<View>,
    /// A reader found the view stale: the writer publishes at its next
    /// change (`Relaxed`: a missed or late request costs only a replay).
    pub(crate) view_wanted: AtomicBool,
    pub(crate) counters: Counters,
    /// Watcher ids: unique is all that matters, so `Relaxed`.
    next_id: AtomicU64,
    /// When the engine was created, on its clock: time zero for the
    /// latency stamps and the dispatcher's tick, wheel and budget.
    pub(crate) epoch: Instant,
    /// Why the dispatcher failed (its panic's message), set once before
    /// the engine stops; see [`Engine::failure`].
    pub(crate) failure: OnceLock<String>,
    /// This engine's random id, carried by its continue tokens so it
    /// refuses another engine's (`read/`).
    pub(crate) engine_id: u64,
    /// Reads waiting for a version the cache has not reached (`read/`).
    /// `Relaxed`: a demand signal, read by a reflector once per poll; a
    /// late read costs one poll of delay, never a lost wait (the waiter
    /// keeps waiting until its timeout).
    read_waiters: AtomicU64,
    /// Watches waiting for a version the cache has not reached (set by
    /// the dispatcher once per loop). `Relaxed`, as `read_waiters`.
    pub(crate) watch_waiters: AtomicU64,
    /// Why the engine fell back to `Pending` after a list (the source's
    /// last error; `Writer::mark_unready`), cleared by the next list.
    /// Written under `state`'s lock, with the lifecycle.
    unready: Mutex<Option<SourceError>>,
    /// The source behind the engine, while a reflector drives it.
    upstream: Mutex<Option<std::sync::Weak<dyn Upstream>>>,
}

/// A read counted as waiting for a version while it lives
/// ([`Shared::waiting_read`]).
pub(crate) struct WaitingRead<'a>(&'a Shared);

impl Drop for WaitingRead<'_> {
    fn drop(&mut self) {
        self.0.read_waiters.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// The shared state of a new engine (its configuration validated): an
    /// empty ring at the lower bound, an empty store, `Pending`.
    pub(crate) fn new(config: Config) -> Shared {
        let epoch = config.clock.now();
        let (ring_writer, ring) = RingWriter::new(Sizing {
            lower: config.history_lower,
            upper: config.history_upper(),
            window: config.history_window,
            max_bytes: config.history_max_bytes,
            epoch,
        });
        let index_fields: std::sync::Arc<[Box<str>]> =
            config.indexes.iter().map(|f| f.as_str().into()).collect();
        let list_fields: std::sync::Arc<[Box<str>]> = config
            .list_indexes
            .iter()
            .map(|f| f.as_str().into())
            .collect();
        let counters = Counters::default();
        Counters::set(&counters.ring_capacity, ring_writer.capacity() as u64);
        Shared {
            ring,
            state: Mutex::new(WriterState {
                ring: ring_writer,
                store: State::new(list_fields.clone()),
                since_view: 0,
                rv: ResourceVersion::ZERO,
                generation: 0,
            }),
            lifecycle: AtomicU8::new(PENDING),
            current_rv: AtomicU64::new(0),
            dispatched: CachePadded::new(AtomicU64::new(0)),
            dispatcher: OnceLock::new(),
            writer_waiting: AtomicBool::new(false),
            writer_thread: Mutex::new(None),
            control: Mutex::new(Control::default()),
            control_pending: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            view: ArcSwap::from_pointee(View {
                state: State::new(list_fields.clone()),
                rv: ResourceVersion::ZERO,
                pos: 0,
                generation: 0,
            }),
            view_wanted: AtomicBool::new(false),
            index_fields,
            list_fields,
            counters,
            next_id: AtomicU64::new(0),
            epoch,
            failure: OnceLock::new(),
            engine_id: engine_id(),
            read_waiters: AtomicU64::new(0),
            watch_waiters: AtomicU64::new(0),
            unready: Mutex::new(None),
            upstream: Mutex::new(None),
            config,
        }
    }

    /// Counts a read as waiting for a version until the guard drops.
    pub(crate) fn waiting_read(&self) -> WaitingRead<'_> {
        self.read_waiters.fetch_add(1, Ordering::Relaxed);
        WaitingRead(self)
    }

    /// Whether a read or a watch waits for a version the cache has not
    /// reached: a reflector then asks its source for progress, so that
    /// the wait ends as soon as the source has moved on, even through
    /// writes the cache never sees (other resources).
    pub(crate) fn wants_progress(&self) -> bool {
        self.read_waiters.load(Ordering::Relaxed) > 0
            || self.watch_waiters.load(Ordering::Relaxed) > 0
    }

    /// A new watcher's id (unique is all that matters, so `Relaxed`).
    pub(crate) fn next_watcher_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, WriterState> {
        // A panic while holding the lock leaves consistent state behind
        // (every mutation completes before the guard drops), so poisoning
        // carries no information here.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn lock_control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer's calls need a listed, running engine. Call with the
    /// writer lock held (lifecycle changes happen under it).
    pub(crate) fn check_ready(&self) -> Result<(), WriteError> {
        match self.lifecycle.load(Ordering::Acquire) {
            READY => Ok(()),
            PENDING => Err(WriteError::NotReady),
            _ => Err(WriteError::Stopped),
        }
    }

    pub(crate) fn wake_dispatcher(&self) {
        if let Some(t) = self.dispatcher.get() {
            t.unpark();
        }
    }

    /// Dispatcher (after advancing `dispatched`) and `stop` (after
    /// `stop_requested`): wakes a writer waiting for either.
    pub(crate) fn wake_writer_if_waiting(&self) {
        // SeqCst fence: orders the caller's store before the flag's load;
        // pairs with the fence in `wait_for_dispatcher` (Dekker): either
        // the writer sees the store or this sees the flag. One fence per
        // batch of up to 256 changes.
        fence(Ordering::SeqCst);
        if self.writer_waiting.load(Ordering::Relaxed)
            && self.writer_waiting.swap(false, Ordering::Relaxed)
        {
            if let Some(t) = self
                .writer_thread
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                t.unpark();
            }
        }
    }

    /// Nanoseconds since the engine's epoch, plus one (a stamp; 0 means
    /// none).
    pub(crate) fn stamp(&self, at: Instant) -> u64 {
        let ns = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(ns).unwrap_or(u64::MAX - 1) + 1
    }

    /// A watch received `rec` from its queue: samples enqueued -> received.
    pub(crate) fn record_received(&self, rec: &Record) {
        // Relaxed: written before the push whose pop ordered it.
        let enqueued = rec.enqueued.load(Ordering::Relaxed);
        if enqueued != 0 {
            let now = self.stamp(self.config.clock.now());
            self.counters
                .enqueued_to_received
                .record(now.saturating_sub(enqueued));
        }
    }

    /// Publishes the writer's state for readers (under the writer lock).
    pub(crate) fn publish_view(&self, st: &mut WriterState) -> Arc<View> {
        st.since_view = 0;
        self.view_wanted.store(false, Ordering::Relaxed);
        let view = Arc::new(View {
            state: st.store.clone(),
            rv: st.rv,
            pos: st.ring.head(),
            generation: st.generation,
        });
        self.view.store(view.clone());
        view
    }

    pub(crate) fn lifecycle(&self) -> Lifecycle {
        match self.lifecycle.load(Ordering::Acquire) {
            PENDING => Lifecycle::Pending,
            READY => Lifecycle::Ready,
            _ => Lifecycle::Stopped,
        }
    }

    /// Marks the engine stopped (final), tells the dispatcher, and wakes
    /// a writer waiting for it.
    pub(crate) fn request_stop(&self) {
        {
            let _st = self.lock_state();
            self.lifecycle.store(STOPPED, Ordering::Release);
        }
        self.stop_requested.store(true, Ordering::Release);
        self.wake_dispatcher();
        self.wake_writer_if_waiting();
    }

    /// Falls back to `Pending` (the writer lost its source): reads that
    /// need a fresh cache fail with `NotReady` carrying `cause`, new
    /// watches wait for the next list, running ones keep running.
    pub(crate) fn mark_unready(&self, cause: SourceError) -> Result<(), WriteError> {
        let _st = self.lock_state();
        if self.lifecycle() == Lifecycle::Stopped {
            return Err(WriteError::Stopped);
        }
        *self.lock_unready() = Some(cause);
        self.lifecycle.store(PENDING, Ordering::Release);
        Ok(())
    }

    /// Attaches (or, with `None`, detaches) the source behind the engine.
    pub(crate) fn set_upstream(&self, upstream: Option<std::sync::Weak<dyn Upstream>>) {
        *self.upstream.lock().unwrap_or_else(|e| e.into_inner()) = upstream;
    }

    /// The most recent version: the source's current revision if a
    /// reflector drives the engine (`None` without one).
    pub(crate) fn most_recent(&self) -> Result<Option<ResourceVersion>, UpstreamError> {
        self.upstream().map(|u| u.most_recent()).transpose()
    }

    /// The source behind the engine, while a reflector drives it.
    pub(crate) fn upstream(&self) -> Option<std::sync::Arc<dyn Upstream>> {
        self.upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
    }

    /// Why the engine fell back to `Pending`, if it did (`None` before the
    /// first list and while ready).
    pub(crate) fn unready_cause(&self) -> Option<SourceError> {
        self.lock_unready().clone()
    }

    fn lock_unready(&self) -> MutexGuard<'_, Option<SourceError>> {
        self.unready.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stop_requested.load(Ordering::Acquire)
    }

    /// Queues the removal of an ended watcher (idempotent).
    pub(crate) fn unregister(&self, w: &Arc<WatcherShared>) {
        self.send_control(|c| c.requests.push(Request::Unregister(w.clone())));
    }

    /// Asks the dispatcher to feed a parked watcher again.
    pub(crate) fn request_resume(&self, w: &Arc<WatcherShared>) {
        self.send_control(|c| c.requests.push(Request::Resume(w.clone())));
    }

    /// Hands a request to the dispatcher; returns false once it has exited.
    pub(crate) fn send_control(&self, request: impl FnOnce(&mut Control)) -> bool {
        let mut c = self.lock_control();
        if c.closed {
            return false;
        }
        request(&mut c);
        // Release: pairs with the dispatcher's Acquire swap of the flag. A
        // swap rather than a store: the same on the hardware for a rare
        // request, and loom 0.7 can let a plain store race past a
        // concurrent swap (tokio-rs/loom#254), losing the request in the
        // model though never in the real memory model.
        self.control_pending.swap(true, Ordering::Release);
        drop(c);
        self.wake_dispatcher();
        true
    }

    /// Runs one write under the writer lock, waiting (without the lock)
    /// for the dispatcher and retrying while the ring refuses with
    /// [`Gated`]. `attempt` gets the state and the dispatcher's cursor.
    pub(crate) fn write(
        &self,
        attempt: impl FnMut(&mut WriterState, u64) -> Result<Option<Resize>, Attempt>,
    ) -> Result<(), WriteError> {
        self.write_quiet(attempt)?;
        self.wake_dispatcher();
        Ok(())
    }

    /// [`Shared::write`] without the dispatcher's wake, which the caller
    /// then owes (or does the dispatcher's work itself: see
    /// `Writer::dispatch`).
    pub(crate) fn write_quiet(
        &self,
        mut attempt: impl FnMut(&mut WriterState, u64) -> Result<Option<Resize>, Attempt>,
    ) -> Result<(), WriteError> {
        loop {
            let mut st = self.lock_state();
            let dispatched = self.dispatched.load(Ordering::Acquire);
            match attempt(&mut st, dispatched) {
                Err(Attempt::Refused(e)) => return Err(e),
                Err(Attempt::Gated(Gated { reused })) => {
                    drop(st);
                    self.wait_for_dispatcher(reused);
                }
                Ok(resize) => {
                    let c = &self.counters;
                    match resize {
                        Some(Resize::Grew) => Counters::add(&c.ring_grows, 1),
                        Some(Resize::Shrank) => Counters::add(&c.ring_shrinks, 1),
                        None => {}
                    }
                    Counters::set(&c.ring_capacity, st.ring.capacity() as u64);
                    Counters::set(&c.ring_len, st.ring.len() as u64);
                    return Ok(());
                }
            }
        }
    }

    /// [`Shared::write_quiet`] for many items (a batch): `attempt` runs on
    /// each in turn, under one writer lock for up to [`WRITE_RUN`] of them,
    /// with one clock reading per run (`at`, each record's time), and the
    /// ring's counters and `changes_received` updated once per run. A
    /// batch so pays for the lock, the clock and the counters (atomic
    /// writes on lines the dispatcher writes too) once per run, not per
    /// change, and readers still get the lock between runs. `Gated` waits
    /// for the dispatcher (without the lock) and retries the same item;
    /// `Refused` stops there. Returns how many items were applied, and
    /// the refusal if one stopped the batch.
    pub(crate) fn write_many<T>(
        &self,
        items: impl IntoIterator<Item = T>,
        mut attempt: impl FnMut(&mut WriterState, u64, &T, Instant) -> Result<Written, Attempt>,
    ) -> (usize, Result<(), WriteError>) {
        let mut items = items.into_iter();
        let mut next = items.next();
        let mut applied = 0;
        while next.is_some() {
            let mut st = self.lock_state();
            let dispatched = self.dispatched.load(Ordering::Acquire);
            let at = self.config.clock.now();
            let (mut run, mut recorded, mut grew, mut shrank) = (0, 0, 0, 0);
            let mut stop = None;
            while let Some(item) = next.as_ref() {
                if run == WRITE_RUN {
                    break;
                }
                match attempt(&mut st, dispatched, item, at) {
                    Ok(written) => {
                        match written.resize {
                            Some(Resize::Grew) => grew += 1,
                            Some(Resize::Shrank) => shrank += 1,
                            None => {}
                        }
                        recorded += u64::from(written.recorded);
                        run += 1;
                        next = items.next();
                    }
                    Err(refusal) => {
                        stop = Some(refusal);
                        break;
                    }
                }
            }
            let c = &self.counters;
            if grew > 0 {
                Counters::add(&c.ring_grows, grew);
            }
            if shrank > 0 {
                Counters::add(&c.ring_shrinks, shrank);
            }
            if run > 0 {
                Counters::set(&c.ring_capacity, st.ring.capacity() as u64);
                Counters::set(&c.ring_len, st.ring.len() as u64);
                Counters::add(&c.changes_received, recorded);
            }
            drop(st);
            applied += run;
            match stop {
                None => {}
                Some(Attempt::Refused(e)) => return (applied, Err(e)),
                Some(Attempt::Gated(Gated { reused })) => self.wait_for_dispatcher(reused),
            }
        }
        (applied, Ok(()))
    }

    /// Waits (without the writer lock) until the dispatcher has moved past
    /// `pos`, or the engine stops.
    fn wait_for_dispatcher(&self, pos: u64) {
        Counters::add(&self.counters.writer_gated_waits, 1);
        *self.writer_thread.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(crate::sync::current());
        loop {
            // Announce, fence, then look: pairs with the fence in
            // `wake_writer_if_waiting` (Dekker), so a wake cannot be lost
            // (the loom model `a_gated_writer_is_woken` checks it). A swap,
            // not a store: see `send_control` (loom#254).
            self.writer_waiting.swap(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if self.dispatched.load(Ordering::Acquire) > pos || self.is_stopping() {
                self.writer_waiting.swap(false, Ordering::Relaxed);
                return;
            }
            self.wake_dispatcher();
            // The timeout only bounds the damage of a bug; the protocol
            // above needs no poll.
            park_timeout(Duration::from_millis(100));
        }
    }

    /// A re-list under the writer lock: the marker, the store, the
    /// version, the view, in that order. The version is stored before the
    /// view is published, so a reader that finds the new generation's
    /// view, having loaded it before the version, also loads a version of
    /// that generation; one that loads the new version with an older view
    /// finds the marker below the head it loads next and starts over (see
    /// `read/`, Snapshots). A re-list after a regression lowers the
    /// version, so a version read across it would mislabel the state.
    pub(crate) fn relist_locked(
        &self,
        st: &mut WriterState,
        store: State,
        rv: ResourceVersion,
        dispatched: u64,
    ) -> Result<Option<Resize>, Attempt> {
        let generation = st.generation + 1;
        let at = self.config.clock.now();
        let (_, resize) = st
            .ring
            .append(NewRecord::relist(rv, generation), at, dispatched)?;
        st.store = store;
        st.rv = rv;
        st.generation = generation;
        self.current_rv.store(rv.get(), Ordering::Release);
        self.publish_view(st);
        *self.lock_unready() = None;
        self.lifecycle.store(READY, Ordering::Release);
        Counters::add(&self.counters.relists, 1);
        Ok(resize)
    }
}
