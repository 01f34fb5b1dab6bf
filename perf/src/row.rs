//! What a run reports: a [`Row`] per system and case (its median round,
//! every figure's [`Spread`] over the rounds, Herald's advantage taken per
//! round), each [`Round`] it is made of, the [`Metric`]s rounds are
//! ranked by.

use serde::Serialize;

use crate::consume::RunResult;
use crate::kind::SystemKind;
use crate::machine::CpuUse;
use crate::system::PeerUse;

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
    /// The 99th percentile over every round's samples together (µs): the
    /// tail of the case rather than of one round, resting on as many
    /// samples as all the rounds took.
    pub pooled_p99_us: Option<f64>,
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
    /// round grows the system's next rounds, up to the cap).
    pub short_rounds: usize,
    /// The threads busy in the median round (see [`CpuUse::busy`]).
    pub busy: Vec<String>,
    /// How many threads that is.
    pub busy_threads: usize,
    /// Every round, in order.
    pub rounds: Vec<Round>,
    /// What the server process behind the system (etcd, or herald-server's
    /// child server) cost in the median round, when there is one; the
    /// spreads of its figures are in `spread` (keys `server_cores`,
    /// `server_us_per_delivery`, `server_us_per_write`, `server_rss_bytes`,
    /// `heap_peak_bytes`, `bytes_per_connection`,
    /// `server_bytes_per_connection`, `harness_cores`).
    pub peer: Option<PeerUse>,
}

impl Row {
    fn from_run(
        scenario: &str,
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
            scenario: scenario.into(),
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
    pub(crate) fn from_rounds(
        scenario: &str,
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
        row.pooled_p99_us = pooled(runs.iter().map(|(_, r)| &r.latency), 0.99);
        for m in Metric::ALL {
            let values: Vec<f64> = runs.iter().filter_map(|(r, _)| r.get(m)).collect();
            if let Some(s) = Spread::of(&values) {
                row.spread.insert(m.key(), s);
            }
        }
        type Figure = (&'static str, fn(&Round) -> Option<f64>);
        let peer_figures: [Figure; 17] = [
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
            ("apiserver_cores", |r| {
                let a = r.peer.as_ref()?.apiserver.as_ref()?;
                Some(a.cpu_s / r.seconds.max(1e-9))
            }),
            ("apiserver_us_per_write", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.us_per_write)
            }),
            ("apiserver_idle_cores", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.idle_cores)
            }),
            ("apiserver_us_per_write_above_idle", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.us_per_write_above_idle)
            }),
            ("apiserver_heap_bytes", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.heap_inuse_bytes as f64)
            }),
            ("apiserver_heap_per_watcher", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.heap_per_watcher)
            }),
            ("apiserver_watches", |r| {
                Some(r.peer.as_ref()?.apiserver.as_ref()?.watches as f64)
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

    /// A row for a system that did not run, `why` in its note.
    pub fn skipped(scenario: &str, case: &str, system: SystemKind, why: String) -> Row {
        Row {
            scenario: scenario.into(),
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

/// The `q` quantile (µs) over several runs' latency samples together
/// (None without samples).
fn pooled<'h>(runs: impl Iterator<Item = &'h hdrhistogram::Histogram<u64>>, q: f64) -> Option<f64> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    for h in runs.filter(|h| !h.is_empty()) {
        match &mut all {
            None => all = Some(h.clone()),
            // Same bounds and precision in every run: an add cannot fail;
            // if it did, the pooled figure is not given.
            Some(a) => a.add(h).ok()?,
        }
    }
    all.map(|a| a.value_at_quantile(q) as f64 / 1e3)
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
    pub(crate) fn from_run(round: usize, order: usize, changes: usize, r: &RunResult) -> Round {
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
