//! fanout-all: N watchers that admit every change, the writer flat out, on
//! every system; plus Herald paced at the target's rate, and Herald fed
//! end to end through its in-memory source and a reflector.

use serde::Serialize;

use crate::consume::{Pace, RunOpts};
use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{self, Headline, Target, find, median, range, spread, us};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, all_match, spec};
use crate::scenario::Scenario;
use crate::workload::Filter;

/// The scenario's name.
pub const NAME: &str = "fanout-all";

/// The fanout-all case in which Herald is fed through its in-memory source
/// and a reflector.
pub const SOURCE_CASE: &str = "in-memory source + reflector";

/// The peers' targets at 1,000 watchers: Herald's per-round advantage at
/// least this.
const TARGETS: [(&str, f64); 3] = [
    ("disruptor", 0.6),
    ("tokio-broadcast", 2.0),
    ("reference-port", 20.0),
];

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watcher counts, a flat-out case each.
    pub watchers: Vec<usize>,
    /// Deliveries per run before sizing (changes = this / watchers).
    pub deliveries: usize,
    /// The most changes a sized run may take (each system keeps every
    /// change of a run in its history).
    pub cap: usize,
    /// The paced check: watchers.
    pub paced_watchers: usize,
    /// The paced check: changes per second.
    pub paced_rate: f64,
    /// The paced check: seconds.
    pub paced_seconds: f64,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// fanout-all watcher counts, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub watchers: Vec<usize>,
    /// fanout-all deliveries per run (changes = deliveries / watchers).
    #[arg(long)]
    pub deliveries: Option<usize>,
}

/// The scenario.
#[derive(Debug)]
pub struct FanoutAll;

impl Scenario for FanoutAll {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let default = Sizes {
            watchers: vec![10, 100, 1_000, 10_000],
            deliveries: 10_000_000,
            cap: 4_000_000,
            paced_watchers: 1_000,
            paced_rate: 66_000.0,
            paced_seconds: 1.0,
        };
        match profile {
            ProfileName::Quick => Sizes {
                watchers: vec![1_000],
                ..default
            },
            ProfileName::Default => default,
            ProfileName::Full => Sizes {
                deliveries: 50_000_000,
                ..default
            },
            ProfileName::Smoke => Sizes {
                watchers: vec![10, 100],
                deliveries: 50_000,
                cap: 1_000_000,
                paced_watchers: 100,
                paced_rate: 2_000.0,
                paced_seconds: 0.2,
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        crate::scenario::set_counts("--watchers", flags.watchers, &mut sizes.watchers)?;
        if let Some(d) = flags.deliveries {
            sizes.deliveries = d;
        }
        Ok(())
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        runner.systems.clone()
    }

    fn planned(&self, runner: &Runner<'_>, sizes: &Sizes) -> usize {
        let p = &runner.profile;
        let extra = if p.headline_only {
            0
        } else {
            1 + usize::from(!p.herald_source)
        };
        sizes.watchers.len() * runner.systems.len() + extra
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let p = &runner.profile;
        let cap = sizes.cap;
        for &n in &sizes.watchers {
            let base = (sizes.deliveries / n).clamp(1_000, cap);
            let make = |changes: usize| {
                (
                    spec(vec![Filter::All; n], false, 1_000, changes + 1),
                    all_match(changes),
                )
            };
            let label = format!("{n} watchers");
            let opts = runner.opts();
            let size = Size::Grown {
                base,
                cap,
                make: &make,
            };
            runner.case(rows, Case::new(NAME, &label, &runner.systems, size, &opts));
        }
        if p.headline_only {
            return;
        }
        // The latency half of the target: Herald at the target rate.
        let (n, rate, secs) = (sizes.paced_watchers, sizes.paced_rate, sizes.paced_seconds);
        let changes = (rate * secs) as usize;
        let workload = all_match(changes);
        let paced = spec(vec![Filter::All; n], false, 1_000, 102_400);
        let opts = RunOpts {
            pace: Pace::Rate(rate),
            sample_every: 16,
            ..runner.opts()
        };
        let label = format!("{n} watchers paced {:.0}k changes/s", rate / 1e3);
        let size = Size::Fixed(&paced, &workload);
        runner.case(
            rows,
            Case::new(NAME, &label, &[SystemKind::Herald], size, &opts),
        );
        // The embedded setup end to end: the publisher writes to the
        // in-memory source, a reflector applies its watch to the engine.
        if !p.herald_source {
            let base = (sizes.deliveries / n).clamp(1_000, cap);
            let make = |changes: usize| {
                (
                    spec(vec![Filter::All; n], false, 1_000, changes + 1),
                    all_match(changes),
                )
            };
            let opts = RunOpts {
                herald_source: true,
                ..runner.opts()
            };
            let label = format!("{n} watchers, {SOURCE_CASE}");
            let size = Size::Grown {
                base,
                cap,
                make: &make,
            };
            runner.case(
                rows,
                Case::new(NAME, &label, &[SystemKind::Herald], size, &opts),
            );
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::rate_table(NAME, rows)
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let mut t = Vec::new();
        let x = |v: f64| format!("{v:.2}x");
        for (peer, factor) in TARGETS {
            let r = find(rows, NAME, "1000 watchers", peer).and_then(|r| r.ratio);
            t.push(Target {
                goal: format!("fanout-all, 1,000 watchers: >= {factor}x {peer} (per-round ratio)"),
                measured: range(r, x),
                met: r.map(|r| r.median >= factor),
            });
        }
        let paced = find(rows, NAME, "1000 watchers paced", "herald");
        t.push(Target {
            goal: "fanout-all, 1,000 watchers at 66k changes/s: p99 <= 1 ms, none ended".into(),
            measured: paced.map_or("-".into(), |r| {
                format!("p99 {}, {} ended", spread(r, Metric::P99, us), r.ended)
            }),
            met: paced.map(|r| {
                median(Some(r), Metric::P99).unwrap_or(f64::MAX) <= 1_000.0 && r.ended == 0
            }),
        });
        t
    }

    /// 1,000 watchers flat out (else the most watchers run), against the
    /// peers' targets.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let case = rows
            .iter()
            .filter(|r| r.scenario == NAME && r.system == "herald")
            .filter(|r| r.case.ends_with(" watchers") && !r.rounds.is_empty())
            .max_by_key(|r| (r.case == "1000 watchers", r.watchers))?
            .case
            .clone();
        let ratios: Vec<(f64, Option<f64>)> = TARGETS
            .iter()
            .map(|(peer, factor)| {
                let r = find(rows, NAME, &case, peer).filter(|r| r.case == case);
                (*factor, r.and_then(|r| r.ratio).map(|s| s.median))
            })
            .collect();
        let measured: Vec<f64> = ratios.iter().filter_map(|(_, r)| *r).collect();
        let met = (case == "1000 watchers" && !measured.is_empty())
            .then(|| ratios.iter().all(|(f, r)| r.is_none_or(|r| r >= *f)));
        let target = if case == "1000 watchers" {
            TARGETS
                .iter()
                .map(|(p, f)| format!(">= {f}x {p}"))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "- (targets at 1,000 watchers)".into()
        };
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &case),
            "herald",
            ("M deliveries/s", &|r| {
                spread(r, Metric::DeliveriesPerS, report::m)
            }),
            (target, met),
        )
    }
}
