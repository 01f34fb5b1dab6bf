//! The Rust twin of `epoll_server.c`: the same writer, watches and
//! readiness loop on Herald's Rust API, without the C ABI (no handles, no
//! views, no FFI). `bindings/c/bench.sh` runs both, round by round: the
//! twin is the ceiling the C binding is measured against.
//!
//! ```text
//! cargo run --release -p herald-c --example rust_twin -- --watches 1000 --changes 20000 --payload 8
//! ```

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use herald::{Change, Config, Engine, Object, Relist, ResourceVersion, WatchRequest};
use herald_c::set::ReadySet;

/// Latency is sampled on this many watches (every event of each).
const SAMPLED: usize = 10;

fn arg(args: &[String], name: &str, default: f64) -> f64 {
    args.windows(2)
        .find(|w| w[0] == name)
        .and_then(|w| w[1].parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let watches = arg(&args, "--watches", 1000.0) as usize;
    let changes = arg(&args, "--changes", 20000.0) as u64;
    let rate = arg(&args, "--rate", 0.0);
    let payload = (arg(&args, "--payload", 8.0) as usize).max(8);
    let (engine, mut writer) = Engine::new(Config::default())?;
    writer.replace(Relist::new([], ResourceVersion::new(1)))?;

    let set = Arc::new(ReadySet::new()?);
    let mut ws = Vec::with_capacity(watches);
    let mut wakers = Vec::with_capacity(watches);
    for i in 0..watches {
        ws.push(engine.watch(WatchRequest::new().resource_version(Some(1.into())))?);
        wakers.push(Waker::from(set.join(i as u64)));
    }
    let mut next = vec![2u64; watches];
    let mut lat: Vec<u64> = Vec::with_capacity(SAMPLED * changes as usize);
    let owed = watches as u64 * changes;
    let clock = Instant::now();
    let now_ns = move || clock.elapsed().as_nanos() as u64;

    let t0 = Instant::now();
    let writer_thread = std::thread::spawn(move || {
        let start = now_ns();
        for i in 0..changes {
            if rate > 0.0 {
                let due = start + (i as f64 * 1e9 / rate) as u64;
                while now_ns() < due {
                    let left = due.saturating_sub(now_ns());
                    if left > 200_000 {
                        std::thread::sleep(Duration::from_nanos(left - 100_000));
                    }
                }
            }
            let sent = now_ns();
            let mut body = vec![0u8; payload];
            body[..8].copy_from_slice(&sent.to_ne_bytes());
            let pod = Object::builder("default", "pod-0")
                .label("app", "web")
                .payload(body)
                .build();
            let rv = ResourceVersion::new(2 + i);
            let change = if i == 0 {
                Change::added(pod, rv)
            } else {
                Change::modified(pod, rv)
            };
            writer.apply(change).expect("apply");
        }
        writer
    });

    let (mut delivered, mut errors) = (0u64, 0u64);
    let mut ready = Vec::with_capacity(256);
    let mut sent = Vec::with_capacity(64);
    let mut pfd = libc::pollfd {
        fd: set.raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    while delivered < owed {
        // SAFETY: one live pollfd.
        let got = unsafe { libc::poll(&raw mut pfd, 1, 10_000) };
        if got == 0 {
            return Err(format!("nothing for 10 s at {delivered} of {owed}").into());
        }
        ready.clear();
        set.ready(&mut ready, 256);
        for &id in &ready {
            let i = id as usize;
            let mut cx = Context::from_waker(&wakers[i]);
            let mut n = 0;
            sent.clear();
            let polled = ws[i].poll_visit_batch(&mut cx, 64, |ev| {
                let rv = ev.resource_version().get();
                errors += u64::from(rv != next[i]);
                next[i] = rv + 1;
                // What a consumer does at least, and what the C ABI's
                // views give it: every event's key and payload, looked at.
                if let Some(o) = ev.object() {
                    std::hint::black_box((o.key().as_bytes().first(), o.payload().first()));
                }
                if let Some(o) = ev.object()
                    && i < SAMPLED
                    && let Some(Ok(b)) = o.payload().get(..8).map(<[u8; 8]>::try_from)
                {
                    sent.push(u64::from_ne_bytes(b));
                }
                n += 1;
            });
            // Received when the batch is (as the C loop stamps it).
            let at = now_ns();
            lat.extend(sent.iter().map(|s| at.saturating_sub(*s)));
            if let Poll::Ready(v) = polled {
                if let Some(end) = v.end {
                    return Err(format!("watch {i} ended: {end}").into());
                }
                if n > 0 {
                    // As the C ABI does: had something, so look again.
                    wakers[i].wake_by_ref();
                }
            }
            delivered += n;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(writer_thread.join());
    lat.sort_unstable();
    let q = |p: f64| {
        lat.get((lat.len() as f64 * p) as usize)
            .map_or(0.0, |&v| v as f64 / 1e3)
    };
    println!(
        "served {watches} watches from one poll loop (Rust, no C ABI): {delivered} deliveries in {secs:.3} s, {errors} out of order"
    );
    println!(
        "payload={payload} watches={watches} changes={changes} delivered={delivered} seconds={secs:.6} deliveries_per_s={:.0} p50_us={:.1} p99_us={:.1} errors={errors}",
        delivered as f64 / secs,
        q(0.5),
        q(0.99)
    );
    if errors > 0 {
        std::process::exit(1);
    }
    Ok(())
}
