//! latency: publish-to-receive latency at a paced rate, every delivery
//! sampled.

use serde::Serialize;

use crate::consume::{Pace, RunOpts};
use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{self, Headline, Target, find, median, spread, us};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, all_match, spec};
use crate::scenario::Scenario;
use crate::workload::Filter;

/// The scenario's name.
pub const NAME: &str = "latency";

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watchers of everything.
    pub watchers: usize,
    /// Changes per second.
    pub rate: f64,
    /// Seconds of the run.
    pub seconds: f64,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// latency scenario: changes per second.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Its seconds per run (shared with slow-watcher-tax).
    #[command(flatten)]
    pub seconds: Seconds,
}

/// `--seconds`: the paced scenarios' seconds per run, latency's and
/// slow-watcher-tax's (both declare it, this one struct).
#[derive(Debug, clap::Args)]
pub struct Seconds {
    /// latency and slow-watcher-tax: seconds per run.
    #[arg(long)]
    pub seconds: Option<f64>,
}

impl Seconds {
    /// The seconds given, if any; an error unless positive.
    pub fn get(&self) -> anyhow::Result<Option<f64>> {
        if let Some(s) = self.seconds {
            anyhow::ensure!(s > 0.0, "--seconds must be positive");
        }
        Ok(self.seconds)
    }
}

/// The scenario.
#[derive(Debug)]
pub struct Latency;

impl Scenario for Latency {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let (watchers, rate, seconds) = match profile {
            ProfileName::Quick => (1_000, 10_000.0, 1.0),
            ProfileName::Default => (1_000, 10_000.0, 2.0),
            ProfileName::Full => (1_000, 10_000.0, 5.0),
            ProfileName::Smoke => (50, 2_000.0, 0.2),
        };
        Sizes {
            watchers,
            rate,
            seconds,
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        if let Some(r) = flags.rate {
            anyhow::ensure!(r > 0.0, "--rate must be positive");
            sizes.rate = r;
        }
        if let Some(s) = flags.seconds.get()? {
            sizes.seconds = s;
        }
        Ok(())
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        runner.systems.clone()
    }

    fn planned(&self, runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        runner.systems.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let (n, rate, secs) = (sizes.watchers, sizes.rate, sizes.seconds);
        let workload = all_match((rate * secs) as usize);
        let spec = spec(vec![Filter::All; n], false, 1_000, 102_400);
        let opts = RunOpts {
            pace: Pace::Rate(rate),
            sample_every: 1,
            ..runner.opts()
        };
        let label = format!("{n} watchers @ {:.0}k/s", rate / 1e3);
        let size = Size::Fixed(&spec, &workload);
        runner.case(rows, Case::new(NAME, &label, &runner.systems, size, &opts));
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::latency_table(NAME, rows)
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let lat = find(rows, NAME, "", "herald");
        let dis = find(rows, NAME, "", "disruptor");
        vec![
            Target {
                goal: "latency, 10k changes/s to 1,000 watchers: p50 <= 100 µs and p99 <= 1 ms"
                    .into(),
                measured: lat.map_or("-".into(), |r| {
                    format!(
                        "p50 {}, p99 {}",
                        spread(r, Metric::P50, us),
                        spread(r, Metric::P99, us)
                    )
                }),
                met: lat.map(meets_target),
            },
            Target {
                goal: "latency: Herald's p99 <= disruptor's in >= 4 of 5 rounds".into(),
                measured: dis.map_or("-".into(), |r| {
                    let wins = r.ratio_rounds.iter().filter(|v| **v >= 1.0).count();
                    format!("{wins} of {} rounds", r.ratio_rounds.len())
                }),
                met: dis.map(|r| {
                    let wins = r.ratio_rounds.iter().filter(|v| **v >= 1.0).count();
                    !r.ratio_rounds.is_empty() && wins * 5 >= r.ratio_rounds.len() * 4
                }),
            },
        ]
    }

    /// Its one case, against p50 <= 100 µs and p99 <= 1 ms.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = find(rows, NAME, "", "herald")?;
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &h.case),
            "herald",
            ("p99", &|r| spread(r, Metric::P99, us)),
            (
                format!(
                    "p50 <= 100 µs (p50 {}), p99 <= 1 ms",
                    us(median(Some(h), Metric::P50))
                ),
                Some(meets_target(h)),
            ),
        )
    }
}

/// Herald's row meets the latency target: p50 <= 100 µs, p99 <= 1 ms,
/// none ended.
fn meets_target(r: &Row) -> bool {
    median(Some(r), Metric::P50).unwrap_or(f64::MAX) <= 100.0
        && median(Some(r), Metric::P99).unwrap_or(f64::MAX) <= 1_000.0
        && r.ended == 0
}
