//! The etcd systems (etcd-fanout's, and http-fanout's `etcd`): Herald in
//! front of a real etcd, and the same watchers opened on etcd itself
//! (etcd's own watch fan-out, the store Kubernetes would otherwise hit),
//! on the same write stream.
//!
//! The scenario that runs them starts an etcd ([`EtcdEnv::start`]: a
//! fresh single-member etcd on loopback, [`herald_testkit::etcd::LocalEtcd`],
//! `--unsafe-no-fsync`, the launcher's setting) and owns it; each run of a
//! system gets it through [`run_on`]:
//!
//! - `herald+etcd`: one [`EtcdSource`] (one etcd watch of the prefix, with
//!   previous values) and a [`Reflector`] keeping an [`Engine`] in step;
//!   the N watchers are Herald watches of everything, drained by the
//!   harness's consumer threads as in every other scenario.
//! - `etcd`: N etcd watches of the prefix (with previous values, from the
//!   run's first revision), each on its own gRPC stream, the streams
//!   spread round-robin over C connections (`--etcd-connections`, 10 by
//!   default); the same consumer threads poll each stream with the
//!   waker of their readiness list, so a stream's messages are decoded on
//!   the consumer that owns it, and the connections' frames are read by a
//!   two-thread tokio runtime.
//! - `etcd-one-connection`: the same on one connection.
//!
//! The write stream is the same for both: a writer (a one-thread tokio
//! runtime, one connection) puts pods under a fresh prefix, 1,000 keys,
//! each value a realistic pod ([`crate::pods`]) with a write counter, in
//! the apiserver's protobuf (what a real cluster stores: Herald decodes it
//! to the JSON it serves) or, for `herald+etcd-json`, as JSON (Herald
//! reads it as is); the values are made before the run, a write copies
//! one and sets its counter. It puts them `--etcd-in-flight` puts at a time (16) when flat out;
//! paced, it hands each put over when it is due. A put's revision is known
//! only when it returns, so the writer stamps each write then, by
//! revision, twice: the time just before the put was sent, and the time it
//! returned. etcd commits a write between the two, so latency is reported
//! both ways: from the send (an upper bound on commit to receive: the
//! rows' p50/p99/p99.9, the ratios and the target use it) and from the
//! return (a lower bound; a delivery that came before its put returned,
//! which etcd's own watchers often do, counts as 0). Deliveries are
//! checked as everywhere (every watcher gets every revision of the run
//! once, in order: the revision minus the one before the run is the
//! harness's resource version), with the range check always on.
//!
//! Beside the rows' rates and latencies, each run records etcd's CPU time
//! (its threads' `schedstat`) and its peak resident memory, and the
//! harness's peak live heap from the system's build on (the counting
//! allocator): see [`PeerUse`].

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use etcd_client::{
    Client, CompactionOptions, DeleteOptions, GetOptions, WatchOptions, WatchResponse, WatchStream,
};
use futures_core::Stream;
use herald::reflector::{Reflector, ReflectorConfig};
use herald::{Config, Engine, WatchRequest};
use herald_etcd::{EtcdConfig, EtcdSource};
use herald_kube::Decoder;
use herald_testkit::etcd::{EtcdBinary, LocalEtcd};
use tokio::runtime::Runtime;

use crate::alloc::Counting;
use crate::consume::{self, RunOpts, RunResult};
use crate::kind::SystemKind;
use crate::peers::herald::{HeraldSub, NODE_FIELD};
use crate::pods::{Encoding, Placement, Stored};
use crate::runner::run_system;
use crate::system::{Drained, PeerUse, Publisher, Spec, Stamps, Subscriber, System};
use crate::workload::{Filter, Workload, node_name, pod_name};

/// How often the sampler reads etcd's resident memory and the harness's
/// live heap.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// The longest a run's set-up waits (Herald's list, the watches).
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// One case's etcd: where it listens, its process, the runtimes the
/// harness's etcd clients run on.
pub struct EtcdEnv {
    endpoint: String,
    pid: u32,
    /// The write stream's runtime (one worker thread).
    writer_rt: Runtime,
    /// The runtime reading the etcd side's watch connections (two worker
    /// threads).
    watch_rt: Runtime,
    /// Connections the etcd side spreads its watches over.
    connections: usize,
    /// Puts the writer keeps in flight at most.
    in_flight: usize,
    /// Runs so far: each run writes under a prefix of its own.
    runs: AtomicU64,
    /// The pods' values made so far, per encoding (key `k` at index `k`).
    values: parking_lot::Mutex<Vec<(Encoding, Arc<Vec<Stored>>)>>,
}

impl std::fmt::Debug for EtcdEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdEnv")
            .field("endpoint", &self.endpoint)
            .field("pid", &self.pid)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

impl EtcdEnv {
    /// Starts a fresh etcd (one member, loopback) and the client runtimes.
    pub fn start(
        bin: &EtcdBinary,
        connections: usize,
        in_flight: usize,
    ) -> anyhow::Result<(LocalEtcd, Arc<EtcdEnv>)> {
        let etcd = LocalEtcd::start(bin)?;
        let pid = etcd
            .pid()
            .context("the etcd just started has no process id")?;
        let runtime = |name: &str, workers: usize| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name(name)
                .enable_all()
                .build()
                .with_context(|| format!("a tokio runtime ({name})"))
        };
        let env = EtcdEnv {
            endpoint: etcd.endpoint(),
            pid,
            writer_rt: runtime("perf-etcd-writer", 1)?,
            watch_rt: runtime("perf-etcd-watch", 2)?,
            connections: connections.max(1),
            in_flight: in_flight.max(1),
            runs: AtomicU64::new(0),
            values: parking_lot::Mutex::new(Vec::new()),
        };
        Ok((etcd, Arc::new(env)))
    }

    /// etcd's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The connections the `etcd` system spreads its watches over.
    pub fn connections(&self) -> usize {
        self.connections
    }

    /// The values of pods `0..pods` in `encoding`, made once.
    fn values(&self, encoding: Encoding, pods: usize) -> anyhow::Result<Arc<Vec<Stored>>> {
        let mut made = self.values.lock();
        if let Some((_, v)) = made.iter().find(|(e, v)| *e == encoding && v.len() >= pods) {
            return Ok(v.clone());
        }
        let v = Arc::new(
            (0..pods as u32)
                .map(|key| Stored::new(&placement(key), u64::from(key), encoding))
                .collect::<anyhow::Result<Vec<_>>>()?,
        );
        made.retain(|(e, _)| *e != encoding);
        made.push((encoding, v.clone()));
        Ok(v)
    }

    /// A prefix no earlier run wrote under.
    fn prefix(&self) -> String {
        format!(
            "/herald-perf/{}/pods/",
            self.runs.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// A new client (one connection), its background tasks on `rt`.
    fn connect(&self, rt: &Runtime) -> anyhow::Result<Client> {
        rt.block_on(Client::connect([self.endpoint.as_str()], None))
            .with_context(|| format!("connect to etcd at {}", self.endpoint))
    }

    /// etcd's current revision.
    fn revision(&self, client: &Client) -> anyhow::Result<i64> {
        let mut c = client.clone();
        let r = self
            .writer_rt
            .block_on(c.get("/", Some(GetOptions::new().with_count_only())))
            .context("read etcd's revision")?;
        Ok(r.header()
            .context("a response without a header")?
            .revision())
    }
}

/// The bytes of one stored pod in `encoding` (what each write puts).
pub fn value_bytes(encoding: Encoding) -> Option<usize> {
    value(encoding, 0).ok().map(|s| s.len())
}

/// Pod `key`'s value in `encoding`, as the writer puts it.
pub fn value(encoding: Encoding, key: u32) -> anyhow::Result<Stored> {
    Stored::new(&placement(key), u64::from(key), encoding)
}

/// Where pod `key` is: `default/pod-{key}` on `node-0`, the node every
/// watcher's workload puts it on.
fn placement(key: u32) -> Placement {
    Placement {
        namespace: "default".into(),
        name: pod_name(key),
        node: node_name(0),
        app: "web".into(),
        hash: "5d8f9c7b4".into(),
    }
}

/// Reads a server process's resident memory (etcd's, or http-fanout's
/// child server's) and the harness's live heap until stopped, keeping the
/// highest of each.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(u64, i64)>,
}

impl Sampler {
    pub(crate) fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("perf-sampler".into())
            .spawn(move || {
                let mut peak = (0u64, 0i64);
                loop {
                    let done = flag.load(Ordering::Relaxed);
                    peak.0 = peak
                        .0
                        .max(crate::machine::process_rss_bytes(pid).unwrap_or(0));
                    peak.1 = peak.1.max(Counting::live());
                    if done {
                        return peak;
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .expect("spawn the sampler");
        Sampler { stop, handle }
    }

    /// Stops it: (the server's peak resident bytes, the harness's peak live
    /// heap).
    pub(crate) fn finish(self) -> (u64, i64) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The write stream, and the run's bookkeeping: the publisher of both
/// systems.
pub struct EtcdWriter {
    env: Arc<EtcdEnv>,
    client: Client,
    prefix: String,
    /// etcd's revision before the run's first write: the run's writes are
    /// revisions `r0 + 1 ..= r0 + writes`, stamped at `revision - r0 - 1`.
    r0: i64,
    workload: Arc<Workload>,
    /// Each pod's value (by key), its write counter set per write.
    values: Arc<Vec<Stored>>,
    tx: Option<tokio::sync::mpsc::Sender<usize>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Puts that failed or returned a revision outside the run's.
    failures: Arc<AtomicU64>,
    /// How long each put took to return (ns).
    put_times: Arc<parking_lot::Mutex<hdrhistogram::Histogram<u64>>>,
    sampler: Option<Sampler>,
    cpu_at_begin: Option<u64>,
    /// The connections the watchers' streams are spread over (the etcd
    /// side).
    connections: Option<usize>,
    /// What the system keeps alive until the run is over (Herald's engine
    /// and reflector, the etcd side's connections); dropped before the
    /// prefix is cleaned up.
    keep: Option<Box<dyn Send>>,
}

impl std::fmt::Debug for EtcdWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdWriter")
            .field("prefix", &self.prefix)
            .field("r0", &self.r0)
            .finish_non_exhaustive()
    }
}

impl EtcdWriter {
    fn new(
        env: Arc<EtcdEnv>,
        client: Client,
        prefix: String,
        r0: i64,
        workload: &Arc<Workload>,
        values: Arc<Vec<Stored>>,
        keep: Box<dyn Send>,
    ) -> EtcdWriter {
        EtcdWriter {
            env,
            client,
            prefix,
            r0,
            workload: workload.clone(),
            values,
            tx: None,
            task: None,
            failures: Arc::new(AtomicU64::new(0)),
            put_times: Arc::new(parking_lot::Mutex::new(crate::system::histogram())),
            sampler: None,
            cpu_at_begin: None,
            connections: None,
            keep: Some(keep),
        }
    }

    /// Waits for every put handed over to return.
    fn drain(&mut self) {
        drop(self.tx.take());
        if let Some(task) = self.task.take() {
            let _ = self.env.writer_rt.block_on(task);
        }
        let failed = self.failures.swap(0, Ordering::Relaxed);
        if failed > 0 {
            eprintln!(
                "herald-perf: etcd-fanout: {failed} put(s) failed or returned a revision outside the run's"
            );
        }
    }
}

impl Publisher for EtcdWriter {
    fn publish(&mut self, i: usize) {
        if let Some(tx) = &self.tx {
            // Blocks while the most puts are out and the queue is full:
            // flat out is as fast as etcd takes them.
            let _ = tx.blocking_send(i);
        }
    }

    fn finish(&mut self) {
        self.drain();
    }

    fn stamps_itself(&self) -> bool {
        true
    }

    fn begin(&mut self, sent: &Arc<Stamps>, acked: &Arc<Stamps>) {
        let in_flight = self.env.in_flight;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<usize>(in_flight * 4);
        let client = self.client.clone();
        let prefix = self.prefix.clone();
        let r0 = self.r0;
        let workload = self.workload.clone();
        let values = self.values.clone();
        let (sent, acked) = (sent.clone(), acked.clone());
        let failures = self.failures.clone();
        let put_times = self.put_times.clone();
        self.task = Some(self.env.writer_rt.spawn(async move {
            let permits = Arc::new(tokio::sync::Semaphore::new(in_flight));
            while let Some(i) = rx.recv().await {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    break;
                };
                let key = workload.changes[i].key;
                let path = format!("{prefix}default/{}", pod_name(key));
                let value = values[key as usize].with_write(i as u64);
                let mut client = client.clone();
                let (sent, acked) = (sent.clone(), acked.clone());
                let failures = failures.clone();
                let put_times = put_times.clone();
                tokio::spawn(async move {
                    let at = sent.now();
                    match client.put(path, value, None).await {
                        Ok(r) => {
                            let rev = r.header().map_or(0, |h| h.revision());
                            match usize::try_from(rev - r0 - 1) {
                                Ok(k) if k < sent.len() => {
                                    // The revision is known now: stamp
                                    // both, the acknowledgement first.
                                    acked.mark(k);
                                    sent.set(k, at);
                                    put_times
                                        .lock()
                                        .saturating_record(acked.get(k).saturating_sub(at).max(1));
                                }
                                _ => {
                                    failures.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                        Err(e) => {
                            if failures.fetch_add(1, Ordering::Relaxed) == 0 {
                                eprintln!("herald-perf: etcd-fanout: a put failed: {e}");
                            }
                        }
                    }
                    drop(permit);
                });
            }
            // Every put has returned once every permit is back.
            let _ = permits.acquire_many(in_flight as u32).await;
        }));
        self.tx = Some(tx);
        self.cpu_at_begin = crate::machine::process_cpu_ns(self.env.pid);
        self.sampler = Some(Sampler::start(self.env.pid));
    }

    fn end(&mut self) -> Option<PeerUse> {
        self.drain();
        let cpu = crate::machine::process_cpu_ns(self.env.pid);
        let (rss, heap) = self.sampler.take().map(Sampler::finish).unwrap_or_default();
        Counting::disable();
        let cpu_ns = cpu
            .zip(self.cpu_at_begin)
            .map_or(0, |(b, a)| b.saturating_sub(a));
        let puts = std::mem::replace(&mut *self.put_times.lock(), crate::system::histogram());
        let us = |q: f64| (!puts.is_empty()).then(|| puts.value_at_quantile(q) as f64 / 1e3);
        Some(PeerUse {
            cpu_s: cpu_ns as f64 / 1e9,
            rss_peak_bytes: rss,
            heap_peak_bytes: heap,
            in_flight: self.env.in_flight,
            connections: self.connections,
            put_p50_us: us(0.5),
            put_p99_us: us(0.99),
            ..PeerUse::default()
        })
    }
}

impl Drop for EtcdWriter {
    fn drop(&mut self) {
        self.drain();
        if let Some(s) = self.sampler.take() {
            s.finish();
        }
        Counting::disable();
        drop(self.keep.take());
        // The next run starts from the same etcd: this run's keys deleted,
        // its history compacted away.
        let mut c = self.client.clone();
        let prefix = self.prefix.clone();
        let cleaned = self.env.writer_rt.block_on(async move {
            tokio::time::timeout(Duration::from_secs(20), async move {
                let r = c
                    .delete(prefix, Some(DeleteOptions::new().with_prefix()))
                    .await?;
                let rev = r.header().map_or(0, |h| h.revision());
                c.compact(rev, Some(CompactionOptions::new().with_physical()))
                    .await?;
                Ok::<_, etcd_client::Error>(())
            })
            .await
        });
        match cleaned {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("herald-perf: etcd-fanout: cleaning up a run: {e}"),
            Err(_) => eprintln!("herald-perf: etcd-fanout: cleaning up a run took over 20 s"),
        }
    }
}

/// A subscriber whose resource versions are etcd revisions, seen by the
/// consumers as the harness's (the revision minus `by`).
#[derive(Debug)]
pub struct Offset<S> {
    inner: S,
    by: u64,
}

impl<S: Subscriber> Subscriber for Offset<S> {
    fn has_readiness(&self) -> bool {
        self.inner.has_readiness()
    }

    #[inline]
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        let by = self.by;
        self.inner
            .drain(max, &mut |rv, len| f(rv.wrapping_sub(by), len))
    }

    #[inline]
    fn poll_drain<F: FnMut(u64, usize)>(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut F,
    ) -> Poll<Drained> {
        let by = self.by;
        self.inner
            .poll_drain(cx, max, &mut |rv, len| f(rv.wrapping_sub(by), len))
    }
}

/// The `by` that makes the run's first revision (`r0 + 1`) the harness's
/// first resource version.
fn offset(r0: i64) -> u64 {
    (r0 as u64 + 1).wrapping_sub(Workload::FIRST_RV)
}

/// Waits until `done` holds, or fails saying `what` did not happen.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    while !done() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{what}: not within {SETUP_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Herald in front of etcd: an [`EtcdSource`] of the prefix, a
/// [`Reflector`], an [`Engine`]; one Herald watch per watcher.
#[derive(Debug, Clone)]
pub struct HeraldOnEtcd {
    /// The case's etcd.
    pub env: Arc<EtcdEnv>,
    /// How the writer stores the pods.
    pub values: Encoding,
}

/// Herald's engine and reflector, stopped (reflector first: its thread
/// holds the writer) when the run is over.
struct HeraldKeep {
    engine: Engine,
    reflector: Option<Reflector>,
}

impl Drop for HeraldKeep {
    fn drop(&mut self) {
        if let Some(r) = self.reflector.take() {
            r.stop();
        }
        self.engine.stop();
    }
}

/// Only watchers of everything: the scenario's shape.
fn all_watchers(spec: &Spec) -> anyhow::Result<()> {
    anyhow::ensure!(
        spec.filters.iter().all(|f| *f == Filter::All) && spec.start == 0 && spec.preloaded == 0,
        "etcd-fanout runs watchers of everything, from the run's first write"
    );
    Ok(())
}

impl System for HeraldOnEtcd {
    type Pub = EtcdWriter;
    type Sub = Offset<HeraldSub>;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(EtcdWriter, Vec<Offset<HeraldSub>>)> {
        all_watchers(spec)?;
        let env = &self.env;
        let values = env.values(self.values, workload.initial.len())?;
        Counting::enable();
        let prefix = env.prefix();
        let client = env.connect(&env.writer_rt)?;
        let r0 = env.revision(&client)?;
        let source = EtcdSource::connect(
            EtcdConfig::new([env.endpoint.clone()], &prefix)
                .decoder(Decoder::new().field(NODE_FIELD)),
        )?;
        // History for the whole run, as everywhere in the harness.
        let config = Config::default().history_bounds(spec.ring.min(100), spec.ring.max(100));
        let (engine, writer) = Engine::new(config)?;
        let reflector = Reflector::spawn(
            Arc::new(source),
            engine.clone(),
            writer,
            ReflectorConfig::default(),
        )?;
        let keep = HeraldKeep {
            engine: engine.clone(),
            reflector: Some(reflector),
        };
        wait_until("Herald listing the prefix", || {
            engine.resource_version().get() >= r0 as u64
        })?;
        anyhow::ensure!(
            engine.resource_version().get() == r0 as u64,
            "etcd moved from revision {r0} to {} during the set-up",
            engine.resource_version().get()
        );
        let by = offset(r0);
        let mut subs = Vec::with_capacity(spec.filters.len());
        for _ in &spec.filters {
            let req = WatchRequest::new().resource_version(Some((r0 as u64).into()));
            subs.push(Offset {
                inner: HeraldSub::new(engine.watch(req)?),
                by,
            });
        }
        let n = spec.filters.len() as u64;
        wait_until("Herald registering the watchers", || {
            engine.stats().watchers_active >= n
        })?;
        let writer = EtcdWriter::new(
            env.clone(),
            client,
            prefix,
            r0,
            workload,
            values,
            Box::new(keep),
        );
        Ok((writer, subs))
    }
}

/// etcd's own fan-out: N etcd watches of the prefix, one gRPC stream each,
/// spread over `connections` connections.
#[derive(Debug, Clone)]
pub struct EtcdWatchers {
    /// The case's etcd.
    pub env: Arc<EtcdEnv>,
    /// Connections the watches are spread over (round-robin).
    pub connections: usize,
    /// How the writer stores the pods.
    pub values: Encoding,
}

impl System for EtcdWatchers {
    type Pub = EtcdWriter;
    type Sub = EtcdSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(EtcdWriter, Vec<EtcdSub>)> {
        all_watchers(spec)?;
        let env = &self.env;
        let values = env.values(self.values, workload.initial.len())?;
        Counting::enable();
        let prefix = env.prefix();
        let client = env.connect(&env.writer_rt)?;
        let r0 = env.revision(&client)?;
        let conns = (0..self.connections.max(1))
            .map(|_| env.connect(&env.watch_rt))
            .collect::<anyhow::Result<Vec<Client>>>()?;
        let n = spec.filters.len();
        let opened = env.watch_rt.block_on(async {
            let tasks: Vec<_> = (0..n)
                .map(|w| {
                    let mut c = conns[w % conns.len()].clone();
                    let key = prefix.clone();
                    tokio::spawn(async move {
                        let options = WatchOptions::new()
                            .with_prefix()
                            .with_prev_key()
                            .with_start_revision(r0 + 1);
                        let mut stream = c.watch(key, Some(options)).await?;
                        // The first answer says the watch was created.
                        let first = stream.message().await?;
                        Ok::<_, etcd_client::Error>((stream, first))
                    })
                })
                .collect();
            let mut out = Vec::with_capacity(n);
            for t in tasks {
                out.push(t.await);
            }
            out
        });
        let by = offset(r0);
        let mut subs = Vec::with_capacity(n);
        for got in opened {
            let (stream, first) = got.context("a watch task")?.context("open an etcd watch")?;
            match first {
                Some(r) if r.created() && !r.canceled() => {}
                other => anyhow::bail!("etcd did not create a watch: {other:?}"),
            }
            subs.push(EtcdSub {
                stream,
                by,
                current: None,
                next: 0,
                ended: false,
            });
        }
        let mut writer = EtcdWriter::new(
            env.clone(),
            client,
            prefix,
            r0,
            workload,
            values,
            Box::new(conns),
        );
        writer.connections = Some(self.connections.max(1));
        Ok((writer, subs))
    }
}

/// One etcd watch, as the consumers drain it: its stream's messages,
/// decoded when polled, one delivery per event (the revision and the
/// value's length).
pub struct EtcdSub {
    stream: WatchStream,
    by: u64,
    /// The message being handed out, and its next event.
    current: Option<WatchResponse>,
    next: usize,
    ended: bool,
}

impl std::fmt::Debug for EtcdSub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdSub")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Subscriber for EtcdSub {
    fn has_readiness(&self) -> bool {
        true
    }

    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        crate::system::drain_now(self, max, f)
    }

    fn poll_drain<F: FnMut(u64, usize)>(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut F,
    ) -> Poll<Drained> {
        let mut n = 0;
        loop {
            if let Some(resp) = &self.current {
                let events = resp.events();
                while n < max && self.next < events.len() {
                    if let Some(kv) = events[self.next].kv() {
                        f(
                            (kv.mod_revision() as u64).wrapping_sub(self.by),
                            kv.value().len(),
                        );
                        n += 1;
                    }
                    self.next += 1;
                }
                if self.next < events.len() {
                    return Poll::Ready(Drained {
                        delivered: n,
                        ended: false,
                    });
                }
                self.current = None;
            }
            if self.ended || n >= max {
                return Poll::Ready(Drained {
                    delivered: n,
                    ended: self.ended,
                });
            }
            match Pin::new(&mut self.stream).poll_next(cx) {
                Poll::Ready(Some(Ok(resp))) => {
                    if resp.canceled() {
                        self.ended = true;
                    }
                    self.current = Some(resp);
                    self.next = 0;
                }
                Poll::Ready(Some(Err(_)) | None) => self.ended = true,
                Poll::Pending if n > 0 => {
                    return Poll::Ready(Drained {
                        delivered: n,
                        ended: false,
                    });
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Runs one of the etcd systems (`herald+etcd`, `herald+etcd-json`,
/// `etcd`, `etcd-one-connection`) against `env`; any other system as
/// [`run_system`] does.
pub fn run_on(
    env: &Arc<EtcdEnv>,
    kind: SystemKind,
    spec: &Spec,
    workload: &Arc<Workload>,
    opts: &RunOpts,
) -> anyhow::Result<RunResult> {
    let env = env.clone();
    match kind {
        SystemKind::HeraldEtcd | SystemKind::HeraldEtcdJson => {
            let values = if kind == SystemKind::HeraldEtcd {
                Encoding::Protobuf
            } else {
                Encoding::Json
            };
            consume::run(&HeraldOnEtcd { env, values }, spec, workload, opts)
        }
        SystemKind::Etcd => {
            let watchers = EtcdWatchers {
                connections: env.connections(),
                env,
                values: Encoding::Protobuf,
            };
            consume::run(&watchers, spec, workload, opts)
        }
        SystemKind::EtcdOneConnection => {
            let watchers = EtcdWatchers {
                env,
                connections: 1,
                values: Encoding::Protobuf,
            };
            consume::run(&watchers, spec, workload, opts)
        }
        _ => run_system(kind, spec, workload, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_revision_of_a_run_is_the_first_resource_version() {
        let by = offset(41);
        assert_eq!(42u64.wrapping_sub(by), Workload::FIRST_RV);
        assert_eq!(41u64.wrapping_sub(by), Workload::LIST_RV);
    }

    #[test]
    fn values_are_pods_the_source_decodes() {
        for encoding in [Encoding::Protobuf, Encoding::Json] {
            let value = Stored::new(&placement(7), 7, encoding)
                .unwrap()
                .with_write(3);
            let object = Decoder::new()
                .field(NODE_FIELD)
                .decode(b"default/pod-7", &value, 9.into())
                .expect("decodes");
            assert_eq!((object.namespace(), object.name()), ("default", "pod-7"));
            assert_eq!(object.field(NODE_FIELD), Some("node-0"));
            assert_eq!(object.label("app"), Some("web"));
        }
    }
}
