//! `herald-perf`: Herald's load harness. Runs the scenarios on Herald and
//! its peers in one process, prints a table per scenario with ratios
//! against the peers, checks the targets, writes plots and, on request,
//! JSON.
//!
//! ```text
//! cargo run --release -p herald-perf                      # the quick profile: every scenario at one size (< 5 min)
//! cargo run --release -p herald-perf -- --full            # the whole default suite (~35 min on 2 cores)
//! cargo run --release -p herald-perf -- fanout-all latency --systems herald,tokio-broadcast
//! cargo run --release -p herald-perf -- --profile smoke --strict
//! cargo run --release -p herald-perf -- --json results.json --plots target/perf
//! cargo run --release -p herald-perf -- --scenarios etcd-fanout   # Herald in front of etcd (needs etcd)
//! cargo run --release -p herald-perf -- --scenarios http-fanout   # Herald's HTTP front to N connections
//! cargo run --release -p herald-perf -- pod-memory --pods 10000   # bytes per cached pod: herald-server vs kube-apiserver
//! cargo run --release -p herald-perf -- --profile default --print-sizes   # what each scenario would run at, as JSON
//! ```
//!
//! The flags here are the shared ones; each scenario declares its own in
//! its file ([`herald_perf::scenario::Scenario::Flags`]), and
//! [`with_flags`] adds them.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};
use herald_perf::alloc::Counting;
use herald_perf::kind::SystemKind;
use herald_perf::profile::{Profile, ProfileName};
use herald_perf::report;
use herald_perf::row::Row;
use herald_perf::runner::Runner;
use herald_perf::scenario::{Configured, with_flags};
use herald_perf::scenarios;
use indicatif::{ProgressBar, ProgressStyle};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Herald's load harness: fan-out scenarios against tokio broadcast, a
/// crossbeam-channel cacher, disruptor and a Rust port of the reference's
/// dispatch, in one run.
///
/// The options first apply to every scenario; each scenario's own follow
/// under its name.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Scenarios to run (default: all; the list and the heavy ones are
    /// filled in from the registry: see `command`).
    scenarios: Vec<String>,
    /// Scenarios to run, comma-separated (the same as naming them as
    /// arguments).
    #[arg(long = "scenarios", value_name = "SCENARIOS", value_delimiter = ',')]
    scenario_list: Vec<String>,
    /// Sizes: quick (every scenario at its headline size, under 5 minutes
    /// on 2 cores), default (the whole suite, ~35 minutes), full (larger),
    /// smoke (seconds, checks the harness).
    #[arg(long, default_value = "quick")]
    profile: String,
    /// The whole default suite: the same as `--profile default`.
    #[arg(long, conflicts_with = "profile")]
    full: bool,
    /// Systems to run, comma-separated (default: all): herald,
    /// reference-port, tokio-broadcast, crossbeam-cacher, disruptor; and
    /// etcd-fanout's herald+etcd, herald+etcd-json, etcd,
    /// etcd-one-connection (all unless one is named).
    #[arg(long, value_delimiter = ',')]
    systems: Vec<String>,
    /// Consumer threads shared by every system.
    #[arg(long)]
    threads: Option<usize>,
    /// Check every delivery against its filter (slower; always on in the
    /// smoke profile).
    #[arg(long)]
    check_filters: bool,
    /// Poll every watcher of every system on every pass, Herald's too
    /// (by default a system with a readiness list, Herald, has its
    /// consumers visit only the watchers it woke).
    #[arg(long)]
    no_readiness: bool,
    /// Feed Herald from its embedded in-memory source through a reflector
    /// in every scenario (by default Herald's writer is fed directly, and
    /// fanout-all adds one case through the source).
    #[arg(long)]
    herald_source: bool,
    /// Interleaved rounds per case (each round runs every system once, in
    /// a rotating order); rows report the median round and the range, and
    /// ratios are taken per round (default: 5; smoke: 2).
    #[arg(long)]
    repeat: Option<usize>,
    /// Grow each flat-out case's workload (doubling, up to its cap) until a
    /// system's run lasts this many seconds, after an uncounted sizing
    /// round (default: 1; smoke: 0, no sizing round).
    #[arg(long)]
    min_seconds: Option<f64>,
    /// Print the profile's shared settings and the sizes each chosen
    /// scenario would run at (its flags applied), as JSON, and run
    /// nothing.
    #[arg(long)]
    print_sizes: bool,
    /// Write the rows and targets as JSON to this file ("-": stdout, and
    /// the tables go to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Directory for the SVG plots.
    #[arg(long, default_value = "target/perf")]
    plots: PathBuf,
    /// Write no plots.
    #[arg(long)]
    no_plots: bool,
    /// Exit non-zero if any delivery broke order or filter, any run timed
    /// out, or any Herald watcher (not a stalled companion) ended early.
    #[arg(long)]
    strict: bool,
}

fn main() -> std::process::ExitCode {
    // http-fanout's server, started by the harness itself as its child.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == herald_perf::http::child::ARG)
    {
        return herald_perf::http::child::main();
    }
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(2),
        Err(e) => {
            eprintln!("herald-perf: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The command line: the shared flags, then every scenario's, the
/// scenarios' names listed from the registry.
fn command() -> clap::Command {
    let heavy: Vec<&str> = scenarios::ALL
        .iter()
        .filter(|s| s.heavy())
        .map(|s| s.name())
        .collect();
    let help = format!(
        "Scenarios to run (default: all; the quick and smoke profiles leave out the heavy ones \
         unless named: {}): {}",
        heavy.join(", "),
        scenarios::names()
    );
    with_flags(Args::command(), &scenarios::ALL).mut_arg("scenarios", |a| a.help(help))
}

fn run() -> anyhow::Result<bool> {
    let matches = command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let name = if args.full {
        "default"
    } else {
        args.profile.as_str()
    };
    let name = ProfileName::parse(name).ok_or_else(|| {
        anyhow::anyhow!("unknown profile {name:?}: quick, default, full or smoke")
    })?;
    let mut profile = Profile::of(name);
    if let Some(t) = args.threads {
        anyhow::ensure!(t > 0, "--threads must be at least 1");
        profile.threads = t;
    }
    profile.check_filters |= args.check_filters;
    profile.readiness &= !args.no_readiness;
    if let Some(r) = args.repeat {
        anyhow::ensure!(r > 0, "--repeat must be at least 1");
        profile.repeat = r;
    }
    if let Some(s) = args.min_seconds {
        anyhow::ensure!(
            s.is_finite() && s >= 0.0,
            "--min-seconds must be a number of seconds, 0 or more"
        );
        profile.min_seconds = s;
    }
    profile.herald_source = args.herald_source;
    // Every scenario at the profile's sizes, its flags applied, whichever
    // run: a value no scenario can run is refused before anything starts.
    let configured: Vec<Box<dyn Configured>> = scenarios::ALL
        .into_iter()
        .map(|s| s.configure(name, &matches))
        .collect::<anyhow::Result<_>>()?;

    let named: Vec<&String> = args.scenarios.iter().chain(&args.scenario_list).collect();
    // A scenario named runs whole: its heavy systems too (http-fanout's
    // TLS row), which the main job's profile leaves out for its time.
    if !named.is_empty() {
        profile.heavy = true;
    }
    let chosen: Vec<Box<dyn Configured>> = if named.is_empty() {
        configured
            .into_iter()
            .filter(|c| profile.heavy || !c.scenario().heavy())
            .collect()
    } else {
        named
            .into_iter()
            .map(|s| {
                let scenario = scenarios::find(s).ok_or_else(|| {
                    anyhow::anyhow!("unknown scenario {s:?}: {}", scenarios::names())
                })?;
                scenario.configure(name, &matches)
            })
            .collect::<anyhow::Result<_>>()?
    };
    let sizes: serde_json::Map<String, serde_json::Value> = chosen
        .iter()
        .map(|c| (c.scenario().name().to_owned(), c.sizes()))
        .collect();
    if args.print_sizes {
        let doc = serde_json::json!({ "profile": profile, "sizes": sizes });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(true);
    }
    let mut systems: Vec<SystemKind> = if args.systems.is_empty() {
        SystemKind::ALL.to_vec()
    } else {
        args.systems
            .iter()
            .map(|s| {
                SystemKind::parse(s).ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown system {s:?}: {}",
                        SystemKind::ALL
                            .iter()
                            .chain(&SystemKind::ETCD)
                            .chain(&SystemKind::HTTP)
                            .chain(&SystemKind::KUBELET)
                            .chain(&SystemKind::SERVERS)
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    // etcd-fanout's systems run there only (both, unless one is named).
    let etcd_systems: Vec<SystemKind> = systems
        .iter()
        .copied()
        .filter(|s| SystemKind::ETCD.contains(s))
        .collect();
    // Ratios are Herald's: it always runs, first.
    systems.retain(|s| {
        *s != SystemKind::Herald
            && !SystemKind::ETCD.contains(s)
            && !SystemKind::HTTP.contains(s)
            && !SystemKind::SERVERS.contains(s)
    });
    systems.insert(0, SystemKind::Herald);

    let json_to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    let say = |s: &str| {
        if json_to_stdout {
            eprintln!("{s}");
        } else {
            println!("{s}");
        }
    };

    let machine = machine();
    let sizing = if profile.min_seconds > 0.0 {
        format!(
            ", flat-out runs sized to >= {} s after a sizing round",
            profile.min_seconds
        )
    } else {
        String::new()
    };
    say(&format!(
        "herald-perf: profile {}, {} consumer threads, {} interleaved rounds per case{sizing}; {}\n\
         Figures: median [min-max] over the rounds; ratios taken per round. A round is noisy \
         when other processes took > {} cores meanwhile.\n",
        profile.name,
        profile.threads,
        profile.repeat,
        machine,
        herald_perf::machine::NOISY_CORES,
    ));

    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let on_start = |what: &str| bar.set_message(what.to_owned());
    let on_row = |_: &Row| bar.inc(1);
    let runner = Runner {
        profile: profile.clone(),
        systems,
        etcd_systems,
        on_start: &on_start,
        on_row: &on_row,
    };
    let planned: usize = chosen.iter().map(|s| s.planned(&runner)).sum();
    bar.set_length(planned as u64);

    let suite = herald_perf::machine::CpuWindow::open();
    let mut rows = Vec::new();
    for c in &chosen {
        let mut got = Vec::new();
        c.run(&runner, &mut got);
        let s = c.scenario();
        let own: Vec<&Row> = got.iter().filter(|r| r.scenario == s.name()).collect();
        bar.suspend(|| say(&s.table(&own)));
        rows.extend(got);
    }
    bar.finish_and_clear();

    let load = suite.close(&[]);
    let rounds: usize = rows.iter().map(|r| r.rounds.len()).sum();
    let noisy: usize = rows.iter().map(|r| r.noisy_rounds).sum();
    let children = load
        .children_cores
        .filter(|c| *c > 0.0)
        .map_or(String::new(), |c| {
            format!(", its child processes (etcd, servers) {c:.2} cores")
        });
    say(&format!(
        "machine: over the suite's {:.0} s, this process used {} cores{children} and other processes {} cores on average; {noisy} of {rounds} rounds noisy\n",
        load.wall_s,
        load.process_cores.map_or("?".into(), |c| format!("{c:.2}")),
        load.others_cores.map_or("?".into(), |c| format!("{c:.2}")),
    ));
    let targets: Vec<report::Target> = scenarios::ALL
        .iter()
        .flat_map(|s| s.targets(&rows))
        .collect();
    say(&report::targets_table(&targets));
    let headline: Vec<report::Headline> = chosen
        .iter()
        .filter_map(|c| c.scenario().headline(&rows))
        .collect();

    if !args.no_plots {
        for p in report::plots(&rows, &args.plots)? {
            say(&format!("plot: {}", p.display()));
        }
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({
            "machine": machine,
            "load": load,
            "profile": profile,
            "sizes": sizes,
            "rows": rows,
            "targets": targets,
            "headline": headline,
        });
        let text = serde_json::to_string_pretty(&doc)?;
        if json_to_stdout {
            println!("{text}");
        } else {
            std::fs::write(path, text)?;
            say(&format!("json: {}", path.display()));
        }
    }

    // The headline last: one line per scenario, the figure a newcomer
    // reads first.
    say(&format!(
        "{}\nsuite: {:.0} s wall clock (profile {}).",
        report::headline_table(&headline),
        load.wall_s,
        profile.name
    ));

    let mut ok = true;
    for r in &rows {
        let herald_ended =
            SystemKind::parse(&r.system).is_some_and(SystemKind::is_herald) && r.ended > 0;
        if r.violations > 0 || r.note == "timed out" || herald_ended {
            eprintln!(
                "herald-perf: {} {} {}: {} violations, {} ended, {}",
                r.scenario, r.case, r.system, r.violations, r.ended, r.note
            );
            ok = false;
        }
    }
    Ok(ok || !args.strict)
}

/// The machine, in one line: cores and CPU model.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores, {model}")
}

#[cfg(test)]
mod tests {
    /// clap's own checks of the whole command line: the shared flags and
    /// every scenario's, none clashing.
    #[test]
    fn the_command_line_is_sound() {
        super::command().debug_assert();
    }
}
