//! What one resource's source and its watches share: the cluster's
//! connection, the key prefix and its range end, the decoder, the open
//! watches (for progress requests), what could not be decoded, and the
//! counters behind [`EtcdStats`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use herald_kube::{Decoder, Undecodable};

use crate::cluster::Cluster;
use crate::progress::OpenWatches;

/// What an [`EtcdSource`](crate::EtcdSource) has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EtcdStats {
    /// Values skipped because they could not be decoded.
    pub undecodable: u64,
    /// Deletions whose previous value was missing or undecodable, passed
    /// on with an object built from the key.
    pub bare_deletes: u64,
    /// Progress notifications received and not passed on (an untrusted
    /// server, or a revision the watch had already passed).
    pub progress_dropped: u64,
    /// Progress notifications passed on.
    pub progress_passed: u64,
    /// Pages read by lists.
    pub list_pages: u64,
    /// Watches opened.
    pub watches_opened: u64,
}

// Each counter is read and written Relaxed: a count read on its own,
// publishing no other data.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) undecodable: AtomicU64,
    pub(crate) bare_deletes: AtomicU64,
    pub(crate) progress_dropped: AtomicU64,
    pub(crate) progress_passed: AtomicU64,
    pub(crate) list_pages: AtomicU64,
    pub(crate) watches_opened: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn stats(&self) -> EtcdStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EtcdStats {
            undecodable: n(&self.undecodable),
            bare_deletes: n(&self.bare_deletes),
            progress_dropped: n(&self.progress_dropped),
            progress_passed: n(&self.progress_passed),
            list_pages: n(&self.list_pages),
            watches_opened: n(&self.watches_opened),
        }
    }
}

/// One resource's state, shared by its source's clones and its watches.
pub(crate) struct Shared {
    pub(crate) cluster: Arc<Cluster>,
    /// The key prefix mirrored (ends in `/`).
    pub(crate) prefix: String,
    /// The end of its key range (`decode.rs`'s `prefix_end`).
    pub(crate) prefix_end: Vec<u8>,
    pub(crate) decoder: Decoder,
    pub(crate) watches: OpenWatches,
    pub(crate) counters: Counters,
    pub(crate) undecodable: Undecodable,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdSource")
            .field("prefix", &self.prefix)
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}
