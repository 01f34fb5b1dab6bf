//! Cancel from another thread (issue 16, point 5): a `WatchStopper` ends a
//! watch blocked in each receive mode, waking it with `Stopped`; a
//! `ReadCancel` ends a read waiting for a version. Bounds on "promptly" are
//! generous: the machine is shared and noisy.

mod common;

use std::sync::mpsc;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use herald::read::{ListRequest, ReadAt, ReadCancel, ReadError};
use herald::*;
use herald_testkit::ThreadWaker;

const PROMPTLY: Duration = Duration::from_secs(10);

fn listed() -> (Engine, Writer) {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    (engine, writer)
}

fn quiet_watch(engine: &Engine) -> Watch {
    engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap()
}

/// Runs `receive` on a thread, stops the watch once the thread is blocked
/// in it, and returns what it received and how long the stop took to end
/// the receive.
fn stop_while_blocked<T: Send + 'static>(
    mut watch: Watch,
    receive: impl FnOnce(&mut Watch) -> T + Send + 'static,
) -> (T, Duration) {
    let stopper = watch.stopper();
    let (started, is_started) = mpsc::channel();
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        started.send(()).unwrap();
        let _ = done.send(receive(&mut watch));
    });
    is_started.recv().unwrap();
    // Let it block (a stop before it blocks is a plain stop; both must work).
    thread::sleep(Duration::from_millis(50));
    let at = Instant::now();
    stopper.stop();
    // A receiver the stop did not wake fails here rather than hangs.
    let got = result
        .recv_timeout(PROMPTLY)
        .expect("the stop did not wake the blocked receiver");
    (got, at.elapsed())
}

#[test]
fn a_stopper_wakes_a_blocked_recv() {
    let (engine, _writer) = listed();
    let (got, took) = stop_while_blocked(quiet_watch(&engine), |w| w.recv());
    assert_eq!(got, Some(WatchItem::End(EndReason::Stopped)));
    assert!(took < PROMPTLY, "{took:?}");
}

#[test]
fn a_stopper_wakes_a_blocked_recv_timeout() {
    let (engine, _writer) = listed();
    let (got, took) = stop_while_blocked(quiet_watch(&engine), |w| {
        w.recv_timeout(Duration::from_secs(3600))
    });
    assert_eq!(got, Ok(WatchItem::End(EndReason::Stopped)));
    assert!(took < PROMPTLY, "{took:?}");
}

#[test]
fn a_stopper_wakes_a_pending_stream_poll() {
    let (engine, _writer) = listed();
    let (got, took) = stop_while_blocked(quiet_watch(&engine), |w| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            use futures::StreamExt;
            let first = w.next().await;
            (first, w.next().await)
        })
    });
    assert_eq!(got, (Some(WatchItem::End(EndReason::Stopped)), None));
    assert!(took < PROMPTLY, "{took:?}");
}

#[test]
fn a_stopper_wakes_a_pending_poll_visit_batch() {
    let (engine, _writer) = listed();
    let (got, took) = stop_while_blocked(quiet_watch(&engine), |w| {
        let waker = ThreadWaker::current();
        let mut cx = Context::from_waker(&waker);
        loop {
            match w.poll_visit_batch(&mut cx, 64, |_| {}) {
                Poll::Ready(visited) => return visited,
                // Parked until the waker is woken: only the stop wakes it.
                Poll::Pending => thread::park(),
            }
        }
    });
    assert_eq!((got.events, got.end), (0, Some(EndReason::Stopped)));
    assert!(took < PROMPTLY, "{took:?}");
}

/// A stop racing a writer: what the watch received before its end is a
/// gap-free prefix of the changes, and nothing comes after the end.
#[test]
fn a_stop_racing_changes_ends_a_gap_free_prefix() {
    for round in 0..20 {
        let (engine, mut writer) = listed();
        let mut watch = quiet_watch(&engine);
        let stopper = watch.stopper();
        let writing = thread::spawn(move || {
            for rv in 2..=2_000u64 {
                let o = Object::builder("ns", &format!("o{}", rv % 50)).build();
                if writer.apply(Change::modified(o, rv.into())).is_err() {
                    break;
                }
            }
            writer
        });
        let stopping = thread::spawn(move || {
            thread::sleep(Duration::from_micros(200 * round));
            stopper.stop();
        });
        let (seen, end) = recv_to_end(&mut watch);
        stopping.join().unwrap();
        drop(writing.join().unwrap());
        assert_eq!(end, EndReason::Stopped);
        let versions: Vec<u64> = seen.iter().map(|s| s.rv).collect();
        let prefix: Vec<u64> = (2..2 + versions.len() as u64).collect();
        assert_eq!(versions, prefix, "round {round}");
        assert_eq!(watch.recv(), None);
    }
}

#[test]
fn a_stop_after_another_end_keeps_the_first_reason() {
    let (engine, _writer) = listed();
    let mut watch = quiet_watch(&engine);
    let stopper = watch.stopper();
    engine.stop();
    assert!(stopper.is_ended());
    stopper.stop();
    stopper.clone().stop();
    assert_eq!(watch.recv(), Some(WatchItem::End(EndReason::EngineStopped)));
    // After the watch is gone, a stop is a no-op.
    drop(watch);
    stopper.stop();
}

#[test]
fn a_cancelled_waiting_read_ends_and_others_still_time_out() {
    let (engine, _writer) =
        Engine::new(Config::default().too_large_timeout(Duration::from_millis(300))).unwrap();
    let mut writer = _writer;
    writer.replace(Relist::new([], 1.into())).unwrap();
    let cancel = ReadCancel::new();
    let future = ReadAt::NotOlderThan(9.into());
    let list = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        thread::spawn(move || {
            let req = ListRequest::new().at(future).cancel_on(&cancel);
            engine.list(&req).map(|l| l.items.len())
        })
    };
    let get = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        thread::spawn(move || engine.get_with("ns/a", ReadAt::Exact(9.into()), &cancel))
    };
    thread::sleep(Duration::from_millis(20));
    let at = Instant::now();
    cancel.cancel();
    assert_eq!(list.join().unwrap(), Err(ReadError::Cancelled));
    assert_eq!(get.join().unwrap(), Err(ReadError::Cancelled));
    assert!(at.elapsed() < PROMPTLY);
    // Without a cancel, the same wait ends as before.
    let uncancelled = engine.get_with("ns/a", future, &ReadCancel::new());
    assert!(matches!(
        uncancelled,
        Err(ReadError::TooLargeResourceVersion(_))
    ));
}
