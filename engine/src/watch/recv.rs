//! The receive API of a [`Watch`]: blocking, with a timeout, without
//! blocking, in batches, lent without copies, polled by an event loop, or
//! as a [`futures_core::Stream`]. Each drives the consumer's state machine
//! (`consumer.rs`) and, when it finds nothing, sleeps by the protocol of
//! `watcher/shared.rs`: register a waker, announce, look once more.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::consumer::{Busy, Phase, Step, Watch};
use super::item::{EventRef, Raw};
use crate::event::{EndReason, WatchItem};
use crate::ring::Chunk;
use crate::sync::{Arc, Thread, park, park_timeout};

/// What [`Watch::visit_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Visited {
    /// Events passed to the callback.
    pub events: usize,
    /// The watch's end, if this call reached it (the terminal item; it is
    /// reported once, and the watch is finished afterwards).
    pub end: Option<EndReason>,
    /// The call armed the watch's waker after its events, because they
    /// drained it ([`Watch::poll_visit_batch_leased_arming`] only): the
    /// waker fires once it has more, so no further poll is needed.
    pub armed: bool,
}

/// What a leased batch lent ([`Watch::visit_batch_leased`]): the chunks
/// of history and the items its events were borrowed from, kept alive
/// until [`Lease::clear`] or drop. Reuse one per watch: its buffers stay.
#[derive(Default)]
pub struct Lease {
    chunks: Vec<Arc<Chunk>>,
    raws: Vec<Raw>,
}

impl Lease {
    /// Lets go of everything it holds (the views into it end).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.raws.clear();
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("chunks", &self.chunks.len())
            .field("items", &self.raws.len())
            .finish()
    }
}

/// [`Watch::try_recv`] found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryRecvError {
    /// Nothing is ready now.
    Empty,
    /// The terminal item has already been received.
    Finished,
}

/// [`Watch::recv_timeout`] found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvTimeoutError {
    /// Nothing arrived in time.
    Timeout,
    /// The terminal item has already been received.
    Finished,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "no event ready",
            TryRecvError::Finished => "the watch has ended",
        })
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvTimeoutError::Timeout => "timed out waiting for an event",
            RecvTimeoutError::Finished => "the watch has ended",
        })
    }
}

impl std::error::Error for TryRecvError {}
impl std::error::Error for RecvTimeoutError {}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

impl Watch {
    /// Blocks until the next item. Returns `None` once the terminal
    /// [`WatchItem::End`] has been received.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// writer.apply(Change::added(Object::builder("ns", "a").build(), 2.into()))?;
    /// let Some(WatchItem::Event(ev)) = watch.recv() else { panic!() };
    /// assert_eq!((ev.kind(), ev.resource_version().get()), (EventKind::Added, 2));
    /// watch.stop();
    /// assert_eq!(watch.recv(), Some(WatchItem::End(EndReason::Stopped)));
    /// assert_eq!(watch.recv(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self) -> Option<WatchItem> {
        self.recv_deadline(None).ok()
    }

    /// Blocks until the next item or until `timeout` passes.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::watch::RecvTimeoutError;
    /// # use std::time::Duration;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// assert_eq!(watch.recv_timeout(Duration::from_millis(5)), Err(RecvTimeoutError::Timeout));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<WatchItem, RecvTimeoutError> {
        // A timeout past the clock's range (`Duration::MAX`) is no timeout.
        self.recv_deadline(Instant::now().checked_add(timeout))
    }

    /// Returns the next item if one is ready, without blocking.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::watch::TryRecvError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// assert_eq!(watch.try_recv(), Err(TryRecvError::Empty));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv(&mut self) -> Result<WatchItem, TryRecvError> {
        match self.step_owned() {
            Step::Item(item) => Ok(item),
            Step::Empty => Err(TryRecvError::Empty),
            Step::Done => Err(TryRecvError::Finished),
        }
    }

    /// Moves up to `max` ready items into `out` without blocking; returns how
    /// many it moved. Amortises the per-item checks over a batch.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build(), Object::builder("ns", "b").build()], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// let mut out = Vec::new();
    /// while out.len() < 2 {
    ///     watch.recv_batch(&mut out, 64);
    /// }
    /// assert_eq!(out.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_batch(&mut self, out: &mut Vec<WatchItem>, max: usize) -> usize {
        let (mut n, more) = self.stream_batch(
            max,
            &mut |ev: EventRef<'_>| out.push(WatchItem::Event(ev.to_event())),
            &mut drop,
        );
        while more && n < max {
            match self.step_owned() {
                Step::Item(item) => {
                    out.push(item);
                    n += 1;
                }
                Step::Empty | Step::Done => break,
            }
        }
        n
    }

    /// Lends up to `max` ready events to `f`, without blocking and without
    /// copying or reference-counting objects: the fastest way to drain a
    /// watch (an embedding server serialises straight from the borrowed
    /// object). Stops at the end of the watch and reports it.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// engine.stop();
    /// let mut keys = Vec::new();
    /// let mut end = None;
    /// while end.is_none() {
    ///     let visited = watch.visit_batch(64, |ev| {
    ///         keys.push(ev.object().map(|o| o.key().to_owned()));
    ///     });
    ///     end = visited.end;
    /// }
    /// // The engine stopped before the watch began: it ends at once.
    /// assert_eq!(end, Some(EndReason::EngineStopped));
    /// assert!(watch.is_finished());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_batch(&mut self, max: usize, mut f: impl FnMut(EventRef<'_>)) -> Visited {
        self.visit(max, &mut f, None)
    }

    /// [`visit_batch`](Watch::visit_batch), keeping in `lease` what the
    /// events were lent from (the history's chunks, the items), so that
    /// the objects they show stay alive until the lease is cleared or
    /// dropped: for a caller that keeps pointers into them past the
    /// callback (a C binding's views), without a reference count per
    /// event. Clear the lease before the next call to let go of the last
    /// batch; what it holds keeps those chunks of history in memory.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::watch::Lease;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").payload("A").build()], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// let mut lease = Lease::default();
    /// let mut payloads: Vec<*const [u8]> = Vec::new();
    /// while payloads.is_empty() {
    ///     lease.clear();
    ///     watch.visit_batch_leased(64, &mut lease, |ev| {
    ///         payloads.extend(ev.object().map(|o| &o.payload()[..] as *const [u8]));
    ///     });
    /// }
    /// // SAFETY: the lease holds what the batch lent, and is not cleared yet.
    /// assert_eq!(unsafe { &*payloads[0] }, b"A");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_batch_leased(
        &mut self,
        max: usize,
        lease: &mut Lease,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Visited {
        self.visit(max, &mut f, Some(lease))
    }

    fn visit(
        &mut self,
        max: usize,
        f: &mut impl FnMut(EventRef<'_>),
        mut lease: Option<&mut Lease>,
    ) -> Visited {
        // The chunk the cursor lets go of holds records lent before: into
        // the lease (a move, no count), or dropped as a plain read does.
        let (events, more) = self.stream_batch(max, f, &mut |chunk| {
            if let Some(l) = lease.as_deref_mut() {
                l.chunks.push(chunk);
            }
        });
        let mut visited = Visited {
            events,
            end: None,
            armed: false,
        };
        if more
            && events > 0
            && let Some(l) = lease.as_deref_mut()
        {
            // The steps below read through the same cursor, which may let
            // go of the chunk the events above came from.
            l.chunks.extend(self.cursor_chunk());
        }
        while more && visited.events < max {
            let raw = match self.step() {
                Step::Item(raw) => raw,
                Step::Empty | Step::Done => break,
            };
            let Some(ev) = raw.as_event_ref() else {
                if let Raw::End(reason) = raw {
                    visited.end = Some(reason);
                }
                break;
            };
            f(ev);
            visited.events += 1;
            if let Some(l) = lease.as_deref_mut() {
                // What it lent lives on the heap (a chunk, an object):
                // moving the item moves none of it.
                l.raws.push(raw);
            }
        }
        visited
    }

    /// [`visit_batch`](Watch::visit_batch) for an event loop: if nothing
    /// is ready, registers `cx`'s waker and returns `Poll::Pending`; the
    /// waker is woken once something is (an event, a bookmark, the end).
    /// With one waker per watch that names it, the wakes form a readiness
    /// list: a thread serving many watches visits only those that have
    /// something, and an idle watch costs it nothing (the dispatcher wakes
    /// only the watches it pushed to, once per batch).
    ///
    /// `Ready` carries at least one event or the end, except on a watch
    /// already finished or with `max` 0 (then at once, with nothing).
    ///
    /// ```
    /// # use herald::*;
    /// use std::task::{Context, Poll, Waker};
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut seen = 0;
    /// // Nothing yet: the waker is registered.
    /// while watch.poll_visit_batch(&mut cx, 64, |_| seen += 1).is_ready() {}
    /// writer.apply(Change::added(Object::builder("ns", "a").build(), 2.into()))?;
    /// while seen == 0 {
    ///     let _ = watch.poll_visit_batch(&mut cx, 64, |_| seen += 1);
    /// }
    /// assert_eq!(seen, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_visit_batch(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Poll<Visited> {
        self.poll_visit(cx, max, &mut f, None)
    }

    /// [`poll_visit_batch`](Watch::poll_visit_batch) keeping what the
    /// events were lent from in `lease` (see
    /// [`visit_batch_leased`](Watch::visit_batch_leased)).
    pub fn poll_visit_batch_leased(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        lease: &mut Lease,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Poll<Visited> {
        self.poll_visit(cx, max, &mut f, Some(lease))
    }

    /// [`poll_visit_batch_leased`](Watch::poll_visit_batch_leased), and
    /// when the batch drains the watch (fewer than `max` events, no end)
    /// it also arms `cx`'s waker before returning, as a poll that found
    /// nothing would (register, announce, look once more: anything the
    /// last look finds is added to the batch, and the watch is then not
    /// armed). [`Visited::armed`] says which: when it is set, the waker
    /// fires once the watch has more, so an event loop needs no second
    /// poll to learn that the watch is empty and to arm it.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::watch::Lease;
    /// use std::task::{Context, Poll, Waker};
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut lease = Lease::default();
    /// writer.apply(Change::added(Object::builder("ns", "a").build(), 2.into()))?;
    /// let mut seen = 0;
    /// let mut armed = false;
    /// while seen == 0 {
    ///     lease.clear();
    ///     if let Poll::Ready(v) = watch.poll_visit_batch_leased_arming(&mut cx, 64, &mut lease, |_| seen += 1) {
    ///         armed = v.armed;
    ///     }
    /// }
    /// assert_eq!(seen, 1);
    /// assert!(armed); // drained: its waker fires at the next change
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_visit_batch_leased_arming(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        lease: &mut Lease,
        mut f: impl FnMut(EventRef<'_>),
    ) -> Poll<Visited> {
        let mut visited = match self.poll_visit(cx, max, &mut f, Some(&mut *lease)) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(v) => v,
        };
        if visited.events == 0
            || visited.events >= max
            || visited.end.is_some()
            || self.is_finished()
        {
            return Poll::Ready(visited);
        }
        self.arm(cx.waker());
        // Look once more, as `poll_visit` does before it sleeps.
        let more = self.visit(max - visited.events, &mut f, Some(lease));
        if more.events > 0 || more.end.is_some() || self.is_finished() {
            self.w.awake();
            visited.events += more.events;
            visited.end = more.end;
        } else {
            visited.armed = true;
        }
        Poll::Ready(visited)
    }

    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut impl FnMut(EventRef<'_>),
        mut lease: Option<&mut Lease>,
    ) -> Poll<Visited> {
        let ready = |w: &Watch, v: &Visited| v.events > 0 || v.end.is_some() || w.is_finished();
        let visited = self.visit(max, f, lease.as_deref_mut());
        if ready(self, &visited) || max == 0 {
            return Poll::Ready(visited);
        }
        self.arm(cx.waker());
        // Look once more: whatever came before the fence is seen here, and
        // whatever comes after it wakes the waker.
        let visited = self.visit(max, f, lease);
        if ready(self, &visited) {
            self.w.awake();
            return Poll::Ready(visited);
        }
        Poll::Pending
    }

    /// Stops the watch: the next receive returns
    /// [`EndReason::Stopped`] (unless it had already ended for another
    /// reason), and the dispatcher forgets it.
    pub fn stop(&mut self) {
        if self.w.end(EndReason::Stopped, &self.engine.counters) {
            self.unregister();
        }
    }

    /// Whether the terminal item has been received.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done
    }

    fn recv_deadline(&mut self, deadline: Option<Instant>) -> Result<WatchItem, RecvTimeoutError> {
        loop {
            match self.step_owned() {
                Step::Item(item) => return Ok(item),
                Step::Done => return Err(RecvTimeoutError::Finished),
                Step::Empty => {}
            }
            let waker = self.thread_waker();
            match self.prepare_park(&waker) {
                Step::Item(item) => return Ok(item),
                Step::Done => return Err(RecvTimeoutError::Finished),
                Step::Empty => {}
            }
            match deadline {
                None => park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        self.w.awake();
                        return Err(RecvTimeoutError::Timeout);
                    }
                    park_timeout(d - now);
                }
            }
            self.w.awake();
        }
    }

    /// A waker that unparks the calling thread (cached: a `Watch` may move
    /// between threads, so the cache is keyed by thread).
    fn thread_waker(&mut self) -> Waker {
        let me = crate::sync::current();
        let cached = &mut self.occasional().thread_waker;
        match cached {
            Some((id, w)) if *id == me.id() => w.clone(),
            _ => {
                let w = Waker::from(std::sync::Arc::new(ThreadWaker(me.clone())));
                *cached = Some((me.id(), w.clone()));
                w
            }
        }
    }

    /// Registers `waker` and announces sleep; the caller then looks once
    /// more before sleeping.
    fn arm(&self, waker: &Waker) {
        self.w.prepare_sleep(waker);
    }

    /// Registers `waker`, announces sleep, and looks once more.
    fn prepare_park(&mut self, waker: &Waker) -> Step<WatchItem> {
        self.arm(waker);
        let step = self.step_owned();
        if !matches!(step, Step::Empty) {
            self.w.awake();
        }
        step
    }
}

impl futures_core::Stream for Watch {
    type Item = WatchItem;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchItem>> {
        let this = self.get_mut();
        match this.step_budgeted() {
            Ok(Step::Item(raw)) => return Poll::Ready(Some(raw.into_item())),
            Ok(Step::Done) => return Poll::Ready(None),
            Err(Busy) => {
                // Cooperative: let the executor run others, then resume.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Ok(Step::Empty) => {}
        }
        match this.prepare_park(cx.waker()) {
            Step::Item(item) => Poll::Ready(Some(item)),
            Step::Done => Poll::Ready(None),
            Step::Empty => Poll::Pending,
        }
    }
}
