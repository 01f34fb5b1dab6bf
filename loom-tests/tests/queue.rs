//! The watcher queue (SPSC): every value pushed is popped once, in order;
//! a slot is never reused before its value was read.
#![cfg(herald_loom)]

use herald::model::QueueModel;
use herald_loom_tests::model;
use loom::sync::Arc;
use loom::thread;

#[test]
fn fifo_across_wrap_around() {
    model(|| {
        let q = Arc::new(QueueModel::new(2));
        let p = q.clone();
        let producer = thread::spawn(move || {
            for v in 1..=3 {
                while !p.push(v) {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            match q.pop() {
                Some(v) => got.push(v),
                None => thread::yield_now(),
            }
        }
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(q.pop(), None);
        producer.join().unwrap();
    });
}

#[test]
fn one_slot_hands_over_each_value() {
    model(|| {
        let q = Arc::new(QueueModel::new(1));
        let p = q.clone();
        let producer = thread::spawn(move || {
            for v in 1..=2 {
                while !p.push(v) {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 2 {
            match q.pop() {
                Some(v) => got.push(v),
                None => thread::yield_now(),
            }
        }
        assert_eq!(got, [1, 2]);
        assert_eq!(q.pop(), None);
        producer.join().unwrap();
    });
}
