//! [`LocalEtcd`]: one etcd member on loopback, a [`LocalCluster`] of one.

use std::path::Path;

use super::binary::EtcdBinary;
use super::cluster::LocalCluster;
use super::error::LocalError;

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
