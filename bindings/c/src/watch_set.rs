//! Watch sets: watches that share one readiness descriptor (an
//! `eventfd`) for an event loop.

use std::sync::Arc;

use crate::args::*;
use crate::data::*;
use crate::handles::{Kind, Registry};
use crate::status::*;
use crate::watch::watch;
use herald_ready::ReadySet;

pub(crate) static SETS: Registry<ReadySet> = Registry::new(Kind::WatchSet);

pub(crate) fn watch_set(h: HeraldWatchSet) -> Result<Arc<ReadySet>, Error> {
    SETS.get(h).map_err(|w| stale("watch set", h, w))
}

/// Creates a watch set: one descriptor for many watches.
///
/// # Safety
/// `out` is null or points to a writable [`HeraldWatchSet`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_set_new(out: *mut HeraldWatchSet) -> HeraldStatus {
    guard(|| {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let inner =
            ReadySet::new().map_err(|e| Error::new(HERALD_E_SYSTEM, format!("eventfd: {e}")))?;
        let h = SETS.insert(inner);
        // SAFETY: checked non-null; C gives a writable slot.
        unsafe { out.write(h) };
        Ok(HERALD_OK)
    })
}

/// The set's descriptor (an `eventfd`, non-blocking): readable while a
/// watch of the set may have something; then call
/// [`herald_watch_set_ready`]. Add it to `epoll` (level- or
/// edge-triggered), `poll`, io_uring or libuv; do not read or close it.
/// It lives as long as the set.
///
/// # Safety
/// `fd_out` is null or points to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_set_fd(
    set_h: HeraldWatchSet,
    fd_out: *mut i32,
) -> HeraldStatus {
    guard(|| {
        let fd = watch_set(set_h)?.raw_fd();
        // SAFETY: `fd_out` is null or writable (the docs).
        unsafe { put(fd_out, fd, "fd_out") }?;
        Ok(HERALD_OK)
    })
}

/// Adds a watch to the set, for good (a watch is in at most one set). It
/// is reported ready at once, so the loop polls it first, which arms it.
#[unsafe(no_mangle)]
pub extern "C" fn herald_watch_set_add(
    set_h: HeraldWatchSet,
    watch_h: HeraldWatch,
) -> HeraldStatus {
    guard(|| {
        let set = watch_set(set_h)?;
        let slot = watch(watch_h)?;
        let mut st = lock(&slot.state);
        if st.member.is_some() {
            return Err(Error::invalid("the watch is in a set already"));
        }
        st.member = Some(set.join(watch_h));
        Ok(HERALD_OK)
    })
}

/// Takes up to `max` watches that may have something into `out` (an array
/// of `max`), `*n_out` of them; poll each with [`herald_watch_poll`](crate::herald_watch_poll)
/// (a watch that has nothing after all returns [`HERALD_PENDING`] and is
/// armed again). The descriptor stays readable while more remain. A
/// watch freed meanwhile may still be named once: its poll returns
/// [`HERALD_E_HANDLE`].
///
/// # Safety
/// `out` is null (then `max` must be 0) or points to `max` writable
/// [`HeraldWatch`]es; `n_out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_watch_set_ready(
    set_h: HeraldWatchSet,
    out: *mut HeraldWatch,
    max: usize,
    n_out: *mut usize,
) -> HeraldStatus {
    guard(|| {
        if n_out.is_null() || (out.is_null() && max > 0) {
            return Err(Error::null("out or n_out"));
        }
        let set = watch_set(set_h)?;
        let mut ready = Vec::with_capacity(max.min(4096));
        set.ready(&mut ready, max);
        for (i, h) in ready.iter().enumerate() {
            // SAFETY: C gives `max` writable handles at `out`; `i < max`.
            unsafe { out.add(i).write(*h) };
        }
        // SAFETY: checked non-null.
        unsafe { n_out.write(ready.len()) };
        Ok(HERALD_OK)
    })
}

/// Frees the set and closes its descriptor (remove it from your loop
/// first). Its watches live on, with no set to wake.
#[unsafe(no_mangle)]
pub extern "C" fn herald_watch_set_free(set_h: HeraldWatchSet) -> HeraldStatus {
    guard(|| {
        SETS.remove(set_h)
            .map_err(|w| stale("watch set", set_h, w))?;
        Ok(HERALD_OK)
    })
}
