//! Internals the loom models (`loom-tests/`) drive directly. Compiled only
//! under `--cfg herald_loom`; not part of the API.
//!
//! Each wrapper is a thin, safe face on the real code: the models exercise
//! the engine's own ring and queue, not copies of them.

use std::time::{Duration, Instant};

use crate::event::ChangeKind;
use crate::queue::Queue;
use crate::ring::{NewRecord, ReadCursor, RecordKind, Ring, RingWriter, Sizing};
use crate::sync::Arc;
use crate::{Object, ResourceVersion};

/// The writer's half of a history ring whose record at position `p`
/// carries resource version `p + 1` and an object named after it.
#[derive(Debug)]
pub struct RingWriterModel {
    writer: RingWriter,
    at: Instant,
}

/// A reader's half: a replaying watcher or the dispatcher.
#[derive(Debug)]
pub struct RingReaderModel {
    ring: Arc<Ring>,
    cursor: ReadCursor,
}

/// What a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The record's own position stamp.
    pub pos: u64,
    /// Its resource version.
    pub rv: u64,
    /// Its object's name.
    pub name: String,
}

/// A ring of `lower..=upper` records (the history window is long, so it
/// grows while full up to `upper`).
pub fn ring(lower: usize, upper: usize) -> (RingWriterModel, RingReaderModel) {
    let (writer, ring) = RingWriter::new(Sizing {
        lower,
        upper,
        window: Duration::from_secs(3600),
        max_bytes: None,
        epoch: Instant::now(),
    });
    let cursor = ring.cursor();
    (
        RingWriterModel {
            writer,
            at: Instant::now(),
        },
        RingReaderModel { ring, cursor },
    )
}

impl RingWriterModel {
    /// Appends the next change, given the dispatcher's cursor; returns its
    /// position, or `None` when the writer is gated on the dispatcher.
    pub fn append(&mut self, dispatched: u64) -> Option<u64> {
        let pos = self.writer.head();
        let object = Object::builder("ns", &(pos + 1).to_string()).build();
        let new = NewRecord {
            kind: RecordKind::Change(ChangeKind::Added),
            rv: ResourceVersion::new(pos + 1),
            object: Some(object),
            prev: None,
            prev_rv: None,
            generation: 1,
        };
        self.writer
            .append(new, self.at, dispatched)
            .ok()
            .map(|(p, _)| p)
    }

    /// The writer's own head.
    pub fn head(&self) -> u64 {
        self.writer.head()
    }

    /// The slots of the current array.
    pub fn physical_len(&self) -> u64 {
        self.writer.physical()
    }
}

impl RingReaderModel {
    /// The published head (`Acquire`).
    pub fn head(&self) -> u64 {
        self.ring.head()
    }

    /// Reads position `pos` (below a head this reader loaded); `None` when
    /// the ring says it was overwritten.
    pub fn read(&mut self, pos: u64) -> Option<ReadRecord> {
        let rec = self.ring.read(&mut self.cursor, pos).ok()?;
        Some(ReadRecord {
            // The position the chunk's stamp places it at (records do not
            // store theirs); `rv` tells a misplaced record.
            pos,
            rv: rec.rv.get(),
            name: rec.object.as_ref().map(|o| o.name().to_owned())?,
        })
    }
}

/// The watcher queue: single producer, single consumer.
#[derive(Debug)]
pub struct QueueModel(Queue);

impl QueueModel {
    /// A queue of `cap` handles (1: the one-slot queue).
    pub fn new(cap: usize) -> QueueModel {
        QueueModel(Queue::new(cap))
    }

    /// Producer: enqueues, or returns false when full.
    pub fn push(&self, v: u64) -> bool {
        self.0.push(v).is_ok()
    }

    /// Consumer: dequeues.
    pub fn pop(&self) -> Option<u64> {
        self.0.pop()
    }
}
