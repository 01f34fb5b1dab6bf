//! Asking a source's watches for progress: each open watch's request half
//! is registered here, and [`OpenWatches::request_progress`] sends every
//! one `RequestProgress`. The answer comes back on the watch's own stream,
//! where the watch (`watch.rs`) passes it on or drops it.

use std::sync::{Arc, Mutex, Weak};

use etcd_client::WatchRequestSender;
use herald::source::SourceError;
use herald_bridge::Bridge;
use tokio::sync::Mutex as AsyncMutex;

use crate::calls::unavailable;

/// A watch's request half, shared by the watch (which owns it) and
/// progress requests (which borrow it while the watch is open).
pub(crate) type Requests = Arc<AsyncMutex<WatchRequestSender>>;

/// The request halves of a source's open watches, held weakly: a watch
/// dropped is forgotten at the next registration or request.
#[derive(Debug, Default)]
pub(crate) struct OpenWatches {
    senders: Mutex<Vec<Weak<AsyncMutex<WatchRequestSender>>>>,
}

impl OpenWatches {
    /// Registers an open watch's request half.
    pub(crate) fn add(&self, requests: &Requests) {
        let mut senders = self.senders.lock().unwrap_or_else(|e| e.into_inner());
        senders.retain(|w| w.strong_count() > 0);
        senders.push(Arc::downgrade(requests));
    }

    /// Sends `RequestProgress` on every open watch, through `bridge`; the
    /// first that cannot be sent fails the request.
    pub(crate) fn request_progress(&self, bridge: &Bridge) -> Result<(), SourceError> {
        let senders: Vec<Requests> = {
            let mut senders = self.senders.lock().unwrap_or_else(|e| e.into_inner());
            senders.retain(|w| w.strong_count() > 0);
            senders.iter().filter_map(Weak::upgrade).collect()
        };
        for sender in senders {
            let sent = bridge.block_on(async { sender.lock().await.request_progress().await });
            sent.map_err(unavailable)?;
        }
        Ok(())
    }
}
