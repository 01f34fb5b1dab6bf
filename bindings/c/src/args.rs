//! Reading what C passes in: strings, arrays, pointers and out-pointers,
//! objects, scopes, selectors and version flags, each checked (a null or
//! malformed argument is an error, never undefined behaviour).

use std::sync::{Mutex, MutexGuard};

use herald::rv::ResourceVersionMatch;
use herald::selector::{FieldSelector, KeyScope, LabelSelector};
use herald::{Object, ResourceVersion};

use crate::data::*;
use crate::status::Error;

/// A `HeraldStr` as `&str`.
///
/// # Safety
/// `s.ptr` is null with `s.len` 0, or points to `s.len` readable bytes
/// that outlive `'a`.
pub(crate) unsafe fn text<'a>(s: HeraldStr, what: &str) -> Result<&'a str, Error> {
    if s.len == 0 {
        return Ok("");
    }
    if s.ptr.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: the caller's contract (above).
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) };
    std::str::from_utf8(bytes).map_err(|e| Error::invalid(format!("{what} is not UTF-8: {e}")))
}

/// `len` items at `ptr` as a slice.
///
/// # Safety
/// `ptr` is null with `len` 0, or points to `len` readable `T`s that
/// outlive `'a`.
pub(crate) unsafe fn items<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: the caller's contract (above).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The value at a pointer C passed in.
///
/// # Safety
/// `ptr` is null or points to a readable `T`.
pub(crate) unsafe fn arg<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Error> {
    // SAFETY: the caller's contract (above).
    unsafe { ptr.as_ref() }.ok_or_else(|| Error::null(what))
}

/// Writes an out-parameter.
///
/// # Safety
/// `ptr` is null or points to a writable `T`.
pub(crate) unsafe fn put<T>(ptr: *mut T, value: T, what: &str) -> Result<(), Error> {
    if ptr.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: the caller's contract (above); `write` drops nothing (the
    // out-parameters are plain data).
    unsafe { ptr.write(value) };
    Ok(())
}

/// An object from C's description (its strings and payload copied).
///
/// # Safety
/// As [`text`] and [`items`] for every pointer in `o`.
pub(crate) unsafe fn object(o: &HeraldObject) -> Result<Object, Error> {
    // SAFETY: the caller's contract, for each of `o`'s pointers.
    unsafe {
        let labels = items(o.labels, o.labels_len, "labels")?;
        let fields = items(o.fields, o.fields_len, "fields")?;
        // Room for every label and field at once (a hint, capped: the
        // lengths are not checked yet).
        let bytes = labels.iter().chain(fields).fold(0usize, |n, p| {
            n.saturating_add(p.key.len).saturating_add(p.value.len)
        });
        let mut b = Object::builder_with_capacity(
            text(o.namespace_, "namespace")?,
            text(o.name, "name")?,
            (labels.len() + fields.len()).min(1 << 10),
            bytes.min(1 << 16),
        );
        for p in labels {
            b = b.label(
                text(p.key, "a label's key")?,
                text(p.value, "a label's value")?,
            );
        }
        for p in fields {
            b = b.field(
                text(p.key, "a field's path")?,
                text(p.value, "a field's value")?,
            );
        }
        let payload = items(o.payload.ptr, o.payload.len, "payload")?;
        Ok(b.payload(payload.to_vec()).build())
    }
}

/// # Safety
/// As [`text`].
pub(crate) unsafe fn scope(kind: HeraldScope, value: HeraldStr) -> Result<KeyScope, Error> {
    // SAFETY: the caller's contract.
    let value = unsafe { text(value, "scope_value") }?;
    match kind {
        HERALD_SCOPE_ALL => Ok(KeyScope::All),
        HERALD_SCOPE_PREFIX => Ok(KeyScope::prefix(value)),
        HERALD_SCOPE_KEY => Ok(KeyScope::exact(value)),
        other => Err(Error::invalid(format!(
            "scope {other} is not a HERALD_SCOPE_*"
        ))),
    }
}

/// # Safety
/// As [`text`].
pub(crate) unsafe fn selectors(
    labels: HeraldStr,
    fields: HeraldStr,
) -> Result<(LabelSelector, FieldSelector), Error> {
    // SAFETY: the caller's contract.
    let (labels, fields) = unsafe {
        (
            text(labels, "label_selector")?,
            text(fields, "field_selector")?,
        )
    };
    let labels = LabelSelector::parse(labels)
        .map_err(|e| Error::invalid(format!("label selector {labels:?}: {e}")))?;
    let fields = FieldSelector::parse(fields)
        .map_err(|e| Error::invalid(format!("field selector {fields:?}: {e}")))?;
    Ok((labels, fields))
}

const KNOWN_FLAGS: u32 = HERALD_HAS_RESOURCE_VERSION
    | HERALD_ALLOW_BOOKMARKS
    | HERALD_SEND_INITIAL_EVENTS
    | HERALD_NO_INITIAL_EVENTS
    | HERALD_MATCH_NOT_OLDER_THAN
    | HERALD_MATCH_EXACT;

/// The version and match the flags give.
pub(crate) fn version(
    rv: u64,
    flags: u32,
) -> Result<(Option<ResourceVersion>, Option<ResourceVersionMatch>), Error> {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::invalid(format!(
            "unknown flags {:#x}",
            flags & !KNOWN_FLAGS
        )));
    }
    let rv = (flags & HERALD_HAS_RESOURCE_VERSION != 0).then(|| ResourceVersion::new(rv));
    let rvm = match (
        flags & HERALD_MATCH_EXACT != 0,
        flags & HERALD_MATCH_NOT_OLDER_THAN != 0,
    ) {
        (true, true) => return Err(Error::invalid("two resource version matches")),
        (true, false) => Some(ResourceVersionMatch::Exact),
        (false, true) => Some(ResourceVersionMatch::NotOlderThan),
        (false, false) => None,
    };
    Ok((rv, rvm))
}

pub(crate) fn bytes(b: &[u8]) -> HeraldBytes {
    HeraldBytes {
        ptr: if b.is_empty() {
            std::ptr::null()
        } else {
            b.as_ptr()
        },
        len: b.len(),
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
