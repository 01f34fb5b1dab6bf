//! A quick fan-out throughput probe (the perf harness proper lives in
//! `perf/`): one writer, N watchers that admit every change, a fixed pool of
//! consumer threads each draining its share of the watches in batches.
//!
//! ```text
//! cargo run --release -p herald --example throughput -- [watchers] [changes] [consumer-threads] [owned|borrowed] [park|budget]
//! ```
//!
//! `park` (the default) runs the engine with `SlowWatchers::Park`; `budget`
//! with the reference's time budget, under which a watcher that falls
//! behind the flat-out writer ends with `TooSlow` (counted, and its
//! remaining changes are not owed).
//!
//! `borrowed` (the default) drains with `Watch::visit_batch`, which lends
//! events without touching the objects' reference counts; `owned` drains
//! with `Watch::recv_batch`, one owned `Event` (one count up, one down)
//! per delivery.
//!
//! Prints deliveries per second from the first write until every watcher
//! has received every change.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use herald::config::SlowWatchers;
use herald::{Change, Config, Engine, Object, Relist, WatchItem, WatchRequest};

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .nth(n)
        .map(|a| a.parse().expect("numeric argument"))
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let watchers = arg(1, 1_000);
    let changes = arg(2, 200_000);
    let threads = arg(3, 2).max(1);
    let owned = match std::env::args().nth(4).as_deref() {
        None | Some("borrowed") => false,
        Some("owned") => true,
        Some(other) => return Err(format!("unknown mode {other:?}: owned or borrowed").into()),
    };
    let policy = match std::env::args().nth(5).as_deref() {
        None | Some("park") => SlowWatchers::Park,
        Some("budget") => SlowWatchers::reference_budget(),
        Some(other) => return Err(format!("unknown policy {other:?}: park or budget").into()),
    };

    // History large enough to hold the whole run: this probe measures
    // delivery, not what happens to watchers lapped by a faster writer.
    let (engine, mut writer) = Engine::new(
        Config::default()
            .history_bounds(100, (changes as usize + 1).max(100))
            .slow_watchers(policy),
    )?;
    writer.replace(Relist::new([], 1.into()))?;
    let objects: Vec<Object> = (0..1_000)
        .map(|i| {
            Object::builder("ns", &format!("pod-{i}"))
                .label("app", "web")
                .build()
        })
        .collect();

    let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
    for i in 0..watchers {
        let w = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
        shares[(i % threads) as usize].push(w);
    }
    while engine.stats().watchers_active < watchers {
        std::thread::yield_now();
    }
    let received = Arc::new(AtomicU64::new(0));
    let want = watchers * changes;
    let start = Instant::now();
    let consumers: Vec<_> = shares
        .into_iter()
        .map(|mut share| {
            let received = received.clone();
            std::thread::spawn(move || {
                let mut buf = Vec::with_capacity(256);
                // Per watch: changes received, or done (ended early).
                let mut got = vec![0u64; share.len()];
                let mut open = share.len();
                while open > 0 {
                    let mut pass = 0;
                    for (i, w) in share.iter_mut().enumerate() {
                        if got[i] == changes || w.is_finished() {
                            continue;
                        }
                        let n = if owned {
                            buf.clear();
                            w.recv_batch(&mut buf, 256);
                            let ended = matches!(buf.last(), Some(WatchItem::End(_)));
                            buf.len() as u64 - u64::from(ended)
                        } else {
                            let mut bytes = 0;
                            let v = w.visit_batch(256, |ev| {
                                bytes += ev.object().map_or(0, |o| o.payload().len());
                            });
                            std::hint::black_box(bytes);
                            v.events as u64
                        };
                        got[i] += n;
                        pass += n;
                        if got[i] == changes || w.is_finished() {
                            open -= 1;
                        }
                    }
                    received.fetch_add(pass, Ordering::Relaxed);
                    if pass == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for rv in 0..changes {
        let o = objects[(rv % 1_000) as usize].clone();
        writer.apply(Change::modified(o, (rv + 2).into()))?;
    }
    let write_done = start.elapsed();
    for c in consumers {
        c.join().expect("consumer");
    }
    let elapsed = start.elapsed();
    let delivered = received.load(Ordering::Relaxed);
    let s = engine.stats();
    assert!(delivered == want || s.terminations.too_slow > 0);
    println!(
        "watchers={watchers} changes={changes} consumer_threads={threads} {} {}: \
         {:.2} M deliveries/s ({:.3} s; writer done at {:.3} s; {:.0} changes/s; \
         parks {}, resumes {}, writer waits {}, too slow {}, budget rounds {}; \
         enqueued->received p50 {:?} p99 {:?})",
        if owned { "owned" } else { "borrowed" },
        if s.budget_rounds > 0 || matches!(policy, SlowWatchers::TimeBudget { .. }) {
            "budget"
        } else {
            "park"
        },
        delivered as f64 / elapsed.as_secs_f64() / 1e6,
        elapsed.as_secs_f64(),
        write_done.as_secs_f64(),
        changes as f64 / elapsed.as_secs_f64(),
        s.parks,
        s.resumes,
        s.writer_gated_waits,
        s.terminations.too_slow,
        s.budget_rounds,
        s.enqueued_to_received.quantile(0.5),
        s.enqueued_to_received.quantile(0.99),
    );
    Ok(())
}
