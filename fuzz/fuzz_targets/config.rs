//! Fuzz target for [`herald::Config`]: every setting a program (or a
//! configuration file it reads) can give an engine, then a short life of
//! that engine (`engine/src/engine.rs`, `ring.rs`, `dispatch/`,
//! `bookmarks.rs`, `watch/`).
//!
//! The input's bytes choose, each from edge values or freely:
//!
//! * `history_bounds` (0, 1, small, the reference's 100 / 102,400, `1 << 62`,
//!   `usize::MAX`, any);
//! * `history_window`, `too_large_timeout`, `tick`, `bookmark_frequency`
//!   (zero, 1 ns, 1 ms, 1 s, 1 h, `u64::MAX` s, `Duration::MAX`, any);
//! * `history_max_bytes`, `spill_limit` (0, 1, 4,096, `usize::MAX`, any);
//! * the slow-watcher policy (Park, the reference budget, a budget with
//!   any durations);
//! * trigger and list indexes (empty, repeated, `metadata.*`, any text).
//!
//! It checks:
//!
//! * **`Engine::new` never panics**: a config it cannot work with is a
//!   `ConfigError` with a message;
//! * then, on a [`ManualClock`](herald::clock::ManualClock), a scenario: the
//!   initial list; watches from the present, from the list, from the
//!   future and from `u64::MAX`, with bookmarks, initial events and
//!   deadlines of any length; changes, progress and clock moves
//!   interleaved with `try_recv`, `recv_timeout` (at most 2 ms) and reads;
//!   then `stop`. No call panics; every watch yields events in
//!   resource-version order, bookmarks only if it allowed them, then
//!   exactly one `End` (`EngineStopped` at the latest), then nothing.
//!   Initial events come in key order (each with its object's version),
//!   so the order is checked for watches from a version, and for watches
//!   from the state after their initial-events-end bookmark.
//!
//! It crashed at once on huge durations and bounds before issue 14's
//! fixes (the engine added durations to instants and sized the ring from
//! the bounds unchecked).

#![no_main]

use std::time::Duration;

use herald::clock::ManualClock;
use herald::config::SlowWatchers;
use herald::read::{ListRequest, ReadAt};
use herald::watch::{RecvTimeoutError, TryRecvError};
use herald::{Change, Config, Engine, EventKind, Object, Relist, Watch, WatchItem, WatchRequest};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

const NODE: &str = "spec.nodeName";

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});

fn size(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => 0,
        1 => 1,
        2 => u.int_in_range(2..=64)?,
        3 => 100,
        4 => 102_400,
        5 => 1 << 62,
        6 => usize::MAX,
        _ => u.arbitrary()?,
    })
}

fn duration(u: &mut Unstructured<'_>) -> Result<Duration> {
    Ok(match u.int_in_range(0..=8u8)? {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(1),
        2 => Duration::from_millis(1),
        3 => Duration::from_secs(1),
        4 => Duration::from_secs(3600),
        5 => Duration::from_secs(u64::MAX),
        6 => Duration::MAX,
        7 => Duration::from_millis(u.int_in_range(0..=120_000)?),
        _ => Duration::new(u.arbitrary()?, u.int_in_range(0..=999_999_999)?),
    })
}

fn field_name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=5u8)? {
        0 => NODE.to_owned(),
        1 => "metadata.name".to_owned(),
        2 => "metadata.namespace".to_owned(),
        3 => String::new(),
        4 => "status.phase".to_owned(),
        _ => u.arbitrary()?,
    })
}

fn config(u: &mut Unstructured<'_>, clock: &ManualClock) -> Result<Config> {
    let mut c = Config::default().clock(clock.clone());
    if u.arbitrary()? {
        c = c.history_bounds(size(u)?, size(u)?);
    }
    if u.arbitrary()? {
        c = c.history_window(duration(u)?);
    }
    if u.arbitrary()? {
        c = c.too_large_timeout(duration(u)?);
    }
    if u.arbitrary()? {
        c = c.tick(duration(u)?);
    }
    if u.arbitrary()? {
        c = c.bookmark_frequency(duration(u)?);
    }
    if u.arbitrary()? {
        c = c.history_max_bytes(size(u)?);
    }
    if u.arbitrary()? {
        c = c.spill_limit(size(u)?);
    }
    c = match u.int_in_range(0..=2u8)? {
        0 => c,
        1 => c.slow_watchers(SlowWatchers::reference_budget()),
        _ => c.slow_watchers(SlowWatchers::TimeBudget {
            refill_per_second: duration(u)?,
            cap: duration(u)?,
        }),
    };
    for _ in 0..u.int_in_range(0..=2u8)? {
        c = c.index(&field_name(u)?);
    }
    for _ in 0..u.int_in_range(0..=2u8)? {
        c = c.list_index(&field_name(u)?);
    }
    Ok(c)
}

fn pod(i: u8, node: u8) -> Object {
    Object::builder("ns", &format!("pod-{}", i % 8))
        .field(NODE, &format!("node-{}", node % 3))
        .build()
}

/// A watch and what the target knows of it.
struct Watcher {
    watch: Watch,
    bookmarks: bool,
    /// Events come in version order: a watch from a version, or one from
    /// the state once its initial-events-end bookmark has come (initial
    /// events come in key order, each with its object's own version).
    ordered: bool,
    last_rv: u64,
    ended: bool,
}

impl Watcher {
    /// Checks one item against what came before it.
    fn see(&mut self, item: WatchItem) {
        assert!(!self.ended, "an item after the end: {item:?}");
        match item {
            WatchItem::Event(ev) => {
                let rv = ev.resource_version().get();
                if ev.kind() == EventKind::Bookmark {
                    assert!(self.bookmarks, "a bookmark it did not allow");
                }
                if ev.is_initial_events_end() {
                    self.ordered = true;
                } else if self.ordered {
                    assert!(rv >= self.last_rv, "{rv} after {}", self.last_rv);
                }
                self.last_rv = rv;
            }
            WatchItem::End(_) => self.ended = true,
        }
    }
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let clock = ManualClock::new();
    let config = config(u, &clock)?;
    let (engine, mut writer) = match Engine::new(config) {
        Ok(pair) => pair,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return Ok(());
        }
    };
    let mut rv: u64 = 10;
    writer
        .replace(Relist::new(
            (0..u.int_in_range(0..=8u8)?).map(|i| pod(i, i)),
            rv.into(),
        ))
        .expect("the first list");
    let mut watchers: Vec<Watcher> = Vec::new();
    for _ in 0..u.int_in_range(0..=24u8)? {
        match u.int_in_range(0..=7u8)? {
            0 | 1 => {
                let from = match u.int_in_range(0..=4u8)? {
                    0 => None,
                    1 => Some(0),
                    2 => Some(10),
                    3 => Some(rv + u64::from(u.int_in_range(1..=5u8)?)),
                    _ => Some(u64::MAX),
                };
                let bookmarks: bool = u.arbitrary()?;
                let initial = bookmarks && u.arbitrary()?;
                let mut req = WatchRequest::new()
                    .resource_version(from.map(Into::into))
                    .allow_bookmarks(bookmarks)
                    .send_initial_events(initial);
                if u.arbitrary()? {
                    req = req.timeout(duration(u)?);
                }
                if u.arbitrary()? {
                    let node = u.int_in_range(0..=2u8)?;
                    req = req.fields(format!("{NODE}=node-{node}").parse().expect("selector"));
                }
                if let Ok(watch) = engine.watch(req) {
                    watchers.push(Watcher {
                        watch,
                        bookmarks,
                        ordered: !initial && from.is_some_and(|r| r > 0),
                        last_rv: 0,
                        ended: false,
                    });
                }
            }
            2 | 3 => {
                rv += 1;
                let (i, node) = (u.arbitrary()?, u.arbitrary()?);
                let change = match u.int_in_range(0..=2u8)? {
                    0 => Change::added(pod(i, node), rv.into()),
                    1 => Change::modified(pod(i, node), rv.into()),
                    _ => Change::deleted(pod(i, node), rv.into()),
                };
                let _ = writer.apply(change);
            }
            4 => {
                rv += u64::from(u.int_in_range(0..=3u8)?);
                let _ = writer.progress(rv.into());
            }
            5 => clock.advance(match u.int_in_range(0..=2u8)? {
                0 => Duration::from_millis(u.int_in_range(0..=2_000)?),
                1 => Duration::from_secs(u.int_in_range(0..=120)?),
                _ => Duration::from_secs(3600),
            }),
            6 if !watchers.is_empty() => {
                let i = u.choose_index(watchers.len())?;
                let w = &mut watchers[i];
                if u.arbitrary()? {
                    match w.watch.try_recv() {
                        Ok(item) => w.see(item),
                        Err(TryRecvError::Finished) => assert!(w.ended),
                        Err(_) => {}
                    }
                } else {
                    let wait = Duration::from_micros(u.int_in_range(0..=2_000)?);
                    match w.watch.recv_timeout(wait) {
                        Ok(item) => w.see(item),
                        Err(RecvTimeoutError::Finished) => assert!(w.ended),
                        Err(_) => {}
                    }
                }
            }
            _ => {
                // Reads that cannot wait on the manual clock.
                let at = if u.arbitrary()? {
                    ReadAt::Any
                } else {
                    ReadAt::Exact(u.int_in_range(0..=rv)?.into())
                };
                let _ = engine.list(&ListRequest::new().limit(u.int_in_range(0..=4)?).at(at));
                let _ = engine.get("ns/pod-1", at);
            }
        }
    }
    engine.stop();
    for w in &mut watchers {
        for _ in 0..100_000 {
            match w.watch.recv_timeout(Duration::from_secs(10)) {
                Ok(item) => w.see(item),
                Err(RecvTimeoutError::Finished) => break,
                Err(e) => panic!("a watch of a stopped engine did not end: {e:?}"),
            }
        }
        assert!(w.ended, "a watch without an end");
        assert!(w.watch.is_finished());
    }
    Ok(())
}
