//! apiserver-fanout: N watch connections on the real kube-apiserver
//! (`kube-apiserver`) against the same N on herald-server in front of it
//! (`herald+apiserver`), N = 100, 1,000 and 10,000 (the default profile),
//! on the same writes through the apiserver at a fixed rate. The systems
//! and how each is read: [`crate::apiserver`].
//!
//! Per row: deliveries per second, write-to-client latency (from the
//! write's send), the watched server's CPU per delivery and its resident
//! memory per watcher, and the apiserver's CPU per write, cores, Go heap
//! and the pod watches it serves. With Herald in front, the apiserver
//! serves one watch whatever N is, so its CPU per write should not grow
//! with N; the targets ask that (within 1.5x from the fewest watchers to
//! the most), Herald's CPU per delivery at most a tenth of the
//! apiserver's, and Herald's p99 at most a fifth of the apiserver's at
//! every N where the apiserver ended no watcher.
//!
//! An apiserver start takes tens of seconds on 2 cores and the largest
//! case opens 10,000 TLS connections per round: the quick and smoke
//! profiles run this scenario only when it is named.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::apiserver::{ApiEnv, Behind, Direct, KEYS};
use crate::consume::{self, Pace, RunOpts};
use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{
    self, Headline, Target, fig, find, mb, med, note, ratio, spread, spread_key, us,
};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, spec};
use crate::scenario::Scenario;
use crate::servers::Binaries;
use crate::system::Spec;
use crate::workload::{Filter, Shape, Workload};

/// The scenario's name.
pub const NAME: &str = "apiserver-fanout";

/// Herald first: ratios are the apiserver's ÷ Herald's.
const SYSTEMS: [SystemKind; 2] = SystemKind::APISERVER;

/// The most watch connections a case may ask for.
const MAX_WATCHERS: usize = 1_000_000;

/// The highest write rate it may be asked for (writes/s).
const MAX_RATE: f64 = 1_000.0;

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watch connections, a case each (each case runs them on the
    /// apiserver and on Herald in front of it).
    pub watchers: Vec<usize>,
    /// Writes per second through the apiserver, the same at every N.
    pub rate: f64,
    /// Seconds of writes per run.
    pub seconds: f64,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// apiserver-fanout: watch connections per case, comma-separated
    /// (default: 100,1000,10000).
    #[arg(long, value_delimiter = ',')]
    pub apiserver_watchers: Option<Vec<usize>>,
    /// apiserver-fanout: writes per second through the apiserver (default:
    /// 3).
    #[arg(long)]
    pub apiserver_rate: Option<f64>,
}

/// The scenario.
#[derive(Debug)]
pub struct ApiserverFanout;

fn label(n: usize, rate: f64) -> String {
    format!("{n} watchers @ {rate:.0} writes/s")
}

impl Scenario for ApiserverFanout {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        match profile {
            ProfileName::Quick | ProfileName::Default | ProfileName::Full => Sizes {
                watchers: vec![100, 1_000, 10_000],
                // A rate the apiserver takes at 10,000 watchers on 2 cores
                // (it took 3.2-3.4 writes/s there when offered 10).
                rate: 3.0,
                seconds: 10.0,
            },
            ProfileName::Smoke => Sizes {
                watchers: vec![20],
                rate: 20.0,
                seconds: 1.0,
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        if let Some(ns) = flags.apiserver_watchers {
            anyhow::ensure!(
                !ns.is_empty() && ns.iter().all(|&n| (1..=MAX_WATCHERS).contains(&n)),
                "--apiserver-watchers must list counts from 1 to {MAX_WATCHERS} (each a connection, and a descriptor in each process)"
            );
            sizes.watchers = ns;
        }
        if let Some(r) = flags.apiserver_rate {
            anyhow::ensure!(
                r.is_finite() && r > 0.0 && r <= MAX_RATE,
                "--apiserver-rate must be above 0 and at most {MAX_RATE} writes/s (they go through the apiserver one at a time)"
            );
            sizes.rate = r;
        }
        Ok(())
    }

    fn heavy(&self) -> bool {
        true
    }

    fn systems(&self, _runner: &Runner<'_>) -> Vec<SystemKind> {
        SYSTEMS.to_vec()
    }

    fn planned(&self, _runner: &Runner<'_>, sizes: &Sizes) -> usize {
        sizes.watchers.len() * SYSTEMS.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let (rate, secs) = (sizes.rate, sizes.seconds);
        let skip = |rows: &mut Vec<Row>, why: &str| {
            for &n in &sizes.watchers {
                for &s in &SYSTEMS {
                    let mut row = Row::skipped(NAME, &label(n, rate), s, why.into());
                    row.watchers = n;
                    runner.push(rows, row);
                }
            }
        };
        crate::scenarios::http_fanout::raise_fd_limit();
        (runner.on_start)("apiserver-fanout: starting etcd, kube-apiserver and herald-server");
        let env = match Binaries::find().and_then(|bins| ApiEnv::start(&bins)) {
            Ok(env) => env,
            Err(e) => return skip(rows, &format!("skipped: {e:#}")),
        };
        let writes = ((rate * secs).ceil() as usize).max(2);
        let workload = Workload::build(Shape {
            pods: KEYS,
            nodes: 1,
            changes: writes,
            move_every: 0,
            payload: 64,
        });
        let limit = crate::scenarios::http_fanout::fd_limit();
        for &n in &sizes.watchers {
            let case = label(n, rate);
            let needed = n as u64 + 1_024;
            if limit < needed {
                let why = format!(
                    "skipped: {n} connections need about {needed} descriptors; the limit is {limit} (RLIMIT_NOFILE, which may not be raised here)"
                );
                for &s in &SYSTEMS {
                    let mut row = Row::skipped(NAME, &case, s, why.clone());
                    row.watchers = n;
                    runner.push(rows, row);
                }
                continue;
            }
            let spec = spec(vec![Filter::All; n], false, 1_000, writes + 1);
            let opts = RunOpts {
                pace: Pace::Rate(rate),
                sample_every: 1,
                check_filters: true,
                timeout: Duration::from_secs(180),
                ..runner.opts()
            };
            let run = |kind: SystemKind, spec: &Spec, workload: &Arc<Workload>, opts: &RunOpts| {
                match kind {
                    SystemKind::KubeApiserver => {
                        consume::run(&Direct(env.clone()), spec, workload, opts)
                    }
                    SystemKind::HeraldApiserver => {
                        consume::run(&Behind(env.clone()), spec, workload, opts)
                    }
                    other => anyhow::bail!("{} is not an apiserver-fanout system", other.name()),
                }
            };
            runner.case(
                rows,
                Case {
                    run: &run,
                    ..Case::new(NAME, &case, &SYSTEMS, Size::Fixed(&spec, &workload), &opts)
                },
            );
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        if rows.is_empty() {
            return String::new();
        }
        let mut out = report::table(
            NAME,
            "| case | system | writes/s taken | deliveries/s | p50 | p99 | system's p99 ÷ herald+apiserver's, per round | server CPU µs per delivery | herald+apiserver's ÷ system's, per round | apiserver CPU µs per write | that above its idle rate | apiserver cores (idle before the run) | apiserver Go heap (after GC) | apiserver heap per watcher | server resident per watcher | pod watches the apiserver serves (besides its own) | ended | note |",
            rows,
            |r| {
                let kib =
                    |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1} KiB", v / 1024.0));
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::ChangesPerS, fig),
                    spread(r, Metric::DeliveriesPerS, fig),
                    spread(r, Metric::P50, us),
                    spread(r, Metric::P99, us),
                    ratio(r),
                    spread_key(r, "server_us_per_delivery", fig),
                    cpu_ratio(rows, r),
                    spread_key(r, "apiserver_us_per_write", fig),
                    spread_key(r, "apiserver_us_per_write_above_idle", fig),
                    fig(med(r, "apiserver_cores")),
                    fig(med(r, "apiserver_idle_cores")),
                    mb(med(r, "apiserver_heap_bytes")),
                    kib(med(r, "apiserver_heap_per_watcher")),
                    kib(med(r, "server_bytes_per_connection")),
                    fig(med(r, "apiserver_watches")),
                    r.ended,
                    note(r)
                )
            },
        );
        let _ = writeln!(
            out,
            "\nThe same writes at every N: JSON merge patches of {KEYS} realistic pods' annotations through the apiserver, one at a time. Watchers: one HTTP/1.1 connection each, every pod from the current version; TLS with a token on the apiserver, plain HTTP on Herald. CPU: each process's own (`schedstat`), over the run; the harness's clients are not in it."
        );
        out
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        targets(rows)
    }

    /// The case nearest 1,000 watchers: Herald's p99 against the
    /// apiserver's.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = rows
            .iter()
            .filter(|r| {
                r.scenario == NAME
                    && r.system == SystemKind::HeraldApiserver.name()
                    && !r.rounds.is_empty()
            })
            .min_by_key(|r| r.watchers.abs_diff(1_000))?;
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &h.case),
            SystemKind::HeraldApiserver.name(),
            ("p99 write to client", &|r| spread(r, Metric::P99, us)),
            ("p99 <= 1/5 of the apiserver's (ratio >= 5x)".into(), {
                let api = find(rows, NAME, &h.case, SystemKind::KubeApiserver.name());
                api.and_then(|a| a.ratio).map(|q| q.median >= 5.0)
            }),
        )
    }
}

/// The row's server CPU per delivery as herald+apiserver's ÷ the row's,
/// taken per round (1.0x on Herald's own row).
fn cpu_ratio(rows: &[&Row], r: &Row) -> String {
    let herald = SystemKind::HeraldApiserver.name();
    if r.system == herald {
        return "1.0x".into();
    }
    let Some(h) = rows
        .iter()
        .find(|h| h.case == r.case && h.system == herald && !h.rounds.is_empty())
    else {
        return "-".into();
    };
    report::range(
        report::per_round_ratio(h, r, report::server_us_per_delivery),
        |v| format!("{v:.3}x"),
    )
}

fn targets(rows: &[Row]) -> Vec<Target> {
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario == NAME && !r.rounds.is_empty())
        .collect();
    let of = |system: SystemKind| -> Vec<&Row> {
        let mut v: Vec<&Row> = mine
            .iter()
            .copied()
            .filter(|r| r.system == system.name())
            .collect();
        v.sort_by_key(|r| r.watchers);
        v
    };
    let heralds = of(SystemKind::HeraldApiserver);
    let apis = of(SystemKind::KubeApiserver);
    let mut t = Vec::new();
    // The apiserver's CPU per write behind Herald, most watchers ÷ fewest.
    let flat = match (heralds.first(), heralds.last()) {
        (Some(a), Some(b)) if a.watchers < b.watchers => {
            let (x, y) = (
                a.spread.get("apiserver_us_per_write"),
                b.spread.get("apiserver_us_per_write"),
            );
            x.zip(y).map(|(x, y)| {
                (
                    format!(
                        "{:.2}x ({} watchers: {:.0} µs [{:.0}-{:.0}]; {}: {:.0} µs [{:.0}-{:.0}])",
                        y.median / x.median,
                        a.watchers,
                        x.median,
                        x.min,
                        x.max,
                        b.watchers,
                        y.median,
                        y.min,
                        y.max
                    ),
                    y.median / x.median <= 1.5,
                )
            })
        }
        _ => None,
    };
    t.push(Target {
        goal: "apiserver-fanout: with Herald in front, the apiserver's CPU per write grows at most 1.5x from the fewest watchers to the most".into(),
        measured: flat.as_ref().map_or("-".into(), |(m, _)| m.clone()),
        met: flat.map(|(_, ok)| ok),
    });
    // Herald's CPU per delivery ÷ the apiserver's, and the p99 ratio, at
    // each N.
    let mut cpu: Vec<String> = Vec::new();
    let mut cpu_ok: Option<bool> = None;
    let mut p99: Vec<String> = Vec::new();
    let mut p99_ok: Option<bool> = None;
    for h in &heralds {
        let Some(a) = apis.iter().find(|a| a.case == h.case) else {
            continue;
        };
        if let Some(s) = report::per_round_ratio(h, a, report::server_us_per_delivery) {
            cpu.push(format!(
                "{}: {:.3}x [{:.3}-{:.3}]",
                h.watchers, s.median, s.min, s.max
            ));
            cpu_ok = Some(cpu_ok.unwrap_or(true) && s.median <= 0.1);
        }
        if a.ended > 0 {
            p99.push(format!(
                "{}: the apiserver ended {} watcher(s)",
                h.watchers, a.ended
            ));
        } else if let Some(q) = a.ratio {
            p99.push(format!(
                "{}: {:.1}x [{:.1}-{:.1}]",
                h.watchers, q.median, q.min, q.max
            ));
            p99_ok = Some(p99_ok.unwrap_or(true) && q.median >= 5.0);
        }
    }
    let join = |v: Vec<String>| {
        if v.is_empty() {
            "-".into()
        } else {
            v.join("; ")
        }
    };
    t.push(Target {
        goal: "apiserver-fanout: Herald's CPU per delivery <= 1/10 of the apiserver's, at every N (per-round ratio)".into(),
        measured: join(cpu),
        met: cpu_ok,
    });
    t.push(Target {
        goal: "apiserver-fanout: the apiserver's p99 >= 5x Herald's, at every N where it ends no watcher (per-round ratio)".into(),
        measured: join(p99),
        met: p99_ok,
    });
    t
}
