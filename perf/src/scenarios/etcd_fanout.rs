//! etcd-fanout: N watchers of one key prefix fed by a real etcd through
//! Herald (`herald+etcd`), against the same N watchers opened on etcd
//! itself (`etcd` on `--etcd-connections` connections,
//! `etcd-one-connection`), on the same write stream: flat out and paced.
//! Each case starts a fresh etcd of its own (the systems: [`crate::etcd`]).
//!
//! The values are realistic pods ([`crate::pods`]) in the apiserver's
//! protobuf, as a real cluster stores them: Herald decodes each write
//! once (protobuf to the JSON it serves), etcd's watchers get the bytes.
//! `herald+etcd-json` is Herald on the same writes stored as JSON (no
//! protobuf decode), in the same rounds: its ratio column is
//! `herald+etcd` ÷ it, what the decode costs Herald's fan-out.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_kube::Decoder;
use herald_testkit::etcd::etcd_binary;
use serde::Serialize;

use crate::consume::{Pace, RunOpts};
use crate::etcd::{EtcdEnv, run_on, value, value_bytes};
use crate::kind::SystemKind;
use crate::machine::ThreadCpu;
use crate::peers::herald::NODE_FIELD;
use crate::pods::Encoding;
use crate::profile::ProfileName;
use crate::report::{
    self, Headline, Target, fig, find, m, mb, med, median, note, range, ratio, spread, spread_key,
    us,
};
use crate::row::{Metric, Row, Spread};
use crate::runner::{Case, Runner, Size, all_match, spec};
use crate::scenario::Scenario;
use crate::system::Spec;
use crate::workload::{Filter, Workload, pod_name};

/// The scenario's name.
pub const NAME: &str = "etcd-fanout";

/// The longest a run may take (a lost delivery would otherwise hang it).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watcher counts: a flat-out case each and, but in the quick
    /// profile, a paced one.
    pub watchers: Vec<usize>,
    /// Flat out: deliveries in the sizing run (writes = this / watchers,
    /// at least 64), grown to `min_seconds` per system.
    pub deliveries: usize,
    /// Flat out: the most writes a sized run may take.
    pub cap: usize,
    /// Paced: deliveries per second in total (the writer puts this /
    /// watchers per second).
    pub paced_rate: f64,
    /// Paced: seconds.
    pub paced_seconds: f64,
    /// The etcd side.
    pub etcd: EtcdSetup,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// etcd-fanout watcher counts, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub etcd_watchers: Vec<usize>,
    /// etcd-fanout paced cases: deliveries per second in total (the writer
    /// puts this / watchers per second).
    #[arg(long)]
    pub etcd_rate: Option<f64>,
    /// The etcd side's (shared with http-fanout).
    #[command(flatten)]
    pub etcd: EtcdFlags,
}

/// How a case's etcd side is set up: etcd-fanout's, and http-fanout's
/// `etcd` rows'.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EtcdSetup {
    /// Connections etcd's own watchers spread their watches over (one
    /// gRPC stream per watch).
    pub connections: usize,
    /// Puts the writer keeps in flight when flat out.
    pub in_flight: usize,
}

/// `--etcd-connections` and `--etcd-in-flight`: the etcd side's flags,
/// etcd-fanout's and http-fanout's (both declare them, this one struct).
#[derive(Debug, clap::Args)]
pub struct EtcdFlags {
    /// etcd-fanout (and http-fanout's etcd rows): connections the etcd
    /// side spreads its watches over.
    #[arg(long)]
    pub etcd_connections: Option<usize>,
    /// etcd-fanout flat out (and http-fanout's etcd rows): puts the writer
    /// keeps in flight.
    #[arg(long)]
    pub etcd_in_flight: Option<usize>,
}

impl EtcdFlags {
    /// Applies them to `setup`; an error for a count of 0.
    pub fn apply(&self, setup: &mut EtcdSetup) -> anyhow::Result<()> {
        if let Some(c) = self.etcd_connections {
            anyhow::ensure!(c > 0, "--etcd-connections must be at least 1");
            setup.connections = c;
        }
        if let Some(k) = self.etcd_in_flight {
            anyhow::ensure!(k > 0, "--etcd-in-flight must be at least 1");
            setup.in_flight = k;
        }
        Ok(())
    }
}

/// The scenario.
#[derive(Debug)]
pub struct EtcdFanout;

impl Scenario for EtcdFanout {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let default = Sizes {
            watchers: vec![100, 1_000],
            deliveries: 200_000,
            cap: 65_536,
            paced_rate: 50_000.0,
            paced_seconds: 2.0,
            etcd: EtcdSetup {
                connections: 10,
                in_flight: 16,
            },
        };
        match profile {
            ProfileName::Quick => Sizes {
                watchers: vec![1_000],
                ..default
            },
            ProfileName::Default | ProfileName::Full => default,
            ProfileName::Smoke => Sizes {
                watchers: vec![20],
                deliveries: 20_000,
                cap: 4_096,
                paced_rate: 5_000.0,
                paced_seconds: 0.3,
                etcd: EtcdSetup {
                    connections: 2,
                    in_flight: 16,
                },
            },
        }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        crate::scenario::set_counts("--etcd-watchers", flags.etcd_watchers, &mut sizes.watchers)?;
        if let Some(r) = flags.etcd_rate {
            anyhow::ensure!(r > 0.0, "--etcd-rate must be positive");
            sizes.paced_rate = r;
        }
        flags.etcd.apply(&mut sizes.etcd)
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        systems_of(&runner.etcd_systems)
    }

    fn planned(&self, runner: &Runner<'_>, sizes: &Sizes) -> usize {
        cases(runner, sizes).len() * systems_of(&runner.etcd_systems).len()
    }

    /// A fresh etcd per case, the case's rounds on it.
    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let p = &runner.profile;
        let systems = systems_of(&runner.etcd_systems);
        let cases = cases(runner, sizes);
        let skip = |rows: &mut Vec<Row>, case: &Plan, why: &str| {
            for &s in &systems {
                let mut row = Row::skipped(NAME, &case.label, s, why.into());
                row.watchers = case.watchers;
                runner.push(rows, row);
            }
        };
        let bin = match etcd_binary() {
            Ok(bin) => bin,
            Err(e) => {
                for case in &cases {
                    skip(rows, case, &format!("skipped: no etcd here: {e}"));
                }
                return;
            }
        };
        let first = rows.len();
        // What Herald's source does per write, apart (the default and full
        // profiles): decoding one stored value.
        let decode = (!p.headline_only).then(|| {
            (runner.on_start)("etcd-fanout: Herald's decode of a value");
            decode_cost(p.repeat.max(1))
        });
        for case in &cases {
            (runner.on_start)(&format!("etcd-fanout {}: starting etcd", case.label));
            let (etcd, env) =
                match EtcdEnv::start(&bin, sizes.etcd.connections, sizes.etcd.in_flight) {
                    Ok(started) => started,
                    Err(e) => {
                        skip(rows, case, &format!("skipped: etcd did not start: {e:#}"));
                        continue;
                    }
                };
            let n = case.watchers;
            let run = |kind: SystemKind, spec: &Spec, workload: &Arc<Workload>, opts: &RunOpts| {
                run_on(&env, kind, spec, workload, opts)
            };
            let base = RunOpts {
                check_filters: true,
                timeout: RUN_TIMEOUT,
                ..runner.opts()
            };
            match case.paced {
                None => {
                    let cap = sizes.cap.max(1);
                    let base_writes = (sizes.deliveries / n).clamp(64.min(cap), cap);
                    let make = |writes: usize| {
                        (
                            spec(vec![Filter::All; n], false, 1_000, writes + 1),
                            all_match(writes),
                        )
                    };
                    let size = Size::Grown {
                        base: base_writes,
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
                    let writes = ((rate * secs).ceil() as usize).max(2);
                    let spec = spec(vec![Filter::All; n], false, 1_000, writes + 1);
                    let workload = all_match(writes);
                    let opts = RunOpts {
                        pace: Pace::Rate(rate),
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
            drop(env);
            drop(etcd);
        }
        if let Some(Some([pb, json, ratio])) = decode {
            for r in &mut rows[first..] {
                if r.system == SystemKind::HeraldEtcd.name() {
                    r.spread.insert(DECODE_US, pb);
                } else if r.system == SystemKind::HeraldEtcdJson.name() {
                    r.spread.insert(DECODE_US, json);
                    r.spread.insert(DECODE_RATIO, ratio);
                }
            }
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        if rows.is_empty() {
            return String::new();
        }
        tables(rows)
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let mut t = Vec::new();
        targets(rows, &mut t);
        t
    }

    /// 1,000 watchers flat out (else the most watchers flat out), against
    /// >= 20x each etcd row.
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = rows
            .iter()
            .filter(|r| {
                r.scenario == NAME
                    && r.system == "herald+etcd"
                    && r.case.ends_with("flat out")
                    && !r.rounds.is_empty()
            })
            .max_by_key(|r| (r.case == "1000 watchers, flat out", r.watchers))?;
        let case = report::case_rows(rows, NAME, &h.case);
        let etcds: Vec<&&Row> = case
            .iter()
            .filter(|r| r.peer.as_ref().is_some_and(|p| p.connections.is_some()))
            .filter(|r| r.ratio.is_some())
            .collect();
        let at_target = h.case == "1000 watchers, flat out";
        let met = (at_target && !etcds.is_empty()).then(|| {
            etcds
                .iter()
                .all(|r| r.ratio.is_some_and(|q| q.median >= 20.0))
        });
        let mut line = report::headline_of(
            NAME,
            &case,
            "herald+etcd",
            ("M deliveries/s", &|r| spread(r, Metric::DeliveriesPerS, m)),
            (
                if at_target {
                    ">= 20x each etcd row".into()
                } else {
                    "- (target at 1,000 watchers)".into()
                },
                met,
            ),
        )?;
        for (system, _) in &mut line.peers {
            if let Some(r) = case.iter().find(|r| &r.system == system) {
                *system = etcd_system(r);
            }
        }
        Some(line)
    }
}

/// The systems of the scenario among `chosen` (all of them when `chosen`
/// names none).
fn systems_of(chosen: &[SystemKind]) -> Vec<SystemKind> {
    let named: Vec<SystemKind> = SystemKind::ETCD
        .into_iter()
        .filter(|s| chosen.contains(s))
        .collect();
    if named.is_empty() {
        SystemKind::ETCD.to_vec()
    } else {
        named
    }
}

/// One case of the scenario.
struct Plan {
    label: String,
    watchers: usize,
    /// Writes per second, when paced.
    paced: Option<f64>,
}

fn cases(runner: &Runner<'_>, sizes: &Sizes) -> Vec<Plan> {
    let mut out = Vec::new();
    for &n in &sizes.watchers {
        out.push(Plan {
            label: format!("{n} watchers, flat out"),
            watchers: n,
            paced: None,
        });
    }
    if runner.profile.headline_only {
        return out;
    }
    let events = sizes.paced_rate;
    for &n in &sizes.watchers {
        out.push(Plan {
            label: format!("{n} watchers @ {:.0}k events/s", events / 1e3),
            watchers: n,
            paced: Some(events / n as f64),
        });
    }
    out
}

/// etcd-fanout's system column: etcd's own watchers with their
/// connections.
fn etcd_system(r: &Row) -> String {
    match r.peer.as_ref().and_then(|p| p.connections) {
        Some(1) => "etcd, 1 connection".into(),
        Some(c) => format!("etcd, {c} connections"),
        None if r.system == SystemKind::HeraldEtcdJson.name() => "herald+etcd, JSON values".into(),
        None => r.system.clone(),
    }
}

/// The spread key of Herald's decode of one value, µs.
const DECODE_US: &str = "decode_us_per_value";

/// The spread key of protobuf's decode ÷ JSON's, per round.
const DECODE_RATIO: &str = "decode_protobuf_over_json";

/// Herald's decode of one stored value (what its source does per write,
/// once whatever the watchers), µs of the thread's CPU time, protobuf
/// then JSON: the 1,000 values of each encoding decoded over and over for
/// at least a second, the encodings alternating (which goes first too),
/// `rounds` passes each, and protobuf ÷ JSON per round; None if a value
/// would not decode.
fn decode_cost(rounds: usize) -> Option<[Spread; 3]> {
    let decoder = Decoder::new().field(NODE_FIELD);
    let encodings = [Encoding::Protobuf, Encoding::Json];
    let values: Vec<Vec<(String, Vec<u8>)>> = encodings
        .iter()
        .map(|&e| {
            (0..1_000u32)
                .map(|k| {
                    let v = value(e, k).ok()?.with_write(u64::from(k));
                    Some((format!("default/{}", pod_name(k)), v))
                })
                .collect::<Option<_>>()
        })
        .collect::<Option<_>>()?;
    let mut per: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for i in [round % 2, 1 - round % 2] {
            let start = Instant::now();
            let cpu = ThreadCpu::start();
            let mut n = 0u64;
            while start.elapsed() < Duration::from_secs(1) {
                for (key, v) in &values[i] {
                    let object = decoder.decode(key.as_bytes(), v, (n + 2).into()).ok()?;
                    std::hint::black_box(object);
                    n += 1;
                }
            }
            // The thread's CPU time (its wall time where that cannot be
            // read): what other load does to the wall clock stays out.
            let ns = cpu
                .finish()
                .map_or(start.elapsed().as_nanos() as u64, |(_, _, ns)| ns);
            per[i].push(ns as f64 / 1e3 / n as f64);
        }
    }
    let ratios: Vec<f64> = per[0].iter().zip(&per[1]).map(|(p, j)| p / j).collect();
    Some([
        Spread::of(&per[0])?,
        Spread::of(&per[1])?,
        Spread::of(&ratios)?,
    ])
}

/// The line that says what the writes were (and, when measured, what
/// decoding one cost Herald).
fn values_line(rows: &[&Row]) -> String {
    let b = |e: Encoding| value_bytes(e).map_or("?".into(), |n| format!("{n} B"));
    let mut line = format!(
        "Values: a realistic pod per write ({} in protobuf, what the apiserver stores and every row but `herald+etcd, JSON values` is fed; {} as JSON). The ratio column is herald+etcd's rate ÷ the row's, per round.",
        b(Encoding::Protobuf),
        b(Encoding::Json)
    );
    let decode = |s: SystemKind, key: &str| {
        rows.iter()
            .find(|r| r.system == s.name())
            .and_then(|r| r.spread.get(key).copied())
    };
    if let (Some(pb), Some(json), Some(ratio)) = (
        decode(SystemKind::HeraldEtcd, DECODE_US),
        decode(SystemKind::HeraldEtcdJson, DECODE_US),
        decode(SystemKind::HeraldEtcdJson, DECODE_RATIO),
    ) {
        let us = |v: f64| format!("{v:.1} µs");
        let _ = write!(
            line,
            " Herald's source decoding one value (its work per write, once for every watcher; CPU time, {} passes of >= 1 s each, alternating): protobuf {}, JSON {}, protobuf ÷ JSON per round {}.",
            pb.rounds,
            report::range(Some(pb), us),
            report::range(Some(json), us),
            report::range(Some(ratio), |v| format!("{v:.2}x"))
        );
    }
    line.push_str("\n\n");
    line
}

/// etcd-fanout's two tables: flat out (rates) and paced (latency).
fn tables(rows: &[&Row]) -> String {
    let mut out = String::from("### etcd-fanout\n\n");
    out.push_str(&values_line(rows));
    let costs = |r: &Row| {
        let heap = med(r, "heap_peak_bytes").filter(|h| *h > 0.0);
        format!(
            "{} | {} | {} | {} | {} | {}",
            fig(med(r, "server_cores")),
            spread_key(r, "server_us_per_delivery", fig),
            fig(med(r, "server_us_per_write")),
            mb(med(r, "server_rss_bytes")),
            fig(med(r, "harness_cores")),
            mb(heap),
        )
    };
    let flat: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.case.ends_with("flat out"))
        .collect();
    let paced: Vec<&&Row> = rows
        .iter()
        .filter(|r| !r.case.ends_with("flat out"))
        .collect();
    const COSTS: &str =
        "etcd cores | etcd µs/delivery | etcd µs/write | etcd RSS | harness cores | harness heap";
    if !flat.is_empty() {
        let in_flight = flat
            .iter()
            .find_map(|r| r.peer.as_ref())
            .map_or(String::new(), |p| {
                format!(", {} puts in flight", p.in_flight)
            });
        let _ = writeln!(
            out,
            "Flat out (the writer puts as fast as etcd takes them{in_flight}; a run ends when every watcher has every write; latency from the put's send, saturated):\n"
        );
        let _ = writeln!(
            out,
            "| case | system | M deliveries/s | herald+etcd ÷ system, per round | p50 | p99 | {COSTS} | ended | note |"
        );
        let _ = writeln!(out, "|{}", " --- |".repeat(14));
        for r in flat {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.case,
                etcd_system(r),
                spread(r, Metric::DeliveriesPerS, m),
                ratio(r),
                us(med(r, Metric::P50.key())),
                us(med(r, Metric::P99.key())),
                costs(r),
                r.ended,
                note(r)
            );
        }
        out.push('\n');
    }
    if !paced.is_empty() {
        let _ = writeln!(
            out,
            "Paced (the writer puts deliveries/s ÷ watchers per second). Latency from the put's send to receive (an upper bound on commit to receive; the ratio and the target use it); and from the put's return (a lower bound: a delivery before the return counts as 0):\n"
        );
        let _ = writeln!(
            out,
            "| case | system | p50 | p99 | p99.9 | etcd p99 ÷ herald p99, per round | from the return: p50 / p99 | put p50 / p99 | {COSTS} | ended | note |"
        );
        let _ = writeln!(out, "|{}", " --- |".repeat(16));
        for r in paced {
            let mut n = note(r);
            if let Some(p) = &r.peer
                && p.before_ack > 0
            {
                if !n.is_empty() {
                    n.push_str("; ");
                }
                let share = 100.0 * p.before_ack as f64 / p.samples.max(1) as f64;
                let _ = write!(n, "{share:.1}% received before the put returned");
            }
            let puts = r.peer.as_ref().map_or("-".into(), |p| {
                format!("{} / {}", us(p.put_p50_us), us(p.put_p99_us))
            });
            let acked = format!(
                "{} / {}",
                us(med(r, "acked_p50_us")),
                us(med(r, "acked_p99_us"))
            );
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.case,
                etcd_system(r),
                spread(r, Metric::P50, us),
                spread(r, Metric::P99, us),
                spread(r, Metric::P999, us),
                ratio(r),
                acked,
                puts,
                costs(r),
                r.ended,
                n
            );
        }
    }
    out
}

/// etcd-fanout's targets: Herald in front of etcd against etcd's own
/// fan-out.
fn targets(rows: &[Row], t: &mut Vec<Target>) {
    let x = |v: f64| format!("{v:.1}x");
    let clean = |r: &Row| r.violations == 0 && r.ended == 0;
    let case = "1000 watchers, flat out";
    let herald = find(rows, NAME, case, "herald+etcd");
    // Against each of etcd's rows (its connections): judged on the one
    // that does best.
    let etcds: Vec<&Row> = ["etcd", "etcd-one-connection"]
        .iter()
        .filter_map(|s| find(rows, NAME, case, s))
        .filter(|r| r.ratio.is_some())
        .collect();
    t.push(Target {
        goal: "etcd-fanout, 1,000 watchers flat out: herald+etcd >= 20x etcd's own fan-out (per-round ratio, against each etcd row)"
            .into(),
        measured: if etcds.is_empty() {
            "-".into()
        } else {
            etcds
                .iter()
                .map(|r| format!("{}: {}", etcd_system(r), range(r.ratio, x)))
                .collect::<Vec<_>>()
                .join("; ")
        },
        met: (!etcds.is_empty()).then(|| {
            etcds
                .iter()
                .all(|r| r.ratio.is_some_and(|q| q.median >= 20.0) && clean(r))
                && herald.is_some_and(clean)
        }),
    });
    let paced: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.scenario == NAME
                && r.system == "herald+etcd"
                && r.case.contains(" @ ")
                && !r.rounds.is_empty()
        })
        .collect();
    t.push(Target {
        goal: "etcd-fanout, paced: herald+etcd p99 <= 10 ms from etcd commit to receive (measured from the put's send: an upper bound), none ended"
            .into(),
        measured: if paced.is_empty() {
            "-".into()
        } else {
            paced
                .iter()
                .map(|r| format!("{}: p99 {}", r.case, spread(r, Metric::P99, us)))
                .collect::<Vec<_>>()
                .join("; ")
        },
        met: (!paced.is_empty()).then(|| {
            paced
                .iter()
                .all(|r| median(Some(r), Metric::P99).unwrap_or(f64::MAX) <= 10_000.0 && clean(r))
        }),
    });
    let per_write = |system: &str| -> Vec<(usize, f64)> {
        let mut v: Vec<(usize, f64)> = rows
            .iter()
            .filter(|r| {
                r.scenario == NAME
                    && r.system == system
                    && r.case.ends_with("flat out")
                    && !r.rounds.is_empty()
            })
            .filter_map(|r| Some((r.watchers, med(r, "server_us_per_write")?)))
            .collect();
        v.sort_by_key(|p| p.0);
        v
    };
    let spread_of = |v: &[(usize, f64)]| {
        let lo = v.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let hi = v.iter().map(|p| p.1).fold(0.0, f64::max);
        hi / lo
    };
    let say = |v: &[(usize, f64)]| {
        v.iter()
            .map(|(n, us)| format!("{n}: {us:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (h, e) = (per_write("herald+etcd"), per_write("etcd"));
    t.push(Target {
        goal: "etcd-fanout: etcd's CPU per write flat in the watcher count with Herald in front (within 1.5x, flat out)"
            .into(),
        measured: if h.len() >= 2 {
            let mut s = format!(
                "herald+etcd {} µs/write ({:.2}x)",
                say(&h),
                spread_of(&h)
            );
            if e.len() >= 2 {
                let _ = write!(s, "; etcd alone {} µs/write ({:.1}x)", say(&e), spread_of(&e));
            }
            s
        } else {
            "-".into()
        },
        met: (h.len() >= 2).then(|| spread_of(&h) <= 1.5),
    });
}
