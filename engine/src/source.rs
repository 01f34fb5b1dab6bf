//! Upstream sources: the store a cache mirrors (docs/semantics.md §9).
//!
//! A [`Source`] has etcd v3's shape (seeds/003): a list at a revision, a
//! watch from a revision on with the previous state of each deleted
//! object, progress notifications that carry the revision the store has
//! reached, and a compaction error when the revision asked for is gone.
//! The [`Reflector`](crate::reflector::Reflector) drives an engine's writer from one.
//!
//! [`MemorySource`] is the embedded default: an in-memory multi-version
//! key-value store with revisions, watches, compaction and progress
//! requests, for the main job, the examples and the tests. A real etcd
//! source implements the same trait.
//!
//! The calls block (a source is driven by the reflector's own thread, and
//! a C caller has no executor); an async client wraps its runtime inside.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::event::ChangeKind;
use crate::object::Item;
use crate::{Change, Object, ResourceVersion};

/// A list of everything the source holds, at one revision.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The objects, each with the revision of its last change (etcd's
    /// `mod_revision`), at most `revision`.
    pub items: Vec<Item>,
    /// The revision the list reflects.
    pub revision: ResourceVersion,
}

/// What a source watch delivers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SourceEvent {
    /// One change, at its revision (a deletion carries the object's last
    /// state, as etcd's previous value).
    Change(Change),
    /// The store has reached this revision; nothing before it is still to
    /// come (etcd's progress notification).
    Progress(ResourceVersion),
}

/// A source could not serve a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceError {
    /// The revision asked for has been compacted away: list again.
    Compacted {
        /// The revision asked for.
        requested: ResourceVersion,
        /// The oldest revision still held.
        compacted: ResourceVersion,
    },
    /// The store cannot be reached or failed; retry after a backoff.
    Unavailable(String),
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Compacted {
                requested,
                compacted,
            } => write!(
                f,
                "revision {requested} has been compacted (the source holds {compacted} and later)"
            ),
            SourceError::Unavailable(why) => write!(f, "source unavailable: {why}"),
        }
    }
}

impl std::error::Error for SourceError {}

/// The source behind an engine, as a [`Reflector`](crate::reflector::Reflector)
/// attaches it (to `Shared::set_upstream`): what "the most recent
/// version" is, for consistent reads and watches.
pub(crate) trait Upstream: Send + Sync {
    /// The source's current revision, once the cache is known to be of
    /// the source's present history (a consistent read's target; see the
    /// reflector's docs on a source that goes back).
    fn most_recent(&self) -> Result<ResourceVersion, UpstreamError>;

    /// Whether consistent reads are served from the source itself (its
    /// progress cannot be trusted).
    fn reads_through(&self) -> bool;

    /// The source's list now (a consistent list read through).
    fn list_through(&self) -> Result<Listing, UpstreamError>;

    /// The source's list exactly at `rv`, if it can read the past.
    fn list_at_through(&self, rv: ResourceVersion) -> Result<Option<Listing>, UpstreamError>;

    /// The source's object under `key` now (a consistent get read
    /// through), and the revision read at.
    fn get_through(&self, key: &str) -> Result<(Option<Item>, ResourceVersion), UpstreamError>;
}

/// Why the source behind an engine could not answer for a consistent read
/// or a watch ([`Upstream`]); a read reports it as
/// [`ReadError::Source`](crate::read::ReadError::Source) or
/// [`ReadError::SourceRegressed`](crate::read::ReadError::SourceRegressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpstreamError {
    /// The source failed.
    Source(SourceError),
    /// The source is behind the cache (its history went back), and the
    /// cache did not re-list from it in time.
    Regressed {
        /// The source's revision.
        source: ResourceVersion,
        /// The cache's version, of the old history.
        cache: ResourceVersion,
    },
}

/// An upstream store with etcd v3's shape. Implementations are shared
/// between the reflector and consistent readers, so every call takes
/// `&self`.
pub trait Source: Send + Sync + 'static {
    /// Everything the source holds, at its current revision.
    fn list(&self) -> Result<Listing, SourceError>;

    /// The changes after `after` (from `after + 1` on), in revision order,
    /// then live; [`SourceError::Compacted`] if `after` is older than the
    /// source keeps.
    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError>;

    /// The source's current revision (what a consistent read must reach).
    fn current_revision(&self) -> Result<ResourceVersion, SourceError>;

    /// Asks every open watch for a progress notification (etcd's
    /// `RequestProgress`).
    fn request_progress(&self) -> Result<(), SourceError>;

    /// Whether a progress notification means what it says: every change
    /// up to its revision has been delivered on its watch. An etcd with
    /// etcd#15220 (before 3.5.13 and 3.4.31) breaks that. When `false`, a
    /// [`Reflector`](crate::reflector::Reflector) asks for no progress and serves
    /// consistent reads ([`ReadAt::Latest`](crate::read::ReadAt::Latest)) from
    /// the source itself (the reference's fallback to etcd when its
    /// progress cannot be trusted); the source should pass no progress
    /// on either.
    fn progress_is_reliable(&self) -> bool {
        true
    }

    /// Everything the source held at exactly `revision`, if it can say
    /// (`None`: it cannot read the past). Asked, when progress is not
    /// reliable, for an exact read at a version the cache has not reached;
    /// by default `None` (the read waits as any, then is too large).
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        let _ = revision;
        Ok(None)
    }

    /// The oldest revision a [`Source::watch`] may start after, if the
    /// source can say (a kube-apiserver's watch cache keeps a window of
    /// its own, narrower than etcd's); by default `None`: unknown, the
    /// watch says. A [`Reflector`](crate::reflector::Reflector)'s first list reaches
    /// back no further ([`ReflectorConfig::backfill`](crate::reflector::ReflectorConfig::backfill)).
    fn oldest_watchable(&self) -> Result<Option<ResourceVersion>, SourceError> {
        Ok(None)
    }

    /// The object under `key` and the revision read at, as of the
    /// source's current revision: a consistent get when progress is not
    /// reliable. By default, from a whole [`Source::list`]; a source that
    /// can read one key overrides it.
    fn get(&self, key: &str) -> Result<(Option<Item>, ResourceVersion), SourceError> {
        let listing = self.list()?;
        let item = listing.items.into_iter().find(|i| i.object.key() == key);
        Ok((item, listing.revision))
    }
}

/// One open watch on a source.
pub trait SourceWatch: Send {
    /// The next event, waiting up to `timeout`: `Ok(None)` if none came.
    /// An error ends the watch.
    fn next(&mut self, timeout: Duration) -> Result<Option<SourceEvent>, SourceError>;
}

/// An in-memory multi-version store: revisions, prefix-free keys (one
/// resource type), watches from any retained revision, compaction and
/// progress requests. Clones share one store.
///
/// ```
/// use herald::Object;
/// use herald::source::{MemorySource, Source, SourceEvent};
/// use std::time::Duration;
/// let source = MemorySource::new();
/// let rev = source.put(Object::builder("ns", "a").build());
/// let mut watch = source.watch(rev)?;
/// source.delete("ns/a");
/// match watch.next(Duration::from_secs(1))? {
///     Some(SourceEvent::Change(c)) => assert_eq!(c.object().name(), "a"),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), herald::source::SourceError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    inner: Arc<Mutex<Store>>,
}

#[derive(Debug, Default)]
struct Store {
    revision: u64,
    /// key -> (object, the revision of its last change).
    objects: BTreeMap<String, (Object, ResourceVersion)>,
    /// Every change after `compacted`, in revision order.
    log: VecDeque<(u64, ChangeKind, Object)>,
    /// Revisions at or below this are gone from the log.
    compacted: u64,
    /// `Some` while the source refuses calls (a test's outage).
    down: Option<String>,
    watches: Vec<Weak<Feed>>,
}

/// One watch's queue, filled by the store, drained by the watch.
#[derive(Debug, Default)]
struct Feed {
    queue: Mutex<FeedState>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct FeedState {
    events: VecDeque<SourceEvent>,
    /// The store ended this watch (compaction past it, or an outage).
    error: Option<SourceError>,
}

impl MemorySource {
    /// An empty store at revision 0.
    pub fn new() -> MemorySource {
        MemorySource::default()
    }

    /// A store that starts with `objects` at `revision`, as one restored
    /// from a snapshot: the next change is at `revision + 1`, and watches
    /// from before `revision` are compacted away.
    ///
    /// ```
    /// use herald::Object;
    /// use herald::source::{MemorySource, Source};
    /// let source = MemorySource::seeded([Object::builder("ns", "a").build()], 41.into());
    /// assert_eq!(source.put(Object::builder("ns", "b").build()).get(), 42);
    /// assert_eq!(source.list()?.items.len(), 2);
    /// assert!(source.watch(40.into()).is_err());
    /// # Ok::<(), herald::source::SourceError>(())
    /// ```
    pub fn seeded(
        objects: impl IntoIterator<Item = Object>,
        revision: ResourceVersion,
    ) -> MemorySource {
        let source = MemorySource::new();
        {
            let mut st = source.lock();
            st.objects = objects
                .into_iter()
                .map(|o| (o.key().to_owned(), (o, revision)))
                .collect();
            st.revision = revision.get();
            st.compacted = revision.get();
        }
        source
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Restores the store from a backup: it now holds `objects` at
    /// `revision`, which may be lower than its current one (an etcd
    /// restored without `--bump-revision`: revisions go back, and the ones
    /// after `revision` are reused by a different history). The next
    /// change is at `revision + 1`; the history before `revision` is
    /// compacted away. Open watches stay open and see what follows (a
    /// store that keeps its clients across the restore); end them with
    /// [`MemorySource::fail_watches`] to play one that restarts.
    ///
    /// ```
    /// use herald::Object;
    /// use herald::source::{MemorySource, Source};
    /// let source = MemorySource::new();
    /// for name in ["a", "b", "c"] {
    ///     source.put(Object::builder("ns", name).build());
    /// }
    /// source.restore([Object::builder("ns", "a").build()], 1.into());
    /// assert_eq!(source.current_revision()?.get(), 1);
    /// assert_eq!(source.put(Object::builder("ns", "d").build()).get(), 2);
    /// assert_eq!(source.list()?.items.len(), 2);
    /// # Ok::<(), herald::source::SourceError>(())
    /// ```
    pub fn restore(&self, objects: impl IntoIterator<Item = Object>, revision: ResourceVersion) {
        let mut st = self.lock();
        st.objects = objects
            .into_iter()
            .map(|o| (o.key().to_owned(), (o, revision)))
            .collect();
        st.revision = revision.get();
        st.compacted = revision.get();
        st.log.clear();
    }

    /// Creates or replaces the object under its key; returns the new
    /// revision.
    pub fn put(&self, object: Object) -> ResourceVersion {
        self.put_with(|_| object)
    }

    /// Deletes the object under `key`; returns the new revision, or `None`
    /// if there was none (the revision does not move).
    pub fn delete(&self, key: &str) -> Option<ResourceVersion> {
        self.delete_with(key, |last, _| last.clone())
    }

    /// [`put`](MemorySource::put) of the object `make` builds for the
    /// revision the put gets: for payloads that carry their own version
    /// (a Kubernetes object's `metadata.resourceVersion`, which etcd
    /// does not store and the apiserver sets on read). The object's key is
    /// its own.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::source::{MemorySource, Source, SourceError};
    /// let source = MemorySource::new();
    /// let rv = source.put_with(|rv| Object::builder("ns", "a").payload(rv.to_string()).build());
    /// let listing = source.list()?;
    /// assert_eq!(&listing.items[0].object.payload()[..], rv.to_string().as_bytes());
    /// # Ok::<(), SourceError>(())
    /// ```
    pub fn put_with(&self, make: impl FnOnce(ResourceVersion) -> Object) -> ResourceVersion {
        let mut st = self.lock();
        let object = make(ResourceVersion::new(st.revision + 1));
        let kind = if st.objects.contains_key(object.key()) {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        let rev = st.record(kind, object.clone());
        st.objects.insert(object.key().to_owned(), (object, rev));
        rev
    }

    /// [`delete`](MemorySource::delete), the deletion carrying as the
    /// object's last state what `last_state` makes of the stored object
    /// and the deletion's revision (as the apiserver's watcher stamps a
    /// deleted object with the deletion's revision). A last state under
    /// another key is not taken: the stored object is.
    pub fn delete_with(
        &self,
        key: &str,
        last_state: impl FnOnce(&Object, ResourceVersion) -> Object,
    ) -> Option<ResourceVersion> {
        let mut st = self.lock();
        let (object, _) = st.objects.remove(key)?;
        let last = last_state(&object, ResourceVersion::new(st.revision + 1));
        let last = if last.key() == object.key() {
            last
        } else {
            object
        };
        Some(st.record(ChangeKind::Deleted, last))
    }

    /// Advances the revision by `n` with no change to this store's keys:
    /// writes to other resources, which share etcd's revision counter. A
    /// watch sees nothing of them until a progress notification; a
    /// consistent read must still reach them.
    pub fn advance_revision(&self, n: u64) -> ResourceVersion {
        let mut st = self.lock();
        st.revision += n;
        ResourceVersion::new(st.revision)
    }

    /// Forgets the history at and below `revision` (etcd's compaction):
    /// watches from there on fail with [`SourceError::Compacted`]. Open
    /// watches keep what they were already sent; end them with
    /// [`MemorySource::fail_watches`] to play a compaction that overtook a
    /// slow watch.
    pub fn compact(&self, revision: ResourceVersion) {
        let mut st = self.lock();
        let rev = revision.get().min(st.revision);
        while st.log.front().is_some_and(|(r, _, _)| *r <= rev) {
            st.log.pop_front();
        }
        st.compacted = st.compacted.max(rev);
    }

    /// Ends every open watch with `error`, as a store that drops its
    /// clients would.
    pub fn fail_watches(&self, error: SourceError) {
        let st = self.lock();
        for feed in st.watches.iter().filter_map(Weak::upgrade) {
            feed.fail(error.clone());
        }
    }

    /// Makes every call fail with [`SourceError::Unavailable`] (and ends
    /// open watches) until [`MemorySource::recover`].
    pub fn go_down(&self, why: &str) {
        let mut st = self.lock();
        st.down = Some(why.to_owned());
        for feed in st.watches.iter().filter_map(Weak::upgrade) {
            feed.fail(SourceError::Unavailable(why.to_owned()));
        }
    }

    /// Serves calls again after [`MemorySource::go_down`].
    pub fn recover(&self) {
        self.lock().down = None;
    }

    /// The number of watches open now.
    pub fn open_watches(&self) -> usize {
        self.lock()
            .watches
            .iter()
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

impl Store {
    fn check_up(&self) -> Result<(), SourceError> {
        match &self.down {
            Some(why) => Err(SourceError::Unavailable(why.clone())),
            None => Ok(()),
        }
    }

    /// Appends a change at the next revision and feeds it to the watches.
    fn record(&mut self, kind: ChangeKind, object: Object) -> ResourceVersion {
        self.revision += 1;
        let rev = ResourceVersion::new(self.revision);
        self.log.push_back((self.revision, kind, object.clone()));
        let event = SourceEvent::Change(change(kind, object, rev));
        self.watches.retain(|w| w.strong_count() > 0);
        for feed in self.watches.iter().filter_map(Weak::upgrade) {
            feed.push(event.clone());
        }
        rev
    }
}

fn change(kind: ChangeKind, object: Object, rv: ResourceVersion) -> Change {
    match kind {
        ChangeKind::Added => Change::added(object, rv),
        ChangeKind::Modified => Change::modified(object, rv),
        ChangeKind::Deleted => Change::deleted(object, rv),
    }
}

impl Feed {
    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, event: SourceEvent) {
        self.lock().events.push_back(event);
        self.ready.notify_one();
    }

    fn fail(&self, error: SourceError) {
        self.lock().error.get_or_insert(error);
        self.ready.notify_one();
    }
}

impl Source for MemorySource {
    fn list(&self) -> Result<Listing, SourceError> {
        let st = self.lock();
        st.check_up()?;
        Ok(Listing {
            items: st
                .objects
                .values()
                .map(|(object, rev)| Item::new(object.clone(), *rev))
                .collect(),
            revision: ResourceVersion::new(st.revision),
        })
    }

    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        let mut st = self.lock();
        st.check_up()?;
        if after.get() < st.compacted {
            return Err(SourceError::Compacted {
                requested: after,
                compacted: ResourceVersion::new(st.compacted),
            });
        }
        let feed = Arc::new(Feed::default());
        {
            let mut q = feed.lock();
            for (rev, kind, object) in st.log.iter().filter(|(r, _, _)| *r > after.get()) {
                let rv = ResourceVersion::new(*rev);
                q.events
                    .push_back(SourceEvent::Change(change(*kind, object.clone(), rv)));
            }
        }
        st.watches.push(Arc::downgrade(&feed));
        Ok(Box::new(MemoryWatch { feed }))
    }

    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        let st = self.lock();
        st.check_up()?;
        Ok(ResourceVersion::new(st.revision))
    }

    fn request_progress(&self) -> Result<(), SourceError> {
        let st = self.lock();
        st.check_up()?;
        let rev = ResourceVersion::new(st.revision);
        for feed in st.watches.iter().filter_map(Weak::upgrade) {
            // After every change already queued: the revision is reached.
            feed.push(SourceEvent::Progress(rev));
        }
        Ok(())
    }
}

/// A watch on a [`MemorySource`].
#[derive(Debug)]
struct MemoryWatch {
    feed: Arc<Feed>,
}

impl SourceWatch for MemoryWatch {
    fn next(&mut self, timeout: Duration) -> Result<Option<SourceEvent>, SourceError> {
        let deadline = crate::clock::deadline_after(Instant::now(), timeout);
        let mut q = self.feed.lock();
        loop {
            if let Some(event) = q.events.pop_front() {
                return Ok(Some(event));
            }
            if let Some(e) = &q.error {
                return Err(e.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            q = self
                .feed
                .ready
                .wait_timeout(q, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Object {
        Object::builder("ns", name).build()
    }

    fn next(w: &mut Box<dyn SourceWatch>) -> SourceEvent {
        w.next(Duration::from_secs(5)).unwrap().expect("an event")
    }

    #[test]
    fn watches_replay_from_any_retained_revision_then_follow() {
        let s = MemorySource::new();
        let r1 = s.put(obj("a"));
        let r2 = s.put(obj("b"));
        let r3 = s.put(obj("a"));
        assert_eq!((r1.get(), r2.get(), r3.get()), (1, 2, 3));
        let mut w = s.watch(r1).unwrap();
        let SourceEvent::Change(c) = next(&mut w) else {
            panic!()
        };
        assert_eq!(
            (c.kind(), c.resource_version().get()),
            (ChangeKind::Added, 2)
        );
        let SourceEvent::Change(c) = next(&mut w) else {
            panic!()
        };
        assert_eq!(
            (c.kind(), c.resource_version().get()),
            (ChangeKind::Modified, 3)
        );
        // Live, and a deletion carries the last state.
        assert_eq!(s.delete("ns/b").map(|r| r.get()), Some(4));
        assert_eq!(s.delete("ns/b"), None);
        let SourceEvent::Change(c) = next(&mut w) else {
            panic!()
        };
        assert_eq!((c.kind(), c.object().name()), (ChangeKind::Deleted, "b"));
        assert_eq!(w.next(Duration::from_millis(10)).unwrap(), None);
        // Progress comes after what is queued.
        s.put(obj("c"));
        s.request_progress().unwrap();
        assert!(matches!(next(&mut w), SourceEvent::Change(_)));
        assert_eq!(next(&mut w), SourceEvent::Progress(5.into()));
        let l = s.list().unwrap();
        assert_eq!((l.items.len(), l.revision.get()), (2, 5));
    }

    #[test]
    fn compaction_refuses_old_watches_and_outages_end_open_ones() {
        let s = MemorySource::new();
        for i in 0..5 {
            s.put(obj(&i.to_string()));
        }
        s.compact(3.into());
        assert_eq!(
            s.watch(2.into()).err(),
            Some(SourceError::Compacted {
                requested: 2.into(),
                compacted: 3.into()
            })
        );
        let mut w = s.watch(3.into()).unwrap();
        assert!(matches!(next(&mut w), SourceEvent::Change(c) if c.resource_version().get() == 4));
        assert_eq!(s.open_watches(), 1);
        s.go_down("maintenance");
        assert!(matches!(next_err(&mut w), SourceError::Unavailable(_)));
        assert!(s.list().is_err() && s.current_revision().is_err());
        s.recover();
        assert_eq!(s.current_revision().unwrap().get(), 5);
        drop(w);
        assert_eq!(s.open_watches(), 0);
    }

    fn next_err(w: &mut Box<dyn SourceWatch>) -> SourceError {
        loop {
            match w.next(Duration::from_secs(5)) {
                Err(e) => return e,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no error"),
            }
        }
    }
}
