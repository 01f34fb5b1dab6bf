//! Stress: real threads and the real clock. One writer thread, thousands of
//! watchers (random selectors, indexed and not, from a version or from a
//! snapshot with initial events) drained by a small fixed pool of consumer
//! threads with `try_recv`, `recv_batch` and `visit_batch`; consumers stall
//! on random watchers for a while (some long enough to fall out of the
//! ring), stop a few, and a re-list comes mid-way (half the runs, one
//! after the source went back: a lower version); two more threads churn
//! watches all along. Nothing here asserts a
//! time.
//!
//! The writer records every change in the reference model
//! (`herald_testkit::model`, `testkit/src/model/`); at the end every stream is checked against it:
//! a gap-free, in-order prefix of the watcher's view (bookmarks other than
//! initial-events-end aside, which must carry a version no lower than what
//! came before), followed by exactly one allowed End:
//!
//! - `EngineStopped` only for watchers of the last generation, which must
//!   then have received their whole view (everything was drained before
//!   the stop);
//! - `Relisted` only for watchers of an older generation, which must also
//!   have received their whole view (everything is drained before the
//!   re-list);
//! - `Stopped` only for watchers a consumer stopped;
//! - `Gone` only in the first drain after a stall (docs/semantics.md §5.3: a
//!   watcher loses nothing while the changes it needs are in the ring),
//!   carrying its last version, which must be older than the oldest servable
//!   one. `early_gone` (on by default; `HERALD_MODEL_STRICT=early_gone`
//!   refuses it) also accepts it for a watcher that never stalled (a known
//!   disagreement, see `differential.rs`);
//! - nothing else.
//!
//! Non-stalled watchers are protected from being lapped by flow control, not
//! by timing: after each full pass each consumer publishes the dispatcher's
//! position at the pass's start (everything below it has been drained from
//! every watcher it did not skip), and the writer stays within half a ring
//! of the slowest consumer.

use herald_testkit::model;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herald::event::ChangeKind;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::watch::WatchError;
use herald::*;
use model::*;

const WATCHERS: usize = if cfg!(miri) { 12 } else { 2000 };
const CONSUMERS: usize = if cfg!(miri) { 2 } else { 3 };
const CHANGES: u64 = if cfg!(miri) { 300 } else { 12_000 };
const RING: usize = if cfg!(miri) { 64 } else { 1024 };
const LIVENESS: Duration = Duration::from_secs(60);
const CHURNERS: usize = if cfg!(miri) { 1 } else { 2 };

/// splitmix64, so a seed reproduces a run's choices (not its schedule).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

const NODES: u64 = 16;
const KEYS: u64 = 64;

fn object(rng: &mut Rng, key: u64, tag: &str) -> Object {
    let ns = if key % 2 == 0 { "x" } else { "y" };
    let mut b = Object::builder(ns, &format!("k{}", key / 2));
    match rng.below(4) {
        0 => {}
        i => b = b.label("app", ["a", "b", "c"][(i - 1) as usize]),
    }
    if rng.chance(2) {
        b = b.label("tier", ["1", "2"][rng.below(2) as usize]);
    }
    if !rng.chance(8) {
        b = b.field("spec.nodeName", &format!("n{}", rng.below(NODES)));
    }
    b.payload(tag.to_owned()).build()
}

fn filter(rng: &mut Rng) -> Filter {
    let s = |x: &str| x.to_owned();
    match rng.below(10) {
        // Everything.
        0 => Filter::everything(),
        // Kubelet-shaped: one node, through the index.
        1..=5 => Filter {
            scope: Scope::All,
            labels: vec![],
            fields: vec![FieldReq::Eq(
                s("spec.nodeName"),
                format!("n{}", rng.below(NODES)),
            )],
        },
        _ => {
            let scope = match rng.below(4) {
                0 => Scope::Prefix(s("x")),
                1 => Scope::Prefix(s("y")),
                _ => Scope::All,
            };
            let labels = match rng.below(6) {
                0 => vec![LabelReq::Eq(s("app"), s("a"))],
                1 => vec![LabelReq::In(s("app"), vec![s("a"), s("b")])],
                2 => vec![LabelReq::NotEq(s("tier"), s("1"))],
                3 => vec![LabelReq::NotExists(s("app"))],
                _ => vec![],
            };
            let fields = match rng.below(4) {
                0 => vec![FieldReq::NotEq(s("spec.nodeName"), s("n1"))],
                1 => vec![FieldReq::Eq(s("spec.nodeName"), String::new())],
                _ => vec![],
            };
            Filter {
                scope,
                labels,
                fields,
            }
        }
    }
}

/// An event, compactly (millions are kept): kind, version, the
/// initial-events-end flag and a fingerprint of the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Got {
    kind: EventKind,
    rv: u64,
    iee: bool,
    fp: u64,
}

fn fingerprint(o: Option<&Object>) -> u64 {
    let Some(o) = o else { return 0 };
    let mut h = DefaultHasher::new();
    o.key().hash(&mut h);
    o.payload().hash(&mut h);
    for (k, v) in o.labels() {
        (k, v).hash(&mut h);
    }
    o.field("spec.nodeName").hash(&mut h);
    h.finish()
}

impl Got {
    fn of(kind: EventKind, rv: u64, o: Option<&Object>, iee: bool) -> Got {
        Got {
            kind,
            rv,
            iee,
            fp: fingerprint(o),
        }
    }

    fn from_seen(s: &Seen) -> Got {
        Got::of(s.kind, s.rv, s.object.as_ref(), s.initial_events_end)
    }
}

#[derive(Debug, Clone, Copy)]
enum Begin {
    /// Every change of generation `.1` after version `.0`.
    After(u64, u64),
    /// A snapshot with initial events, of generation `.0`.
    Snapshot(u64),
}

struct Watcher {
    n: usize,
    watch: Watch,
    filter: Filter,
    begin: Begin,
    got: Vec<Got>,
    end: Option<EndReason>,
    /// Skipped until the dispatcher reaches this position (or the writer
    /// is done).
    stalled_until: Option<u64>,
    ever_stalled: bool,
    /// The next drain is the first after a stall.
    catching_up: bool,
    /// The End came in a drain that was the first after a stall.
    ended_catching_up: bool,
    stopped_by_us: bool,
}

impl Watcher {
    fn new(n: usize, watch: Watch, filter: Filter, begin: Begin) -> Watcher {
        Watcher {
            n,
            watch,
            filter,
            begin,
            got: Vec::new(),
            end: None,
            stalled_until: None,
            ever_stalled: false,
            catching_up: false,
            ended_catching_up: false,
            stopped_by_us: false,
        }
    }

    fn take(&mut self, item: WatchItem) {
        assert!(self.end.is_none(), "w{}: an item after the End", self.n);
        match item {
            WatchItem::Event(e) => self.got.push(Got::of(
                e.kind(),
                e.resource_version().get(),
                e.object(),
                e.is_initial_events_end(),
            )),
            WatchItem::End(r) => {
                self.end = Some(r);
                self.ended_catching_up = self.catching_up;
            }
        }
    }

    /// Drains what is ready now; returns how many items it took.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        match self.n % 3 {
            0 => {
                while let Ok(item) = self.watch.try_recv() {
                    n += 1;
                    self.take(item);
                }
            }
            1 => loop {
                let mut out = Vec::new();
                let k = self.watch.recv_batch(&mut out, 64);
                n += k;
                for item in out {
                    self.take(item);
                }
                if k < 64 {
                    break;
                }
            },
            _ => loop {
                let mut evs = Vec::new();
                let v = self.watch.visit_batch(64, |e| {
                    evs.push(Got::of(
                        e.kind(),
                        e.resource_version().get(),
                        e.object(),
                        e.is_initial_events_end(),
                    ));
                });
                n += v.events;
                assert!(self.end.is_none(), "w{}: an item after the End", self.n);
                self.got.extend(evs);
                if let Some(r) = v.end {
                    n += 1;
                    self.take(WatchItem::End(r));
                    break;
                }
                if v.events < 64 {
                    break;
                }
            },
        }
        self.catching_up = false;
        n
    }
}

struct Shared {
    engine: Engine,
    /// Per consumer: the dispatcher's position at the start of its last
    /// full pass.
    progress: Vec<AtomicU64>,
    /// New watchers for consumer `i % CONSUMERS`.
    inbox: Mutex<Vec<Watcher>>,
    /// The writer waits until every watcher is drained up to this position
    /// (0: it does not wait): consumers end their stalls and report.
    drain_to: AtomicU64,
    /// Per consumer: the `drain_to` for which two full passes in a row
    /// found nothing left.
    caught_up: Vec<AtomicU64>,
    stopped: AtomicBool,
}

fn consumer(c: usize, shared: Arc<Shared>, mut mine: Vec<Watcher>, seed: u64) -> Vec<Watcher> {
    let mut rng = Rng(seed);
    let mut idle_passes = 0;
    let limit = Instant::now() + LIVENESS * 3;
    loop {
        assert!(Instant::now() < limit, "consumer {c}: liveness");
        // Read before taking the inbox: once the writer is done, nothing
        // more comes in.
        let drain_to = shared.drain_to.load(Ordering::Acquire);
        let draining = drain_to > 0;
        {
            let mut inbox = shared.inbox.lock().unwrap();
            let (take, keep): (Vec<Watcher>, Vec<Watcher>) =
                inbox.drain(..).partition(|w| w.n % CONSUMERS == c);
            *inbox = keep;
            mine.extend(take);
        }
        let stopped = shared.stopped.load(Ordering::Acquire);
        let at = shared.engine.stats().changes_dispatched;
        let mut moved = 0;
        let mut open = 0;
        for w in &mut mine {
            if w.end.is_some() {
                continue;
            }
            open += 1;
            if let Some(until) = w.stalled_until {
                if at < until && !draining {
                    continue;
                }
                w.stalled_until = None;
                w.catching_up = true;
            }
            if !stopped && !draining && rng.chance(1000) {
                // Stall: skip it until the dispatcher has moved on by up
                // to twice the ring.
                w.stalled_until = Some(at + 1 + rng.below(2 * RING as u64));
                w.ever_stalled = true;
                continue;
            }
            if !stopped && rng.chance(5000) {
                w.watch.stop();
                w.stopped_by_us = true;
            }
            moved += w.drain();
        }
        shared.progress[c].store(at, Ordering::Release);
        if stopped {
            if open == 0 {
                return mine;
            }
        } else if draining && moved == 0 && at >= drain_to {
            // Two idle passes in a row over everything, once the writer
            // waits and the dispatcher has reached its position: all
            // drained.
            idle_passes += 1;
            if idle_passes >= 2 {
                shared.caught_up[c].store(drain_to, Ordering::Release);
            }
        } else {
            idle_passes = 0;
        }
        if moved == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Waits (liveness only) until every watcher not ended has received
/// everything up to history position `pos` (the writer does not write
/// meanwhile).
fn drain_everything(shared: &Shared, pos: u64) {
    // Every watch begun so far has been activated by the dispatcher (two
    // barrier watches, see `differential.rs`), so a consumer that finds
    // nothing has really received everything.
    for _ in 0..2 {
        let mut b = shared
            .engine
            .watch(
                WatchRequest::new()
                    .scope(KeyScope::exact("barrier/none"))
                    .send_initial_events(true)
                    .resource_version_match(ResourceVersionMatch::NotOlderThan)
                    .allow_bookmarks(true),
            )
            .unwrap();
        match b.recv_timeout(LIVENESS) {
            Ok(WatchItem::Event(e)) if e.is_initial_events_end() => {}
            other => panic!("barrier watch: {other:?}"),
        }
    }
    shared.drain_to.store(pos, Ordering::Release);
    let limit = Instant::now() + LIVENESS;
    while !shared
        .caught_up
        .iter()
        .all(|c| c.load(Ordering::Acquire) == pos)
    {
        assert!(Instant::now() < limit, "consumers never drained everything");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (liveness only) until every consumer's last full pass started at
/// or after `pos - slack`.
fn flow_control(shared: &Shared, pos: u64, slack: u64) {
    let limit = Instant::now() + LIVENESS;
    while shared
        .progress
        .iter()
        .map(|p| p.load(Ordering::Acquire))
        .min()
        .unwrap_or(0)
        + slack
        < pos
    {
        assert!(Instant::now() < limit, "consumers never caught up");
        std::thread::sleep(Duration::from_micros(100));
    }
}

#[test]
fn thousands_of_watchers_real_threads() {
    let started = Instant::now();
    let seed = std::env::var("HERALD_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("stress: seed {seed} (HERALD_STRESS_SEED to repeat the choices)");
    let mut rng = Rng(seed);
    let allow = Allow::from_env();
    // Odd seeds: the writer fans its changes out itself when it can.
    let inline = seed % 2 == 1;
    eprintln!("stress: inline dispatch {inline}");
    let (engine, mut writer) = Engine::new(
        Config::default()
            .inline_dispatch(inline)
            .index("spec.nodeName")
            .history_bounds(RING, RING)
            .history_window(Duration::from_secs(3600))
            .bookmark_frequency(Duration::from_secs(1 << 30)),
    )
    .unwrap();
    let mut model = Model::new(RING, Duration::from_secs(3));

    // The initial list.
    let mut rv = 100;
    let objects: Vec<Object> = (0..KEYS / 2)
        .map(|k| object(&mut rng, k * 2, "list1"))
        .collect();
    writer
        .replace(Relist::new(objects.clone(), rv.into()))
        .unwrap();
    model.replace(objects, rv).unwrap();

    let shared = Arc::new(Shared {
        engine: engine.clone(),
        progress: (0..CONSUMERS).map(|_| AtomicU64::new(0)).collect(),
        inbox: Mutex::new(Vec::new()),
        drain_to: AtomicU64::new(0),
        caught_up: (0..CONSUMERS).map(|_| AtomicU64::new(0)).collect(),
        stopped: AtomicBool::new(false),
    });
    let mut n = 0;
    let mut new_watcher = |rng: &mut Rng, generation: u64, rv: u64| {
        let f = filter(rng);
        let (req, begin) = if rng.chance(4) {
            (
                f.request()
                    .send_initial_events(true)
                    .resource_version_match(ResourceVersionMatch::NotOlderThan)
                    .allow_bookmarks(true),
                Begin::Snapshot(generation),
            )
        } else {
            (
                f.request().resource_version(Some(rv.into())),
                Begin::After(rv, generation),
            )
        };
        let w = Watcher::new(n, engine.watch(req).unwrap(), f, begin);
        n += 1;
        w
    };
    let mut per: Vec<Vec<Watcher>> = (0..CONSUMERS).map(|_| Vec::new()).collect();
    for _ in 0..WATCHERS {
        let w = new_watcher(&mut rng, 1, rv);
        per[w.n % CONSUMERS].push(w);
    }
    let consumers: Vec<_> = per
        .into_iter()
        .enumerate()
        .map(|(c, mine)| {
            let shared = shared.clone();
            let seed = rng.next();
            std::thread::Builder::new()
                .name(format!("consumer-{c}"))
                .spawn(move || consumer(c, shared, mine, seed))
                .unwrap()
        })
        .collect();

    // Churn (issue 14): two threads create watches of every kind and drop
    // them at once or soon, beside the writer; the verified watchers must
    // not notice (beyond time), and the dispatcher must keep up.
    let churning = Arc::new(AtomicBool::new(true));
    let churners: Vec<_> = (0..CHURNERS)
        .map(|_| {
            let (engine, churning, seed) = (engine.clone(), churning.clone(), rng.next());
            std::thread::spawn(move || churn(&engine, &churning, seed))
        })
        .collect();

    // The writer (this thread).
    let mut generation = 1;
    for i in 0..CHANGES {
        flow_control(&shared, model.positions() + 1, RING as u64 / 2);
        if i == CHANGES / 2 {
            // Everyone receives everything of generation 1 first, so that
            // each watcher still open then has its whole view before its
            // Relisted.
            drain_everything(&shared, model.positions());
            shared.drain_to.store(0, Ordering::Release);
            let objects: Vec<Object> = (0..KEYS / 3)
                .map(|k| object(&mut rng, k * 3, "list2"))
                .collect();
            if rng.chance(2) {
                // The source went back (a restore from a backup): the new
                // history starts below the old one's versions.
                rv -= 1 + rng.below(rv / 2);
                eprintln!("stress: re-list after a regression, at {rv}");
                writer
                    .replace(Relist::new(objects.clone(), rv.into()).after_regression())
                    .unwrap();
                model.replace_after_regression(objects, rv).unwrap();
            } else {
                rv += 1;
                writer
                    .replace(Relist::new(objects.clone(), rv.into()))
                    .unwrap();
                model.replace(objects, rv).unwrap();
            }
            generation += 1;
            let mut inbox = Vec::new();
            for _ in 0..WATCHERS / 4 {
                inbox.push(new_watcher(&mut rng, generation, rv));
            }
            shared.inbox.lock().unwrap().extend(inbox);
            continue;
        }
        if rng.chance(200) {
            rv += 1 + rng.below(3);
            writer.progress(rv.into()).unwrap();
            model.progress(rv).unwrap();
        }
        if rng.chance(100) {
            let w = new_watcher(&mut rng, generation, rv);
            shared.inbox.lock().unwrap().push(w);
        }
        rv += 1 + rng.below(2);
        let key = rng.below(KEYS);
        let k = format!("{}/k{}", if key % 2 == 0 { "x" } else { "y" }, key / 2);
        let (kind, o) = match model.state().get(&k) {
            Some((old, _)) if rng.chance(6) => (ChangeKind::Deleted, old.clone()),
            Some(_) => (
                ChangeKind::Modified,
                object(&mut rng, key, &format!("v{rv}")),
            ),
            None => (ChangeKind::Added, object(&mut rng, key, &format!("v{rv}"))),
        };
        writer
            .apply(Change::new(kind, o.clone(), rv.into()))
            .unwrap();
        model.apply(kind, o, rv).unwrap();
    }
    churning.store(false, Ordering::Relaxed);
    let churned: u64 = churners
        .into_iter()
        .map(|c| c.join().expect("churner panicked"))
        .sum();
    drain_everything(&shared, model.positions());
    // Everything the churn dropped is released, and the gauges count the
    // verified watchers still open (not ended, nothing pending).
    let held = || {
        let s = engine.stats();
        (s.watchers_active + s.watchers_pending, s.watchers_retiring)
    };
    let limit = Instant::now() + LIVENESS;
    while held().1 > held().0 {
        assert!(
            Instant::now() < limit,
            "retired watches never swept: {:?}",
            held()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    engine.stop();
    shared.stopped.store(true, Ordering::Release);
    let mut all: Vec<Watcher> = consumers
        .into_iter()
        .flat_map(|t| t.join().expect("consumer panicked"))
        .collect();
    all.sort_by_key(|w| w.n);
    assert_eq!(all.len(), n, "every watcher came back");

    // Check every stream against the model.
    let current = model.generation();
    let mut ends: std::collections::BTreeMap<String, u64> = Default::default();
    let mut deliveries = 0;
    let mut failures = Vec::new();
    for w in &all {
        deliveries += w.got.len();
        if let Err(e) = check(w, &model, current, allow) {
            failures.push(format!("w{} {:?} {:?}: {e}", w.n, w.filter, w.begin));
        }
        let end = format!("{:?}", w.end);
        *ends
            .entry(end.split('(').nth(1).unwrap_or("").to_owned())
            .or_default() += 1;
    }
    eprintln!(
        "stress: {} watchers ({churned} more churned), {} changes, {deliveries} events, ends {ends:?}, {} failures, {:.1?}",
        all.len(),
        CHANGES,
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} watchers disagree with the model (seed {seed}):\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A churner: watches of every kind (from the state, from the current
/// version, from a future one, with initial events and a short deadline),
/// each dropped at once, after a receive, or a little later. Returns how
/// many it made.
fn churn(engine: &Engine, churning: &AtomicBool, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let mut held: Vec<Watch> = Vec::new();
    let mut made = 0;
    while churning.load(Ordering::Relaxed) {
        let f = filter(&mut rng).request();
        let rv = engine.resource_version().get();
        let req = match rng.below(4) {
            0 => f,
            1 => f.resource_version(Some(rv.into())),
            2 => f.resource_version(Some((rv + 1 + rng.below(50)).into())),
            _ => f
                .send_initial_events(true)
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .allow_bookmarks(true)
                .timeout(Duration::from_millis(1 + rng.below(50))),
        };
        match engine.watch(req) {
            Ok(mut w) => {
                if rng.chance(3) {
                    let _ = w.try_recv();
                }
                if rng.chance(8) {
                    held.push(w);
                }
            }
            // The version left the ring meanwhile, or the engine stopped.
            Err(WatchError::Gone(_) | WatchError::EngineStopped) => {}
            Err(e) => panic!("churn: {e}"),
        }
        if held.len() > 64 || rng.chance(32) {
            held.clear();
        }
        made += 1;
    }
    made
}

/// One watcher's stream and End against the model.
fn check(w: &Watcher, model: &Model, current: u64, allow: Allow) -> Result<(), String> {
    let Some(end) = &w.end else {
        return Err("no End".into());
    };
    // Bookmarks other than initial-events-end: only for watches that allow
    // them, never going back.
    let mut last = 0;
    let mut events = Vec::new();
    for g in &w.got {
        if g.kind == EventKind::Bookmark && !g.iee {
            if !matches!(w.begin, Begin::Snapshot(_)) {
                return Err("a bookmark it did not ask for".into());
            }
            if g.rv < last {
                return Err(format!("a bookmark at {} after {last}", g.rv));
            }
        } else {
            events.push(*g);
        }
        last = last.max(g.rv);
    }
    let (expected, start_rv, generation) = match w.begin {
        Begin::After(rv, g) => (model.view_after(&w.filter, g, rv), rv, g),
        Begin::Snapshot(g) => match events.iter().find(|e| e.iee) {
            Some(b) => (model.snapshot_view(&w.filter, g, b.rv, true), b.rv, g),
            // Ended before its bookmark: nothing or a prefix of initial
            // events of some snapshot; find it.
            None if events.is_empty() => (Vec::new(), 0, g),
            None => {
                let lo = model
                    .records()
                    .iter()
                    .find(|r| r.generation == g)
                    .map_or(0, |r| r.rv);
                let hi = model.resource_version();
                let found = (lo..=hi)
                    .map(|s| model.snapshot_view(&w.filter, g, s, true))
                    .find(|v| {
                        v.len() >= events.len()
                            && v.iter().zip(&events).all(|(s, e)| Got::from_seen(s) == *e)
                    });
                match found {
                    Some(v) => (v, 0, g),
                    None => return Err(format!("no snapshot starts with {events:?}")),
                }
            }
        },
    };
    let expected: Vec<Got> = expected.iter().map(Got::from_seen).collect();
    if events.len() > expected.len() || expected[..events.len()] != events[..] {
        let at = events
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(expected.len().min(events.len()));
        return Err(format!(
            "not a prefix of its view: at {at}: got {:?}, expected {:?} ({} got, {} expected)",
            events.get(at),
            expected.get(at),
            events.len(),
            expected.len()
        ));
    }
    let complete = events.len() == expected.len();
    match end {
        EndReason::EngineStopped if generation == current => {
            if !complete {
                return Err(format!(
                    "EngineStopped after {} of {} events",
                    events.len(),
                    expected.len()
                ));
            }
        }
        // Everything was drained before the re-list.
        EndReason::Relisted if generation < current => {
            if !complete {
                return Err(format!(
                    "Relisted after {} of {} events",
                    events.len(),
                    expected.len()
                ));
            }
        }
        EndReason::Stopped if w.stopped_by_us => {}
        EndReason::Gone(g) => {
            // Its last version: the last event's (or bookmark's), or where
            // it started.
            let last_rv = w
                .got
                .iter()
                .filter(|g| !g.iee)
                .map(|g| g.rv)
                .filter(|&rv| rv > start_rv)
                .max()
                .unwrap_or(start_rv);
            let stalled = w.ever_stalled && w.ended_catching_up;
            if !stalled && !allow.early_gone {
                return Err(format!("{end:?} without a stall"));
            }
            if g.requested().get() != last_rv {
                return Err(format!("{end:?}, last version {last_rv}"));
            }
            if g.requested() >= g.oldest_servable() {
                return Err(format!("{end:?} is not too old"));
            }
        }
        other => return Err(format!("unexpected {other:?}")),
    }
    Ok(())
}
