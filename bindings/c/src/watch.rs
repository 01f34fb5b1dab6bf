//! Watches: open, poll a batch of borrowed views, wait, stop, free.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use herald::watch::{EventRef, Lease, Visited, WatchStopper};
use herald::{EndReason, EventKind, Watch, WatchRequest};

use crate::args::*;
use crate::data::*;
use crate::engine::engine;
use crate::handles::{Kind, Registry};
use crate::status::*;
use herald_ready::Member;

pub(crate) static WATCHES: Registry<WatchSlot> = Registry::new(Kind::Watch);

/// A watch behind its handle.
#[derive(Debug)]
pub(crate) struct WatchSlot {
    /// Stops it without taking `state` (a wait may hold it).
    stopper: WatchStopper,
    pub(crate) state: Mutex<WatchState>,
}

#[derive(Debug)]
pub(crate) struct WatchState {
    watch: Watch,
    /// What the last batch's views point into: the history chunks and
    /// items its events were lent from (no count or copy per event).
    lease: Lease,
    /// Its set's waker, once in a set.
    pub(crate) member: Option<Arc<Member>>,
    /// The end, once reached (reported again by every later call).
    end: Option<EndReason>,
}

pub(crate) fn watch(h: HeraldWatch) -> Result<Arc<WatchSlot>, Error> {
    WATCHES.get(h).map_err(|w| stale("watch", h, w))
}

/// Opens a watch on the engine.
///
/// # Safety
/// `request` is null or points to a readable [`HeraldWatchRequest`] whose
/// strings are valid as [`HeraldStr`] requires; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_open(
    engine_h: HeraldEngine,
    request: *const HeraldWatchRequest,
    out: *mut HeraldWatch,
) -> HeraldStatus {
    guard(|| {
        let e = engine(engine_h)?;
        // SAFETY: `request` is null or a HeraldWatchRequest with valid
        // strings (the docs).
        let r = unsafe { arg(request, "request")? };
        if out.is_null() {
            return Err(Error::null("out"));
        }
        // SAFETY: as above.
        let (labels, fields) = unsafe { selectors(r.label_selector, r.field_selector) }?;
        let (rv, rvm) = version(r.resource_version, r.flags)?;
        // SAFETY: as above.
        let mut req = WatchRequest::new()
            .scope(unsafe { scope(r.scope, r.scope_value) }?)
            .labels(labels)
            .fields(fields)
            .resource_version(rv)
            .allow_bookmarks(r.flags & HERALD_ALLOW_BOOKMARKS != 0);
        if let Some(rvm) = rvm {
            req = req.resource_version_match(rvm);
        }
        match (
            r.flags & HERALD_SEND_INITIAL_EVENTS != 0,
            r.flags & HERALD_NO_INITIAL_EVENTS != 0,
        ) {
            (true, true) => {
                return Err(Error::invalid(
                    "both HERALD_SEND_INITIAL_EVENTS and HERALD_NO_INITIAL_EVENTS",
                ));
            }
            (true, false) => req = req.send_initial_events(true),
            (false, true) => req = req.send_initial_events(false),
            (false, false) => {}
        }
        if r.timeout_ms > 0 {
            req = req.timeout(Duration::from_millis(r.timeout_ms));
        }
        let w = e.watch(req)?;
        let slot = WatchSlot {
            stopper: w.stopper(),
            state: Mutex::new(WatchState {
                watch: w,
                lease: Lease::default(),
                member: None,
                end: None,
            }),
        };
        let h = WATCHES.insert(slot);
        // SAFETY: checked non-null; C gives a writable slot.
        unsafe { out.write(h) };
        Ok(HERALD_OK)
    })
}

pub(crate) fn end_of(reason: Option<&EndReason>) -> HeraldEnd {
    let Some(reason) = reason else {
        return HeraldEnd::default();
    };
    let (reason, requested, bound) = match reason {
        EndReason::Stopped => (HERALD_END_STOPPED, 0, 0),
        EndReason::Deadline => (HERALD_END_DEADLINE, 0, 0),
        EndReason::TooSlow => (HERALD_END_TOO_SLOW, 0, 0),
        EndReason::Gone(g) => (
            HERALD_END_GONE,
            g.requested().get(),
            g.oldest_servable().get(),
        ),
        EndReason::Relisted => (HERALD_END_RELISTED, 0, 0),
        EndReason::EngineStopped => (HERALD_END_ENGINE_STOPPED, 0, 0),
        EndReason::TooLargeResourceVersion(t) => (
            HERALD_END_TOO_LARGE_RESOURCE_VERSION,
            t.requested().get(),
            t.current().get(),
        ),
        EndReason::Drained => (HERALD_END_DRAINED, 0, 0),
        _ => (HERALD_END_ENGINE_FAILED, 0, 0),
    };
    HeraldEnd {
        reason,
        requested,
        bound,
    }
}

/// Where a batch goes: C's array. The views point into the objects the
/// watch's [`Lease`] keeps alive.
pub(crate) struct Batch {
    out: *mut HeraldEvent,
    max: usize,
    n: usize,
}

impl Batch {
    fn push(&mut self, ev: EventRef<'_>) {
        debug_assert!(self.n < self.max, "the engine hands out at most max events");
        if self.n >= self.max {
            return;
        }
        let (key, payload) = match ev.object() {
            Some(o) => (bytes(o.key().as_bytes()), bytes(o.payload())),
            None => (bytes(&[]), bytes(&[])),
        };
        let kind = match ev.kind() {
            EventKind::Added => HERALD_EVENT_ADDED,
            EventKind::Modified => HERALD_EVENT_MODIFIED,
            EventKind::Deleted => HERALD_EVENT_DELETED,
            _ => HERALD_EVENT_BOOKMARK,
        };
        let event = HeraldEvent {
            kind,
            flags: if ev.is_initial_events_end() {
                HERALD_EVENT_INITIAL_EVENTS_END
            } else {
                0
            },
            resource_version: ev.resource_version().get(),
            key,
            payload,
        };
        // SAFETY: C gives `max` writable events at `out` (the docs of the
        // calling function), and `n < max`.
        unsafe { self.out.add(self.n).write(event) };
        self.n += 1;
    }
}

/// Receives with `receive` into C's array; reports the count and the end.
///
/// # Safety
/// `events` holds `max` writable events; `n_out` and `end_out` are null
/// or writable.
pub(crate) unsafe fn receive(
    watch_h: HeraldWatch,
    events: *mut HeraldEvent,
    max: usize,
    n_out: *mut usize,
    end_out: *mut HeraldEnd,
    receive: impl FnOnce(
        &mut WatchState,
        &mut dyn FnMut(EventRef<'_>),
    ) -> Result<Poll<Option<EndReason>>, Error>,
) -> Result<HeraldStatus, Error> {
    if n_out.is_null() || end_out.is_null() || (events.is_null() && max > 0) {
        return Err(Error::null("events, n_out or end_out"));
    }
    let slot = watch(watch_h)?;
    let mut st = lock(&slot.state);
    // The last batch's views end here.
    st.lease.clear();
    let mut batch = Batch {
        out: events,
        max,
        n: 0,
    };
    let polled = if st.end.is_some() {
        Ok(Poll::Ready(None))
    } else {
        receive(&mut st, &mut |ev| batch.push(ev))
    };
    let n = batch.n;
    let status = match polled? {
        Poll::Ready(end) => {
            if let Some(end) = end {
                st.end = Some(end);
            }
            HERALD_OK
        }
        Poll::Pending => HERALD_PENDING,
    };
    // SAFETY: checked non-null; writable (the caller's contract).
    unsafe {
        n_out.write(n);
        end_out.write(end_of(st.end.as_ref()));
    }
    Ok(if n == 0 && st.end.is_none() {
        HERALD_PENDING
    } else {
        status
    })
}

/// Takes up to `max` ready events into `events` (an array of `max`),
/// without blocking: `*n_out` of them, and in `*end_out` the watch's end
/// once it has ended (then every later call reports it again, with no
/// events). Returns [`HERALD_OK`] with events or the end, or
/// [`HERALD_PENDING`] with neither; a watch in a set is then armed (the
/// set's descriptor becomes readable when it has something). A watch in a
/// set that returned events is reported ready again by the set (it may
/// have more), so a loop may poll each watch the set reports once.
///
/// The views' bytes live until the next call on this watch (from any
/// thread) or its free.
///
/// # Safety
/// `events` is null (then `max` must be 0) or points to `max` writable
/// [`HeraldEvent`]s; `n_out` and `end_out` are null or writable. The views
/// written stay valid until the next call on the same watch, or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_poll(
    watch_h: HeraldWatch,
    events: *mut HeraldEvent,
    max: usize,
    n_out: *mut usize,
    end_out: *mut HeraldEnd,
) -> HeraldStatus {
    guard(|| {
        // SAFETY: the function's docs give poll's contract.
        unsafe { poll(watch_h, events, max, n_out, end_out, false) }.map(|(status, _)| status)
    })
}

/// As [`herald_watch_poll`], and for a watch in a set, when the batch
/// drains the watch (fewer than `max` events and no end), it also arms
/// the watch in the same call, as a poll that found nothing would; then
/// `*armed_out` is true, and the set reports the watch again only once it
/// has more: no second poll is needed to arm it. Otherwise (`*armed_out`
/// false) a watch that returned events is reported ready again, as with
/// [`herald_watch_poll`]. `*armed_out` is also true when the call returns
/// [`HERALD_PENDING`] (armed, nothing), and always false for a watch in
/// no set. The views live as [`herald_watch_poll`]'s.
///
/// # Safety
/// As [`herald_watch_poll`]; `armed_out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_poll_arming(
    watch_h: HeraldWatch,
    events: *mut HeraldEvent,
    max: usize,
    n_out: *mut usize,
    end_out: *mut HeraldEnd,
    armed_out: *mut bool,
) -> HeraldStatus {
    guard(|| {
        if armed_out.is_null() {
            return Err(Error::null("armed_out"));
        }
        // SAFETY: the function's docs give poll's contract.
        let (status, armed) = unsafe { poll(watch_h, events, max, n_out, end_out, true) }?;
        // SAFETY: checked non-null; writable (the caller's contract).
        unsafe { armed_out.write(armed) };
        Ok(status)
    })
}

/// [`herald_watch_poll`] (`arming`: [`herald_watch_poll_arming`]): the
/// status, and whether the watch is armed.
///
/// # Safety
/// As [`receive`].
pub(crate) unsafe fn poll(
    watch_h: HeraldWatch,
    events: *mut HeraldEvent,
    max: usize,
    n_out: *mut usize,
    end_out: *mut HeraldEnd,
    arming: bool,
) -> Result<(HeraldStatus, bool), Error> {
    let mut armed = false;
    // SAFETY: the caller's contract is receive's.
    let status = unsafe {
        receive(watch_h, events, max, n_out, end_out, |st, f| {
            Ok(match &st.member {
                Some(member) => {
                    let member = member.clone();
                    let waker = member.waker();
                    let mut cx = Context::from_waker(&waker);
                    let polled = if arming {
                        st.watch
                            .poll_visit_batch_leased_arming(&mut cx, max, &mut st.lease, f)
                    } else {
                        st.watch
                            .poll_visit_batch_leased(&mut cx, max, &mut st.lease, f)
                    };
                    match &polled {
                        Poll::Ready(Visited {
                            events: 1..,
                            end: None,
                            armed: false,
                            ..
                        }) => {
                            // Not armed (it had something): reported ready
                            // again, so one poll per report is enough; the
                            // next poll finds more, or arms it.
                            member.notify();
                        }
                        Poll::Ready(Visited { armed: true, .. }) | Poll::Pending => {
                            armed = true;
                        }
                        Poll::Ready(_) => {}
                    }
                    polled.map(|v| v.end)
                }
                None => Poll::Ready(st.watch.visit_batch_leased(max, &mut st.lease, f).end),
            })
        })
    }?;
    Ok((status, armed))
}

/// Wakes the thread blocked in [`herald_watch_wait`].
#[derive(Debug)]
pub(crate) struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// As [`herald_watch_poll`], but blocks the calling thread up to
/// `timeout_ms` (`UINT64_MAX`: without limit) until there is an event or
/// the end; [`HERALD_PENDING`] when the time ran out. Not for a watch in a
/// set ([`HERALD_E_INVALID`]): the set's loop polls it.
///
/// # Safety
/// As [`herald_watch_poll`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_wait(
    watch_h: HeraldWatch,
    events: *mut HeraldEvent,
    max: usize,
    timeout_ms: u64,
    n_out: *mut usize,
    end_out: *mut HeraldEnd,
) -> HeraldStatus {
    guard(|| {
        let deadline = Instant::now().checked_add(Duration::from_millis(timeout_ms));
        // SAFETY: the function's docs give receive's contract.
        unsafe {
            receive(watch_h, events, max, n_out, end_out, |st, f| {
                if st.member.is_some() {
                    return Err(Error::invalid(
                        "the watch is in a set: poll it when the set says",
                    ));
                }
                let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
                let mut cx = Context::from_waker(&waker);
                loop {
                    if let Poll::Ready(v) =
                        st.watch
                            .poll_visit_batch_leased(&mut cx, max, &mut st.lease, &mut *f)
                    {
                        return Ok(Poll::Ready(v.end));
                    }
                    match deadline {
                        None => std::thread::park(),
                        Some(d) => {
                            let left = d.saturating_duration_since(Instant::now());
                            if left.is_zero() {
                                return Ok(Poll::Pending);
                            }
                            std::thread::park_timeout(left);
                        }
                    }
                }
            })
        }
    })
}

/// Stops the watch: its next receive reports [`HERALD_END_STOPPED`]
/// (unless it had ended already). Does not wait for a call in progress on
/// it, and ends a [`herald_watch_wait`]'s wait. The handle stays valid.
#[unsafe(no_mangle)]
pub extern "C" fn herald_watch_stop(watch_h: HeraldWatch) -> HeraldStatus {
    guard(|| {
        watch(watch_h)?.stopper.stop();
        Ok(HERALD_OK)
    })
}

/// Stops the watch and frees its handle (and its views).
#[unsafe(no_mangle)]
pub extern "C" fn herald_watch_free(watch_h: HeraldWatch) -> HeraldStatus {
    guard(|| {
        let slot = WATCHES
            .remove(watch_h)
            .map_err(|w| stale("watch", watch_h, w))?;
        slot.stopper.stop();
        Ok(HERALD_OK)
    })
}
