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
//! ```

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Parser;
use herald_perf::alloc::Counting;
use herald_perf::kind::SystemKind;
use herald_perf::profile::Profile;
use herald_perf::report;
use herald_perf::row::Row;
use herald_perf::runner::Runner;
use herald_perf::scenario::Scenario;
use herald_perf::scenarios;
use indicatif::{ProgressBar, ProgressStyle};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Herald's load harness: fan-out scenarios against tokio broadcast, a
/// crossbeam-channel cacher, disruptor and a Rust port of the reference's
/// dispatch, in one run.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Scenarios to run (default: all; the quick and smoke profiles leave
    /// out the heavy ones unless named: pod-memory, apiserver-fanout,
    /// fleet-restart): fanout-all, fanout-indexed, slow-watcher-tax,
    /// catch-up, latency, memory, etcd-fanout, http-fanout, kubelet,
    /// pod-memory, apiserver-fanout, fleet-restart.
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
    /// fanout-all watcher counts, comma-separated.
    #[arg(long, value_delimiter = ',')]
    watchers: Vec<usize>,
    /// fanout-all deliveries per run (changes = deliveries / watchers).
    #[arg(long)]
    deliveries: Option<usize>,
    /// fanout-indexed node counts (one watcher each), comma-separated.
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<usize>,
    /// fanout-indexed changes per run.
    #[arg(long)]
    indexed_changes: Option<usize>,
    /// latency scenario: changes per second.
    #[arg(long)]
    rate: Option<f64>,
    /// latency and slow-watcher-tax: seconds per run.
    #[arg(long)]
    seconds: Option<f64>,
    /// memory scenario: idle watchers.
    #[arg(long)]
    memory_watchers: Option<usize>,
    /// etcd-fanout watcher counts, comma-separated.
    #[arg(long, value_delimiter = ',')]
    etcd_watchers: Vec<usize>,
    /// http-fanout connection counts (watchers of everything),
    /// comma-separated.
    #[arg(long, value_delimiter = ',')]
    http_watchers: Vec<usize>,
    /// http-fanout paced cases: deliveries per second in total to their
    /// connections, comma-separated, a case each (default profile:
    /// 10,000 and 50,000 to 1,000).
    #[arg(long, value_delimiter = ',')]
    http_rate: Vec<f64>,
    /// etcd-fanout: connections the etcd side spreads its watches over.
    #[arg(long)]
    etcd_connections: Option<usize>,
    /// etcd-fanout paced cases: deliveries per second in total (the writer
    /// puts this / watchers per second).
    #[arg(long)]
    etcd_rate: Option<f64>,
    /// etcd-fanout flat out: puts the writer keeps in flight.
    #[arg(long)]
    etcd_in_flight: Option<usize>,
    /// pod-memory: pods written to etcd and cached by each server (quick:
    /// 10,000; default: 100,000).
    #[arg(long)]
    pods: Option<usize>,
    /// apiserver-fanout: watch connections per case, comma-separated
    /// (default: 100,1000,10000).
    #[arg(long, value_delimiter = ',')]
    apiserver_watchers: Option<Vec<usize>>,
    /// apiserver-fanout: writes per second through the apiserver (default:
    /// 10).
    #[arg(long)]
    apiserver_rate: Option<f64>,
    /// fleet-restart: watchers through the balancers (default: 10,000).
    #[arg(long)]
    fleet_watchers: Option<usize>,
    /// fleet-restart: writes per second into etcd (default: 2).
    #[arg(long)]
    fleet_rate: Option<f64>,
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
    /// round (quick: 0.8; default: 1; smoke: 0, no sizing round).
    #[arg(long)]
    min_seconds: Option<f64>,
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

/// The most watch connections an apiserver-fanout case may ask for.
const MAX_APISERVER_WATCHERS: usize = 1_000_000;

/// The highest write rate apiserver-fanout may be asked for (writes/s).
const MAX_APISERVER_RATE: f64 = 1_000.0;

/// The highest `--http-rate`: deliveries a second in total. One loopback
/// send costs its sender about 9 µs of CPU (`scripts/loopback-send-cost.py`),
/// so a million a second is nine cores' worth; anything higher only sizes
/// a workload no run can pace.
const MAX_HTTP_RATE: f64 = 1_000_000.0;

/// The most watchers `--fleet-watchers` takes: each holds a descriptor in
/// the harness, whose limit here is 20,000.
const MAX_FLEET_WATCHERS: usize = 18_000;

/// The most writes per second `--fleet-rate` takes (one put at a time).
const MAX_FLEET_RATE: f64 = 1_000.0;

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

fn run() -> anyhow::Result<bool> {
    let args = Args::parse();
    let name = if args.full {
        "default"
    } else {
        args.profile.as_str()
    };
    let mut profile = match name {
        "quick" => Profile::quick(),
        "smoke" => Profile::smoke(),
        "default" => Profile::default_suite(),
        "full" => Profile::full(),
        other => anyhow::bail!("unknown profile {other:?}: quick, default, full or smoke"),
    };
    if let Some(t) = args.threads {
        anyhow::ensure!(t > 0, "--threads must be at least 1");
        profile.threads = t;
    }
    if !args.watchers.is_empty() {
        profile.fanout_watchers = args.watchers.clone();
    }
    if let Some(d) = args.deliveries {
        profile.fanout_deliveries = d;
    }
    if !args.nodes.is_empty() {
        profile.indexed_nodes = args.nodes.clone();
    }
    if let Some(c) = args.indexed_changes {
        profile.indexed_changes = c;
    }
    if let Some(r) = args.rate {
        anyhow::ensure!(r > 0.0, "--rate must be positive");
        profile.latency.1 = r;
    }
    if let Some(s) = args.seconds {
        anyhow::ensure!(s > 0.0, "--seconds must be positive");
        profile.latency.2 = s;
        profile.tax_seconds = s;
    }
    if let Some(n) = args.memory_watchers {
        profile.memory_watchers = n.max(1);
    }
    if !args.etcd_watchers.is_empty() {
        profile.etcd_watchers = args.etcd_watchers.clone();
    }
    if !args.http_watchers.is_empty() {
        anyhow::ensure!(
            args.http_watchers.iter().all(|&n| n > 0),
            "--http-watchers: each count must be at least 1"
        );
        profile.http_watchers = args.http_watchers.clone();
    }
    if !args.http_rate.is_empty() {
        anyhow::ensure!(
            args.http_rate
                .iter()
                .all(|&r| r.is_finite() && r > 0.0 && r <= MAX_HTTP_RATE),
            "--http-rate must list rates above 0 and at most {MAX_HTTP_RATE} deliveries/s (a loopback send alone costs about 9 us of CPU: that is 9 cores)"
        );
        let mut sorted = args.http_rate.clone();
        sorted.sort_by(f64::total_cmp);
        anyhow::ensure!(
            sorted.windows(2).all(|w| w[0] != w[1]),
            "--http-rate lists a rate twice: each rate is a case of its own"
        );
        profile.http_rates = args.http_rate.clone();
    }
    if let Some(c) = args.etcd_connections {
        anyhow::ensure!(c > 0, "--etcd-connections must be at least 1");
        profile.etcd_connections = c;
    }
    if let Some(k) = args.etcd_in_flight {
        anyhow::ensure!(k > 0, "--etcd-in-flight must be at least 1");
        profile.etcd_in_flight = k;
    }
    if let Some(r) = args.etcd_rate {
        anyhow::ensure!(r > 0.0, "--etcd-rate must be positive");
        profile.etcd_paced.0 = r;
    }
    if let Some(n) = args.pods {
        anyhow::ensure!(n > 0, "--pods must be at least 1");
        profile.pod_memory_pods = n;
    }
    if let Some(ns) = args.apiserver_watchers {
        anyhow::ensure!(
            !ns.is_empty()
                && ns
                    .iter()
                    .all(|&n| (1..=MAX_APISERVER_WATCHERS).contains(&n)),
            "--apiserver-watchers must list counts from 1 to {MAX_APISERVER_WATCHERS} (each a connection, and a descriptor in each process)"
        );
        profile.apiserver_watchers = ns;
    }
    if let Some(r) = args.apiserver_rate {
        anyhow::ensure!(
            r.is_finite() && r > 0.0 && r <= MAX_APISERVER_RATE,
            "--apiserver-rate must be above 0 and at most {MAX_APISERVER_RATE} writes/s (they go through the apiserver one at a time)"
        );
        profile.apiserver_writes.0 = r;
    }
    if let Some(n) = args.fleet_watchers {
        anyhow::ensure!(
            (1..=MAX_FLEET_WATCHERS).contains(&n),
            "--fleet-watchers must be from 1 to {MAX_FLEET_WATCHERS} (a descriptor each here, and two in a balancer)"
        );
        profile.fleet.0 = n;
    }
    if let Some(r) = args.fleet_rate {
        anyhow::ensure!(
            r.is_finite() && r > 0.0 && r <= MAX_FLEET_RATE,
            "--fleet-rate must be above 0 and at most {MAX_FLEET_RATE} writes/s"
        );
        profile.fleet.1 = r;
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
    anyhow::ensure!(
        profile
            .fanout_watchers
            .iter()
            .chain(&profile.indexed_nodes)
            .chain(&profile.etcd_watchers)
            .all(|&n| n > 0),
        "watcher and node counts must be positive"
    );

    let named: Vec<&String> = args.scenarios.iter().chain(&args.scenario_list).collect();
    // A scenario named runs whole: its heavy systems too (http-fanout's
    // TLS row), which the main job's profile leaves out for its time.
    if !named.is_empty() {
        profile.heavy = true;
    }
    let chosen: Vec<&dyn Scenario> = if named.is_empty() {
        scenarios::ALL
            .into_iter()
            .filter(|s| profile.heavy || !s.heavy())
            .collect()
    } else {
        named
            .into_iter()
            .map(|s| {
                scenarios::find(s).ok_or_else(|| {
                    anyhow::anyhow!("unknown scenario {s:?}: {}", scenarios::names())
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
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
    for s in &chosen {
        let mut got = Vec::new();
        s.run(&runner, &mut got);
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
    let headline: Vec<report::Headline> = chosen.iter().filter_map(|s| s.headline(&rows)).collect();

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
