//! Memory held for watches that are gone (issue 14, findings 1 and 9): a
//! dropped watch's memory is released, whatever the clock does. Bytes are
//! counted by this binary's global allocator; the tests take turns (one
//! lock), so each sees only its own engine's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use herald::clock::ManualClock;
use herald::*;
use herald_testkit::{eventually, lock};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static TURN: Mutex<()> = Mutex::new(());

// SAFETY: forwards every call to `System` unchanged; the counter is a
// side effect that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Waits until the engine holds no ended watch, then returns the bytes
/// allocated above `base`.
fn settled_above(engine: &Engine, base: isize, live: u64) -> isize {
    eventually("the dispatcher releases ended watches", || {
        let s = engine.stats();
        s.watchers_active + s.watchers_pending == live && s.watchers_retiring == 0
    });
    live_bytes() - base
}

// Finding 9: dropped bookmark watches were held until their next bookmark
// time (forever on a manual clock that does not move): 20k -> 8.7 MiB.
#[test]
fn dropped_bookmark_watches_are_released_on_a_still_clock() {
    let _turn = lock(&TURN);
    let clock = ManualClock::new();
    let (engine, mut writer) = Engine::new(Config::default().clock(clock.clone())).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let keep = engine
        .watch(WatchRequest::new().allow_bookmarks(true))
        .unwrap();
    let _ = settled_above(&engine, 0, 1);
    let base = live_bytes();
    let watches: Vec<Watch> = (0..20_000)
        .map(|_| {
            engine
                .watch(
                    WatchRequest::new()
                        .allow_bookmarks(true)
                        .timeout(Duration::from_secs(3600)),
                )
                .unwrap()
        })
        .collect();
    eventually("all registered", || {
        engine.stats().watchers_active == 20_001
    });
    assert!(
        live_bytes() - base > 20_000 * 100,
        "the watches cost memory"
    );
    drop(watches);
    let held = settled_above(&engine, base, 1);
    // A few hundred bytes of scratch capacity may remain; 20k watches'
    // worth (megabytes) may not.
    assert!(
        held < 256 * 1024,
        "{held} bytes still held for dropped watches"
    );
    drop(keep);
}

// Finding 1: churn must not leave memory behind once it stops.
#[test]
fn churned_watches_are_released() {
    let _turn = lock(&TURN);
    let (engine, mut writer) = Engine::new(Config::default().index("spec.nodeName")).unwrap();
    writer.replace(Relist::new([], 1.into())).unwrap();
    let _ = settled_above(&engine, 0, 0);
    let base = live_bytes();
    for i in 0..50_000u64 {
        let req = match i % 3 {
            0 => WatchRequest::new().resource_version(Some(1.into())),
            1 => WatchRequest::new().fields("spec.nodeName=n1".parse().unwrap()),
            _ => WatchRequest::new().resource_version(Some(1_000_000.into())),
        };
        drop(engine.watch(req).unwrap());
    }
    let held = settled_above(&engine, base, 0);
    assert!(held < 256 * 1024, "{held} bytes still held after churn");
}
