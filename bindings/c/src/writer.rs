//! The writer: one change, a batch, a replace (a re-list), progress.

use herald::event::ChangeKind;
use herald::{Change, Relist, ResourceVersion, Writer};

use crate::args::*;
use crate::data::*;
use crate::engine::WRITERS;
use crate::status::*;

pub(crate) fn with_writer(
    h: HeraldWriter,
    f: impl FnOnce(&mut Writer) -> Result<(), Error>,
) -> Result<HeraldStatus, Error> {
    let w = WRITERS.get(h).map_err(|why| stale("writer", h, why))?;
    f(&mut lock(&w))?;
    Ok(HERALD_OK)
}

/// Applies one change at `resource_version` (above the engine's).
/// `kind` is a `HERALD_CHANGE_*`; a deletion's object is the last state.
///
/// # Safety
/// `object_in` is null or points to a readable [`HeraldObject`] whose
/// strings, arrays and payload are valid for reads of their lengths (a
/// pointer may be null only with its length 0) for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_writer_apply(
    writer: HeraldWriter,
    kind: HeraldChangeKind,
    resource_version: u64,
    object_in: *const HeraldObject,
) -> HeraldStatus {
    guard(|| {
        let kind = change_kind(kind)?;
        // SAFETY: `object_in` is null or a HeraldObject whose pointers
        // are valid (the docs).
        let o = unsafe { object(arg(object_in, "object")?) }?;
        with_writer(writer, |w| {
            Ok(w.apply(Change::new(kind, o, ResourceVersion::new(resource_version)))?)
        })
    })
}

/// One change of [`herald_writer_apply_batch`]: what
/// [`herald_writer_apply`] takes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldChange {
    /// A `HERALD_CHANGE_*`.
    pub kind: HeraldChangeKind,
    /// Its resource version (above the previous change's).
    pub resource_version: u64,
    /// The object (a deletion's: its last state).
    pub object: HeraldObject,
}

pub(crate) fn change_kind(kind: HeraldChangeKind) -> Result<ChangeKind, Error> {
    match kind {
        HERALD_CHANGE_ADDED => Ok(ChangeKind::Added),
        HERALD_CHANGE_MODIFIED => Ok(ChangeKind::Modified),
        HERALD_CHANGE_DELETED => Ok(ChangeKind::Deleted),
        other => Err(Error::invalid(format!(
            "change kind {other} is not a HERALD_CHANGE_*"
        ))),
    }
}

/// Applies `changes_len` changes in order, as that many
/// [`herald_writer_apply`] calls would, in one call: the engine's
/// dispatcher is woken once, after the last, not after each (for a source
/// that receives changes in batches, as a reflector does from etcd). It
/// stops at the first change refused, whose error it returns; the changes
/// before it are applied. `*applied_out` (when not null) is how many were
/// applied, on success and on error. Every change's kind and strings are
/// checked before any is applied (a malformed one applies none); the
/// engine refuses a change (out of order, a bad name, not ready) when it
/// comes to it.
///
/// # Safety
/// `changes` is null (then `changes_len` must be 0) or points to
/// `changes_len` readable [`HeraldChange`]s whose objects are valid as
/// [`herald_writer_apply`] requires; `applied_out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_writer_apply_batch(
    writer: HeraldWriter,
    changes: *const HeraldChange,
    changes_len: usize,
    applied_out: *mut usize,
) -> HeraldStatus {
    guard(|| {
        if !applied_out.is_null() {
            // SAFETY: checked non-null; writable (the docs).
            unsafe { applied_out.write(0) };
        }
        // SAFETY: `changes_len` HeraldChanges at `changes` (the docs).
        let batch = unsafe { items(changes, changes_len, "changes") }?
            .iter()
            .map(|c| {
                let kind = change_kind(c.kind)?;
                // SAFETY: each object's pointers are valid (the docs).
                let o = unsafe { object(&c.object) }?;
                Ok(Change::new(
                    kind,
                    o,
                    ResourceVersion::new(c.resource_version),
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        with_writer(writer, |w| {
            let (applied, result) = match w.apply_batch(batch) {
                Ok(()) => (changes_len, Ok(())),
                Err(e) => (e.applied, Err(e.error.into())),
            };
            if !applied_out.is_null() {
                // SAFETY: checked non-null; writable (the docs).
                unsafe { applied_out.write(applied) };
            }
            result
        })
    })
}

/// Replaces the whole state with `objects_len` objects at
/// `resource_version` (a list from the source): watches see the
/// difference as events.
///
/// # Safety
/// `objects` is null (then `objects_len` must be 0) or points to
/// `objects_len` readable [`HeraldObject`]s, each valid as
/// [`herald_writer_apply`] requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_writer_replace(
    writer: HeraldWriter,
    objects: *const HeraldObject,
    objects_len: usize,
    resource_version: u64,
) -> HeraldStatus {
    guard(|| {
        // SAFETY: `objects_len` HeraldObjects at `objects` (the docs).
        let objects = unsafe { items(objects, objects_len, "objects") }?
            .iter()
            // SAFETY: each object's pointers are valid (the docs).
            .map(|o| unsafe { object(o) })
            .collect::<Result<Vec<_>, _>>()?;
        with_writer(writer, |w| {
            Ok(w.replace(Relist::new(objects, ResourceVersion::new(resource_version)))?)
        })
    })
}

/// The source is at `resource_version` with nothing more for this
/// engine (a progress notification): waiting reads and watches move on.
#[unsafe(no_mangle)]
pub extern "C" fn herald_writer_progress(
    writer: HeraldWriter,
    resource_version: u64,
) -> HeraldStatus {
    guard(|| {
        with_writer(writer, |w| {
            Ok(w.progress(ResourceVersion::new(resource_version))?)
        })
    })
}

/// Frees the writer's handle (no more writes; the engine keeps what it
/// has).
#[unsafe(no_mangle)]
pub extern "C" fn herald_writer_free(writer: HeraldWriter) -> HeraldStatus {
    guard(|| {
        WRITERS
            .remove(writer)
            .map_err(|w| stale("writer", writer, w))?;
        Ok(HERALD_OK)
    })
}
