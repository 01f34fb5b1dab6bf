//! Where the etcd binaries come from: the environment variables that name
//! them, the oldest version accepted, and how to install them.

/// The oldest etcd [`etcd_binary`](super::etcd_binary) accepts: 3.5.13 fixed the progress
/// notifications that could skip events (etcd bug #15220).
pub const MIN_ETCD_VERSION: (u32, u32, u32) = (3, 5, 13);

/// The environment variable naming the etcd binary [`etcd_binary`](super::etcd_binary) uses.
pub const ETCD_ENV: &str = "HERALD_ETCD";

/// The environment variable naming the etcd binary [`old_etcd_binary`](super::old_etcd_binary) uses.
pub const OLD_ETCD_ENV: &str = "HERALD_ETCD_OLD";

/// How to get the binaries; every error about a missing or unusable binary
/// says it.
pub(crate) const INSTALL_HINT: &str = "run `eval \"$(scripts/ensure-etcd.sh)\"` from the workspace root \
     (it installs etcd into target/tools/ and exports HERALD_ETCD and HERALD_ETCD_OLD)";

/// "3.5.16".
pub(crate) fn dotted((major, minor, patch): (u32, u32, u32)) -> String {
    format!("{major}.{minor}.{patch}")
}
