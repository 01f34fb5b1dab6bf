//! The runner: one case of a scenario on its systems, in interleaved
//! rounds, after a sizing round when the case is flat out.

use std::collections::HashMap;
use std::sync::Arc;

use crate::consume::{self, Pace, RunOpts, RunResult};
use crate::kind::SystemKind;
use crate::peers::crossbeam_cacher::CrossbeamCacher;
use crate::peers::disruptor::DisruptorRing;
use crate::peers::herald::Herald;
use crate::peers::reference::ReferencePort;
use crate::peers::tokio_broadcast::TokioBroadcast;
use crate::profile::Profile;
use crate::row::{Metric, Round, Row, Spread};
use crate::system::Spec;
use crate::workload::{Filter, Shape, Workload};

/// A workload of `changes` to 1,000 pods on one node, never moving: the
/// all-match scenarios' stream.
pub fn all_match(changes: usize) -> Arc<Workload> {
    Workload::build(Shape {
        pods: 1_000,
        nodes: 1,
        changes,
        move_every: 0,
        payload: 64,
    })
}

/// A spec whose watchers start from the list and are owed every change.
pub fn spec(filters: Vec<Filter>, indexed: bool, queue: usize, ring: usize) -> Spec {
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
        SystemKind::HeraldSource => {
            let herald = Herald {
                source: true,
                ..Herald::default()
            };
            consume::run(&herald, spec, workload, opts)
        }
        // The systems a scenario builds itself (a process, an etcd, a
        // server) pass their own `RunFn`.
        _ => {
            anyhow::bail!("{} runs in its own scenario, which builds it", kind.name())
        }
    }
}

/// Runs one system of a case: [`run_system`] for the in-memory systems; a
/// scenario with systems of its own (an etcd behind them, a server
/// process) passes its own.
pub type RunFn<'a> =
    dyn Fn(SystemKind, &Spec, &Arc<Workload>, &RunOpts) -> anyhow::Result<RunResult> + 'a;

/// One case of a scenario, for [`Runner::case`].
pub struct Case<'a> {
    /// The scenario's name.
    pub scenario: &'static str,
    /// The case's label (the table's first column).
    pub label: &'a str,
    /// The systems it runs, Herald's first.
    pub systems: &'a [SystemKind],
    /// Its workload.
    pub size: Size<'a>,
    /// How each system is run.
    pub opts: &'a RunOpts,
    /// The figure a flat-out case's rounds are ranked by (a paced case's
    /// are ranked by p99).
    pub rank: Metric,
    /// Runs one system.
    pub run: &'a RunFn<'a>,
}

impl<'a> Case<'a> {
    /// A case of the in-memory systems, its flat-out rounds ranked by
    /// deliveries per second.
    pub fn new(
        scenario: &'static str,
        label: &'a str,
        systems: &'a [SystemKind],
        size: Size<'a>,
        opts: &'a RunOpts,
    ) -> Case<'a> {
        Case {
            scenario,
            label,
            systems,
            size,
            opts,
            rank: Metric::DeliveriesPerS,
            run: &run_system,
        }
    }
}

/// How a case's workload is sized.
pub enum Size<'a> {
    /// One workload for every system and round.
    Fixed(&'a Spec, &'a Arc<Workload>),
    /// `make(changes)` builds the workload; a flat-out case starts at
    /// `base` changes and, after its sizing round, runs each system on the
    /// smallest `base * 2^k` (at most `cap`) that lasts the profile's
    /// `min_seconds`.
    Grown {
        /// Changes in the sizing round.
        base: usize,
        /// The most changes a round may take.
        cap: usize,
        /// Builds the spec and workload of a round of so many changes.
        make: &'a dyn Fn(usize) -> (Spec, Arc<Workload>),
    },
}

impl std::fmt::Debug for Case<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("scenario", &self.scenario)
            .field("label", &self.label)
            .field("systems", &self.systems)
            .field("rank", &self.rank)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Size<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Fixed(_, workload) => write!(f, "Fixed({} changes)", workload.changes.len()),
            Size::Grown { base, cap, .. } => write!(f, "Grown {{ base: {base}, cap: {cap} }}"),
        }
    }
}

/// Drives the scenarios, reporting each run as it finishes.
pub struct Runner<'a> {
    /// The profile's shared settings (each scenario brings its own
    /// sizes).
    pub profile: Profile,
    /// Systems to run (Herald is always among them).
    pub systems: Vec<SystemKind>,
    /// etcd-fanout's systems to run (empty: all three).
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
    /// The run options every case starts from: the profile's threads,
    /// checks, readiness and Herald's feed.
    pub fn opts(&self) -> RunOpts {
        RunOpts {
            threads: self.profile.threads,
            check_filters: self.profile.check_filters,
            readiness: self.profile.readiness,
            herald_source: self.profile.herald_source,
            ..RunOpts::default()
        }
    }

    /// Reports `row` and adds it to `rows`.
    pub fn push(&self, rows: &mut Vec<Row>, row: Row) {
        (self.on_row)(&row);
        rows.push(row);
    }

    /// Runs one case on `systems` in interleaved rounds (A B C, B C A,
    /// C A B, ...: each round runs every system once, the order rotating),
    /// after a sizing round when the case is flat out and grown; pushes a
    /// row per system with its median round, the spreads and Herald's
    /// advantage taken per round.
    pub fn case(&self, rows: &mut Vec<Row>, case: Case<'_>) {
        let Case {
            scenario,
            label,
            systems,
            size,
            opts,
            rank,
            run,
        } = case;
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
                    (self.on_start)(&format!("{scenario} {label} {}: sizing", s.name()));
                    sizes.push(match run(s, &spec, &workload, opts) {
                        Ok(r) => {
                            let secs = r.elapsed.as_secs_f64();
                            let mut changes = base;
                            // Aimed over the floor: a warm run is often faster.
                            while (changes as f64 / base as f64) * secs
                                < min_seconds * self.profile.aim
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
        let mut runs: Vec<Rounds> = (0..n).map(|_| Vec::new()).collect();
        let mut watchers = 0;
        let plan = Plan {
            scenario,
            label,
            systems,
            opts,
            run,
        };
        for round in 0..self.profile.repeat.max(1) {
            for order in 0..n {
                let i = (order + round) % n;
                let Ok(changes) = sizes[i] else { continue };
                let (spec, workload) = get(changes);
                watchers = spec.filters.len();
                match self.run_round(&plan, i, (round, order), &spec, &workload) {
                    Ok((at, r)) => {
                        // A run that came out short (the sizing round ran
                        // slower than this one: warm-up, other load) has
                        // the next rounds grown to the aim at this run's
                        // rate (at most doubled: a rate that swings, such
                        // as a peer that ends watchers in some rounds and
                        // not in others, must not multiply a run's length),
                        // up to the cap.
                        let secs = r.elapsed.as_secs_f64();
                        if let Size::Grown { cap, .. } = size
                            && grow
                            && secs < min_seconds
                            && changes < cap
                        {
                            let aim = min_seconds * self.profile.aim;
                            let factor = (aim / secs.max(1e-3)).clamp(1.0, 2.0);
                            let grown =
                                ((changes as f64 * factor).ceil() as usize).max(changes + 1);
                            sizes[i] = Ok(grown.min(cap));
                        }
                        runs[i].push((at, r));
                    }
                    Err(e) => sizes[i] = Err(e),
                }
            }
        }
        let short = grow.then_some(min_seconds);
        self.push_rows(rows, &plan, rank, (&sizes, &runs), watchers, short);
    }

    /// Runs several fixed-size cases of one scenario round by round: each
    /// round runs every case once (the cases' order rotating as the
    /// systems' does within each), so a case and its baseline are measured
    /// side by side in time, and a ratio between them can be taken per
    /// round. Rows are pushed case by case, as [`Runner::case`] does.
    ///
    /// # Panics
    /// If a case is not [`Size::Fixed`] (a grown case sizes itself in a
    /// round of its own).
    pub fn interleaved(&self, rows: &mut Vec<Row>, cases: &[Case<'_>]) {
        let fixed: Vec<(&Spec, &Arc<Workload>)> = cases
            .iter()
            .map(|c| match c.size {
                Size::Fixed(spec, workload) => (spec, workload),
                Size::Grown { .. } => panic!("interleaved cases are fixed in size"),
            })
            .collect();
        let mut sizes: Vec<Vec<Result<usize, String>>> = fixed
            .iter()
            .zip(cases)
            .map(|((_, w), c)| vec![Ok(w.changes.len()); c.systems.len()])
            .collect();
        let mut runs: Vec<Vec<Rounds>> = cases
            .iter()
            .map(|c| (0..c.systems.len()).map(|_| Vec::new()).collect())
            .collect();
        for round in 0..self.profile.repeat.max(1) {
            for k in 0..cases.len() {
                let c = (k + round) % cases.len();
                let case = &cases[c];
                let (spec, workload) = fixed[c];
                let plan = Plan::of(case);
                let n = case.systems.len();
                for order in 0..n {
                    let i = (order + round) % n;
                    if sizes[c][i].is_err() {
                        continue;
                    }
                    match self.run_round(&plan, i, (round, order), spec, workload) {
                        Ok(run) => runs[c][i].push(run),
                        Err(e) => sizes[c][i] = Err(e),
                    }
                }
            }
        }
        for (c, case) in cases.iter().enumerate() {
            let watchers = fixed[c].0.filters.len();
            let plan = Plan::of(case);
            self.push_rows(
                rows,
                &plan,
                case.rank,
                (&sizes[c], &runs[c]),
                watchers,
                None,
            );
        }
    }

    /// Runs system `i` of a case once, as round `round` at place `order`.
    fn run_round(
        &self,
        case: &Plan<'_>,
        i: usize,
        (round, order): (usize, usize),
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> Result<(Round, RunResult), String> {
        let s = case.systems[i];
        (self.on_start)(&format!(
            "{} {} {}: round {}/{}",
            case.scenario,
            case.label,
            s.name(),
            round + 1,
            self.profile.repeat
        ));
        let r = (case.run)(s, spec, workload, case.opts).map_err(|e| format!("skipped: {e:#}"))?;
        let timed = workload.changes.len() - spec.start;
        Ok((Round::from_run(round, order, timed, &r), r))
    }

    /// Pushes a row per system of a case from its rounds: the median
    /// round by the case's metric, Herald's advantage per round, and (a
    /// flat-out case grown to `short` seconds) how many rounds fell short.
    fn push_rows(
        &self,
        rows: &mut Vec<Row>,
        case: &Plan<'_>,
        rank: Metric,
        (sizes, runs): (&[Result<usize, String>], &[Rounds]),
        watchers: usize,
        short: Option<f64>,
    ) {
        let Plan {
            scenario,
            label,
            systems,
            opts,
            ..
        } = *case;
        let metric = match opts.pace {
            Pace::Rate(_) => Metric::P99,
            Pace::FlatOut => rank,
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
                    if let Some(min_seconds) = short {
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
}

/// One system's rounds of a case, in the order they ran.
type Rounds = Vec<(Round, RunResult)>;

/// What running and reporting a case needs of it, its size aside.
#[derive(Clone, Copy)]
struct Plan<'a> {
    scenario: &'static str,
    label: &'a str,
    systems: &'a [SystemKind],
    opts: &'a RunOpts,
    run: &'a RunFn<'a>,
}

impl<'a> Plan<'a> {
    fn of(case: &Case<'a>) -> Plan<'a> {
        Plan {
            scenario: case.scenario,
            label: case.label,
            systems: case.systems,
            opts: case.opts,
            run: case.run,
        }
    }
}
