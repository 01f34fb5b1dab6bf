//! Local etcd servers and clusters for tests and benchmarks.
//!
//! [`LocalEtcd`] runs one etcd member, [`LocalCluster`] several, as child
//! processes listening on free loopback ports (`127.0.0.1` only), each with
//! a fresh data directory under [`std::env::temp_dir`]. Both wait until
//! etcd reports itself healthy before they return, can kill a member with
//! `SIGKILL` and restart it on the same data directory and ports, and kill
//! every member and delete their directories when dropped.
//!
//! The etcd binary comes from [`etcd_binary`] (etcd >= 3.5.13) or
//! [`old_etcd_binary`] (the etcd 3.4 build used to check that Herald refuses
//! to trust that version's progress notifications). `scripts/ensure-etcd.sh`
//! installs both into `target/tools/` of the workspace:
//!
//! ```text
//! eval "$(scripts/ensure-etcd.sh)"   # exports HERALD_ETCD and HERALD_ETCD_OLD
//! ```
//!
//! Members run with `--unsafe-no-fsync` when the binary has that flag (etcd
//! 3.5 does, 3.4 does not): a killed process loses nothing, since its writes
//! are in the kernel's page cache, but a power loss would.
//!
//! # Example
//!
//! ```no_run
//! use herald_etcd::local::{LocalCluster, LocalError, LocalEtcd, etcd_binary};
//!
//! # fn main() -> Result<(), LocalError> {
//! let bin = etcd_binary()?;
//!
//! let mut etcd = LocalEtcd::start(&bin)?;
//! println!("etcd {:?} at {}", bin.version(), etcd.endpoint());
//! etcd.kill(); // SIGKILL
//! etcd.restart()?; // same data directory and port
//!
//! let mut cluster = LocalCluster::start(&bin, 3)?;
//! let leader = cluster.leader()?;
//! cluster.kill(leader);
//! let new_leader = cluster.leader()?; // waits for the election
//! assert_ne!(leader, new_leader);
//! # Ok(())
//! # }
//! ```

use std::error::Error;
use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The oldest etcd [`etcd_binary`] accepts: 3.5.13 fixed the progress
/// notifications that could skip events (etcd bug #15220).
pub const MIN_ETCD_VERSION: (u32, u32, u32) = (3, 5, 13);

/// The environment variable naming the etcd binary [`etcd_binary`] uses.
pub const ETCD_ENV: &str = "HERALD_ETCD";

/// The environment variable naming the etcd binary [`old_etcd_binary`] uses.
pub const OLD_ETCD_ENV: &str = "HERALD_ETCD_OLD";

/// How to get the binaries; every error about a missing or unusable binary
/// says it.
const INSTALL_HINT: &str = "run `eval \"$(scripts/ensure-etcd.sh)\"` from the workspace root \
     (it installs etcd into target/tools/ and exports HERALD_ETCD and HERALD_ETCD_OLD)";

/// How long a start or restart waits for etcd to report itself healthy.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// How long [`LocalCluster::leader`] waits for the live members to agree on
/// a leader.
const LEADER_TIMEOUT: Duration = Duration::from_secs(15);

/// How often health and leadership are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Starts attempted when a port picked as free was taken before etcd bound it.
const START_ATTEMPTS: usize = 3;

/// How many of the last lines of a member's log an error quotes.
const LOG_TAIL_LINES: usize = 30;

/// An error starting, restarting or inspecting a local etcd.
#[derive(Debug)]
#[non_exhaustive]
pub enum LocalError {
    /// No etcd binary was found in any of the places searched.
    NotFound {
        /// What was searched, in order.
        searched: Vec<String>,
    },
    /// The binary could not be run, or its `--version` output not parsed.
    Unusable {
        /// The binary.
        path: PathBuf,
        /// What went wrong, and where the path came from.
        detail: String,
    },
    /// The binary is older than [`MIN_ETCD_VERSION`].
    TooOld {
        /// The binary.
        path: PathBuf,
        /// Its version.
        version: (u32, u32, u32),
        /// The oldest accepted.
        minimum: (u32, u32, u32),
    },
    /// A cluster of no members was asked for.
    NoMembers,
    /// A member index past the end of the cluster.
    NoSuchMember {
        /// The index asked for.
        index: usize,
        /// How many members the cluster has.
        members: usize,
    },
    /// A file system or process operation failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: io::Error,
    },
    /// An etcd member exited before it became healthy.
    Exited {
        /// The member's name.
        member: String,
        /// How it exited.
        status: ExitStatus,
        /// The last lines of its log (stdout and stderr).
        log_tail: String,
    },
    /// An etcd member did not report itself healthy in time (it was killed).
    Unhealthy {
        /// The member's name.
        member: String,
        /// Its client URL.
        endpoint: String,
        /// How long it was waited for.
        waited: Duration,
        /// The last lines of its log (stdout and stderr).
        log_tail: String,
    },
    /// The live members did not agree on a leader in time.
    NoLeader {
        /// How long it was waited for.
        waited: Duration,
        /// What each live member last reported.
        detail: String,
    },
}

impl fmt::Display for LocalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalError::NotFound { searched } => write!(
                f,
                "no etcd binary found (searched: {}); {INSTALL_HINT}",
                searched.join("; ")
            ),
            LocalError::Unusable { path, detail } => write!(
                f,
                "etcd binary {} is unusable: {detail}; {INSTALL_HINT}",
                path.display()
            ),
            LocalError::TooOld {
                path,
                version,
                minimum,
            } => write!(
                f,
                "etcd binary {} is version {}, older than the {} Herald needs; {INSTALL_HINT} \
                 or point {ETCD_ENV} at a newer etcd",
                path.display(),
                dotted(*version),
                dotted(*minimum)
            ),
            LocalError::NoMembers => f.write_str("a local etcd cluster needs at least one member"),
            LocalError::NoSuchMember { index, members } => write!(
                f,
                "no etcd member {index}: the cluster has {members} member(s)"
            ),
            LocalError::Io { context, source } => write!(f, "{context}: {source}"),
            LocalError::Exited {
                member,
                status,
                log_tail,
            } => write!(
                f,
                "etcd member {member} exited ({status}) before it became healthy; \
                 the end of its log:\n{log_tail}"
            ),
            LocalError::Unhealthy {
                member,
                endpoint,
                waited,
                log_tail,
            } => write!(
                f,
                "etcd member {member} ({endpoint}) was not healthy after {waited:?} and was \
                 killed; the end of its log:\n{log_tail}"
            ),
            LocalError::NoLeader { waited, detail } => write!(
                f,
                "the live etcd members did not agree on a leader within {waited:?} \
                 (last reports: {detail})"
            ),
        }
    }
}

impl Error for LocalError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LocalError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An `io::Error` with what was being done.
fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> LocalError {
    let context = context.into();
    move |source| LocalError::Io { context, source }
}

/// "3.5.16".
fn dotted((major, minor, patch): (u32, u32, u32)) -> String {
    format!("{major}.{minor}.{patch}")
}

/// The version in `etcd --version` output ("etcd Version: 3.5.16").
fn parse_version(output: &str) -> Option<(u32, u32, u32)> {
    let line = output
        .lines()
        .find_map(|line| line.trim().strip_prefix("etcd Version:"))?;
    let mut parts = line.trim().splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    // The patch may carry a suffix ("3.6.0-rc.1", "3.5.16+dev").
    let patch = parts.next()?;
    let digits = patch
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(patch.len());
    let patch = patch[..digits].parse().ok()?;
    Some((major, minor, patch))
}

/// An etcd server binary and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdBinary {
    path: PathBuf,
    version: (u32, u32, u32),
    /// Whether it has `--unsafe-no-fsync` (added in etcd 3.5).
    no_fsync_flag: bool,
}

impl EtcdBinary {
    /// The binary at `path`, with its version read from `etcd --version`.
    /// No minimum version is required.
    pub fn at(path: impl Into<PathBuf>) -> Result<EtcdBinary, LocalError> {
        EtcdBinary::probe(path.into(), "")
    }

    /// [`EtcdBinary::at`], with where the path came from for errors.
    fn probe(path: PathBuf, origin: &str) -> Result<EtcdBinary, LocalError> {
        let unusable = |detail: String| LocalError::Unusable {
            path: path.clone(),
            detail: format!("{detail}{origin}"),
        };
        if !path.is_file() {
            return Err(unusable("no such file".to_owned()));
        }
        let run = |flag: &str| {
            Command::new(&path)
                .arg(flag)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| unusable(format!("cannot run `{} {flag}`: {e}", path.display())))
        };
        let out = run("--version")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(unusable(format!(
                "`{} --version` failed ({}): {}{}",
                path.display(),
                out.status,
                stdout.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let version = parse_version(&stdout).ok_or_else(|| {
            unusable(format!(
                "no \"etcd Version: X.Y.Z\" line in `--version` output {:?}",
                stdout.trim()
            ))
        })?;
        let help = run("--help")?;
        let no_fsync_flag = [&help.stdout, &help.stderr]
            .iter()
            .any(|text| String::from_utf8_lossy(text).contains("--unsafe-no-fsync"));
        Ok(EtcdBinary {
            path,
            version,
            no_fsync_flag,
        })
    }

    /// The binary's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its version, as (major, minor, patch).
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }
}

/// The workspace root (this crate is `<root>/sources/etcd`).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// `name` in a directory of `$PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The binary named by `$var`, else the one under `target/tools/<tools_dir>`,
/// else (if `use_path`) `etcd` on `$PATH`.
fn locate(var: &str, tools_dir: &str, use_path: bool) -> Result<EtcdBinary, LocalError> {
    let mut searched = Vec::new();
    match std::env::var_os(var) {
        Some(path) if !path.is_empty() => {
            return EtcdBinary::probe(PathBuf::from(path), &format!(" (from ${var})"));
        }
        _ => searched.push(format!("${var} (unset)")),
    }
    let tools = workspace_root()
        .join("target/tools")
        .join(tools_dir)
        .join("usr/bin/etcd");
    if tools.is_file() {
        return EtcdBinary::probe(tools, "");
    }
    searched.push(tools.display().to_string());
    if use_path {
        if let Some(path) = on_path("etcd") {
            return EtcdBinary::probe(path, " (etcd on $PATH)");
        }
        searched.push("etcd on $PATH".to_owned());
    }
    Err(LocalError::NotFound { searched })
}

/// The etcd binary for tests and benchmarks: `$HERALD_ETCD`, else
/// `<workspace>/target/tools/etcd-3.5/usr/bin/etcd` (where
/// `scripts/ensure-etcd.sh` puts it), else `etcd` on `$PATH`.
///
/// Fails if none is found, if it cannot be run, or if it is older than
/// [`MIN_ETCD_VERSION`].
pub fn etcd_binary() -> Result<EtcdBinary, LocalError> {
    let bin = locate(ETCD_ENV, "etcd-3.5", true)?;
    if bin.version < MIN_ETCD_VERSION {
        return Err(LocalError::TooOld {
            path: bin.path,
            version: bin.version,
            minimum: MIN_ETCD_VERSION,
        });
    }
    Ok(bin)
}

/// The old etcd binary (3.4, with etcd bug #15220): `$HERALD_ETCD_OLD`, else
/// `<workspace>/target/tools/etcd-3.4/usr/bin/etcd` (where
/// `scripts/ensure-etcd.sh` puts it). No minimum version.
pub fn old_etcd_binary() -> Result<EtcdBinary, LocalError> {
    locate(OLD_ETCD_ENV, "etcd-3.4", false)
}

/// A new, empty, uniquely named directory under the system's temp dir.
fn fresh_dir() -> Result<PathBuf, LocalError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = std::env::temp_dir();
    loop {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = tmp.join(format!(
            "herald-etcd-{}-{}-{nanos:08x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(format!("create {}", dir.display()))(e)),
        }
    }
}

/// `n` loopback ports that were free a moment ago (all held at once, so
/// they are distinct).
fn free_ports(n: usize) -> Result<Vec<u16>, LocalError> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_error("bind 127.0.0.1:0 to find a free port"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_error("read a bound port"))
}

/// `http://127.0.0.1:port`.
fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// One HTTP/1.0 request to `127.0.0.1:port`: the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> io::Result<(u16, String)> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    // HTTP/1.0: the server closes the connection after a plain, unchunked body.
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = Vec::new();
    stream.take(1 << 20).read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response);
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed HTTP response");
    let (head, body) = response.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok((status, body.to_owned()))
}

/// Whether the member at `port` answers `GET /health` with `"health":"true"`.
fn healthy(port: u16) -> bool {
    match http(port, "GET", "/health", "") {
        Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body)
            .map(|v| v["health"] == "true")
            .unwrap_or(false),
        _ => false,
    }
}

/// A uint64 of etcd's JSON gateway: a decimal string (or a number).
fn json_u64(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::String(s) => s.parse().ok(),
        v => v.as_u64(),
    }
}

/// The member at `port`'s (member id, the leader's member id; 0 for none),
/// from the gateway's `POST /v3/maintenance/status`.
fn status(port: u16) -> Result<(u64, u64), String> {
    let (code, body) =
        http(port, "POST", "/v3/maintenance/status", "{}").map_err(|e| e.to_string())?;
    if code != 200 {
        return Err(format!("HTTP {code}: {body}"));
    }
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let member = json_u64(&v["header"]["member_id"]);
    // An unset leader is omitted from the JSON.
    let leader = if v["leader"].is_null() {
        Some(0)
    } else {
        json_u64(&v["leader"])
    };
    match (member, leader) {
        (Some(member), Some(leader)) => Ok((member, leader)),
        _ => Err(format!("unexpected status response {body}")),
    }
}

/// The last [`LOG_TAIL_LINES`] lines of a log file.
fn log_tail(path: &Path) -> String {
    let mut text = Vec::new();
    if let Err(e) = File::open(path).and_then(|mut f| f.read_to_end(&mut text)) {
        return format!("(cannot read {}: {e})", path.display());
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    if tail.is_empty() {
        "(empty)".to_owned()
    } else {
        tail
    }
}

/// One member of a local cluster.
#[derive(Debug)]
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
    /// The member's stdout and stderr, appended across restarts.
    log: PathBuf,
    /// `None` once killed.
    child: Option<Child>,
    /// Its raft member id, learned once it is healthy (0 before).
    id: u64,
}

impl Member {
    /// SIGKILL (what `Child::kill` sends on unix), then reap.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Fails only if it already exited; then `wait` reaps it.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_))) | Some(Err(_)) | None => false,
        }
    }
}

/// Why one attempt to start a cluster failed.
enum StartFailure {
    /// A port picked as free was taken before etcd bound it: worth retrying.
    PortTaken(LocalError),
    Other(LocalError),
}

/// Several etcd members on loopback forming one cluster.
///
/// Dropping it kills every member and deletes their data directories and
/// logs.
#[derive(Debug)]
pub struct LocalCluster {
    bin: EtcdBinary,
    /// The temp directory holding every member's data directory and log.
    base: PathBuf,
    /// `--initial-cluster-token`.
    token: String,
    members: Vec<Member>,
}

impl LocalCluster {
    /// Starts a cluster of `members` members (all at once, since each waits
    /// for a quorum) and waits until every one is healthy.
    ///
    /// Retries with fresh ports, up to three times in all, if a port picked
    /// as free was taken before etcd could bind it.
    pub fn start(bin: &EtcdBinary, members: usize) -> Result<LocalCluster, LocalError> {
        if members == 0 {
            return Err(LocalError::NoMembers);
        }
        let mut attempt = 1;
        loop {
            match LocalCluster::try_start(bin, members) {
                Ok(cluster) => return Ok(cluster),
                Err(StartFailure::PortTaken(_)) if attempt < START_ATTEMPTS => attempt += 1,
                Err(StartFailure::PortTaken(e) | StartFailure::Other(e)) => return Err(e),
            }
        }
    }

    fn try_start(bin: &EtcdBinary, n: usize) -> Result<LocalCluster, StartFailure> {
        let base = fresh_dir().map_err(StartFailure::Other)?;
        let token = base
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "herald".to_owned());
        // From here on, dropping `cluster` cleans up.
        let mut cluster = LocalCluster {
            bin: bin.clone(),
            base,
            token,
            members: Vec::new(),
        };
        let ports = free_ports(2 * n).map_err(StartFailure::Other)?;
        for (i, pair) in ports.chunks_exact(2).enumerate() {
            let name = if n == 1 {
                "herald".to_owned()
            } else {
                format!("herald{i}")
            };
            cluster.members.push(Member {
                data_dir: cluster.base.join(format!("{name}.etcd")),
                log: cluster.base.join(format!("{name}.log")),
                name,
                client_port: pair[0],
                peer_port: pair[1],
                child: None,
                id: 0,
            });
        }
        for i in 0..n {
            cluster.spawn(i, true).map_err(StartFailure::Other)?;
        }
        let all: Vec<usize> = (0..n).collect();
        if let Err(e) = cluster.wait_healthy(&all) {
            let port_taken = cluster
                .members
                .iter()
                .any(|m| log_tail(&m.log).contains("address already in use"));
            return Err(if port_taken {
                StartFailure::PortTaken(e)
            } else {
                StartFailure::Other(e)
            });
        }
        for i in 0..n {
            cluster.members[i].id = cluster.learn_id(i).map_err(StartFailure::Other)?;
        }
        Ok(cluster)
    }

    /// `name=http://127.0.0.1:peer,...` of every member.
    fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{}={}", m.name, url(m.peer_port)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Starts member `i`'s process. `initial`: the first start (an existing
    /// data directory makes etcd ignore the `--initial-*` flags anyway).
    fn spawn(&mut self, i: usize, initial: bool) -> Result<(), LocalError> {
        let initial_cluster = self.initial_cluster();
        let m = &self.members[i];
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&m.log)
            .map_err(io_error(format!("open {}", m.log.display())))?;
        let log_err = log
            .try_clone()
            .map_err(io_error(format!("open {}", m.log.display())))?;
        let client = url(m.client_port);
        let peer = url(m.peer_port);
        let mut cmd = Command::new(self.bin.path());
        // etcd reads ETCD_* variables as flags: keep the caller's out.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("ETCD_") {
                cmd.env_remove(key);
            }
        }
        let args: [(&str, &OsStr); 11] = [
            ("--name", m.name.as_ref()),
            ("--data-dir", m.data_dir.as_ref()),
            ("--listen-client-urls", client.as_ref()),
            ("--advertise-client-urls", client.as_ref()),
            ("--listen-peer-urls", peer.as_ref()),
            ("--initial-advertise-peer-urls", peer.as_ref()),
            ("--initial-cluster", initial_cluster.as_ref()),
            (
                "--initial-cluster-state",
                if initial { "new" } else { "existing" }.as_ref(),
            ),
            ("--initial-cluster-token", self.token.as_ref()),
            ("--logger", "zap".as_ref()),
            ("--log-level", "warn".as_ref()),
        ];
        for (flag, value) in args {
            cmd.arg(flag).arg(value);
        }
        if self.bin.no_fsync_flag {
            cmd.arg("--unsafe-no-fsync");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd.spawn().map_err(io_error(format!(
            "spawn {} for member {}",
            self.bin.path().display(),
            m.name
        )))?;
        self.members[i].child = Some(child);
        Ok(())
    }

    /// Waits until every member in `indices` is healthy; on failure kills
    /// the members not yet healthy.
    fn wait_healthy(&mut self, indices: &[usize]) -> Result<(), LocalError> {
        let started = Instant::now();
        let mut pending = indices.to_vec();
        loop {
            pending.retain(|&i| !healthy(self.members[i].client_port));
            if pending.is_empty() {
                return Ok(());
            }
            for &i in &pending {
                let m = &mut self.members[i];
                let exited = match m.child.as_mut() {
                    Some(child) => child
                        .try_wait()
                        .map_err(io_error(format!("wait for member {}", m.name)))?,
                    None => None,
                };
                if let Some(status) = exited {
                    m.child = None;
                    let error = LocalError::Exited {
                        member: m.name.clone(),
                        status,
                        log_tail: log_tail(&m.log),
                    };
                    self.kill_all_of(&pending);
                    return Err(error);
                }
            }
            if started.elapsed() >= HEALTH_TIMEOUT {
                self.kill_all_of(&pending);
                let m = &self.members[pending[0]];
                return Err(LocalError::Unhealthy {
                    member: m.name.clone(),
                    endpoint: url(m.client_port),
                    waited: started.elapsed(),
                    log_tail: log_tail(&m.log),
                });
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    fn kill_all_of(&mut self, indices: &[usize]) {
        for &i in indices {
            self.members[i].kill();
        }
    }

    /// Member `i`'s raft id, from its status (it is healthy, so it answers;
    /// a few tries in case of a slow machine).
    fn learn_id(&self, i: usize) -> Result<u64, LocalError> {
        let m = &self.members[i];
        let mut last = String::new();
        for _ in 0..20 {
            match status(m.client_port) {
                Ok((id, _)) => return Ok(id),
                Err(e) => last = e,
            }
            thread::sleep(POLL_INTERVAL);
        }
        Err(LocalError::Io {
            context: format!("read the status of member {}", m.name),
            source: io::Error::other(last),
        })
    }

    fn check_index(&self, i: usize) -> Result<(), LocalError> {
        if i < self.members.len() {
            Ok(())
        } else {
            Err(LocalError::NoSuchMember {
                index: i,
                members: self.members.len(),
            })
        }
    }

    /// The number of members.
    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    /// The client URLs (`http://127.0.0.1:PORT`) of all members, live or
    /// not, in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| url(m.client_port)).collect()
    }

    /// Member `i`'s client URL.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn member_endpoint(&self, i: usize) -> String {
        url(self.members[i].client_port)
    }

    /// Member `i`'s data directory.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn data_dir(&self, i: usize) -> &Path {
        &self.members[i].data_dir
    }

    /// Member `i`'s log file (its stdout and stderr, across restarts).
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn log_path(&self, i: usize) -> &Path {
        &self.members[i].log
    }

    /// Kills member `i` with `SIGKILL` and reaps it; nothing if it is not
    /// running.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Restarts member `i` on its data directory and ports (killing it
    /// first if it is running) and waits until it is healthy, which needs a
    /// quorum of the cluster to be running.
    pub fn restart(&mut self, i: usize) -> Result<(), LocalError> {
        self.check_index(i)?;
        self.members[i].kill();
        self.spawn(i, false)?;
        self.wait_healthy(&[i])
    }

    /// Whether member `i`'s process is running.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn is_running(&mut self, i: usize) -> bool {
        self.members[i].is_running()
    }

    /// Member `i`'s process id, unless it was killed.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`LocalCluster::member_count`].
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// The index of the current leader. Waits (up to 15 s) until every live
    /// member that answers reports the same leader, and that leader is live
    /// and answers too: after the leader is killed, this returns once the
    /// others have elected a new one.
    ///
    /// Asks each member's `/v3/maintenance/status` over etcd's JSON gateway.
    pub fn leader(&self) -> Result<usize, LocalError> {
        let started = Instant::now();
        loop {
            let mut reports = Vec::new();
            let mut leaders = Vec::new();
            for (i, m) in self.members.iter().enumerate() {
                if m.child.is_none() {
                    continue;
                }
                match status(m.client_port) {
                    Ok((_, leader)) => {
                        reports.push(format!("{}: leader {leader:x}", m.name));
                        leaders.push((i, leader));
                    }
                    Err(e) => reports.push(format!("{}: {e}", m.name)),
                }
            }
            if let Some(&(_, leader)) = leaders.first() {
                let agreed = leader != 0 && leaders.iter().all(|&(_, l)| l == leader);
                let index = self
                    .members
                    .iter()
                    .position(|m| m.id == leader && m.child.is_some());
                if let Some(index) = index.filter(|_| agreed) {
                    if leaders.iter().any(|&(i, _)| i == index) {
                        return Ok(index);
                    }
                }
            }
            if started.elapsed() >= LEADER_TIMEOUT {
                return Err(LocalError::NoLeader {
                    waited: started.elapsed(),
                    detail: if reports.is_empty() {
                        "no member is running".to_owned()
                    } else {
                        reports.join(", ")
                    },
                });
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            m.kill();
        }
        let _ = fs::remove_dir_all(&self.base);
    }
}

/// One etcd member on loopback: a [`LocalCluster`] of one.
///
/// Dropping it kills it and deletes its data directory and log.
#[derive(Debug)]
pub struct LocalEtcd {
    cluster: LocalCluster,
}

impl LocalEtcd {
    /// Starts a single-member etcd on free loopback ports with a fresh data
    /// directory, and waits until it is healthy.
    pub fn start(bin: &EtcdBinary) -> Result<LocalEtcd, LocalError> {
        Ok(LocalEtcd {
            cluster: LocalCluster::start(bin, 1)?,
        })
    }

    /// Its client URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.cluster.member_endpoint(0)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        self.cluster.data_dir(0)
    }

    /// Its log file (stdout and stderr, across restarts).
    pub fn log_path(&self) -> &Path {
        self.cluster.log_path(0)
    }

    /// Kills it with `SIGKILL` and reaps it; nothing if it is not running.
    pub fn kill(&mut self) {
        self.cluster.kill(0);
    }

    /// Restarts it on the same data directory and port (killing it first if
    /// it is running) and waits until it is healthy.
    pub fn restart(&mut self) -> Result<(), LocalError> {
        self.cluster.restart(0)
    }

    /// Whether its process is running.
    pub fn is_running(&mut self) -> bool {
        self.cluster.is_running(0)
    }

    /// Its process id, unless it was killed.
    pub fn pid(&self) -> Option<u32> {
        self.cluster.pid(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions() {
        let v35 = "etcd Version: 3.5.16\nGit SHA: Not provided\nGo Version: go1.24.0\n";
        assert_eq!(parse_version(v35), Some((3, 5, 16)));
        assert_eq!(parse_version("etcd Version: 3.4.23\n"), Some((3, 4, 23)));
        assert_eq!(parse_version("etcd Version: 3.6.0-rc.1\n"), Some((3, 6, 0)));
        assert_eq!(parse_version("etcd Version: 3.5\n"), None);
        assert_eq!(parse_version("something else\n"), None);
        assert!((3, 4, 23) < MIN_ETCD_VERSION);
        assert!((3, 5, 12) < MIN_ETCD_VERSION);
        assert!((3, 5, 13) >= MIN_ETCD_VERSION);
        assert!((3, 6, 0) >= MIN_ETCD_VERSION);
    }

    #[test]
    fn reads_gateway_uint64s() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a":"1381540707029590151","b":7,"c":"x"}"#).unwrap();
        assert_eq!(json_u64(&v["a"]), Some(1381540707029590151));
        assert_eq!(json_u64(&v["b"]), Some(7));
        assert_eq!(json_u64(&v["c"]), None);
    }

    #[test]
    fn errors_say_how_to_install() {
        let e = EtcdBinary::at("/nonexistent/herald/etcd").unwrap_err();
        assert!(e.to_string().contains("scripts/ensure-etcd.sh"), "{e}");
        let e = LocalError::NotFound {
            searched: vec!["$HERALD_ETCD (unset)".to_owned()],
        };
        assert!(e.to_string().contains("scripts/ensure-etcd.sh"), "{e}");
    }
}
