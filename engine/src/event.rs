//! Changes (what the writer applies) and events (what a watcher receives).

use std::fmt;

use crate::{Object, ResourceVersion};

/// The kind of a change applied by the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// The object was created.
    Added,
    /// The object was updated.
    Modified,
    /// The object was deleted; the change carries its last state.
    Deleted,
}

/// One change from upstream: the object's new state (or, for a deletion, its
/// last state) at a resource version.
///
/// The engine looks the previous state up in its own store, as the reference
/// watch cache does (`watchCache.processEvent`), so a change need not carry it.
///
/// ```
/// use herald::{Change, Object, ResourceVersion};
/// use herald::event::ChangeKind;
/// let c = Change::added(Object::builder("ns", "a").build(), ResourceVersion::new(5));
/// assert_eq!(c.kind(), ChangeKind::Added);
/// assert_eq!(c.resource_version().get(), 5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    kind: ChangeKind,
    object: Object,
    rv: ResourceVersion,
}

impl Change {
    /// A change of the given kind.
    ///
    /// ```
    /// # use herald::{Change, Object, ResourceVersion};
    /// # use herald::event::ChangeKind;
    /// let c = Change::new(ChangeKind::Modified, Object::builder("ns", "a").build(), 3.into());
    /// assert_eq!(c.object().key(), "ns/a");
    /// ```
    pub fn new(kind: ChangeKind, object: Object, rv: ResourceVersion) -> Self {
        Change { kind, object, rv }
    }

    /// An [`Added`](ChangeKind::Added) change.
    ///
    /// ```
    /// # use herald::{Change, Object};
    /// # use herald::event::ChangeKind;
    /// assert_eq!(Change::added(Object::builder("", "n").build(), 1.into()).kind(), ChangeKind::Added);
    /// ```
    pub fn added(object: Object, rv: ResourceVersion) -> Self {
        Change::new(ChangeKind::Added, object, rv)
    }

    /// A [`Modified`](ChangeKind::Modified) change.
    ///
    /// ```
    /// # use herald::{Change, Object};
    /// # use herald::event::ChangeKind;
    /// assert_eq!(Change::modified(Object::builder("", "n").build(), 1.into()).kind(), ChangeKind::Modified);
    /// ```
    pub fn modified(object: Object, rv: ResourceVersion) -> Self {
        Change::new(ChangeKind::Modified, object, rv)
    }

    /// A [`Deleted`](ChangeKind::Deleted) change carrying the object's last state.
    ///
    /// ```
    /// # use herald::{Change, Object};
    /// # use herald::event::ChangeKind;
    /// assert_eq!(Change::deleted(Object::builder("", "n").build(), 1.into()).kind(), ChangeKind::Deleted);
    /// ```
    pub fn deleted(object: Object, rv: ResourceVersion) -> Self {
        Change::new(ChangeKind::Deleted, object, rv)
    }

    /// The kind.
    pub fn kind(&self) -> ChangeKind {
        self.kind
    }

    /// The object (for a deletion, its last state).
    pub fn object(&self) -> &Object {
        &self.object
    }

    /// The resource version.
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }

    pub(crate) fn into_parts(self) -> (ChangeKind, Object, ResourceVersion) {
        (self.kind, self.object, self.rv)
    }
}

/// What a watcher is told happened, after its filter has been applied to the
/// object's current and previous state (see the crate docs, "Filtering").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// The object entered the watcher's view (created, or now matches).
    Added,
    /// The object changed and matches before and after.
    Modified,
    /// The object left the watcher's view (deleted, or no longer matches).
    Deleted,
    /// No object: the watcher has seen everything up to the resource version.
    Bookmark,
}

/// One event delivered to a watcher.
///
/// ```
/// # use herald::*;
/// # let (engine, mut writer) = Engine::new(Config::default()).unwrap();
/// # writer.replace(Relist::new([Object::builder("ns", "a").build()], 1.into())).unwrap();
/// let mut watch = engine.watch(WatchRequest::new())?;
/// let WatchItem::Event(ev) = watch.recv().unwrap() else { panic!() };
/// assert_eq!(ev.kind(), EventKind::Added);
/// assert_eq!(ev.object().unwrap().key(), "ns/a");
/// assert_eq!(ev.resource_version().get(), 1);
/// # Ok::<(), herald::watch::WatchError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    kind: EventKind,
    rv: ResourceVersion,
    object: Option<Object>,
    initial_events_end: bool,
}

impl Event {
    pub(crate) fn object_event(kind: EventKind, rv: ResourceVersion, object: Object) -> Self {
        Event {
            kind,
            rv,
            object: Some(object),
            initial_events_end: false,
        }
    }

    pub(crate) fn bookmark(rv: ResourceVersion, initial_events_end: bool) -> Self {
        Event {
            kind: EventKind::Bookmark,
            rv,
            object: None,
            initial_events_end,
        }
    }

    /// The kind of event.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The resource version of the change (for a deletion seen through a
    /// filter, the change's version, not the previous object's), or the
    /// version a bookmark vouches for.
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }

    /// The object: its new state for Added and Modified, its last state that
    /// the watcher could see for Deleted, none for a Bookmark.
    pub fn object(&self) -> Option<&Object> {
        self.object.as_ref()
    }

    /// Takes the object out of the event.
    pub fn into_object(self) -> Option<Object> {
        self.object
    }

    /// Whether this is the bookmark that ends the initial events of a watch
    /// with `send_initial_events` (Kubernetes' `k8s.io/initial-events-end`
    /// annotation).
    pub fn is_initial_events_end(&self) -> bool {
        self.initial_events_end
    }
}

/// What a watch yields: events, then exactly one [`End`](WatchItem::End).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchItem {
    /// An event.
    Event(Event),
    /// The watch has ended, and why. Nothing follows it.
    End(EndReason),
}

/// Why a watch ended. Every watch ends with exactly one of these; the
/// reference closes watches silently, Herald always says why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndReason {
    /// The watch was stopped by its owner ([`Watch::stop`](crate::Watch::stop)).
    Stopped,
    /// The watch's deadline passed.
    Deadline,
    /// The watcher could not keep up and was ended by the dispatch policy.
    TooSlow,
    /// The changes the watcher needs next have left the history window.
    Gone(Gone),
    /// The engine re-listed (a `replace`): the history this watch followed
    /// is over; watch again.
    Relisted,
    /// The engine was stopped.
    EngineStopped,
    /// The cache did not reach the requested resource version in time.
    TooLargeResourceVersion(TooLargeResourceVersion),
    /// The engine's dispatcher failed (a panic, for instance in a
    /// user-supplied [`Clock`](crate::clock::Clock)); the engine has stopped and
    /// [`Engine::failure`](crate::Engine::failure) says why. Watch a
    /// healthy engine again.
    EngineFailed,
    /// The engine was drained ([`Engine::drain`](crate::Engine::drain)):
    /// the watch was sent everything the engine had dispatched when the
    /// drain came and, if it allows bookmarks, a bookmark at that version
    /// (unless its queue was full or its overflow active; then its last
    /// event's version stands). Watch again from that version, on this
    /// engine or on another that follows the same source: nothing is
    /// missed and nothing repeats.
    Drained,
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndReason::Stopped => f.write_str("watch stopped"),
            EndReason::Deadline => f.write_str("watch deadline passed"),
            EndReason::TooSlow => f.write_str("watcher too slow to keep up"),
            EndReason::Gone(g) => fmt::Display::fmt(g, f),
            EndReason::Relisted => f.write_str("cache re-listed; watch again"),
            EndReason::EngineStopped => f.write_str("engine stopped"),
            EndReason::TooLargeResourceVersion(t) => fmt::Display::fmt(t, f),
            EndReason::EngineFailed => f.write_str("engine failed"),
            EndReason::Drained => f.write_str("watch drained: the cache is shutting down"),
        }
    }
}

/// The requested resource version is older than the history the cache
/// keeps (HTTP 410 Gone, "Expired", in Kubernetes).
///
/// ```
/// let g = herald::event::Gone::new(5.into(), 9.into());
/// assert_eq!(g.to_string(), "too old resource version: 5 (9)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    requested: ResourceVersion,
    oldest_minus_one: ResourceVersion,
}

impl Gone {
    /// A Gone for `requested` when the oldest servable version is
    /// `oldest_minus_one + 1` (the reference's message prints `oldest - 1`).
    pub fn new(requested: ResourceVersion, oldest_minus_one: ResourceVersion) -> Self {
        Gone {
            requested,
            oldest_minus_one,
        }
    }

    /// The resource version asked for (for a watch that fell behind: the
    /// last one it received).
    pub fn requested(&self) -> ResourceVersion {
        self.requested
    }

    /// The oldest version a watch may start from now (`oldest - 1`).
    pub fn oldest_servable(&self) -> ResourceVersion {
        self.oldest_minus_one
    }
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // seeds: watch_cache.go getAllEventsSinceLocked,
        // fmt.Sprintf("too old resource version: %d (%d)", resourceVersion, oldest-1)
        write!(
            f,
            "too old resource version: {} ({})",
            self.requested, self.oldest_minus_one
        )
    }
}

impl std::error::Error for Gone {}

/// The cache did not reach the requested resource version within the wait
/// (HTTP 504 with a retry-after of one second in Kubernetes).
///
/// ```
/// let t = herald::event::TooLargeResourceVersion::new(9.into(), 5.into());
/// assert_eq!(t.to_string(), "Too large resource version: 9, current: 5");
/// assert_eq!(t.retry_after(), std::time::Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLargeResourceVersion {
    requested: ResourceVersion,
    current: ResourceVersion,
}

impl TooLargeResourceVersion {
    /// The error for `requested` when the cache stands at `current`.
    pub fn new(requested: ResourceVersion, current: ResourceVersion) -> Self {
        TooLargeResourceVersion { requested, current }
    }

    /// The resource version asked for.
    pub fn requested(&self) -> ResourceVersion {
        self.requested
    }

    /// Where the cache stood when the wait ended.
    pub fn current(&self) -> ResourceVersion {
        self.current
    }

    /// How long a client should wait before retrying (the reference's 1 s).
    pub fn retry_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }
}

impl fmt::Display for TooLargeResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // apimachinery storage.NewTooLargeResourceVersionError
        write!(
            f,
            "Too large resource version: {}, current: {}",
            self.requested, self.current
        )
    }
}

impl std::error::Error for TooLargeResourceVersion {}
