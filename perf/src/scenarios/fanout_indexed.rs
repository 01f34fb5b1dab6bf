//! fanout-indexed: pods spread over N nodes (2 pods per node, one change in
//! 10 moves a pod), one watcher per node selecting `spec.nodeName=node-i`,
//! plus 10 all-watchers (the kubelet shape), indexed; and the same at
//! 1,000 nodes unindexed.

use serde::Serialize;

use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{self, Headline, Target, busy, k, m, median, note, range, ratio, spread};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, spec};
use crate::scenario::Scenario;
use crate::workload::{Filter, Shape, Workload};

/// The scenario's name.
pub const NAME: &str = "fanout-indexed";

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Node counts (one watcher each), an indexed case each.
    pub nodes: Vec<usize>,
    /// Changes per run before sizing.
    pub changes: usize,
    /// The most changes a sized run may take.
    pub cap: usize,
    /// Watchers (nodes) in the unindexed field-selector case.
    pub unindexed_watchers: usize,
    /// Changes in the unindexed case before sizing.
    pub unindexed_changes: usize,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// fanout-indexed node counts (one watcher each), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<usize>,
    /// fanout-indexed changes per run.
    #[arg(long)]
    pub indexed_changes: Option<usize>,
}

/// The scenario.
#[derive(Debug)]
pub struct FanoutIndexed;

impl Scenario for FanoutIndexed {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let default = Sizes {
            nodes: vec![1_000, 10_000, 100_000],
            changes: 50_000,
            cap: 3_200_000,
            unindexed_watchers: 1_000,
            unindexed_changes: 20_000,
        };
        match profile {
            ProfileName::Quick => Sizes {
                nodes: vec![10_000],
                // Sized from a shorter sizing round: the slowest peer
                // takes about a second for it.
                changes: 10_000,
                ..default
            },
            ProfileName::Default => default,
            ProfileName::Full => Sizes {
                changes: 200_000,
                unindexed_changes: 50_000,
                ..default
            },
            ProfileName::Smoke => Sizes {
                nodes: vec![100, 1_000],
                changes: 5_000,
                cap: 100_000,
                unindexed_watchers: 100,
                unindexed_changes: 2_000,
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        crate::scenario::set_counts("--nodes", flags.nodes, &mut sizes.nodes)?;
        if let Some(c) = flags.indexed_changes {
            sizes.changes = c;
        }
        Ok(())
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        runner.systems.clone()
    }

    fn planned(&self, runner: &Runner<'_>, sizes: &Sizes) -> usize {
        let p = &runner.profile;
        (sizes.nodes.len() + usize::from(!p.headline_only)) * runner.systems.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let p = &runner.profile;
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
        let opts = runner.opts();
        for &nodes in &sizes.nodes {
            let label = format!("{nodes} nodes indexed");
            let mut systems = runner.systems.clone();
            // Without an index these peers offer every change to every
            // watcher: 10^5 watchers x 10^5 changes is not a run.
            let unrouted = nodes > 1_000 && systems.contains(&SystemKind::TokioBroadcast);
            systems.retain(|s| !unrouted || *s != SystemKind::TokioBroadcast);
            let make = |changes: usize| kubelet(nodes, changes, true);
            let size = Size::Grown {
                base: sizes.changes,
                cap: sizes.cap,
                make: &make,
            };
            runner.case(
                rows,
                Case {
                    rank: Metric::ChangesPerS,
                    ..Case::new(NAME, &label, &systems, size, &opts)
                },
            );
            if unrouted {
                runner.push(
                    rows,
                    Row::skipped(
                        NAME,
                        &label,
                        SystemKind::TokioBroadcast,
                        "skipped: no index; see the 1000-node rows".into(),
                    ),
                );
            }
        }
        if p.headline_only {
            return;
        }
        // The same shape without an index: every watcher's selector is
        // evaluated (or, in Herald, each distinct selector once) per change.
        let nodes = sizes.unindexed_watchers;
        let make = |changes: usize| kubelet(nodes, changes, false);
        let label = format!("{nodes} nodes unindexed");
        let size = Size::Grown {
            base: sizes.unindexed_changes,
            cap: sizes.cap,
            make: &make,
        };
        runner.case(
            rows,
            Case {
                rank: Metric::ChangesPerS,
                ..Case::new(NAME, &label, &runner.systems, size, &opts)
            },
        );
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::table(
            NAME,
            "| case | system | k changes/s | ns/change | M useful deliveries/s | herald ÷ system, per round | busy threads | ended | note |",
            rows,
            |r| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::ChangesPerS, k),
                    r.spread
                        .get(Metric::ChangesPerS.key())
                        .map_or("-".into(), |c| format!("{:.0}", 1e9 / c.median)),
                    spread(r, Metric::DeliveriesPerS, m),
                    ratio(r),
                    busy(r),
                    r.ended,
                    note(r)
                )
            },
        )
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let mut t = Vec::new();
        let x = |v: f64| format!("{v:.2}x");
        let per_change: Vec<(usize, f64)> = rows
            .iter()
            .filter(|r| {
                r.scenario == NAME && r.system == "herald" && r.case.ends_with("nodes indexed")
            })
            .filter_map(|r| Some((r.watchers, 1e9 / median(Some(r), Metric::ChangesPerS)?)))
            .collect();
        if per_change.len() >= 2 {
            let lo = per_change.iter().map(|p| p.1).fold(f64::MAX, f64::min);
            let hi = per_change.iter().map(|p| p.1).fold(0.0, f64::max);
            t.push(Target {
                goal: "fanout-indexed: per-change cost flat within 1.5x from 1k to 100k nodes"
                    .into(),
                measured: format!(
                    "{} ns/change ({:.2}x)",
                    per_change
                        .iter()
                        .map(|p| format!("{:.0}", p.1))
                        .collect::<Vec<_>>()
                        .join(", "),
                    hi / lo
                ),
                met: Some(hi / lo <= 1.5),
            });
        }
        if let Some(big) = biggest_indexed(rows, "reference-port") {
            t.push(Target {
                goal: format!(
                    "fanout-indexed, {}: >= 5x the reference port (per-round ratio)",
                    big.case
                ),
                measured: range(big.ratio, x),
                met: big.ratio.map(|r| r.median >= 5.0),
            });
        }
        let un = rows
            .iter()
            .find(|r| r.scenario == NAME && r.system == "herald" && r.case.ends_with("unindexed"));
        t.push(Target {
            goal: "fanout-indexed: unindexed field selector, 1,000 watchers: >= 68k changes/s"
                .into(),
            measured: un.map_or("-".into(), |r| {
                spread(r, Metric::ChangesPerS, k) + "k changes/s"
            }),
            met: median(un, Metric::ChangesPerS).map(|v| v >= 68e3),
        });
        t
    }

    /// The most nodes indexed, against the reference port's target.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let herald = biggest_indexed(rows, "herald").filter(|r| !r.rounds.is_empty())?;
        let reference = report::case_rows(rows, NAME, &herald.case)
            .into_iter()
            .find(|r| r.system == "reference-port")
            .and_then(|r| r.ratio);
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &herald.case),
            "herald",
            ("k changes/s", &|r| spread(r, Metric::ChangesPerS, k)),
            (
                ">= 5x reference-port".into(),
                reference.map(|r| r.median >= 5.0),
            ),
        )
    }
}

/// `system`'s row in the indexed case with the most watchers.
fn biggest_indexed<'a>(rows: &'a [Row], system: &str) -> Option<&'a Row> {
    rows.iter()
        .filter(|r| r.scenario == NAME && r.system == system && r.case.ends_with("nodes indexed"))
        .max_by_key(|r| r.watchers)
}
