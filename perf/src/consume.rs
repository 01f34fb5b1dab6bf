//! The shared consumer arrangement and the run driver.
//!
//! Every system is driven the same way: the workload is built, the system
//! builds its publisher and one subscriber per watcher, a fixed pool of
//! consumer threads each takes every `threads`-th watcher and drains its
//! share in batches of [`BATCH`] (1,000 OS threads on 2 cores would measure
//! the scheduler, not the system), and the publisher runs on the calling
//! thread, flat out or paced. The clock runs from the first publish until
//! every watcher has received all it is owed (or ended).
//!
//! A consumer visits its watchers one of two ways. Polling: every watcher
//! on every pass, for systems whose API has no wake-up per watcher (the
//! per-watcher channels of the crossbeam cacher and the reference port,
//! `try_recv` on tokio's receivers, disruptor's cursors). Readiness, for
//! systems that have it ([`Subscriber::has_readiness`]; Herald's
//! `poll_visit_batch`): each watcher gets a waker that puts it on its
//! consumer's ready list, and the consumer visits only what is listed,
//! sleeping when nothing is. `--no-readiness` polls every system.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::machine::{CpuUse, CpuWindow, ThreadCpu};
use crate::system::{
    Check, Drained, PeerUse, Publisher, Spec, Stamps, Subscriber, System, Tally, histogram,
};
use crate::workload::Workload;

/// Deliveries drained from one watcher before moving to the next.
pub const BATCH: usize = 256;

/// How changes are published.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the system takes them.
    FlatOut,
    /// At this many changes per second: the publisher sleeps until the next
    /// change is due (with a 1 µs timer slack), then publishes every change
    /// that is due by then, so the rate holds on average without a thread
    /// spinning between changes.
    Rate(f64),
}

/// A stall injected into one consumer's watcher (the slow-watcher tax).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stall {
    /// The watcher that stalls.
    pub watcher: usize,
    /// It is not drained from `from` until `until` after the run starts.
    pub from: Duration,
    /// End of the stall.
    pub until: Duration,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOpts {
    /// Consumer threads.
    pub threads: usize,
    /// Publication pace.
    pub pace: Pace,
    /// Sample latency for one resource version in `sample_every` (a power
    /// of two; 1 samples every delivery, 0 samples none).
    pub sample_every: u64,
    /// Check every delivery against its filter.
    pub check_filters: bool,
    /// Watchers excluded from latency sampling and from the "must not end"
    /// rule (stalled companions).
    pub companions: Vec<usize>,
    /// Stalls to inject.
    pub stalls: Vec<Stall>,
    /// Give up after this long (a system that loses a delivery would
    /// otherwise hang the run).
    pub timeout: Duration,
    /// Use a system's readiness list when it has one (else poll).
    pub readiness: bool,
    /// Feed Herald from its in-memory source through a reflector, rather
    /// than through its writer directly.
    pub herald_source: bool,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            threads: 2,
            pace: Pace::FlatOut,
            sample_every: 64,
            check_filters: false,
            companions: Vec::new(),
            stalls: Vec::new(),
            timeout: Duration::from_secs(120),
            readiness: true,
            herald_source: false,
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Deliveries received by all watchers.
    pub delivered: u64,
    /// Deliveries owed to all watchers.
    pub owed: u64,
    /// From the first publish until the last watcher was done.
    pub elapsed: Duration,
    /// From the first publish until the publisher had published the last
    /// change.
    pub publish_elapsed: Duration,
    /// Building the system and registering every watcher.
    pub setup: Duration,
    /// Watchers (not companions) that ended before receiving all they were
    /// owed.
    pub ended: usize,
    /// Companions that ended early.
    pub companions_ended: usize,
    /// Order or filter violations (must be 0).
    pub violations: u64,
    /// Publish-to-receive latency of sampled deliveries (ns), companions
    /// excluded.
    pub latency: hdrhistogram::Histogram<u64>,
    /// For a publisher that stamps changes itself: latency from the
    /// system's acknowledgement of the change to receive (ns; 1 when the
    /// delivery came before it). Empty otherwise.
    pub latency_acked: hdrhistogram::Histogram<u64>,
    /// The run hit its timeout.
    pub timed_out: bool,
    /// What the machine did meanwhile: this process's threads, other
    /// processes.
    pub cpu: CpuUse,
    /// What a server process behind the system (etcd) cost, when there is
    /// one.
    pub peer: Option<PeerUse>,
}

impl RunResult {
    /// Deliveries per second.
    pub fn rate(&self) -> f64 {
        self.delivered as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs `system` on `workload` with `spec` and `opts`.
pub fn run<S: System>(
    system: &S,
    spec: &Spec,
    workload: &Arc<Workload>,
    opts: &RunOpts,
) -> anyhow::Result<RunResult> {
    let range = spec.start..workload.changes.len();
    let start_rv = spec.start_rv(workload);
    let built = Instant::now();
    let (mut publisher, subs) = system.build(spec, workload)?;
    let setup = built.elapsed();
    let stamps = Stamps::new(workload.changes.len());
    // A publisher that stamps changes itself also stamps when the system
    // acknowledged each.
    let own_stamps = publisher.stamps_itself();
    let acked = if own_stamps {
        stamps.twin()
    } else {
        Stamps::new(0)
    };
    let threads = opts.threads.max(1);
    let mut shares: Vec<Vec<(usize, S::Sub, Tally)>> = (0..threads).map(|_| Vec::new()).collect();
    let expected = workload.expected_each(&spec.filters, range.clone());
    let mut owed = 0;
    for (w, ((sub, filter), expected)) in subs
        .into_iter()
        .zip(&spec.filters)
        .zip(expected)
        .enumerate()
    {
        owed += expected;
        shares[w % threads].push((w, sub, Tally::new(*filter, expected, start_rv)));
    }
    let go = Arc::new(AtomicBool::new(false));
    let abort = Arc::new(AtomicBool::new(false));
    let delivered = Arc::new(AtomicU64::new(0));
    let began = Arc::new(parking_lot::Mutex::new(None::<Instant>));
    let consumers: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let workload = workload.clone();
            let stamps = stamps.clone();
            let acked = own_stamps.then(|| acked.clone());
            let go = go.clone();
            let abort = abort.clone();
            let delivered = delivered.clone();
            let began = began.clone();
            let opts = opts.clone();
            std::thread::Builder::new()
                .name("perf-consumer".into())
                .spawn(move || {
                    consume(
                        share,
                        &workload,
                        &stamps,
                        acked.as_deref(),
                        &go,
                        &abort,
                        &delivered,
                        &began,
                        &opts,
                    )
                })
                .expect("spawn consumer")
        })
        .collect();

    // Publish.
    let window = CpuWindow::open();
    // A publisher that stamps changes itself is not stamped for here.
    publisher.begin(&stamps, &acked);
    let stamp = !own_stamps;
    let t0 = Instant::now();
    // Preloaded changes count as published now: their latency is the time
    // a watcher takes to catch up to them.
    for i in 0..spec.preloaded {
        if stamp {
            stamps.mark(i);
        }
    }
    *began.lock() = Some(t0);
    go.store(true, Ordering::Release);
    match opts.pace {
        Pace::FlatOut => {
            for i in spec.preloaded..workload.changes.len() {
                if stamp {
                    stamps.mark(i);
                }
                publisher.publish(i);
            }
        }
        Pace::Rate(per_sec) => {
            crate::machine::tight_timer_slack();
            let gap = 1e9 / per_sec;
            for (k, i) in (spec.preloaded..workload.changes.len()).enumerate() {
                let due = t0 + Duration::from_nanos((k as f64 * gap) as u64);
                // Sleep, never spin: a late wake publishes every change
                // that is due by then (each stamped when published, so the
                // lateness is not charged to the system).
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if stamp {
                    stamps.mark(i);
                }
                publisher.publish(i);
            }
        }
    }
    publisher.finish();
    let publish_elapsed = t0.elapsed();

    let deadline = t0 + opts.timeout;
    let mut timed_out = false;
    let mut outs = Vec::new();
    for c in consumers {
        while !c.is_finished() {
            if Instant::now() > deadline && !abort.load(Ordering::Relaxed) {
                abort.store(true, Ordering::Relaxed);
                timed_out = true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        outs.push(c.join().map_err(|_| anyhow::anyhow!("consumer panicked"))?);
    }
    let consumers_cpu: Vec<_> = outs.iter().filter_map(|o| o.cpu.clone()).collect();
    let mut peer = publisher.end();
    let mut cpu = window.close(&consumers_cpu);
    if let Some(p) = &peer {
        cpu.attribute_peer((p.cpu_s * 1e9) as u64);
    }
    let elapsed = outs
        .iter()
        .map(|o: &ConsumerOut| o.finished_at)
        .max()
        .unwrap_or_default();
    drop(publisher);
    let mut latency = histogram();
    let mut result = RunResult {
        delivered: 0,
        owed,
        elapsed: elapsed.max(Duration::from_nanos(1)),
        publish_elapsed,
        setup,
        ended: 0,
        companions_ended: 0,
        violations: 0,
        latency: histogram(),
        latency_acked: histogram(),
        timed_out,
        cpu,
        peer: None,
    };
    // Samples received before their change was stamped: every change is
    // stamped once the publisher has finished. A delivery that came before
    // the acknowledgement is recorded as 0 from it (the histogram's 1 ns).
    let mut latency_acked = histogram();
    let mut before_ack = 0;
    for out in &outs {
        for &(i, received) in &out.deferred {
            let (at, ack) = (stamps.get(i), acked.get(i));
            if at == 0 {
                continue;
            }
            latency.saturating_record(received.saturating_sub(at).max(1));
            if own_stamps && ack > 0 {
                if received <= ack {
                    before_ack += 1;
                }
                latency_acked.saturating_record(received.saturating_sub(ack).max(1));
            }
        }
    }
    for out in outs {
        latency.add(&out.latency).expect("same bounds");
        latency_acked.add(&out.latency_acked).expect("same bounds");
        for (w, t) in out.tallies {
            result.delivered += t.received;
            result.violations += t.violations;
            if t.ended_early || t.received < t.expected {
                if opts.companions.contains(&w) {
                    result.companions_ended += 1;
                } else {
                    result.ended += 1;
                }
            }
        }
    }
    result.latency = latency;
    result.latency_acked = latency_acked;
    if let Some(p) = &mut peer {
        let writes = (range.end - range.start) as u64;
        p.writes = writes;
        p.cores = p.cpu_s / result.elapsed.as_secs_f64();
        p.us_per_delivery = p.cpu_s * 1e6 / result.delivered.max(1) as f64;
        p.us_per_write = p.cpu_s * 1e6 / writes.max(1) as f64;
        p.before_ack = before_ack;
        p.samples = result.latency.len();
    }
    result.peer = peer;
    Ok(result)
}

struct ConsumerOut {
    tallies: Vec<(usize, Tally)>,
    latency: hdrhistogram::Histogram<u64>,
    latency_acked: hdrhistogram::Histogram<u64>,
    /// Samples whose change was not stamped yet when received.
    deferred: Vec<(usize, u64)>,
    finished_at: Duration,
    /// The consumer thread's CPU time over the run (it exits before the
    /// run's CPU window closes).
    cpu: Option<(u32, String, u64)>,
}

#[allow(clippy::too_many_arguments)]
fn consume<S: Subscriber>(
    mut share: Vec<(usize, S, Tally)>,
    workload: &Workload,
    stamps: &Stamps,
    acked: Option<&Stamps>,
    go: &AtomicBool,
    abort: &AtomicBool,
    delivered: &AtomicU64,
    began: &parking_lot::Mutex<Option<Instant>>,
    opts: &RunOpts,
) -> ConsumerOut {
    let check = Check {
        workload,
        filters: opts.check_filters,
        sample_mask: if opts.sample_every == 0 {
            u64::MAX
        } else {
            opts.sample_every - 1
        },
        stamps: (opts.sample_every > 0).then_some(stamps),
        acked: acked.filter(|_| opts.sample_every > 0),
        hist_acked: RefCell::new(histogram()),
        hist: RefCell::new(histogram()),
        deferred: RefCell::new(Vec::new()),
    };
    // Companions are drained but not sampled: their latency is theirs.
    let silent = Check {
        workload,
        filters: opts.check_filters,
        sample_mask: u64::MAX,
        stamps: None,
        acked: None,
        hist_acked: RefCell::new(histogram()),
        hist: RefCell::new(histogram()),
        deferred: RefCell::new(Vec::new()),
    };
    crate::machine::tight_timer_slack();
    while !go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let cpu = ThreadCpu::start();
    let t0 = began.lock().expect("set before go");
    let open = share.iter().filter(|(_, _, t)| !t.done()).count();
    let stalls: Vec<Stall> = opts
        .stalls
        .iter()
        .filter(|s| share.iter().any(|(w, _, _)| *w == s.watcher))
        .copied()
        .collect();
    let checks = Checks {
        check: &check,
        silent: &silent,
        companions: &opts.companions,
    };
    let readiness = opts.readiness && share.first().is_some_and(|(_, sub, _)| sub.has_readiness());
    if readiness {
        by_readiness(&mut share, &checks, &stalls, t0, abort, delivered, open);
    } else {
        by_polling(&mut share, &checks, &stalls, t0, abort, delivered, open);
    }
    let finished_at = t0.elapsed();
    ConsumerOut {
        tallies: share.into_iter().map(|(w, _, t)| (w, t)).collect(),
        latency: check.hist.into_inner(),
        latency_acked: check.hist_acked.into_inner(),
        deferred: check.deferred.into_inner(),
        finished_at,
        cpu: cpu.finish(),
    }
}

/// The per-delivery checks: sampled ones for healthy watchers, silent
/// ones for companions.
struct Checks<'a> {
    check: &'a Check<'a>,
    silent: &'a Check<'a>,
    companions: &'a [usize],
}

/// Whether watcher `w` is in one of its stalls at `now`.
fn stalled(stalls: &[Stall], w: usize, now: Duration) -> bool {
    stalls
        .iter()
        .any(|s| s.watcher == w && s.from <= now && now < s.until)
}

/// Books what one drain of watcher `w` found; returns whether the watcher
/// is now done (received all it is owed, or ended).
fn book(tally: &mut Tally, d: Drained, open: &mut usize) -> bool {
    if d.ended && tally.received < tally.expected {
        tally.ended_early = true;
    }
    let done = tally.done();
    if done {
        *open -= 1;
    }
    done
}

/// Visits every open watcher on every pass.
fn by_polling<S: Subscriber>(
    share: &mut [(usize, S, Tally)],
    checks: &Checks<'_>,
    stalls: &[Stall],
    t0: Instant,
    abort: &AtomicBool,
    delivered: &AtomicU64,
    mut open: usize,
) {
    let mut idle = Backoff::new();
    while open > 0 && !abort.load(Ordering::Relaxed) {
        let mut pass = 0usize;
        let now = (!stalls.is_empty()).then(|| t0.elapsed());
        for (w, sub, tally) in share.iter_mut() {
            if tally.done() || now.is_some_and(|now| stalled(stalls, *w, now)) {
                continue;
            }
            let c = checks.for_watcher(*w);
            let d = sub.drain(BATCH, &mut |rv, len| tally.deliver(rv, len, c));
            pass += d.delivered;
            book(tally, d, &mut open);
        }
        if pass == 0 {
            // A poller has no wake to wait for: it sleeps a poll interval.
            idle.idle(|| std::thread::sleep(POLL_INTERVAL));
        } else {
            idle.reset();
            delivered.fetch_add(pass as u64, Ordering::Relaxed);
        }
    }
}

impl Checks<'_> {
    fn for_watcher(&self, w: usize) -> &Check<'_> {
        if self.companions.contains(&w) {
            self.silent
        } else {
            self.check
        }
    }
}

/// One consumer's ready list: the shares' slots whose wakers fired.
struct ReadyList {
    slots: parking_lot::Mutex<Vec<u32>>,
    /// `slots` may be non-empty: the consumer's idle check, without the
    /// lock.
    any: AtomicBool,
    consumer: std::thread::Thread,
}

/// One watcher's waker: lists its slot once until the consumer takes it.
struct SlotWaker {
    list: Arc<ReadyList>,
    slot: u32,
    /// Listed and not yet visited: a second wake adds nothing.
    listed: AtomicBool,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.listed.swap(true, Ordering::AcqRel) {
            self.list.slots.lock().push(self.slot);
            self.list.any.store(true, Ordering::Release);
            // Cheap when the consumer is awake (a flag), and a wake that
            // comes before it parks makes that park return at once.
            self.list.consumer.unpark();
        }
    }
}

/// How long an idle consumer keeps the core (spinning, then yielding)
/// before it sleeps. Short: on 2 cores a consumer that yields in a loop
/// competes with the publisher and the system's own threads.
const IDLE_YIELDING: Duration = Duration::from_micros(50);

/// How long an idle polling consumer sleeps between passes (a system
/// without readiness gives it nothing to wait on).
const POLL_INTERVAL: Duration = Duration::from_micros(20);

/// The idle back-off every consumer uses, whatever the system: spin for 64
/// empty passes, yield the core until [`IDLE_YIELDING`] has passed, then
/// sleep as the consumer can (park until a wake, or a poll interval).
struct Backoff {
    passes: u32,
    since: Instant,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            passes: 0,
            since: Instant::now(),
        }
    }

    /// Something was found: the next idle pass starts the back-off again.
    fn reset(&mut self) {
        self.passes = 0;
    }

    /// One pass that found nothing.
    fn idle(&mut self, sleep: impl FnOnce()) {
        self.passes += 1;
        if self.passes == 1 {
            self.since = Instant::now();
        }
        if self.passes <= 64 {
            std::hint::spin_loop();
        } else if self.since.elapsed() < IDLE_YIELDING {
            std::thread::yield_now();
        } else {
            sleep();
        }
    }
}

/// Visits only the watchers whose wakers fired, sleeping when none has.
fn by_readiness<S: Subscriber>(
    share: &mut [(usize, S, Tally)],
    checks: &Checks<'_>,
    stalls: &[Stall],
    t0: Instant,
    abort: &AtomicBool,
    delivered: &AtomicU64,
    mut open: usize,
) {
    let list = Arc::new(ReadyList {
        slots: parking_lot::Mutex::new(Vec::new()),
        any: AtomicBool::new(false),
        consumer: std::thread::current(),
    });
    let wakers: Vec<(Arc<SlotWaker>, Waker)> = (0..share.len())
        .map(|k| {
            let w = Arc::new(SlotWaker {
                list: list.clone(),
                slot: k as u32,
                // Every watcher starts on the list.
                listed: AtomicBool::new(true),
            });
            (w.clone(), Waker::from(w))
        })
        .collect();
    let mut ready: Vec<u32> = (0..share.len() as u32).collect();
    let mut next: Vec<u32> = Vec::new();
    let mut deferred: Vec<u32> = Vec::new();
    let mut idle = Backoff::new();
    while open > 0 && !abort.load(Ordering::Relaxed) {
        if list.any.swap(false, Ordering::Acquire) {
            ready.append(&mut list.slots.lock());
        }
        let listed = !ready.is_empty();
        // Stalled watchers are looked at again each round.
        ready.append(&mut deferred);
        if !listed {
            // Sleep until a wake: bounded, so an abort, or the end of a
            // stall, is noticed.
            idle.idle(|| std::thread::park_timeout(Duration::from_millis(1)));
            if ready.is_empty() {
                continue;
            }
        }
        let now = (!stalls.is_empty()).then(|| t0.elapsed());
        let mut pass = 0usize;
        let mut visited = false;
        for k in ready.drain(..) {
            let (w, sub, tally) = &mut share[k as usize];
            if tally.done() {
                continue;
            }
            if now.is_some_and(|now| stalled(stalls, *w, now)) {
                deferred.push(k);
                continue;
            }
            visited = true;
            let (flag, waker) = &wakers[k as usize];
            // Before the visit: a wake during it lists the watcher again.
            flag.listed.store(false, Ordering::Release);
            let c = checks.for_watcher(*w);
            let mut cx = Context::from_waker(waker);
            let Poll::Ready(d) =
                sub.poll_drain(&mut cx, BATCH, &mut |rv, len| tally.deliver(rv, len, c))
            else {
                // The waker is registered: the watcher is listed again
                // once it has something.
                continue;
            };
            pass += d.delivered;
            if !book(tally, d, &mut open) && !flag.listed.swap(true, Ordering::AcqRel) {
                // It may have more: visit it again on the next round.
                next.push(k);
            }
        }
        std::mem::swap(&mut ready, &mut next);
        if visited {
            idle.reset();
        }
        if pass > 0 {
            delivered.fetch_add(pass as u64, Ordering::Relaxed);
        }
    }
}
