//! The kubelet scenario: the kubelet's object manager on Herald
//! (`herald_kubelet::ObjectManager`, one pump thread, gets woken by the
//! sync) against a Rust port of the reference's design
//! ([`ReferenceCache`]: a reflector task and a store per object, gets
//! polling every 10 ms), both watching the same kind of in-process engine.
//!
//! One run, per system, on a fresh engine holding `secrets` Secrets in
//! `namespaces` namespaces (one in ten immutable):
//!
//! 1. **start-up**: `pods` pods, each referencing `refs` distinct Secrets
//!    of its namespace (seeded draws), are registered one by one, each
//!    followed by a `get` of each of its Secrets, as a kubelet admitting
//!    its pods mounts their volumes. The first `get` of an object waits
//!    for its watch's first sync. Figures: the start-up's seconds, the
//!    `get` latency (p50, p99), the live heap the manager holds after it
//!    (counting allocator; the engine's share of its watches included),
//!    and the watches open on the engine.
//! 2. **churn**, `seconds` long: a writer thread changes mutable Secrets
//!    flat out, while the kubelet thread replaces `pods_per_s` pods a
//!    second (unregisters one, registers a new one with fresh references,
//!    gets its Secrets). Then
//!    the writer stops and the run waits until the manager serves the last
//!    value written of every Secret. Figures: changes absorbed per second
//!    (changes / time from the first to the manager's last), the `get`
//!    latency during the churn, pods replaced per second.
//!
//! Rounds alternate the systems (which goes first, too); each figure is
//! the median [min-max] over rounds, and Herald's advantage is taken per
//! round.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use herald::{Change, Config, Engine, Object, Relist};
use herald_kubelet::{EngineUpstream, ManagerConfig, ObjectManager, PodRefs, is_immutable};
use serde::Serialize;

use crate::alloc::Counting;
use crate::kind::SystemKind;
use crate::machine::{CpuUse, CpuWindow};
use crate::peers::kubelet_reference::ReferenceCache;
use crate::profile::ProfileName;
use crate::report::{self, Headline, fig, mb, med, note, ratio, spread_key, us};
use crate::row::{Metric, Round, Row, Spread};
use crate::runner::Runner;
use crate::scenario::{NoFlags, Scenario};

/// The scenario's name.
pub const NAME: &str = "kubelet";

/// The longest a run waits for a manager to catch up after the churn.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(120);

/// The systems, Herald first.
const SYSTEMS: [SystemKind; 2] = SystemKind::KUBELET;

/// The scenario's sizes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sizes {
    /// Pods on the node.
    pub pods: usize,
    /// Secrets in all.
    pub secrets: usize,
    /// Namespaces the pods and Secrets are spread over.
    pub namespaces: usize,
    /// Secrets each pod references.
    pub refs: usize,
    /// Seconds of churn.
    pub seconds: f64,
    /// Pods replaced per second during the churn (each: an unregister, a
    /// register and a get of each of its Secrets).
    pub pods_per_s: f64,
}

fn secret_name(i: usize) -> String {
    format!("secret-{i:05}")
}

fn namespace(i: usize) -> String {
    format!("ns-{i:03}")
}

/// Secret `i` (in namespace `i % namespaces`) at version `rv`; one in ten
/// immutable.
fn secret(sizes: &Sizes, i: usize, rv: u64) -> Object {
    let (ns, name) = (namespace(i % sizes.namespaces), secret_name(i));
    let immutable = if i.is_multiple_of(10) {
        r#","immutable":true"#
    } else {
        ""
    };
    let payload = format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"{name}","namespace":"{ns}","resourceVersion":"{rv}"}},"type":"Opaque","data":{{"v":"{rv}","token":"c2VjcmV0LXZhbHVlLXRoYXQtaXMtYS1iaXQtbG9uZ2VyLXRoYW4tYS1mZXctYnl0ZXM="}}{immutable}}}"#
    );
    Object::builder(&ns, &name).payload(payload).build()
}

/// The version a stored Secret carries in `data.v`.
fn version_of(object: &Object) -> Option<u64> {
    let p = object.payload();
    let at = p.windows(5).position(|w| w == br#""v":""#)? + 5;
    let end = p[at..].iter().position(|&b| b == b'"')? + at;
    std::str::from_utf8(&p[at..end]).ok()?.parse().ok()
}

/// xorshift64*: the draws of pods and changes, the same for both systems.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n.max(1)
    }
}

/// Pod `slot`'s `generation`-th incarnation: `refs` distinct Secrets of
/// its namespace.
fn pod(sizes: &Sizes, rng: &mut Rng, slot: usize, generation: usize) -> PodRefs {
    let ns = slot % sizes.namespaces;
    let per_ns = sizes.secrets / sizes.namespaces;
    let mut objects = std::collections::BTreeSet::new();
    while objects.len() < sizes.refs.min(per_ns) {
        objects.insert(secret_name(rng.below(per_ns) * sizes.namespaces + ns));
    }
    PodRefs {
        namespace: namespace(ns),
        name: format!("pod-{slot:05}"),
        uid: format!("uid-{slot}-{generation}"),
        objects,
    }
}

/// What the scenario drives: the kubelet's `Manager` interface.
trait Manager {
    fn register(&self, pod: &PodRefs);
    fn unregister(&self, pod: &PodRefs);
    fn get(&self, namespace: &str, name: &str) -> Result<Option<Object>, String>;
    fn threads(&self) -> usize;
    /// The name its threads share a prefix of (as `/proc` shows it).
    fn thread_name(&self) -> &'static str;
    /// Watches that ended on their own (and were opened again).
    fn ends(&self) -> u64;
}

impl Manager for ObjectManager {
    fn register(&self, pod: &PodRefs) {
        self.register_pod(pod).expect("valid names");
    }
    fn unregister(&self, pod: &PodRefs) {
        self.unregister_pod(pod);
    }
    fn get(&self, namespace: &str, name: &str) -> Result<Option<Object>, String> {
        ObjectManager::get(self, namespace, name).map_err(|e| e.to_string())
    }
    fn threads(&self) -> usize {
        1
    }
    fn thread_name(&self) -> &'static str {
        "herald-objects"
    }
    fn ends(&self) -> u64 {
        self.stats().watch_ends
    }
}

impl Manager for ReferenceCache {
    fn register(&self, pod: &PodRefs) {
        self.register_pod(&pod.namespace, &pod.name, &pod.uid, &pod.objects);
    }
    fn unregister(&self, pod: &PodRefs) {
        self.unregister_pod(&pod.namespace, &pod.name, &pod.uid);
    }
    fn get(&self, namespace: &str, name: &str) -> Result<Option<Object>, String> {
        ReferenceCache::get(self, namespace, name)
    }
    fn threads(&self) -> usize {
        2
    }
    fn thread_name(&self) -> &'static str {
        "reference-refle"
    }
    fn ends(&self) -> u64 {
        self.relists.load(Ordering::Relaxed)
    }
}

/// One system's run.
#[derive(Debug)]
struct Outcome {
    startup_s: f64,
    startup_get: Histogram<u64>,
    churn_get: Histogram<u64>,
    pods_per_s: f64,
    changes: u64,
    changes_per_s: f64,
    caught_up: bool,
    heap_bytes: Option<f64>,
    watches_open: u64,
    threads: usize,
    errors: u64,
    cpu: CpuUse,
    seconds: f64,
    /// CPU of the manager's own threads during the churn, per change.
    us_per_change: f64,
    /// Watches that ended on their own.
    ends: u64,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

fn run(system: SystemKind, sizes: &Sizes) -> anyhow::Result<Outcome> {
    let (engine, mut writer) = Engine::new(Config::default())?;
    let mut rv = 1u64;
    writer.replace(Relist::new(
        (0..sizes.secrets).map(|i| secret(sizes, i, rv)),
        rv.into(),
    ))?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut pods: Vec<PodRefs> = (0..sizes.pods)
        .map(|s| pod(sizes, &mut rng, s, 0))
        .collect();
    let counting = Counting::installed();
    if counting {
        Counting::enable();
    }
    let kubelet: Box<dyn Manager + Send + Sync> = match system {
        SystemKind::KubeletManager => Box::new(ObjectManager::new(
            EngineUpstream::new(engine.clone()),
            ManagerConfig::default(),
        )?),
        _ => Box::new(ReferenceCache::new(engine.clone(), is_immutable)?),
    };
    let mut errors = 0u64;

    // Start-up.
    let mut startup_get = histogram();
    let started = Instant::now();
    for p in &pods {
        kubelet.register(p);
        for o in &p.objects {
            let t = Instant::now();
            if kubelet.get(&p.namespace, o).is_err() {
                errors += 1;
            }
            let _ = startup_get.record(t.elapsed().as_nanos().max(1) as u64);
        }
    }
    let startup_s = started.elapsed().as_secs_f64();
    let heap_bytes = counting.then(|| Counting::live() as f64);
    Counting::disable();
    // The engine takes registrations and removals up on its dispatcher
    // thread: read the count once it holds still.
    let settle = Instant::now() + Duration::from_secs(10);
    let mut watches_open = engine.stats().watchers_active;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let s = engine.stats();
        let now = s.watchers_active;
        if (now == watches_open && s.watchers_pending == 0) || Instant::now() > settle {
            break;
        }
        watches_open = now;
    }

    // Churn.
    let manager_cpu = |name: &str| -> u64 {
        crate::machine::threads()
            .values()
            .filter(|(n, _)| n.starts_with(name))
            .map(|(_, ns)| ns)
            .sum()
    };
    let cpu0 = manager_cpu(kubelet.thread_name());
    let window = CpuWindow::open();
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let changer = {
        let stop = stop.clone();
        let sizes = *sizes;
        std::thread::Builder::new()
            .name("secret-writer".into())
            .spawn(move || {
                let mut rng = Rng(0xD1B5_4A32_D192_ED03);
                let mut last = vec![0u64; sizes.secrets];
                let mut changes = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let i = rng.below(sizes.secrets);
                        if i.is_multiple_of(10) {
                            continue; // immutable
                        }
                        rv += 1;
                        if writer
                            .apply(Change::modified(secret(&sizes, i, rv), rv.into()))
                            .is_ok()
                        {
                            last[i] = rv;
                            changes += 1;
                        }
                    }
                }
                (last, changes)
            })?
    };
    let mut churn_get = histogram();
    let mut replaced = 0u64;
    let deadline = t0 + Duration::from_secs_f64(sizes.seconds);
    let mut generation = 1;
    let every = Duration::from_secs_f64(1.0 / sizes.pods_per_s.max(1e-3));
    let mut next = t0;
    while Instant::now() < deadline {
        next += every;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let slot = rng.below(sizes.pods);
        kubelet.unregister(&pods[slot]);
        let p = pod(sizes, &mut rng, slot, generation);
        generation += 1;
        kubelet.register(&p);
        for o in &p.objects {
            let t = Instant::now();
            if kubelet.get(&p.namespace, o).is_err() {
                errors += 1;
            }
            let _ = churn_get.record(t.elapsed().as_nanos().max(1) as u64);
        }
        pods[slot] = p;
        replaced += 1;
    }
    let churn_s = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (last, changes) = changer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;

    // Caught up: every Secret a pod references serves its last value.
    let mut referenced = vec![false; sizes.secrets];
    for p in &pods {
        for o in &p.objects {
            if let Some(i) = o
                .strip_prefix("secret-")
                .and_then(|n| n.parse::<usize>().ok())
            {
                referenced[i] = true;
            }
        }
    }
    let give_up = Instant::now() + CATCH_UP_LIMIT;
    let mut pending: Vec<usize> = (0..sizes.secrets)
        .filter(|&i| referenced[i] && last[i] > 0)
        .collect();
    while !pending.is_empty() && Instant::now() < give_up {
        pending.retain(|&i| {
            let got = kubelet.get(&namespace(i % sizes.namespaces), &secret_name(i));
            got.ok().flatten().and_then(|o| version_of(&o)) != Some(last[i])
        });
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let absorbed_s = t0.elapsed().as_secs_f64();
    let manager_ns = manager_cpu(kubelet.thread_name()).saturating_sub(cpu0);
    let ends = kubelet.ends();
    let cpu = window.close(&[]);
    let threads = kubelet.threads();
    drop(kubelet);
    engine.stop();
    Ok(Outcome {
        startup_s,
        startup_get,
        churn_get,
        pods_per_s: replaced as f64 / churn_s,
        changes,
        changes_per_s: changes as f64 / absorbed_s,
        caught_up: pending.is_empty(),
        heap_bytes,
        watches_open,
        threads,
        errors,
        cpu,
        seconds: absorbed_s,
        us_per_change: manager_ns as f64 / 1e3 / changes.max(1) as f64,
        ends,
    })
}

/// The scenario.
#[derive(Debug)]
pub struct Kubelet;

impl Scenario for Kubelet {
    type Sizes = Sizes;
    type Flags = NoFlags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let default = Sizes {
            pods: 10_000,
            secrets: 2_000,
            namespaces: 10,
            refs: 5,
            seconds: 2.0,
            pods_per_s: 500.0,
        };
        match profile {
            ProfileName::Quick => Sizes {
                pods: 5_000,
                secrets: 1_000,
                seconds: 1.0,
                ..default
            },
            ProfileName::Default | ProfileName::Full => default,
            ProfileName::Smoke => Sizes {
                pods: 200,
                secrets: 100,
                namespaces: 4,
                refs: 5,
                seconds: 0.2,
                pods_per_s: 500.0,
            },
        }
    }

    fn apply(&self, _flags: NoFlags, _sizes: &mut Sizes) -> anyhow::Result<()> {
        Ok(())
    }

    fn systems(&self, _runner: &Runner<'_>) -> Vec<SystemKind> {
        SYSTEMS.to_vec()
    }

    fn planned(&self, runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        runner.profile.repeat.max(1) * SYSTEMS.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let label = format!(
            "{} pods x {} of {} secrets",
            sizes.pods, sizes.refs, sizes.secrets
        );
        let n = SYSTEMS.len();
        let mut outcomes: Vec<Vec<(usize, Outcome)>> = (0..n).map(|_| Vec::new()).collect();
        let mut failed: Vec<Option<String>> = vec![None; n];
        for round in 0..runner.profile.repeat.max(1) {
            for order in 0..n {
                let i = (order + round) % n;
                if failed[i].is_some() {
                    continue;
                }
                let system = SYSTEMS[i];
                (runner.on_start)(&format!(
                    "kubelet {label} {}: round {}/{}",
                    system.name(),
                    round + 1,
                    runner.profile.repeat
                ));
                match run(system, sizes) {
                    Ok(o) => outcomes[i].push((order, o)),
                    Err(e) => failed[i] = Some(format!("skipped: {e:#}")),
                }
            }
        }
        let herald_rate: Vec<f64> = outcomes[0].iter().map(|(_, o)| o.changes_per_s).collect();
        for (i, &system) in SYSTEMS.iter().enumerate() {
            let row = match &failed[i] {
                Some(why) => Row::skipped(NAME, &label, system, why.clone()),
                None => row_of(system, &label, &outcomes[i], &herald_rate),
            };
            runner.push(rows, row);
        }
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::table(
            NAME,
            "| case | system | changes absorbed/s | herald ÷ system, per round | manager µs CPU per change | get p50 / p99, start-up | get p50 / p99, churn | start-up | pods replaced/s | heap | watches open | threads | note |",
            rows,
            |r| {
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
            },
        )
    }

    /// Its one case: changes absorbed per second (no target).
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let case = rows.iter().find(|r| r.scenario == NAME)?.case.clone();
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &case),
            SystemKind::KubeletManager.name(),
            ("changes absorbed/s", &|r| {
                spread_key(r, "changes_per_s", |v| {
                    v.map_or("-".into(), |v| format!("{:.2} M", v / 1e6))
                })
            }),
            ("-".into(), None),
        )
    }
}

fn row_of(system: SystemKind, label: &str, runs: &[(usize, Outcome)], herald: &[f64]) -> Row {
    let mut row = Row::skipped(NAME, label, system, String::new());
    let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e3;
    type Figure = (&'static str, fn(&Outcome) -> Option<f64>);
    let figures: [Figure; 13] = [
        ("manager_us_per_change", |o| Some(o.us_per_change)),
        ("watch_ends", |o| Some(o.ends as f64)),
        ("changes_per_s", |o| Some(o.changes_per_s)),
        ("startup_s", |o| Some(o.startup_s)),
        ("startup_get_p50_us", |o| {
            Some(o.startup_get.value_at_quantile(0.5) as f64 / 1e3)
        }),
        ("startup_get_p99_us", |o| {
            Some(o.startup_get.value_at_quantile(0.99) as f64 / 1e3)
        }),
        ("get_p50_us", |o| {
            Some(o.churn_get.value_at_quantile(0.5) as f64 / 1e3)
        }),
        ("get_p99_us", |o| {
            Some(o.churn_get.value_at_quantile(0.99) as f64 / 1e3)
        }),
        ("pods_per_s", |o| Some(o.pods_per_s)),
        ("heap_bytes", |o| o.heap_bytes),
        ("watches_open", |o| Some(o.watches_open as f64)),
        ("threads", |o| Some(o.threads as f64)),
        ("harness_cores", |o| o.cpu.process_cores),
    ];
    for (key, get) in figures {
        let values: Vec<f64> = runs.iter().filter_map(|(_, o)| get(o)).collect();
        if let Some(s) = Spread::of(&values) {
            row.spread.insert(key, s);
        }
    }
    // The median round by changes absorbed gives the row's scalars.
    let mut by: Vec<&(usize, Outcome)> = runs.iter().collect();
    by.sort_by(|a, b| a.1.changes_per_s.total_cmp(&b.1.changes_per_s));
    if let Some((_, o)) = by.get(by.len() / 2) {
        row.watchers = o.watches_open as usize;
        row.changes = o.changes as usize;
        row.changes_per_s = Some(o.changes_per_s);
        row.p50_us = Some(us(&o.churn_get, 0.5));
        row.p99_us = Some(us(&o.churn_get, 0.99));
        row.p999_us = Some(us(&o.churn_get, 0.999));
        row.seconds = o.seconds;
        row.setup_seconds = o.startup_s;
        row.bytes_per_watcher = o.heap_bytes.map(|b| b / o.watches_open.max(1) as f64);
    }
    let errors: u64 = runs.iter().map(|(_, o)| o.errors).sum();
    let behind = runs.iter().filter(|(_, o)| !o.caught_up).count();
    let mut notes = Vec::new();
    if errors > 0 {
        notes.push(format!("{errors} failed gets"));
    }
    if behind > 0 {
        notes.push(format!(
            "{behind} rounds not caught up in {CATCH_UP_LIMIT:?}"
        ));
    }
    row.note = notes.join("; ");
    row.violations = errors;
    row.rounds = runs
        .iter()
        .enumerate()
        .map(|(round, (order, o))| Round {
            round,
            order: *order,
            changes: o.changes as usize,
            seconds: o.seconds,
            changes_per_s: o.changes_per_s,
            p50_us: Some(us(&o.churn_get, 0.5)),
            p99_us: Some(us(&o.churn_get, 0.99)),
            cpu: o.cpu.clone(),
            ..Round::default()
        })
        .collect();
    row.noisy_rounds = row.rounds.iter().filter(|r| r.cpu.noisy()).count();
    row.metric = Some(Metric::ChangesPerS);
    row.ratio_rounds = herald
        .iter()
        .zip(runs)
        .map(|(h, (_, o))| h / o.changes_per_s)
        .collect();
    row.ratio = Spread::of(&row.ratio_rounds);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_back() {
        let sizes = Sizes {
            pods: 10,
            secrets: 20,
            namespaces: 2,
            refs: 3,
            seconds: 0.1,
            pods_per_s: 100.0,
        };
        assert_eq!(version_of(&secret(&sizes, 3, 42)), Some(42));
        assert!(is_immutable(&secret(&sizes, 10, 1)));
        assert!(!is_immutable(&secret(&sizes, 11, 1)));
        let p = pod(&sizes, &mut Rng(7), 3, 0);
        assert_eq!(p.objects.len(), 3);
        assert!(p.objects.iter().all(|o| {
            let i: usize = o.strip_prefix("secret-").unwrap().parse().unwrap();
            i % 2 == 1 && i < 20
        }));
    }

    #[test]
    fn a_small_run_of_each_system_catches_up() {
        let sizes = Sizes {
            pods: 200,
            secrets: 100,
            namespaces: 4,
            refs: 5,
            seconds: 0.2,
            pods_per_s: 500.0,
        };
        for system in SYSTEMS {
            let o = run(system, &sizes).unwrap();
            assert!(o.caught_up, "{system:?}");
            assert_eq!(o.errors, 0, "{system:?}");
            assert!(o.changes > 0);
            // One in ten is immutable: its watch stops at its first get.
            assert_eq!(o.watches_open, 90, "{system:?}");
        }
    }
}
