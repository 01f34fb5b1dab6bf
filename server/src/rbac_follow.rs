//! The RBAC snapshot the server authorizes with, kept in step with the
//! cluster's `rbac.authorization.k8s.io` objects, which the server caches
//! in engines like any other resource (from etcd or the apiserver).
//!
//! A thread per RBAC resource watches its engine from the version it
//! has; any change wakes the builder thread, which lists the four
//! engines and swaps a new [`Rbac`] in (a burst of changes is one
//! rebuild: it waits 20 ms for the rest). So a new or removed binding
//! takes effect within the cache's own watch latency plus a rebuild
//! (milliseconds for thousands of bindings). Each rebuild bumps the
//! generation and wakes the subscribers: the open watches, which decide
//! again and end if their user may no longer watch ([`crate::access`]).
//!
//! Until the four engines have their first lists no snapshot exists and
//! nothing is authorized: the server answers 429 with a retry hint, and
//! `/readyz` fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use herald::engine::Lifecycle;
use herald::read::{ListRequest, ReadAt};
use herald::{Engine, WatchRequest};
use herald_auth::rbac::{Rbac, RbacBuilder};

/// The RBAC resources, by group-qualified plural name, in the order
/// [`RbacFollower::start`] takes their engines.
pub const RBAC_RESOURCES: [&str; 4] = [
    "clusterroles.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
];

/// The current RBAC snapshot and its generation.
#[derive(Debug)]
pub struct RbacFollower {
    current: ArcSwapOption<Rbac>,
    generation: AtomicU64,
    changed: tokio::sync::watch::Sender<u64>,
}

impl RbacFollower {
    /// Follows the engines of [`RBAC_RESOURCES`] (in that order).
    pub fn start(engines: [Engine; 4]) -> Arc<RbacFollower> {
        let follower = Arc::new(RbacFollower {
            current: ArcSwapOption::empty(),
            generation: AtomicU64::new(0),
            changed: tokio::sync::watch::channel(0).0,
        });
        let (wake, woken) = mpsc::channel();
        for engine in &engines {
            let (engine, wake) = (engine.clone(), wake.clone());
            std::thread::Builder::new()
                .name("herald-rbac-watch".into())
                .spawn(move || watch_changes(&engine, &wake))
                .expect("spawn an RBAC watch thread");
        }
        let weak = Arc::downgrade(&follower);
        std::thread::Builder::new()
            .name("herald-rbac".into())
            .spawn(move || {
                while let Some(f) = weak.upgrade() {
                    if engines.iter().any(|e| e.lifecycle() == Lifecycle::Stopped) {
                        return;
                    }
                    match build(&engines) {
                        Some(rbac) => f.publish(rbac),
                        None => {
                            drop(f);
                            std::thread::sleep(Duration::from_millis(100));
                            continue;
                        }
                    }
                    drop(f);
                    // Wait for a change (or look again every 10 s, in
                    // case a watch thread ended), then for the rest of
                    // its burst.
                    if woken.recv_timeout(Duration::from_secs(10))
                        == Err(mpsc::RecvTimeoutError::Disconnected)
                    {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    while woken.try_recv().is_ok() {}
                }
            })
            .expect("spawn the RBAC thread");
        follower
    }

    /// A follower that serves `rbac` (tests, fixed policies).
    pub fn fixed(rbac: Rbac) -> Arc<RbacFollower> {
        let f = Arc::new(RbacFollower {
            current: ArcSwapOption::empty(),
            generation: AtomicU64::new(0),
            changed: tokio::sync::watch::channel(0).0,
        });
        f.publish(rbac);
        f
    }

    fn publish(&self, rbac: Rbac) {
        self.current.store(Some(Arc::new(rbac)));
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.changed.send_replace(generation);
    }

    /// The snapshot, once the RBAC engines have their first lists.
    pub fn snapshot(&self) -> Option<Arc<Rbac>> {
        self.current.load_full()
    }

    /// The generation: one more per snapshot.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Wakes on each new snapshot.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The snapshot of the engines' objects now, or `None` while one of them
/// has not had its first list.
fn build(engines: &[Engine; 4]) -> Option<Rbac> {
    let mut builder = RbacBuilder::new();
    for (i, engine) in engines.iter().enumerate() {
        let list = engine.list(&ListRequest::new().at(ReadAt::Any)).ok()?;
        if engine.lifecycle() != Lifecycle::Ready {
            return None;
        }
        for item in &list.items {
            let json = item.object.payload();
            match i {
                0 => builder.cluster_role(json),
                1 => builder.role(json),
                2 => builder.cluster_role_binding(json),
                _ => builder.role_binding(json),
            };
        }
    }
    Some(builder.build())
}

/// Wakes the builder on each change of `engine`'s objects, until it
/// stops.
fn watch_changes(engine: &Engine, wake: &mpsc::Sender<()>) {
    loop {
        if engine.lifecycle() == Lifecycle::Stopped {
            return;
        }
        let from = engine.resource_version();
        let Ok(mut watch) = engine.watch(WatchRequest::new().resource_version(Some(from))) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        while let Some(herald::WatchItem::Event(event)) = watch.recv() {
            if event.kind() != herald::EventKind::Bookmark && wake.send(()).is_err() {
                return;
            }
        }
        // The watch ended (the engine relisted, or outran it): look again.
        if wake.send(()).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
