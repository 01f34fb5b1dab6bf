//! memory: bytes per idle watcher, counted by the counting global
//! allocator (live bytes with N watchers minus live bytes with none, over
//! N): watchers of everything (the target's case), and kubelet-shaped
//! watchers, one per node on an index. One deterministic count per system
//! and case, not rounds.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::alloc::Counting;
use crate::kind::SystemKind;
use crate::peers::crossbeam_cacher::CrossbeamCacher;
use crate::peers::disruptor::DisruptorRing;
use crate::peers::herald::Herald;
use crate::peers::reference::ReferencePort;
use crate::peers::tokio_broadcast::TokioBroadcast;
use crate::profile::ProfileName;
use crate::report::{self, Headline, Target};
use crate::row::{Row, Spread};
use crate::runner::{Runner, spec};
use crate::scenario::Scenario;
use crate::system::{Spec, System};
use crate::workload::{Filter, Shape, Workload};

/// The scenario's name.
pub const NAME: &str = "memory";

/// The case of watchers of everything (the target's case) starts with
/// this.
pub const MEMORY_ALL: &str = "all, ";

/// The case of kubelet-shaped watchers (one per node, on an index) starts
/// with this.
pub const MEMORY_BY_NODE: &str = "by node, ";

/// The targets: bytes per idle Herald watcher at most this, per case.
const TARGETS: [(&str, &str, f64); 2] = [
    (
        MEMORY_ALL,
        "memory: <= 320 B per idle watcher of everything",
        320.0,
    ),
    (
        MEMORY_BY_NODE,
        "memory: <= 512 B per idle indexed watcher",
        512.0,
    ),
];

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Idle watchers in each case.
    pub watchers: usize,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// memory scenario: idle watchers.
    #[arg(long)]
    pub memory_watchers: Option<usize>,
}

/// The scenario.
#[derive(Debug)]
pub struct Memory;

impl Scenario for Memory {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let watchers = match profile {
            ProfileName::Quick | ProfileName::Default => 10_000,
            ProfileName::Full => 100_000,
            ProfileName::Smoke => 200,
        };
        Sizes { watchers }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        if let Some(n) = flags.memory_watchers {
            sizes.watchers = n.max(1);
        }
        Ok(())
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        runner.systems.clone()
    }

    fn planned(&self, runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        2 * runner.systems.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let n = sizes.watchers;
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
            for &s in &runner.systems {
                (runner.on_start)(&format!("memory {} {}", s.name(), case));
                let row = if !Counting::installed() {
                    Row::skipped(
                        NAME,
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
                                scenario: NAME.into(),
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
                        Err(e) => Row::skipped(NAME, &case, s, format!("skipped: {e:#}")),
                    }
                };
                runner.push(rows, row);
            }
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::table(
            NAME,
            "| case | system | bytes per idle watcher | system ÷ herald | note |",
            rows,
            |r| {
                format!(
                    "| {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    r.bytes_per_watcher
                        .map_or("-".into(), |b| format!("{b:.0}")),
                    r.ratio.map_or("-".into(), |s| format!("{:.2}x", s.median)),
                    r.note
                )
            },
        )
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        TARGETS
            .iter()
            .map(|&(case, goal, limit)| {
                let mem = herald_bytes(rows, case);
                Target {
                    goal: goal.into(),
                    measured: mem.map_or("-".into(), |b| format!("{b:.0} B")),
                    met: mem.map(|b| b <= limit),
                }
            })
            .collect()
    }

    /// Watchers of everything (one count per system, no rounds), against
    /// 320 B per watcher.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let (case, _, limit) = TARGETS[0];
        let h = rows
            .iter()
            .find(|r| r.scenario == NAME && r.case.starts_with(case) && r.system == "herald")?;
        let bytes = h.bytes_per_watcher?;
        Some(Headline {
            scenario: NAME,
            case: h.case.clone(),
            figure: "bytes per idle watcher (one count)",
            herald: format!("{bytes:.0} B"),
            peers: rows
                .iter()
                .filter(|r| r.scenario == NAME && r.case == h.case && r.system != "herald")
                .filter_map(|r| Some((r.system.clone(), format!("{:.2}x", r.ratio?.median))))
                .collect(),
            target: format!("<= {limit:.0} B"),
            met: Some(bytes <= limit),
        })
    }
}

/// Herald's bytes per watcher in the case starting with `case`.
fn herald_bytes(rows: &[Row], case: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.scenario == NAME && r.case.starts_with(case) && r.system == "herald")
        .and_then(|r| r.bytes_per_watcher)
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
        // The others are their own scenarios' systems.
        _ => {
            anyhow::bail!("the memory scenario runs the in-memory systems")
        }
    }
}
