//! [`LocalCluster`]: several etcd members on loopback forming one cluster,
//! started together, killed and restarted one by one, asked for their
//! leader.

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::binary::EtcdBinary;
use super::error::{LocalError, io_error};
use super::gateway::{healthy, status, url};
use super::host::{free_ports, fresh_dir, log_tail};
use super::member::Member;

/// How long a start or restart waits for etcd to report itself healthy.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// How long [`LocalCluster::leader`] waits for the live members to agree on
/// a leader.
const LEADER_TIMEOUT: Duration = Duration::from_secs(15);

/// How often health and leadership are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Starts attempted when a port picked as free was taken before etcd bound it.
const START_ATTEMPTS: usize = 3;

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
