//! fleet-restart: N watchers through HAProxy in front of three
//! `herald-server` replicas on one etcd ([`crate::fleet`]), a steady write
//! load, and in each round a rolling restart of the three. Each replica
//! in turn gets SIGTERM: `/readyz` fails for its `--shutdown-delay` (1 s)
//! while HAProxy takes it out, then every watch it serves gets a bookmark
//! and a clean end, and it exits; it is started again and awaited in
//! HAProxy before the next. Its watchers reconnect through HAProxy, to the
//! replicas that remain, from the version they last saw.
//!
//! A round: a steady window (5 s; 2 in the smoke profile) with the three
//! replicas up, then the storm: the three steps and the wait until every
//! watcher has the last write. Per round: the reconnects the fleet
//! absorbed (and the most in one second), the time from a stream's end
//! to its next `200` (p99 and max), the p99 from a write's send to its
//! receipt for watchers that stayed where they were (undisturbed) during
//! the storm against the same in the steady window, and etcd's load (CPU
//! and gRPC requests per second) in the storm against the steady window's
//! third: one replica's steady share, since each replica holds one watch
//! on etcd per resource.
//!
//! The run fails its target on any re-list (a 410: the version a watcher
//! resumes from is in every replica's window, so none is owed), any
//! event out of order, and any watcher that did not see every write.
//!
//! The environment takes about 10 s to start, and N connections a round
//! through HAProxy: the quick and smoke profiles run it only when named.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fleet::watchers::{self, Counts, Phase, Shared};
use crate::fleet::{Fleet, REPLICAS, haproxy};
use crate::kind::SystemKind;
use crate::machine::CpuWindow;
use crate::profile::ProfileName;
use crate::report::{self, Headline, Target, fig, med, note, spread_key};
use crate::row::{Round, Row, Spread};
use crate::runner::Runner;
use crate::scenario::Scenario;
use crate::servers::{herald_server, load_average};

/// The scenario's name.
pub const NAME: &str = "fleet-restart";

const SYSTEM: SystemKind = SystemKind::HeraldFleet;

/// How long every watcher may take to have the last write after the
/// restarts.
const SETTLE: Duration = Duration::from_secs(60);

/// The most watchers `--fleet-watchers` takes: each holds a descriptor in
/// the harness, whose limit here is 20,000.
const MAX_WATCHERS: usize = 18_000;

/// The most writes per second `--fleet-rate` takes (one put at a time).
const MAX_RATE: f64 = 1_000.0;

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watchers through the balancer.
    pub watchers: usize,
    /// Writes per second into etcd.
    pub rate: f64,
    /// Seconds of the steady window.
    pub steady_seconds: f64,
    /// Each replica's seats for watch initialisations
    /// (`--max-inflight-reads`, `--max-queued-reads`), if not
    /// herald-server's defaults: few enough that a restart's herd is
    /// refused in part (429, `Retry-After`) and comes back.
    pub seats: Option<(usize, usize)>,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// fleet-restart: watchers through the balancers (default: 10,000).
    #[arg(long)]
    pub fleet_watchers: Option<usize>,
    /// fleet-restart: writes per second into etcd (default: 2).
    #[arg(long)]
    pub fleet_rate: Option<f64>,
}

/// The scenario.
#[derive(Debug)]
pub struct FleetRestart;

fn label(n: usize, rate: f64) -> String {
    format!("{n} watchers, {REPLICAS} replicas @ {rate:.0} writes/s")
}

/// One round's figures.
#[derive(Debug, Default)]
struct Measured {
    storm_s: f64,
    reconnects: f64,
    peak_per_s: f64,
    served_again_p99_ms: Option<f64>,
    served_again_max_ms: Option<f64>,
    steady_p99_us: Option<f64>,
    undisturbed_p99_us: Option<f64>,
    etcd_cpu_steady: f64,
    etcd_cpu_storm: f64,
    /// CPU ms per second: a replica's in the steady window (the three's
    /// mean), a replica's that stays up while another restarts, the
    /// HAProxy processes' in each.
    replica_steady: f64,
    survivor_storm: Option<f64>,
    balancer_steady: f64,
    balancer_storm: f64,
    /// Cores: the harness's (its 10,000 clients and the writer) and the
    /// machine's busy ones, in each window.
    harness_steady: Option<f64>,
    harness_storm: Option<f64>,
    machine_steady: Option<f64>,
    machine_storm: Option<f64>,
    etcd_rps_steady: f64,
    etcd_rps_storm: f64,
    exit_s: f64,
    load: f64,
    round: Round,
}

impl Scenario for FleetRestart {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        match profile {
            // Run in the quick profile only when named; at the default's
            // size.
            ProfileName::Quick | ProfileName::Default | ProfileName::Full => Sizes {
                // 10,000 watchers of every pod (about 3.7 KB of JSON each)
                // at 2 writes/s: 20,000 deliveries/s through HAProxy on 2
                // cores, beside the replicas, etcd and the clients.
                watchers: 10_000,
                rate: 2.0,
                steady_seconds: 5.0,
                seats: None,
            },
            ProfileName::Smoke => Sizes {
                watchers: 200,
                rate: 10.0,
                steady_seconds: 2.0,
                // A replica's third of 200 reconnecting at once, to 2
                // seats and 8 places in the queue: the herd is refused in
                // part.
                seats: Some((2, 8)),
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        if let Some(n) = flags.fleet_watchers {
            anyhow::ensure!(
                (1..=MAX_WATCHERS).contains(&n),
                "--fleet-watchers must be from 1 to {MAX_WATCHERS} (a descriptor each here, and two in a balancer)"
            );
            sizes.watchers = n;
        }
        if let Some(r) = flags.fleet_rate {
            anyhow::ensure!(
                r.is_finite() && r > 0.0 && r <= MAX_RATE,
                "--fleet-rate must be above 0 and at most {MAX_RATE} writes/s"
            );
            sizes.rate = r;
        }
        Ok(())
    }

    fn heavy(&self) -> bool {
        true
    }

    fn systems(&self, _runner: &Runner<'_>) -> Vec<SystemKind> {
        vec![SYSTEM]
    }

    fn planned(&self, _runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        1
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let n = sizes.watchers;
        let case = label(n, sizes.rate);
        let mut row = Row::skipped(NAME, &case, SYSTEM, String::new());
        row.watchers = n;
        match measure(runner, sizes) {
            Ok((rounds, end)) => fill(&mut row, &rounds, end),
            Err(e) => row.note = format!("skipped: {e:#}"),
        }
        if let Some((inflight, queued)) = sizes.seats {
            for (key, v) in [("seats", inflight), ("queued_seats", queued)] {
                if let Some(s) = Spread::of(&[v as f64]) {
                    row.spread.insert(key, s);
                }
            }
        }
        runner.push(rows, row);
    }

    fn table(&self, rows: &[&Row]) -> String {
        if rows.is_empty() {
            return String::new();
        }
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0} ms"));
        let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0} µs"));
        let mut out = report::table(
            NAME,
            "| case | seats, queue | reconnects a round | most in one second | end to served again, p99 | max | steady p99 | undisturbed p99 in the storm | ÷ steady, per round | etcd CPU ms/s steady | storm | storm ÷ one replica's steady | etcd requests/s steady | storm | refused (429), retried | re-lists | out of order | watchers short | note |",
            rows,
            |r| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    seats(r),
                    spread_key(r, "reconnects", fig),
                    spread_key(r, "reconnects_peak_per_s", fig),
                    spread_key(r, "served_again_p99_ms", ms),
                    spread_key(r, "served_again_max_ms", ms),
                    spread_key(r, "steady_p99_us", us),
                    spread_key(r, "undisturbed_p99_us", us),
                    spread_key(r, "undisturbed_over_steady", |v| v
                        .map_or("-".into(), |v| format!("{v:.2}x"))),
                    spread_key(r, "etcd_cpu_ms_per_s_steady", fig),
                    spread_key(r, "etcd_cpu_ms_per_s_storm", fig),
                    spread_key(r, "etcd_cpu_storm_over_replica", |v| v
                        .map_or("-".into(), |v| format!("{v:.1}x"))),
                    spread_key(r, "etcd_requests_per_s_steady", fig),
                    spread_key(r, "etcd_requests_per_s_storm", fig),
                    fig(med(r, "refusals")),
                    fig(med(r, "relists")),
                    r.violations,
                    fig(med(r, "short")),
                    note(r)
                )
            },
        );
        let _ = writeln!(
            out,
            "\nEach round: a steady window, then a rolling restart of the {REPLICAS} replicas (SIGTERM, its 1 s delay, its drain, started again, up in HAProxy), then the wait until every watcher has the last write. Watchers: HTTP/1.1 watches of every pod through HAProxy (TCP, leastconn), each resuming from its last version when its stream ends; undisturbed: a watcher whose stream began before the step under way. etcd's CPU: its process's; its requests: `grpc_server_started_total`. Re-lists, order and shortfalls are over the whole run."
        );
        let cores = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            out,
            "\nWhere the CPU went (ms of CPU per second, or cores; median [min-max] over the rounds):\n\n| case | a replica, steady | a replica that stays up, in the storm | HAProxy, steady | storm | the harness (clients, writer), cores steady | storm | the machine's busy cores, steady | storm |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.case,
                spread_key(r, "replica_cpu_ms_per_s_steady", fig),
                spread_key(r, "survivor_cpu_ms_per_s_storm", fig),
                spread_key(r, "balancer_cpu_ms_per_s_steady", fig),
                spread_key(r, "balancer_cpu_ms_per_s_storm", fig),
                spread_key(r, "harness_cores_steady", cores),
                spread_key(r, "harness_cores_storm", cores),
                spread_key(r, "machine_cores_steady", cores),
                spread_key(r, "machine_cores_storm", cores),
            );
        }
        out
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let Some(r) = rows
            .iter()
            .find(|r| r.scenario == NAME && !r.rounds.is_empty())
        else {
            return vec![Target {
                goal: goal_relist(),
                measured: "not run".into(),
                met: None,
            }];
        };
        let relists = med(r, "relists").unwrap_or(0.0);
        let short = med(r, "short").unwrap_or(0.0);
        let ratio = r.spread.get("undisturbed_over_steady");
        vec![
            Target {
                goal: goal_relist(),
                measured: format!(
                    "{relists:.0} re-lists, {} out of order, {short:.0} watchers short, over {} rounds",
                    r.violations,
                    r.rounds.len()
                ),
                met: Some(relists == 0.0 && short == 0.0 && r.violations == 0),
            },
            Target {
                goal: "fleet-restart: the undisturbed watchers' p99 during the storm at most 2x the steady p99 (per round)".into(),
                measured: ratio.map_or("-".into(), |s| {
                    format!("{:.2}x [{:.2}-{:.2}]", s.median, s.min, s.max)
                }),
                met: ratio.map(|s| s.median <= 2.0),
            },
        ]
    }

    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = rows
            .iter()
            .find(|r| r.scenario == NAME && !r.rounds.is_empty())?;
        let ok = med(h, "relists").map(|v| v == 0.0 && h.violations == 0);
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &h.case),
            SYSTEM.name(),
            ("undisturbed p99 in a rolling restart", &|r| {
                spread_key(r, "undisturbed_p99_us", |v| {
                    v.map_or("-".into(), |v| format!("{v:.0} µs"))
                })
            }),
            (goal_relist(), ok),
        )
    }
}

/// The replicas' seats and queue for watch initialisations.
fn seats(r: &Row) -> String {
    match (med(r, "seats"), med(r, "queued_seats")) {
        (Some(s), Some(q)) => format!("{s:.0}, {q:.0}"),
        _ => "defaults".into(),
    }
}

fn goal_relist() -> String {
    "fleet-restart: no re-list, no event out of order, every write to every watcher, through every rolling restart".into()
}

/// Starts the fleet and the watchers, runs the rounds; the rounds'
/// figures and the run's end state (re-lists, out of order, short).
fn measure(runner: &Runner<'_>, sizes: &Sizes) -> anyhow::Result<(Vec<Measured>, (Counts, usize))> {
    let (n, rate, steady_s) = (sizes.watchers, sizes.rate, sizes.steady_seconds);
    crate::scenarios::http_fanout::raise_fd_limit();
    // One per watcher here (the balancers hold theirs in their own
    // processes: see `crate::fleet`).
    let needed = n as u64 + 1_024;
    let limit = crate::scenarios::http_fanout::fd_limit();
    anyhow::ensure!(
        limit >= needed,
        "{n} watchers need about {needed} descriptors; the limit is {limit}"
    );
    let herald = herald_server()?;
    (runner.on_start)(&format!(
        "{NAME}: starting etcd, {REPLICAS} herald-server replicas and HAProxy"
    ));
    let mut fleet = Fleet::start(&herald, &haproxy()?, n, sizes.seats)?;
    let shared = Shared::new(n, fleet.revision()?);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = fleet.writer(rate, shared.clone(), stop.clone())?;
    (runner.on_start)(&format!("{NAME}: opening {n} watches through HAProxy"));
    let rt = watchers::start(n, &fleet.fronts, &shared)?;
    let result = rounds(runner, &mut fleet, &shared, steady_s);
    stop.store(true, std::sync::atomic::Ordering::Release);
    let written = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer panicked"))?;
    let settled = written.and_then(|_| settle(&shared));
    shared.stop();
    drop(rt);
    let rounds = result?;
    settled?;
    let end = shared.counts(Instant::now(), Instant::now());
    if let Some(gone) = shared.first_gone() {
        eprintln!("{NAME}: the first 410 a watcher got: {gone}");
    }
    Ok((rounds, (end, shared.short())))
}

/// Waits until every watcher has the last write.
fn settle(shared: &Shared) -> anyhow::Result<Duration> {
    let since = Instant::now();
    let last = shared.written();
    let n = shared.caught_up(0);
    loop {
        let caught = shared.caught_up(last);
        if caught == n {
            return Ok(since.elapsed());
        }
        anyhow::ensure!(
            since.elapsed() < SETTLE,
            "{} of {n} watchers do not have the last write ({last}) {SETTLE:?} after it",
            n - caught
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn rounds(
    runner: &Runner<'_>,
    fleet: &mut Fleet,
    shared: &Arc<Shared>,
    steady_s: f64,
) -> anyhow::Result<Vec<Measured>> {
    // Every watcher streaming before the first round.
    settle(shared)?;
    let mut out = Vec::new();
    let repeat = runner.profile.repeat.max(1);
    for round in 0..repeat {
        (runner.on_start)(&format!(
            "{NAME}: round {}/{repeat}: steady, then a rolling restart",
            round + 1
        ));
        shared.reset();
        let before = shared.counts(Instant::now(), Instant::now());
        // Steady.
        let replicas =
            |fleet: &Fleet| -> u64 { (0..REPLICAS).filter_map(|i| fleet.replica_cpu_ns(i)).sum() };
        let steady_window = CpuWindow::open();
        let (cpu0, req0, t0) = (fleet.etcd_cpu_ns(), fleet.etcd_requests()?, Instant::now());
        let (replicas0, balancer0) = (replicas(fleet), fleet.balancer_cpu_ns());
        shared.set_phase(Phase::Steady);
        std::thread::sleep(Duration::from_secs_f64(steady_s));
        shared.set_phase(Phase::Idle);
        let (cpu1, req1, t1) = (fleet.etcd_cpu_ns(), fleet.etcd_requests()?, Instant::now());
        let (replicas1, balancer1) = (replicas(fleet), fleet.balancer_cpu_ns());
        let steady_cpu = steady_window.close(&[]);
        // The storm.
        let window = CpuWindow::open();
        shared.set_phase(Phase::Storm);
        let mut exit_s = 0.0f64;
        // The replicas that stay up through each step: their CPU.
        let (mut survivors_ns, mut survivors_s) = (0u64, 0.0f64);
        for i in 0..REPLICAS {
            shared.step();
            let others: Vec<(usize, Option<u64>)> = (0..REPLICAS)
                .filter(|&j| j != i)
                .map(|j| (j, fleet.replica_cpu_ns(j)))
                .collect();
            let at = Instant::now();
            exit_s = exit_s.max(fleet.restart(i)?);
            let took = at.elapsed().as_secs_f64();
            for (j, before) in others {
                if let Some((b, a)) = before.zip(fleet.replica_cpu_ns(j)) {
                    survivors_ns += a.saturating_sub(b);
                    survivors_s += took;
                }
            }
        }
        settle(shared)?;
        shared.set_phase(Phase::Idle);
        let (cpu2, req2, t2) = (fleet.etcd_cpu_ns(), fleet.etcd_requests()?, Instant::now());
        let balancer2 = fleet.balancer_cpu_ns();
        let cpu = window.close(&[]);
        let after = shared.counts(t1, t2);
        let [steady, undisturbed, again, again_max] = shared.percentiles();
        let per_s = |d: f64, a: Instant, b: Instant| d / b.duration_since(a).as_secs_f64();
        let storm_s = t2.duration_since(t1).as_secs_f64();
        out.push(Measured {
            storm_s,
            reconnects: (after.reconnects - before.reconnects) as f64,
            peak_per_s: after.peak_per_s as f64,
            served_again_p99_ms: again.map(|v| v / 1e3),
            served_again_max_ms: again_max.map(|v| v / 1e3),
            steady_p99_us: steady,
            undisturbed_p99_us: undisturbed,
            etcd_cpu_steady: per_s((cpu1 - cpu0) as f64 / 1e6, t0, t1),
            etcd_cpu_storm: per_s((cpu2 - cpu1) as f64 / 1e6, t1, t2),
            replica_steady: per_s(
                replicas1.saturating_sub(replicas0) as f64 / 1e6 / REPLICAS as f64,
                t0,
                t1,
            ),
            survivor_storm: (survivors_s > 0.0).then(|| survivors_ns as f64 / 1e6 / survivors_s),
            balancer_steady: per_s(balancer1.saturating_sub(balancer0) as f64 / 1e6, t0, t1),
            balancer_storm: per_s(balancer2.saturating_sub(balancer1) as f64 / 1e6, t1, t2),
            harness_steady: steady_cpu.process_cores,
            harness_storm: cpu.process_cores,
            machine_steady: steady_cpu.machine_cores,
            machine_storm: cpu.machine_cores,
            etcd_rps_steady: per_s(req1 - req0, t0, t1),
            etcd_rps_storm: per_s(req2 - req1, t1, t2),
            exit_s,
            load: load_average(),
            round: Round {
                round,
                order: 0,
                seconds: storm_s,
                p99_us: undisturbed,
                cpu,
                ..Round::default()
            },
        });
    }
    Ok(out)
}

/// The row from the rounds and the run's end state.
fn fill(row: &mut Row, rounds: &[Measured], (end, short): (Counts, usize)) {
    type Figure = (&'static str, fn(&Measured) -> Option<f64>);
    let figures: [Figure; 24] = [
        ("replica_cpu_ms_per_s_steady", |m| Some(m.replica_steady)),
        ("survivor_cpu_ms_per_s_storm", |m| m.survivor_storm),
        ("balancer_cpu_ms_per_s_steady", |m| Some(m.balancer_steady)),
        ("balancer_cpu_ms_per_s_storm", |m| Some(m.balancer_storm)),
        ("harness_cores_steady", |m| m.harness_steady),
        ("harness_cores_storm", |m| m.harness_storm),
        ("machine_cores_steady", |m| m.machine_steady),
        ("machine_cores_storm", |m| m.machine_storm),
        ("storm_s", |m| Some(m.storm_s)),
        ("reconnects", |m| Some(m.reconnects)),
        ("reconnects_peak_per_s", |m| Some(m.peak_per_s)),
        ("served_again_p99_ms", |m| m.served_again_p99_ms),
        ("served_again_max_ms", |m| m.served_again_max_ms),
        ("steady_p99_us", |m| m.steady_p99_us),
        ("undisturbed_p99_us", |m| m.undisturbed_p99_us),
        ("undisturbed_over_steady", |m| {
            Some(m.undisturbed_p99_us? / m.steady_p99_us?)
        }),
        ("etcd_cpu_ms_per_s_steady", |m| Some(m.etcd_cpu_steady)),
        ("etcd_cpu_ms_per_s_storm", |m| Some(m.etcd_cpu_storm)),
        ("etcd_cpu_storm_over_replica", |m| {
            let replica = m.etcd_cpu_steady / REPLICAS as f64;
            (replica > 0.0).then(|| m.etcd_cpu_storm / replica)
        }),
        ("etcd_requests_per_s_steady", |m| Some(m.etcd_rps_steady)),
        ("etcd_requests_per_s_storm", |m| Some(m.etcd_rps_storm)),
        ("exit_s", |m| Some(m.exit_s)),
        ("load", |m| Some(m.load)),
        ("seconds", |m| Some(m.storm_s)),
    ];
    for (key, get) in figures {
        let values: Vec<f64> = rounds
            .iter()
            .filter_map(get)
            .filter(|v| v.is_finite())
            .collect();
        if let Some(s) = Spread::of(&values) {
            row.spread.insert(key, s);
        }
    }
    for (key, v) in [
        ("relists", end.relists as f64),
        ("refusals", end.refusals as f64),
        ("short", short as f64),
    ] {
        if let Some(s) = Spread::of(&[v]) {
            row.spread.insert(key, s);
        }
    }
    row.violations = end.violations;
    row.p99_us = row.spread.get("undisturbed_p99_us").map(|s| s.median);
    row.rounds = rounds.iter().map(|m| m.round.clone()).collect();
}
