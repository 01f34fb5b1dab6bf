//! The report: the cells every scenario's table is made of (figures as
//! median [min-max], ratios, notes), the targets table, the closing
//! headline table and the plots.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::row::{Metric, Round, Row, Spread};

/// Millions, two decimals.
pub fn m(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.2}", v / 1e6))
}

/// Thousands, one decimal.
pub fn k(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}", v / 1e3))
}

/// Microseconds (milliseconds from 10 ms on).
pub fn us(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 10_000.0 => format!("{:.0} ms", v / 1e3),
        Some(v) if v >= 100.0 => format!("{v:.0} µs"),
        Some(v) => format!("{v:.1} µs"),
    }
}

/// `median [min-max]` of a row's figure, each value through `f`; a single
/// round prints its value alone.
pub fn spread(r: &Row, metric: Metric, f: impl Fn(Option<f64>) -> String) -> String {
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
pub fn ratio(r: &Row) -> String {
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
pub fn note(r: &Row) -> String {
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
pub fn busy(r: &Row) -> String {
    match r.busy_threads {
        _ if r.rounds.is_empty() => "-".into(),
        0 => "0".into(),
        n => format!("{n}: {}", r.busy.join(", ")),
    }
}

/// The median over the rounds of a figure kept in a row's `spread` under
/// `key`.
pub fn med(r: &Row, key: &str) -> Option<f64> {
    r.spread.get(key).map(|s| s.median)
}

/// A number to three significant figures or so.
pub fn fig(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// Bytes as MB.
pub fn mb(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100e6 => format!("{:.0} MB", v / 1e6),
        Some(v) => format!("{:.1} MB", v / 1e6),
    }
}

/// `median [min-max]` of a figure kept in a row's `spread` under `key`.
pub fn spread_key(r: &Row, key: &str, f: impl Fn(Option<f64>) -> String) -> String {
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

/// The measured row of `system` in the first case of `scenario` whose
/// label starts with `case_prefix`.
pub fn find<'a>(
    rows: &'a [Row],
    scenario: &str,
    case_prefix: &str,
    system: &str,
) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.scenario == scenario
            && r.case.starts_with(case_prefix)
            && r.system == system
            && !r.note.starts_with("skipped")
            && !r.rounds.is_empty()
    })
}

/// The median of a row's figure over its rounds.
pub fn median(r: Option<&Row>, metric: Metric) -> Option<f64> {
    r?.spread.get(metric.key()).map(|s| s.median)
}

/// `a`'s figure ÷ `b`'s, taken per round (each of `a`'s rounds against
/// `b`'s round of the same number), over the rounds where both have it
/// and it is positive.
pub fn per_round_ratio(a: &Row, b: &Row, get: impl Fn(&Round) -> Option<f64>) -> Option<Spread> {
    let ratios: Vec<f64> = a
        .rounds
        .iter()
        .filter_map(|x| {
            let y = b.rounds.iter().find(|y| y.round == x.round)?;
            Some((get(x)?, get(y)?))
        })
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    Spread::of(&ratios)
}

/// A round's server CPU per delivery (µs), when it has a server.
pub fn server_us_per_delivery(round: &Round) -> Option<f64> {
    round.peer.as_ref().map(|p| p.us_per_delivery)
}

/// `median [min-max]` of a spread, each value through `f`.
pub fn range(s: Option<Spread>, f: impl Fn(f64) -> String) -> String {
    s.map_or("-".into(), |s| {
        format!("{} [{}-{}]", f(s.median), f(s.min), f(s.max))
    })
}

/// One scenario's line in the headline table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Headline {
    /// The scenario.
    pub scenario: &'static str,
    /// The case shown (its size).
    pub case: String,
    /// What the figure is (e.g. "M deliveries/s").
    pub figure: &'static str,
    /// Herald's figure: median [min-max] over the rounds.
    pub herald: String,
    /// Each peer with Herald's advantage over it, taken per round: median
    /// [min-max] (or the peer's figure where no ratio applies).
    pub peers: Vec<(String, String)>,
    /// The target it is judged on ("-": none).
    pub target: String,
    /// Whether the run meets it (None: no target, or not measured).
    pub met: Option<bool>,
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

/// Renders one scenario's rows as a Markdown table: `### name`, the
/// header `head`, a row of `cells` per row.
pub fn table(name: &str, head: &str, rows: &[&Row], cells: impl Fn(&Row) -> String) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(out, "### {name}\n");
    let _ = writeln!(out, "{head}");
    let cols = head.matches('|').count() - 1;
    let _ = writeln!(out, "|{}", " --- |".repeat(cols));
    for r in rows {
        let _ = writeln!(out, "{}", cells(r));
    }
    out
}

/// Herald's per-round advantage over each of `peers` in `rows` (those
/// that ran), for a headline.
pub fn peer_ratios(rows: &[&Row]) -> Vec<(String, String)> {
    rows.iter()
        .filter(|r| !r.note.starts_with("skipped"))
        .map(|r| (r.system.clone(), ratio(r)))
        .collect()
}

/// Renders the headline table: one line per scenario that ran, at its
/// headline case.
pub fn headline_table(lines: &[Headline]) -> String {
    let mut out = String::from(
        "### headline (one case per scenario; median [min-max] over interleaved rounds; Herald's advantage taken per round)\n\n\
         | scenario | case | figure | herald | herald's advantage over each peer, per round | target | met |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for h in lines {
        let peers = if h.peers.is_empty() {
            "-".to_owned()
        } else {
            h.peers
                .iter()
                .map(|(s, r)| format!("{s} {r}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let met = match h.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {peers} | {} | {met} |",
            h.scenario, h.case, h.figure, h.herald, h.target
        );
    }
    out
}

/// The table of a flat-out scenario whose figure is deliveries per second
/// (fanout-all, catch-up).
pub fn rate_table(name: &str, rows: &[&Row]) -> String {
    table(
        name,
        "| case | system | M deliveries/s | herald ÷ system, per round | p99 | busy threads | ended | note |",
        rows,
        |r| {
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
        },
    )
}

/// The table of a paced scenario whose figure is latency (latency,
/// slow-watcher-tax).
pub fn latency_table(name: &str, rows: &[&Row]) -> String {
    table(
        name,
        "| case | system | p50 | p99 | p99.9 | system p99 ÷ herald p99, per round | busy threads | healthy ended | companion ended | note |",
        rows,
        |r| {
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
        },
    )
}

/// The rows of one case of `scenario` (every system's, skipped ones
/// included), Herald's first as run.
pub fn case_rows<'a>(rows: &'a [Row], scenario: &str, case: &str) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.scenario == scenario && r.case == case)
        .collect()
}

/// A headline from one case's rows: Herald's figure (`herald` names its
/// system) through `figure`, every other system's per-round ratio.
pub fn headline_of(
    scenario: &'static str,
    case: &[&Row],
    herald: &str,
    figure: (&'static str, &dyn Fn(&Row) -> String),
    target: (String, Option<bool>),
) -> Option<Headline> {
    let h = case
        .iter()
        .find(|r| r.system == herald && !r.note.starts_with("skipped"))?;
    let others: Vec<&Row> = case
        .iter()
        .copied()
        .filter(|r| r.system != herald)
        .collect();
    Some(Headline {
        scenario,
        case: h.case.clone(),
        figure: figure.0,
        herald: (figure.1)(h),
        peers: peer_ratios(&others),
        target: target.0,
        met: target.1,
    })
}
