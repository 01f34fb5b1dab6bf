//! The scenarios: what is run, on which systems, at which sizes.
//!
//! Every scenario builds one workload and hands the same workload, the
//! same watcher filters and the same consumer arrangement to each system
//! that can serve it (a system that cannot, e.g. disruptor with a
//! selective filter, is skipped and the table says so). Sizes come from a
//! [`Profile`]: `smoke` checks the harness in seconds, `default` is the
//! README's two-minute suite, `full` adds the large sizes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::alloc::Counting;
use crate::consume::{self, Pace, RunOpts, RunResult, Stall};
use crate::etcd::{EtcdWatchers, HeraldOnEtcd};
use crate::machine::CpuUse;
use crate::peers::crossbeam_cacher::CrossbeamCacher;
use crate::peers::disruptor::DisruptorRing;
use crate::peers::herald::Herald;
use crate::peers::reference::ReferencePort;
use crate::peers::tokio_broadcast::TokioBroadcast;
use crate::system::{PeerUse, Spec, System};
use crate::workload::{Filter, Shape, Workload};

/// A system under test, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemKind {
    /// Herald (this project).
    Herald,
    /// The Rust port of the reference's dispatch (one lock, per-watcher
    /// bounded channels, time budget, terminate).
    Reference,
    /// `tokio::sync::broadcast`, filters applied by the receiver.
    TokioBroadcast,
    /// Per-watcher `crossbeam-channel` queues of `Arc`s, routed by a
    /// hash-map index.
    Crossbeam,
    /// The `disruptor` crate: one shared ring, a cursor per watcher
    /// (all-match only).
    Disruptor,
    /// Herald in front of a real etcd (etcd-fanout): an etcd source and a
    /// reflector feeding the engine.
    #[serde(rename = "herald+etcd")]
    HeraldEtcd,
    /// etcd's own watch fan-out (etcd-fanout): one etcd watch per watcher,
    /// on `--etcd-connections` connections.
    Etcd,
    /// The same on one connection.
    EtcdOneConnection,
    /// Herald's Kubernetes API front (http-fanout): one HTTP watch
    /// connection per watcher on loopback.
    HeraldHttp,
    /// Herald through the in-memory source and a reflector, watched
    /// in-process (http-fanout's baseline).
    #[serde(rename = "herald+source")]
    HeraldSource,
    /// The kubelet's object manager on Herald (the kubelet scenario).
    KubeletManager,
    /// A Rust port of the reference's object cache (seeds/002): a
    /// reflector and a store per object (the kubelet scenario).
    KubeletReference,
}

impl SystemKind {
    /// Every system, Herald first.
    pub const ALL: [SystemKind; 5] = [
        SystemKind::Herald,
        SystemKind::Reference,
        SystemKind::TokioBroadcast,
        SystemKind::Crossbeam,
        SystemKind::Disruptor,
    ];

    /// The etcd-fanout scenario's systems (a real etcd behind both): not
    /// among [`SystemKind::ALL`], which the in-memory scenarios run.
    pub const ETCD: [SystemKind; 3] = [
        SystemKind::HeraldEtcd,
        SystemKind::Etcd,
        SystemKind::EtcdOneConnection,
    ];

    /// The http-fanout scenario's systems (with [`SystemKind::Etcd`] where
    /// an etcd is found).
    pub const HTTP: [SystemKind; 2] = [SystemKind::HeraldHttp, SystemKind::HeraldSource];

    /// The kubelet scenario's systems.
    pub const KUBELET: [SystemKind; 2] = crate::kubelet::SYSTEMS;

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Herald => "herald",
            SystemKind::HeraldHttp => "herald-http",
            SystemKind::HeraldSource => "herald+source",
            SystemKind::Reference => "reference-port",
            SystemKind::TokioBroadcast => "tokio-broadcast",
            SystemKind::Crossbeam => "crossbeam-cacher",
            SystemKind::Disruptor => "disruptor",
            SystemKind::HeraldEtcd => "herald+etcd",
            SystemKind::Etcd => "etcd",
            SystemKind::EtcdOneConnection => "etcd-one-connection",
            SystemKind::KubeletManager => "herald-kubelet",
            SystemKind::KubeletReference => "kubelet-reference",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<SystemKind> {
        SystemKind::ALL
            .into_iter()
            .chain(SystemKind::ETCD)
            .chain(SystemKind::HTTP)
            .chain(SystemKind::KUBELET)
            .find(|s| s.name() == name)
    }

    /// Whether this is Herald (the side ratios are taken for).
    pub fn is_herald(self) -> bool {
        matches!(
            self,
            SystemKind::Herald
                | SystemKind::HeraldEtcd
                | SystemKind::HeraldHttp
                | SystemKind::KubeletManager
        )
    }
}

/// A scenario, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioKind {
    /// N watchers that admit every change.
    FanoutAll,
    /// One watcher per node, indexed by `spec.nodeName`, plus 10
    /// all-watchers (the kubelet shape); and the same unindexed.
    FanoutIndexed,
    /// Healthy watchers' latency with and without a stalled companion.
    SlowWatcherTax,
    /// 10,000 watchers starting together from 1,000 changes back.
    CatchUp,
    /// Publish-to-receive latency at a paced rate.
    Latency,
    /// Bytes per idle watcher.
    Memory,
    /// Herald in front of a real etcd against etcd's own watch fan-out.
    EtcdFanout,
    /// Herald's HTTP front to N watch connections, against the same
    /// watchers in-process and etcd's own fan-out.
    HttpFanout,
    /// The kubelet's object manager on Herald against a port of the
    /// reference's (seeds/002), under kubelet-shaped churn.
    Kubelet,
}

impl ScenarioKind {
    /// Every scenario, in suite order.
    pub const ALL: [ScenarioKind; 9] = [
        ScenarioKind::FanoutAll,
        ScenarioKind::FanoutIndexed,
        ScenarioKind::SlowWatcherTax,
        ScenarioKind::CatchUp,
        ScenarioKind::Latency,
        ScenarioKind::Memory,
        ScenarioKind::EtcdFanout,
        ScenarioKind::HttpFanout,
        ScenarioKind::Kubelet,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            ScenarioKind::FanoutAll => "fanout-all",
            ScenarioKind::FanoutIndexed => "fanout-indexed",
            ScenarioKind::SlowWatcherTax => "slow-watcher-tax",
            ScenarioKind::CatchUp => "catch-up",
            ScenarioKind::Latency => "latency",
            ScenarioKind::Memory => "memory",
            ScenarioKind::EtcdFanout => "etcd-fanout",
            ScenarioKind::HttpFanout => "http-fanout",
            ScenarioKind::Kubelet => "kubelet",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<ScenarioKind> {
        ScenarioKind::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Sizes.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The profile's name.
    pub name: &'static str,
    /// fanout-all: watcher counts.
    pub fanout_watchers: Vec<usize>,
    /// fanout-all: deliveries per run before sizing (changes = this /
    /// watchers).
    pub fanout_deliveries: usize,
    /// fanout-all: the most changes a sized run may take (each system
    /// keeps every change of a run in its history).
    pub fanout_cap: usize,
    /// fanout-all: the paced check (watchers, changes/s, seconds).
    pub fanout_paced: (usize, f64, f64),
    /// fanout-indexed: node counts (one watcher each).
    pub indexed_nodes: Vec<usize>,
    /// fanout-indexed: changes per run before sizing.
    pub indexed_changes: usize,
    /// fanout-indexed: the most changes a sized run may take.
    pub indexed_cap: usize,
    /// fanout-indexed: watchers in the unindexed field-selector case.
    pub unindexed_watchers: usize,
    /// fanout-indexed: changes in the unindexed case.
    pub unindexed_changes: usize,
    /// slow-watcher-tax: rates (changes/s).
    pub tax_rates: Vec<f64>,
    /// slow-watcher-tax: seconds per run.
    pub tax_seconds: f64,
    /// slow-watcher-tax: healthy watchers in the small and large cases.
    pub tax_watchers: (usize, usize),
    /// catch-up: (watchers, changes back).
    pub catch_up: (usize, usize),
    /// latency: (watchers, changes/s, seconds).
    pub latency: (usize, f64, f64),
    /// memory: idle watchers.
    pub memory_watchers: usize,
    /// Consumer threads.
    pub threads: usize,
    /// Check every delivery against its filter.
    pub check_filters: bool,
    /// Consumers use a system's readiness list when it has one.
    pub readiness: bool,
    /// Interleaved rounds per case (each round runs every system once);
    /// rows report the median round and the range.
    pub repeat: usize,
    /// A flat-out case's workload grows (doubling, up to its cap) until a
    /// system's run lasts at least this long (0: no sizing round).
    pub min_seconds: f64,
    /// Feed Herald from its in-memory source in every scenario.
    pub herald_source: bool,
    /// etcd-fanout: watcher counts.
    pub etcd_watchers: Vec<usize>,
    /// etcd-fanout flat out: deliveries in the sizing run (writes = this /
    /// watchers, at least 64), grown to `min_seconds` per system.
    pub etcd_deliveries: usize,
    /// etcd-fanout flat out: the most writes a sized run may take.
    pub etcd_cap: usize,
    /// etcd-fanout paced: (deliveries per second in total, seconds); the
    /// writer puts deliveries / watchers per second.
    pub etcd_paced: (f64, f64),
    /// etcd-fanout: connections the etcd side spreads its watches over
    /// (one gRPC stream per watch).
    pub etcd_connections: usize,
    /// etcd-fanout flat out: puts the writer keeps in flight.
    pub etcd_in_flight: usize,
    /// http-fanout: connection counts (watchers of everything).
    pub http_watchers: Vec<usize>,
    /// http-fanout: connections in the selector-mix case (one in four
    /// watches everything, the rest one node each).
    pub http_mixed: usize,
    /// http-fanout flat out: deliveries in the sizing run (changes = this
    /// / watchers), grown to `min_seconds` per system.
    pub http_deliveries: usize,
    /// http-fanout flat out: the most changes a sized run may take.
    pub http_cap: usize,
    /// http-fanout paced: (connections, deliveries per second in total,
    /// seconds).
    pub http_paced: (usize, f64, f64),
    /// kubelet: pods, Secrets, namespaces, references per pod, seconds
    /// of churn.
    pub kubelet: crate::kubelet::Sizes,
}

impl Profile {
    /// Tiny sizes: the harness's own correctness, in seconds.
    pub fn smoke() -> Profile {
        Profile {
            name: "smoke",
            fanout_watchers: vec![10, 100],
            fanout_deliveries: 50_000,
            fanout_cap: 1_000_000,
            fanout_paced: (100, 2_000.0, 0.2),
            indexed_nodes: vec![100, 1_000],
            indexed_changes: 5_000,
            indexed_cap: 100_000,
            unindexed_watchers: 100,
            unindexed_changes: 2_000,
            tax_rates: vec![1_000.0],
            tax_seconds: 0.3,
            tax_watchers: (5, 50),
            catch_up: (100, 100),
            latency: (50, 2_000.0, 0.2),
            memory_watchers: 200,
            threads: 2,
            check_filters: true,
            readiness: true,
            repeat: 2,
            min_seconds: 0.0,
            herald_source: false,
            etcd_watchers: vec![20],
            etcd_deliveries: 20_000,
            etcd_cap: 4_096,
            etcd_paced: (5_000.0, 0.3),
            etcd_connections: 2,
            etcd_in_flight: 16,
            http_watchers: vec![20],
            http_mixed: 20,
            http_deliveries: 20_000,
            http_cap: 4_096,
            http_paced: (20, 5_000.0, 0.3),
            kubelet: crate::kubelet::Sizes {
                pods: 200,
                secrets: 100,
                namespaces: 4,
                refs: 5,
                seconds: 0.2,
                pods_per_s: 500.0,
            },
        }
    }

    /// The README's suite: about two minutes on 2 cores.
    pub fn default_suite() -> Profile {
        Profile {
            name: "default",
            fanout_watchers: vec![10, 100, 1_000, 10_000],
            fanout_deliveries: 10_000_000,
            fanout_cap: 4_000_000,
            fanout_paced: (1_000, 66_000.0, 1.0),
            indexed_nodes: vec![1_000, 10_000, 100_000],
            indexed_changes: 50_000,
            indexed_cap: 3_200_000,
            unindexed_watchers: 1_000,
            unindexed_changes: 20_000,
            tax_rates: vec![100.0, 1_000.0],
            tax_seconds: 2.0,
            tax_watchers: (10, 1_000),
            catch_up: (10_000, 1_000),
            latency: (1_000, 10_000.0, 2.0),
            memory_watchers: 10_000,
            threads: 2,
            check_filters: false,
            readiness: true,
            repeat: 5,
            min_seconds: 1.0,
            herald_source: false,
            etcd_watchers: vec![100, 1_000],
            etcd_deliveries: 200_000,
            etcd_cap: 65_536,
            etcd_paced: (50_000.0, 2.0),
            etcd_connections: 10,
            etcd_in_flight: 16,
            http_watchers: vec![100, 1_000, 5_000, 10_000],
            http_mixed: 1_000,
            http_deliveries: 2_000_000,
            http_cap: 65_536,
            http_paced: (1_000, 50_000.0, 2.0),
            kubelet: crate::kubelet::Sizes {
                pods: 10_000,
                secrets: 2_000,
                namespaces: 10,
                refs: 5,
                seconds: 2.0,
                pods_per_s: 500.0,
            },
        }
    }

    /// Larger runs (minutes).
    pub fn full() -> Profile {
        Profile {
            name: "full",
            fanout_deliveries: 50_000_000,
            indexed_changes: 200_000,
            unindexed_changes: 50_000,
            tax_seconds: 5.0,
            latency: (1_000, 10_000.0, 5.0),
            memory_watchers: 100_000,
            ..Profile::default_suite()
        }
    }
}

/// One measured (or skipped) run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// The case within the scenario (e.g. "1000 watchers").
    pub case: String,
    /// System name.
    pub system: String,
    /// Watchers registered.
    pub watchers: usize,
    /// Changes in the timed run.
    pub changes: usize,
    /// Deliveries received.
    pub delivered: u64,
    /// Deliveries owed.
    pub owed: u64,
    /// Deliveries per second (first publish to last delivery).
    pub deliveries_per_s: Option<f64>,
    /// Changes per second through the system (owed changes / elapsed).
    pub changes_per_s: Option<f64>,
    /// Publish-to-receive latency percentiles (µs).
    pub p50_us: Option<f64>,
    /// 99th percentile (µs).
    pub p99_us: Option<f64>,
    /// 99.9th percentile (µs).
    pub p999_us: Option<f64>,
    /// Latency from the system's acknowledgement of a change (etcd: the
    /// put's return) to receive, median (µs), when the publisher stamps
    /// changes itself; a delivery before the acknowledgement counts as 0.
    pub acked_p50_us: Option<f64>,
    /// 99th percentile of that (µs).
    pub acked_p99_us: Option<f64>,
    /// Watchers that ended before receiving all they were owed (companions
    /// excluded).
    pub ended: usize,
    /// Stalled companions that ended.
    pub companions_ended: usize,
    /// Order or filter violations (must be 0).
    pub violations: u64,
    /// Latency curve: (nines, µs), nines = -log10(1 - quantile).
    pub latency_curve: Vec<(f64, f64)>,
    /// Bytes per idle watcher (memory scenario).
    pub bytes_per_watcher: Option<f64>,
    /// Seconds from first publish to last delivery.
    pub seconds: f64,
    /// Seconds to build the system and register the watchers.
    pub setup_seconds: f64,
    /// Why the run was skipped, or what to know about it.
    pub note: String,
    /// The figure the rounds are ranked by (the row's scalar figures are
    /// those of the median round by it).
    pub metric: Option<Metric>,
    /// Each figure's min, median and max over the rounds, by
    /// [`Metric::key`].
    pub spread: std::collections::BTreeMap<&'static str, Spread>,
    /// Herald's advantage over this system, taken per round (Herald's
    /// round k against this system's round k, see [`Metric::advantage`]),
    /// as min, median and max; the rounds' values in `ratio_rounds`.
    pub ratio: Option<Spread>,
    /// Herald's advantage in each round.
    pub ratio_rounds: Vec<f64>,
    /// Rounds in which other processes took more than
    /// [`crate::machine::NOISY_CORES`] on average.
    pub noisy_rounds: usize,
    /// Rounds shorter than the profile's `min_seconds` (the sizing round
    /// ran slower than they did, or the workload reached its cap; a short
    /// round doubles the system's next rounds, up to the cap).
    pub short_rounds: usize,
    /// The threads busy in the median round (see [`CpuUse::busy`]).
    pub busy: Vec<String>,
    /// How many threads that is.
    pub busy_threads: usize,
    /// Every round, in order.
    pub rounds: Vec<Round>,
    /// What the server process behind the system (etcd, or herald-http's
    /// child server) cost in the median round, when there is one; the
    /// spreads of its figures are in `spread` (keys `server_cores`,
    /// `server_us_per_delivery`, `server_us_per_write`, `server_rss_bytes`,
    /// `heap_peak_bytes`, `bytes_per_connection`,
    /// `server_bytes_per_connection`, `harness_cores`).
    pub peer: Option<PeerUse>,
}

impl Row {
    fn from_run(
        scenario: ScenarioKind,
        case: &str,
        system: SystemKind,
        r: &RunResult,
        watchers: usize,
        changes: usize,
    ) -> Row {
        let us =
            |q: f64| (!r.latency.is_empty()).then(|| r.latency.value_at_quantile(q) as f64 / 1e3);
        let secs = r.elapsed.as_secs_f64();
        let mut note = String::new();
        if r.timed_out {
            note = "timed out".into();
        }
        Row {
            scenario: scenario.name().into(),
            case: case.into(),
            system: system.name().into(),
            watchers,
            changes,
            delivered: r.delivered,
            owed: r.owed,
            deliveries_per_s: Some(r.delivered as f64 / secs),
            changes_per_s: Some(changes as f64 / secs),
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            acked_p50_us: acked_us(r, 0.5),
            acked_p99_us: acked_us(r, 0.99),
            ended: r.ended,
            companions_ended: r.companions_ended,
            violations: r.violations,
            latency_curve: if !r.latency.is_empty() {
                [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999]
                    .iter()
                    .map(|&q| {
                        (
                            -(1.0f64 - q).log10(),
                            r.latency.value_at_quantile(q) as f64 / 1e3,
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            },
            bytes_per_watcher: None,
            seconds: secs,
            setup_seconds: r.setup.as_secs_f64(),
            note,
            ..Row::default()
        }
    }

    /// The row of one system's rounds: the median round (by `metric`) as
    /// its scalar figures, every figure's spread, the rounds themselves.
    fn from_rounds(
        scenario: ScenarioKind,
        case: &str,
        system: SystemKind,
        metric: Metric,
        watchers: usize,
        runs: &[(Round, RunResult)],
    ) -> Row {
        let mut by: Vec<&(Round, RunResult)> = runs.iter().collect();
        by.sort_by(|a, b| {
            let (x, y) = (a.0.get(metric), b.0.get(metric));
            x.unwrap_or(f64::MAX).total_cmp(&y.unwrap_or(f64::MAX))
        });
        let Some((median, run)) = by.get(by.len() / 2) else {
            return Row::skipped(scenario, case, system, "skipped: no round ran".into());
        };
        let mut row = Row::from_run(scenario, case, system, run, watchers, median.changes);
        // Any round's violation, timeout or early end is the row's.
        row.violations = runs.iter().map(|(_, r)| r.violations).sum();
        row.ended = runs.iter().map(|(_, r)| r.ended).max().unwrap_or(0);
        row.companions_ended = runs
            .iter()
            .map(|(_, r)| r.companions_ended)
            .max()
            .unwrap_or(0);
        if runs.iter().any(|(_, r)| r.timed_out) {
            row.note = "timed out".into();
        }
        row.metric = Some(metric);
        for m in Metric::ALL {
            let values: Vec<f64> = runs.iter().filter_map(|(r, _)| r.get(m)).collect();
            if let Some(s) = Spread::of(&values) {
                row.spread.insert(m.key(), s);
            }
        }
        type Figure = (&'static str, fn(&Round) -> Option<f64>);
        let peer_figures: [Figure; 10] = [
            ("acked_p50_us", |r| r.acked_p50_us),
            ("acked_p99_us", |r| r.acked_p99_us),
            ("server_cores", |r| r.peer.as_ref().map(|p| p.cores)),
            ("server_us_per_delivery", |r| {
                r.peer.as_ref().map(|p| p.us_per_delivery)
            }),
            ("server_us_per_write", |r| {
                r.peer.as_ref().map(|p| p.us_per_write)
            }),
            ("server_rss_bytes", |r| {
                r.peer.as_ref().map(|p| p.rss_peak_bytes as f64)
            }),
            ("heap_peak_bytes", |r| {
                r.peer.as_ref().map(|p| p.heap_peak_bytes as f64)
            }),
            ("bytes_per_connection", |r| {
                r.peer.as_ref().and_then(|p| p.bytes_per_connection)
            }),
            ("server_bytes_per_connection", |r| {
                r.peer.as_ref().and_then(|p| p.server_bytes_per_connection)
            }),
            ("harness_cores", |r| {
                r.peer.as_ref().and(r.cpu.process_cores)
            }),
        ];
        for (key, get) in peer_figures {
            let values: Vec<f64> = runs.iter().filter_map(|(r, _)| get(r)).collect();
            if let Some(s) = Spread::of(&values) {
                row.spread.insert(key, s);
            }
        }
        row.peer = median.peer.clone();
        row.noisy_rounds = runs.iter().filter(|(r, _)| r.cpu.noisy()).count();
        row.busy = median.cpu.busy.clone();
        row.busy_threads = median.cpu.busy_threads;
        row.rounds = runs.iter().map(|(r, _)| r.clone()).collect();
        row
    }

    pub(crate) fn skipped(
        scenario: ScenarioKind,
        case: &str,
        system: SystemKind,
        why: String,
    ) -> Row {
        Row {
            scenario: scenario.name().into(),
            case: case.into(),
            system: system.name().into(),
            note: why,
            ..Row::default()
        }
    }
}

/// Quantile `q` of a run's latency from the acknowledgement (µs), if it
/// has one.
fn acked_us(r: &RunResult, q: f64) -> Option<f64> {
    (!r.latency_acked.is_empty()).then(|| r.latency_acked.value_at_quantile(q) as f64 / 1e3)
}

/// A workload of `changes` to 1,000 pods on one node, never moving: the
/// all-match scenarios' stream.
pub(crate) fn all_match(changes: usize) -> Arc<Workload> {
    Workload::build(Shape {
        pods: 1_000,
        nodes: 1,
        changes,
        move_every: 0,
        payload: 64,
    })
}

/// A spec whose watchers start from the list and are owed every change.
pub(crate) fn spec(filters: Vec<Filter>, indexed: bool, queue: usize, ring: usize) -> Spec {
    Spec {
        filters,
        indexed,
        queue,
        ring,
        start: 0,
        preloaded: 0,
    }
}

/// Runs one system by kind (the systems are distinct types: this is the one
/// place that names them all).
pub fn run_system(
    kind: SystemKind,
    spec: &Spec,
    workload: &Arc<Workload>,
    opts: &RunOpts,
) -> anyhow::Result<RunResult> {
    match kind {
        SystemKind::Herald => {
            let herald = Herald {
                source: opts.herald_source,
                ..Herald::default()
            };
            consume::run(&herald, spec, workload, opts)
        }
        SystemKind::Reference => consume::run(&ReferencePort::default(), spec, workload, opts),
        SystemKind::TokioBroadcast => {
            consume::run(&TokioBroadcast::default(), spec, workload, opts)
        }
        SystemKind::Crossbeam => consume::run(&CrossbeamCacher::default(), spec, workload, opts),
        SystemKind::Disruptor => consume::run(&DisruptorRing::default(), spec, workload, opts),
        SystemKind::HeraldHttp => consume::run(&crate::http::HeraldHttp, spec, workload, opts),
        SystemKind::HeraldSource => {
            let herald = Herald {
                source: true,
                ..Herald::default()
            };
            consume::run(&herald, spec, workload, opts)
        }
        SystemKind::KubeletManager | SystemKind::KubeletReference => {
            anyhow::bail!("{} runs in the kubelet scenario only", kind.name())
        }
        SystemKind::HeraldEtcd | SystemKind::Etcd | SystemKind::EtcdOneConnection => {
            let env = opts
                .etcd
                .clone()
                .ok_or_else(|| anyhow::anyhow!("{} needs an etcd (etcd-fanout)", kind.name()))?;
            match kind {
                SystemKind::HeraldEtcd => consume::run(&HeraldOnEtcd { env }, spec, workload, opts),
                SystemKind::Etcd => {
                    let connections = env.connections();
                    consume::run(&EtcdWatchers { env, connections }, spec, workload, opts)
                }
                _ => {
                    let watchers = EtcdWatchers {
                        env,
                        connections: 1,
                    };
                    consume::run(&watchers, spec, workload, opts)
                }
            }
        }
    }
}

/// A figure over a case's rounds: its minimum, median and maximum.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Spread {
    /// The smallest round's value.
    pub min: f64,
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The largest round's value.
    pub max: f64,
    /// Rounds it was taken over.
    pub rounds: usize,
}

impl Spread {
    /// The spread of `values` (None when empty).
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
            rounds: n,
        })
    }
}

/// One round of one system in one case.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Round {
    /// The round's index (0-based).
    pub round: usize,
    /// The system's place in the round's order (the order rotates each
    /// round, so no system always runs first or last).
    pub order: usize,
    /// Changes in the timed run.
    pub changes: usize,
    /// Seconds from first publish to last delivery.
    pub seconds: f64,
    /// Deliveries per second.
    pub deliveries_per_s: f64,
    /// Changes per second.
    pub changes_per_s: f64,
    /// Publish-to-receive latency percentiles (µs).
    pub p50_us: Option<f64>,
    /// 99th percentile (µs).
    pub p99_us: Option<f64>,
    /// 99.9th percentile (µs).
    pub p999_us: Option<f64>,
    /// From the acknowledgement (see [`Row::acked_p50_us`]), median (µs).
    pub acked_p50_us: Option<f64>,
    /// 99th percentile of that (µs).
    pub acked_p99_us: Option<f64>,
    /// Watchers that ended early.
    pub ended: usize,
    /// What the machine did meanwhile.
    pub cpu: CpuUse,
    /// What the server behind the system (etcd) cost, when there is one.
    pub peer: Option<PeerUse>,
}

impl Round {
    fn from_run(round: usize, order: usize, changes: usize, r: &RunResult) -> Round {
        let us =
            |q: f64| (!r.latency.is_empty()).then(|| r.latency.value_at_quantile(q) as f64 / 1e3);
        let secs = r.elapsed.as_secs_f64();
        Round {
            round,
            order,
            changes,
            seconds: secs,
            deliveries_per_s: r.delivered as f64 / secs,
            changes_per_s: changes as f64 / secs,
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            acked_p50_us: acked_us(r, 0.5),
            acked_p99_us: acked_us(r, 0.99),
            ended: r.ended,
            cpu: r.cpu.clone(),
            peer: r.peer.clone(),
        }
    }

    /// The value of figure `metric` in this round.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::DeliveriesPerS => Some(self.deliveries_per_s),
            Metric::ChangesPerS => Some(self.changes_per_s),
            Metric::P50 => self.p50_us,
            Metric::P99 => self.p99_us,
            Metric::P999 => self.p999_us,
        }
    }
}

/// A figure a round reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Deliveries per second (higher is better).
    DeliveriesPerS,
    /// Changes per second (higher is better).
    ChangesPerS,
    /// p50 latency, µs (lower is better).
    #[serde(rename = "p50_us")]
    P50,
    /// p99 latency, µs (lower is better).
    #[serde(rename = "p99_us")]
    P99,
    /// p99.9 latency, µs (lower is better).
    #[serde(rename = "p999_us")]
    P999,
}

impl Metric {
    /// Every figure a row carries a spread of.
    pub const ALL: [Metric; 5] = [
        Metric::DeliveriesPerS,
        Metric::ChangesPerS,
        Metric::P50,
        Metric::P99,
        Metric::P999,
    ];

    /// Its key in the JSON's `spread` maps.
    pub fn key(self) -> &'static str {
        match self {
            Metric::DeliveriesPerS => "deliveries_per_s",
            Metric::ChangesPerS => "changes_per_s",
            Metric::P50 => "p50_us",
            Metric::P99 => "p99_us",
            Metric::P999 => "p999_us",
        }
    }

    /// Whether a higher value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::DeliveriesPerS | Metric::ChangesPerS)
    }

    /// Herald's advantage over `other` in one round: Herald ÷ other for a
    /// rate, other ÷ Herald for a latency (above 1: Herald is better).
    pub fn advantage(self, herald: f64, other: f64) -> Option<f64> {
        let (a, b) = if self.higher_is_better() {
            (herald, other)
        } else {
            (other, herald)
        };
        (a > 0.0 && b > 0.0).then(|| a / b)
    }
}

/// Builds a system and returns the live bytes its watchers hold (total
/// with `spec`, and with no watchers).
fn measure_memory(kind: SystemKind, spec: &Spec, workload: &Arc<Workload>) -> anyhow::Result<f64> {
    fn live<S: System>(system: &S, spec: &Spec, workload: &Arc<Workload>) -> anyhow::Result<i64> {
        Counting::enable();
        let built = system.build(spec, workload)?;
        // Let background threads (a dispatcher registering watchers) settle.
        std::thread::sleep(Duration::from_millis(50));
        let live = Counting::live();
        Counting::disable();
        drop(built);
        Ok(live)
    }
    fn per_watcher<S: System>(
        system: &S,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<f64> {
        let n = spec.filters.len();
        let empty = Spec {
            filters: Vec::new(),
            ..spec.clone()
        };
        let base = live(system, &empty, workload)?;
        let full = live(system, spec, workload)?;
        Ok((full - base) as f64 / n as f64)
    }
    match kind {
        SystemKind::Herald => per_watcher(&Herald::default(), spec, workload),
        SystemKind::Reference => per_watcher(&ReferencePort::default(), spec, workload),
        SystemKind::TokioBroadcast => per_watcher(&TokioBroadcast::default(), spec, workload),
        SystemKind::Crossbeam => per_watcher(&CrossbeamCacher::default(), spec, workload),
        SystemKind::Disruptor => per_watcher(&DisruptorRing::default(), spec, workload),
        SystemKind::HeraldEtcd
        | SystemKind::Etcd
        | SystemKind::EtcdOneConnection
        | SystemKind::HeraldHttp
        | SystemKind::HeraldSource
        | SystemKind::KubeletManager
        | SystemKind::KubeletReference => {
            anyhow::bail!("the memory scenario runs the in-memory systems")
        }
    }
}

/// The fanout-all case in which Herald is fed through its in-memory source
/// and a reflector.
pub const SOURCE_CASE: &str = "in-memory source + reflector";

/// The memory scenario's case of watchers of everything (the target's
/// case) starts with this.
pub const MEMORY_ALL: &str = "all, ";

/// The memory scenario's case of kubelet-shaped watchers (one per node, on
/// an index) starts with this.
pub const MEMORY_BY_NODE: &str = "by node, ";

/// How a case's workload is sized.
pub(crate) enum Size<'a> {
    /// One workload for every system and round.
    Fixed(&'a Spec, &'a Arc<Workload>),
    /// `make(changes)` builds the workload; a flat-out case starts at
    /// `base` changes and, after its sizing round, runs each system on the
    /// smallest `base * 2^k` (at most `cap`) that lasts the profile's
    /// `min_seconds`.
    Grown {
        base: usize,
        cap: usize,
        make: &'a dyn Fn(usize) -> (Spec, Arc<Workload>),
    },
}

/// Drives the scenarios, reporting each run as it finishes.
pub struct Runner<'a> {
    /// Sizes.
    pub profile: Profile,
    /// Systems to run (Herald is always among them).
    pub systems: Vec<SystemKind>,
    /// etcd-fanout's systems to run (empty: both).
    pub etcd_systems: Vec<SystemKind>,
    /// Called with a description before each run.
    pub on_start: &'a dyn Fn(&str),
    /// Called with each row.
    pub on_row: &'a dyn Fn(&Row),
}

impl std::fmt::Debug for Runner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("profile", &self.profile.name)
            .field("systems", &self.systems)
            .finish_non_exhaustive()
    }
}

impl Runner<'_> {
    /// How many runs `scenarios` will make (for the progress bar).
    pub fn planned(&self, scenarios: &[ScenarioKind]) -> usize {
        let p = &self.profile;
        let s = self.systems.len();
        scenarios
            .iter()
            .map(|k| match k {
                ScenarioKind::FanoutAll => {
                    p.fanout_watchers.len() * s + 1 + usize::from(!p.herald_source)
                }
                ScenarioKind::FanoutIndexed => (p.indexed_nodes.len() + 1) * s,
                ScenarioKind::SlowWatcherTax => p.tax_rates.len() * 6 * 2,
                ScenarioKind::CatchUp => s,
                ScenarioKind::Latency => s,
                ScenarioKind::Memory => 2 * s,
                ScenarioKind::EtcdFanout => crate::etcd::planned(p, &self.etcd_systems),
                ScenarioKind::HttpFanout => crate::http::planned(p),
                ScenarioKind::Kubelet => p.repeat.max(1) * crate::kubelet::SYSTEMS.len(),
            })
            .sum()
    }

    /// Runs one scenario, returning its rows.
    pub fn run(&self, scenario: ScenarioKind) -> Vec<Row> {
        let mut rows = Vec::new();
        match scenario {
            ScenarioKind::FanoutAll => self.fanout_all(&mut rows),
            ScenarioKind::FanoutIndexed => self.fanout_indexed(&mut rows),
            ScenarioKind::SlowWatcherTax => self.slow_watcher_tax(&mut rows),
            ScenarioKind::CatchUp => self.catch_up(&mut rows),
            ScenarioKind::Latency => self.latency(&mut rows),
            ScenarioKind::Memory => self.memory(&mut rows),
            ScenarioKind::EtcdFanout => crate::etcd::etcd_fanout(self, &mut rows),
            ScenarioKind::HttpFanout => crate::http::http_fanout(self, &mut rows),
            ScenarioKind::Kubelet => crate::kubelet::kubelet(self, &mut rows),
        }
        rows
    }

    pub(crate) fn opts(&self) -> RunOpts {
        RunOpts {
            threads: self.profile.threads,
            check_filters: self.profile.check_filters,
            readiness: self.profile.readiness,
            herald_source: self.profile.herald_source,
            ..RunOpts::default()
        }
    }

    pub(crate) fn push(&self, rows: &mut Vec<Row>, row: Row) {
        (self.on_row)(&row);
        rows.push(row);
    }

    /// Runs one case on `systems` in interleaved rounds (A B C, B C A,
    /// C A B, ...: each round runs every system once, the order rotating),
    /// after a sizing round when the case is flat out and grown; pushes a
    /// row per system with its median round, the spreads and Herald's
    /// advantage taken per round.
    pub(crate) fn case(
        &self,
        rows: &mut Vec<Row>,
        scenario: ScenarioKind,
        label: &str,
        systems: &[SystemKind],
        size: Size<'_>,
        opts: &RunOpts,
    ) {
        let n = systems.len();
        let min_seconds = self.profile.min_seconds;
        let mut built: HashMap<usize, (Spec, Arc<Workload>)> = HashMap::new();
        let mut get = |changes: usize| -> (Spec, Arc<Workload>) {
            match &size {
                Size::Fixed(spec, workload) => ((*spec).clone(), (*workload).clone()),
                Size::Grown { make, .. } => built
                    .entry(changes)
                    .or_insert_with(|| make(changes))
                    .clone(),
            }
        };
        // Each system's workload size, or why it cannot run.
        let mut sizes: Vec<Result<usize, String>> = Vec::with_capacity(n);
        let grow = opts.pace == Pace::FlatOut && min_seconds > 0.0;
        match size {
            Size::Grown { base, cap, .. } if grow => {
                // The sizing round: not counted (it is also everyone's
                // warm-up). A run's time grows with its changes.
                let (spec, workload) = get(base);
                for &s in systems {
                    (self.on_start)(&format!("{} {label} {}: sizing", scenario.name(), s.name()));
                    sizes.push(match run_system(s, &spec, &workload, opts) {
                        Ok(r) => {
                            let secs = r.elapsed.as_secs_f64();
                            let mut changes = base;
                            // Aimed 1.5x over: a warm run is often faster.
                            while (changes as f64 / base as f64) * secs < min_seconds * 1.5
                                && changes < cap
                            {
                                changes *= 2;
                            }
                            Ok(changes.min(cap))
                        }
                        Err(e) => Err(format!("skipped: {e:#}")),
                    });
                }
            }
            Size::Grown { base, .. } => sizes.resize(n, Ok(base)),
            Size::Fixed(_, workload) => {
                sizes.resize(n, Ok(workload.changes.len()));
            }
        }
        let mut runs: Vec<Vec<(Round, RunResult)>> = (0..n).map(|_| Vec::new()).collect();
        let mut watchers = 0;
        for round in 0..self.profile.repeat.max(1) {
            for order in 0..n {
                let i = (order + round) % n;
                let Ok(changes) = sizes[i] else { continue };
                let s = systems[i];
                (self.on_start)(&format!(
                    "{} {label} {}: round {}/{}",
                    scenario.name(),
                    s.name(),
                    round + 1,
                    self.profile.repeat
                ));
                let (spec, workload) = get(changes);
                watchers = spec.filters.len();
                match run_system(s, &spec, &workload, opts) {
                    Ok(r) => {
                        let timed = workload.changes.len() - spec.start;
                        // A run that came out short (the sizing round ran
                        // slower than this one: warm-up, other load) has
                        // the next rounds doubled, up to the cap.
                        if let Size::Grown { cap, .. } = size
                            && grow
                            && r.elapsed.as_secs_f64() < min_seconds
                            && changes < cap
                        {
                            sizes[i] = Ok((changes * 2).min(cap));
                        }
                        runs[i].push((Round::from_run(round, order, timed, &r), r));
                    }
                    Err(e) => sizes[i] = Err(format!("skipped: {e:#}")),
                }
            }
        }
        let metric = match (opts.pace, scenario) {
            (Pace::Rate(_), _) => Metric::P99,
            (Pace::FlatOut, ScenarioKind::FanoutIndexed) => Metric::ChangesPerS,
            (Pace::FlatOut, _) => Metric::DeliveriesPerS,
        };
        let herald = systems
            .iter()
            .position(|s| s.is_herald())
            .filter(|&h| sizes[h].is_ok())
            .map(|h| {
                runs[h]
                    .iter()
                    .map(|(r, _)| r.get(metric))
                    .collect::<Vec<_>>()
            });
        for (i, &s) in systems.iter().enumerate() {
            let row = match &sizes[i] {
                Err(why) => Row::skipped(scenario, label, s, why.clone()),
                Ok(_) => {
                    let mut row = Row::from_rounds(scenario, label, s, metric, watchers, &runs[i]);
                    if let Some(h) = &herald {
                        row.ratio_rounds = h
                            .iter()
                            .zip(&row.rounds)
                            .filter_map(|(h, r)| metric.advantage((*h)?, r.get(metric)?))
                            .collect();
                        row.ratio = Spread::of(&row.ratio_rounds);
                    }
                    if grow {
                        row.short_rounds = row
                            .rounds
                            .iter()
                            .filter(|r| r.seconds < min_seconds)
                            .count();
                    }
                    row
                }
            };
            self.push(rows, row);
        }
    }

    fn fanout_all(&self, rows: &mut Vec<Row>) {
        let p = &self.profile;
        let cap = p.fanout_cap;
        for &n in &p.fanout_watchers {
            let base = (p.fanout_deliveries / n).clamp(1_000, cap);
            let make = |changes: usize| {
                (
                    spec(vec![Filter::All; n], false, 1_000, changes + 1),
                    all_match(changes),
                )
            };
            self.case(
                rows,
                ScenarioKind::FanoutAll,
                &format!("{n} watchers"),
                &self.systems,
                Size::Grown {
                    base,
                    cap,
                    make: &make,
                },
                &self.opts(),
            );
        }
        // The latency half of the target: Herald at the target rate.
        let (n, rate, secs) = p.fanout_paced;
        let changes = (rate * secs) as usize;
        let workload = all_match(changes);
        let paced = spec(vec![Filter::All; n], false, 1_000, 102_400);
        let opts = RunOpts {
            pace: Pace::Rate(rate),
            sample_every: 16,
            ..self.opts()
        };
        self.case(
            rows,
            ScenarioKind::FanoutAll,
            &format!("{n} watchers paced {:.0}k changes/s", rate / 1e3),
            &[SystemKind::Herald],
            Size::Fixed(&paced, &workload),
            &opts,
        );
        // The embedded setup end to end: the publisher writes to the
        // in-memory source, a reflector applies its watch to the engine.
        if !self.profile.herald_source {
            let base = (p.fanout_deliveries / n).clamp(1_000, cap);
            let make = |changes: usize| {
                (
                    spec(vec![Filter::All; n], false, 1_000, changes + 1),
                    all_match(changes),
                )
            };
            let opts = RunOpts {
                herald_source: true,
                ..self.opts()
            };
            self.case(
                rows,
                ScenarioKind::FanoutAll,
                &format!("{n} watchers, {SOURCE_CASE}"),
                &[SystemKind::Herald],
                Size::Grown {
                    base,
                    cap,
                    make: &make,
                },
                &opts,
            );
        }
    }

    fn fanout_indexed(&self, rows: &mut Vec<Row>) {
        let p = &self.profile;
        let kubelet = |nodes: usize, changes: usize, indexed: bool| {
            let workload = Workload::build(Shape {
                pods: (nodes * 2) as u32,
                nodes: nodes as u32,
                changes,
                move_every: 10,
                payload: 64,
            });
            let mut filters: Vec<Filter> = (0..nodes as u32).map(Filter::Node).collect();
            filters.extend([Filter::All; 10]);
            (spec(filters, indexed, 100, changes + 1), workload)
        };
        for &nodes in &p.indexed_nodes {
            let label = format!("{nodes} nodes indexed");
            let mut systems = self.systems.clone();
            // Without an index these peers offer every change to every
            // watcher: 10^5 watchers x 10^5 changes is not a run.
            let unrouted = nodes > 1_000 && systems.contains(&SystemKind::TokioBroadcast);
            systems.retain(|s| !unrouted || *s != SystemKind::TokioBroadcast);
            let make = |changes: usize| kubelet(nodes, changes, true);
            self.case(
                rows,
                ScenarioKind::FanoutIndexed,
                &label,
                &systems,
                Size::Grown {
                    base: p.indexed_changes,
                    cap: p.indexed_cap,
                    make: &make,
                },
                &self.opts(),
            );
            if unrouted {
                self.push(
                    rows,
                    Row::skipped(
                        ScenarioKind::FanoutIndexed,
                        &label,
                        SystemKind::TokioBroadcast,
                        "skipped: no index; see the 1000-node rows".into(),
                    ),
                );
            }
        }
        // The same shape without an index: every watcher's selector is
        // evaluated (or, in Herald, each distinct selector once) per change.
        let nodes = p.unindexed_watchers;
        let make = |changes: usize| kubelet(nodes, changes, false);
        self.case(
            rows,
            ScenarioKind::FanoutIndexed,
            &format!("{nodes} nodes unindexed"),
            &self.systems,
            Size::Grown {
                base: p.unindexed_changes,
                cap: p.indexed_cap,
                make: &make,
            },
            &self.opts(),
        );
    }

    fn slow_watcher_tax(&self, rows: &mut Vec<Row>) {
        let p = &self.profile;
        let secs = p.tax_seconds;
        let stall_from = Duration::from_secs_f64(secs * 0.15);
        let stall_until = Duration::from_secs_f64(secs * 0.75);
        for &rate in &p.tax_rates {
            for (case, healthy, companion) in [
                ("baseline", p.tax_watchers.0, None),
                ("draining-companion", p.tax_watchers.0, Some("draining")),
                ("stalled-once", p.tax_watchers.0, Some("once")),
                ("stalled-reconnecting", p.tax_watchers.0, Some("repeated")),
                ("baseline-1000", p.tax_watchers.1, None),
                (
                    "stalled-reconnecting-1000",
                    p.tax_watchers.1,
                    Some("repeated"),
                ),
            ] {
                let changes = (rate * secs) as usize;
                let workload = all_match(changes);
                let mut filters = vec![Filter::All; healthy];
                let mut opts = RunOpts {
                    pace: Pace::Rate(rate),
                    sample_every: 1,
                    ..self.opts()
                };
                if let Some(kind) = companion {
                    filters.push(Filter::All);
                    let w = healthy;
                    opts.companions.push(w);
                    opts.stalls = match kind {
                        // Falls behind for 50 ms in every 100 ms, and catches up.
                        "draining" => (0..(secs * 10.0) as u32)
                            .map(|k| Stall {
                                watcher: w,
                                from: Duration::from_millis(u64::from(k) * 100),
                                until: Duration::from_millis(u64::from(k) * 100 + 50),
                            })
                            .collect(),
                        "once" => vec![Stall {
                            watcher: w,
                            from: stall_from,
                            until: stall_until,
                        }],
                        // Stalls for good stretches again and again.
                        _ => (0..(secs * 2.0) as u32)
                            .map(|k| Stall {
                                watcher: w,
                                from: Duration::from_millis(u64::from(k) * 500),
                                until: Duration::from_millis(u64::from(k) * 500 + 400),
                            })
                            .collect(),
                    };
                }
                let spec = Spec {
                    filters,
                    indexed: false,
                    // The reference's queue for a watcher of unknown rate
                    // (seeds: cacher.go, chanSize 10); the stall is longer
                    // than the queue holds at either rate.
                    queue: 10,
                    ring: 102_400,
                    start: 0,
                    preloaded: 0,
                };
                let label = format!("{case} @ {rate:.0}/s");
                let systems: Vec<SystemKind> = [SystemKind::Herald, SystemKind::Reference]
                    .into_iter()
                    .filter(|s| self.systems.contains(s))
                    .collect();
                self.case(
                    rows,
                    ScenarioKind::SlowWatcherTax,
                    &label,
                    &systems,
                    Size::Fixed(&spec, &workload),
                    &opts,
                );
            }
        }
    }

    fn catch_up(&self, rows: &mut Vec<Row>) {
        let (n, back) = self.profile.catch_up;
        // Every change is history when the watchers register; the sizing
        // round grows how far back they start (up to the reference's ring
        // bound), so the catch-up lasts long enough to measure.
        let make = |back: usize| {
            let spec = Spec {
                filters: vec![Filter::All; n],
                indexed: false,
                queue: 100,
                ring: back.max(102_400),
                start: 0,
                preloaded: back,
            };
            (spec, all_match(back))
        };
        self.case(
            rows,
            ScenarioKind::CatchUp,
            &format!("{n} watchers from history"),
            &self.systems,
            Size::Grown {
                base: back,
                cap: 102_400,
                make: &make,
            },
            &self.opts(),
        );
    }

    fn latency(&self, rows: &mut Vec<Row>) {
        let (n, rate, secs) = self.profile.latency;
        let workload = all_match((rate * secs) as usize);
        let spec = spec(vec![Filter::All; n], false, 1_000, 102_400);
        let opts = RunOpts {
            pace: Pace::Rate(rate),
            sample_every: 1,
            ..self.opts()
        };
        self.case(
            rows,
            ScenarioKind::Latency,
            &format!("{n} watchers @ {:.0}k/s", rate / 1e3),
            &self.systems,
            Size::Fixed(&spec, &workload),
            &opts,
        );
    }

    fn memory(&self, rows: &mut Vec<Row>) {
        let n = self.profile.memory_watchers;
        // Watchers of everything (the target's case) and kubelet-shaped
        // watchers, one per node on an index (each holds a queue).
        let all = (
            format!("{MEMORY_ALL}{n} idle watchers"),
            spec(vec![Filter::All; n], false, 10, 1_024),
            1,
        );
        let nodes = (
            format!("{MEMORY_BY_NODE}{n} idle watchers"),
            spec((0..n as u32).map(Filter::Node).collect(), true, 10, 1_024),
            n as u32,
        );
        for (case, spec, nodes) in [all, nodes] {
            let workload = Workload::build(Shape {
                pods: 100,
                nodes,
                changes: 100,
                move_every: 0,
                payload: 64,
            });
            let mut herald = None;
            for &s in &self.systems {
                (self.on_start)(&format!("memory {} {}", s.name(), case));
                let row = if !Counting::installed() {
                    Row::skipped(
                        ScenarioKind::Memory,
                        &case,
                        s,
                        "skipped: the counting allocator is not installed".into(),
                    )
                } else {
                    match measure_memory(s, &spec, &workload) {
                        Ok(b) => {
                            if s == SystemKind::Herald {
                                herald = Some(b);
                            }
                            Row {
                                scenario: ScenarioKind::Memory.name().into(),
                                case: case.clone(),
                                system: s.name().into(),
                                watchers: n,
                                bytes_per_watcher: Some(b),
                                // Herald's advantage: its bytes against
                                // this system's (one deterministic count).
                                ratio: herald.and_then(|h| Spread::of(&[b / h])),
                                ..Row::default()
                            }
                        }
                        Err(e) => {
                            Row::skipped(ScenarioKind::Memory, &case, s, format!("skipped: {e:#}"))
                        }
                    }
                };
                self.push(rows, row);
            }
        }
    }
}
