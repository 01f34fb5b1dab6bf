//! The facade: [`Engine`], the handle every caller holds, and where it
//! is in its life ([`Lifecycle`]). It starts the dispatcher, creates
//! watches and serves reads and statistics; the mechanisms it stands on
//! (the shared core, the dispatcher, the watches, the reads) never call
//! back into it.

use crate::config::{Config, ConfigError};
use crate::dispatch;
use crate::event::Gone;
use crate::policy;
use crate::read::{GetResponse, ListRequest, ListResponse, ReadAt, ReadCancel, ReadError};
use crate::rv::ResourceVersion;
pub use crate::shared::Lifecycle;
use crate::shared::{Request, Shared};
use crate::stats::{Counters, Stats};
use crate::sync::{Arc, JoinHandle, Mutex, Ordering};
use crate::watch::WatchError;
use crate::watch::{Watch, WatchRequest};
use crate::watcher::{Route, Start, WatcherShared};
use crate::writer::Writer;

/// The engine: a watch cache for one resource type. Cheap to clone (a
/// shared handle); the last clone to drop stops it.
///
/// See the [crate docs](crate) for the model and an example.
#[derive(Debug, Clone)]
pub struct Engine {
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        stop(&self.shared, &self.dispatcher);
    }
}

/// Stops the engine and returns once its dispatcher has exited (so every
/// watch has its end), whoever else is stopping it at the same time.
fn stop(shared: &Shared, dispatcher: &Mutex<Option<JoinHandle<()>>>) {
    shared.request_stop();
    // The dispatcher itself (user code it calls, such as a clock, may stop
    // the engine) must not wait for its own exit.
    if shared
        .dispatcher
        .get()
        .is_some_and(|t| t.id() == crate::sync::current().id())
        // Nor a waker run by an inline dispatch, which holds the state the
        // dispatcher thread may be waiting for.
        || dispatch::in_inline_dispatch()
    {
        return;
    }
    // Joined under the lock: a concurrent caller waits on the lock until
    // the join is done, then finds the handle taken.
    let mut handle = dispatcher.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = handle.take() {
        // A panic inside the dispatcher is caught in `dispatch::run`, which
        // then ends every watch; the thread itself returns normally.
        let _ = h.join();
    }
}

impl Engine {
    /// Starts an engine and its dispatcher thread; returns the engine and
    /// its one writer.
    ///
    /// ```
    /// let (engine, writer) = herald::Engine::new(herald::Config::default())?;
    /// assert_eq!(engine.lifecycle(), herald::engine::Lifecycle::Pending);
    /// # drop(writer);
    /// # Ok::<(), herald::config::ConfigError>(())
    /// ```
    pub fn new(config: Config) -> Result<(Engine, Writer), ConfigError> {
        config.validate()?;
        let shared = Arc::new(Shared::new(config));
        let for_thread = shared.clone();
        // Inline dispatch never waits, which the time budget's rounds do.
        let inline = shared.config.inline_dispatch
            && shared.config.slow_watchers == crate::config::SlowWatchers::Park;
        let slot = inline.then(dispatch::Slot::default);
        let thread_slot = slot.clone();
        let join = crate::sync::spawn("herald-dispatch".into(), move || {
            dispatch::run(for_thread, thread_slot);
        })
        .map_err(ConfigError::Spawn)?;
        // Set before anyone else holds the engine: no wake can be lost.
        let _ = shared.dispatcher.set(join.thread().clone());
        let engine = Engine {
            handle: Arc::new(Handle {
                shared: shared.clone(),
                dispatcher: Mutex::new(Some(join)),
            }),
        };
        Ok((engine, Writer::new(shared, slot)))
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// Starts a watch. Validation and a too-old start version are reported
    /// here; what can only be known later (the cache never reaching a future
    /// version, falling out of history, a re-list) ends the watch with a
    /// reason instead.
    ///
    /// # When a watch begins
    ///
    /// The start is checked here, but *resolved* at the watch's first
    /// receive: the snapshot of an initial list is the state then, and a
    /// watch from version `R` replays from the ring then. A watch created at
    /// `R` and first read after the writer has pushed `R + 1` out of the
    /// history ends with [`EndReason::Gone`](crate::EndReason::Gone), as a
    /// Kubernetes watch whose client connects late does. Pinning the
    /// history for every created watch would let an unread handle hold the
    /// ring (and the writer) back; read a watch promptly, or size the
    /// history ([`Config::history_bounds`]) for the delay.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default().history_bounds(4, 4))?;
    /// writer.replace(Relist::new([], 10.into()))?;
    /// for rv in 11..=20 {
    ///     writer.apply(Change::added(Object::builder("ns", &rv.to_string()).build(), rv.into()))?;
    /// }
    /// let err = engine.watch(WatchRequest::new().resource_version(Some(12.into()))).unwrap_err();
    /// assert_eq!(err.to_string(), "too old resource version: 12 (16)");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn watch(&self, req: WatchRequest) -> Result<Watch, WatchError> {
        let shared = self.shared();
        let mut resolved = req.resolve(
            &shared.index_fields,
            policy::has_followers(shared.config.slow_watchers),
            || {
                shared
                    .most_recent()
                    .map_err(|e| WatchError::Upstream(e.into()))
            },
        )?;
        let (generation, ring_capacity) = {
            let st = shared.lock_state();
            match shared.lifecycle() {
                Lifecycle::Stopped => return Err(WatchError::EngineStopped),
                Lifecycle::Ready => {
                    // "Changes from now" means from the watch's creation,
                    // not its first receive: resolved under the lock.
                    if resolved.start == Start::Now {
                        resolved.start = Start::After(st.rv);
                    }
                    if let Start::After(rv) = resolved.start {
                        let oldest = st.ring.oldest_minus_one();
                        if rv < oldest {
                            return Err(WatchError::Gone(Gone::new(rv, oldest)));
                        }
                    }
                    (Some(st.generation), st.ring.capacity())
                }
                // Never listed: begins at the first list. Fallen back to
                // pending (the writer lost its source): waits for the
                // next list rather than start from a stale cache.
                Lifecycle::Pending => {
                    let next = (st.generation > 0).then_some(st.generation + 1);
                    (next, st.ring.capacity())
                }
            }
        };
        let queue = if resolved.route == Route::Follow {
            // A follower's queue carries at most one bookmark marker.
            1
        } else {
            let indexed = matches!(resolved.route, Route::Indexed(..));
            shared.config.queue_capacity(ring_capacity, indexed)
        };
        let created = shared.config.clock.now();
        let (start, bookmarks) = (resolved.start, resolved.allow_bookmarks);
        let w = Arc::new(WatcherShared::new(
            resolved.into_spec(shared.next_watcher_id(), created),
            start,
            bookmarks,
            generation,
            queue,
        ));
        // Counted before the request can be taken (the dispatcher counts
        // it down when it takes the registration up).
        Counters::add(&shared.counters.registrations_queued, 1);
        if !shared.send_control(|c| c.requests.push(Request::Register(w.clone()))) {
            Counters::sub(&shared.counters.registrations_queued, 1);
            return Err(WatchError::EngineStopped);
        }
        Counters::add(&shared.counters.watches_started, 1);
        Ok(Watch::new(w, shared.clone()))
    }

    /// Stops the engine: every watch ends with
    /// [`EndReason::EngineStopped`](crate::EndReason::EngineStopped), the
    /// writer's calls fail with [`WriteError::Stopped`](crate::writer::WriteError::Stopped), new watches fail.
    /// Final; idempotent. Waits for the dispatcher thread to exit.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::engine::Lifecycle;
    /// # use herald::writer::WriteError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// engine.stop();
    /// assert_eq!(engine.lifecycle(), Lifecycle::Stopped);
    /// assert_eq!(writer.replace(Relist::new([], 1.into())), Err(WriteError::Stopped));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stop(&self) {
        stop(&self.handle.shared, &self.handle.dispatcher);
    }

    /// Drains the engine, as a server does before it goes (a rolling
    /// restart): every watch open now is sent what the engine has
    /// dispatched, then, if it allows bookmarks, a bookmark at the version
    /// that stands for that point, and ends with
    /// [`EndReason::Drained`](crate::EndReason::Drained); its client
    /// watches again from the last version it saw, here or on another
    /// engine that follows the same source, with nothing missed or
    /// repeated. The engine keeps running: writes, reads and watches made
    /// after the drain are served. Returns `false` if the engine has
    /// stopped. The drain is carried out by the dispatcher between two
    /// batches; this call does not wait for it.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 5.into()))?;
    /// let mut watch = engine.watch(
    ///     WatchRequest::new()
    ///         .resource_version(Some(5.into()))
    ///         .allow_bookmarks(true),
    /// )?;
    /// writer.apply(Change::added(Object::builder("ns", "b").build(), 6.into()))?;
    /// assert!(engine.drain());
    /// let items: Vec<_> = std::iter::from_fn(|| watch.recv()).collect();
    /// let seen: Vec<_> = items
    ///     .iter()
    ///     .map(|i| match i {
    ///         WatchItem::Event(e) => (Some(e.kind()), e.resource_version().get()),
    ///         WatchItem::End(r) => (None, if *r == EndReason::Drained { 0 } else { 1 }),
    ///     })
    ///     .collect();
    /// assert_eq!(
    ///     seen,
    ///     [(Some(EventKind::Added), 6), (Some(EventKind::Bookmark), 6), (None, 0)]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drain(&self) -> bool {
        self.handle
            .shared
            .send_control(|c| c.requests.push(Request::Drain))
    }

    /// The engine's lifecycle state.
    pub fn lifecycle(&self) -> Lifecycle {
        self.shared().lifecycle()
    }

    /// Why the engine stopped on its own, if it did: its dispatcher
    /// failed (a panic, for instance in a user-supplied
    /// [`Clock`](crate::clock::Clock)). The engine is then stopped, every watch
    /// ended with [`EndReason::EngineFailed`](crate::EndReason::EngineFailed),
    /// and this holds the panic's message. `None` for a healthy or
    /// normally stopped engine.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, _writer) = Engine::new(Config::default())?;
    /// assert_eq!(engine.failure(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure(&self) -> Option<String> {
        self.shared().failure.get().cloned()
    }

    /// Reads one object by key (`namespace/name`, or `name`), without
    /// taking the writer's lock (see [`ReadAt`] for which state).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::ReadAt;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 5.into()))?;
    /// writer.apply(Change::added(Object::builder("ns", "b").build(), 6.into()))?;
    /// let now = engine.get("ns/b", ReadAt::Any)?;
    /// assert_eq!(now.resource_version.get(), 6);
    /// assert_eq!(now.item.unwrap().resource_version.get(), 6);
    /// // At version 5, "ns/b" did not exist yet.
    /// assert!(engine.get("ns/b", ReadAt::Exact(5.into()))?.item.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: &str, at: ReadAt) -> Result<GetResponse, ReadError> {
        self.shared().get(key, at, None)
    }

    /// [`Engine::get`], whose wait for a version ends with
    /// [`ReadError::Cancelled`] once `cancel` is cancelled (see
    /// [`ReadCancel`]).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::{ReadAt, ReadCancel, ReadError};
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let cancel = ReadCancel::new();
    /// cancel.cancel();
    /// let waiting = engine.get_with("ns/a", ReadAt::NotOlderThan(2.into()), &cancel);
    /// assert_eq!(waiting, Err(ReadError::Cancelled));
    /// // A read that does not wait is served all the same.
    /// assert!(engine.get_with("ns/a", ReadAt::Any, &cancel).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_with(
        &self,
        key: &str,
        at: ReadAt,
        cancel: &ReadCancel,
    ) -> Result<GetResponse, ReadError> {
        self.shared().get(key, at, Some(cancel))
    }

    /// Lists objects: by key scope and selectors, served from a list index
    /// ([`Config::list_index`]) when the field selector requires an exact
    /// value of its field; at the present or at an exact version inside the history
    /// window; in pages with continue tokens. Never takes the writer's
    /// lock.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::ListRequest;
    /// let (engine, mut writer) = Engine::new(Config::default().list_index("spec.nodeName"))?;
    /// let pod = |name: &str, node: &str| {
    ///     Object::builder("ns", name).field("spec.nodeName", node).build()
    /// };
    /// writer.replace(Relist::new([pod("a", "n1"), pod("b", "n2"), pod("c", "n1")], 10.into()))?;
    /// let on_n1 = engine.list(&ListRequest::new().fields("spec.nodeName=n1".parse()?))?;
    /// let names: Vec<_> = on_n1.items.iter().map(|i| i.object.name()).collect();
    /// assert_eq!(names, ["a", "c"]);
    ///
    /// // Pages: each names the version of the first.
    /// let first = engine.list(&ListRequest::new().limit(2))?;
    /// writer.apply(Change::deleted(pod("c", "n1"), 11.into()))?;
    /// let token = first.continue_token.unwrap();
    /// let rest = engine.list(&ListRequest::new().limit(2).continue_from(token))?;
    /// assert_eq!(rest.items[0].object.name(), "c");
    /// assert_eq!(rest.resource_version.get(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list(&self, req: &ListRequest) -> Result<ListResponse, ReadError> {
        self.shared().list(req)
    }

    /// The generation: 0 before the first list, then one more per `replace`.
    pub fn generation(&self) -> u64 {
        self.shared().lock_state().generation
    }

    /// The resource version the cache has reached (changes and progress).
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// assert_eq!(engine.resource_version().get(), 0);
    /// writer.replace(Relist::new([], 3.into()))?;
    /// writer.progress(8.into())?;
    /// assert_eq!(engine.resource_version().get(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_version(&self) -> ResourceVersion {
        ResourceVersion::new(self.shared().current_rv.load(Ordering::Acquire))
    }

    /// A snapshot of the engine's counters.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// assert_eq!(engine.stats().relists, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared().counters.snapshot()
    }
}
