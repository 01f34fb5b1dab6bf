//! Differential test: random operation sequences run against the real
//! engine (on a [`ManualClock`]) and against the sequential reference model
//! (`herald_testkit::model`, `testkit/src/model/`), compared step by step.
//!
//! After every operation the harness brings the engine to quiescence
//! deterministically (no sleeps-as-synchronisation: it waits for the
//! dispatcher's counters and for two barrier watches, with liveness limits
//! only), so that every comparison is exact:
//!
//! - every writer call's result (`Ok` or the typed error),
//! - every `watch()` result (`Ok` or the typed error),
//! - every item of every watch (kind, version, key, object, the
//!   initial-events-end flag; `Empty` when nothing is ready; the End with
//!   its reason and payload; `Finished` afterwards),
//! - `resource_version()`, `generation()`, `lifecycle()` after every step.
//!
//! At the end every watch is drained, the engine is stopped (if it was not
//! already) and every watch is read to its End.
//!
//! # What a case does
//!
//! Usually an initial list first (plain, or with per-object versions),
//! then random operations (weights in `op()`): changes and bursts of them,
//! progress, re-lists (`Relist::new`, or `Relist::items` with object `i` at the
//! list's version minus `i % 4`, sometimes with an object above the list:
//! `ItemAhead`), re-lists after a regression (the same two ways), falls
//! back to pending (`mark_unready`; most are followed a few operations
//! later by a list, the source coming back), watches with every
//! combination of the version options (`send_initial_events` unset / true /
//! false x version unset / 0 / current +- n / 1 x match none /
//! NotOlderThan / Exact x bookmarks; see `start_spec()`, where the valid
//! combinations dominate), churned watches, reads in four ways, stops,
//! stalls, clock moves and sometimes a stop of the engine. The report
//! (`HERALD_PROPTEST_REPORT=1`) counts what the run exercised: each kind of
//! start, write error, watch error, event and end, and what happened to
//! watches created while the engine was pending after a list.
//!
//! # Running
//!
//! - Fast profile (default, `cargo test`): 1,500 cases.
//!   `cargo test -p herald --test differential` (from the workspace root;
//!   `$CARGO_TARGET_DIR` if set, else `target/`)
//! - Extended profile (over 1,000,000 operations; a burst counts each of
//!   its changes):
//!   `HERALD_PROPTEST_CASES=10000 HERALD_PROPTEST_REPORT=1 cargo test --release -p herald --test differential -- --nocapture`
//!   (`--release` is optional: the workspace's test profile is already
//!   optimised.)
//! - `HERALD_PROPTEST_OPS=n`: at most `n` operations per case (default 120).
//! - One summary line (cases, operations, time) is printed at the end of
//!   every run (visible with `--nocapture`, or always with
//!   `HERALD_PROPTEST_REPORT=1`, which also prints it on failure).
//! - `HERALD_MODEL_STRICT=early_gone,waiting_survives_relist` refuses the
//!   two outcomes the contract leaves open (see `model::Allow` and the
//!   `known_*` tests below, which pin each).
//!
//! A failure prints the shrunk operation list, one operation per line, and
//! the first disagreement (operation index, watch, expected vs actual).

use herald_testkit::model;

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use herald::clock::ManualClock;
use herald::engine::Lifecycle;
use herald::event::{ChangeKind, Gone, TooLargeResourceVersion};
use herald::object::Item;
use herald::rv::ResourceVersionMatch;
use herald::selector::KeyScope;
use herald::source::SourceError;
use herald::watch::{TryRecvError, WatchError};
use herald::writer::WriteError;
use herald::*;
use herald_testkit::{lock, pod};
use model::*;
use proptest::prelude::*;
use proptest::test_runner::{
    Config as RunnerConfig, FileFailurePersistence, TestCaseError, TestError, TestRunner,
};

/// The ring's fixed size (a power of two: it never resizes).
const RING: usize = 16;
/// The engine's too-large-resource-version timeout.
const TOO_LARGE: Duration = Duration::from_secs(3);
/// Liveness limit for every wait (never a timing assertion).
const LIVENESS: Duration = Duration::from_secs(20);

/// Cases made so far: every other one runs with inline dispatch (the
/// writer fans its changes out itself when the dispatcher is idle), which
/// the model must not be able to tell from the dispatcher thread's.
static CASES: AtomicU64 = AtomicU64::new(0);

/// The engine configuration the model describes.
fn config(clock: &ManualClock) -> Config {
    let inline = CASES.fetch_add(1, Ordering::Relaxed) % 2 == 1;
    Config::default()
        .inline_dispatch(inline)
        .index("spec.nodeName")
        .history_bounds(RING, RING)
        .history_window(Duration::from_secs(1 << 20))
        .too_large_timeout(TOO_LARGE)
        // No periodic bookmarks within a case (see the model's docs).
        .bookmark_frequency(Duration::from_secs(1 << 30))
        .clock(clock.clone())
}

// ---------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------

/// An object, by small indexes: key `x/k0, y/k0, x/k1, ... y/k3`, label
/// `app` in a, b, c or none, label `tier` in 1, 2 or none, field
/// `spec.nodeName` in n0..n3 or none.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ObjSpec {
    key: u8,
    app: u8,
    tier: u8,
    node: u8,
}

const APPS: [Option<&str>; 4] = [Some("a"), Some("b"), Some("c"), None];
const TIERS: [Option<&str>; 3] = [Some("1"), Some("2"), None];
const NODES: [Option<&str>; 5] = [Some("n0"), Some("n1"), Some("n2"), Some("n3"), None];

impl ObjSpec {
    fn key(&self) -> String {
        format!("{}/k{}", ["x", "y"][(self.key % 2) as usize], self.key / 2)
    }

    fn build(&self, tag: &str) -> Object {
        let ns = ["x", "y"][(self.key % 2) as usize];
        let mut b = Object::builder(ns, &format!("k{}", self.key / 2));
        if let Some(a) = APPS[self.app as usize] {
            b = b.label("app", a);
        }
        if let Some(t) = TIERS[self.tier as usize] {
            b = b.label("tier", t);
        }
        if let Some(n) = NODES[self.node as usize] {
            b = b.field("spec.nodeName", n);
        }
        b.payload(tag.to_owned()).build()
    }
}

impl fmt::Debug for ObjSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} app={} tier={} node={}",
            self.key(),
            APPS[self.app as usize].unwrap_or("-"),
            TIERS[self.tier as usize].unwrap_or("-"),
            NODES[self.node as usize].unwrap_or("-")
        )
    }
}

fn obj_spec() -> impl Strategy<Value = ObjSpec> {
    (0..8u8, 0..4u8, 0..3u8, 0..5u8).prop_map(|(key, app, tier, node)| ObjSpec {
        key,
        app,
        tier,
        node,
    })
}

/// A resource version relative to the current one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RvStep {
    /// current + n.
    Next(u8),
    /// current (refused for a change, allowed for a re-list and progress).
    Same,
    /// current - n (refused).
    Back(u8),
}

impl RvStep {
    fn resolve(self, current: u64) -> u64 {
        match self {
            RvStep::Next(n) => current + u64::from(n),
            RvStep::Same => current,
            RvStep::Back(n) => current.saturating_sub(u64::from(n)),
        }
    }
}

impl fmt::Debug for RvStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RvStep::Next(n) => write!(f, "rv+{n}"),
            RvStep::Same => write!(f, "rv+0"),
            RvStep::Back(n) => write!(f, "rv-{n}"),
        }
    }
}

fn rv_step(next: u32, same: u32, back: u32) -> impl Strategy<Value = RvStep> {
    prop_oneof![
        next => (1..4u8).prop_map(RvStep::Next),
        same => Just(RvStep::Same),
        back => (1..4u8).prop_map(RvStep::Back),
    ]
}

/// The kind of an applied change.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KindSpec {
    /// Added if the key is absent, else Modified.
    Natural,
    /// Always Added (Modified in effect if the key exists).
    Added,
    /// Always Modified (Added in effect if the key is absent).
    Modified,
    /// Deleted (of the given object, whatever is stored).
    Deleted,
}

/// A watch's resource version, relative to the engine's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RvSpec {
    /// Unset.
    Unset,
    /// `0`.
    Zero,
    /// current - n (too old once n exceeds the ring's reach; at least 1).
    Back(u8),
    /// current + n (waits; too large after the timeout).
    Future(u8),
    /// Version 1: older than any list in these cases.
    Ancient,
}

impl RvSpec {
    fn resolve(self, current: u64) -> Option<u64> {
        match self {
            RvSpec::Unset => None,
            RvSpec::Zero => Some(0),
            RvSpec::Back(n) => Some(current.saturating_sub(u64::from(n)).max(1)),
            RvSpec::Future(n) => Some(current + u64::from(n)),
            RvSpec::Ancient => Some(1),
        }
    }
}

impl fmt::Debug for RvSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RvSpec::Unset => f.write_str("unset"),
            RvSpec::Zero => f.write_str("0"),
            RvSpec::Back(n) => write!(f, "rv-{n}"),
            RvSpec::Future(n) => write!(f, "rv+{n}"),
            RvSpec::Ancient => f.write_str("1"),
        }
    }
}

/// Where a watch starts: its version options as the wire spells them,
/// valid or not (`send_initial_events` unset / true / false x version
/// unset / 0 / current +- n x match none / NotOlderThan / Exact x
/// bookmarks).
#[derive(Clone, Copy, PartialEq, Eq)]
struct StartSpec {
    rv: RvSpec,
    sie: Option<bool>,
    rvm: Option<ResourceVersionMatch>,
    bookmarks: bool,
}

impl StartSpec {
    /// A watch without `send_initial_events`.
    const fn legacy(rv: RvSpec) -> StartSpec {
        StartSpec {
            rv,
            sie: None,
            rvm: None,
            bookmarks: false,
        }
    }

    /// `send_initial_events=sie` with `NotOlderThan`.
    const fn watch_list(rv: RvSpec, sie: bool, bookmarks: bool) -> StartSpec {
        StartSpec {
            rv,
            sie: Some(sie),
            rvm: Some(ResourceVersionMatch::NotOlderThan),
            bookmarks,
        }
    }
}

impl fmt::Debug for StartSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.rv)?;
        if let Some(sie) = self.sie {
            write!(f, " sie={sie}")?;
        }
        if let Some(rvm) = self.rvm {
            write!(f, " match={}", rvm.as_str())?;
        }
        if self.bookmarks {
            f.write_str(" bookmarks")?;
        }
        Ok(())
    }
}

/// How a list gives each object its version.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Versions {
    /// `Relist::new` (and its model's `replace`, `replace_after_regression`):
    /// every object at the list's version.
    Plain,
    /// `Relist::items` (and its model's `replace_items`,
    /// `replace_items_after_regression`): object `i` at the list's version
    /// minus `i % 4`.
    Items,
    /// The same, but object `k` (modulo the list's length) and every
    /// second one after it are above the list (`ItemAhead` for the first).
    Ahead(u8),
}

impl Versions {
    /// Each object's version in a list at `to` of `n` objects.
    fn at(self, i: usize, n: usize, to: u64) -> u64 {
        let own = to.saturating_sub((i % 4) as u64);
        match self {
            Versions::Plain => to,
            Versions::Items => own,
            Versions::Ahead(k) => {
                let k = usize::from(k) % n.max(1);
                if i >= k && (i - k) % 2 == 0 {
                    to + 1 + ((i - k) / 2) as u64
                } else {
                    own
                }
            }
        }
    }
}

/// How a read drains a watch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum How {
    Try,
    Batch,
    Visit,
    Poll,
}

#[derive(Clone)]
enum Op {
    Apply {
        obj: ObjSpec,
        kind: KindSpec,
        rv: RvStep,
    },
    /// `n` natural changes from a small generator seeded with `seed`.
    Burst {
        n: u8,
        seed: u8,
    },
    Progress(RvStep),
    Relist {
        objects: Vec<ObjSpec>,
        rv: RvStep,
        versions: Versions,
    },
    Watch {
        filter: FilterSpec,
        start: StartSpec,
        timeout: Option<u8>,
    },
    /// A re-list after the source went back
    /// (`Relist::after_regression`).
    Regress {
        objects: Vec<ObjSpec>,
        rv: RvStep,
        versions: Versions,
    },
    /// The writer lost its source (`Writer::mark_unready`): the engine
    /// falls back to Pending until the next list.
    Unready,
    /// `n` watches like `Watch`'s, each dropped at once (churn).
    Churn {
        n: u8,
        filter: FilterSpec,
        start: StartSpec,
        timeout: Option<u8>,
    },
    Read {
        watch: u8,
        max: u8,
        how: How,
    },
    Stop {
        watch: u8,
    },
    /// Reads of the watch are skipped for the next `ops` operations.
    Stall {
        watch: u8,
        ops: u8,
    },
    /// Moves the clock by this many milliseconds (at least 1250: every
    /// move makes the dispatcher tick exactly once).
    Clock(u16),
    StopEngine,
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Apply { obj, kind, rv } => write!(f, "apply {kind:?} {obj:?} {rv:?}"),
            Op::Burst { n, seed } => write!(f, "burst n={n} seed={seed}"),
            Op::Progress(rv) => write!(f, "progress {rv:?}"),
            Op::Relist {
                objects,
                rv,
                versions,
            } => write!(f, "relist {rv:?} {versions:?} {objects:?}"),
            Op::Regress {
                objects,
                rv,
                versions,
            } => write!(f, "relist after regression {rv:?} {versions:?} {objects:?}"),
            Op::Unready => write!(f, "mark unready"),
            Op::Watch {
                filter,
                start,
                timeout,
            } => show_watch(f, "watch", filter, start, timeout),
            Op::Churn {
                n,
                filter,
                start,
                timeout,
            } => show_watch(f, &format!("churn {n} x watch"), filter, start, timeout),
            Op::Read { watch, max, how } => {
                write!(f, "read open watch #{watch} max={max} {how:?}")
            }
            Op::Stop { watch } => write!(f, "stop w{watch}"),
            Op::Stall { watch, ops } => write!(f, "stall w{watch} for {ops} ops"),
            Op::Clock(ms) => write!(f, "clock +{ms}ms"),
            Op::StopEngine => write!(f, "stop engine"),
        }
    }
}

/// `Watch` and `Churn` as `Debug` shows them.
fn show_watch(
    f: &mut fmt::Formatter<'_>,
    what: &str,
    filter: &FilterSpec,
    start: &StartSpec,
    timeout: &Option<u8>,
) -> fmt::Result {
    write!(f, "{what} {:?} start={start:?}", filter.filter())?;
    if let Some(t) = timeout {
        write!(f, " timeout={t}s")?;
    }
    Ok(())
}

/// A filter by indexes into the pools below.
#[derive(Clone, PartialEq, Eq)]
struct FilterSpec {
    scope: u8,
    labels: Vec<u8>,
    fields: Vec<u8>,
}

fn scope_pool(i: u8) -> Scope {
    match i % 5 {
        0 => Scope::All,
        1 => Scope::Prefix("x".into()),
        2 => Scope::Prefix("y".into()),
        3 => Scope::Exact("x/k1".into()),
        _ => Scope::Exact("y/k0".into()),
    }
}

fn label_pool(i: u8) -> LabelReq {
    let s = |x: &str| x.to_owned();
    match i % 10 {
        0 => LabelReq::Eq(s("app"), s("a")),
        1 => LabelReq::DoubleEq(s("app"), s("b")),
        2 => LabelReq::NotEq(s("app"), s("a")),
        3 => LabelReq::In(s("app"), vec![s("a"), s("b")]),
        4 => LabelReq::NotIn(s("app"), vec![s("b"), s("c")]),
        5 => LabelReq::Exists(s("app")),
        6 => LabelReq::NotExists(s("app")),
        7 => LabelReq::Eq(s("tier"), s("1")),
        8 => LabelReq::NotEq(s("tier"), s("2")),
        _ => LabelReq::NotExists(s("tier")),
    }
}

fn field_pool(i: u8) -> FieldReq {
    let s = |x: &str| x.to_owned();
    match i % 8 {
        // Exact values of the indexed field: routed through the index.
        0 => FieldReq::Eq(s("spec.nodeName"), s("n1")),
        1 => FieldReq::DoubleEq(s("spec.nodeName"), s("n2")),
        // Objects without a node (the empty value), also indexed.
        2 => FieldReq::Eq(s("spec.nodeName"), s("")),
        3 => FieldReq::NotEq(s("spec.nodeName"), s("n1")),
        4 => FieldReq::NotEq(s("spec.nodeName"), s("")),
        5 => FieldReq::Eq(s("metadata.name"), s("k1")),
        6 => FieldReq::Eq(s("metadata.namespace"), s("y")),
        _ => FieldReq::NotEq(s("metadata.name"), s("k0")),
    }
}

impl fmt::Debug for FilterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.filter())
    }
}

impl FilterSpec {
    fn filter(&self) -> Filter {
        Filter {
            scope: scope_pool(self.scope),
            labels: self.labels.iter().map(|&i| label_pool(i)).collect(),
            fields: self.fields.iter().map(|&i| field_pool(i)).collect(),
        }
    }
}

fn filter_spec() -> impl Strategy<Value = FilterSpec> {
    (
        prop_oneof![3 => Just(0u8), 2 => 1..5u8],
        prop_oneof![
            10 => Just(vec![]),
            7 => prop::collection::vec(0..10u8, 1..2),
            3 => prop::collection::vec(0..10u8, 2..3),
        ],
        prop_oneof![
            10 => Just(vec![]),
            7 => prop::collection::vec(0..8u8, 1..2),
            3 => prop::collection::vec(0..8u8, 2..3),
        ],
    )
        .prop_map(|(scope, labels, fields)| FilterSpec {
            scope,
            labels,
            fields,
        })
}

/// A watch's version, weighted unset / 0 / current - n / current + n / 1.
fn rv_spec(w: [u32; 5]) -> impl Strategy<Value = RvSpec> {
    prop_oneof![
        w[0] => Just(RvSpec::Unset),
        w[1] => Just(RvSpec::Zero),
        w[2] => (0..24u8).prop_map(RvSpec::Back),
        w[3] => (1..5u8).prop_map(RvSpec::Future),
        w[4] => Just(RvSpec::Ancient),
    ]
}

/// Every combination of the version options; the valid ones (29 in 31)
/// dominate.
fn start_spec() -> impl Strategy<Value = StartSpec> {
    use ResourceVersionMatch::{Exact, NotOlderThan};
    prop_oneof![
        // The legacy watch (bookmarks change nothing it sees).
        16 => (rv_spec([3, 1, 6, 2, 1]), prop::bool::weighted(0.15)).prop_map(|(rv, b)| {
            StartSpec { bookmarks: b, ..StartSpec::legacy(rv) }
        }),
        // A watch-list: initial events, the end bookmark if bookmarks.
        8 => (rv_spec([3, 1, 4, 2, 1]), prop::bool::weighted(0.75))
            .prop_map(|(rv, b)| StartSpec::watch_list(rv, true, b)),
        // Changes only.
        5 => (rv_spec([3, 3, 4, 1, 1]), prop::bool::weighted(0.3))
            .prop_map(|(rv, b)| StartSpec::watch_list(rv, false, b)),
        // Refused: `send_initial_events` without `NotOlderThan`, or a
        // match without `send_initial_events`.
        2 => (
            rv_spec([1, 1, 1, 1, 1]),
            prop_oneof![
                Just((Some(true), None)),
                Just((Some(false), None)),
                Just((Some(true), Some(Exact))),
                Just((Some(false), Some(Exact))),
                Just((None, Some(NotOlderThan))),
                Just((None, Some(Exact))),
            ],
            any::<bool>(),
        )
            .prop_map(|(rv, (sie, rvm), bookmarks)| StartSpec { rv, sie, rvm, bookmarks }),
    ]
}

/// How a list gives its objects their versions.
fn versions() -> impl Strategy<Value = Versions> {
    prop_oneof![
        2 => Just(Versions::Plain),
        3 => Just(Versions::Items),
        1 => any::<u8>().prop_map(Versions::Ahead),
    ]
}

fn relist_op() -> impl Strategy<Value = Op> {
    (
        prop::collection::vec(obj_spec(), 0..5),
        rv_step(4, 1, 1),
        versions(),
    )
        .prop_map(|(objects, rv, versions)| Op::Relist {
            objects,
            rv,
            versions,
        })
}

fn regress_op() -> impl Strategy<Value = Op> {
    (
        prop::collection::vec(obj_spec(), 0..5),
        rv_step(1, 1, 6),
        versions(),
    )
        .prop_map(|(objects, rv, versions)| Op::Regress {
            objects,
            rv,
            versions,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (
            obj_spec(),
            prop_oneof![
                6 => Just(KindSpec::Natural),
                1 => Just(KindSpec::Added),
                1 => Just(KindSpec::Modified),
                3 => Just(KindSpec::Deleted),
            ],
            rv_step(20, 1, 1),
        )
            .prop_map(|(obj, kind, rv)| Op::Apply { obj, kind, rv }),
        3 => (8..40u8, any::<u8>()).prop_map(|(n, seed)| Op::Burst { n, seed }),
        3 => rv_step(4, 1, 1).prop_map(Op::Progress),
        1 => relist_op(),
        1 => regress_op(),
        1 => Just(Op::Unready),
        12 => (filter_spec(), start_spec(), prop::option::weighted(0.3, 1..20u8)).prop_map(
            |(filter, start, timeout)| {
                // No deadline with bookmarks (see the model's docs,
                // Bookmarks).
                let timeout = if start.bookmarks { None } else { timeout };
                Op::Watch { filter, start, timeout }
            }
        ),
        3 => (
            1..40u8,
            filter_spec(),
            start_spec(),
            prop::option::weighted(0.3, 1..20u8)
        )
            .prop_map(|(n, filter, start, timeout)| Op::Churn {
                n,
                filter,
                start,
                timeout
            }),
        25 => (
            any::<u8>(),
            1..20u8,
            prop_oneof![Just(How::Try), Just(How::Batch), Just(How::Visit), Just(How::Poll)],
        )
            .prop_map(|(watch, max, how)| Op::Read { watch, max, how }),
        2 => any::<u8>().prop_map(|watch| Op::Stop { watch }),
        3 => (any::<u8>(), 1..30u8).prop_map(|(watch, ops)| Op::Stall { watch, ops }),
        5 => prop_oneof![Just(1250u16), Just(1500), Just(2000), Just(3000), Just(5000)]
            .prop_map(Op::Clock),
    ]
}

/// A case: usually an initial list first, then random operations.
fn case(max_ops: usize) -> impl Strategy<Value = Vec<Op>> {
    (
        prop::bool::weighted(0.95),
        prop::collection::vec(obj_spec(), 0..5),
        prop_oneof![Just(Versions::Plain), Just(Versions::Items)],
        prop::collection::vec(op(), 1..max_ops),
        prop::option::weighted(0.15, any::<prop::sample::Index>()),
        // The source coming back after a fall back to pending: a list
        // (sometimes one that goes back) that many operations later.
        prop::collection::vec(
            prop::option::weighted(
                0.9,
                (1..10u8, prop_oneof![4 => relist_op(), 1 => regress_op()]),
            ),
            4,
        ),
    )
        .prop_map(|(listed, objects, versions, mut ops, stop, recoveries)| {
            // Most falls back to pending (the first four) end with a list
            // a few operations later; without it the rest of the case
            // would mostly be refused writes.
            let mut recoveries = recoveries.into_iter();
            let mut i = 0;
            while i < ops.len() {
                if matches!(ops[i], Op::Unready) {
                    if let Some(Some((after, list))) = recoveries.next() {
                        let at = (i + 1 + usize::from(after)).min(ops.len());
                        ops.insert(at, list);
                    }
                }
                i += 1;
            }
            // Sometimes the engine stops mid-way (otherwise at the end).
            if let Some(at) = stop {
                let at = at.index(ops.len() + 1);
                ops.insert(at, Op::StopEngine);
            }
            if listed {
                ops.insert(
                    0,
                    Op::Relist {
                        objects,
                        rv: RvStep::Next(3),
                        versions,
                    },
                );
            }
            ops
        })
}

/// The changes of a burst: natural changes over random objects, one in
/// five a deletion of a present key.
fn burst(
    n: u8,
    seed: u8,
    state: &std::collections::BTreeMap<String, (Object, u64)>,
) -> Vec<(ObjSpec, bool)> {
    let mut x = u64::from(seed) ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut present: std::collections::BTreeSet<String> = state.keys().cloned().collect();
    (0..n)
        .map(|_| {
            let r = next();
            let spec = ObjSpec {
                key: (r % 8) as u8,
                app: ((r >> 8) % 4) as u8,
                tier: ((r >> 16) % 3) as u8,
                node: ((r >> 24) % 5) as u8,
            };
            let delete = present.contains(&spec.key()) && (r >> 32) % 5 == 0;
            if delete {
                present.remove(&spec.key());
            } else {
                present.insert(spec.key());
            }
            (spec, delete)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The harness.
// ---------------------------------------------------------------------------

/// Operations executed over the whole run (a burst counts its changes).
static OPS: AtomicU64 = AtomicU64::new(0);

struct HWatch {
    watch: Watch,
    id: usize,
    /// Reads are skipped until this operation index.
    stalled_until: usize,
    /// What the engine handed out, for the failure message.
    got: Vec<Recv>,
    /// Created while the engine was pending after a list (for the
    /// coverage report).
    pending_born: bool,
}

struct Harness {
    clock: ManualClock,
    engine: Engine,
    writer: Writer,
    model: Model,
    watches: Vec<HWatch>,
    /// Positions the writer has appended (successful changes and lists).
    positions: u64,
    /// The operation being executed (for messages and stalls).
    step: usize,
    /// Operations in the case.
    ops: usize,
    /// Documented alternatives accepted (see `model::Allow`).
    alternatives: u64,
    /// Every writer call's result, as the engine returned it.
    writes: Vec<Result<(), WriteError>>,
}

type Res<T = ()> = Result<T, String>;

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) -> Res {
    let limit = Instant::now() + LIVENESS;
    let mut spins = 0u32;
    while !cond() {
        if Instant::now() > limit {
            return Err(format!("liveness: never happened: {what}"));
        }
        spins += 1;
        if spins < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(())
}

macro_rules! check_eq {
    ($h:expr, $what:expr, $engine:expr, $model:expr) => {{
        let (e, m) = (&$engine, &$model);
        if e != m {
            return Err(format!(
                "{}: {}: engine {:?}, model {:?}",
                $h.at(),
                $what,
                e,
                m
            ));
        }
    }};
}

impl Harness {
    fn new() -> Harness {
        let clock = ManualClock::new();
        let (engine, writer) = Engine::new(config(&clock)).expect("engine");
        Harness {
            clock,
            engine,
            writer,
            model: Model::new(RING, TOO_LARGE).with_allow(Allow::from_env()),
            watches: Vec::new(),
            positions: 0,
            step: 0,
            ops: 0,
            alternatives: 0,
            writes: Vec::new(),
        }
    }

    fn run(&mut self, ops: &[Op]) -> Res {
        self.ops = ops.len();
        for (i, op) in ops.iter().enumerate() {
            self.step = i;
            let before = self.engine.stats().ticks;
            let ends = (self.model.deadline_ends(), self.model.too_large_ends());
            self.exec(op)?;
            self.quiesce(op, before)?;
            self.compare_engine()?;
            if self.pending_after_list() {
                let what = "end decided while pending after a list";
                let deadline = self.model.deadline_ends() - ends.0;
                cover(format!("{what}: Deadline"), deadline);
                let too_large = self.model.too_large_ends() - ends.1;
                cover(format!("{what}: TooLargeResourceVersion"), too_large);
            }
        }
        self.step = ops.len();
        // Drain every watch as far as it goes now.
        for i in 0..self.watches.len() {
            self.read(i, usize::MAX, How::Try)?;
        }
        // Stop (if not yet) and read every watch to its End.
        if self.model.lifecycle() != Lifecycle::Stopped {
            self.engine.stop();
            self.model.stop_engine();
        }
        self.compare_engine()?;
        for i in 0..self.watches.len() {
            // The End, then `Finished` (a read stops at the End).
            self.read(i, usize::MAX, How::Try)?;
            self.read(i, 1, How::Try)?;
            let w = &self.watches[i];
            if !w.watch.is_finished() || !matches!(w.got.last(), Some(Recv::Finished)) {
                return Err(format!("w{i}: not finished after the stop: {:?}", w.got));
            }
            let ends = w.got.iter().filter(|r| matches!(r, Recv::End(_))).count();
            if ends != 1 {
                return Err(format!("w{i}: {ends} End items: {:?}", w.got));
            }
        }
        Ok(())
    }

    fn compare_engine(&self) -> Res {
        check_eq!(
            self,
            "resource_version",
            self.engine.resource_version().get(),
            self.model.resource_version()
        );
        check_eq!(
            self,
            "generation",
            self.engine.generation(),
            self.model.generation()
        );
        check_eq!(
            self,
            "lifecycle",
            self.engine.lifecycle(),
            self.model.lifecycle()
        );
        Ok(())
    }

    fn write(
        &mut self,
        what: String,
        engine: Result<(), WriteError>,
        model: Result<(), WriteError>,
        positions: u64,
    ) -> Res {
        OPS.fetch_add(1, Ordering::Relaxed);
        check_eq!(self, what, engine, model);
        self.writes.push(engine.clone());
        if let Err(e) = &engine {
            let e = format!("{e:?}");
            cover(
                format!("write error: {}", e.split(' ').next().unwrap_or("")),
                1,
            );
        }
        if engine.is_ok() {
            self.positions += positions;
        }
        Ok(())
    }

    fn apply(&mut self, obj: ObjSpec, kind: KindSpec, rv: u64) -> Res {
        let stored = self.model.state().contains_key(&obj.key());
        let kind = match kind {
            KindSpec::Natural if stored => ChangeKind::Modified,
            KindSpec::Natural | KindSpec::Added => ChangeKind::Added,
            KindSpec::Modified => ChangeKind::Modified,
            KindSpec::Deleted => ChangeKind::Deleted,
        };
        let object = obj.build(&format!("v{rv}"));
        let e = self
            .writer
            .apply(Change::new(kind, object.clone(), rv.into()));
        let m = self.model.apply(kind, object, rv);
        // A deletion of a key not held takes no position (it is progress).
        let positions = u64::from(stored || kind != ChangeKind::Deleted);
        self.write(format!("apply {kind:?} {obj:?} at {rv}"), e, m, positions)
    }

    /// A list at `to` (`back`: after a regression), each object at the
    /// version `versions` gives it.
    fn relist(&mut self, objects: &[ObjSpec], to: u64, versions: Versions, back: bool) -> Res {
        let tag = format!("list{to}");
        let built: Vec<Object> = objects.iter().map(|o| o.build(&tag)).collect();
        let what = match (back, versions) {
            (false, Versions::Plain) => "replace",
            (true, Versions::Plain) => "replace after regression",
            (false, _) => "replace_items",
            (true, _) => "replace_items after regression",
        };
        let pending = self.pending_after_list();
        let (e, m) = if versions == Versions::Plain {
            if back {
                (
                    self.writer
                        .replace(Relist::new(built.clone(), to.into()).after_regression()),
                    self.model.replace_after_regression(built, to),
                )
            } else {
                (
                    self.writer.replace(Relist::new(built.clone(), to.into())),
                    self.model.replace(built, to),
                )
            }
        } else {
            let n = built.len();
            let items: Vec<(Object, u64)> = built
                .into_iter()
                .enumerate()
                .map(|(i, o)| (o, versions.at(i, n, to)))
                .collect();
            let engine_items: Vec<Item> = items
                .iter()
                .map(|(o, at)| Item::new(o.clone(), (*at).into()))
                .collect();
            if back {
                (
                    self.writer
                        .replace(Relist::items(engine_items, to.into()).after_regression()),
                    self.model.replace_items_after_regression(items, to),
                )
            } else {
                (
                    self.writer.replace(Relist::items(engine_items, to.into())),
                    self.model.replace_items(items, to),
                )
            }
        };
        if pending && m.is_ok() {
            cover("list: while pending after a list".into(), 1);
        }
        self.write(format!("{what} at {to}"), e, m, 1)
    }

    /// Counts what kind of start an accepted watch has.
    fn cover_watch(&self, id: usize) {
        let w = self.model.watch_state(id);
        let start = match w.start {
            Start::Snapshot {
                min_rv: 0,
                initial_events_end,
            } => format!("snapshot now, end bookmark {initial_events_end}"),
            Start::Snapshot {
                initial_events_end, ..
            } => format!("snapshot at or after R, end bookmark {initial_events_end}"),
            Start::After(_) => "changes after R".into(),
            Start::Now => "changes from now, resolved when begun".into(),
        };
        cover(format!("watch start: {start}"), 1);
        if self.pending_after_list() {
            cover("watch created while pending after a list".into(), 1);
        }
    }

    /// Whether the engine has fallen back to pending after a list.
    fn pending_after_list(&self) -> bool {
        self.model.lifecycle() == Lifecycle::Pending && self.model.generation() > 0
    }

    fn exec(&mut self, op: &Op) -> Res {
        let rv = self.model.resource_version();
        match op {
            Op::Apply {
                obj,
                kind,
                rv: step,
            } => self.apply(*obj, *kind, step.resolve(rv))?,
            Op::Burst { n, seed } => {
                for (obj, delete) in burst(*n, *seed, self.model.state()) {
                    let rv = self.model.resource_version() + 1 + u64::from(obj.key % 2);
                    let kind = if delete {
                        KindSpec::Deleted
                    } else {
                        KindSpec::Natural
                    };
                    self.apply(obj, kind, rv)?;
                }
            }
            Op::Progress(step) => {
                let to = step.resolve(rv);
                let e = self.writer.progress(to.into());
                let m = self.model.progress(to);
                self.write(format!("progress to {to}"), e, m, 0)?;
            }
            Op::Relist {
                objects,
                rv: step,
                versions,
            }
            | Op::Regress {
                objects,
                rv: step,
                versions,
            } => {
                // Regress: the source went back (a restore), mostly to a
                // version below the engine's, sometimes not (refused).
                let back = matches!(op, Op::Regress { .. });
                let to = step.resolve(rv);
                self.relist(objects, to, *versions, back)?;
            }
            Op::Unready => {
                let cause = SourceError::Unavailable("differential: the source is down".into());
                let e = self.writer.mark_unready(cause);
                let m = self.model.mark_unready();
                self.write("mark unready".into(), e, m, 0)?;
            }
            Op::Watch {
                filter,
                start,
                timeout,
            } => {
                OPS.fetch_add(1, Ordering::Relaxed);
                let spec = watch_spec(filter, *start, *timeout, rv);
                let e = self.engine.watch(spec.request());
                let m = self.model.watch(&spec);
                match (e, m) {
                    (Ok(watch), Ok(id)) => {
                        self.cover_watch(id);
                        self.watches.push(HWatch {
                            watch,
                            id,
                            stalled_until: 0,
                            got: Vec::new(),
                            pending_born: self.pending_after_list(),
                        });
                    }
                    (Err(e), Err(m)) => {
                        check_eq!(self, "watch() error", e, m);
                        // The options' rule in full; the kind of any other.
                        let e = match e {
                            WatchError::InvalidOptions(rule) => format!("InvalidOptions({rule:?})"),
                            e => format!("{e:?}").split('(').next().unwrap_or("").to_owned(),
                        };
                        cover(format!("watch error: {e}"), 1);
                    }
                    (e, m) => {
                        return Err(format!(
                            "{}: watch(): engine {:?}, model {:?}",
                            self.at(),
                            e.map(|_| "a watch"),
                            m.map(|_| "a watch")
                        ));
                    }
                }
            }
            Op::Churn {
                n,
                filter,
                start,
                timeout,
            } => {
                // Watches the model never hears of: made and dropped (some
                // after one receive), they must change nothing for anyone.
                OPS.fetch_add(1, Ordering::Relaxed);
                let spec = watch_spec(filter, *start, *timeout, rv);
                for i in 0..*n {
                    if let Ok(mut w) = self.engine.watch(spec.request()) {
                        if i % 3 == 0 {
                            let _ = w.try_recv();
                        }
                    }
                }
                cover("churned watches".into(), u64::from(*n));
            }
            Op::Read { watch, max, how } => {
                OPS.fetch_add(1, Ordering::Relaxed);
                if let Some(i) = self.pick_unfinished(*watch) {
                    if self.watches[i].stalled_until <= self.step {
                        self.read(i, usize::from(*max), *how)?;
                    }
                }
            }
            Op::Stop { watch } => {
                OPS.fetch_add(1, Ordering::Relaxed);
                if let Some(i) = self.pick(*watch) {
                    self.watches[i].watch.stop();
                    self.model.stop_watch(self.watches[i].id);
                }
            }
            Op::Stall { watch, ops } => {
                OPS.fetch_add(1, Ordering::Relaxed);
                if let Some(i) = self.pick(*watch) {
                    self.watches[i].stalled_until = self.step + usize::from(*ops);
                }
            }
            Op::Clock(ms) => {
                OPS.fetch_add(1, Ordering::Relaxed);
                let by = Duration::from_millis(u64::from(*ms));
                self.clock.advance(by);
                self.model.advance(by);
            }
            Op::StopEngine => {
                OPS.fetch_add(1, Ordering::Relaxed);
                self.engine.stop();
                self.model.stop_engine();
            }
        }
        Ok(())
    }

    /// Where the case is, for messages.
    fn at(&self) -> String {
        if self.step < self.ops {
            format!("op #{}", self.step)
        } else {
            "final drain".to_owned()
        }
    }

    fn pick(&self, i: u8) -> Option<usize> {
        (!self.watches.is_empty()).then(|| usize::from(i) % self.watches.len())
    }

    /// The `i`-th watch (modulo) among those not finished yet, or any.
    fn pick_unfinished(&self, i: u8) -> Option<usize> {
        let open: Vec<usize> = (0..self.watches.len())
            .filter(|&w| !self.watches[w].watch.is_finished())
            .collect();
        if open.is_empty() {
            return self.pick(i);
        }
        Some(open[usize::from(i) % open.len()])
    }

    /// Waits until the engine has done everything the last operation
    /// implies: see the module docs.
    fn quiesce(&mut self, op: &Op, ticks_before: u64) -> Res {
        if let Op::Clock(_) = op {
            // Every move is at least 1.25 s, the longest tick: one tick.
            let e = &self.engine;
            wait_until("the tick after a clock move", || {
                e.stats().ticks > ticks_before || e.lifecycle() == Lifecycle::Stopped
            })?;
        }
        match self.model.lifecycle() {
            // `stop` joins the dispatcher.
            Lifecycle::Stopped => Ok(()),
            // Nothing can activate; only deadlines move (on the tick's
            // dispatcher pass, which comes after the registrations it
            // found; wait for the count the model expects).
            // Nothing can activate (writes are refused); only deadlines
            // move, and, after a fall back from Ready, the too-large waits
            // of the watches registered before it (on the tick's
            // dispatcher pass, which comes after the registrations it
            // found; wait for the counts the model expects).
            Lifecycle::Pending => {
                let deadline = self.model.deadline_ends();
                let too_large = self.model.too_large_ends();
                let e = &self.engine;
                wait_until("deadline and too-large ends while pending", || {
                    let t = e.stats().terminations;
                    t.deadline >= deadline && t.too_large_resource_version >= too_large
                })
            }
            _ => {
                let (e, positions) = (&self.engine, self.positions);
                wait_until("every position dispatched", || {
                    e.stats().changes_dispatched >= positions
                })?;
                // Two barrier watches, one after the other: the second is
                // picked up by a dispatcher pass that starts after the
                // pass that activated the first one has finished, so a
                // whole pass (registrations, activations, time-outs,
                // deadlines, tick) has run after this operation.
                for _ in 0..2 {
                    self.barrier()?;
                }
                Ok(())
            }
        }
    }

    fn barrier(&self) -> Res {
        let mut b = self
            .engine
            .watch(
                WatchRequest::new()
                    .scope(KeyScope::exact("barrier/none"))
                    .send_initial_events(true)
                    .resource_version_match(ResourceVersionMatch::NotOlderThan)
                    .allow_bookmarks(true),
            )
            .map_err(|e| format!("barrier watch: {e}"))?;
        match b.recv_timeout(LIVENESS) {
            Ok(WatchItem::Event(ev)) if ev.is_initial_events_end() => Ok(()),
            other => Err(format!(
                "{}: barrier watch: {other:?} instead of its bookmark",
                self.at()
            )),
        }
    }

    /// Reads up to `max` items of watch `i` with `how`, comparing each with
    /// the model.
    fn read(&mut self, i: usize, max: usize, how: How) -> Res {
        let got = engine_read(&mut self.watches[i].watch, max, how);
        let id = self.watches[i].id;
        for g in got {
            self.watches[i].got.push(g.clone());
            if matches!(
                &g,
                Recv::Event(_) | Recv::End(EndReason::Gone(_) | EndReason::Relisted)
            ) {
                // Where the model may accept a documented alternative,
                // judge on a copy first.
                let saved = self.model.watch_state(id).clone();
                let m = self.model.recv(id);
                if m == g {
                    continue;
                }
                self.model.restore_watch(id, saved);
                let accepted = match &g {
                    Recv::End(EndReason::Gone(gone)) => self.model.accept_early_gone(id, gone),
                    Recv::End(_) => self.model.accept_relisted(id),
                    _ => self.model.accept_served_past_window(id, &g),
                };
                if accepted {
                    self.alternatives += 1;
                    continue;
                }
                return Err(self.read_mismatch(i, how, &g, &m));
            }
            let m = self.model.recv(id);
            if m != g {
                return Err(self.read_mismatch(i, how, &g, &m));
            }
        }
        Ok(())
    }

    fn read_mismatch(&self, i: usize, how: How, got: &Recv, want: &Recv) -> String {
        let w = self.model.watch_state(self.watches[i].id);
        format!(
            "{}: w{i} {:?} start={:?} ({how:?} read): engine {got:?}, model {want:?}\n  \
             received so far: {:?}\n  model: rv={} oldest-1={} positions={}",
            self.at(),
            w.filter,
            w.start,
            self.watches[i].got,
            self.model.resource_version(),
            self.model.oldest_minus_one(),
            self.model.positions(),
        )
    }
}

/// Reads from the engine: items until `max` events, an End, nothing ready
/// (`Empty`) or a finished watch (`Finished`).
fn engine_read(w: &mut Watch, max: usize, how: How) -> Vec<Recv> {
    let item = |i: WatchItem| match i {
        WatchItem::Event(e) => Recv::Event(Seen::from_event(&e)),
        WatchItem::End(r) => Recv::End(r),
    };
    let idle = |w: &Watch| {
        if w.is_finished() {
            Recv::Finished
        } else {
            Recv::Empty
        }
    };
    let mut out = Vec::new();
    match how {
        How::Try => {
            while out.len() < max {
                match w.try_recv() {
                    Ok(i) => {
                        let end = matches!(i, WatchItem::End(_));
                        out.push(item(i));
                        if end {
                            break;
                        }
                    }
                    Err(TryRecvError::Empty) => {
                        out.push(Recv::Empty);
                        break;
                    }
                    Err(_) => {
                        out.push(Recv::Finished);
                        break;
                    }
                }
            }
        }
        How::Batch => {
            let mut items = Vec::new();
            let n = w.recv_batch(&mut items, max.min(1 << 20));
            let ended = matches!(items.last(), Some(WatchItem::End(_)));
            out.extend(items.into_iter().map(item));
            if !ended && n < max {
                out.push(idle(w));
            }
        }
        How::Visit => {
            let mut evs = Vec::new();
            let v = w.visit_batch(max.min(1 << 20), |e| evs.push(e.to_event()));
            let events = v.events;
            out.extend(evs.iter().map(|e| Recv::Event(Seen::from_event(e))));
            match v.end {
                Some(r) => out.push(Recv::End(r)),
                None if events < max => out.push(idle(w)),
                None => {}
            }
        }
        How::Poll => {
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            while out.len() < max {
                match Pin::new(&mut *w).poll_next(&mut cx) {
                    Poll::Ready(Some(i)) => {
                        let end = matches!(i, WatchItem::End(_));
                        out.push(item(i));
                        if end {
                            break;
                        }
                    }
                    Poll::Ready(None) => {
                        out.push(Recv::Finished);
                        break;
                    }
                    Poll::Pending => {
                        out.push(Recv::Empty);
                        break;
                    }
                }
            }
        }
    }
    out
}

/// What the cases exercised, over the whole run (for the report).
static COVERAGE: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

fn cover(what: String, n: u64) {
    *lock(&COVERAGE).entry(what).or_default() += n;
}

fn run_case(ops: &[Op]) -> Res<u64> {
    run_recorded(ops).map(|r| r.alternatives)
}

/// What a case did, as the engine reported it (and the model agreed).
struct Recorded {
    /// Documented alternatives accepted.
    alternatives: u64,
    /// What each watch received, in the order the case made them.
    got: Vec<Vec<Recv>>,
    /// Every writer call's result, in order.
    writes: Vec<Result<(), WriteError>>,
}

fn run_recorded(ops: &[Op]) -> Res<Recorded> {
    let mut h = Harness::new();
    let r = h.run(ops);
    // Stop before the handles drop (their drop would stop it anyway).
    h.engine.stop();
    if r.is_ok() {
        let stats = h.engine.stats();
        cover("engine parks".into(), stats.parks);
        cover("engine resumes".into(), stats.resumes);
        cover("writer gated waits".into(), stats.writer_gated_waits);
        for w in &h.watches {
            for g in &w.got {
                let what = match g {
                    Recv::Event(e) if e.initial_events_end => "event: initial-events-end".into(),
                    Recv::Event(e) => format!("event: {:?}", e.kind),
                    Recv::End(r) => {
                        let r = format!("{r:?}");
                        format!("end: {}", r.split('(').next().unwrap_or(""))
                    }
                    _ => continue,
                };
                if w.pending_born {
                    cover(
                        format!("{what} (watch created while pending after a list)"),
                        1,
                    );
                }
                cover(what, 1);
            }
        }
    }
    let got = h.watches.iter().map(|w| w.got.clone()).collect();
    r.map(|()| Recorded {
        alternatives: h.alternatives,
        got,
        writes: std::mem::take(&mut h.writes),
    })
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The watch an operation asks for, at the engine's version `rv`.
fn watch_spec(filter: &FilterSpec, start: StartSpec, timeout: Option<u8>, rv: u64) -> WatchSpec {
    let mut spec = WatchSpec::new(filter.filter());
    spec.timeout = timeout.map(|t| Duration::from_secs(u64::from(t)));
    spec.resource_version = start.rv.resolve(rv);
    spec.send_initial_events = start.sie;
    spec.resource_version_match = start.rvm;
    spec.allow_bookmarks = start.bookmarks;
    spec
}

/// Formats a failing case: one operation per line.
fn show(ops: &[Op]) -> String {
    let mut s = String::new();
    for (i, op) in ops.iter().enumerate() {
        s.push_str(&format!("  #{i:<3} {op:?}\n"));
    }
    s
}

#[test]
fn engine_matches_model() {
    let (default_cases, default_ops) = if cfg!(miri) { (2, 12) } else { (1500, 120) };
    let cases = env_usize("HERALD_PROPTEST_CASES", default_cases) as u32;
    let max_ops = env_usize("HERALD_PROPTEST_OPS", default_ops).max(2);
    let report = std::env::var("HERALD_PROPTEST_REPORT").is_ok_and(|v| v == "1");
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        max_shrink_iters: env_usize("HERALD_PROPTEST_SHRINK", 4096) as u32,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..RunnerConfig::default()
    });
    let started = Instant::now();
    let early = AtomicU64::new(0);
    let result = runner.run(&case(max_ops), |ops| {
        let n = run_case(&ops).map_err(TestCaseError::fail)?;
        early.fetch_add(n, Ordering::Relaxed);
        Ok(())
    });
    let summary = format!(
        "differential: {cases} cases, {} operations in {:.1?} ({} documented alternatives accepted)",
        OPS.load(Ordering::Relaxed),
        started.elapsed(),
        early.load(Ordering::Relaxed),
    );
    if report || result.is_ok() {
        eprintln!("{summary}");
    }
    if report {
        for (what, n) in lock(&COVERAGE).iter() {
            eprintln!("  {what}: {n}");
        }
    }
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, ops)) => {
            panic!(
                "engine and model disagree: {why}\nminimal case ({} ops):\n{}",
                ops.len(),
                show(&ops)
            )
        }
        Err(e) => panic!("{e}"),
    }
}

// ---------------------------------------------------------------------------
// The model's own tests (it must be right before it judges the engine).
// ---------------------------------------------------------------------------

fn web() -> Filter {
    Filter {
        scope: Scope::All,
        labels: vec![LabelReq::Eq("app".into(), "web".into())],
        fields: vec![],
    }
}

fn events(m: &mut Model, id: usize) -> Vec<Recv> {
    let mut out = Vec::new();
    loop {
        let r = m.recv(id);
        let stop = matches!(r, Recv::Empty | Recv::Finished);
        out.push(r);
        if stop {
            return out;
        }
    }
}

#[test]
fn model_writer_rules() {
    let mut m = Model::new(4, TOO_LARGE);
    let a = pod("ns", "a").app("web").node("n1").payload("1").build();
    assert_eq!(
        m.apply(ChangeKind::Added, a.clone(), 1),
        Err(WriteError::NotReady)
    );
    assert_eq!(m.progress(1), Err(WriteError::NotReady));
    m.replace(vec![], 5).unwrap();
    assert_eq!(
        (m.lifecycle(), m.generation(), m.resource_version()),
        (Lifecycle::Ready, 1, 5)
    );
    assert_eq!(
        m.apply(ChangeKind::Added, a.clone(), 5),
        Err(WriteError::OutOfOrder {
            given: 5.into(),
            current: 5.into()
        })
    );
    assert_eq!(m.positions(), 1, "a refused change takes no position");
    m.apply(ChangeKind::Added, a.clone(), 6).unwrap();
    m.progress(6).unwrap();
    m.progress(9).unwrap();
    assert_eq!(
        m.progress(8),
        Err(WriteError::OutOfOrder {
            given: 8.into(),
            current: 9.into()
        })
    );
    assert_eq!(m.positions(), 2, "progress takes no position");
    assert_eq!(
        m.replace(vec![], 8),
        Err(WriteError::OutOfOrder {
            given: 8.into(),
            current: 9.into()
        })
    );
    m.replace(vec![a.clone()], 9).unwrap();
    assert_eq!((m.generation(), m.positions()), (2, 3));
    m.stop_engine();
    assert_eq!(
        m.apply(ChangeKind::Added, a.clone(), 20),
        Err(WriteError::Stopped)
    );
    assert_eq!(m.replace(vec![], 20), Err(WriteError::Stopped));
    assert_eq!(m.progress(20), Err(WriteError::Stopped));
    assert_eq!(
        m.watch(&WatchSpec::new(Filter::everything())).unwrap_err(),
        WatchError::EngineStopped
    );
}

#[test]
fn model_verdict_uses_prev_object() {
    let f = web();
    let w = pod("ns", "a").app("web").node("n1").payload("1").build();
    let d = pod("ns", "a").app("db").node("n1").payload("2").build();
    assert_eq!(
        verdict(&f, ChangeKind::Modified, &w, Some(&d)).map(|v| v.0),
        Some(EventKind::Added)
    );
    assert_eq!(
        verdict(&f, ChangeKind::Modified, &w, Some(&w)).map(|v| v.0),
        Some(EventKind::Modified)
    );
    // Left the view: Deleted, showing the previous state.
    let (k, shown) = verdict(&f, ChangeKind::Modified, &d, Some(&w)).unwrap();
    assert_eq!((k, shown), (EventKind::Deleted, &w));
    assert_eq!(verdict(&f, ChangeKind::Modified, &d, Some(&d)), None);
    // A deletion never passes on its current object.
    assert_eq!(verdict(&f, ChangeKind::Deleted, &w, None), None);
    assert_eq!(
        verdict(&f, ChangeKind::Deleted, &w, Some(&w)).map(|v| v.0),
        Some(EventKind::Deleted)
    );
}

#[test]
fn model_selectors() {
    let o = pod("x", "k1").app("a").node("n1").build();
    let l = |r: LabelReq| r.matches(&o);
    assert!(l(LabelReq::Eq("app".into(), "a".into())));
    assert!(!l(LabelReq::NotEq("app".into(), "a".into())));
    assert!(
        l(LabelReq::NotEq("tier".into(), "a".into())),
        "missing label passes !="
    );
    assert!(l(LabelReq::NotIn("tier".into(), vec!["1".into()])));
    assert!(!l(LabelReq::In("tier".into(), vec!["1".into()])));
    assert!(l(LabelReq::NotExists("tier".into())));
    let f = |r: FieldReq| r.matches(&o);
    assert!(f(FieldReq::Eq("metadata.name".into(), "k1".into())));
    assert!(f(FieldReq::Eq("metadata.namespace".into(), "x".into())));
    assert!(
        f(FieldReq::Eq("spec.other".into(), String::new())),
        "missing field is empty"
    );
    assert!(!f(FieldReq::NotEq("spec.nodeName".into(), "n1".into())));
    assert!(Scope::Prefix("x".into()).contains("x/k1"));
    assert!(!Scope::Prefix("x".into()).contains("xy/k1"));
}

#[test]
fn model_watch_starts_and_ring() {
    let mut m = Model::new(4, TOO_LARGE);
    m.replace(
        vec![
            pod("ns", "b").app("web").node("n1").payload("l").build(),
            pod("ns", "a").app("web").node("n1").payload("l").build(),
        ],
        10,
    )
    .unwrap();
    // Snapshot with initial-events-end: key order, then the bookmark.
    let s = m.watch(&WatchSpec::watch_list(web(), true)).unwrap();
    let got = events(&mut m, s);
    let keys: Vec<_> = got
        .iter()
        .map(|r| match r {
            Recv::Event(e) => (e.key.clone(), e.rv, e.initial_events_end),
            other => (format!("{other:?}"), 0, false),
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("ns/a".into(), 10, false),
            ("ns/b".into(), 10, false),
            (String::new(), 10, true),
            ("Empty".into(), 0, false)
        ]
    );
    for rv in 11..=16 {
        m.apply(
            ChangeKind::Added,
            pod("ns", &format!("o{rv}")).app("web").node("n1").build(),
            rv,
        )
        .unwrap();
    }
    // Positions: the list marker and 6 changes; the ring keeps 4 (13..16).
    assert_eq!(m.oldest_minus_one(), 12);
    let mut from = |r| {
        let mut spec = WatchSpec::new(web());
        spec.resource_version = Some(r);
        m.watch(&spec)
    };
    assert_eq!(
        from(11).unwrap_err(),
        WatchError::Gone(Gone::new(11.into(), 12.into()))
    );
    let w = from(12).unwrap();
    let got = events(&mut m, w);
    assert_eq!(got.len(), 5, "13..16 then Empty: {got:?}");
    // The stalled snapshot watch needs 11, which has left the ring.
    assert_eq!(
        m.recv(s),
        Recv::End(EndReason::Gone(Gone::new(10.into(), 12.into())))
    );
    assert_eq!(m.recv(s), Recv::Finished);
}

#[test]
fn model_waits_times_out_and_ends() {
    let mut m = Model::new(4, TOO_LARGE);
    m.replace(vec![], 10).unwrap();
    let mut spec = WatchSpec::new(Filter::everything());
    spec.resource_version = Some(12);
    let future = m.watch(&spec).unwrap();
    spec.resource_version = Some(11);
    let reached = m.watch(&spec).unwrap();
    spec.resource_version = None;
    spec.timeout = Some(Duration::from_secs(5));
    let deadline = m.watch(&spec).unwrap();
    m.apply(
        ChangeKind::Added,
        pod("ns", "a").app("web").node("n1").build(),
        11,
    )
    .unwrap();
    assert_eq!(m.recv(future), Recv::Empty);
    assert!(matches!(m.recv(reached), Recv::Empty));
    m.advance(Duration::from_secs(3));
    assert_eq!(
        m.recv(future),
        Recv::End(EndReason::TooLargeResourceVersion(
            TooLargeResourceVersion::new(12.into(), 11.into())
        ))
    );
    m.advance(Duration::from_secs(2));
    assert_eq!(m.recv(deadline), Recv::End(EndReason::Deadline));
    m.replace(vec![], 11).unwrap();
    assert_eq!(m.recv(reached), Recv::End(EndReason::Relisted));
}

fn obj(key: u8, app: u8) -> ObjSpec {
    // tier none, node none
    ObjSpec {
        key,
        app,
        tier: 2,
        node: 4,
    }
}

fn apply(key: u8, app: u8) -> Op {
    Op::Apply {
        obj: obj(key, app),
        kind: KindSpec::Natural,
        rv: RvStep::Next(1),
    }
}

/// `app=a`, everything else.
fn app_a() -> FilterSpec {
    FilterSpec {
        scope: 0,
        labels: vec![0],
        fields: vec![],
    }
}

fn run_known(ops: &[Op], runs: usize) {
    for run in 0..runs {
        if let Err(e) = run_case(ops) {
            panic!("run {run}: {e}\n{}", show(ops));
        }
    }
}

/// Known disagreement 2 (docs/semantics.md §5.3, left open: a parked watch ends
/// with Gone when its next unread position has left the ring, even if it would
/// not have needed that change): an `app=a` watch has received its snapshot
/// (x/k0 at 4); a change it does not need comes (y/k0, position 2), then eleven
/// it needs (x/k1, positions 3-13: ten fill its queue, the eleventh parks it),
/// then five it does not need (positions 14-18). The ring (16) still holds
/// position 3, the first change the watch missed; position 2 has left it. The
/// model delivers x/k1 at 6..16; the engine's catch-up starts at position 2 and
/// ends the watch with Gone(4, 5).
/// Accepted by default (`model::Allow::early_gone`).
#[test]
fn known_parked_watch_gone_while_its_changes_are_in_the_ring() {
    let mut ops = vec![
        Op::Relist {
            objects: vec![],
            rv: RvStep::Next(3),
            versions: Versions::Plain,
        },
        apply(0, 0),
        Op::Watch {
            filter: app_a(),
            start: StartSpec::legacy(RvSpec::Unset),
            timeout: None,
        },
        Op::Read {
            watch: 0,
            max: 1,
            how: How::Try,
        },
        apply(1, 1),
    ];
    ops.extend((0..11).map(|_| apply(2, 0)));
    ops.extend((0..5).map(|_| apply(1, 1)));
    run_known(&ops, 1);
}

/// Known disagreement 3, the same without parking: an `app=a` watch from
/// version 3 receives x/k0 at 4 (position 1, replayed from the ring) and
/// stops reading; position 2 (y/k0, not needed) is still to be replayed.
/// Sixteen changes it does not need follow. The watch needs nothing that
/// left the ring (the model: nothing more, then EngineStopped); the engine
/// ends it with Gone(4, 5). Accepted by default (`model::Allow::early_gone`).
#[test]
fn known_replaying_watch_gone_on_a_change_it_does_not_need() {
    let mut ops = vec![
        Op::Relist {
            objects: vec![],
            rv: RvStep::Next(3),
            versions: Versions::Plain,
        },
        apply(0, 0),
        apply(1, 1),
        Op::Watch {
            filter: app_a(),
            start: StartSpec::legacy(RvSpec::Back(2)),
            timeout: None,
        },
        Op::Read {
            watch: 0,
            max: 1,
            how: How::Try,
        },
    ];
    ops.extend((0..16).map(|_| apply(1, 1)));
    run_known(&ops, 1);
}

/// Known disagreement 1 (minimal case found by `engine_matches_model`): a
/// watch begun before the first list waits for version 1; the first list
/// is at 0, a re-list at 1 follows. docs/semantics.md §8: a re-list ends every
/// watcher with Relisted; the engine may let the waiting watch, which saw
/// nothing of the old generation, adopt the new one and serve it whole.
/// Accepted by default (`model::Allow::waiting_survives_relist`).
#[test]
fn known_waiting_watch_survives_relist() {
    let ops = vec![
        Op::Watch {
            filter: FilterSpec {
                scope: 0,
                labels: vec![],
                fields: vec![],
            },
            start: StartSpec::watch_list(RvSpec::Back(2), true, true),
            timeout: None,
        },
        Op::Relist {
            objects: vec![],
            rv: RvStep::Same,
            versions: Versions::Plain,
        },
        Op::Relist {
            objects: vec![],
            rv: RvStep::Next(1),
            versions: Versions::Plain,
        },
        Op::Apply {
            obj: ObjSpec {
                key: 0,
                app: 0,
                tier: 0,
                node: 0,
            },
            kind: KindSpec::Natural,
            rv: RvStep::Next(3),
        },
    ];
    // The engine's outcome depends on a race inside it: try many times.
    run_known(&ops, if cfg!(miri) { 1 } else { 300 });
}

// ---------------------------------------------------------------------------
// The rules of issue 16 (watch options, per-object versions, falling back
// to pending): the model's own tests, then known cases run against the
// engine, each pinning what the watches received.
// ---------------------------------------------------------------------------

/// Events and ends, compactly (`Empty` and `Finished` left out).
fn brief(got: &[Recv]) -> Vec<String> {
    got.iter()
        .filter_map(|r| match r {
            Recv::Event(e) if e.initial_events_end => Some(format!("iee@{}", e.rv)),
            Recv::Event(e) => Some(format!("{:?} {}@{}", e.kind, e.key, e.rv)),
            Recv::End(r) => Some(format!("end {r:?}")),
            Recv::Empty | Recv::Finished => None,
        })
        .collect()
}

fn end(r: EndReason) -> String {
    format!("end {r:?}")
}

fn everything() -> FilterSpec {
    FilterSpec {
        scope: 0,
        labels: vec![],
        fields: vec![],
    }
}

fn watch(start: StartSpec) -> Op {
    Op::Watch {
        filter: everything(),
        start,
        timeout: None,
    }
}

/// A read of the `nth` open watch.
fn read(nth: u8) -> Op {
    Op::Read {
        watch: nth,
        max: 20,
        how: How::Try,
    }
}

fn relist(objects: Vec<ObjSpec>, rv: RvStep, versions: Versions) -> Op {
    Op::Relist {
        objects,
        rv,
        versions,
    }
}

/// (resourceVersion, sendInitialEvents, resourceVersionMatch, bookmarks,
/// what the watch receives, or the rule it breaks).
type OptionsRow = (
    Option<u64>,
    Option<bool>,
    Option<ResourceVersionMatch>,
    bool,
    &'static str,
);

/// The watch table of `tests/watch_list.rs`, on the model: listed at 10
/// (a at 3, b at 7), c at 11; each watch is read once before d comes at 12
/// (a snapshot is taken at the first receive), then to d.
#[test]
fn model_watch_options_table() {
    use ResourceVersionMatch::{Exact, NotOlderThan};
    let o = |name: &str| Object::builder("ns", name).build();
    let nto = Some(NotOlderThan);
    #[rustfmt::skip]
    let rows: Vec<OptionsRow> = vec![
        (None,     None,        None, false, "ns/a@3 ns/b@7 ns/c@11 ns/d@12"),
        (Some(0),  None,        None, false, "ns/a@3 ns/b@7 ns/c@11 ns/d@12"),
        (Some(10), None,        None, false, "ns/c@11 ns/d@12"),
        (None,     None,        None, true,  "ns/a@3 ns/b@7 ns/c@11 ns/d@12"),
        (None,     Some(true),  nto,  true,  "ns/a@3 ns/b@7 ns/c@11 iee@11 ns/d@12"),
        (Some(0),  Some(true),  nto,  true,  "ns/a@3 ns/b@7 ns/c@11 iee@11 ns/d@12"),
        (Some(10), Some(true),  nto,  true,  "ns/a@3 ns/b@7 ns/c@11 iee@11 ns/d@12"),
        (Some(10), Some(true),  nto,  false, "ns/a@3 ns/b@7 ns/c@11 ns/d@12"),
        (None,     Some(false), nto,  true,  "ns/d@12"),
        (Some(0),  Some(false), nto,  true,  "ns/d@12"),
        (Some(10), Some(false), nto,  true,  "ns/c@11 ns/d@12"),
        // Refused, whatever the engine's state.
        (None,     Some(true),  None,        true,  "InitialEventsNeedNotOlderThan"),
        (Some(5),  Some(false), None,        true,  "InitialEventsNeedNotOlderThan"),
        (Some(5),  Some(true),  Some(Exact), true,  "InitialEventsNeedNotOlderThan"),
        (Some(0),  Some(false), Some(Exact), true,  "InitialEventsNeedNotOlderThan"),
        (None,     None,        nto,         true,  "MatchNeedsInitialEvents"),
        (Some(5),  None,        Some(Exact), true,  "MatchNeedsInitialEvents"),
    ];
    for (rv, sie, rvm, bookmarks, want) in rows {
        let mut m = Model::new(16, TOO_LARGE);
        m.replace_items(vec![(o("a"), 3), (o("b"), 7)], 10).unwrap();
        m.apply(ChangeKind::Added, o("c"), 11).unwrap();
        let mut spec = WatchSpec::new(Filter::everything());
        spec.resource_version = rv;
        spec.send_initial_events = sie;
        spec.resource_version_match = rvm;
        spec.allow_bookmarks = bookmarks;
        let id = match m.watch(&spec) {
            Ok(id) => id,
            Err(WatchError::InvalidOptions(rule)) => {
                assert_eq!(format!("{rule:?}"), want, "{spec:?}");
                m.stop_engine();
                assert_eq!(
                    m.watch(&spec),
                    Err(WatchError::InvalidOptions(rule)),
                    "the options are checked first"
                );
                continue;
            }
            Err(e) => panic!("{spec:?}: {e:?}"),
        };
        let mut got = events(&mut m, id);
        m.apply(ChangeKind::Added, o("d"), 12).unwrap();
        got.extend(events(&mut m, id));
        let got: Vec<String> = brief(&got)
            .iter()
            .map(|s| s.trim_start_matches("Added ").to_owned())
            .collect();
        assert_eq!(got.join(" "), want, "{spec:?}");
    }
}

#[test]
fn model_item_versions() {
    let o = |name: &str| Object::builder("ns", name).build();
    let mut m = Model::new(16, TOO_LARGE);
    // The first item above the list, in the list's order; before any
    // lifecycle check.
    let ahead = |m: &mut Model| m.replace_items(vec![(o("b"), 5), (o("a"), 9), (o("c"), 8)], 7);
    let item_ahead = Err(WriteError::ItemAhead {
        key: "ns/a".into(),
        item: 9.into(),
        list: 7.into(),
    });
    assert_eq!(ahead(&mut m), item_ahead);
    assert_eq!((m.lifecycle(), m.generation()), (Lifecycle::Pending, 0));
    m.replace_items(vec![(o("b"), 5), (o("a"), 2), (o("b"), 6)], 7)
        .unwrap();
    let state: Vec<(&str, u64)> = m.state().iter().map(|(k, v)| (k.as_str(), v.1)).collect();
    assert_eq!(state, [("ns/a", 2), ("ns/b", 6)], "the last of a key wins");
    let w = m.watch(&WatchSpec::new(Filter::everything())).unwrap();
    assert_eq!(brief(&events(&mut m, w)), ["Added ns/a@2", "Added ns/b@6"]);
    assert_eq!(ahead(&mut m), item_ahead);
    assert_eq!(
        m.replace_items_after_regression(vec![(o("a"), 7)], 6),
        Err(WriteError::ItemAhead {
            key: "ns/a".into(),
            item: 7.into(),
            list: 6.into(),
        })
    );
    assert_eq!((m.generation(), m.positions()), (1, 1), "nothing changed");
    m.stop_engine();
    assert_eq!(ahead(&mut m), item_ahead, "even once stopped");
    assert_eq!(m.replace_items(vec![], 7), Err(WriteError::Stopped));
}

#[test]
fn model_falls_back_to_pending() {
    let o = |name: &str| Object::builder("ns", name).build();
    let mut m = Model::new(16, TOO_LARGE);
    m.mark_unready().unwrap();
    assert_eq!(
        m.replace_after_regression(vec![], 1),
        Err(WriteError::NotReady),
        "nothing listed to go back from"
    );
    m.replace(vec![o("a")], 10).unwrap();
    let running = m.watch(&WatchSpec::new(Filter::everything())).unwrap();
    let mut future = WatchSpec::new(Filter::everything());
    future.resource_version = Some(12);
    let too_large = m.watch(&future).unwrap();
    m.mark_unready().unwrap();
    assert_eq!(m.lifecycle(), Lifecycle::Pending);
    assert_eq!(
        m.apply(ChangeKind::Added, o("b"), 11),
        Err(WriteError::NotReady)
    );
    assert_eq!(m.progress(11), Err(WriteError::NotReady));
    // Created now: waits for the next list, with no too-large timeout.
    let next = m.watch(&future).unwrap();
    let mut from_now = WatchSpec::new(Filter::everything());
    from_now.send_initial_events = Some(false);
    from_now.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
    let changes = m.watch(&from_now).unwrap();
    assert_eq!(m.watch_state(next).generation, Some(2));
    // The running watch keeps running.
    assert_eq!(brief(&events(&mut m, running)), ["Added ns/a@10"]);
    m.advance(TOO_LARGE);
    // The wait registered before the fall back still times out.
    assert_eq!(
        m.recv(too_large),
        Recv::End(EndReason::TooLargeResourceVersion(
            TooLargeResourceVersion::new(12.into(), 10.into())
        ))
    );
    assert_eq!(m.recv(next), Recv::Empty);
    assert_eq!(
        m.replace(vec![], 9),
        Err(WriteError::OutOfOrder {
            given: 9.into(),
            current: 10.into()
        }),
        "a forward re-list may not go back, ready or not"
    );
    m.replace(vec![o("c")], 12).unwrap();
    assert_eq!((m.lifecycle(), m.generation()), (Lifecycle::Ready, 2));
    assert_eq!(m.recv(running), Recv::End(EndReason::Relisted));
    // Begins on this list: from 12, nothing yet.
    assert_eq!(m.recv(next), Recv::Empty);
    assert_eq!(m.recv(changes), Recv::Empty);
    m.apply(ChangeKind::Added, o("d"), 13).unwrap();
    assert_eq!(brief(&events(&mut m, next)), ["Added ns/d@13"]);
    assert_eq!(brief(&events(&mut m, changes)), ["Added ns/d@13"]);
    m.stop_engine();
    assert_eq!(m.mark_unready(), Err(WriteError::Stopped));
    assert_eq!(m.lifecycle(), Lifecycle::Stopped);
}

/// A watch created while the engine is pending after a list (the writer
/// lost its source) begins on the next list, whatever it asked for: the
/// legacy watch with that list's state (each object at its own version),
/// the watch-list with it and its end bookmark, the changes-only watch
/// from `0` with the changes after it (its "now" is when it begins). The
/// watch that was running keeps running, receives nothing new (the writer
/// is refused) and ends with Relisted on the list.
#[test]
fn known_watch_created_while_pending_begins_on_the_next_list() {
    let ops = vec![
        relist(vec![obj(0, 0)], RvStep::Next(3), Versions::Plain),
        apply(1, 0),
        watch(StartSpec::legacy(RvSpec::Unset)),
        read(0),
        Op::Unready,
        watch(StartSpec::legacy(RvSpec::Unset)),
        watch(StartSpec::watch_list(RvSpec::Zero, false, false)),
        watch(StartSpec::watch_list(RvSpec::Unset, true, true)),
        apply(2, 0),
        read(1),
        read(0),
        relist(vec![obj(0, 1), obj(3, 0)], RvStep::Next(2), Versions::Items),
        read(1),
        read(2),
        read(3),
        apply(4, 0),
        read(0),
        // w0 has finished: the second open watch is w2.
        read(1),
    ];
    for run in 0..20 {
        let r = run_recorded(&ops).unwrap_or_else(|e| panic!("run {run}: {e}\n{}", show(&ops)));
        // The list, a change, mark_unready, the refused change.
        assert_eq!(r.writes[3], Err(WriteError::NotReady));
        let stopped = end(EndReason::EngineStopped);
        assert_eq!(
            brief(&r.got[0]),
            ["Added x/k0@3", "Added y/k0@4", &end(EndReason::Relisted)]
        );
        assert_eq!(
            brief(&r.got[1]),
            ["Added x/k0@6", "Added y/k1@5", "Added x/k2@7", &stopped]
        );
        assert_eq!(brief(&r.got[2]), ["Added x/k2@7", &stopped]);
        assert_eq!(
            brief(&r.got[3]),
            [
                "Added x/k0@6",
                "Added y/k1@5",
                "iee@6",
                "Added x/k2@7",
                &stopped
            ]
        );
    }
}

/// A list with an object above its version is refused whole
/// (`ItemAhead`, naming the first such object), forward or after a
/// regression, and even by a stopped engine: nothing changes, the running
/// watch is not ended and sees the next change.
#[test]
fn known_item_ahead_relist_changes_nothing() {
    let ops = vec![
        relist(vec![obj(0, 0)], RvStep::Next(3), Versions::Plain),
        watch(StartSpec::legacy(RvSpec::Unset)),
        read(0),
        // y/k0 at 5, x/k1 at 6 (above the list at 5), y/k1 at 3.
        relist(
            vec![obj(1, 0), obj(2, 0), obj(3, 0)],
            RvStep::Next(2),
            Versions::Ahead(1),
        ),
        apply(1, 0),
        read(0),
        Op::Regress {
            objects: vec![obj(1, 0)],
            rv: RvStep::Back(1),
            versions: Versions::Ahead(0),
        },
        Op::StopEngine,
        relist(vec![obj(0, 0)], RvStep::Next(1), Versions::Ahead(0)),
    ];
    let r = run_recorded(&ops).unwrap_or_else(|e| panic!("{e}\n{}", show(&ops)));
    let ahead = |key: &str, item: u64, list: u64| {
        Err(WriteError::ItemAhead {
            key: key.into(),
            item: item.into(),
            list: list.into(),
        })
    };
    assert_eq!(r.writes[1], ahead("x/k1", 6, 5));
    assert_eq!(r.writes[2], Ok(()), "y/k0 at 4: the version did not move");
    assert_eq!(r.writes[3], ahead("y/k0", 4, 3));
    assert_eq!(r.writes[4], ahead("x/k0", 6, 5));
    assert_eq!(
        brief(&r.got[0]),
        [
            "Added x/k0@3",
            "Added y/k0@4",
            &end(EndReason::EngineStopped)
        ]
    );
}

/// `send_initial_events=false` from `0` (or unset) on a ready engine: the
/// changes after the version at the watch's creation, not at its first
/// receive (a change made in between is delivered), and no state; the
/// legacy watch from `0` gets the state at its first receive instead.
#[test]
fn known_changes_only_from_zero_sees_only_later_changes() {
    let ops = vec![
        relist(vec![obj(0, 0), obj(1, 0)], RvStep::Next(3), Versions::Items),
        watch(StartSpec::watch_list(RvSpec::Zero, false, true)),
        apply(2, 0),
        read(0),
        watch(StartSpec::watch_list(RvSpec::Unset, false, false)),
        watch(StartSpec::legacy(RvSpec::Zero)),
        apply(0, 1),
        read(0),
        read(1),
        read(2),
    ];
    let r = run_recorded(&ops).unwrap_or_else(|e| panic!("{e}\n{}", show(&ops)));
    let stopped = end(EndReason::EngineStopped);
    assert_eq!(
        brief(&r.got[0]),
        ["Added x/k1@4", "Modified x/k0@5", &stopped]
    );
    assert_eq!(brief(&r.got[1]), ["Modified x/k0@5", &stopped]);
    // The snapshot at its first receive, each object at its own version
    // (y/k0 was listed at 3 - 1).
    assert_eq!(
        brief(&r.got[2]),
        ["Added x/k0@5", "Added x/k1@4", "Added y/k0@2", &stopped]
    );
}

/// A wait for a version registered while ready still times out while the
/// engine is pending after a list; one registered while pending waits for
/// the list without a too-large timeout, and its clock counts from its
/// creation, so it times out as soon as the list comes if the list is
/// still short of its version.
#[test]
fn known_too_large_waits_while_pending_after_a_list() {
    let ops = vec![
        relist(vec![], RvStep::Next(3), Versions::Plain),
        watch(StartSpec::legacy(RvSpec::Future(2))),
        Op::Unready,
        Op::Clock(3000),
        watch(StartSpec::legacy(RvSpec::Future(1))),
        watch(StartSpec::watch_list(RvSpec::Future(2), true, false)),
        Op::Clock(3000),
        read(0),
        read(0),
        read(1),
        relist(vec![obj(0, 0)], RvStep::Next(1), Versions::Plain),
        read(0),
        read(1),
    ];
    let r = run_recorded(&ops).unwrap_or_else(|e| panic!("{e}\n{}", show(&ops)));
    let too_large = |need: u64, at: u64| {
        end(EndReason::TooLargeResourceVersion(
            TooLargeResourceVersion::new(need.into(), at.into()),
        ))
    };
    assert_eq!(brief(&r.got[0]), [too_large(5, 3)]);
    assert_eq!(brief(&r.got[1]), [end(EndReason::EngineStopped)]);
    assert_eq!(brief(&r.got[2]), [too_large(5, 4)]);
}
