//! The launcher's use of the machine: fresh data directories under the
//! temp dir, free loopback ports, the tail of a member's log.

use std::fs::{self, File};
use std::io::{self, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::{LocalError, io_error};

/// How many of the last lines of a member's log an error quotes.
const LOG_TAIL_LINES: usize = 30;

/// A new, empty, uniquely named directory under the system's temp dir.
pub(crate) fn fresh_dir() -> Result<PathBuf, LocalError> {
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
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>, LocalError> {
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

/// The last [`LOG_TAIL_LINES`] lines of a log file.
pub(crate) fn log_tail(path: &Path) -> String {
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
