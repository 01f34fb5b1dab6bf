//! pod-memory: what one cached pod costs in memory, herald-server against
//! the real kube-apiserver, both on the same etcd holding the same N pods
//! (realistic and varied, stored as the apiserver stores them:
//! protobuf), and on the same etcd's empty prefix (0 pods). The systems
//! and how each is read: [`crate::servers`].
//!
//! Each round starts each server on each prefix, in a rotating order
//! (apiserver with N, apiserver with 0, Herald with N, Herald with 0,
//! then the next round starts one further on), so that load that comes
//! and goes meets each alike. Per round and server: (the figure with N
//! pods − with 0) / N, for
//!
//! - kube-apiserver: Go's `HeapInuse` after a forced collection (the live
//!   heap and the spans it sits in: what its caches hold), and its
//!   resident memory (`VmRSS`), which also holds what Go has not given
//!   back to the system since the start-up's list;
//! - herald-server: its resident memory (`VmRSS`; it exposes no
//!   allocator statistics).
//!
//! Resident memory is the measure both have: the ratio column is the
//! apiserver's resident bytes per pod ÷ Herald's, taken per round (and
//! its Go heap ÷ Herald's resident bytes, a second column: the
//! apiserver's smallest honest figure against Herald's largest). Herald's
//! resident memory includes the decoded JSON of every pod, its index and
//! the history ring; the apiserver's, the decoded Go objects of its watch
//! cache (pods only differ between N and 0).
//!
//! An apiserver start takes tens of seconds on 2 cores: the quick profile
//! does not run this scenario unless it is named (10,000 pods then); the
//! default and full profiles run 100,000 pods.

use std::fmt::Write as _;

use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use serde::Serialize;

use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{self, Headline, fig};
use crate::row::{Metric, Round, Row, Spread};
use crate::runner::Runner;
use crate::scenario::Scenario;
use crate::servers::{
    ApiserverFiles, Binaries, EMPTY_PREFIX, FULL_PREFIX, NAMESPACES, NODES, Reading, load_pods,
    measure,
};

/// The scenario's name.
pub const NAME: &str = "pod-memory";

/// Herald first: ratios are the apiserver's bytes ÷ Herald's.
const SYSTEMS: [SystemKind; 2] = SystemKind::SERVERS;

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Pods written to etcd, cached by each server.
    pub pods: usize,
}

/// The scenario's flags.
#[derive(Debug, clap::Args)]
pub struct Flags {
    /// pod-memory: pods written to etcd and cached by each server (quick:
    /// 10,000; default: 100,000).
    #[arg(long)]
    pub pods: Option<usize>,
}

/// The scenario.
#[derive(Debug)]
pub struct PodMemory;

/// One round of one server: its readings with N pods and with none.
struct Pair {
    order: usize,
    full: Reading,
    empty: Reading,
}

impl Pair {
    /// (with N − with 0) / N of a figure.
    fn per_pod(&self, n: usize, get: impl Fn(&Reading) -> Option<u64>) -> Option<f64> {
        Some((get(&self.full)? as f64 - get(&self.empty)? as f64) / n as f64)
    }
}

impl Scenario for PodMemory {
    type Sizes = Sizes;
    type Flags = Flags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let pods = match profile {
            // Not run in this profile unless named (an apiserver start per
            // measurement): its size then.
            ProfileName::Quick => 10_000,
            ProfileName::Default | ProfileName::Full => 100_000,
            ProfileName::Smoke => 500,
        };
        Sizes { pods }
    }

    fn apply(&self, flags: Flags, sizes: &mut Sizes) -> anyhow::Result<()> {
        if let Some(n) = flags.pods {
            anyhow::ensure!(n > 0, "--pods must be at least 1");
            sizes.pods = n;
        }
        Ok(())
    }

    fn heavy(&self) -> bool {
        true
    }

    fn systems(&self, _runner: &Runner<'_>) -> Vec<SystemKind> {
        SYSTEMS.to_vec()
    }

    fn planned(&self, _runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        SYSTEMS.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let n = sizes.pods;
        let label = format!("{n} pods");
        let skip = |rows: &mut Vec<Row>, why: String| {
            for &s in &SYSTEMS {
                runner.push(rows, Row::skipped(NAME, &label, s, why.clone()));
            }
        };
        let set_up = || -> anyhow::Result<_> {
            let bins = Binaries::find()?;
            let bin = etcd_binary().map_err(|e| anyhow::anyhow!("no etcd here: {e}"))?;
            let files = ApiserverFiles::make()?;
            (runner.on_start)(&format!("pod-memory: writing {n} pods to etcd"));
            let etcd = LocalEtcd::start(&bin)?;
            let value_bytes = load_pods(&etcd.endpoint(), n)?;
            Ok((bins, files, etcd, value_bytes))
        };
        let (bins, files, etcd, value_bytes) = match set_up() {
            Ok(s) => s,
            Err(e) => return skip(rows, format!("skipped: {e:#}")),
        };
        let Some(etcd_pid) = etcd.pid() else {
            return skip(rows, "skipped: etcd has no process id".into());
        };
        let endpoint = etcd.endpoint();
        // Every (server, prefix) start of a round, in a rotating order.
        let starts: Vec<(usize, bool)> = (0..SYSTEMS.len())
            .flat_map(|s| [(s, true), (s, false)])
            .collect();
        let mut pairs: Vec<Vec<Pair>> = SYSTEMS.iter().map(|_| Vec::new()).collect();
        let mut failed: Option<String> = None;
        let mut pods: Vec<Option<serde_json::Value>> = vec![None; SYSTEMS.len()];
        'rounds: for round in 0..runner.profile.repeat.max(1) {
            let mut got: Vec<[Option<Reading>; 2]> = SYSTEMS.iter().map(|_| [None, None]).collect();
            let mut orders = vec![0; SYSTEMS.len()];
            for k in 0..starts.len() {
                let (s, full) = starts[(k + round) % starts.len()];
                let system = SYSTEMS[s];
                (runner.on_start)(&format!(
                    "pod-memory {label} {} with {} pods: round {}/{}",
                    system.name(),
                    if full { n } else { 0 },
                    round + 1,
                    runner.profile.repeat
                ));
                let prefix = if full { FULL_PREFIX } else { EMPTY_PREFIX };
                let want_pod = full && pods[s].is_none();
                match measure(
                    system,
                    &bins,
                    &files,
                    (&endpoint, etcd_pid),
                    prefix,
                    want_pod,
                ) {
                    Ok(mut r) => {
                        if full {
                            orders[s] = k;
                        }
                        if want_pod {
                            pods[s] = r.pod.take();
                        }
                        got[s][usize::from(!full)] = Some(r);
                    }
                    Err(e) => {
                        failed = Some(format!("skipped: {}: {e:#}", system.name()));
                        break 'rounds;
                    }
                }
            }
            for (s, [full, empty]) in got.into_iter().enumerate() {
                if let (Some(full), Some(empty)) = (full, empty) {
                    pairs[s].push(Pair {
                        order: orders[s],
                        full,
                        empty,
                    });
                }
            }
        }
        if let Some(why) = failed {
            return skip(rows, why);
        }
        let same_pod = match (&pods[0], &pods[1]) {
            (Some(a), Some(b)) if a == b => Some(true),
            (Some(_), Some(_)) => {
                // Kept for a look: where they differ.
                for (s, pod) in SYSTEMS.iter().zip(&pods) {
                    let path =
                        std::env::temp_dir().join(format!("herald-perf-pod-{}.json", s.name()));
                    let text = serde_json::to_string_pretty(pod).unwrap_or_default();
                    let _ = std::fs::write(&path, text);
                }
                Some(false)
            }
            _ => None,
        };
        let herald_rss: Vec<Option<f64>> = pairs[0]
            .iter()
            .map(|p| p.per_pod(n, |r| Some(r.rss)))
            .collect();
        for (s, &system) in SYSTEMS.iter().enumerate() {
            let row = row_of(
                system,
                &label,
                n,
                &pairs[s],
                &herald_rss,
                value_bytes,
                same_pod,
            );
            runner.push(rows, row);
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        if rows.is_empty() {
            return String::new();
        }
        let mut out = report::table(
            NAME,
            "| case | system | resident bytes per pod (VmRSS) | system ÷ herald-server, per round | Go heap in use per pod, after GC | that ÷ herald-server's resident, per round | anonymous resident per pod (RssAnon) | resident with N / with 0 | ready in (N pods) | load (1 min), N pods | noisy | note |",
            rows,
            |r| {
                let b = |key: &str| report::spread_key(r, key, |v| fig(v).to_string());
                let ratio = |key: &str| match r.spread.get(key) {
                    _ if r.system == SystemKind::HeraldServer.name() => "1.0x".into(),
                    Some(s) => report::range(Some(*s), |v| format!("{v:.2}x")),
                    None => "-".into(),
                };
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {}/{} | {} |",
                    r.case,
                    r.system,
                    b("rss_per_pod"),
                    ratio("rss_ratio"),
                    b("heap_inuse_per_pod"),
                    ratio("heap_ratio"),
                    b("rss_anon_per_pod"),
                    report::spread_key(r, "rss_full", report::mb),
                    report::spread_key(r, "rss_empty", report::mb),
                    report::spread_key(r, "ready_s", |v| v
                        .map_or("-".into(), |v| format!("{v:.1} s"))),
                    report::spread_key(r, "load", |v| v.map_or("-".into(), |v| format!("{v:.1}"))),
                    r.noisy_rounds,
                    r.rounds.len(),
                    r.note
                )
            },
        );
        let _ = writeln!(
            out,
            "\nBytes per pod: (with N pods − with 0) ÷ N, median [min-max] over the rounds; ratios taken per round. The pods: {NAMESPACES} namespaces, {NODES} nodes, 2 containers each, stored as protobuf."
        );
        out
    }

    /// Resident bytes per cached pod, against the apiserver's (no target).
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let h = rows.iter().find(|r| {
            r.scenario == NAME
                && r.system == SystemKind::HeraldServer.name()
                && !r.rounds.is_empty()
        })?;
        let peers = rows
            .iter()
            .filter(|r| r.scenario == NAME && r.case == h.case && r.system != h.system)
            .filter_map(|r| {
                let s = r.spread.get("rss_ratio")?;
                Some((
                    format!("{} (resident)", r.system),
                    report::range(Some(*s), |v| format!("{v:.2}x")),
                ))
            })
            .collect();
        Some(Headline {
            scenario: NAME,
            case: h.case.clone(),
            figure: "resident bytes per cached pod",
            herald: report::spread_key(h, "rss_per_pod", |v| fig(v).to_string()),
            peers,
            target: "-".into(),
            met: None,
        })
    }
}

/// A server's row: its figures' spreads over the rounds, the ratios to
/// Herald's resident bytes per pod taken per round.
fn row_of(
    system: SystemKind,
    label: &str,
    n: usize,
    pairs: &[Pair],
    herald_rss: &[Option<f64>],
    value_bytes: f64,
    same_pod: Option<bool>,
) -> Row {
    let mut row = Row::skipped(NAME, label, system, String::new());
    row.changes = n;
    type Figure = (&'static str, fn(&Pair, usize) -> Option<f64>);
    let figures: [Figure; 10] = [
        ("rss_per_pod", |p, n| p.per_pod(n, |r| Some(r.rss))),
        ("rss_anon_per_pod", |p, n| {
            p.per_pod(n, |r| Some(r.rss_anon))
        }),
        ("heap_inuse_per_pod", |p, n| p.per_pod(n, |r| r.heap_inuse)),
        ("heap_alloc_per_pod", |p, n| p.per_pod(n, |r| r.heap_alloc)),
        ("rss_full", |p, _| Some(p.full.rss as f64)),
        ("rss_empty", |p, _| Some(p.empty.rss as f64)),
        ("heap_inuse_full", |p, _| {
            p.full.heap_inuse.map(|v| v as f64)
        }),
        ("heap_inuse_empty", |p, _| {
            p.empty.heap_inuse.map(|v| v as f64)
        }),
        ("ready_s", |p, _| Some(p.full.ready_s)),
        ("load", |p, _| Some(p.full.load)),
    ];
    for (key, get) in figures {
        let values: Vec<f64> = pairs.iter().filter_map(|p| get(p, n)).collect();
        if let Some(s) = Spread::of(&values) {
            row.spread.insert(key, s);
        }
    }
    let ratios = |get: fn(&Pair, usize) -> Option<f64>| -> Vec<f64> {
        pairs
            .iter()
            .zip(herald_rss)
            .filter_map(|(p, h)| Some(get(p, n)? / (*h)?))
            .filter(|v| v.is_finite())
            .collect()
    };
    row.ratio_rounds = ratios(|p, n| p.per_pod(n, |r| Some(r.rss)));
    row.ratio = Spread::of(&row.ratio_rounds);
    if let Some(s) = row.ratio {
        row.spread.insert("rss_ratio", s);
    }
    if let Some(s) = Spread::of(&ratios(|p, n| p.per_pod(n, |r| r.heap_inuse))) {
        row.spread.insert("heap_ratio", s);
    }
    row.rounds = pairs
        .iter()
        .enumerate()
        .map(|(round, p)| Round {
            round,
            order: p.order,
            seconds: p.full.ready_s,
            cpu: p.full.cpu.clone(),
            ..Round::default()
        })
        .collect();
    row.noisy_rounds = pairs
        .iter()
        .filter(|p| p.full.cpu.noisy() || p.empty.cpu.noisy())
        .count();
    row.metric = Some(Metric::ChangesPerS);
    let mut notes = vec![format!("{value_bytes:.0} B stored per pod")];
    // What the servers said they held, once ready.
    let held: Vec<String> = pairs
        .iter()
        .flat_map(|p| [(n, &p.full), (0, &p.empty)])
        .filter_map(|(want, r)| match r.cached {
            Some(got) if got as usize == want => None,
            Some(got) => Some(format!("listed {got} pods of {want}")),
            None => None,
        })
        .collect();
    let said = pairs.iter().all(|p| p.full.cached.is_some());
    if !held.is_empty() {
        notes.push(format!("CHECK: {}", held.join(", ")));
    } else if said {
        notes.push("each start's list said it held all N (or 0) pods".into());
    } else {
        // herald-server sends no remainingItemCount: its /readyz is the
        // check (listed, and no stored value it could not decode).
        notes.push("ready: listed with no undecodable value (its lists give no count)".into());
    }
    if system == SystemKind::HeraldServer {
        notes.push(match same_pod {
            Some(true) => "serves the same pod JSON as the apiserver".into(),
            Some(false) => format!(
                "pod JSON DIFFERS from the apiserver's (both in {}/herald-perf-pod-*.json)",
                std::env::temp_dir().display()
            ),
            None => "pod JSON not compared".into(),
        });
    }
    row.note = notes.join("; ");
    row
}
