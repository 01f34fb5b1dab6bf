//! fleet-restart's system, `herald-fleet`: three `herald-server` replicas
//! on one etcd (a fresh single member on loopback, its pods written as the
//! apiserver stores and writes them, one revision each) behind HAProxy in TCP mode
//! (`leastconn`, `/readyz` checked every 200 ms, out after one failure,
//! back after two passes), each replica started with `--shutdown-delay 1`
//! so that HAProxy has taken it out before it drains. A writer thread puts
//! pod changes into etcd at a fixed rate, stamping each revision as it is
//! sent; the watchers ([`watchers`]) read them through HAProxy.
//!
//! [`Fleet::restart`] is one step of a rolling restart: SIGTERM to a
//! replica, its exit awaited, the same command started again, its
//! `/readyz` and then HAProxy's view of it awaited.
//!
//! One HAProxy process holds two descriptors per connection, and a
//! process here may hold at most 20,000 (the hard `RLIMIT_NOFILE`, which
//! may not be raised): past [`PER_BALANCER`] watchers the fleet runs more
//! than one HAProxy, each in front of the same three replicas, as an HA
//! pair of balancers would be, and the watchers are dealt among them.

pub mod watchers;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use etcd_client::Client;
use herald_testkit::etcd::{LocalEtcd, etcd_binary};

use crate::pods::{Encoding, Placement, Stored};
use crate::servers::{FULL_PREFIX, NAMESPACES, NODES, Running, curl, free_port, wait_ok};
use watchers::Shared;

/// Replicas behind the balancer.
pub const REPLICAS: usize = 3;

/// Pods written before the run (the writer changes the first
/// [`WRITTEN_KEYS`] of them).
const PODS: usize = 1_000;

/// Keys the writer cycles through.
const WRITTEN_KEYS: usize = 100;

/// Watchers per HAProxy process (see the module's doc).
pub const PER_BALANCER: usize = 9_000;

/// How long a replica may take to exit after SIGTERM: its delay (1 s),
/// its drain, its grace (10 s), and room.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long HAProxy may take to see a replica again (two checks 200 ms
/// apart, and room).
const UP_TIMEOUT: Duration = Duration::from_secs(20);

/// The replicas, the balancer and the etcd they read.
pub struct Fleet {
    etcd: LocalEtcd,
    etcd_pid: u32,
    endpoint: String,
    herald: PathBuf,
    dir: PathBuf,
    ports: Vec<u16>,
    replicas: Vec<Option<Running>>,
    starts: Vec<usize>,
    seats: Option<(usize, usize)>,
    proxies: Vec<Running>,
    stats: Vec<String>,
    /// Where the watchers connect: each HAProxy's frontend.
    pub fronts: Vec<SocketAddr>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("etcd", &self.endpoint)
            .field("ports", &self.ports)
            .field("fronts", &self.fronts)
            .finish_non_exhaustive()
    }
}

/// The haproxy binary: `HERALD_HAPROXY`, else `haproxy` on the `PATH`,
/// else `/usr/sbin/haproxy`.
pub fn haproxy() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("HERALD_HAPROXY") {
        return Ok(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("haproxy"))
        .chain([PathBuf::from("/usr/sbin/haproxy")])
        .find(|p| p.is_file());
    on_path.context("no haproxy (set HERALD_HAPROXY, or apt-get install haproxy)")
}

impl Fleet {
    /// Starts etcd with 1,000 pods, the replicas and HAProxy (one per
    /// [`PER_BALANCER`] of `watchers`); returns once every HAProxy sees
    /// every replica up.
    /// `seats`: each replica's `--max-inflight-reads` and
    /// `--max-queued-reads` (watch initialisations take those seats;
    /// beyond, 429 with `Retry-After`), if not its defaults.
    pub fn start(
        herald: &Path,
        haproxy: &Path,
        watchers: usize,
        seats: Option<(usize, usize)>,
    ) -> anyhow::Result<Fleet> {
        let bin = etcd_binary().map_err(|e| anyhow::anyhow!("no etcd here: {e}"))?;
        let etcd = LocalEtcd::start(&bin).map_err(|e| anyhow::anyhow!("etcd: {e}"))?;
        let endpoint = etcd.endpoint();
        let etcd_pid = etcd.pid().context("etcd's process id")?;
        seed(&endpoint)?;
        let dir = std::env::temp_dir().join(format!("herald-perf-fleet-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let ports = (0..REPLICAS)
            .map(|_| free_port())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("    server h{i} 127.0.0.1:{p} check\n"))
            .collect();
        let (mut proxies, mut stats_urls, mut fronts) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..watchers.div_ceil(PER_BALANCER).max(1) {
            let (front, stats) = (free_port()?, free_port()?);
            let config = dir.join(format!("haproxy-{b}.cfg"));
            std::fs::write(
                &config,
                format!(
                    "global\n    maxconn {}\ndefaults\n    mode tcp\n    timeout connect 2s\n    timeout client 1h\n    timeout server 1h\n    timeout check 1s\n    retries 3\n    option redispatch\nfrontend herald\n    bind 127.0.0.1:{front}\n    default_backend replicas\nbackend replicas\n    balance leastconn\n    option httpchk GET /readyz\n    http-check expect status 200\n    default-server inter 200ms fall 1 rise 2\n{servers}listen stats\n    mode http\n    bind 127.0.0.1:{stats}\n    stats enable\n    stats uri /stats\n",
                    PER_BALANCER + 100
                ),
            )?;
            let log = std::fs::File::create(dir.join(format!("haproxy-{b}.log")))?;
            proxies.push(Running {
                child: Command::new(haproxy)
                    .arg("-db")
                    .arg("-f")
                    .arg(&config)
                    .stdin(Stdio::null())
                    .stdout(log.try_clone()?)
                    .stderr(log)
                    .spawn()
                    .with_context(|| format!("start {}", haproxy.display()))?,
            });
            stats_urls.push(format!("http://127.0.0.1:{stats}/stats;csv"));
            fronts.push(SocketAddr::from(([127, 0, 0, 1], front)));
        }
        let mut fleet = Fleet {
            etcd,
            etcd_pid,
            endpoint,
            herald: herald.to_path_buf(),
            dir,
            ports,
            replicas: (0..REPLICAS).map(|_| None).collect(),
            starts: vec![0; REPLICAS],
            seats,
            proxies,
            stats: stats_urls,
            fronts,
        };
        for i in 0..REPLICAS {
            fleet.start_replica(i)?;
        }
        for i in 0..REPLICAS {
            fleet.wait_up(i)?;
        }
        Ok(fleet)
    }

    fn start_replica(&mut self, i: usize) -> anyhow::Result<()> {
        self.starts[i] += 1;
        let log = self.dir.join(format!("herald-{i}-{}.log", self.starts[i]));
        let log = std::fs::File::create(log)?;
        let started = Instant::now();
        let mut command = Command::new(&self.herald);
        if let Some((inflight, queued)) = self.seats {
            command
                .arg(format!("--max-inflight-reads={inflight}"))
                .arg(format!("--max-queued-reads={queued}"));
        }
        let mut replica = Running {
            child: command
                .arg("--etcd")
                .arg(&self.endpoint)
                .args(["--resources", "pods", "--etcd-prefix", FULL_PREFIX])
                .args(["--shutdown-delay", "1", "--shutdown-grace", "10"])
                .arg("--listen")
                .arg(format!("127.0.0.1:{}", self.ports[i]))
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("start {}", self.herald.display()))?,
        };
        let ready = format!("http://127.0.0.1:{}/readyz", self.ports[i]);
        wait_ok(&ready, &mut replica, "a replica's /readyz", started)?;
        self.replicas[i] = Some(replica);
        Ok(())
    }

    /// Waits until every HAProxy reports replica `i` up.
    fn wait_up(&self, i: usize) -> anyhow::Result<()> {
        let since = Instant::now();
        loop {
            // HAProxy may not be listening yet.
            let status: anyhow::Result<Vec<String>> =
                self.stats.iter().map(|url| status(url, i)).collect();
            if status.as_ref().is_ok_and(|s| s.iter().all(|s| s == "UP")) {
                return Ok(());
            }
            anyhow::ensure!(
                since.elapsed() < UP_TIMEOUT,
                "HAProxy did not see replica {i} up within {UP_TIMEOUT:?} (last: {status:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The status of replica `i` ("UP", "DOWN", ...) in the HAProxy whose
/// CSV statistics are at `url`.
fn status(url: &str, i: usize) -> anyhow::Result<String> {
    let (code, body) = curl(url)?;
    anyhow::ensure!(code == 200, "HAProxy's stats answered {code}");
    let text = String::from_utf8_lossy(&body);
    let name = format!("replicas,h{i},");
    let line = text
        .lines()
        .find(|l| l.starts_with(&name))
        .with_context(|| format!("no h{i} in HAProxy's stats"))?;
    // The 18th field (`status`).
    Ok(line.split(',').nth(17).unwrap_or_default().to_string())
}

impl Fleet {
    /// One step of a rolling restart of replica `i`: SIGTERM, its exit
    /// (after its delay, drain and grace), started again, up in HAProxy.
    /// Returns the seconds it took to exit.
    pub fn restart(&mut self, i: usize) -> anyhow::Result<f64> {
        let mut replica = self.replicas[i].take().context("a replica not running")?;
        let pid = replica.child.id().to_string();
        let since = Instant::now();
        let sent = Command::new("kill").args(["-TERM", &pid]).status()?;
        anyhow::ensure!(sent.success(), "kill -TERM {pid} (replica {i}): {sent}");
        let status = loop {
            if let Some(status) = replica.child.try_wait()? {
                break status;
            }
            anyhow::ensure!(
                since.elapsed() < EXIT_TIMEOUT,
                "replica {i} still running {EXIT_TIMEOUT:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let exited = since.elapsed().as_secs_f64();
        anyhow::ensure!(
            status.success(),
            "replica {i} exited with {status} after SIGTERM"
        );
        self.start_replica(i)?;
        self.wait_up(i)?;
        Ok(exited)
    }

    /// etcd's CPU time so far (ns).
    pub fn etcd_cpu_ns(&self) -> u64 {
        crate::machine::process_cpu_ns(self.etcd_pid).unwrap_or(0)
    }

    /// Replica `i`'s CPU time so far (ns), while it runs (its threads,
    /// tokio's workers and the engine's, live as long as it).
    pub fn replica_cpu_ns(&self, i: usize) -> Option<u64> {
        let replica = self.replicas.get(i)?.as_ref()?;
        crate::machine::process_cpu_ns(replica.child.id())
    }

    /// The HAProxy processes' CPU time so far (ns).
    pub fn balancer_cpu_ns(&self) -> u64 {
        self.proxies
            .iter()
            .filter_map(|p| crate::machine::process_cpu_ns(p.child.id()))
            .sum()
    }

    /// The gRPC requests etcd has taken so far (its
    /// `grpc_server_started_total`, every service and method).
    pub fn etcd_requests(&self) -> anyhow::Result<f64> {
        let (code, body) = curl(&format!("{}/metrics", self.endpoint))?;
        anyhow::ensure!(code == 200, "etcd's /metrics answered {code}");
        Ok(String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| l.starts_with("grpc_server_started_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }

    /// Starts the writer: `rate` pod changes per second into etcd until
    /// `stop`, each revision's send time kept in `shared`.
    pub fn writer(
        &self,
        rate: f64,
        shared: Arc<Shared>,
        stop: Arc<AtomicBool>,
    ) -> anyhow::Result<std::thread::JoinHandle<anyhow::Result<u64>>> {
        let values: Vec<(String, Stored)> = (0..WRITTEN_KEYS)
            .map(|i| {
                let at = Placement::spread(i as u64, NAMESPACES, NODES);
                let key = format!("{FULL_PREFIX}/pods/{}/{}", at.namespace, at.name);
                Ok((key, Stored::new(&at, i as u64, Encoding::Protobuf)?))
            })
            .collect::<anyhow::Result<_>>()?;
        let endpoint = self.endpoint.clone();
        let every = Duration::from_secs_f64(1.0 / rate);
        Ok(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let mut client = Client::connect([endpoint.as_str()], None).await?;
                let start = Instant::now();
                let mut written = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let due = start + every.mul_f64(written as f64);
                    tokio::time::sleep_until(due.into()).await;
                    let (key, value) = &values[written as usize % values.len()];
                    let want = shared.stamp_next();
                    let put = client.put(key.as_str(), value.with_write(written + 1), None);
                    let got = put.await.context("a pod's put")?;
                    let rev = got.header().map_or(0, |h| h.revision()) as u64;
                    anyhow::ensure!(
                        rev == want,
                        "etcd answered revision {rev} to the put stamped {want}: someone else writes to it"
                    );
                    written += 1;
                }
                Ok(written)
            })
        }))
    }

    /// etcd's current revision (a read of one key).
    pub fn revision(&self) -> anyhow::Result<u64> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let mut client = Client::connect([self.endpoint.as_str()], None).await?;
            let got = client.get("/", None).await?;
            Ok(got.header().map_or(0, |h| h.revision()) as u64)
        })
    }
}

/// Writes [`PODS`] pods as the apiserver stores them, one put (and one
/// revision) each, as the apiserver writes them: a transaction of many
/// keys at one revision is no change a cache can apply in order (the
/// reflector re-lists past it), and a replica's first list reaches back
/// over these ([`herald::reflector::ReflectorConfig::backfill`]).
fn seed(endpoint: &str) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut client = Client::connect([endpoint], None).await?;
        for i in 0..PODS as u64 {
            let at = Placement::spread(i, NAMESPACES, NODES);
            let key = format!("{FULL_PREFIX}/pods/{}/{}", at.namespace, at.name);
            let value = Stored::new(&at, i, Encoding::Protobuf)?.with_write(0);
            client.put(key, value, None).await.context("a pod's put")?;
        }
        Ok(())
    })
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.replicas.clear();
        self.etcd.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
