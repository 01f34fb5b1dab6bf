//! herald-server served from a child process: the harness's own binary,
//! started as `herald-perf __http-server`, so the server's descriptors,
//! threads and heap are its own (10,000 connections are 10,000
//! descriptors on each side, which one process under this machine's
//! 20,000 limit could not hold) and its CPU is measured alone.
//!
//! The parent writes the workload once, then drives the child over its
//! stdin; the child answers on its stdout, one line per question.
//!
//! ```text
//! parent -> child   "HHP1" u32 pods, pods x u32 node,
//!                   u32 changes, changes x (u32 key, u32 node, u64 rv)
//! child  -> parent  "listening ADDR"         (the engine has listed)
//! parent -> child   'p' u32 i                put change i (no answer)
//!                   'w' u64 n                "watchers N heap BYTES" once
//!                                            N >= n watches are open
//!                   'f'                      "taken MISMATCHES" (every put
//!                                            before it was made)
//!                   end of input             the child stops and exits 0
//! ```
//!
//! Every number is little-endian. `heap` is the child's live heap since
//! it started listening (the counting allocator). A failure is a line
//! `error TEXT` and exit status 1.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use herald::{MemorySource, Object};
use herald_kube::ResourceInfo;
use herald_server::{AccessConfig, Server, ServerConfig, resource_on};

use super::Pods;
use crate::alloc::Counting;
use crate::workload::Workload;

/// The argument that makes `herald-perf` the child server.
pub const ARG: &str = "__http-server";

const MAGIC: &[u8; 4] = b"HHP1";

/// How long the child waits for its engine to list or its watches to
/// open.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The child's side: serves until its input ends. Returns the process's
/// exit status.
pub fn main() -> std::process::ExitCode {
    no_transparent_huge_pages();
    let mut out = std::io::stdout().lock();
    // `__http-server --tls DIR`: TLS, the token file and RBAC (see
    // `super::secure`).
    let args: Vec<String> = std::env::args().collect();
    let tls = args
        .iter()
        .position(|a| a == "--tls")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    match serve(&mut std::io::stdin().lock(), &mut out, tls.as_deref()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(out, "error {}", format!("{e:#}").replace('\n', " "));
            let _ = out.flush();
            std::process::ExitCode::FAILURE
        }
    }
}

/// What `herald-server` does at start (see its `main.rs`): transparent
/// huge pages off, unless `MIMALLOC_ALLOW_THP` is set, so that the server
/// measured here is the one operators run. mimalloc advises huge pages
/// on what it maps and gives freed pages back; a fan-out server's bursts
/// then re-fault them, zeroing 2 MiB per fault (measured here on a
/// machine in `madvise` mode: 1,000 connections took 4.3 ms of server
/// CPU per 1,000 deliveries with them, 2.1 without).
fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes no
        // pointer; it sets a flag on this process's memory map, and fails
        // harmlessly on a kernel without it.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// The objects of a workload: the listed pods, and one per change.
struct Objects {
    initial: Vec<Object>,
    changes: Vec<(Object, u64)>,
}

fn read_workload(r: &mut impl Read) -> anyhow::Result<Objects> {
    let mut magic = [0; 4];
    r.read_exact(&mut magic).context("the header")?;
    anyhow::ensure!(&magic == MAGIC, "not an http-fanout parent: {magic:?}");
    let n = read_u32(r)?;
    let pods = Pods::new(n);
    let initial = (0..n)
        .map(|k| Ok(pods.object(k, read_u32(r)?, Workload::LIST_RV)))
        .collect::<std::io::Result<_>>()?;
    let n = read_u32(r)?;
    let changes = (0..n)
        .map(|_| {
            let (key, node, rv) = (read_u32(r)?, read_u32(r)?, read_u64(r)?);
            anyhow::ensure!(key < pods.templates.len() as u32, "change of pod {key}");
            Ok((pods.object(key, node, rv), rv))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Objects { initial, changes })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "{what} within {SETUP_TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn serve(
    input: &mut impl Read,
    out: &mut impl Write,
    tls: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let objects = read_workload(input)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("perf-http-server")
        .enable_all()
        .build()
        .context("the server's runtime")?;
    let source = MemorySource::seeded(objects.initial, Workload::LIST_RV.into());
    let pods = resource_on(ResourceInfo::pods(), Arc::new(source.clone()))
        .map_err(|e| anyhow::anyhow!("the pods resource: {e}"))?;
    let engine = pods.engine().clone();
    let mut resources = vec![pods];
    if tls.is_some() {
        resources.extend(super::secure::rbac_resources()?);
    }
    let server = Server::new(resources, ServerConfig::default());
    let serving_tls = match tls {
        None => None,
        Some(dir) => {
            let access = AccessConfig {
                tls_cert_file: Some(dir.join("tls.crt")),
                tls_private_key_file: Some(dir.join("tls.key")),
                token_auth_file: Some(dir.join("tokens.csv")),
                ..AccessConfig::default()
            };
            let built = access
                .build(&server, None)
                .map_err(|e| anyhow::anyhow!("access: {e}"))?
                .context("access control")?;
            server.set_access(built);
            access.tls().map_err(|e| anyhow::anyhow!("{e}"))?
        }
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .context("bind the server")?;
    let addr = listener.local_addr()?;
    let serving = server.clone();
    runtime.spawn(async move {
        let _ = match serving_tls {
            Some(t) => serving.serve_tls(listener, t, std::future::pending()).await,
            None => serving.serve(listener, std::future::pending()).await,
        };
    });
    wait_for("the engine listed", || {
        engine.resource_version().get() >= Workload::LIST_RV
    })?;
    wait_for("the RBAC snapshot", || server.access_ready())?;
    Counting::enable();
    writeln!(out, "listening {addr}")?;
    out.flush()?;
    let mut mismatches = 0u64;
    let mut tag = [0u8; 1];
    loop {
        match input.read_exact(&mut tag) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e).context("the parent's input"),
        }
        match tag[0] {
            b'p' => {
                let i = read_u32(input)? as usize;
                let (object, rv) = objects
                    .changes
                    .get(i)
                    .with_context(|| format!("change {i} of {}", objects.changes.len()))?;
                if source.put(object.clone()).get() != *rv {
                    mismatches += 1;
                }
            }
            b'w' => {
                let n = read_u64(input)?;
                wait_for(&format!("{n} watches open"), || {
                    engine.stats().watchers_active >= n
                })?;
                writeln!(
                    out,
                    "watchers {} heap {}",
                    engine.stats().watchers_active,
                    Counting::live()
                )?;
                out.flush()?;
            }
            b'f' => {
                writeln!(out, "taken {mismatches}")?;
                out.flush()?;
            }
            other => anyhow::bail!("unknown command {other:#x}"),
        }
    }
    for r in server.resources() {
        r.engine().stop();
    }
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

/// The parent's side: the child process and its pipes.
pub struct ServerProcess {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    addr: std::net::SocketAddr,
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProcess")
            .field("pid", &self.child.id())
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ServerProcess {
    /// Starts this binary as the child server of `workload` (over TLS with
    /// `tls`'s material), and waits until it serves.
    pub fn start(
        workload: &Workload,
        tls: Option<&super::secure::Material>,
    ) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("the harness's own binary")?;
        let mut command = Command::new(&exe);
        command.arg(ARG);
        if let Some(m) = tls {
            command.arg("--tls").arg(m.dir());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("start {} {ARG}", exe.display()))?;
        let input = child.stdin.take().context("the child's stdin")?;
        let output = BufReader::new(child.stdout.take().context("the child's stdout")?);
        let mut server = ServerProcess {
            child,
            input: Some(input),
            output,
            addr: ([127, 0, 0, 1], 0).into(),
        };
        let mut header = Vec::with_capacity(12 + 4 * workload.initial.len());
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&u32::try_from(workload.initial.len())?.to_le_bytes());
        for &node in &workload.initial {
            header.extend_from_slice(&node.to_le_bytes());
        }
        header.extend_from_slice(&u32::try_from(workload.changes.len())?.to_le_bytes());
        for c in &workload.changes {
            header.extend_from_slice(&c.key.to_le_bytes());
            header.extend_from_slice(&c.node.to_le_bytes());
            header.extend_from_slice(&c.rv.to_le_bytes());
        }
        server.send(&header)?;
        let line = server.answer()?;
        let addr = line
            .strip_prefix("listening ")
            .with_context(|| format!("the child said {line:?}"))?;
        server.addr = addr
            .parse()
            .with_context(|| format!("its address {addr:?}"))?;
        Ok(server)
    }

    /// Where it serves.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let input = self.input.as_mut().context("the child's input is closed")?;
        input.write_all(bytes).context("write to the child server")
    }

    /// The child's next line (an `error` line is the error).
    fn answer(&mut self) -> anyhow::Result<String> {
        let mut line = String::new();
        let n = self
            .output
            .read_line(&mut line)
            .context("read from the child server")?;
        anyhow::ensure!(n > 0, "the child server exited");
        let line = line.trim_end().to_owned();
        if let Some(e) = line.strip_prefix("error ") {
            anyhow::bail!("the child server: {e}");
        }
        Ok(line)
    }

    /// Puts change `i` (one write on the pipe; the child makes it as soon
    /// as it reads it).
    pub fn put(&mut self, i: usize) -> anyhow::Result<()> {
        let mut frame = [b'p', 0, 0, 0, 0];
        frame[1..].copy_from_slice(&u32::try_from(i)?.to_le_bytes());
        self.send(&frame)
    }

    /// Waits until `n` watches are open on the server; returns its live
    /// heap (bytes since it began listening).
    pub fn wait_watchers(&mut self, n: usize) -> anyhow::Result<i64> {
        let mut frame = [b'w', 0, 0, 0, 0, 0, 0, 0, 0];
        frame[1..].copy_from_slice(&(n as u64).to_le_bytes());
        self.send(&frame)?;
        let line = self.answer()?;
        line.split_once(" heap ")
            .and_then(|(_, heap)| heap.parse().ok())
            .with_context(|| format!("the child said {line:?}"))
    }

    /// Returns once the child has made every put sent before; the count
    /// of puts whose revision was not the workload's.
    pub fn taken(&mut self) -> anyhow::Result<u64> {
        self.send(b"f")?;
        let line = self.answer()?;
        line.strip_prefix("taken ")
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("the child said {line:?}"))
    }
}

impl Drop for ServerProcess {
    /// Ends the child's input, waits a while for it to exit, then kills it.
    fn drop(&mut self) {
        drop(self.input.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("herald-perf: http-fanout: the child server did not exit: killed");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
