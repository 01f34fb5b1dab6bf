//! The kubelet's object cache as the reference builds it
//! (`pkg/kubelet/util/manager/watch_based_manager.go`, seeds/002), ported
//! to Rust for the kubelet scenario: one reflector and one store per
//! referenced object.
//!
//! - a reflector is a task (the goroutine) on a two-worker tokio runtime
//!   (`GOMAXPROCS=2`): it lists its object (a field selector on
//!   `metadata.name` in its namespace, `resourceVersion=0`), replaces its
//!   store (which marks it initialized), watches from the list's version
//!   and applies each event to the store; when the watch ends it backs off
//!   (client-go's 800 ms, doubling) and lists again; a stop channel ends it;
//! - `get` records the access time, restarts a stopped reflector, then
//!   `wait.PollImmediate(10ms, 1s, hasSynced)`: checks at once, then sleeps
//!   10 ms between checks; once synced it reads the store, and stops the
//!   reflector of an object it finds immutable;
//! - references per pod uid, the first starting the reflector, the last
//!   stopping it; the idle recycling (`stopIfIdle`) as the reference's,
//!   called by the scenario's caller if at all.
//!
//! Both this and `herald_kubelet::ObjectManager` watch the same Herald
//! engine in the scenario, so what differs is the manager's design.

use std::collections::{BTreeSet, HashMap};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use herald::read::{ListRequest, ReadAt};
use herald::selector::{FieldSelector, KeyScope};
use herald::{Engine, EventKind, Object, WatchItem, WatchRequest};
use tokio::sync::watch;

/// The port's object cache.
#[derive(Debug)]
pub struct ReferenceCache {
    engine: Engine,
    runtime: tokio::runtime::Runtime,
    items: RwLock<HashMap<String, Arc<RefItem>>>,
    /// `cacheBasedManager.registeredPods`: (namespace, name, uid) -> the
    /// names the registered version references (the reference keeps the
    /// pod and derives them again).
    pods: Mutex<HashMap<(String, String, String), BTreeSet<String>>>,
    immutable: fn(&Object) -> bool,
    /// Events applied to stores by every reflector.
    pub updates: Arc<AtomicU64>,
    /// Watches that ended on their own (each followed by a backoff and a
    /// list).
    pub relists: Arc<AtomicU64>,
}

#[derive(Debug)]
struct RefItem {
    namespace: String,
    name: String,
    refs: Mutex<HashMap<String, u32>>,
    store: Arc<Mutex<Store>>,
    ctl: Mutex<Ctl>,
}

/// `cacheStore`: `cache.Store` plus the initialized flag.
#[derive(Debug, Default)]
struct Store {
    initialized: bool,
    objects: HashMap<String, Object>,
}

/// The item's lock-protected fields (`lastAccessTime`, `stopped`,
/// `immutable`, `stopCh`).
#[derive(Debug)]
struct Ctl {
    last_access: Instant,
    stopped: bool,
    immutable: bool,
    stop: Option<watch::Sender<bool>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl ReferenceCache {
    /// A cache over `engine`.
    pub fn new(engine: Engine, immutable: fn(&Object) -> bool) -> std::io::Result<ReferenceCache> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("reference-reflector")
            .enable_time()
            .build()?;
        Ok(ReferenceCache {
            engine,
            runtime,
            items: RwLock::new(HashMap::new()),
            pods: Mutex::new(HashMap::new()),
            immutable,
            updates: Arc::new(AtomicU64::new(0)),
            relists: Arc::new(AtomicU64::new(0)),
        })
    }

    /// `RegisterPod`: add the new version's references, then drop the
    /// previous version's.
    pub fn register_pod(&self, namespace: &str, name: &str, uid: &str, objects: &BTreeSet<String>) {
        let mut pods = lock(&self.pods);
        let prev = pods.insert((namespace.into(), name.into(), uid.into()), objects.clone());
        for o in objects {
            self.add_reference(namespace, o, uid);
        }
        for o in prev.iter().flatten() {
            self.delete_reference(namespace, o, uid);
        }
    }

    /// `UnregisterPod`.
    pub fn unregister_pod(&self, namespace: &str, name: &str, uid: &str) {
        let mut pods = lock(&self.pods);
        if let Some(prev) = pods.remove(&(namespace.into(), name.into(), uid.into())) {
            for o in &prev {
                self.delete_reference(namespace, o, uid);
            }
        }
    }

    /// `AddReference`.
    pub fn add_reference(&self, namespace: &str, name: &str, uid: &str) {
        let mut items = self.items.write().unwrap_or_else(|e| e.into_inner());
        let item = items.entry(key(namespace, name)).or_insert_with(|| {
            let item = Arc::new(RefItem {
                namespace: namespace.into(),
                name: name.into(),
                refs: Mutex::new(HashMap::new()),
                store: Arc::new(Mutex::new(Store::default())),
                ctl: Mutex::new(Ctl {
                    last_access: Instant::now(),
                    stopped: true,
                    immutable: false,
                    stop: None,
                }),
            });
            self.start(&item, &mut lock(&item.ctl));
            item
        });
        *lock(&item.refs).entry(uid.into()).or_insert(0) += 1;
    }

    /// `DeleteReference`.
    pub fn delete_reference(&self, namespace: &str, name: &str, uid: &str) {
        let k = key(namespace, name);
        let mut items = self.items.write().unwrap_or_else(|e| e.into_inner());
        let Some(item) = items.get(&k) else { return };
        let empty = {
            let mut refs = lock(&item.refs);
            if let Some(n) = refs.get_mut(uid) {
                *n -= 1;
                if *n == 0 {
                    refs.remove(uid);
                }
            }
            refs.is_empty()
        };
        if empty && let Some(item) = items.remove(&k) {
            stop(&item, &mut lock(&item.ctl));
        }
    }

    /// `Get`: restart if needed, poll for the sync (10 ms, up to 1 s),
    /// read the store, stop the reflector of an immutable object.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Option<Object>, String> {
        let k = key(namespace, name);
        let item = self
            .items
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&k)
            .cloned()
            .ok_or_else(|| format!("object {namespace:?}/{name:?} not registered"))?;
        {
            let mut ctl = lock(&item.ctl);
            ctl.last_access = Instant::now();
            if !ctl.immutable && ctl.stopped {
                self.start(&item, &mut ctl);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            if lock(&item.store).initialized {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!("failed to sync {namespace}/{name}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let object = lock(&item.store).objects.get(&k).cloned();
        if let Some(o) = &object
            && (self.immutable)(o)
        {
            let mut ctl = lock(&item.ctl);
            ctl.immutable = true;
            stop(&item, &mut ctl);
        }
        Ok(object)
    }

    /// `stopIfIdle` over every item (`startRecycleIdleWatch`).
    pub fn recycle_idle(&self, max_idle: Duration) -> usize {
        let items = self.items.read().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let mut stopped = 0;
        for item in items.values() {
            let mut ctl = lock(&item.ctl);
            if !ctl.stopped && lock(&item.store).initialized && now > ctl.last_access + max_idle {
                stop(item, &mut ctl);
                stopped += 1;
            }
        }
        stopped
    }

    /// Reflectors running.
    pub fn running(&self) -> usize {
        let items = self.items.read().unwrap_or_else(|e| e.into_inner());
        items.values().filter(|i| !lock(&i.ctl).stopped).count()
    }

    /// Stops every reflector (`shutdownWhenStopped`).
    pub fn stop(&self) {
        let items = self.items.read().unwrap_or_else(|e| e.into_inner());
        for item in items.values() {
            stop(item, &mut lock(&item.ctl));
        }
    }

    /// `startReflector`.
    fn start(&self, item: &RefItem, ctl: &mut Ctl) {
        let (tx, rx) = watch::channel(false);
        ctl.stop = Some(tx);
        ctl.stopped = false;
        let reflector = Reflector {
            engine: self.engine.clone(),
            namespace: item.namespace.clone(),
            name: item.name.clone(),
            store: item.store.clone(),
            updates: self.updates.clone(),
            relists: self.relists.clone(),
        };
        self.runtime.spawn(reflector.run(rx));
    }
}

/// `stopThreadUnsafe`.
fn stop(item: &RefItem, ctl: &mut Ctl) {
    if ctl.stopped {
        return;
    }
    ctl.stopped = true;
    if let Some(tx) = ctl.stop.take() {
        let _ = tx.send(true);
    }
    if !ctl.immutable {
        lock(&item.store).initialized = false;
    }
}

struct Reflector {
    engine: Engine,
    namespace: String,
    name: String,
    store: Arc<Mutex<Store>>,
    updates: Arc<AtomicU64>,
    relists: Arc<AtomicU64>,
}

impl Reflector {
    async fn run(self, mut stop: watch::Receiver<bool>) {
        let fields: FieldSelector = match format!("metadata.name={}", self.name).parse() {
            Ok(f) => f,
            Err(_) => return,
        };
        let scope = KeyScope::exact(&key(&self.namespace, &self.name));
        let mut backoff = Duration::from_millis(800);
        loop {
            if *stop.borrow() {
                return;
            }
            // ListAndWatch: list at resourceVersion=0, replace the store.
            let req = ListRequest::new()
                .scope(scope.clone())
                .fields(fields.clone())
                .at(ReadAt::Any);
            if let Ok(list) = self.engine.list(&req) {
                {
                    let mut store = lock(&self.store);
                    store.objects = list
                        .items
                        .into_iter()
                        .map(|i| (i.object.key().to_owned(), i.object))
                        .collect();
                    store.initialized = true;
                }
                let watch = self.engine.watch(
                    WatchRequest::new()
                        .scope(scope.clone())
                        .fields(fields.clone())
                        .resource_version(Some(list.resource_version)),
                );
                if let Ok(mut watch) = watch {
                    loop {
                        let next = std::future::poll_fn(|cx| {
                            futures_core::Stream::poll_next(Pin::new(&mut watch), cx)
                        });
                        tokio::select! {
                            _ = stop.changed() => return,
                            item = next => match item {
                                Some(WatchItem::Event(ev)) => {
                                    let kind = ev.kind();
                                    if kind == EventKind::Bookmark {
                                        continue;
                                    }
                                    let Some(object) = ev.into_object() else { continue };
                                    let mut store = lock(&self.store);
                                    if kind == EventKind::Deleted {
                                        store.objects.remove(object.key());
                                    } else {
                                        store.objects.insert(object.key().to_owned(), object);
                                    }
                                    self.updates.fetch_add(1, Ordering::Relaxed);
                                }
                                _ => break,
                            }
                        }
                    }
                }
            }
            self.relists.fetch_add(1, Ordering::Relaxed);
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    }
}
