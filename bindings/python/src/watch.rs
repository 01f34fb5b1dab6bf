//! Watches: a blocking iterator (the GIL released while it waits), an
//! asyncio async iterator driven by the engine's readiness wakes, and a
//! batch poll.
//!
//! # The asyncio path
//!
//! Each event loop gets one [`Reactor`]: a [`ReadySet`] (an eventfd)
//! registered with `loop.add_reader`. A watch awaited with nothing ready
//! joins the set once (its waker is the set's [`Member`]), stores the
//! asyncio future its `__anext__` returned, and is armed by
//! `poll_visit_batch`. The engine wakes the member (from `Writer.apply`'s
//! thread with inline dispatch, else from its dispatcher thread), which
//! only queues it and writes the eventfd (no GIL); the loop then calls
//! [`Reactor::on_ready`], which polls the woken watches and resolves
//! their futures. A watch with events buffered answers `__anext__` with
//! an already-complete awaitable ([`Ready`]), without a future or a trip
//! through the loop.
//!
//! # Locks
//!
//! A watch's state is behind a mutex that is never held while waiting
//! for the GIL, and under which no Python runs: the blocking paths take
//! it with the GIL released; the asyncio paths hold it briefly with the
//! GIL, and create Python objects, look up the loop and resolve futures
//! only after letting it go. So no interleaving of threads (or a
//! finaliser run by Python's GC) can deadlock on it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use herald::watch::{EventRef, WatchStopper};
use herald::{EndReason, EventKind};
use herald_ready::{Member, ReadySet};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::convert::{labels_dict, lock, seconds};
use crate::errors;

/// Events taken from the engine per visit.
const BATCH: usize = 256;

/// Woken watches resolved per turn of the event loop (see
/// [`Reactor::on_ready`]).
const WAKE_CHUNK: usize = 64;

/// How long a blocking wait sleeps before it looks at Python's signals
/// (Ctrl-C) with the GIL.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An event taken from the engine (the object's reference count bumped,
/// its bytes not copied).
#[derive(Debug)]
struct Raw {
    kind: EventKind,
    resource_version: u64,
    object: Option<herald::Object>,
    initial_events_end: bool,
}

impl Raw {
    fn new(ev: EventRef<'_>) -> Raw {
        Raw {
            kind: ev.kind(),
            resource_version: ev.resource_version().get(),
            object: ev.object().cloned(),
            initial_events_end: ev.is_initial_events_end(),
        }
    }
}

/// One event of a watch. Immutable; the payload's bytes are copied into a
/// Python `bytes` when `payload` is read (once per read), never before.
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
pub(crate) struct Event {
    raw: Raw,
}

#[pymethods]
impl Event {
    /// "ADDED", "MODIFIED", "DELETED" or "BOOKMARK".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.raw.kind {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
            _ => "BOOKMARK",
        }
    }

    /// The event's resource version.
    #[getter]
    fn resource_version(&self) -> u64 {
        self.raw.resource_version
    }

    /// The object's key (`namespace/name`); None for a bookmark.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.raw.object.as_ref().map(|o| o.key())
    }

    /// The object's namespace; None for a bookmark.
    #[getter]
    fn namespace(&self) -> Option<&str> {
        self.raw.object.as_ref().map(|o| o.namespace())
    }

    /// The object's name; None for a bookmark.
    #[getter]
    fn name(&self) -> Option<&str> {
        self.raw.object.as_ref().map(|o| o.name())
    }

    /// The object's payload (b"" for a bookmark): a copy, made on access.
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes: &[u8] = self.raw.object.as_ref().map_or(&[], |o| o.payload());
        PyBytes::new(py, bytes)
    }

    /// The object's labels ({} for a bookmark).
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match &self.raw.object {
            Some(o) => labels_dict(py, o),
            None => Ok(PyDict::new(py)),
        }
    }

    /// The value of one of the object's selectable fields, or None.
    fn field(&self, name: &str) -> Option<String> {
        self.raw.object.as_ref()?.field(name).map(str::to_owned)
    }

    /// True on the bookmark that ends a watch's initial events.
    #[getter]
    fn initial_events_end(&self) -> bool {
        self.raw.initial_events_end
    }

    fn __repr__(&self) -> String {
        format!(
            "Event({}, resource_version={}, key={:?})",
            self.kind(),
            self.raw.resource_version,
            self.key().unwrap_or("")
        )
    }
}

/// An awaitable that is already complete (a buffered event).
#[pyclass(module = "herald")]
#[derive(Debug)]
struct Ready {
    value: Option<PyObject>,
}

#[pymethods]
impl Ready {
    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> PyResult<()> {
        Err(match self.value.take() {
            // The value itself, not a 1-tuple: before 3.12, CPython then
            // takes it as the result without making a StopIteration
            // instance (`_PyGen_FetchStopIterationValue`); an `Event` is
            // never a tuple or an exception, which would be read as
            // arguments.
            Some(v) => PyStopIteration::new_err(v),
            None => PyStopIteration::new_err(()),
        })
    }
}

/// Wakes the thread blocked in a receive.
#[derive(Debug)]
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// One event loop's readiness set and the watches waiting on it.
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
struct Reactor {
    set: Arc<ReadySet>,
    /// The watches whose `__anext__` future is pending, by id.
    waiting: Mutex<HashMap<u64, Py<Watch>>>,
}

#[pymethods]
impl Reactor {
    /// The loop's reader callback: polls up to [`WAKE_CHUNK`] woken
    /// watches and resolves their futures. Never raises (a watch's error
    /// goes to its future). With more woken, the set's descriptor stays
    /// readable: the loop calls this again on its next turn, after the
    /// tasks just woken have run, so the first consumers run after one
    /// chunk's resolutions rather than after all of them.
    fn on_ready(&self, py: Python<'_>) {
        let mut ids = Vec::with_capacity(WAKE_CHUNK);
        self.set.ready(&mut ids, WAKE_CHUNK);
        let woken: Vec<Py<Watch>> = {
            let mut waiting = lock(&self.waiting);
            ids.iter().filter_map(|id| waiting.remove(id)).collect()
        };
        for w in woken {
            w.get().resolve(py, &w, self);
        }
    }
}

/// Where the reactors live: a `WeakKeyDictionary` from loop to reactor.
static REACTORS: GILOnceCell<PyObject> = GILOnceCell::new();
/// `asyncio.get_running_loop`.
static GET_LOOP: GILOnceCell<PyObject> = GILOnceCell::new();

/// The running loop (RuntimeError outside one).
fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let get_loop = GET_LOOP.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("asyncio")?.getattr("get_running_loop")?.unbind())
    })?;
    get_loop.bind(py).call0()
}

/// The running loop and its reactor (made and registered on first use).
fn reactor_for_loop<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, Reactor>)> {
    let lp = running_loop(py)?;
    let reactors = REACTORS.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            py.import("weakref")?
                .call_method0("WeakKeyDictionary")?
                .unbind(),
        )
    })?;
    let reactors = reactors.bind(py);
    if let Ok(r) = reactors.call_method1("get", (&lp,))?.downcast::<Reactor>() {
        return Ok((lp, r.clone()));
    }
    let set = ReadySet::new().map_err(|e| errors::HeraldError::new_err(format!("eventfd: {e}")))?;
    let reactor = Bound::new(
        py,
        Reactor {
            set: Arc::new(set),
            waiting: Mutex::new(HashMap::new()),
        },
    )?;
    lp.call_method1(
        "add_reader",
        (reactor.get().set.raw_fd(), reactor.getattr("on_ready")?),
    )?;
    reactors.set_item(&lp, &reactor)?;
    Ok((lp, reactor))
}

/// A watch's place in one event loop's readiness set.
#[derive(Debug)]
struct Membership {
    member: Arc<Member>,
    reactor: Py<Reactor>,
    /// `weakref.ref(loop)`.
    event_loop: PyObject,
}

/// A watch's state, behind its mutex.
#[derive(Debug)]
struct State {
    /// None after `close()`.
    watch: Option<herald::Watch>,
    /// Events taken from the engine, not handed out yet.
    buffer: VecDeque<Raw>,
    /// Its membership of a loop's readiness set, once awaited (the loop
    /// held by a weak reference: a watch does not keep a loop alive).
    member: Option<Membership>,
    /// The future of an `__anext__` that waits.
    pending: Option<PyObject>,
}

/// What a receive found.
enum Got {
    Events(Vec<Raw>),
    Ended,
    Nothing,
}

/// A watch: iterate it (`for ev in watch`, releasing the GIL while it
/// waits), or `async for ev in watch` on an asyncio loop, or `poll()`.
/// The iteration stops at the watch's end; `end_reason` says why.
///
/// Thread-safety: `stop()`, `end_reason` and `close()` may be called from
/// any thread at any time (`stop()` ends a blocked iteration at once). A
/// watch is consumed by one consumer at a time: a second thread iterating
/// the same watch waits for the first's receive (with the GIL released);
/// a watch awaited on an event loop may not be iterated with blocking
/// calls (InvalidArgument), nor awaited on another loop.
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
pub(crate) struct Watch {
    id: u64,
    stopper: WatchStopper,
    /// Set by `stop()`: the buffer is dropped at the next receive.
    stopped: AtomicBool,
    closed: AtomicBool,
    /// The end, once the engine reported it.
    end: Mutex<Option<EndReason>>,
    state: Mutex<State>,
}

impl Watch {
    pub(crate) fn new(watch: herald::Watch) -> Watch {
        Watch {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            stopper: watch.stopper(),
            stopped: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            end: Mutex::new(None),
            state: Mutex::new(State {
                watch: Some(watch),
                buffer: VecDeque::new(),
                member: None,
                pending: None,
            }),
        }
    }

    fn closed_err() -> PyErr {
        errors::ClosedError::new_err("the watch is closed")
    }

    fn ended(&self) -> bool {
        lock(&self.end).is_some()
    }

    /// Takes what the engine has into the buffer: `Ready` with events or
    /// the end, `Pending` (waker armed) with neither.
    fn fill(&self, st: &mut State, cx: &mut Context<'_>) -> Poll<()> {
        if self.stopped.load(Ordering::Acquire) {
            st.buffer.clear();
        }
        if !st.buffer.is_empty() || self.ended() {
            return Poll::Ready(());
        }
        let State { watch, buffer, .. } = st;
        let Some(w) = watch.as_mut() else {
            return Poll::Ready(());
        };
        match w.poll_visit_batch(cx, BATCH, |ev| buffer.push_back(Raw::new(ev))) {
            Poll::Ready(v) => {
                if let Some(end) = v.end {
                    *lock(&self.end) = Some(end);
                } else if v.events == 0 && w.is_finished() && !self.ended() {
                    // Finished before (cannot happen: the end is recorded
                    // when received); report it as stopped, not a hang.
                    *lock(&self.end) = Some(EndReason::Stopped);
                }
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Takes up to `max` events, waiting up to `wait` (None: without
    /// limit, Some(ZERO): not at all). Called with the GIL released.
    fn receive(&self, max: usize, wait: Option<Duration>) -> PyResult<Got> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Self::closed_err());
        }
        let mut st = lock(&self.state);
        if st.watch.is_none() {
            return Err(Self::closed_err());
        }
        let deadline = wait.map(|w| Instant::now() + w.min(SIGNAL_CHECK));
        let deadline = deadline.unwrap_or_else(|| Instant::now() + SIGNAL_CHECK);
        let blocking = wait != Some(Duration::ZERO);
        if blocking && st.member.is_some() && st.buffer.is_empty() {
            return Err(errors::invalid(
                "the watch is awaited on an event loop: use async for, or poll(timeout=0)",
            ));
        }
        let polled = match &st.member {
            Some(Membership { member: m, .. }) if !blocking => {
                let waker = Waker::from(m.clone());
                self.fill(&mut st, &mut Context::from_waker(&waker))
            }
            _ => {
                let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
                let mut cx = Context::from_waker(&waker);
                loop {
                    let p = self.fill(&mut st, &mut cx);
                    if p.is_ready() || !blocking {
                        break p;
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break p;
                    }
                    std::thread::park_timeout(left);
                }
            }
        };
        if polled.is_pending() || st.buffer.is_empty() {
            return Ok(if self.ended() {
                Got::Ended
            } else {
                Got::Nothing
            });
        }
        let n = max.min(st.buffer.len());
        Ok(Got::Events(st.buffer.drain(..n).collect()))
    }

    /// Blocks (GIL released, in slices that look at signals) for up to
    /// `timeout` (None: without limit).
    fn receive_blocking(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<Duration>,
    ) -> PyResult<Got> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let got = py.allow_threads(|| self.receive(max, Some(left.unwrap_or(SIGNAL_CHECK))))?;
            match got {
                Got::Nothing if left.is_none_or(|l| l > SIGNAL_CHECK) => py.check_signals()?,
                other => return Ok(other),
            }
        }
    }

    /// Resolves the pending future from the reactor (the watch was woken).
    /// No Python runs while the state is locked (see the module docs).
    fn resolve(&self, py: Python<'_>, this: &Py<Watch>, reactor: &Reactor) {
        let fut = {
            let mut st = lock(&self.state);
            let Some(fut) = st.pending.take() else {
                return;
            };
            let waker = match &st.member {
                Some(m) => Waker::from(m.member.clone()),
                None => return,
            };
            if !self.closed.load(Ordering::Acquire)
                && self
                    .fill(&mut st, &mut Context::from_waker(&waker))
                    .is_pending()
            {
                st.pending = Some(fut);
                lock(&reactor.waiting).insert(self.id, this.clone_ref(py));
                return;
            }
            fut
        };
        let fut = fut.bind(py);
        // A cancelled future leaves the events buffered for the next await.
        if is_done(fut) {
            return;
        }
        let raw = if self.closed.load(Ordering::Acquire) {
            None
        } else {
            lock(&self.state).buffer.pop_front()
        };
        let _ = resolve_future(py, fut, raw);
    }
}

/// Whether an asyncio future is done (an error counts as done).
fn is_done(fut: &Bound<'_, PyAny>) -> bool {
    fut.call_method0(intern!(fut.py(), "done"))
        .and_then(|d| d.is_truthy())
        .unwrap_or(true)
}

/// Sets an event as the future's result, or, with none, ends the
/// iteration (StopAsyncIteration).
fn resolve_future(py: Python<'_>, fut: &Bound<'_, PyAny>, raw: Option<Raw>) -> PyResult<()> {
    match raw {
        Some(raw) => {
            fut.call_method1(intern!(py, "set_result"), (Bound::new(py, Event { raw })?,))?
        }
        None => fut.call_method1(
            intern!(py, "set_exception"),
            (py.get_type::<PyStopAsyncIteration>().call0()?,),
        )?,
    };
    Ok(())
}

fn events(py: Python<'_>, raws: Vec<Raw>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for raw in raws {
        list.append(Bound::new(py, Event { raw })?)?;
    }
    Ok(list)
}

#[pymethods]
impl Watch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next event, waiting for it with the GIL released; stops at the
    /// end.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        match self.receive_blocking(py, 1, None)? {
            Got::Events(mut v) => Ok(v.pop().map(|raw| Event { raw })),
            Got::Ended | Got::Nothing => Ok(None),
        }
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// An awaitable of the next event (raises StopAsyncIteration at the
    /// end), on the running asyncio loop. No Python runs while the state
    /// is locked (see the module docs).
    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        let py = slf.py();
        let this = slf.get();
        if this.closed.load(Ordering::Acquire) {
            return Err(Self::closed_err());
        }
        // The common case first, under one lock: an event buffered by the
        // last poll, no future pending, already in a loop's set.
        let buffered = {
            let mut st = lock(&this.state);
            if st.pending.is_none()
                && st.member.is_some()
                && st.watch.is_some()
                && !this.stopped.load(Ordering::Acquire)
            {
                st.buffer.pop_front()
            } else {
                None
            }
        };
        if let Some(raw) = buffered {
            let ev = Bound::new(py, Event { raw })?.into_any().unbind();
            return Ok(Bound::new(py, Ready { value: Some(ev) })?
                .into_any()
                .unbind());
        }
        let pending = lock(&this.state).pending.take();
        if let Some(p) = pending {
            if !is_done(p.bind(py)) {
                lock(&this.state).pending = Some(p);
                return Err(errors::invalid(
                    "the watch's previous __anext__ is still awaited",
                ));
            }
        }
        if lock(&this.state).member.is_none() {
            // The loop is looked up when the watch joins one and when it
            // has to wait: a buffered event costs no lookup.
            let (lp, reactor) = reactor_for_loop(py)?;
            let event_loop = py
                .import("weakref")?
                .getattr("ref")?
                .call1((&lp,))?
                .unbind();
            let mut st = lock(&this.state);
            if st.member.is_none() {
                st.member = Some(Membership {
                    member: reactor.get().set.join(this.id),
                    reactor: reactor.unbind(),
                    event_loop,
                });
            }
        }
        let (polled, raw, reactor, event_loop) = {
            let mut st = lock(&this.state);
            if st.watch.is_none() {
                return Err(Self::closed_err());
            }
            let Some(m) = &st.member else {
                return Err(errors::HeraldError::new_err("the watch left its loop"));
            };
            let waker = Waker::from(m.member.clone());
            let (reactor, event_loop) = (m.reactor.clone_ref(py), m.event_loop.clone_ref(py));
            let polled = this.fill(&mut st, &mut Context::from_waker(&waker));
            let raw = st.buffer.pop_front();
            (polled, raw, reactor, event_loop)
        };
        if polled.is_ready() {
            return match raw {
                Some(raw) => {
                    let ev = Bound::new(py, Event { raw })?.into_any().unbind();
                    Ok(Bound::new(py, Ready { value: Some(ev) })?
                        .into_any()
                        .unbind())
                }
                None => Err(PyStopAsyncIteration::new_err(())),
            };
        }
        // Armed: the reactor runs on this thread, so it cannot look for
        // the future before it is stored.
        let lp = event_loop.bind(py).call0()?;
        if !running_loop(py)?.is(&lp) {
            return Err(errors::invalid(
                "the watch is awaited on another event loop",
            ));
        }
        let fut = lp.call_method0(intern!(py, "create_future"))?.unbind();
        lock(&this.state).pending = Some(fut.clone_ref(py));
        lock(&reactor.get().waiting).insert(this.id, slf.clone().unbind());
        Ok(fut)
    }

    /// Up to `max` events: waits up to `timeout` seconds for the first
    /// (0, the default: not at all; None: without limit). Returns [] when
    /// the time ran out or the watch has ended (see `end_reason`).
    #[pyo3(signature = (max=256, timeout=0.0))]
    fn poll<'py>(
        &self,
        py: Python<'py>,
        max: usize,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        if max == 0 {
            return Err(errors::invalid("max must be at least 1"));
        }
        let timeout = timeout.map(|t| seconds("timeout", t)).transpose()?;
        let got = if timeout == Some(Duration::ZERO) {
            py.allow_threads(|| self.receive(max, Some(Duration::ZERO)))?
        } else {
            self.receive_blocking(py, max, timeout)?
        };
        match got {
            Got::Events(v) => events(py, v),
            Got::Ended | Got::Nothing => Ok(PyList::empty(py)),
        }
    }

    /// Stops the watch: its iteration ends with "stopped" (unless it had
    /// ended already), events not handed out yet are dropped. Any thread;
    /// never waits.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.stopper.stop();
    }

    /// Stops the watch and releases it: later receives raise ClosedError;
    /// an `__anext__` awaiting ends (StopAsyncIteration).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.stop();
        self.closed.store(true, Ordering::Release);
        let (watch, pending) = py.allow_threads(|| {
            let mut st = lock(&self.state);
            st.buffer.clear();
            (st.watch.take(), st.pending.take())
        });
        drop(watch);
        if let Some(fut) = pending {
            let fut = fut.bind(py);
            if !is_done(fut) {
                resolve_future(py, fut, None)?;
            }
        }
        Ok(())
    }

    /// Why the watch ended: "stopped", "deadline", "too_slow", "gone",
    /// "relisted", "engine_stopped", "too_large_resource_version",
    /// "engine_failed", "drained"; None while it runs.
    #[getter]
    fn end_reason(&self) -> Option<&'static str> {
        lock(&self.end).as_ref().map(|e| match e {
            EndReason::Stopped => "stopped",
            EndReason::Deadline => "deadline",
            EndReason::TooSlow => "too_slow",
            EndReason::Gone(_) => "gone",
            EndReason::Relisted => "relisted",
            EndReason::EngineStopped => "engine_stopped",
            EndReason::TooLargeResourceVersion(_) => "too_large_resource_version",
            EndReason::Drained => "drained",
            _ => "engine_failed",
        })
    }

    /// The end's message (with the versions for gone and too large).
    #[getter]
    fn end_message(&self) -> Option<String> {
        lock(&self.end).as_ref().map(ToString::to_string)
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the watch.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!("Watch(id={}, end_reason={:?})", self.id, self.end_reason())
    }
}
