//! The history ring: the last changes, written by one writer, read without
//! locks by the dispatcher and by watchers replaying history.
//!
//! # Synchronization
//!
//! Positions are `u64` sequence numbers that never repeat (they keep counting
//! across re-lists). They are grouped in chunks of [`CHUNK`] consecutive
//! positions; chunk `c` lives in cell `c & mask` of the current cell array.
//! Each cell is an `ArcSwapOption<Chunk>`; a chunk carries its first
//! position (the stamp a reader checks) and one write-once `OnceLock<Record>`
//! per position. A chunk is never reused: the writer replaces a whole chunk
//! by publishing a new one in its cell, and a record never changes once set.
//!
//! - The writer sets the record's cell in its chunk (`OnceLock::set`,
//!   `Release`), publishing a new chunk into its cell first when the
//!   position starts one, then stores `head = p + 1` with `Release`. Readers
//!   load `head` with `Acquire` before reading any position below it, so
//!   they see the chunk (or a newer one in the same cell, which the stamp
//!   check rejects) and the record in it.
//! - A reader caches the chunk it read last (an `Arc`, one reference count
//!   per chunk, not per record) and reads further records of it with one
//!   `Acquire` load each. A reader holding a chunk the writer has since
//!   replaced still reads it correctly: records are immutable. So a record
//!   is reported `Evicted` only to a reader that does not hold its chunk
//!   and finds another chunk in the cell.
//! - A resize builds a new cell array holding the retained chunks, publishes
//!   it through the `ArcSwap` (which is at least `Release`/`Acquire`), and
//!   only then writes further records. A reader that sees `head > p` for a
//!   record written after the resize also sees the new array (the array
//!   store happens-before the record store happens-before the `head` store).
//! - Reads are wait-free for readers; the writer waits for no reader. A
//!   reader holding a chunk only delays its freeing, never the writer.
//!
//! The writer never replaces a chunk holding a record the dispatcher has not
//! yet fanned out: [`RingWriter::append`] refuses with [`Gated`] when the
//! chunk it would replace holds a position at or beyond the dispatcher's
//! cursor. The array keeps one chunk more than the logical window, so the
//! window is never cut short by a replacement. Watchers replaying
//! history are never waited for: if the writer laps one, the stamp check
//! tells it so and it ends with `Gone`.
//!
//! Sizing follows the reference (`watchCache.resizeCacheLocked`, seeds/004):
//! when the ring is full, it doubles if even its oldest record is younger than
//! the history window, and halves if even the newest quarter is older. Herald
//! also halves on the maintenance tick when the writer has been idle for a
//! window (the reference never shrinks after a burst), and can bound the
//! ring's bytes.

use std::time::{Duration, Instant};

use crate::clock::later;
use crate::event::ChangeKind;
use crate::sync::{Arc, ArcSwap, ArcSwapOption, AtomicU64, CachePadded, OnceLock, Ordering};
use crate::{Object, ResourceVersion};

/// What a ring record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// A change to one object.
    Change(ChangeKind),
    /// A re-list marker: everything before it belongs to an older generation.
    Relist,
}

/// One entry of history.
#[derive(Debug)]
///
/// Its position is not stored: the chunk's stamp (`Chunk::base`) and the
/// record's slot in it say where it is. Kept small (80 bytes with its
/// `OnceLock`, from 104): every watcher of everything reads every record,
/// so its bytes are the followers' cache traffic.
pub(crate) struct Record {
    pub(crate) rv: ResourceVersion,
    pub(crate) kind: RecordKind,
    /// The new (or, for a deletion, last) state; `None` for a relist marker.
    pub(crate) object: Option<Object>,
    /// The state before the change, from the store.
    pub(crate) prev: Option<Object>,
    /// The resource version of the store's entry before the change, `None`
    /// if the key was absent: with `prev`, what undoes the change (a list
    /// at an older version walks back from the present).
    pub(crate) prev_rv: Option<ResourceVersion>,
    /// The generation this record belongs to (a relist marker carries the
    /// new generation).
    pub(crate) generation: u64,
    /// When the writer applied it (the reference's `RecordTime`), in
    /// nanoseconds since the ring's epoch ([`Sizing::epoch`]).
    pub(crate) at: u64,
    /// Approximate bytes, for the byte bound (saturated at `u32::MAX`).
    pub(crate) bytes: u32,
    /// When the dispatcher enqueued it, in nanoseconds since the engine's
    /// epoch plus one (0: not yet), for the latency histogram. Written
    /// before the pushes (whose `Release` publishes it), `Relaxed`.
    pub(crate) enqueued: AtomicU64,
}

/// Records per chunk: the unit in which the writer replaces history, and
/// in which a reader takes protection. Small under loom, so that models
/// wrap the ring with a handful of records.
#[cfg(not(herald_loom))]
pub(crate) const CHUNK: u64 = 128;
#[cfg(herald_loom)]
pub(crate) const CHUNK: u64 = 2;

/// `CHUNK` consecutive positions starting at `base`, each written once.
///
/// A chunk is never reused for other positions: the writer replaces a
/// whole chunk by publishing a new one in its cell. So a reader that holds
/// a chunk may read any record already set in it without further
/// synchronisation than the cell's `Acquire` (`OnceLock::get`), and a
/// reader that caches the chunk pays for protection once per `CHUNK`
/// records instead of once per record.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The first position: the stamp readers check.
    base: u64,
    records: Box<[OnceLock<Record>]>,
}

impl Chunk {
    fn new(base: u64) -> Chunk {
        debug_assert_eq!(base % CHUNK, 0);
        Chunk {
            base,
            records: (0..CHUNK).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The record at `pos`, if this chunk holds `pos` and it has been set.
    #[inline]
    fn get(&self, pos: u64) -> Option<&Record> {
        if pos.wrapping_sub(self.base) < CHUNK {
            self.records[(pos - self.base) as usize].get()
        } else {
            None
        }
    }
}

#[derive(Debug)]
pub(crate) struct Slots {
    /// Mask over chunk numbers (`pos / CHUNK`).
    mask: u64,
    cells: Box<[ArcSwapOption<Chunk>]>,
}

impl Slots {
    fn with_capacity(physical: usize) -> Slots {
        debug_assert!(physical.is_power_of_two() && physical as u64 >= 2 * CHUNK);
        let chunks = physical / CHUNK as usize;
        Slots {
            mask: chunks as u64 - 1,
            cells: (0..chunks).map(|_| ArcSwapOption::empty()).collect(),
        }
    }

    /// Positions the array holds.
    fn physical(&self) -> u64 {
        (self.mask + 1) * CHUNK
    }

    fn cell(&self, pos: u64) -> &ArcSwapOption<Chunk> {
        // Masking keeps the index in bounds; no unchecked access here.
        &self.cells[((pos / CHUNK) & self.mask) as usize]
    }
}

/// A record read from the ring, owned: holds its chunk alive for as long
/// as it is held (one reference count on the chunk).
pub(crate) struct RecordRef {
    chunk: Arc<Chunk>,
    pos: u64,
}

impl std::ops::Deref for RecordRef {
    type Target = Record;

    #[inline]
    fn deref(&self) -> &Record {
        // `read` only builds a RecordRef around a record that is set.
        self.chunk.get(self.pos).unwrap_or_else(|| unreachable!())
    }
}

/// The requested position is no longer in the ring: the writer has reused
/// its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Evicted;

/// The lock-free, shared half of the ring.
#[derive(Debug)]
pub(crate) struct Ring {
    slots: ArcSwap<Slots>,
    /// The oldest position inside the logical window: the writer's `tail`,
    /// or the re-list marker while nothing after it has been evicted (a
    /// list may then go back to the list's version, as a watch may start
    /// from it). Records below it may still be readable in their chunk,
    /// but a list must not serve a version that old. Written by the writer,
    /// `Release`; a reader's `Acquire` load is a point in time at which
    /// everything from it on was in the window.
    tail: AtomicU64,
    /// One past the newest published position.
    head: CachePadded<AtomicU64>,
}

/// A reader's cached view: the slot array (refreshed on a stamp mismatch)
/// and the chunk it read last.
#[derive(Debug)]
pub(crate) struct ReadCursor {
    slots: Arc<Slots>,
    chunk: Option<Arc<Chunk>>,
}

impl ReadCursor {
    /// The chunk it holds now.
    pub(crate) fn chunk(&self) -> Option<&Arc<Chunk>> {
        self.chunk.as_ref()
    }
}

impl Ring {
    fn new(physical: usize) -> Ring {
        Ring {
            slots: ArcSwap::from_pointee(Slots::with_capacity(physical)),
            tail: AtomicU64::new(0),
            head: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The oldest position inside the window (see the field).
    pub(crate) fn tail(&self) -> u64 {
        self.tail.load(Ordering::Acquire)
    }

    /// One past the newest published position.
    pub(crate) fn head(&self) -> u64 {
        // Acquire: pairs with the writer's Release store in `publish`, so
        // every record below the returned head is visible.
        self.head.load(Ordering::Acquire)
    }

    /// A cursor for `read`.
    pub(crate) fn cursor(&self) -> ReadCursor {
        ReadCursor {
            slots: self.slots.load_full(),
            chunk: None,
        }
    }

    /// Reads the record at `pos`, which must be below a `head()` the caller
    /// loaded, borrowing it from the cursor's cached chunk. Returns
    /// `Evicted` when the writer has replaced its chunk and the cursor does
    /// not hold it (a cursor that holds the chunk still reads it: a record
    /// never changes once written).
    #[inline]
    pub(crate) fn read_borrowed<'c>(
        &self,
        cursor: &'c mut ReadCursor,
        pos: u64,
    ) -> Result<&'c Record, Evicted> {
        self.read_borrowed_keeping(cursor, pos, &mut drop)
    }

    /// [`Ring::read_borrowed`], handing the chunk the cursor lets go of
    /// (when it loads another) to `keep` rather than dropping it: a
    /// [`Lease`](crate::watch::Lease) keeps what a batch lent alive without a
    /// count per record. `drop` is the plain read (it compiles away).
    #[inline]
    pub(crate) fn read_borrowed_keeping<'c>(
        &self,
        cursor: &'c mut ReadCursor,
        pos: u64,
        keep: &mut impl FnMut(Arc<Chunk>),
    ) -> Result<&'c Record, Evicted> {
        let cached = cursor.chunk.as_ref().is_some_and(|c| c.get(pos).is_some());
        if !cached {
            self.load_chunk(cursor, pos, keep)?;
        }
        // Either branch leaves a chunk holding `pos`, set, in the cursor.
        let rec = cursor
            .chunk
            .as_ref()
            .and_then(|c| c.get(pos))
            .ok_or(Evicted)?;
        Ok(rec)
    }

    /// [`Ring::read_borrowed`], owned (one reference count on the chunk).
    pub(crate) fn read(&self, cursor: &mut ReadCursor, pos: u64) -> Result<RecordRef, Evicted> {
        self.read_borrowed(cursor, pos)?;
        let chunk = cursor.chunk.clone().ok_or(Evicted)?;
        Ok(RecordRef { chunk, pos })
    }

    /// Loads the chunk holding `pos` into the cursor.
    #[inline(never)]
    fn load_chunk(
        &self,
        cursor: &mut ReadCursor,
        pos: u64,
        keep: &mut impl FnMut(Arc<Chunk>),
    ) -> Result<(), Evicted> {
        loop {
            let chunk = cursor.slots.cell(pos).load_full();
            if let Some(chunk) = chunk
                && chunk.get(pos).is_some()
            {
                if let Some(old) = cursor.chunk.replace(chunk) {
                    keep(old);
                }
                return Ok(());
            }
            // Stale array (resized since the cursor was taken) or evicted.
            let current = self.slots.load_full();
            if Arc::ptr_eq(&current, &cursor.slots) {
                return Err(Evicted);
            }
            cursor.slots = current;
        }
    }
}

/// The physical size (a power of two, at least two chunks) that keeps
/// `records` retained positions: one chunk more than asked, since the
/// writer replaces a whole chunk when it starts the next.
fn physical_for(records: usize) -> usize {
    (records + CHUNK as usize)
        .next_power_of_two()
        .max(2 * CHUNK as usize)
}

/// Sizing settings of the ring.
#[derive(Debug, Clone)]
pub(crate) struct Sizing {
    pub(crate) lower: usize,
    pub(crate) upper: usize,
    pub(crate) window: Duration,
    pub(crate) max_bytes: Option<usize>,
    /// What records' times count from (the engine's epoch): no record is
    /// older than it.
    pub(crate) epoch: Instant,
}

/// The writer may not append now: the slot it would reuse holds the record at
/// `reused`, which the dispatcher has not fanned out yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gated {
    pub(crate) reused: u64,
}

/// A resize decision, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resize {
    Grew,
    Shrank,
}

/// The writer's half of the ring: bookkeeping only the writer touches (it
/// lives inside the engine's writer lock).
#[derive(Debug)]
pub(crate) struct RingWriter {
    ring: Arc<Ring>,
    /// The current slot array (the writer is the only one to replace it, so
    /// its own copy is always current and costs no `ArcSwap` load).
    slots: Arc<Slots>,
    /// The chunk being filled (the writer's own handle on it).
    chunk: Option<Arc<Chunk>>,
    sizing: Sizing,
    /// Logical capacity: how many records the window keeps.
    cap: usize,
    /// Next position to write (the writer's copy of `ring.head`).
    head: u64,
    /// Oldest retained position (logical; the physical array may keep more).
    tail: u64,
    /// First position after the last relist marker.
    servable_from: u64,
    /// The resource version of the last relist.
    list_rv: ResourceVersion,
    bytes: usize,
    pub(crate) grows: u64,
    pub(crate) shrinks: u64,
}

impl RingWriter {
    pub(crate) fn new(sizing: Sizing) -> (RingWriter, Arc<Ring>) {
        let cap = sizing.lower.max(1);
        let ring = Arc::new(Ring::new(physical_for(cap)));
        (
            RingWriter {
                slots: ring.slots.load_full(),
                chunk: None,
                ring: ring.clone(),
                sizing,
                cap,
                head: 0,
                tail: 0,
                servable_from: 0,
                list_rv: ResourceVersion::ZERO,
                bytes: 0,
                grows: 0,
                shrinks: 0,
            },
            ring,
        )
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    pub(crate) fn len(&self) -> usize {
        (self.head - self.tail) as usize
    }

    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    pub(crate) fn physical(&self) -> u64 {
        self.slots.physical()
    }

    /// The writer's own read of a retained record (always present: the
    /// writer only asks for positions within its physical window): `f`
    /// gets it under an `arc-swap` guard, with no reference count taken
    /// on its chunk. (A count was two atomic read-modify-writes on a line
    /// the consumers' counts touch too, and the ring's rules read a
    /// record on every write: the tail's size when it is evicted, the
    /// age of the quarter mark.)
    fn own<R>(&self, pos: u64, f: impl FnOnce(&Record) -> R) -> R {
        debug_assert!(pos < self.head && self.head - pos <= self.physical());
        let chunk = self.slots.cell(pos).load();
        match chunk.as_ref().and_then(|c| c.get(pos)) {
            Some(record) => f(record),
            None => panic!("the writer's retained record {pos} was overwritten"),
        }
    }

    /// Appends a record; `dispatched` is the dispatcher's cursor (positions
    /// below it have been fanned out). Returns the record's position and the
    /// resize done, if any. [`RingWriter::prepare`] then
    /// [`RingWriter::push`].
    pub(crate) fn append(
        &mut self,
        new: NewRecord,
        at: Instant,
        dispatched: u64,
    ) -> Result<(u64, Option<Resize>), Gated> {
        let bytes = record_bytes(new.object.as_ref());
        let resized = self.prepare(bytes, at, dispatched)?;
        let pos = self.push(new, at, bytes);
        Ok((pos, resized))
    }

    /// Makes room for the next record, of `bytes` (`record_bytes`): grows
    /// or shrinks by the reference's rule when full, evicts the oldest
    /// when still full or over the byte bound. `Gated`: the next slot
    /// holds an undispatched record (nothing was evicted; a growth may
    /// have happened). The caller pushes next, with no other write
    /// between: a writer may take other locks' work (the store's update)
    /// between the two knowing the push cannot fail.
    pub(crate) fn prepare(
        &mut self,
        bytes: usize,
        at: Instant,
        dispatched: u64,
    ) -> Result<Option<Resize>, Gated> {
        let mut resized = None;
        let full = self.len() >= self.cap;
        if self.gated(dispatched) {
            // Reusing the slot would destroy an undispatched record. Growing
            // is the only way forward without waiting.
            if full && self.may_grow(at) {
                self.resize(self.grow_target(), dispatched);
                resized = Some(Resize::Grew);
            }
            if self.gated(dispatched) {
                return Err(Gated {
                    reused: self.head - self.physical() + CHUNK - 1,
                });
            }
        } else if full {
            resized = self.resize_on_full(at, dispatched);
        }
        if self.len() >= self.cap {
            self.evict_oldest();
        }
        if let Some(max) = self.sizing.max_bytes {
            while self.bytes + bytes > max && self.tail < self.head {
                self.evict_oldest();
            }
        }
        Ok(resized)
    }

    /// Writes the record [`RingWriter::prepare`] made room for, at the
    /// head, and publishes it; returns its position.
    pub(crate) fn push(&mut self, new: NewRecord, at: Instant, bytes: usize) -> u64 {
        let NewRecord {
            kind,
            rv,
            object,
            prev,
            prev_rv,
            generation,
        } = new;
        let pos = self.head;
        let record = Record {
            rv,
            kind,
            object,
            prev,
            prev_rv,
            generation,
            at: u64::try_from(at.saturating_duration_since(self.sizing.epoch).as_nanos())
                .unwrap_or(u64::MAX),
            // Saturated by `record_bytes`.
            bytes: bytes as u32,
            enqueued: AtomicU64::new(0),
        };
        if pos % CHUNK == 0 {
            // A new chunk replaces the one `physical` positions back (the
            // gate in `prepare` has checked it is dispatched).
            let chunk = Arc::new(Chunk::new(pos));
            self.slots.cell(pos).store(Some(chunk.clone()));
            self.chunk = Some(chunk);
        }
        let stored = self
            .chunk
            .as_ref()
            .map(|c| c.records[(pos % CHUNK) as usize].set(record));
        debug_assert!(
            matches!(stored, Some(Ok(()))),
            "position {pos} written twice"
        );
        self.head = pos + 1;
        // Release: publishes the record stored above (pairs with `Ring::head`).
        self.ring.head.store(self.head, Ordering::Release);
        if kind == RecordKind::Relist {
            // A re-list empties the window: nothing before it is servable.
            self.servable_from = self.head;
            self.tail = self.head;
            // The marker itself stays readable to lists (see the field).
            self.ring.tail.store(pos, Ordering::Release);
            self.bytes = 0;
            self.list_rv = rv;
        } else {
            self.bytes += bytes;
        }
        pos
    }

    /// Whether the next write replaces a chunk (it starts a new one) that
    /// still holds an undispatched record.
    fn gated(&self, dispatched: u64) -> bool {
        self.head % CHUNK == 0
            && self
                .head
                .checked_sub(self.physical())
                .is_some_and(|first| first + CHUNK > dispatched)
    }

    fn evict_oldest(&mut self) {
        debug_assert!(self.tail < self.head);
        let b = self.own(self.tail, |r| r.bytes) as usize;
        self.bytes -= b;
        self.tail += 1;
        self.ring.tail.store(self.tail, Ordering::Release);
    }

    /// When the retained record at `pos` was applied.
    fn applied(&self, pos: u64) -> Instant {
        // `at` came from an `Instant` at or after the epoch, so the sum is
        // one too: it cannot overflow.
        later(
            self.sizing.epoch,
            Duration::from_nanos(self.own(pos, |r| r.at)),
        )
        .unwrap_or(self.sizing.epoch)
    }

    fn may_grow(&self, now: Instant) -> bool {
        self.cap < self.sizing.upper
            && self.len() > 0
            && now.saturating_duration_since(self.applied(self.tail)) < self.sizing.window
            && self
                .sizing
                .max_bytes
                .is_none_or(|max| self.bytes.saturating_mul(2) <= max)
    }

    fn grow_target(&self) -> usize {
        (self.cap * 2).min(self.sizing.upper)
    }

    /// The reference's rule, applied when the ring is full.
    fn resize_on_full(&mut self, now: Instant, dispatched: u64) -> Option<Resize> {
        if self.may_grow(now) {
            self.resize(self.grow_target(), dispatched);
            return Some(Resize::Grew);
        }
        let quarter = self.head - (self.cap as u64 / 4).max(1);
        if self.cap > self.sizing.lower
            && quarter >= self.tail
            && now.saturating_duration_since(self.applied(quarter)) > self.sizing.window
        {
            self.resize((self.cap / 2).max(self.sizing.lower), dispatched);
            return Some(Resize::Shrank);
        }
        None
    }

    /// Herald's idle rule, run on the maintenance tick: when even the newest
    /// record is older than the window, halve (the reference only resizes on
    /// a write, so a ring grown by a burst stays large forever).
    pub(crate) fn shrink_if_idle(&mut self, now: Instant, dispatched: u64) -> Option<Resize> {
        if self.cap <= self.sizing.lower || self.head == 0 {
            return None;
        }
        let newest = self.applied(self.head - 1);
        if now.saturating_duration_since(newest) <= self.sizing.window {
            return None;
        }
        self.resize((self.cap / 2).max(self.sizing.lower), dispatched);
        Some(Resize::Shrank)
    }

    /// Moves the retained records into a new slot array for capacity `cap`.
    fn resize(&mut self, cap: usize, dispatched: u64) {
        if cap > self.cap {
            self.grows += 1;
        } else if cap < self.cap {
            self.shrinks += 1;
        }
        self.cap = cap;
        while self.len() > self.cap {
            self.evict_oldest();
        }
        // Keep every undispatched record, even if outside the window, and
        // room for the next write.
        let keep_from = self.tail.min(dispatched) / CHUNK * CHUNK;
        let need = (self.head - keep_from + 1) as usize;
        let physical = physical_for(cap.max(need));
        if physical as u64 == self.physical() {
            return;
        }
        let new = Slots::with_capacity(physical);
        for base in (keep_from..self.head).step_by(CHUNK as usize) {
            new.cell(base).store(self.slots.cell(base).load_full());
        }
        // The new array is published before any record is written into it;
        // see the module's Synchronization section.
        self.slots = Arc::new(new);
        self.ring.slots.store(self.slots.clone());
    }

    /// The oldest resource version a watch may start after, minus one (the
    /// reference's `oldest - 1`): a watch from RV `r` is served iff
    /// `r >= oldest_minus_one()`.
    pub(crate) fn oldest_minus_one(&self) -> ResourceVersion {
        if self.tail == self.servable_from {
            // Nothing evicted since the last (re)list.
            self.list_rv
        } else if self.tail == self.head {
            // Everything evicted (byte bound): only the present is servable.
            self.own(self.head - 1, |r| r.rv)
        } else {
            ResourceVersion::new(self.own(self.tail, |r| r.rv).get() - 1)
        }
    }

    /// The first retained position whose record is newer than `rv`, or the
    /// head when none is. The caller has checked `rv >= oldest_minus_one()`.
    pub(crate) fn first_after(&self, rv: ResourceVersion) -> u64 {
        let (mut lo, mut hi) = (self.tail, self.head);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.own(mid, |r| r.rv) > rv {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// What a record holds from its writer; the ring adds its time, its size
/// and its position ([`RingWriter::append`], [`RingWriter::push`]).
pub(crate) struct NewRecord {
    pub(crate) kind: RecordKind,
    pub(crate) rv: ResourceVersion,
    /// The object after the change (none for a re-list's marker).
    pub(crate) object: Option<Object>,
    /// Its previous state, and that state's version.
    pub(crate) prev: Option<Object>,
    pub(crate) prev_rv: Option<ResourceVersion>,
    pub(crate) generation: u64,
}

impl NewRecord {
    /// A re-list's marker, opening `generation` at `rv`.
    pub(crate) fn relist(rv: ResourceVersion, generation: u64) -> NewRecord {
        NewRecord {
            kind: RecordKind::Relist,
            rv,
            object: None,
            prev: None,
            prev_rv: None,
            generation,
        }
    }
}

/// The bytes a record of `object` counts for the byte bound (a record
/// without an object, 64), saturated to fit the record's `u32`.
pub(crate) fn record_bytes(object: Option<&Object>) -> usize {
    let bytes = object.map_or(64, Object::approx_bytes);
    u32::try_from(bytes).unwrap_or(u32::MAX) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizing(lower: usize, upper: usize, window: Duration) -> Sizing {
        Sizing {
            lower,
            upper,
            window,
            max_bytes: None,
            epoch: Instant::now(),
        }
    }

    #[test]
    #[cfg(not(herald_loom))]
    fn a_record_stays_small() {
        // Every follower reads every record: its size is their cache
        // traffic (104 bytes before positions and times were packed).
        assert!(std::mem::size_of::<OnceLock<Record>>() <= 80);
    }

    fn obj(i: u64) -> Option<Object> {
        Some(Object::builder("ns", &i.to_string()).build())
    }

    /// An addition of object `rv` at `rv`, in generation 1.
    fn added(rv: u64) -> NewRecord {
        NewRecord {
            kind: RecordKind::Change(ChangeKind::Added),
            rv: rv.into(),
            object: obj(rv),
            prev: None,
            prev_rv: None,
            generation: 1,
        }
    }

    fn change(w: &mut RingWriter, rv: u64, at: Instant) -> Option<Resize> {
        w.append(added(rv), at, u64::MAX).unwrap().1
    }

    #[test]
    fn grows_while_young_and_stops_at_upper_bound() {
        let (mut w, ring) = RingWriter::new(sizing(4, 16, Duration::from_secs(60)));
        let t = Instant::now();
        for rv in 1..=40 {
            change(&mut w, rv, t);
        }
        assert_eq!(w.capacity(), 16);
        assert_eq!(w.grows, 2);
        assert_eq!(w.len(), 16);
        // The window holds the newest 16.
        let mut c = ring.cursor();
        assert_eq!(ring.read(&mut c, 39).unwrap().rv.get(), 40);
        assert_eq!(ring.read(&mut c, 24).unwrap().rv.get(), 25);
        assert_eq!(w.oldest_minus_one().get(), 24);
    }

    #[test]
    fn shrinks_when_the_newest_quarter_is_old() {
        let (mut w, _ring) = RingWriter::new(sizing(4, 64, Duration::from_secs(10)));
        let t0 = Instant::now();
        for rv in 1..=32 {
            change(&mut w, rv, t0);
        }
        assert_eq!(w.capacity(), 32);
        // A write 11 s later finds a full ring whose newest quarter is stale.
        let r = change(&mut w, 33, t0 + Duration::from_secs(11));
        assert_eq!(r, Some(Resize::Shrank));
        assert_eq!(w.capacity(), 16);
        assert_eq!(w.len(), 16);
    }

    #[test]
    fn shrinks_when_idle() {
        let (mut w, _ring) = RingWriter::new(sizing(4, 64, Duration::from_secs(10)));
        let t0 = Instant::now();
        for rv in 1..=20 {
            change(&mut w, rv, t0);
        }
        assert_eq!(w.capacity(), 32);
        assert_eq!(
            w.shrink_if_idle(t0 + Duration::from_secs(5), u64::MAX),
            None
        );
        let later = t0 + Duration::from_secs(11);
        assert_eq!(w.shrink_if_idle(later, u64::MAX), Some(Resize::Shrank));
        assert_eq!(w.shrink_if_idle(later, u64::MAX), Some(Resize::Shrank));
        assert_eq!(w.shrink_if_idle(later, u64::MAX), Some(Resize::Shrank));
        assert_eq!(w.capacity(), 4);
        assert_eq!(w.shrink_if_idle(later, u64::MAX), None);
        assert_eq!(w.len(), 4);
        assert_eq!(w.oldest_minus_one().get(), 16);
    }

    #[test]
    fn writer_is_gated_by_the_dispatcher_not_by_readers() {
        let (mut w, ring) = RingWriter::new(sizing(4, 4, Duration::from_secs(60)));
        let t = Instant::now();
        let physical = w.physical();
        assert_eq!(
            physical,
            2 * CHUNK,
            "two chunks hold four records and the next"
        );
        let append =
            |w: &mut RingWriter, rv: u64, dispatched: u64| w.append(added(rv), t, dispatched);
        for rv in 1..=physical {
            append(&mut w, rv, 0).unwrap();
        }
        // A reader caches the first chunk.
        let mut holder = ring.cursor();
        assert_eq!(ring.read(&mut holder, 0).unwrap().rv.get(), 1);
        // The next write starts a chunk that replaces the first, which holds
        // undispatched records: refused until the whole chunk is dispatched.
        let next = physical + 1;
        assert_eq!(append(&mut w, next, 0), Err(Gated { reused: CHUNK - 1 }));
        assert_eq!(
            append(&mut w, next, CHUNK - 1),
            Err(Gated { reused: CHUNK - 1 })
        );
        assert_eq!(ring.head(), physical);
        // Once dispatched, the writer laps the (slow) readers: one that does
        // not hold the chunk learns it; one that holds it still reads the
        // records, which never change once written.
        append(&mut w, next, CHUNK).unwrap();
        let mut fresh = ring.cursor();
        assert!(ring.read(&mut fresh, 0).is_err());
        assert_eq!(ring.read(&mut fresh, physical).unwrap().rv.get(), next);
        assert_eq!(ring.read(&mut holder, 1).unwrap().rv.get(), 2);
    }

    #[test]
    fn relist_empties_the_window() {
        let (mut w, _ring) = RingWriter::new(sizing(8, 8, Duration::from_secs(60)));
        let t = Instant::now();
        for rv in 1..=5 {
            change(&mut w, rv, t);
        }
        w.append(NewRecord::relist(10.into(), 2), t, u64::MAX)
            .unwrap();
        assert_eq!(w.len(), 0);
        assert_eq!(w.oldest_minus_one().get(), 10);
        assert_eq!(w.first_after(10.into()), w.head());
        change(&mut w, 11, t);
        assert_eq!(w.first_after(10.into()), w.head() - 1);
    }

    #[test]
    fn byte_bound_evicts_oldest() {
        let mut s = sizing(100, 100, Duration::from_secs(60));
        let one = obj(1).unwrap().approx_bytes();
        s.max_bytes = Some(one * 3 + one / 2);
        let (mut w, _ring) = RingWriter::new(s);
        let t = Instant::now();
        for rv in 1..=9 {
            change(&mut w, rv, t);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.oldest_minus_one().get(), 6);
    }
}
