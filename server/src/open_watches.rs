//! The open watches, for an operator (kubernetes#108556: the apiserver
//! offers no way to see a watch's delivery delay): each watch response
//! registers here while it lives, and `GET /debug/herald/watches` lists
//! them with their user, resource and filter, how far behind the head
//! they are (in versions and in seconds), what waits in their queue and
//! their state. The path is authorized like any other (a non-resource
//! `get`; `system:masters` and roles naming it may read it).
//!
//! A watch's delivery path pays two relaxed atomic stores per chunk (the
//! last version it wrote) and one clock read each time it falls behind
//! after being caught up; the listing reads the engine's racing
//! counters ([`herald::watch::WatchStopper::probe`]): a view, never a
//! synchronisation point.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use herald::Engine;
use herald::watch::WatchStopper;
use serde_json::{Value, json};

/// The open watches of a server.
#[derive(Debug)]
pub(crate) struct OpenWatches {
    epoch: Instant,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Entry>>>,
}

impl Default for OpenWatches {
    fn default() -> Self {
        OpenWatches {
            epoch: Instant::now(),
            next: AtomicU64::new(1),
            open: Mutex::default(),
        }
    }
}

/// Who opened a watch and what it asked for.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// The user access control named (`None`: access control is off).
    pub(crate) user: Option<String>,
    /// The connection's address.
    pub(crate) address: Option<IpAddr>,
    /// The resource's group-qualified plural.
    pub(crate) resource: String,
    /// The request's path (namespace and name included).
    pub(crate) path: String,
    /// The label selector, as the engine reads it.
    pub(crate) labels: Option<String>,
    /// The field selector, as the engine reads it.
    pub(crate) fields: Option<String>,
    /// The encoding of its events (`json`, `protobuf`, `table`).
    pub(crate) media: &'static str,
}

/// One open watch.
#[derive(Debug)]
pub(crate) struct Entry {
    id: u64,
    asked: Asked,
    began: SystemTime,
    engine: Engine,
    stopper: WatchStopper,
    /// The version of the last event written to the client (0: none yet).
    sent_rv: AtomicU64,
    /// When the watch last fell behind (nanoseconds since the registry's
    /// epoch, plus one; 0: caught up when last polled).
    behind_since: AtomicU64,
    watches: Arc<OpenWatches>,
}

/// A watch's place in the registry: what its body updates, removed when
/// the body drops.
#[derive(Debug)]
pub(crate) struct Registered(Arc<Entry>);

impl Drop for Registered {
    fn drop(&mut self) {
        let w = &self.0.watches;
        w.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0.id);
    }
}

impl Registered {
    /// The body wrote events up to `rv`. Relaxed: a statistic.
    #[inline]
    pub(crate) fn sent(&self, rv: u64) {
        self.0.sent_rv.store(rv, Ordering::Relaxed);
    }

    /// The body found events to write: behind from now, unless it
    /// already was. Relaxed: a statistic, written by the body's task
    /// alone (a listing that reads it a moment late is a moment late).
    #[inline]
    pub(crate) fn busy(&self) {
        if self.0.behind_since.load(Ordering::Relaxed) == 0 {
            let since = self.0.watches.epoch.elapsed().as_nanos() as u64 + 1;
            self.0.behind_since.store(since, Ordering::Relaxed);
        }
    }

    /// The body found nothing to write: caught up. Relaxed: as `busy`.
    #[inline]
    pub(crate) fn idle(&self) {
        self.0.behind_since.store(0, Ordering::Relaxed);
    }
}

impl OpenWatches {
    /// Registers a watch of `engine` (ended by `stopper`) that `asked`
    /// describes.
    pub(crate) fn register(
        self: &Arc<Self>,
        asked: Asked,
        engine: Engine,
        stopper: WatchStopper,
    ) -> Registered {
        // Relaxed: only unique, never ordered against anything.
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry {
            id,
            asked,
            began: SystemTime::now(),
            engine,
            stopper,
            sent_rv: AtomicU64::new(0),
            behind_since: AtomicU64::new(0),
            watches: self.clone(),
        });
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, entry.clone());
        Registered(entry)
    }

    /// The listing: the `limit` watches furthest behind (in seconds, then
    /// versions), and how many are open in all.
    pub(crate) fn list(&self, limit: usize) -> Value {
        let entries: Vec<Arc<Entry>> = self
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let now = self.epoch.elapsed().as_nanos() as u64 + 1;
        let mut rows: Vec<(f64, u64, Value)> = entries.iter().map(|e| e.row(now)).collect();
        rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        let total = rows.len();
        rows.truncate(limit);
        json!({
            "kind": "WatchList",
            "apiVersion": "herald.dev/v1alpha1",
            "open": total,
            "shown": rows.len(),
            "watches": rows.into_iter().map(|r| r.2).collect::<Vec<_>>(),
        })
    }
}

impl Entry {
    /// (lag in seconds, lag in versions, the row).
    fn row(&self, now: u64) -> (f64, u64, Value) {
        let probe = self.stopper.probe();
        let head = self.engine.resource_version().get();
        // Relaxed: statistics, read without any promise of consistency
        // with each other or with the probe.
        let sent = self.sent_rv.load(Ordering::Relaxed);
        let behind_since = self.behind_since.load(Ordering::Relaxed);
        let caught_up = probe.queued == 0
            && matches!(probe.state, herald::watch::WatchState::Following)
            && behind_since == 0;
        let seconds = if caught_up || behind_since == 0 {
            0.0
        } else {
            now.saturating_sub(behind_since) as f64 / 1e9
        };
        // Versions are the source's (an etcd revision counts every
        // resource's changes): how far the head is past what was sent.
        let versions = if sent == 0 {
            0
        } else {
            head.saturating_sub(sent)
        };
        let a = &self.asked;
        let row = json!({
            "id": self.id,
            "user": a.user,
            "address": a.address.map(|ip| ip.to_string()),
            "resource": a.resource,
            "path": a.path,
            "labelSelector": a.labels,
            "fieldSelector": a.fields,
            "media": a.media,
            "began": herald_kube::table::micro_time(self.began),
            "state": probe.state.as_str(),
            "queued": probe.queued,
            "sentResourceVersion": (sent != 0).then(|| sent.to_string()),
            "headResourceVersion": head.to_string(),
            "lagVersions": versions,
            "lagSeconds": seconds,
        });
        (seconds, versions, row)
    }
}
