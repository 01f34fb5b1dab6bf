//! The pod-memory scenario's systems: the real kube-apiserver and the
//! release `herald-server`, each started as a process of its own on an
//! etcd the scenario filled ([`load_pods`]), read once it has cached what
//! is stored ([`Reading`]), then stopped.
//!
//! - kube-apiserver (`$HERALD_KUBE_APISERVER`, else
//!   `target/tools/kube-apiserver-v1.37.2` of the workspace, which
//!   `scripts/ensure-kube-apiserver.sh` builds): on loopback with a
//!   service-account key pair made by `openssl`, a token file (one admin
//!   token), `AlwaysAllow`, self-signed serving certificates in a
//!   directory of its own. Ready once `/readyz` answers 200 and a list of
//!   pods from its watch cache (`resourceVersion=0`) answers 200 (a
//!   cache still initialising answers 429). Then a full garbage
//!   collection (`/debug/pprof/heap?gc=1`, whose `debug=1` text ends with
//!   the `runtime.MemStats` read after it: `HeapInuse`, `HeapAlloc`), then
//!   its resident memory.
//! - herald-server (`$HERALD_SERVER`, else `herald-server` beside this
//!   binary: `cargo build --release -p herald-server --bin herald-server`)
//!   with `--etcd ... --resources pods`. Ready once `/readyz` answers 200
//!   (every stored pod decoded and cached). Then its resident memory (it
//!   exposes no allocator statistics: mimalloc's are not reachable from
//!   outside).
//!
//! Resident memory is read from `/proc/<pid>/status` (`VmRSS`, and
//! `RssAnon`: the anonymous part, heap and stacks, without the mapped
//! binary) once it has settled: sampled every 250 ms until two samples a
//! second apart differ by under 1% (at most 10 s).
//!
//! Requests go through `curl` (the apiserver serves TLS only; the harness
//! has no TLS client), a handful per reading, outside what is measured.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use etcd_client::{Client, Txn, TxnOp};

use crate::kind::SystemKind;
use crate::machine::{CpuUse, CpuWindow};
use crate::pods::{Encoding, Placement, Stored};

/// The admin token the apiserver is started with.
const TOKEN: &str = "admin-token";

/// The longest a server may take to be ready.
const READY_TIMEOUT: Duration = Duration::from_secs(600);

/// The etcd prefix (the apiserver's `--etcd-prefix`) that holds the pods.
pub const FULL_PREFIX: &str = "/registry";

/// The prefix that holds none (what the apiserver writes itself aside).
pub const EMPTY_PREFIX: &str = "/herald-perf-empty";

/// Namespaces the pods are spread over.
pub const NAMESPACES: u64 = 50;

/// Nodes the pods are spread over.
pub const NODES: u64 = 1_000;

/// The binaries the scenario runs.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// kube-apiserver.
    pub apiserver: PathBuf,
    /// herald-server (release).
    pub herald: PathBuf,
}

impl Binaries {
    /// Finds both, or says which is missing and how to get it.
    pub fn find() -> anyhow::Result<Binaries> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let apiserver = std::env::var_os("HERALD_KUBE_APISERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/tools/kube-apiserver-v1.37.2"));
        anyhow::ensure!(
            apiserver.is_file(),
            "no kube-apiserver at {} (set HERALD_KUBE_APISERVER, or run scripts/ensure-kube-apiserver.sh)",
            apiserver.display()
        );
        Ok(Binaries {
            apiserver,
            herald: herald_server()?,
        })
    }
}

/// herald-server: `HERALD_SERVER`, else beside the harness, or says how
/// to get it.
pub fn herald_server() -> anyhow::Result<PathBuf> {
    let herald = match std::env::var_os("HERALD_SERVER") {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()?
            .parent()
            .context("the harness's directory")?
            .join("herald-server"),
    };
    anyhow::ensure!(
        herald.is_file(),
        "no herald-server at {} (set HERALD_SERVER, or cargo build --release -p herald-server --bin herald-server)",
        herald.display()
    );
    Ok(herald)
}

/// Writes `n` pods (varied: [`Placement::spread`] over [`NAMESPACES`]
/// namespaces and [`NODES`] nodes, each drawn from its index) as the
/// apiserver stores them, protobuf, under `{FULL_PREFIX}/pods/NS/NAME`;
/// returns the mean value's bytes.
pub fn load_pods(endpoint: &str, n: usize) -> anyhow::Result<f64> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = Client::connect([endpoint], None).await?;
        let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let permits = Arc::new(tokio::sync::Semaphore::new(8));
        let mut tasks = Vec::new();
        // 100 puts per transaction (etcd takes at most 128).
        for start in (0..n).step_by(100) {
            let ops: Vec<TxnOp> = (start..(start + 100).min(n))
                .map(|i| {
                    let at = Placement::spread(i as u64, NAMESPACES, NODES);
                    let value = Stored::new(&at, i as u64, Encoding::Protobuf)?.with_write(0);
                    bytes.fetch_add(value.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    let key = format!("{FULL_PREFIX}/pods/{}/{}", at.namespace, at.name);
                    Ok(TxnOp::put(key, value, None))
                })
                .collect::<anyhow::Result<_>>()?;
            let permit = permits.clone().acquire_owned().await?;
            let mut c = client.clone();
            tasks.push(tokio::spawn(async move {
                let r = c.txn(Txn::new().and_then(ops)).await;
                drop(permit);
                r
            }));
        }
        for t in tasks {
            t.await?.context("a put of pods")?;
        }
        Ok(bytes.load(std::sync::atomic::Ordering::Relaxed) as f64 / n.max(1) as f64)
    })
}

/// The name of pod 0 (the one both servers' answers are compared on).
pub fn first_pod() -> (String, String) {
    let at = Placement::spread(0, NAMESPACES, NODES);
    (at.namespace, at.name)
}

/// What one server held once ready.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// From its start to ready (s).
    pub ready_s: f64,
    /// `VmRSS` once settled (bytes).
    pub rss: u64,
    /// `RssAnon` once settled (bytes).
    pub rss_anon: u64,
    /// Go's `HeapInuse` after a forced collection (the apiserver).
    pub heap_inuse: Option<u64>,
    /// Go's `HeapAlloc` after it.
    pub heap_alloc: Option<u64>,
    /// The 1-minute load average when read.
    pub load: f64,
    /// What the machine did from the start to the reading (the server's
    /// and etcd's CPU booked as the peer's).
    pub cpu: CpuUse,
    /// Pod 0 as the server serves it (JSON), when asked for.
    pub pod: Option<serde_json::Value>,
    /// The pods its first page of one said it holds (the page's items and
    /// its `remainingItemCount`), when it says.
    pub cached: Option<u64>,
}

/// The pods a one-item page of a list says there are.
fn listed(body: &[u8]) -> Option<u64> {
    let page: serde_json::Value = serde_json::from_slice(body).ok()?;
    let items = page["items"].as_array()?.len() as u64;
    let more = page["metadata"]["continue"]
        .as_str()
        .is_some_and(|c| !c.is_empty());
    match &page["metadata"]["remainingItemCount"] {
        // Without a continue token the page is the whole list.
        serde_json::Value::Null => (!more).then_some(items),
        v => Some(items + v.as_u64()?),
    }
}

/// The directory with the apiserver's keys, token file and certificates.
#[derive(Debug)]
pub struct ApiserverFiles {
    dir: PathBuf,
}

impl ApiserverFiles {
    /// Makes them (a 2048-bit RSA service-account key pair by `openssl`).
    pub fn make() -> anyhow::Result<ApiserverFiles> {
        let dir = std::env::temp_dir().join(format!("herald-perf-kas-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("certs"))?;
        let run = |args: &[&str]| -> anyhow::Result<()> {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .context("run openssl")?;
            anyhow::ensure!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        };
        run(&["genrsa", "-out", "sa.key", "2048"])?;
        run(&["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        std::fs::write(
            dir.join("tokens.csv"),
            format!("{TOKEN},admin,admin-uid,system:masters\n"),
        )?;
        Ok(ApiserverFiles { dir })
    }
}

impl Drop for ApiserverFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server process, killed and reaped when dropped.
pub(crate) struct Running {
    pub(crate) child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound, then let go).
pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `curl` of `url` (the apiserver's token, certificates not checked):
/// (status, body).
pub(crate) fn curl(url: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    let out = Command::new("curl")
        .args(["-sk", "--max-time", "120", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(url)
        .output()
        .context("run curl")?;
    let body = out.stdout;
    let cut = body.iter().rposition(|&b| b == b'\n').unwrap_or(0);
    let code = std::str::from_utf8(&body[cut..]).unwrap_or("").trim();
    Ok((code.parse().unwrap_or(0), body[..cut].to_vec()))
}

/// Polls `url` until it answers 200, the server still running; the
/// answer's body.
pub(crate) fn wait_ok(
    url: &str,
    server: &mut Running,
    what: &str,
    since: Instant,
) -> anyhow::Result<Vec<u8>> {
    loop {
        if let Ok((200, body)) = curl(url) {
            return Ok(body);
        }
        if let Some(status) = server.child.try_wait()? {
            anyhow::bail!("{what}: the server exited ({status})");
        }
        anyhow::ensure!(
            since.elapsed() < READY_TIMEOUT,
            "{what}: not within {READY_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `VmRSS` and `RssAnon` of `pid` (bytes).
fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    };
    Some((kb("VmRSS:")?, kb("RssAnon:")?))
}

/// Resident memory once it settles (see the module's doc).
pub(crate) fn settled_rss(pid: u32) -> anyhow::Result<(u64, u64)> {
    let start = Instant::now();
    let mut seen: Vec<(u64, u64)> = Vec::new();
    loop {
        seen.push(rss(pid).context("read the server's resident memory")?);
        if seen.len() > 4 {
            let (now, before) = (seen[seen.len() - 1].0, seen[seen.len() - 5].0);
            if now.abs_diff(before) * 100 < before || start.elapsed() > Duration::from_secs(10) {
                return Ok(seen[seen.len() - 1]);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A number after `key` in a `runtime.MemStats` dump (`# HeapInuse = N`).
pub(crate) fn memstat(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("# {key} = ")))
        .and_then(|v| v.trim().parse().ok())
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Starts `system` on `etcd` (its pods under `prefix`), waits until it
/// has cached them, reads it, stops it. `pod`: also fetch pod 0.
pub fn measure(
    system: SystemKind,
    bins: &Binaries,
    files: &ApiserverFiles,
    etcd: (&str, u32),
    prefix: &str,
    pod: bool,
) -> anyhow::Result<Reading> {
    let (endpoint, etcd_pid) = etcd;
    let port = free_port()?;
    let window = CpuWindow::open();
    let etcd_cpu = crate::machine::process_cpu_ns(etcd_pid).unwrap_or(0);
    let start = Instant::now();
    let log = std::fs::File::create(files.dir.join(format!("{}.log", system.name())))?;
    let mut cmd = match system {
        SystemKind::KubeApiserver => {
            let mut c = Command::new(&bins.apiserver);
            c.arg(format!("--etcd-servers={endpoint}"))
                .arg(format!("--etcd-prefix={prefix}"))
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--secure-port={port}"))
                .arg(format!("--cert-dir={}", files.dir.join("certs").display()))
                .arg("--service-account-key-file=sa.pub")
                .arg("--service-account-signing-key-file=sa.key")
                .arg("--service-account-issuer=https://kubernetes.default.svc")
                .arg("--token-auth-file=tokens.csv")
                .arg("--authorization-mode=AlwaysAllow")
                .arg("--service-cluster-ip-range=10.96.0.0/16")
                .arg("--advertise-address=127.0.0.1")
                .arg("--endpoint-reconciler-type=none")
                .current_dir(&files.dir);
            c
        }
        SystemKind::HeraldServer => {
            let mut c = Command::new(&bins.herald);
            c.arg("--etcd")
                .arg(endpoint)
                .args(["--resources", "pods", "--etcd-prefix", prefix])
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"));
            c
        }
        other => anyhow::bail!("{} is not a server process", other.name()),
    };
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut server = Running {
        child: cmd
            .spawn()
            .with_context(|| format!("start {}", system.name()))?,
    };
    let pid = server.child.id();
    let mut reading = Reading::default();
    let base = match system {
        SystemKind::KubeApiserver => format!("https://127.0.0.1:{port}"),
        _ => format!("http://127.0.0.1:{port}"),
    };
    wait_ok(&format!("{base}/readyz"), &mut server, "/readyz", start)?;
    // The apiserver serves `resourceVersion=0` from its watch cache: 429
    // until the cache has listed.
    let page = wait_ok(
        &format!("{base}/api/v1/pods?resourceVersion=0&limit=1"),
        &mut server,
        "the pods cache",
        start,
    )?;
    reading.ready_s = start.elapsed().as_secs_f64();
    reading.cached = listed(&page);
    // The start-up's garbage and transient buffers: let both settle a
    // little before anything is read.
    std::thread::sleep(Duration::from_secs(2));
    if system == SystemKind::KubeApiserver {
        let (code, text) = curl(&format!("{base}/debug/pprof/heap?gc=1&debug=1"))?;
        anyhow::ensure!(code == 200, "/debug/pprof/heap answered {code}");
        let text = String::from_utf8_lossy(&text);
        reading.heap_inuse = memstat(&text, "HeapInuse");
        reading.heap_alloc = memstat(&text, "HeapAlloc");
        anyhow::ensure!(
            reading.heap_inuse.is_some(),
            "no HeapInuse in the heap profile"
        );
    }
    (reading.rss, reading.rss_anon) = settled_rss(pid)?;
    reading.load = load_average();
    let server_cpu = crate::machine::process_cpu_ns(pid).unwrap_or(0);
    let etcd_cpu = crate::machine::process_cpu_ns(etcd_pid)
        .unwrap_or(0)
        .saturating_sub(etcd_cpu);
    reading.cpu = window.close(&[]);
    reading.cpu.attribute_peer(server_cpu + etcd_cpu);
    if pod {
        let (ns, name) = first_pod();
        let (code, body) = curl(&format!("{base}/api/v1/namespaces/{ns}/pods/{name}"))?;
        anyhow::ensure!(code == 200, "GET pod {ns}/{name} answered {code}");
        reading.pod = Some(serde_json::from_slice(&body).context("the pod's JSON")?);
    }
    drop(server);
    Ok(reading)
}
