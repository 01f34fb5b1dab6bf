//! [`WatchStopper`]: ends a watch from another thread.

use std::fmt;

use super::consumer::Watch;
use crate::event::EndReason;
use crate::shared::Shared;
use crate::sync::Arc;
use crate::watcher::{WatchProbe, WatcherShared};

/// Stops a [`Watch`] from any thread ([`Watch::stopper`]): a server whose
/// client hung up ends the watch while a worker blocks in
/// [`recv`](Watch::recv), [`recv_timeout`](Watch::recv_timeout), a
/// [`Stream`](futures_core::Stream) poll or
/// [`poll_visit_batch`](Watch::poll_visit_batch); the receiver wakes and
/// gets [`EndReason::Stopped`], after which nothing more is delivered
/// (what it had received is still a gap-free prefix).
///
/// Cheap to clone; [`stop`](WatchStopper::stop) is idempotent, and a
/// no-op once the watch has ended for another reason (the first reason
/// stands), been dropped, or its engine stopped. A stopper holds the
/// watch's shared state (its queue, a few hundred bytes) and the engine's
/// shared state alive until it drops, as any handle on them; it keeps no
/// thread running.
///
/// ```
/// # use herald::*;
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// writer.replace(Relist::new([], 1.into()))?;
/// let mut watch = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
/// let stopper = watch.stopper();
/// let worker = std::thread::spawn(move || watch.recv());
/// stopper.stop();
/// assert_eq!(worker.join().unwrap(), Some(WatchItem::End(EndReason::Stopped)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct WatchStopper {
    w: Arc<WatcherShared>,
    engine: Arc<Shared>,
}

impl WatchStopper {
    /// Ends the watch with [`EndReason::Stopped`] unless it has ended
    /// already, waking its receiver, and has the dispatcher forget it.
    pub fn stop(&self) {
        if self.w.end(EndReason::Stopped, &self.engine.counters) {
            // Idempotent on the dispatcher's side: the receiver's own
            // removal, when it sees the end, is a no-op there.
            self.engine.unregister(&self.w);
        }
    }

    /// Whether the watch has ended (for any reason; its receiver may not
    /// have received the end yet).
    pub fn is_ended(&self) -> bool {
        self.w.is_ended()
    }

    /// Where the watch stands and how much waits for its receiver: a
    /// few racing loads (and, while it overflows, its overflow's lock for
    /// a moment), for an operator's view; never a synchronisation point.
    pub fn probe(&self) -> WatchProbe {
        self.w.probe()
    }
}

impl fmt::Debug for WatchStopper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStopper")
            .field("id", &self.w.spec.id)
            .field("ended", &self.is_ended())
            .finish()
    }
}

impl Watch {
    /// A handle that stops this watch from any thread (see
    /// [`WatchStopper`]).
    pub fn stopper(&self) -> WatchStopper {
        WatchStopper {
            w: self.w.clone(),
            engine: self.engine.clone(),
        }
    }
}
