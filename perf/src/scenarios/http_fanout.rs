//! http-fanout: Herald's Kubernetes API front (`herald-server`) serving N
//! watch connections on loopback, against the same server to clients
//! asking for protobuf (`herald-server-protobuf`), the same watchers
//! in-process through the same source (`herald+source`: what the network
//! costs) and etcd's own fan-out to N gRPC watchers (`etcd`, where etcd
//! is found, watchers of everything only). The systems: [`crate::http`];
//! the etcd, when found, is started here for the scenario.
//!
//! The server's CPU per delivery is its process's CPU time over the run
//! (the child server alone: the clients are the harness's threads) over
//! the deliveries; the table gives it per 1,000 deliveries and, for the
//! protobuf clients, its ratio to the JSON clients' taken per round.
//! `herald-server-tls` is the same over TLS with a bearer token and RBAC
//! (see [`crate::http::secure`]); its targets: CPU per delivery and p99
//! within 1.2x of plain HTTP's at the same offered load (the paced
//! cases), the p99 where the machine had headroom (`judged`).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::consume::{Pace, RunOpts};
use crate::etcd::EtcdEnv;
use crate::http::run_on;
use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{
    self, Headline, Target, busy, fig, m, med, note, ratio, spread, spread_key, us,
};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, all_match, spec};
use crate::scenario::Scenario;
use crate::scenarios::etcd_fanout::{EtcdFlags, EtcdSetup};
use crate::system::Spec;
use crate::workload::{Filter, Shape, Workload};

/// The scenario's name.
pub const NAME: &str = "http-fanout";

/// The highest `--http-rate`: deliveries a second in total. One loopback
/// send costs its sender about 9 µs of CPU (`scripts/loopback-send-cost.py`),
/// so a million a second is nine cores' worth; anything higher only sizes
/// a workload no run can pace.
const MAX_HTTP_RATE: f64 = 1_000_000.0;

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Connection counts (watchers of everything), a flat-out case each.
    pub watchers: Vec<usize>,
    /// Connections in the selector-mix case (one in four watches
    /// everything, the rest one node each).
    pub mixed: usize,
    /// Flat out: deliveries in the sizing run (changes = this /
    /// watchers), grown to `min_seconds` per system.
    pub deliveries: usize,
    /// Flat out: the most changes a sized run may take.
    pub cap: usize,
    /// Paced: connections.
    pub paced_watchers: usize,
    /// Paced: seconds.
    pub paced_seconds: f64,
    /// Paced: the rates, each a case: deliveries per second in total.
    /// The lowest leaves a 2-core machine headroom with 1,000 TLS clients
    /// on it; the highest is issue 36's 50k.
    pub rates: Vec<f64>,
    /// The etcd of its `etcd` rows (set up as etcd-fanout's).
    pub etcd: EtcdSetup,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// http-fanout connection counts (watchers of everything),
    /// comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub http_watchers: Vec<usize>,
    /// http-fanout paced cases: deliveries per second in total to their
    /// connections, comma-separated, a case each (default profile:
    /// 10,000 and 50,000 to 1,000).
    #[arg(long, value_delimiter = ',')]
    pub http_rate: Vec<f64>,
    /// Its etcd's (shared with etcd-fanout).
    #[command(flatten)]
    pub etcd: EtcdFlags,
}

/// The scenario.
#[derive(Debug)]
pub struct HttpFanout;

impl Scenario for HttpFanout {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let default = Sizes {
            watchers: vec![100, 1_000, 5_000, 10_000],
            mixed: 1_000,
            deliveries: 2_000_000,
            cap: 65_536,
            paced_watchers: 1_000,
            paced_seconds: 2.0,
            rates: vec![10_000.0, 50_000.0],
            etcd: EtcdSetup {
                connections: 10,
                in_flight: 16,
            },
        };
        match profile {
            ProfileName::Quick => Sizes {
                watchers: vec![1_000],
                // etcd's own fan-out to 1,000 watchers takes seconds for
                // the default's sizing round.
                deliveries: 200_000,
                ..default
            },
            ProfileName::Default | ProfileName::Full => default,
            ProfileName::Smoke => Sizes {
                watchers: vec![20],
                mixed: 20,
                deliveries: 20_000,
                cap: 4_096,
                paced_watchers: 20,
                paced_seconds: 0.3,
                rates: vec![5_000.0],
                etcd: EtcdSetup {
                    connections: 2,
                    in_flight: 16,
                },
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        crate::scenario::set_counts("--http-watchers", flags.http_watchers, &mut sizes.watchers)?;
        if !flags.http_rate.is_empty() {
            anyhow::ensure!(
                flags
                    .http_rate
                    .iter()
                    .all(|&r| r.is_finite() && r > 0.0 && r <= MAX_HTTP_RATE),
                "--http-rate must list rates above 0 and at most {MAX_HTTP_RATE} deliveries/s (a loopback send alone costs about 9 us of CPU: that is 9 cores)"
            );
            let mut sorted = flags.http_rate.clone();
            sorted.sort_by(f64::total_cmp);
            anyhow::ensure!(
                sorted.windows(2).all(|w| w[0] != w[1]),
                "--http-rate lists a rate twice: each rate is a case of its own"
            );
            sizes.rates = flags.http_rate;
        }
        flags.etcd.apply(&mut sizes.etcd)
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        let etcd = herald_testkit::etcd::etcd_binary().is_ok();
        let mut s = http_systems(runner.profile.heavy);
        if etcd {
            s.push(SystemKind::Etcd);
        }
        s
    }

    fn planned(&self, runner: &Runner<'_>, sizes: &Sizes) -> usize {
        let etcd = herald_testkit::etcd::etcd_binary().is_ok();
        cases(runner, sizes)
            .iter()
            .map(|c| systems_of(c, etcd, runner.profile.heavy).len())
            .sum()
    }

    /// One etcd (when found) serves every case's etcd rows; each of its
    /// runs writes under a prefix of its own and cleans up.
    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        raise_fd_limit();
        let p = &runner.profile;
        let etcd = match herald_testkit::etcd::etcd_binary() {
            Ok(bin) => match EtcdEnv::start(&bin, sizes.etcd.connections, sizes.etcd.in_flight) {
                Ok(started) => Some(started),
                Err(e) => {
                    eprintln!(
                        "herald-perf: http-fanout: etcd did not start, its rows are skipped: {e:#}"
                    );
                    None
                }
            },
            Err(e) => {
                eprintln!("herald-perf: http-fanout: no etcd here, its rows are skipped: {e}");
                None
            }
        };
        let limit = fd_limit();
        for case in cases(runner, sizes) {
            let systems = systems_of(&case, etcd.is_some(), p.heavy);
            // One end of every connection in each process (the harness's
            // clients, the child server), which inherits the harness's limit.
            let needed = case.watchers as u64 + 1_024;
            if limit < needed {
                let why = format!(
                    "skipped: {} connections need about {needed} descriptors in each process; the limit is {limit} (RLIMIT_NOFILE, which may not be raised here)",
                    case.watchers
                );
                for &s in &systems {
                    let mut row = Row::skipped(NAME, &case.label, s, why.clone());
                    row.watchers = case.watchers;
                    runner.push(rows, row);
                }
                continue;
            }
            let base = RunOpts {
                check_filters: true,
                timeout: Duration::from_secs(120),
                ..runner.opts()
            };
            let env = etcd.as_ref().map(|(_, env)| env);
            let run = |kind: SystemKind, spec: &Spec, workload: &Arc<Workload>, opts: &RunOpts| {
                run_on(env, kind, spec, workload, opts)
            };
            let n = case.watchers;
            let indexed = case.mixed;
            match case.paced {
                None => {
                    let cap = sizes.cap.max(1);
                    let base_changes = (sizes.deliveries / n).clamp(64.min(cap), cap);
                    let fs = filters(&case);
                    let make = |changes: usize| {
                        (
                            spec(fs.clone(), indexed, 1_000, changes + 1),
                            workload(&case, changes),
                        )
                    };
                    let size = Size::Grown {
                        base: base_changes,
                        cap,
                        make: &make,
                    };
                    runner.case(
                        rows,
                        Case {
                            run: &run,
                            ..Case::new(NAME, &case.label, &systems, size, &base)
                        },
                    );
                }
                Some(rate) => {
                    let secs = sizes.paced_seconds;
                    let per_watcher = rate / n as f64;
                    let changes = ((per_watcher * secs).ceil() as usize).max(2);
                    let spec = spec(filters(&case), indexed, 1_000, changes + 1);
                    let workload = workload(&case, changes);
                    let opts = RunOpts {
                        pace: Pace::Rate(per_watcher),
                        sample_every: 1,
                        ..base
                    };
                    let size = Size::Fixed(&spec, &workload);
                    runner.case(
                        rows,
                        Case {
                            run: &run,
                            ..Case::new(NAME, &case.label, &systems, size, &opts)
                        },
                    );
                }
            }
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::table(
            NAME,
            "| case | system | M deliveries/s | herald-server ÷ system, per round | p50 | p99 | server CPU ms per 1,000 deliveries | that ÷ herald-server's, per round | server cores | heap per connection (server's) | busy threads | ended | note |",
            rows,
            |r| {
                let kib = |b: f64| format!("{:.1}", b / 1024.0);
                let heap = match (
                    med(r, "bytes_per_connection"),
                    med(r, "server_bytes_per_connection"),
                ) {
                    (Some(both), Some(server)) => format!("{} KiB ({})", kib(both), kib(server)),
                    (Some(both), None) => format!("{} KiB", kib(both)),
                    _ => "-".into(),
                };
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::DeliveriesPerS, m),
                    ratio(r),
                    spread(r, Metric::P50, us),
                    spread(r, Metric::P99, us),
                    spread_key(r, "server_us_per_delivery", fig),
                    cpu_ratio(rows, r),
                    fig(med(r, "server_cores")),
                    heap,
                    busy(r),
                    r.ended,
                    note(r)
                )
            },
        )
    }

    /// TLS against plain HTTP, judged like for like on this machine's cores
    /// (`tls_targets`).
    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        tls_targets(rows, cores)
    }

    /// The connections of everything flat out nearest 1,000 (no target).
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = rows
            .iter()
            .filter(|r| {
                r.scenario == NAME
                    && r.system == "herald-server"
                    && r.case.ends_with("connections, all")
                    && !r.rounds.is_empty()
            })
            .min_by_key(|r| r.watchers.abs_diff(1_000))?;
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &h.case),
            "herald-server",
            ("M deliveries/s", &|r| spread(r, Metric::DeliveriesPerS, m)),
            ("-".into(), None),
        )
    }
}

/// The row's server CPU per delivery ÷ herald-server's in the same case,
/// taken per round: median [min-max].
fn cpu_ratio(rows: &[&Row], r: &Row) -> String {
    let json = SystemKind::HeraldHttp.name();
    let Some(h) = rows
        .iter()
        .find(|h| h.case == r.case && h.system == json && !h.rounds.is_empty())
    else {
        return "-".into();
    };
    if r.system == json {
        return "1.0x".into();
    }
    report::range(
        report::per_round_ratio(r, h, report::server_us_per_delivery),
        |v| format!("{v:.2}x"),
    )
}

/// TLS with authentication and RBAC against plain HTTP, per case, on a
/// machine of `cores`: the server's CPU per delivery and the p99, each
/// taken per round and judged only where the comparison is like for like
/// (see [`judged`]); every case is listed, the unjudged with the reason.
fn tls_targets(rows: &[Row], cores: f64) -> Vec<Target> {
    let of = |name: &str| {
        rows.iter()
            .filter(|r| r.scenario == NAME && r.system == name && !r.rounds.is_empty())
            .collect::<Vec<_>>()
    };
    let (plain, tls) = (
        of(SystemKind::HeraldHttp.name()),
        of(SystemKind::HeraldHttpTls.name()),
    );
    let mut cpu = Comparison::default();
    let mut p99 = Comparison::default();
    for t in &tls {
        let Some(h) = plain.iter().find(|h| h.case == t.case) else {
            continue;
        };
        let (cpu_why, p99_why) = judged(t, h, cores);
        cpu.add(
            t,
            report::per_round_ratio(t, h, report::server_us_per_delivery),
            cpu_why,
        );
        p99.add(t, report::per_round_ratio(t, h, |r| r.p99_us), p99_why);
    }
    vec![
        Target {
            goal: "http-fanout: over TLS with authentication and RBAC, the server's CPU per delivery <= 1.2x plain HTTP's at the same offered load: every paced case (per-round ratio)".into(),
            measured: cpu.measured(),
            met: cpu.met,
        },
        Target {
            goal: format!("http-fanout: over TLS with authentication and RBAC, p99 <= 1.2x plain HTTP's at the same offered load, where the machine has headroom: every paced case whose rounds kept it under {:.0}% busy (per-round ratio)", HEADROOM * 100.0),
            measured: p99.measured(),
            met: p99.met,
        },
    ]
}

/// The share of the machine's cores a paced case's rounds may keep busy
/// for its p99s to be compared: above it, both p99s are queues on the
/// shared cores (the harness's clients decrypt on them too), and their
/// ratio measures how near saturation each run is, not the path.
const HEADROOM: f64 = 0.9;

/// Why a case's CPU and p99 ratios are not judged (`None`: judged).
///
/// - CPU per delivery only at the same offered load. Flat out, each
///   server runs at the rate its clients can take: plain HTTP at about
///   twice TLS's on two shared cores, and a server's CPU per delivery
///   falls as its rate rises (each `writev` carries more events). At
///   150k deliveries/s paced, TLS cost 1.02x [1.00-1.06] plain; flat
///   out, at 418k and 183k, 2.4x (`docs/perf/http-fanout-tls.md`).
/// - p99 only paced, and only where the machine had headroom in both
///   systems' rounds (median at most [`HEADROOM`] of its cores busy).
fn judged(tls: &Row, plain: &Row, cores: f64) -> (Option<String>, Option<String>) {
    if !tls.case.contains(PACED) {
        let k = |r: &Row| r.deliveries_per_s.unwrap_or(0.0) / 1e3;
        let why = format!(
            "flat out at different rates (plain {:.0}k, TLS {:.0}k deliveries/s)",
            k(plain),
            k(tls)
        );
        return (Some(why.clone()), Some(why));
    }
    let busy = |r: &Row| {
        let v: Vec<f64> = r
            .rounds
            .iter()
            .filter_map(|x| x.cpu.machine_cores)
            .collect();
        crate::row::Spread::of(&v).map(|s| s.median)
    };
    let most = busy(tls).into_iter().chain(busy(plain)).fold(0.0, f64::max);
    let p99 = (most > HEADROOM * cores).then(|| {
        format!("the machine was saturated ({most:.2} of {cores:.0} cores busy, median round)")
    });
    (None, p99)
}

/// One target's cases: the judged with their ratios, the rest with the
/// reason they are not.
#[derive(Default)]
struct Comparison {
    cases: Vec<String>,
    met: Option<bool>,
}

impl Comparison {
    fn add(&mut self, tls: &Row, ratio: Option<crate::row::Spread>, why_not: Option<String>) {
        let Some(s) = ratio else { return };
        let figure = format!("{:.2}x [{:.2}-{:.2}]", s.median, s.min, s.max);
        match why_not {
            None => {
                self.cases.push(format!("{}: {figure}", tls.case));
                self.met = Some(self.met.unwrap_or(true) && s.median <= 1.2);
            }
            Some(why) => self
                .cases
                .push(format!("{}: {figure}, not judged: {why}", tls.case)),
        }
    }

    fn measured(&self) -> String {
        if self.cases.is_empty() {
            "-".into()
        } else {
            self.cases.join("; ")
        }
    }
}

/// What a paced case's label holds (`... all @ 50k events/s`).
const PACED: &str = " @ ";

/// One case of the scenario.
struct Plan {
    label: String,
    watchers: usize,
    /// One in four watches everything, the rest one node each.
    mixed: bool,
    /// Deliveries per second in total, when paced.
    paced: Option<f64>,
}

/// Nodes of the selector-mix case's workload.
const MIXED_NODES: u32 = 100;

fn cases(runner: &Runner<'_>, sizes: &Sizes) -> Vec<Plan> {
    let mut out: Vec<Plan> = sizes
        .watchers
        .iter()
        .map(|&n| Plan {
            label: format!("{n} connections, all"),
            watchers: n,
            mixed: false,
            paced: None,
        })
        .collect();
    if runner.profile.headline_only {
        return out;
    }
    out.push(Plan {
        label: format!("{} connections, selector mix", sizes.mixed),
        watchers: sizes.mixed,
        mixed: true,
        paced: None,
    });
    let n = sizes.paced_watchers;
    out.extend(sizes.rates.iter().map(|&rate| Plan {
        label: format!("{n} connections, all{PACED}{} events/s", rate_label(rate)),
        watchers: n,
        mixed: false,
        paced: Some(rate),
    }));
    out
}

/// A paced rate as a case label: whole thousands as `50k`, any other rate
/// exactly (`250`, `1500`), so that two rates never share a label (the
/// targets pair TLS and plain rows by it).
fn rate_label(rate: f64) -> String {
    let k = rate / 1e3;
    if k >= 1.0 && k.fract() == 0.0 {
        format!("{k}k")
    } else {
        format!("{rate}")
    }
}

/// The HTTP systems: `herald-server-tls` only with `heavy` (a server over
/// TLS is a run of its own, which the main job leaves out for its time).
fn http_systems(heavy: bool) -> Vec<SystemKind> {
    SystemKind::HTTP
        .into_iter()
        .filter(|s| heavy || *s != SystemKind::HeraldHttpTls)
        .collect()
}

/// The systems of a case: etcd's own fan-out only for watchers of
/// everything (it has no selectors), and only where there is an etcd.
fn systems_of(case: &Plan, etcd: bool, heavy: bool) -> Vec<SystemKind> {
    let mut s = http_systems(heavy);
    if etcd && !case.mixed {
        s.push(SystemKind::Etcd);
    }
    s
}

fn filters(case: &Plan) -> Vec<Filter> {
    (0..case.watchers)
        .map(|i| {
            if !case.mixed || i % 4 == 0 {
                Filter::All
            } else {
                Filter::Node(i as u32 % MIXED_NODES)
            }
        })
        .collect()
}

fn workload(case: &Plan, changes: usize) -> Arc<Workload> {
    if case.mixed {
        Workload::build(Shape {
            pods: MIXED_NODES * 10,
            nodes: MIXED_NODES,
            changes,
            move_every: 10,
            payload: 64,
        })
    } else {
        all_match(changes)
    }
}

/// The soft limit on descriptors now.
pub(crate) fn fd_limit() -> u64 {
    rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1_024, |(soft, _)| soft)
}

/// 10,000 connections are 10,000 descriptors in each process: raise the
/// hard limit where the process may (it needs `CAP_SYS_RESOURCE`), then
/// the soft one as far as the hard one allows (the child server inherits
/// it).
pub(crate) fn raise_fd_limit() {
    const WANT: u64 = 65_536;
    if rlimit::setrlimit(rlimit::Resource::NOFILE, WANT, WANT).is_err() {
        let _ = rlimit::increase_nofile_limit(WANT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Round;
    use crate::system::PeerUse;

    /// A row of `system` in `case` whose rounds had these (server µs per
    /// delivery, p99 µs, machine cores busy).
    fn row(case: &str, system: SystemKind, rate: f64, rounds: &[(f64, f64, f64)]) -> Row {
        Row {
            scenario: NAME.into(),
            case: case.into(),
            system: system.name().into(),
            deliveries_per_s: Some(rate),
            rounds: rounds
                .iter()
                .enumerate()
                .map(|(i, &(us, p99, busy))| {
                    let mut r = Round {
                        round: i,
                        p99_us: Some(p99),
                        peer: Some(PeerUse {
                            us_per_delivery: us,
                            ..PeerUse::default()
                        }),
                        ..Round::default()
                    };
                    r.cpu.machine_cores = Some(busy);
                    r
                })
                .collect(),
            ..Row::default()
        }
    }

    #[test]
    fn tls_is_judged_against_plain_only_at_the_same_load_and_with_headroom() {
        let (plain, tls) = (SystemKind::HeraldHttp, SystemKind::HeraldHttpTls);
        let flat = "1000 connections, all";
        let slow = "1000 connections, all @ 10k events/s";
        let busy = "1000 connections, all @ 50k events/s";
        let mut rows = vec![
            // Flat out: TLS twice the CPU, at half the rate; not judged.
            row(flat, plain, 400e3, &[(2.5, 4e6, 2.0), (2.5, 4e6, 2.0)]),
            row(flat, tls, 200e3, &[(5.0, 8e6, 2.0), (5.0, 8e6, 2.0)]),
            // Paced with headroom: both judged.
            row(slow, plain, 10e3, &[(27.0, 40e3, 0.6), (27.0, 40e3, 0.6)]),
            row(slow, tls, 10e3, &[(29.0, 44e3, 0.6), (29.0, 44e3, 0.6)]),
            // Paced, machine saturated: CPU judged, p99 not.
            row(busy, plain, 50e3, &[(17.0, 50e3, 1.6), (17.0, 50e3, 1.6)]),
            row(busy, tls, 50e3, &[(19.0, 150e3, 1.96), (19.0, 150e3, 1.96)]),
        ];
        let t = tls_targets(&rows, 2.0);
        assert_eq!(t[0].met, Some(true), "{}", t[0].measured);
        assert!(
            t[0].measured
                .contains("all: 2.00x [2.00-2.00], not judged: flat out"),
            "{}",
            t[0].measured
        );
        assert_eq!(t[1].met, Some(true), "{}", t[1].measured);
        assert!(
            t[1].measured.contains("10k events/s: 1.10x [1.10-1.10]; "),
            "{}",
            t[1].measured
        );
        assert!(
            t[1].measured
                .contains("50k events/s: 3.00x [3.00-3.00], not judged: the machine was saturated"),
            "{}",
            t[1].measured
        );
        // The same rounds on a machine of 4 cores had headroom: judged.
        let t = tls_targets(&rows, 4.0);
        assert_eq!(t[1].met, Some(false), "{}", t[1].measured);
        // A paced case over 1.2x fails the CPU target.
        rows[3] = row(slow, tls, 10e3, &[(40.0, 44e3, 0.6), (40.0, 44e3, 0.6)]);
        let t = tls_targets(&rows, 2.0);
        assert_eq!(t[0].met, Some(false), "{}", t[0].measured);
        // Only flat-out cases: nothing judged.
        let t = tls_targets(&rows[..2], 2.0);
        assert_eq!((t[0].met, t[1].met), (None, None));
    }

    #[test]
    fn a_paced_rate_under_a_thousand_is_labelled_exactly() {
        assert_eq!(rate_label(250.0), "250");
        assert_eq!(rate_label(999.0), "999");
        assert_eq!(rate_label(1_000.0), "1k");
        assert_eq!(rate_label(50_000.0), "50k");
        // Rates that rounding would merge keep labels of their own.
        assert_eq!(rate_label(1_400.0), "1400");
        assert_eq!(rate_label(1_000.5), "1000.5");
    }
}
