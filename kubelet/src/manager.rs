//! The object manager: references by pod, one watch per referenced
//! object, `get` from the watched state (seeds/002 `objectCache`, and
//! `cacheBasedManager`'s `RegisterPod`/`UnregisterPod`).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use herald::Object;

use crate::config::ManagerConfig;
use crate::error::GetError;
use crate::item::{Core, Counters, Item, Pump};
use crate::pump;
use crate::upstream::{Upstream, object_key};

/// A pod as the manager sees it: who it is and the names of the objects
/// (in its namespace) it references. The kubelet derives `objects` from
/// the pod's spec (volumes, env, image pull secrets); the manager takes
/// the set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodRefs {
    /// The pod's namespace, also its objects'.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The pod's uid: a pod re-created under the same name is another pod.
    pub uid: String,
    /// The names of the objects it references.
    pub objects: BTreeSet<String>,
}

/// A name the engine's keys cannot hold: empty, `.`, `..`, or with `/`
/// or `%` (Kubernetes' rule for every name). Nothing was registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName {
    /// The namespace given.
    pub namespace: String,
    /// The name given.
    pub name: String,
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid object name {:?}/{:?}: a name is a non-empty path segment, not . or .., without / or %",
            self.namespace, self.name
        )
    }
}

impl std::error::Error for InvalidName {}

/// What the manager holds and has done, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManagerStats {
    /// Objects referenced by at least one pod.
    pub objects: usize,
    /// Pods registered.
    pub pods: usize,
    /// Watches open on the upstream now.
    pub watches_open: usize,
    /// Initial syncs completed (one per opened watch that synced).
    pub syncs: u64,
    /// Changes applied after a sync (puts and deletes).
    pub updates: u64,
    /// Watches that ended on their own (the upstream's end, not a stop).
    pub watch_ends: u64,
    /// Watches opened again after an end and its backoff.
    pub reopens: u64,
    /// Watches stopped because their object was seen immutable.
    pub immutable_stops: u64,
    /// Watches stopped for being idle.
    pub idle_stops: u64,
    /// Idle watches restarted by a `get`.
    pub restarts: u64,
    /// `get`s that gave up waiting for a sync.
    pub sync_timeouts: u64,
    /// Panics caught in a user's immutability test or an upstream's stream.
    pub panics: u64,
}

/// The kubelet's cache of the objects (Secrets, ConfigMaps) its pods
/// reference, one watch per object, on Herald.
///
/// Thread-safe: share it behind an `Arc`. Dropping it stops it.
///
/// ```
/// use herald::{Config, Engine, Object, Relist};
/// use herald_kubelet::{EngineUpstream, ManagerConfig, ObjectManager, PodRefs};
///
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// let secret = Object::builder("prod", "db-password").payload(r#"{"data":{}}"#).build();
/// writer.replace(Relist::new([secret], 10.into()))?;
///
/// let manager = ObjectManager::new(EngineUpstream::new(engine), ManagerConfig::default())?;
/// let pod = PodRefs {
///     namespace: "prod".into(),
///     name: "web-1".into(),
///     uid: "6f1c".into(),
///     objects: ["db-password".to_string(), "absent".to_string()].into(),
/// };
/// manager.register_pod(&pod)?;
/// // Waits (up to 1 s) for the watch's first sync, then answers from it.
/// assert_eq!(manager.get("prod", "db-password")?.unwrap().name(), "db-password");
/// assert_eq!(manager.get("prod", "absent")?, None); // not found is an answer
/// assert!(manager.get("prod", "unreferenced").is_err());
/// manager.unregister_pod(&pod);
/// assert_eq!(manager.stats().watches_open, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ObjectManager {
    shared: Arc<Shared>,
    pump: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    core: Arc<Core>,
    /// `namespace/name` -> the object (seeds/002 `items`).
    items: RwLock<HashMap<String, Arc<Item>>>,
    /// (namespace, name, uid) -> the objects the registered pod references.
    pods: Mutex<HashMap<(String, String, String), BTreeSet<String>>>,
    stopped: AtomicBool,
}

impl fmt::Debug for ObjectManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectManager")
            .field("upstream", &self.shared.core.upstream)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    // The map is changed by single inserts and removes.
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn check_name(namespace: &str, name: &str) -> Result<(), InvalidName> {
    // The engine's own rule, so a name accepted here is one it can key.
    if Object::builder(namespace, name).build().has_valid_names() {
        Ok(())
    } else {
        Err(InvalidName {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl ObjectManager {
    /// A manager whose watches come from `upstream`; starts its thread.
    pub fn new(
        upstream: impl Upstream,
        config: ManagerConfig,
    ) -> Result<ObjectManager, std::io::Error> {
        let core = Arc::new(Core {
            upstream: Box::new(upstream),
            config,
            stats: Counters::default(),
            pump: Pump::default(),
        });
        let shared = Arc::new(Shared {
            core: core.clone(),
            items: RwLock::new(HashMap::new()),
            pods: Mutex::new(HashMap::new()),
            stopped: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&shared);
        let handle = std::thread::Builder::new()
            .name("herald-objects".into())
            .spawn(move || {
                pump::run(core, |now| {
                    if let Some(shared) = weak.upgrade() {
                        shared.recycle_idle(now);
                    }
                })
            })?;
        Ok(ObjectManager {
            shared,
            pump: Mutex::new(Some(handle)),
        })
    }

    /// Registers `pod` or its new version (seeds/002 `RegisterPod`): its
    /// objects gain a reference, then those of the version it replaces
    /// lose one, so an object in both keeps its watch. An invalid name
    /// changes nothing.
    pub fn register_pod(&self, pod: &PodRefs) -> Result<(), InvalidName> {
        for name in &pod.objects {
            check_name(&pod.namespace, name)?;
        }
        let key = (pod.namespace.clone(), pod.name.clone(), pod.uid.clone());
        let mut pods = lock(&self.shared.pods);
        let prev = pods.insert(key, pod.objects.clone());
        for name in &pod.objects {
            self.shared.add_reference(&pod.namespace, name, &pod.uid);
        }
        for name in prev.iter().flatten() {
            self.shared.delete_reference(&pod.namespace, name, &pod.uid);
        }
        Ok(())
    }

    /// Unregisters `pod` (its registered version's references go; seeds/002
    /// `UnregisterPod`). A pod not registered is ignored.
    pub fn unregister_pod(&self, pod: &PodRefs) {
        let key = (pod.namespace.clone(), pod.name.clone(), pod.uid.clone());
        let mut pods = lock(&self.shared.pods);
        if let Some(prev) = pods.remove(&key) {
            for name in &prev {
                self.shared.delete_reference(&pod.namespace, name, &pod.uid);
            }
        }
    }

    /// Adds a reference from pod `uid` to `namespace`/`name`; the first
    /// reference starts the object's watch (seeds/002 `AddReference`).
    /// Cheap: the `get` that follows waits for the sync.
    pub fn add_reference(&self, namespace: &str, name: &str, uid: &str) -> Result<(), InvalidName> {
        check_name(namespace, name)?;
        self.shared.add_reference(namespace, name, uid);
        Ok(())
    }

    /// Removes one reference from pod `uid`; the last reference stops the
    /// watch and forgets the object (seeds/002 `DeleteReference`). A
    /// reference that is not held is ignored.
    pub fn delete_reference(&self, namespace: &str, name: &str, uid: &str) {
        self.shared.delete_reference(namespace, name, uid);
    }

    /// The object's state: `Ok(None)` when it does not exist. Waits for
    /// the watch's first sync up to the configured timeout, restarting an
    /// idle watch first (seeds/002 `Get`). A sync wakes the waiting call
    /// at once (the reference polls every 10 ms).
    pub fn get(&self, namespace: &str, name: &str) -> Result<Option<Object>, GetError> {
        let item = read(&self.shared.items)
            .get(&object_key(namespace, name))
            .cloned();
        match item {
            Some(item) => item.get(),
            None => Err(GetError::NotRegistered {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }),
        }
    }

    /// What the manager holds and has done.
    pub fn stats(&self) -> ManagerStats {
        let c = &self.shared.core.stats;
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        ManagerStats {
            objects: read(&self.shared.items).len(),
            pods: lock(&self.shared.pods).len(),
            watches_open: c.watches_open.load(Ordering::Relaxed),
            syncs: n(&c.syncs),
            updates: n(&c.updates),
            watch_ends: n(&c.watch_ends),
            reopens: n(&c.reopens),
            immutable_stops: n(&c.immutable_stops),
            idle_stops: n(&c.idle_stops),
            restarts: n(&c.restarts),
            sync_timeouts: n(&c.sync_timeouts),
            panics: n(&c.panics),
        }
    }

    /// Stops every watch and the manager's thread (seeds/002
    /// `shutdownWhenStopped`). Afterwards references are still counted
    /// but start no watch, and a `get` answers only for an immutable
    /// object it had synced ([`GetError::Stopped`] otherwise). Idempotent.
    pub fn stop(&self) {
        let shared = &self.shared;
        {
            let items = write(&shared.items);
            // Under the map's write lock, which `add_reference` reads it
            // under too: the lock orders them, the atomic only lets `stats`
            // and others read it without the lock.
            shared.stopped.store(true, Ordering::Release);
            for item in items.values() {
                item.shut();
            }
        }
        // Release: pairs with the pump's Acquire load; the unpark below
        // makes it look.
        shared.core.pump.stopping.store(true, Ordering::Release);
        shared.core.pump.unpark();
        if let Some(handle) = lock(&self.pump).take() {
            // The pump catches the panics it can meet; a join error is
            // one it could not, and it has nothing more to report.
            let _ = handle.join();
        }
        shared.core.pump.clear();
    }
}

impl Drop for ObjectManager {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    fn add_reference(&self, namespace: &str, name: &str, uid: &str) {
        let mut items = write(&self.items);
        let stopped = self.stopped.load(Ordering::Acquire);
        let item = items
            .entry(object_key(namespace, name))
            .or_insert_with(|| Item::new(&self.core, namespace, name, !stopped));
        *lock(&item.refs).entry(uid.into()).or_insert(0) += 1;
    }

    fn delete_reference(&self, namespace: &str, name: &str, uid: &str) {
        let key = object_key(namespace, name);
        let mut items = write(&self.items);
        let Some(item) = items.get(&key) else {
            return;
        };
        let last = {
            let mut refs = lock(&item.refs);
            if let Some(n) = refs.get_mut(uid) {
                *n -= 1;
                if *n == 0 {
                    refs.remove(uid);
                }
            }
            refs.is_empty()
        };
        if last {
            if let Some(item) = items.remove(&key) {
                item.remove();
            }
        }
    }

    /// Stops the watches no `get` read for the idle time (seeds/002
    /// `startRecycleIdleWatch`).
    fn recycle_idle(&self, now: Instant) {
        let max_idle = self.core.config.max_idle_time();
        let items = read(&self.items);
        for item in items.values() {
            if item.stop_if_idle(now, max_idle) {
                self.core.stats.idle_stops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
