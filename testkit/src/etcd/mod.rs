//! Local etcd servers and clusters for tests, benchmarks and the perf harness.
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
//! use herald_testkit::etcd::{LocalCluster, LocalError, LocalEtcd, etcd_binary};
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
//!
//! # Files
//!
//! - `install.rs`: where the binaries come from (the environment variables,
//!   the minimum version, how to install them);
//! - `binary.rs`: finding a binary and reading its version ([`EtcdBinary`]);
//! - `error.rs`: [`LocalError`];
//! - `host.rs`: fresh data directories, free ports, a log's tail;
//! - `gateway.rs`: a member's health and status over etcd's JSON gateway;
//! - `member.rs`: one member's process;
//! - `cluster.rs`: [`LocalCluster`], members forming one cluster;
//! - `server.rs`: [`LocalEtcd`], a cluster of one.

mod binary;
mod cluster;
mod error;
mod gateway;
mod host;
mod install;
mod member;
mod server;

pub use binary::{EtcdBinary, etcd_binary, old_etcd_binary};
pub use cluster::LocalCluster;
pub use error::LocalError;
pub use install::{ETCD_ENV, MIN_ETCD_VERSION, OLD_ETCD_ENV};
pub use server::LocalEtcd;
