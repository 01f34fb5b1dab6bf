//! Loom models of the watch set's wake protocol (`src/set.rs`): whatever
//! the interleaving of wakes and reads, a member left in the queue is
//! never behind a descriptor that is not readable (the loop would sleep
//! with a ready watch: a lost wake-up), and one wake is one report.
//!
//! ```text
//! RUSTFLAGS="--cfg herald_loom" cargo test -p herald-ready --test loom_set --release
//! ```

#![cfg(herald_loom)]

use std::sync::Arc;

use herald_ready::ReadySet;
use loom::thread;

/// Once the threads are done: what is queued can be seen (the descriptor
/// is readable); then takes the rest into `taken`.
fn no_lost_wake(set: &ReadySet, taken: &mut Vec<u64>) {
    if !set.readable() {
        let mut rest = Vec::new();
        set.ready(&mut rest, usize::MAX);
        assert!(rest.is_empty(), "{rest:?} queued behind a quiet descriptor");
    }
    set.ready(taken, usize::MAX);
}

/// A set with members `1..=n`, each reported once already (the join
/// queues them), so the wakes that follow are new ones.
fn set_of(n: u64) -> (Arc<ReadySet>, Vec<Arc<herald_ready::Member>>) {
    let set = Arc::new(ReadySet::new().unwrap());
    let members: Vec<_> = (1..=n).map(|h| set.join(h)).collect();
    let mut first = Vec::new();
    set.ready(&mut first, usize::MAX);
    assert_eq!(first.len() as u64, n);
    (set, members)
}

#[test]
fn a_wake_racing_a_read_is_seen_by_it_or_signalled() {
    loom::model(|| {
        let (set, mut members) = set_of(1);
        let a = members.pop().unwrap();
        let waker = thread::spawn(move || a.notify());
        let mut taken = Vec::new();
        set.ready(&mut taken, 10);
        waker.join().unwrap();
        no_lost_wake(&set, &mut taken);
        assert_eq!(taken, [1], "one wake, one report");
    });
}

#[test]
fn two_wakers_and_a_reader_taking_one_at_a_time() {
    loom::model(|| {
        let (set, mut members) = set_of(2);
        let (b, a) = (members.pop().unwrap(), members.pop().unwrap());
        let ta = thread::spawn(move || a.notify());
        let tb = thread::spawn(move || b.notify());
        // One per read: what is left must keep the descriptor readable.
        let mut taken = Vec::new();
        set.ready(&mut taken, 1);
        ta.join().unwrap();
        tb.join().unwrap();
        no_lost_wake(&set, &mut taken);
        taken.sort_unstable();
        assert_eq!(taken, [1, 2]);
    });
}

#[test]
fn two_readers_and_a_waker() {
    loom::model(|| {
        let (set, mut members) = set_of(1);
        let a = members.pop().unwrap();
        let other = set.clone();
        let reader = thread::spawn(move || {
            let mut got = Vec::new();
            other.ready(&mut got, 10);
            got
        });
        let waker = thread::spawn(move || a.notify());
        let mut taken = Vec::new();
        set.ready(&mut taken, 10);
        waker.join().unwrap();
        taken.extend(reader.join().unwrap());
        no_lost_wake(&set, &mut taken);
        assert_eq!(taken, [1]);
    });
}

#[test]
fn a_member_woken_again_while_being_reported_is_reported_again() {
    loom::model(|| {
        let set = Arc::new(ReadySet::new().unwrap());
        let a = set.join(1);
        let again = a.clone();
        // The join's report races a second wake: the second wake either
        // finds it still queued (one report covers both) or queues it
        // again (a second report); never queued and unreported.
        let waker = thread::spawn(move || again.notify());
        let mut taken = Vec::new();
        set.ready(&mut taken, 10);
        waker.join().unwrap();
        no_lost_wake(&set, &mut taken);
        assert!(taken == [1] || taken == [1, 1], "{taken:?}");
        drop(a);
    });
}
