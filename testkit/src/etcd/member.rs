//! One member of a local cluster: its name, ports, data directory, log and
//! process.

use std::path::PathBuf;
use std::process::Child;

/// One member of a local cluster.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) client_port: u16,
    pub(crate) peer_port: u16,
    pub(crate) data_dir: PathBuf,
    /// The member's stdout and stderr, appended across restarts.
    pub(crate) log: PathBuf,
    /// `None` once killed.
    pub(crate) child: Option<Child>,
    /// Its raft member id, learned once it is healthy (0 before).
    pub(crate) id: u64,
}

impl Member {
    /// SIGKILL (what `Child::kill` sends on unix), then reap.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Fails only if it already exited; then `wait` reaps it.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_))) | Some(Err(_)) | None => false,
        }
    }
}
