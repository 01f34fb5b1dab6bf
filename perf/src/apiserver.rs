//! The apiserver-fanout scenario's systems: N watch connections on the
//! real kube-apiserver (`kube-apiserver`), against the same N on
//! `herald-server --kubeconfig` in front of that apiserver
//! (`herald+apiserver`), on the same write stream through the apiserver.
//!
//! One [`ApiEnv`] serves every case and round of the scenario: a fresh
//! etcd ([`LocalEtcd`]), the real kube-apiserver on it
//! ([`LocalApiserver`]: TLS, a static `system:masters` token, which API
//! Priority and Fairness exempts, as it would an operator's), the release
//! `herald-server` following its pods through it (`--kubeconfig`, a
//! kubeconfig naming the apiserver's CA and the token; started afresh
//! before each of its runs, so that its memory per watcher is a fresh
//! process's growth), a namespace
//! `perf` with its `default` service account, and [`KEYS`] pods made
//! through the apiserver from [`crate::pods`]' realistic ones (created,
//! then their running status put through `/status`, as a kubelet would).
//!
//! - **The writes** go through the apiserver as a controller's would: a
//!   JSON merge patch of a pod's annotations (kube-rs's client over TLS
//!   and HTTP/1.1), one at a time, so that every watcher's order is the
//!   write order. Each patch sets [`WRITE_ANNOTATION`] to the change's
//!   version in the harness and a second annotation to the run's number
//!   (so the first write of a pod in a run always changes it). A write is
//!   stamped when it is sent and when its answer comes (the run's
//!   latency is from the send: [`Publisher::stamps_itself`]).
//! - **The watchers** are HTTP/1.1 connections, one per watcher, each a
//!   watch of every pod from the version the apiserver reported just
//!   before (`GET /api/v1/pods?watch=1&resourceVersion=R`): TLS with the
//!   token on the apiserver, plain on Herald (which serves no TLS yet). The
//!   harness's consumer threads read them as http-fanout's clients do
//!   ([`HttpSub`]), taking each event's version in the harness from the
//!   write annotation of its JSON line.
//! - **The servers' costs**, per run, once the last run's watches are gone
//!   from both servers: each process's CPU time
//!   (`schedstat` of its threads) over the run; the apiserver's Go heap
//!   after a forced collection (`/debug/pprof/heap?gc=1`: `HeapInuse`
//!   with the watches open, and the growth of `HeapAlloc`, its live
//!   objects, from before they opened); the watched server's resident memory before
//!   and after (per watcher: the difference over N); and how many pod
//!   watches the apiserver serves (`apiserver_longrunning_requests`, verb
//!   WATCH, pods, cluster scope) once they are open, besides its own (its
//!   informers', read before herald-server starts). The apiserver is
//!   never idle (its own controllers, leases, the watches' timers): its
//!   CPU over a second with the watches open and nothing written is read
//!   before each run, and its CPU per write is given as measured and
//!   above that idle rate.
//!
//! [`LocalEtcd`]: herald_testkit::etcd::LocalEtcd

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use herald_testkit::apiserver::LocalApiserver;
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::http::{HttpSub, start_watch};
use crate::kind::SystemKind;
use crate::machine::process_cpu_ns;
use crate::pods::{Placement, WRITE_ANNOTATION, pod_json};
use crate::servers::{Binaries, Running, curl, free_port, memstat, settled_rss, wait_ok};

use crate::system::{ApiserverUse, PeerUse, Publisher, Spec, Stamps, System};
use crate::workload::{Workload, node_name, pod_name};

/// The token the apiserver accepts (`system:masters`).
const TOKEN: &str = "herald-perf-token";

/// The namespace the pods are in.
const NAMESPACE: &str = "perf";

/// Pods made at the start and written in the runs (a workload's keys must
/// be below it).
pub const KEYS: u32 = 100;

/// Nodes the pods are spread over.
const NODES: u32 = 10;

/// The annotation the write before a run's measurements sets.
const FLUSH_ANNOTATION: &str = "perf.herald.dev/flush";

/// The annotation holding the run's number.
const RUN_ANNOTATION: &str = "perf.herald.dev/run";

/// How long the servers are left alone once the last run's watches are
/// gone (Herald's idle workers give freed pages back within a second or
/// two).
const QUIET: Duration = Duration::from_secs(3);

/// How long the apiserver's idle CPU is read before a run.
const IDLE_WINDOW: Duration = Duration::from_secs(1);

/// How long the watches of a run may take to open (10,000 TLS handshakes
/// on a busy 2-core machine take tens of seconds).
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);

/// What runs behind both systems for the whole scenario (stopped in the
/// fields' order when dropped: herald-server, the apiserver, etcd).
pub struct ApiEnv {
    /// Started again before each of its runs (see [`ApiEnv::restart_herald`]).
    herald: parking_lot::Mutex<Running>,
    herald_addr: SocketAddr,
    herald_bin: PathBuf,
    kubeconfig: PathBuf,
    api: LocalApiserver,
    api_addr: SocketAddr,
    /// Kept running until the scenario is over.
    _etcd: LocalEtcd,
    /// The clients' runtime: the writer, the set-up's requests, and the
    /// reactor the watch sockets are registered with.
    rt: Runtime,
    client: kube_client::Client,
    tls: TlsConnector,
    /// Runs so far (each run's writes carry its number).
    runs: AtomicU64,
    /// The pod watches the apiserver serves itself (its own informers),
    /// read before herald-server starts.
    own_watches: u64,
}

impl std::fmt::Debug for ApiEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiEnv")
            .field("apiserver", &self.api_addr)
            .field("herald", &self.herald_addr)
            .finish_non_exhaustive()
    }
}

/// Where pod `key` is.
fn placement(key: u32) -> Placement {
    Placement {
        namespace: NAMESPACE.into(),
        name: pod_name(key),
        node: node_name(key % NODES),
        app: "web".into(),
        hash: "5d8f9c7b4".into(),
    }
}

/// The harness's version of an event line: its write annotation.
fn write_rv(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"perf.herald.dev/write\":\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let digits = &line[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

impl ApiEnv {
    /// Starts etcd, the apiserver and herald-server, makes the pods, and
    /// waits until Herald has them.
    pub fn start(bins: &Binaries) -> anyhow::Result<Arc<ApiEnv>> {
        let bin = etcd_binary().map_err(|e| anyhow::anyhow!("no etcd here: {e}"))?;
        let etcd = LocalEtcd::start(&bin).map_err(|e| anyhow::anyhow!("etcd: {e}"))?;
        let api = LocalApiserver::start_binary(&bins.apiserver, &etcd.endpoint(), &[TOKEN])
            .map_err(|e| anyhow::anyhow!("kube-apiserver: {e}"))?;
        let api_addr: SocketAddr = api
            .url()
            .trim_start_matches("https://")
            .parse()
            .context("the apiserver's address")?;
        let kubeconfig = api.dir().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: perf\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: perf\n  user:\n    token: {TOKEN}\ncontexts:\n- name: perf\n  context:\n    cluster: perf\n    user: perf\ncurrent-context: perf\n",
                api.url(),
                api.ca().display()
            ),
        )?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("perf-api-clients")
            .enable_all()
            .build()
            .context("the clients' runtime")?;
        let client = rt.block_on(async {
            let file = kube_client::config::Kubeconfig::read_from(&kubeconfig)?;
            let config = kube_client::Config::from_custom_kubeconfig(
                file,
                &kube_client::config::KubeConfigOptions::default(),
            )
            .await?;
            anyhow::Ok(kube_client::Client::try_from(config)?)
        })?;
        rt.block_on(make_pods(&client))?;
        let own_watches = pod_watches(&api)?;
        let tls = tls_connector(&api.ca())?;
        let port = free_port()?;
        let herald_addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
        let herald = start_herald(
            &bins.herald,
            &kubeconfig,
            herald_addr,
            &api.dir().join("herald-server.log"),
        )?;
        Ok(Arc::new(ApiEnv {
            herald_bin: bins.herald.clone(),
            kubeconfig,
            rt,
            client,
            tls,
            api,
            api_addr,
            herald: parking_lot::Mutex::new(herald),
            herald_addr,
            _etcd: etcd,
            runs: AtomicU64::new(0),
            own_watches,
        }))
    }

    /// Stops herald-server and starts it again on the same address, ready
    /// (`/readyz`): each of its runs gets a fresh process, as each
    /// measurement of memory per watcher needs (a process that ran before
    /// keeps some of what it freed, which the next run's growth would not
    /// show), and the apiserver serves it one new watch.
    fn restart_herald(&self) -> anyhow::Result<()> {
        let mut herald = self.herald.lock();
        let _ = herald.child.kill();
        let _ = herald.child.wait();
        *herald = start_herald(
            &self.herald_bin,
            &self.kubeconfig,
            self.herald_addr,
            &self.api.dir().join("herald-server.log"),
        )?;
        Ok(())
    }

    fn api_pid(&self) -> anyhow::Result<u32> {
        self.api.pid().context("the apiserver is not running")
    }

    /// The apiserver's current resource version (a consistent list of
    /// one pod).
    fn current(&self) -> anyhow::Result<u64> {
        let page = self.rt.block_on(
            self.client
                .request_text(http::Request::get("/api/v1/pods?limit=1").body(Vec::new())?),
        )?;
        let page: Value = serde_json::from_str(&page)?;
        page["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .context("a list without a resourceVersion")
    }

    /// The apiserver's Go heap after forced collections: (`HeapInuse`,
    /// its spans; `HeapAlloc`, its live objects), bytes. Two collections:
    /// what `sync.Pool`s held through the first goes in the second.
    fn heap(&self) -> anyhow::Result<(u64, u64)> {
        let gc = || {
            self.api
                .curl("GET", "/debug/pprof/heap?gc=1&debug=1", None)
                .map_err(|e| anyhow::anyhow!("{e}"))
        };
        gc()?;
        let (code, text) = gc()?;
        anyhow::ensure!(code == 200, "/debug/pprof/heap answered {code}");
        let get = |key: &str| {
            memstat(&text, key).with_context(|| format!("no {key} in the heap profile"))
        };
        Ok((get("HeapInuse")?, get("HeapAlloc")?))
    }

    /// Opens one watch of every pod from `rv` on the apiserver (TLS, the
    /// token).
    async fn open_direct(&self, rv: u64) -> anyhow::Result<HttpSub<TlsStream<TcpStream>>> {
        let tcp = TcpStream::connect(self.api_addr).await.context("connect")?;
        tcp.set_nodelay(true)?;
        let name = rustls_pki_types::ServerName::IpAddress(self.api_addr.ip().into());
        let tls = self.tls.connect(name, tcp).await.context("TLS")?;
        let request = format!(
            "GET /api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=3600 HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n",
            self.api_addr
        );
        let mut sub = start_watch(tls, &request, false).await?;
        sub.version = write_rv;
        Ok(sub)
    }

    /// Opens one watch of every pod from `rv` on Herald.
    async fn open_herald(&self, rv: u64) -> anyhow::Result<HttpSub> {
        let tcp = TcpStream::connect(self.herald_addr)
            .await
            .context("connect")?;
        tcp.set_nodelay(true)?;
        let request = format!(
            "GET /api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=3600 HTTP/1.1\r\nHost: {}\r\n\r\n",
            self.herald_addr
        );
        let mut sub = start_watch(tcp, &request, false).await?;
        sub.version = write_rv;
        Ok(sub)
    }
}

/// Starts `herald-server --kubeconfig K --resources pods` on `addr`,
/// appending to `log`, and waits until it is ready.
fn start_herald(
    bin: &Path,
    kubeconfig: &Path,
    addr: SocketAddr,
    log: &Path,
) -> anyhow::Result<Running> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let started = Instant::now();
    let mut herald = Running {
        child: Command::new(bin)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--resources", "pods", "--listen"])
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?,
    };
    wait_ok(
        &format!("http://{addr}/readyz"),
        &mut herald,
        "herald-server's /readyz",
        started,
    )?;
    Ok(herald)
}

/// The pod watches (of every namespace) `api` serves now.
fn pod_watches(api: &LocalApiserver) -> anyhow::Result<u64> {
    let (code, body) = api
        .curl("GET", "/metrics", None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(code == 200, "/metrics answered {code}");
    Ok(body
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_longrunning_requests{")
                && l.contains(r#"resource="pods""#)
                && l.contains(r#"scope="cluster""#)
                && l.contains(r#"verb="WATCH""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

/// A TLS client trusting the apiserver's CA (a PEM file).
fn tls_connector(ca: &std::path::Path) -> anyhow::Result<TlsConnector> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).context("the apiserver's CA")? {
        roots.add(cert.context("a certificate of the CA file")?)?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// One request through the apiserver, its answer's JSON (an error with
/// the answer when it is not a success).
async fn send(
    client: &kube_client::Client,
    method: http::Method,
    path: &str,
    content_type: &str,
    body: &Value,
) -> anyhow::Result<Value> {
    let request = http::Request::builder()
        .method(method.clone())
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(serde_json::to_vec(body)?)?;
    let text = client
        .request_text(request)
        .await
        .with_context(|| format!("{method} {path}"))?;
    Ok(serde_json::from_str(&text)?)
}

/// The namespace, its service account, and the pods: each created
/// without what the apiserver sets, then given its running status.
async fn make_pods(client: &kube_client::Client) -> anyhow::Result<()> {
    const JSON: &str = "application/json";
    let post = http::Method::POST;
    send(
        client,
        post.clone(),
        "/api/v1/namespaces",
        JSON,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .await?;
    send(
        client,
        post.clone(),
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"),
        JSON,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
    )
    .await?;
    for key in 0..KEYS {
        let mut pod: Value = serde_json::from_str(&pod_json(&placement(key), key.into(), 0))?;
        let status = pod["status"].take();
        if let Some(meta) = pod["metadata"].as_object_mut() {
            for server_set in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
            ] {
                meta.remove(server_set);
            }
        }
        if let Some(p) = pod.as_object_mut() {
            p.remove("status");
        }
        let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
        let mut made = send(client, post.clone(), &path, JSON, &pod).await?;
        made["status"] = status;
        send(
            client,
            http::Method::PUT,
            &format!("{path}/{}/status", pod_name(key)),
            JSON,
            &made,
        )
        .await?;
    }
    Ok(())
}

/// The watchers on the apiserver itself.
#[derive(Debug, Clone)]
pub struct Direct(pub Arc<ApiEnv>);

/// The watchers on herald-server in front of it.
#[derive(Debug, Clone)]
pub struct Behind(pub Arc<ApiEnv>);

/// The watched server's pid, resident bytes and the apiserver's live Go
/// heap (`HeapAlloc` after a collection) before the watches open.
struct Before {
    pid: u32,
    rss: u64,
    heap: u64,
}

fn before(env: &ApiEnv, kind: SystemKind) -> anyhow::Result<Before> {
    quiesce(env)?;
    let pid = match kind {
        SystemKind::KubeApiserver => env.api_pid()?,
        _ => {
            env.restart_herald()?;
            env.herald.lock().child.id()
        }
    };
    Ok(Before {
        pid,
        rss: settled_rss(pid)?.0,
        heap: env.heap()?.1,
    })
}

/// Waits until the last run's watches are gone from both servers (the
/// apiserver serves only its own and Herald's pod watches; Herald has no
/// watch connection open), has the apiserver's watch cache drop them,
/// then waits a moment more, so that what they held is not counted
/// against the next run's memory.
fn quiesce(env: &ApiEnv) -> anyhow::Result<()> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    loop {
        let api = pod_watches(&env.api)?.saturating_sub(env.own_watches);
        let (code, body) = curl(&format!("http://{}/metrics", env.herald_addr))?;
        anyhow::ensure!(code == 200, "herald-server's /metrics answered {code}");
        let herald: f64 = String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| l.starts_with("herald_http_watch_connections{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        if api <= 2 && herald == 0.0 {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the last run's watches are still open: {api} on the apiserver, {herald} on herald-server"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // The apiserver's watch cache lets go of the watchers that ended only
    // when it next dispatches an event: one write no watcher of the next
    // run sees (it comes before their version) makes it.
    let flush = json!({"metadata": {"annotations": {
        FLUSH_ANNOTATION: env.runs.load(Ordering::Relaxed).to_string(),
    }}});
    env.rt.block_on(send(
        &env.client,
        http::Method::PATCH,
        &format!("/api/v1/namespaces/{NAMESPACE}/pods/{}", pod_name(0)),
        "application/merge-patch+json",
        &flush,
    ))?;
    std::thread::sleep(QUIET);
    Ok(())
}

/// Opens `n` watches from `rv` through `open`, a few hundred at a time.
fn open_all<S, F, Fut>(env: &ApiEnv, n: usize, open: F) -> anyhow::Result<Vec<S>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<S>>,
{
    env.rt
        .block_on(async {
            tokio::time::timeout(SETUP_TIMEOUT, async {
                let mut out = Vec::with_capacity(n);
                let mut left = n;
                while left > 0 {
                    let batch = left.min(256);
                    let opened = futures_util::future::join_all((0..batch).map(|_| open())).await;
                    for s in opened {
                        out.push(s?);
                    }
                    left -= batch;
                }
                anyhow::Ok(out)
            })
            .await
        })
        .map_err(|_| anyhow::anyhow!("opening {n} watches took over {SETUP_TIMEOUT:?}"))?
}

/// The run's publisher, once the watches are open.
fn writer(
    env: &Arc<ApiEnv>,
    kind: SystemKind,
    was: Before,
    n: usize,
    workload: &Arc<Workload>,
) -> anyhow::Result<ApiWriter> {
    let rss = settled_rss(was.pid)?.0;
    let (heap, live) = env.heap()?;
    // What the apiserver burns with the watches open and nothing written
    // (its own loops, the watches' bookmarks and timers), over a second.
    let api = env.api_pid()?;
    let (cpu0, t0) = (process_cpu_ns(api).unwrap_or(0), Instant::now());
    std::thread::sleep(IDLE_WINDOW);
    let idle_cores = process_cpu_ns(api).unwrap_or(0).saturating_sub(cpu0) as f64
        / 1e9
        / t0.elapsed().as_secs_f64();
    let per = |after: u64, before: u64| (after as f64 - before as f64) / n.max(1) as f64;
    Ok(ApiWriter {
        env: env.clone(),
        kind,
        server_pid: was.pid,
        workload: workload.clone(),
        run: env.runs.fetch_add(1, Ordering::Relaxed),
        tx: None,
        task: None,
        writes: Arc::new(AtomicU64::new(0)),
        failures: Arc::new(AtomicU64::new(0)),
        cpu_at_begin: None,
        sampler: None,
        server_per_watcher: per(rss, was.rss),
        heap_inuse: heap,
        heap_per_watcher: per(live, was.heap),
        watches: pod_watches(&env.api)?.saturating_sub(env.own_watches),
        idle_cores,
        began: None,
    })
}

impl System for Direct {
    type Pub = ApiWriter;
    type Sub = HttpSub<TlsStream<TcpStream>>;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(ApiWriter, Vec<Self::Sub>)> {
        check(spec, workload)?;
        let env = &self.0;
        let was = before(env, SystemKind::KubeApiserver)?;
        let rv = env.current()?;
        let subs = open_all(env, spec.filters.len(), || env.open_direct(rv))?;
        let w = writer(env, SystemKind::KubeApiserver, was, subs.len(), workload)?;
        Ok((w, subs))
    }
}

impl System for Behind {
    type Pub = ApiWriter;
    type Sub = HttpSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(ApiWriter, Vec<HttpSub>)> {
        check(spec, workload)?;
        let env = &self.0;
        let was = before(env, SystemKind::HeraldApiserver)?;
        let rv = env.current()?;
        // Herald has reached the apiserver's version (a list no older
        // than it waits until it has).
        let (code, body) = curl(&format!(
            "http://{}/api/v1/pods?limit=1&resourceVersion={rv}&resourceVersionMatch=NotOlderThan",
            env.herald_addr
        ))?;
        anyhow::ensure!(
            code == 200,
            "herald-server did not reach version {rv}: {code} {}",
            String::from_utf8_lossy(&body)
        );
        let subs = open_all(env, spec.filters.len(), || env.open_herald(rv))?;
        let w = writer(env, SystemKind::HeraldApiserver, was, subs.len(), workload)?;
        Ok((w, subs))
    }
}

/// The watchers start from the list, every pod written is one of ours.
fn check(spec: &Spec, workload: &Workload) -> anyhow::Result<()> {
    anyhow::ensure!(
        spec.start == 0 && spec.preloaded == 0,
        "apiserver-fanout watches from the list's version"
    );
    anyhow::ensure!(
        workload.changes.iter().all(|c| c.key < KEYS),
        "apiserver-fanout writes pods 0..{KEYS}"
    );
    Ok(())
}

/// The writes of a run (through the apiserver, one at a time), and what
/// the servers cost over it.
pub struct ApiWriter {
    env: Arc<ApiEnv>,
    kind: SystemKind,
    /// The process the watchers are connected to.
    server_pid: u32,
    workload: Arc<Workload>,
    run: u64,
    tx: Option<tokio::sync::mpsc::Sender<usize>>,
    task: Option<tokio::task::JoinHandle<()>>,
    writes: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    /// (the watched server's, the apiserver's) CPU time at the start.
    cpu_at_begin: Option<(u64, u64)>,
    sampler: Option<crate::etcd::Sampler>,
    server_per_watcher: f64,
    heap_inuse: u64,
    heap_per_watcher: f64,
    watches: u64,
    idle_cores: f64,
    /// When the run's writes began.
    began: Option<Instant>,
}

impl std::fmt::Debug for ApiWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiWriter")
            .field("kind", &self.kind)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl ApiWriter {
    /// Waits for every write handed over to return.
    fn drain(&mut self) {
        drop(self.tx.take());
        if let Some(task) = self.task.take() {
            let _ = self.env.rt.block_on(task);
        }
        let failed = self.failures.swap(0, Ordering::Relaxed);
        if failed > 0 {
            eprintln!("herald-perf: apiserver-fanout: {failed} write(s) failed");
        }
    }
}

impl Publisher for ApiWriter {
    fn publish(&mut self, i: usize) {
        if let Some(tx) = &self.tx {
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
        let (tx, mut rx) = tokio::sync::mpsc::channel::<usize>(1_024);
        let client = self.env.client.clone();
        let workload = self.workload.clone();
        let run = self.run.to_string();
        let (sent, acked) = (sent.clone(), acked.clone());
        let (writes, failures) = (self.writes.clone(), self.failures.clone());
        self.task = Some(self.env.rt.spawn(async move {
            while let Some(i) = rx.recv().await {
                let change = &workload.changes[i];
                let path = format!(
                    "/api/v1/namespaces/{NAMESPACE}/pods/{}",
                    pod_name(change.key)
                );
                let patch = json!({"metadata": {"annotations": {
                    WRITE_ANNOTATION: format!("{:010}", change.rv),
                    RUN_ANNOTATION: run,
                }}});
                let at = sent.now();
                match send(
                    &client,
                    http::Method::PATCH,
                    &path,
                    "application/merge-patch+json",
                    &patch,
                )
                .await
                {
                    Ok(_) => {
                        acked.mark(i);
                        sent.set(i, at);
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        if failures.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("herald-perf: apiserver-fanout: a write failed: {e:#}");
                        }
                    }
                }
            }
        }));
        self.tx = Some(tx);
        let cpu = |pid: u32| process_cpu_ns(pid).unwrap_or(0);
        let api = self.env.api_pid().map_or(0, cpu);
        self.cpu_at_begin = Some((cpu(self.server_pid), api));
        self.began = Some(Instant::now());
        self.sampler = Some(crate::etcd::Sampler::start(self.server_pid));
    }

    fn end(&mut self) -> Option<PeerUse> {
        self.drain();
        let cpu = |pid: u32| process_cpu_ns(pid).unwrap_or(0);
        let (server0, api0) = self.cpu_at_begin?;
        let server = cpu(self.server_pid).saturating_sub(server0) as f64 / 1e9;
        let api = self.env.api_pid().map_or(0, cpu).saturating_sub(api0) as f64 / 1e9;
        let (rss, _) = self
            .sampler
            .take()
            .map(crate::etcd::Sampler::finish)
            .unwrap_or_default();
        let writes = self.writes.load(Ordering::Relaxed);
        let secs = self.began.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let above_idle = (api - self.idle_cores * secs).max(0.0);
        Some(PeerUse {
            cpu_s: server,
            rss_peak_bytes: rss,
            server_bytes_per_connection: Some(self.server_per_watcher),
            apiserver: Some(ApiserverUse {
                cpu_s: api,
                us_per_write: api * 1e6 / writes.max(1) as f64,
                idle_cores: self.idle_cores,
                us_per_write_above_idle: above_idle * 1e6 / writes.max(1) as f64,
                heap_inuse_bytes: self.heap_inuse,
                heap_per_watcher: self.heap_per_watcher,
                watches: self.watches,
            }),
            ..PeerUse::default()
        })
    }
}

impl Drop for ApiWriter {
    fn drop(&mut self) {
        self.drain();
        if let Some(s) = self.sampler.take() {
            s.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_write_annotation_of_an_event_line() {
        let pod = pod_json(&placement(3), 3, 42);
        let line = format!("{{\"type\":\"MODIFIED\",\"object\":{pod}}}");
        assert_eq!(write_rv(line.as_bytes()), Some(42));
        assert_eq!(write_rv(b"{\"type\":\"MODIFIED\"}"), None);
    }
}
