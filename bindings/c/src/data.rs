//! The plain data C and Herald exchange: handles, strings and bytes,
//! objects, requests, events, ends, items and stats, and their flags.

use std::ffi::c_char;

/// An engine: the cache, its readers and watchers.
pub type HeraldEngine = u64;
/// An engine's one writer.
pub type HeraldWriter = u64;
/// A watch.
pub type HeraldWatch = u64;
/// A set of watches with one readiness descriptor.
pub type HeraldWatchSet = u64;
/// A list's or a get's result.
pub type HeraldList = u64;

/// A string passed in: `len` bytes of UTF-8 at `ptr` (no NUL needed;
/// `ptr` may be null only when `len` is 0).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldStr {
    /// The bytes.
    pub ptr: *const c_char,
    /// How many.
    pub len: usize,
}

/// Bytes handed out, borrowed (see the function for how long they live).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldBytes {
    /// The bytes; null when `len` is 0.
    pub ptr: *const u8,
    /// How many.
    pub len: usize,
}

/// A label or a field: key and value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldPair {
    /// The label's key or the field's path (`spec.nodeName`).
    pub key: HeraldStr,
    /// Its value.
    pub value: HeraldStr,
}

/// An object to write. Its key is `namespace/name`, or `name` when the
/// namespace is empty.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldObject {
    /// The namespace (empty: cluster-scoped).
    pub namespace_: HeraldStr,
    /// The name.
    pub name: HeraldStr,
    /// `labels_len` labels (null when 0).
    pub labels: *const HeraldPair,
    /// How many labels.
    pub labels_len: usize,
    /// `fields_len` selectable fields (null when 0).
    pub fields: *const HeraldPair,
    /// How many fields.
    pub fields_len: usize,
    /// The payload, kept as given (copied once).
    pub payload: HeraldBytes,
}

/// An engine's configuration; a null pointer is the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldConfig {
    /// Fields to index watchers by (`spec.nodeName`): a watcher whose
    /// field selector pins one is found by value, not scanned.
    pub indexed_fields: *const HeraldStr,
    /// How many.
    pub indexed_fields_len: usize,
    /// The history (changes kept for watches from a past version) holds
    /// at least this many changes; 0: the default (100, the reference's).
    pub history_lower: usize,
    /// And at most this many; 0: the default (grows with the history
    /// window, 75 s).
    pub history_upper: usize,
}

/// [`herald_engine_new_flags`](crate::herald_engine_new_flags): the writer fans each change out on its own
/// thread when the engine's dispatcher thread is idle (the engine's
/// `Config::inline_dispatch`), waking that thread only when work remains.
/// Without it (the default), each write wakes the dispatcher thread (a
/// futex wake-up), which fans the change out. With it, the watchers'
/// wake-ups come from the writer's thread, with no hop through another
/// thread; the writer pays the fan-out (a filter per candidate watcher,
/// a wake-up per sleeping one), but never waits for it: a change the
/// dispatcher thread is busy with is left to it, as without the flag.
pub const HERALD_ENGINE_INLINE_DISPATCH: u32 = 1;

/// The kind of a write ([`herald_writer_apply`](crate::herald_writer_apply)).
pub type HeraldChangeKind = i32;
/// A new object.
pub const HERALD_CHANGE_ADDED: HeraldChangeKind = 0;
/// A new state of an object.
pub const HERALD_CHANGE_MODIFIED: HeraldChangeKind = 1;
/// An object deleted; the object given is its last state.
pub const HERALD_CHANGE_DELETED: HeraldChangeKind = 2;

/// What a watch or a list covers ([`HeraldWatchRequest::scope`]).
pub type HeraldScope = i32;
/// Every key.
pub const HERALD_SCOPE_ALL: HeraldScope = 0;
/// The keys under a prefix (a namespace): `scope_value/...`.
pub const HERALD_SCOPE_PREFIX: HeraldScope = 1;
/// One key (`namespace/name`).
pub const HERALD_SCOPE_KEY: HeraldScope = 2;

/// [`HeraldWatchRequest::flags`] and [`HeraldListRequest::flags`]:
/// `resource_version` is set (else: unset, Kubernetes' `""`).
pub const HERALD_HAS_RESOURCE_VERSION: u32 = 1;
/// Watch: bookmarks are sent (`allowWatchBookmarks`).
pub const HERALD_ALLOW_BOOKMARKS: u32 = 2;
/// Watch: `sendInitialEvents=true` (needs
/// [`HERALD_MATCH_NOT_OLDER_THAN`]).
pub const HERALD_SEND_INITIAL_EVENTS: u32 = 4;
/// Watch: `sendInitialEvents=false` (needs
/// [`HERALD_MATCH_NOT_OLDER_THAN`]).
pub const HERALD_NO_INITIAL_EVENTS: u32 = 8;
/// `resourceVersionMatch=NotOlderThan`.
pub const HERALD_MATCH_NOT_OLDER_THAN: u32 = 16;
/// `resourceVersionMatch=Exact` (lists and gets).
pub const HERALD_MATCH_EXACT: u32 = 32;

/// What to watch.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldWatchRequest {
    /// [`HERALD_SCOPE_ALL`], [`HERALD_SCOPE_PREFIX`] or [`HERALD_SCOPE_KEY`].
    pub scope: HeraldScope,
    /// The prefix or the key.
    pub scope_value: HeraldStr,
    /// A Kubernetes label selector (`app in (web,api),tier!=canary`).
    pub label_selector: HeraldStr,
    /// A Kubernetes field selector (`spec.nodeName=node-7`).
    pub field_selector: HeraldStr,
    /// Where to start, with [`HERALD_HAS_RESOURCE_VERSION`].
    pub resource_version: u64,
    /// `HERALD_*` flags.
    pub flags: u32,
    /// Ends the watch with [`HERALD_END_DEADLINE`] after this long; 0:
    /// never.
    pub timeout_ms: u64,
}

/// What to list.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldListRequest {
    /// As [`HeraldWatchRequest::scope`].
    pub scope: HeraldScope,
    /// The prefix or the key.
    pub scope_value: HeraldStr,
    /// A Kubernetes label selector.
    pub label_selector: HeraldStr,
    /// A Kubernetes field selector.
    pub field_selector: HeraldStr,
    /// The version to read at, with [`HERALD_HAS_RESOURCE_VERSION`].
    pub resource_version: u64,
    /// [`HERALD_HAS_RESOURCE_VERSION`], [`HERALD_MATCH_EXACT`],
    /// [`HERALD_MATCH_NOT_OLDER_THAN`].
    pub flags: u32,
    /// At most this many items per page; 0: all.
    pub limit: usize,
    /// The previous page's continue token (empty: the first page).
    pub continue_token: HeraldStr,
}

/// An event's kind.
pub type HeraldEventKind = i32;
/// The object appeared (for this watcher: it may have moved into its
/// filter).
pub const HERALD_EVENT_ADDED: HeraldEventKind = 0;
/// The object changed.
pub const HERALD_EVENT_MODIFIED: HeraldEventKind = 1;
/// The object is gone (for this watcher: it may have moved out of its
/// filter); the object is its last state.
pub const HERALD_EVENT_DELETED: HeraldEventKind = 2;
/// The watch is at `resource_version`; no object.
pub const HERALD_EVENT_BOOKMARK: HeraldEventKind = 3;

/// [`HeraldEvent::flags`]: the bookmark that ends a watch's initial events.
pub const HERALD_EVENT_INITIAL_EVENTS_END: u32 = 1;

/// One event, borrowed: `key` and `payload` live until the next call on
/// the same watch (or its free).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldEvent {
    /// `HERALD_EVENT_*`.
    pub kind: HeraldEventKind,
    /// [`HERALD_EVENT_INITIAL_EVENTS_END`] or 0.
    pub flags: u32,
    /// The event's resource version.
    pub resource_version: u64,
    /// The object's key (empty for a bookmark).
    pub key: HeraldBytes,
    /// The object's payload (empty for a bookmark).
    pub payload: HeraldBytes,
}

/// Why a watch ended.
pub type HeraldEndReason = i32;
/// It has not ended.
pub const HERALD_END_NONE: HeraldEndReason = 0;
/// Stopped by its owner.
pub const HERALD_END_STOPPED: HeraldEndReason = 1;
/// Its timeout passed.
pub const HERALD_END_DEADLINE: HeraldEndReason = 2;
/// It fell too far behind (the slow-watcher policy): watch again from
/// its last version.
pub const HERALD_END_TOO_SLOW: HeraldEndReason = 3;
/// Its start version is older than the history (410): list again.
pub const HERALD_END_GONE: HeraldEndReason = 4;
/// The cache re-listed from its source: list again.
pub const HERALD_END_RELISTED: HeraldEndReason = 5;
/// The engine was stopped.
pub const HERALD_END_ENGINE_STOPPED: HeraldEndReason = 6;
/// Its start version was not reached in time (504): retry.
pub const HERALD_END_TOO_LARGE_RESOURCE_VERSION: HeraldEndReason = 7;
/// The engine failed.
pub const HERALD_END_ENGINE_FAILED: HeraldEndReason = 8;
/// The engine was drained (a server going away): watch again from the
/// last version seen, here or on another engine of the same source.
pub const HERALD_END_DRAINED: HeraldEndReason = 9;

/// A watch's end.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HeraldEnd {
    /// `HERALD_END_*`; [`HERALD_END_NONE`] while it runs.
    pub reason: HeraldEndReason,
    /// Gone, too large: the version the watch asked for.
    pub requested: u64,
    /// Gone: the oldest version it could have started from; too large:
    /// the cache's version.
    pub bound: u64,
}

/// One item of a list, borrowed: lives until the list is freed.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeraldItem {
    /// The object's key.
    pub key: HeraldBytes,
    /// Its payload.
    pub payload: HeraldBytes,
    /// The version of its last change.
    pub resource_version: u64,
}

/// Counters of an engine ([`herald_engine_stats`](crate::herald_engine_stats)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HeraldStats {
    /// Changes the writer applied.
    pub changes_received: u64,
    /// Events delivered to watchers.
    pub deliveries: u64,
    /// Watches started.
    pub watches_started: u64,
    /// Watches the dispatcher has registered and not yet forgotten
    /// (it registers new ones as it runs, so a watch just opened may not
    /// count yet).
    pub watchers_active: u64,
    /// Re-lists (replaces) applied.
    pub relists: u64,
}
