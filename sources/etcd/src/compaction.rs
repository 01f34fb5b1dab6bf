//! What a compaction looks like from here, and which revision etcd still
//! holds: a read below the compaction fails with etcd's `ErrCompacted`
//! ([`is_compacted`]), whose text does not say the revision, so a watch
//! from the read's revision is opened to be told it
//! ([`Shared::compacted_at`]); a watch whose start is compacted away is
//! cancelled with `compact_revision` ([`cancelled`]). Either becomes
//! [`SourceError::Compacted`], and the reflector lists again.

use etcd_client::{WatchOptions, WatchResponse};
use herald::ResourceVersion;
use herald::source::SourceError;

use crate::calls::unavailable;
use crate::decode::rv_of;
use crate::shared::Shared;

/// The message etcd's compaction errors carry (`ErrCompacted`).
const COMPACTED: &str = "required revision has been compacted";

/// Whether a read failed because its revision was compacted away (the
/// error does not say which revision etcd still holds: see
/// [`Shared::compacted_at`]).
pub(crate) fn is_compacted(e: &etcd_client::Error) -> bool {
    e.to_string().contains(COMPACTED)
}

/// What a cancelled watch (started after `after`) ends with: `Compacted`
/// if etcd says its start was compacted away, `Unavailable` otherwise.
pub(crate) fn cancelled(resp: &WatchResponse, after: ResourceVersion) -> SourceError {
    if resp.compact_revision() > 0 {
        SourceError::Compacted {
            requested: after,
            compacted: rv_of(resp.compact_revision()),
        }
    } else {
        unavailable(format!("the watch was cancelled: {}", resp.cancel_reason()))
    }
}

impl Shared {
    /// The oldest revision etcd still holds, once a read at `rev` found it
    /// compacted: a range's error does not say it, but a watch from `rev`
    /// is cancelled with it (`compact_revision`). `None` if that fails.
    pub(crate) fn compacted_at(&self, rev: i64) -> Option<i64> {
        let mut client = self.cluster.client.watch_client();
        let key = self.prefix.clone().into_bytes();
        let options = WatchOptions::new().with_start_revision(rev);
        let found = self.cluster.call("compact revision", async move {
            // The request half lives until the answer is read.
            let (_sender, mut responses) = client.watch(key, Some(options)).await?.split();
            // `created` may come first, then the cancellation.
            while let Some(resp) = responses.message().await? {
                if resp.compact_revision() > 0 {
                    return Ok(Some(resp.compact_revision()));
                }
                if resp.canceled() || !resp.events().is_empty() {
                    break;
                }
            }
            Ok(None)
        });
        found.ok().flatten()
    }
}
