//! Tables, targets and plots from a suite's rows.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::scenarios::{Row, ScenarioKind};

use crate::scenarios::{Metric, Spread};

fn m(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.2}", v / 1e6))
}

fn k(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}", v / 1e3))
}

fn us(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 10_000.0 => format!("{:.0} ms", v / 1e3),
        Some(v) if v >= 100.0 => format!("{v:.0} µs"),
        Some(v) => format!("{v:.1} µs"),
    }
}

/// `median [min-max]` of a row's figure, each value through `f`; a single
/// round prints its value alone.
fn spread(r: &Row, metric: Metric, f: impl Fn(Option<f64>) -> String) -> String {
    match r.spread.get(metric.key()) {
        Some(s) if s.rounds > 1 => format!(
            "{} [{}-{}]",
            f(Some(s.median)),
            f(Some(s.min)),
            f(Some(s.max))
        ),
        Some(s) => f(Some(s.median)),
        None => f(None),
    }
}

/// Herald's per-round advantage over the row's system, `median [min-max]`.
fn ratio(r: &Row) -> String {
    let x = |v: f64| {
        if v >= 10.0 {
            format!("{v:.0}x")
        } else {
            format!("{v:.2}x")
        }
    };
    match r.ratio {
        _ if r.system == "herald" => "1.0x".into(),
        Some(s) if s.rounds > 1 => format!("{} [{}-{}]", x(s.median), x(s.min), x(s.max)),
        Some(s) => x(s.median),
        None => "-".into(),
    }
}

/// The note column: the row's note, violations (a rate from a run that
/// broke order or filter is not a result), then noisy and short rounds.
fn note(r: &Row) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !r.note.is_empty() {
        parts.push(r.note.clone());
    }
    if r.violations > 0 {
        parts.push(format!("{} VIOLATIONS: not a result", r.violations));
    }
    let n = r.rounds.len();
    if r.noisy_rounds > 0 {
        parts.push(format!("noisy {}/{n}", r.noisy_rounds));
    }
    if r.short_rounds > 0 {
        parts.push(format!("short {}/{n}", r.short_rounds));
    }
    parts.join("; ")
}

/// The busy-threads column: how many, and which.
fn busy(r: &Row) -> String {
    match r.busy_threads {
        _ if r.rounds.is_empty() => "-".into(),
        0 => "0".into(),
        n => format!("{n}: {}", r.busy.join(", ")),
    }
}

/// Renders one scenario's rows as a Markdown table.
pub fn table(scenario: ScenarioKind, rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario == scenario.name())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    if scenario == ScenarioKind::EtcdFanout {
        return etcd_tables(&rows);
    }
    let mut out = String::new();
    let _ = writeln!(out, "### {}\n", scenario.name());
    type Cells = Box<dyn Fn(&Row) -> String>;
    let (head, cells): (&str, Cells) = match scenario {
        ScenarioKind::FanoutAll | ScenarioKind::CatchUp => (
            "| case | system | M deliveries/s | herald ÷ system, per round | p99 | busy threads | ended | note |",
            Box::new(|r: &Row| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::DeliveriesPerS, m),
                    ratio(r),
                    spread(r, Metric::P99, us),
                    busy(r),
                    r.ended,
                    note(r)
                )
            }),
        ),
        ScenarioKind::FanoutIndexed => (
            "| case | system | k changes/s | ns/change | M useful deliveries/s | herald ÷ system, per round | busy threads | ended | note |",
            Box::new(|r: &Row| {
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
            }),
        ),
        ScenarioKind::SlowWatcherTax | ScenarioKind::Latency => (
            "| case | system | p50 | p99 | p99.9 | system p99 ÷ herald p99, per round | busy threads | healthy ended | companion ended | note |",
            Box::new(|r: &Row| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::P50, us),
                    spread(r, Metric::P99, us),
                    spread(r, Metric::P999, us),
                    ratio(r),
                    busy(r),
                    r.ended,
                    r.companions_ended,
                    note(r)
                )
            }),
        ),
        ScenarioKind::Memory => (
            "| case | system | bytes per idle watcher | system ÷ herald | note |",
            Box::new(|r: &Row| {
                format!(
                    "| {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    r.bytes_per_watcher
                        .map_or("-".into(), |b| format!("{b:.0}")),
                    r.ratio.map_or("-".into(), |s| format!("{:.2}x", s.median)),
                    r.note
                )
            }),
        ),
        ScenarioKind::HttpFanout => (
            "| case | system | M deliveries/s | herald-http ÷ system, per round | p50 | p99 | server µs CPU per delivery | server cores | heap per connection (server's) | busy threads | ended | note |",
            Box::new(|r: &Row| {
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
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread(r, Metric::DeliveriesPerS, m),
                    ratio(r),
                    spread(r, Metric::P50, us),
                    spread(r, Metric::P99, us),
                    spread_key(r, "server_us_per_delivery", fig),
                    fig(med(r, "server_cores")),
                    heap,
                    busy(r),
                    r.ended,
                    note(r)
                )
            }),
        ),
        ScenarioKind::Kubelet => (
            "| case | system | changes absorbed/s | herald ÷ system, per round | manager µs CPU per change | get p50 / p99, start-up | get p50 / p99, churn | start-up | pods replaced/s | heap | watches open | threads | note |",
            Box::new(|r: &Row| {
                format!(
                    "| {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    spread_key(r, "changes_per_s", |v| v
                        .map_or("-".into(), |v| format!("{:.2} M", v / 1e6))),
                    match r.ratio {
                        _ if r.system == "herald-kubelet" => "1.0x".into(),
                        Some(_) => ratio(r),
                        None => "-".into(),
                    },
                    spread_key(r, "manager_us_per_change", fig),
                    spread_key(r, "startup_get_p50_us", us),
                    spread_key(r, "startup_get_p99_us", us),
                    spread_key(r, "get_p50_us", us),
                    spread_key(r, "get_p99_us", us),
                    spread_key(r, "startup_s", |v| v
                        .map_or("-".into(), |v| format!("{v:.2} s"))),
                    spread_key(r, "pods_per_s", |v| v
                        .map_or("-".into(), |v| format!("{v:.0}"))),
                    spread_key(r, "heap_bytes", mb),
                    fig(med(r, "watches_open")),
                    fig(med(r, "threads")),
                    note(r)
                )
            }),
        ),
        ScenarioKind::EtcdFanout => unreachable!("rendered by etcd_tables"),
    };
    let _ = writeln!(out, "{head}");
    let cols = head.matches('|').count() - 1;
    let _ = writeln!(out, "|{}", " --- |".repeat(cols));
    for r in &rows {
        let _ = writeln!(out, "{}", cells(r));
    }
    out
}

/// The median over the rounds of a figure kept in a row's `spread` under
/// `key`.
fn med(r: &Row, key: &str) -> Option<f64> {
    r.spread.get(key).map(|s| s.median)
}

/// A number to three significant figures or so.
fn fig(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// Bytes as MB.
fn mb(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100e6 => format!("{:.0} MB", v / 1e6),
        Some(v) => format!("{:.1} MB", v / 1e6),
    }
}

/// etcd-fanout's system column: etcd's own watchers with their
/// connections.
fn etcd_system(r: &Row) -> String {
    match r.peer.as_ref().and_then(|p| p.connections) {
        Some(1) => "etcd, 1 connection".into(),
        Some(c) => format!("etcd, {c} connections"),
        None => r.system.clone(),
    }
}

/// etcd-fanout's two tables: flat out (rates) and paced (latency).
fn etcd_tables(rows: &[&Row]) -> String {
    let mut out = String::from("### etcd-fanout\n\n");
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
            "| case | system | M deliveries/s | herald ÷ etcd, per round | p50 | p99 | {COSTS} | ended | note |"
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

/// `median [min-max]` of a figure kept in a row's `spread` under `key`.
fn spread_key(r: &Row, key: &str, f: impl Fn(Option<f64>) -> String) -> String {
    match r.spread.get(key) {
        Some(s) if s.rounds > 1 => format!(
            "{} [{}-{}]",
            f(Some(s.median)),
            f(Some(s.min)),
            f(Some(s.max))
        ),
        Some(s) => f(Some(s.median)),
        None => f(None),
    }
}

/// One target of the issue, checked against a run.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// What is promised.
    pub goal: String,
    /// What was measured.
    pub measured: String,
    /// Whether the run meets it, judged on the median round (None: not
    /// measured in this run).
    pub met: Option<bool>,
}

fn find<'a>(rows: &'a [Row], scenario: &str, case_prefix: &str, system: &str) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.scenario == scenario
            && r.case.starts_with(case_prefix)
            && r.system == system
            && !r.note.starts_with("skipped")
            && !r.rounds.is_empty()
    })
}

fn median(r: Option<&Row>, metric: Metric) -> Option<f64> {
    r?.spread.get(metric.key()).map(|s| s.median)
}

fn range(s: Option<Spread>, f: impl Fn(f64) -> String) -> String {
    s.map_or("-".into(), |s| {
        format!("{} [{}-{}]", f(s.median), f(s.min), f(s.max))
    })
}

/// Checks the targets against `rows`: each on the median round
/// (ratios: the median of the per-round ratios).
pub fn targets(rows: &[Row]) -> Vec<Target> {
    let mut t = Vec::new();
    let x = |v: f64| format!("{v:.2}x");
    for (peer, factor) in [
        ("disruptor", 0.6),
        ("tokio-broadcast", 2.0),
        ("reference-port", 20.0),
    ] {
        let r = find(rows, "fanout-all", "1000 watchers", peer).and_then(|r| r.ratio);
        t.push(Target {
            goal: format!("fanout-all, 1,000 watchers: >= {factor}x {peer} (per-round ratio)"),
            measured: range(r, x),
            met: r.map(|r| r.median >= factor),
        });
    }
    let paced = find(rows, "fanout-all", "1000 watchers paced", "herald");
    t.push(Target {
        goal: "fanout-all, 1,000 watchers at 66k changes/s: p99 <= 1 ms, none ended".into(),
        measured: paced.map_or("-".into(), |r| {
            format!("p99 {}, {} ended", spread(r, Metric::P99, us), r.ended)
        }),
        met: paced
            .map(|r| median(Some(r), Metric::P99).unwrap_or(f64::MAX) <= 1_000.0 && r.ended == 0),
    });
    let lat = find(rows, "latency", "", "herald");
    t.push(Target {
        goal: "latency, 10k changes/s to 1,000 watchers: p50 <= 100 µs and p99 <= 1 ms".into(),
        measured: lat.map_or("-".into(), |r| {
            format!(
                "p50 {}, p99 {}",
                spread(r, Metric::P50, us),
                spread(r, Metric::P99, us)
            )
        }),
        met: lat.map(|r| {
            median(Some(r), Metric::P50).unwrap_or(f64::MAX) <= 100.0
                && median(Some(r), Metric::P99).unwrap_or(f64::MAX) <= 1_000.0
                && r.ended == 0
        }),
    });
    let dis = find(rows, "latency", "", "disruptor");
    t.push(Target {
        goal: "latency: Herald's p99 <= disruptor's in >= 4 of 5 rounds".into(),
        measured: dis.map_or("-".into(), |r| {
            let wins = r.ratio_rounds.iter().filter(|v| **v >= 1.0).count();
            format!("{wins} of {} rounds", r.ratio_rounds.len())
        }),
        met: dis.map(|r| {
            let wins = r.ratio_rounds.iter().filter(|v| **v >= 1.0).count();
            !r.ratio_rounds.is_empty() && wins * 5 >= r.ratio_rounds.len() * 4
        }),
    });
    let per_change: Vec<(usize, f64)> = rows
        .iter()
        .filter(|r| {
            r.scenario == "fanout-indexed"
                && r.system == "herald"
                && r.case.ends_with("nodes indexed")
        })
        .filter_map(|r| Some((r.watchers, 1e9 / median(Some(r), Metric::ChangesPerS)?)))
        .collect();
    if per_change.len() >= 2 {
        let lo = per_change.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let hi = per_change.iter().map(|p| p.1).fold(0.0, f64::max);
        t.push(Target {
            goal: "fanout-indexed: per-change cost flat within 1.5x from 1k to 100k nodes".into(),
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
    let big = rows
        .iter()
        .filter(|r| {
            r.scenario == "fanout-indexed"
                && r.system == "reference-port"
                && r.case.ends_with("nodes indexed")
        })
        .max_by_key(|r| r.watchers);
    if let Some(big) = big {
        t.push(Target {
            goal: format!(
                "fanout-indexed, {}: >= 5x the reference port (per-round ratio)",
                big.case
            ),
            measured: range(big.ratio, x),
            met: big.ratio.map(|r| r.median >= 5.0),
        });
    }
    let un = rows.iter().find(|r| {
        r.scenario == "fanout-indexed" && r.system == "herald" && r.case.ends_with("unindexed")
    });
    t.push(Target {
        goal: "fanout-indexed: unindexed field selector, 1,000 watchers: >= 68k changes/s".into(),
        measured: un.map_or("-".into(), |r| {
            spread(r, Metric::ChangesPerS, k) + "k changes/s"
        }),
        met: median(un, Metric::ChangesPerS).map(|v| v >= 68e3),
    });
    let tax: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario == "slow-watcher-tax" && r.system == "herald")
        .collect();
    if !tax.is_empty() {
        let mut worst = 0.0f64;
        let mut ended = 0;
        for r in &tax {
            ended += r.ended;
            let (case, rate) = r.case.split_once(" @ ").unwrap_or((&r.case, ""));
            let base_case = if case.ends_with("-1000") {
                "baseline-1000"
            } else {
                "baseline"
            };
            if let Some(b) = tax
                .iter()
                .find(|b| b.case == format!("{base_case} @ {rate}"))
                && let (Some(p), Some(bp)) =
                    (median(Some(r), Metric::P99), median(Some(b), Metric::P99))
            {
                worst = worst.max(p / bp);
            }
        }
        t.push(Target {
            goal: "slow-watcher-tax: healthy p99 with a stalled companion within 1.1x of baseline; no healthy watcher ends".into(),
            measured: format!("worst {worst:.2}x of baseline (medians); {ended} healthy ended"),
            met: Some(worst <= 1.1 && ended == 0),
        });
    }
    for (case, goal, limit) in [
        (
            crate::scenarios::MEMORY_ALL,
            "memory: <= 320 B per idle watcher of everything",
            320.0,
        ),
        (
            crate::scenarios::MEMORY_BY_NODE,
            "memory: <= 512 B per idle indexed watcher",
            512.0,
        ),
    ] {
        let mem = rows
            .iter()
            .find(|r| r.scenario == "memory" && r.case.starts_with(case) && r.system == "herald")
            .and_then(|r| r.bytes_per_watcher);
        t.push(Target {
            goal: goal.into(),
            measured: mem.map_or("-".into(), |b| format!("{b:.0} B")),
            met: mem.map(|b| b <= limit),
        });
    }
    etcd_targets(rows, &mut t);
    t
}

/// etcd-fanout's targets: Herald in front of etcd against etcd's own
/// fan-out.
fn etcd_targets(rows: &[Row], t: &mut Vec<Target>) {
    let x = |v: f64| format!("{v:.1}x");
    let clean = |r: &Row| r.violations == 0 && r.ended == 0;
    let case = "1000 watchers, flat out";
    let herald = find(rows, "etcd-fanout", case, "herald+etcd");
    // Against each of etcd's rows (its connections): judged on the one
    // that does best.
    let etcds: Vec<&Row> = ["etcd", "etcd-one-connection"]
        .iter()
        .filter_map(|s| find(rows, "etcd-fanout", case, s))
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
            r.scenario == "etcd-fanout"
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
                r.scenario == "etcd-fanout"
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

/// Renders the targets as a Markdown table.
pub fn targets_table(targets: &[Target]) -> String {
    let mut out = String::from(
        "### targets (judged on the median round)\n\n| target | measured: median [min-max] | met |\n| --- | --- | --- |\n",
    );
    for t in targets {
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "not run",
        };
        let _ = writeln!(out, "| {} | {} | {} |", t.goal, t.measured, met);
    }
    out
}

/// Writes the plots for `rows` into `dir` (SVG), returning the files made.
pub fn plots(rows: &[Row], dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir)?;
    let mut made = Vec::new();
    let systems: Vec<String> = {
        let mut s: Vec<String> = rows.iter().map(|r| r.system.clone()).collect();
        s.dedup();
        let mut seen = Vec::new();
        for x in s {
            if !seen.contains(&x) {
                seen.push(x);
            }
        }
        seen
    };
    let colour = |i: usize| Palette99::pick(i).to_rgba();

    // Deliveries/s against watcher count (fanout-all, flat out).
    // (watchers, median, min, max) per system: the median round, and the
    // rounds' range as a whisker.
    type Points = Vec<(f64, f64, f64, f64)>;
    let series: Vec<(String, Points)> = systems
        .iter()
        .map(|s| {
            let pts = rows
                .iter()
                .filter(|r| {
                    r.scenario == "fanout-all" && &r.system == s && r.case.ends_with(" watchers")
                })
                .filter_map(|r| {
                    let s = r.spread.get(Metric::DeliveriesPerS.key())?;
                    Some((r.watchers as f64, s.median / 1e6, s.min / 1e6, s.max / 1e6))
                })
                .collect();
            (s.clone(), pts)
        })
        .filter(|(_, p): &(String, Vec<(f64, f64, f64, f64)>)| !p.is_empty())
        .collect();
    if !series.is_empty() {
        let path = dir.join("fanout-all.svg");
        {
            let root = SVGBackend::new(&path, (800, 500)).into_drawing_area();
            root.fill(&WHITE)?;
            let xmax = series
                .iter()
                .flat_map(|s| s.1.iter().map(|p| p.0))
                .fold(10.0, f64::max);
            let ymax = series
                .iter()
                .flat_map(|s| s.1.iter().map(|p| p.3))
                .fold(1.0, f64::max);
            let ymin = series
                .iter()
                .flat_map(|s| s.1.iter().map(|p| p.2))
                .fold(ymax, f64::min)
                .max(1e-3);
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    "fanout-all: deliveries/s against watchers (median round, whiskers: min-max)",
                    ("sans-serif", 18),
                )
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(
                    (5.0..xmax * 2.0).log_scale(),
                    (ymin / 2.0..ymax * 2.0).log_scale(),
                )?;
            chart
                .configure_mesh()
                .x_desc("watchers")
                .y_desc("M deliveries/s")
                .draw()?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let c = colour(i);
                let medians: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
                chart
                    .draw_series(LineSeries::new(medians.clone(), c.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                chart.draw_series(medians.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
                chart.draw_series(pts.iter().map(|&(x, median, min, max)| {
                    ErrorBar::new_vertical(x, min, median, max, c.stroke_width(1), 6)
                }))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
            root.present()?;
        }
        made.push(path);
    }

    // Latency percentiles (the latency scenario), on a "nines" axis.
    let lat: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario == "latency" && r.p50_us.is_some())
        .collect();
    if !lat.is_empty() {
        let path = dir.join("latency.svg");
        {
            let root = SVGBackend::new(&path, (800, 500)).into_drawing_area();
            root.fill(&WHITE)?;
            let ymax = lat
                .iter()
                .flat_map(|r| r.latency_curve.iter().map(|p| p.1))
                .fold(10.0, f64::max);
            let ymin = lat
                .iter()
                .filter_map(|r| r.p50_us)
                .fold(ymax, f64::min)
                .max(0.1);
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("latency: publish to receive, {}", lat[0].case),
                    ("sans-serif", 18),
                )
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..4.2f64, (ymin / 2.0..ymax * 2.0).log_scale())?;
            chart
                .configure_mesh()
                .x_desc("nines: 0.3 = p50, 1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99")
                .y_desc("µs")
                .draw()?;
            for (i, r) in lat.iter().enumerate() {
                let c = colour(systems.iter().position(|s| s == &r.system).unwrap_or(i));
                let pts = r.latency_curve.clone();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                    .label(r.system.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
            root.present()?;
        }
        made.push(path);
    }
    Ok(made)
}
