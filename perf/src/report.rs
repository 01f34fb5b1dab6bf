//! Tables, targets and plots from a suite's rows.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::scenarios::{Row, ScenarioKind};

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

fn ratio(herald: Option<f64>, other: Option<f64>, higher_is_better: bool) -> String {
    match (herald, other) {
        (Some(h), Some(o)) if h > 0.0 && o > 0.0 => {
            let r = if higher_is_better { h / o } else { o / h };
            format!("{r:.1}x")
        }
        _ => "-".into(),
    }
}

fn herald_row<'a>(rows: &'a [Row], case: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.case == case && r.system == "herald")
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
    let owned: Vec<Row> = rows.iter().map(|r| (*r).clone()).collect();
    let mut out = String::new();
    let _ = writeln!(out, "### {}\n", scenario.name());
    type Cells<'a> = Box<dyn Fn(&Row) -> String + 'a>;
    let (head, cells): (&str, Cells<'_>) = match scenario {
        ScenarioKind::FanoutAll | ScenarioKind::CatchUp => (
            "| case | system | M deliveries/s | p50 | p99 | ended | herald ÷ system | note |",
            Box::new(|r: &Row| {
                let h = herald_row(&owned, &r.case).and_then(|h| h.deliveries_per_s);
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    m(r.deliveries_per_s),
                    us(r.p50_us),
                    us(r.p99_us),
                    r.ended,
                    ratio(h, r.deliveries_per_s, true),
                    r.note
                )
            }),
        ),
        ScenarioKind::FanoutIndexed => (
            "| case | system | M useful deliveries/s | k changes/s | ns/change | ended | herald ÷ system | note |",
            Box::new(|r: &Row| {
                let h = herald_row(&owned, &r.case).and_then(|h| h.changes_per_s);
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    m(r.deliveries_per_s),
                    k(r.changes_per_s),
                    r.changes_per_s
                        .map_or("-".into(), |c| format!("{:.0}", 1e9 / c)),
                    r.ended,
                    ratio(h, r.changes_per_s, true),
                    r.note
                )
            }),
        ),
        ScenarioKind::SlowWatcherTax | ScenarioKind::Latency => (
            "| case | system | p50 | p99 | p99.9 | healthy ended | companion ended | note |",
            Box::new(|r: &Row| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    us(r.p50_us),
                    us(r.p99_us),
                    us(r.p999_us),
                    r.ended,
                    r.companions_ended,
                    r.note
                )
            }),
        ),
        ScenarioKind::Memory => (
            "| case | system | bytes per idle watcher | system ÷ herald | note |",
            Box::new(|r: &Row| {
                let h = herald_row(&owned, &r.case).and_then(|h| h.bytes_per_watcher);
                format!(
                    "| {} | {} | {} | {} | {} |",
                    r.case,
                    r.system,
                    r.bytes_per_watcher
                        .map_or("-".into(), |b| format!("{b:.0}")),
                    ratio(h, r.bytes_per_watcher, false),
                    r.note
                )
            }),
        ),
    };
    let _ = writeln!(out, "{head}");
    let cols = head.matches('|').count() - 1;
    let _ = writeln!(out, "|{}", " --- |".repeat(cols));
    for r in &rows {
        let _ = writeln!(out, "{}", cells(r));
    }
    out
}

/// One target of the issue, checked against a run.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// What is promised.
    pub goal: String,
    /// What was measured.
    pub measured: String,
    /// Whether the run meets it (None: not measured in this run).
    pub met: Option<bool>,
}

fn find<'a>(rows: &'a [Row], scenario: &str, case_prefix: &str, system: &str) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.scenario == scenario
            && r.case.starts_with(case_prefix)
            && r.system == system
            && r.note.is_empty()
    })
}

/// Checks the targets against `rows`.
pub fn targets(rows: &[Row]) -> Vec<Target> {
    let mut t = Vec::new();
    let dps = |r: Option<&Row>| r.and_then(|r| r.deliveries_per_s);
    let h = find(rows, "fanout-all", "1000 watchers", "herald");
    let hd = dps(h);
    t.push(Target {
        goal: "fanout-all, 1,000 watchers: >= 66 M deliveries/s".into(),
        measured: m(hd) + " M/s",
        met: hd.map(|v| v >= 66e6),
    });
    let paced = find(rows, "fanout-all", "1000 watchers paced", "herald");
    t.push(Target {
        goal: "fanout-all, 1,000 watchers at 66k changes/s (66 M deliveries/s): p99 <= 1 ms, none ended".into(),
        measured: paced.map_or("-".into(), |r| {
            format!("p99 {}, {:.2} M deliveries/s, {} ended", us(r.p99_us), r.deliveries_per_s.unwrap_or(0.0) / 1e6, r.ended)
        }),
        met: paced.map(|r| r.p99_us.unwrap_or(f64::MAX) <= 1_000.0 && r.ended == 0),
    });
    for (peer, factor) in [
        ("reference-port", 20.0),
        ("tokio-broadcast", 5.0),
        ("disruptor", 1.0 / 3.0),
    ] {
        let p = dps(find(rows, "fanout-all", "1000 watchers", peer));
        let r = match (hd, p) {
            (Some(h), Some(p)) if p > 0.0 => Some(h / p),
            _ => None,
        };
        t.push(Target {
            goal: format!("fanout-all, 1,000 watchers: >= {factor:.2}x {peer}"),
            measured: r.map_or("-".into(), |r| format!("{r:.2}x")),
            met: r.map(|r| r >= factor),
        });
    }
    let per_change: Vec<(usize, f64)> = rows
        .iter()
        .filter(|r| {
            r.scenario == "fanout-indexed"
                && r.system == "herald"
                && r.case.ends_with("nodes indexed")
        })
        .filter_map(|r| Some((r.watchers, 1e9 / r.changes_per_s?)))
        .collect();
    if per_change.len() >= 2 {
        let lo = per_change.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let hi = per_change.iter().map(|p| p.1).fold(0.0, f64::max);
        t.push(Target {
            goal: "fanout-indexed: per-change cost flat within 1.2x from 1k to 100k nodes".into(),
            measured: format!(
                "{} ns/change ({:.2}x)",
                per_change
                    .iter()
                    .map(|p| format!("{:.0}", p.1))
                    .collect::<Vec<_>>()
                    .join(", "),
                hi / lo
            ),
            met: Some(hi / lo <= 1.2),
        });
    }
    let best = rows
        .iter()
        .filter(|r| {
            r.scenario == "fanout-indexed"
                && r.system == "herald"
                && r.case.ends_with("nodes indexed")
        })
        .filter_map(|r| r.deliveries_per_s)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.min(v))));
    t.push(Target {
        goal: "fanout-indexed: >= 20 M useful deliveries/s (every size)".into(),
        measured: m(best) + " M/s (slowest size)",
        met: best.map(|v| v >= 20e6),
    });
    let un = rows.iter().find(|r| {
        r.scenario == "fanout-indexed" && r.system == "herald" && r.case.ends_with("unindexed")
    });
    t.push(Target {
        goal: "fanout-indexed: unindexed field selector, 1,000 watchers: >= 68k changes/s".into(),
        measured: k(un.and_then(|r| r.changes_per_s)) + "k changes/s",
        met: un.and_then(|r| r.changes_per_s).map(|v| v >= 68e3),
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
                && let (Some(p), Some(bp)) = (r.p99_us, b.p99_us)
            {
                worst = worst.max(p / bp);
            }
        }
        t.push(Target {
            goal: "slow-watcher-tax: healthy p99 with a stalled companion within 1.1x of baseline; no healthy watcher ends".into(),
            measured: format!("worst {worst:.2}x of baseline; {ended} healthy ended"),
            met: Some(worst <= 1.1 && ended == 0),
        });
    }
    let mem = find(rows, "memory", crate::scenarios::MEMORY_ALL, "herald")
        .and_then(|r| r.bytes_per_watcher);
    t.push(Target {
        goal: "memory: <= 512 B per idle watcher".into(),
        measured: mem.map_or("-".into(), |b| format!("{b:.0} B")),
        met: mem.map(|b| b <= 512.0),
    });
    let lat = find(rows, "latency", "", "herald");
    t.push(Target {
        goal: "latency: p99 <= 50 µs at 10k changes/s to 1,000 watchers".into(),
        measured: lat.map_or("-".into(), |r| {
            format!("p50 {}, p99 {}", us(r.p50_us), us(r.p99_us))
        }),
        met: lat.map(|r| r.p99_us.unwrap_or(f64::MAX) <= 50.0 && r.ended == 0),
    });
    t
}

/// Renders the targets as a Markdown table.
pub fn targets_table(targets: &[Target]) -> String {
    let mut out = String::from("### targets\n\n| target | measured | met |\n| --- | --- | --- |\n");
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
    let series: Vec<(String, Vec<(f64, f64)>)> = systems
        .iter()
        .map(|s| {
            let pts = rows
                .iter()
                .filter(|r| {
                    r.scenario == "fanout-all" && &r.system == s && r.case.ends_with(" watchers")
                })
                .filter_map(|r| Some((r.watchers as f64, r.deliveries_per_s? / 1e6)))
                .collect();
            (s.clone(), pts)
        })
        .filter(|(_, p): &(String, Vec<(f64, f64)>)| !p.is_empty())
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
                .flat_map(|s| s.1.iter().map(|p| p.1))
                .fold(1.0, f64::max);
            let ymin = series
                .iter()
                .flat_map(|s| s.1.iter().map(|p| p.1))
                .fold(ymax, f64::min)
                .max(1e-3);
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    "fanout-all: deliveries/s against watchers (flat out, 2 consumer threads)",
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
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
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
