//! slow-watcher-tax: healthy watchers' latency (p50/p99/p99.9) with and
//! without a companion watcher that stalls, on Herald and the reference
//! port (the blocking peers would block their publisher behind a watcher
//! stalled for good).

use std::time::Duration;

use crate::consume::{Pace, RunOpts, Stall};
use crate::kind::SystemKind;
use crate::report::{self, Headline, Target, median, spread, us};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, all_match};
use crate::scenario::Scenario;
use crate::system::Spec;
use crate::workload::Filter;

/// The scenario's name.
pub const NAME: &str = "slow-watcher-tax";

/// Its systems, Herald first.
const SYSTEMS: [SystemKind; 2] = [SystemKind::Herald, SystemKind::Reference];

/// The cases a headline-only run makes (at each rate).
const HEADLINE_CASES: [&str; 2] = ["baseline", "stalled-reconnecting"];

/// Cases per rate.
const CASES: usize = 6;

/// The scenario.
#[derive(Debug)]
pub struct SlowWatcherTax;

impl Scenario for SlowWatcherTax {
    fn name(&self) -> &'static str {
        NAME
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        SYSTEMS
            .into_iter()
            .filter(|s| runner.systems.contains(s))
            .collect()
    }

    fn planned(&self, runner: &Runner<'_>) -> usize {
        let p = &runner.profile;
        let cases = if p.headline_only {
            HEADLINE_CASES.len()
        } else {
            CASES
        };
        p.tax_rates.len() * cases * SYSTEMS.len()
    }

    fn run(&self, runner: &Runner<'_>, rows: &mut Vec<Row>) {
        let p = &runner.profile;
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
            ]
            .into_iter()
            .filter(|(case, _, _)| !p.headline_only || HEADLINE_CASES.contains(case))
            {
                let changes = (rate * secs) as usize;
                let workload = all_match(changes);
                let mut filters = vec![Filter::All; healthy];
                let mut opts = RunOpts {
                    pace: Pace::Rate(rate),
                    sample_every: 1,
                    ..runner.opts()
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
                let systems = self.systems(runner);
                let size = Size::Fixed(&spec, &workload);
                runner.case(rows, Case::new(NAME, &label, &systems, size, &opts));
            }
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::latency_table(NAME, rows)
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let tax: Vec<&Row> = rows
            .iter()
            .filter(|r| r.scenario == NAME && r.system == "herald")
            .collect();
        if tax.is_empty() {
            return Vec::new();
        }
        let mut worst = 0.0f64;
        let mut ended = 0;
        for r in &tax {
            ended += r.ended;
            if let Some(x) = of_baseline(&tax, r) {
                worst = worst.max(x);
            }
        }
        vec![Target {
            goal: "slow-watcher-tax: healthy p99 with a stalled companion within 1.1x of baseline; no healthy watcher ends".into(),
            measured: format!("worst {worst:.2}x of baseline (medians); {ended} healthy ended"),
            met: Some(worst <= 1.1 && ended == 0),
        }]
    }

    /// stalled-reconnecting at the highest rate run: the healthy
    /// watchers' p99, against its baseline's.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let tax: Vec<&Row> = rows
            .iter()
            .filter(|r| r.scenario == NAME && r.system == "herald" && !r.rounds.is_empty())
            .collect();
        let h = tax
            .iter()
            .filter(|r| r.case.starts_with("stalled-reconnecting @ "))
            .max_by(|a, b| rate_of(a).total_cmp(&rate_of(b)))?;
        let x = of_baseline(&tax, h);
        let measured = x.map_or("-".into(), |x| format!("{x:.2}x of baseline"));
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &h.case),
            "herald",
            ("healthy p99", &|r| spread(r, Metric::P99, us)),
            (
                format!("p99 <= 1.1x baseline ({measured}), none ended"),
                x.map(|x| x <= 1.1 && h.ended == 0),
            ),
        )
    }
}

/// A case's rate, from its label (`case @ rate/s`).
fn rate_of(r: &Row) -> f64 {
    r.case
        .split_once(" @ ")
        .and_then(|(_, rate)| rate.trim_end_matches("/s").parse().ok())
        .unwrap_or(0.0)
}

/// A Herald row's median p99 over its baseline's (the same rate and
/// watcher count, no companion).
fn of_baseline(tax: &[&Row], r: &Row) -> Option<f64> {
    let (case, rate) = r.case.split_once(" @ ").unwrap_or((&r.case, ""));
    let base_case = if case.ends_with("-1000") {
        "baseline-1000"
    } else {
        "baseline"
    };
    let b = tax
        .iter()
        .find(|b| b.case == format!("{base_case} @ {rate}"))?;
    Some(median(Some(r), Metric::P99)? / median(Some(b), Metric::P99)?)
}
