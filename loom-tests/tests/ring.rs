//! The history ring: one writer appends (and wraps, and resizes) while a
//! reader replays. A reader sees each entry whole and in order, or learns
//! that it was overwritten, and only when it really was; never a torn or
//! stale entry presented as current.
#![cfg(herald_loom)]

use herald::model::{ReadRecord, RingReaderModel, ring};
use herald_loom_tests::model;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;

/// Reads every position below the head the reader sees; returns what each
/// read found.
fn replay(reader: &mut RingReaderModel) -> Vec<(u64, Option<ReadRecord>)> {
    let head = reader.head();
    (0..head).map(|pos| (pos, reader.read(pos))).collect()
}

/// A record read at `pos` is the one written there, whole.
fn assert_whole(pos: u64, r: &ReadRecord) {
    assert_eq!(r.pos, pos, "a record presented for another position");
    assert_eq!(r.rv, pos + 1, "a torn record (rv)");
    assert_eq!(r.name, (pos + 1).to_string(), "a torn record (object)");
}

#[test]
fn writer_wraps_while_a_reader_replays() {
    model(|| {
        // Two records kept; under loom a chunk holds two positions and the
        // array four, so the fifth record starts a chunk that replaces the
        // first two.
        let (mut writer, mut reader) = ring(2, 2);
        let w = thread::spawn(move || {
            for _ in 0..6 {
                writer.append(u64::MAX).expect("never gated here");
            }
            (writer.head(), writer.physical_len())
        });
        let seen = replay(&mut reader);
        let (head, physical) = w.join().unwrap();
        for (pos, read) in seen {
            match read {
                Some(r) => assert_whole(pos, &r),
                // Overwritten only if the writer wrote `pos + physical` (a
                // reader holding the old chunk may still read it).
                None => assert!(
                    pos + physical < head,
                    "position {pos} reported overwritten, but the writer stopped at {head}"
                ),
            }
        }
    });
}

#[test]
fn a_resize_never_hides_a_retained_record() {
    model(|| {
        // One record growing to four: every record stays retained, across
        // the array replacement of the third append (four positions to
        // eight).
        let (mut writer, mut reader) = ring(1, 4);
        let w = thread::spawn(move || {
            for _ in 0..3 {
                writer.append(u64::MAX).expect("never gated here");
            }
        });
        for (pos, read) in replay(&mut reader) {
            let r = read.unwrap_or_else(|| panic!("retained record {pos} reported overwritten"));
            assert_whole(pos, &r);
        }
        w.join().unwrap();
    });
}

#[test]
fn the_writer_never_overwrites_an_undispatched_record() {
    model(|| {
        // The dispatcher's cursor gates the writer: the reader below plays
        // the dispatcher, publishing `dispatched` (Release) after reading.
        let (mut writer, mut reader) = ring(2, 2);
        let dispatched = Arc::new(AtomicU64::new(0));
        let d = dispatched.clone();
        // Five records: the fifth starts a chunk that would replace the
        // first, and must wait until both of its records are dispatched.
        let w = thread::spawn(move || {
            for _ in 0..5 {
                // Acquire: pairs with the dispatcher's Release below.
                while writer.append(d.load(Ordering::Acquire)).is_none() {
                    thread::yield_now();
                }
            }
        });
        let mut next = 0;
        while next < 5 {
            let head = reader.head();
            if next == head {
                thread::yield_now();
                continue;
            }
            let r = reader
                .read(next)
                .unwrap_or_else(|| panic!("undispatched record {next} was overwritten"));
            assert_whole(next, &r);
            next += 1;
            dispatched.store(next, Ordering::Release);
        }
        w.join().unwrap();
    });
}
