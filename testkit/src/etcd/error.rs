//! [`LocalError`]: what can go wrong starting, restarting or inspecting a
//! local etcd, each message saying how to fix it where it can.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use super::install::{ETCD_ENV, INSTALL_HINT, dotted};

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
    /// The binary is older than [`MIN_ETCD_VERSION`](super::MIN_ETCD_VERSION).
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
pub(crate) fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> LocalError {
    let context = context.into();
    move |source| LocalError::Io { context, source }
}
