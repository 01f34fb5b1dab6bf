//! What a watcher is, once [`Engine::watch`](crate::Engine::watch) has
//! resolved its request: how it begins ([`Start`], packed with its
//! bookmark flag into [`Packed`]), where the trigger index holds it
//! ([`Route`]), and the rest, immutable for the watcher's life
//! ([`WatcherSpec`]: its id, filter, creation time and timeout).

use std::time::{Duration, Instant};

use crate::filter::Filter;
use crate::rv::ResourceVersion;

/// Where a watcher is registered in the trigger index. The value it is
/// registered under is not copied here: it is the filter's own, and
/// `index.rs` reads it from there (`Filter::route_value`), so an indexed
/// watcher holds its value once, not twice (the route is 4 bytes, not 24
/// plus an allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    All,
    /// The index number: the selector requires an exact value of that
    /// index's field. A `u16`, so the route is 4 bytes and packs with the
    /// timeout's nanoseconds in [`WatcherSpec`]; a selector on a field of
    /// an index past the 65,536th (a configuration no cache has) is
    /// routed as [`Route::Selected`], by the same field: the same
    /// candidates, its queue sized as an unindexed watcher's.
    Indexed(u16),
    /// Admits everything, under the park policy: follows the history ring
    /// itself, never fed by the dispatcher (see `shared.rs`, Following).
    Follow,
    /// The selector requires an exact value of a field no index was
    /// configured for (its first such term); routed by it all the same
    /// (see `index.rs`, Selector routes). Sized as an unindexed watcher.
    Selected,
    /// The shard selector's one range: found by a range lookup on the
    /// change's hash (see `index.rs`, Shard routes).
    Sharded,
}

/// How a watch begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// The current state first (once the cache is at `min_rv` or later),
    /// then changes; optionally an initial-events-end bookmark between.
    Snapshot {
        min_rv: ResourceVersion,
        initial_events_end: bool,
    },
    /// Every change after `rv`, once the cache has reached it.
    After(ResourceVersion),
    /// Every change after the version the cache has when the watch
    /// begins (no initial events).
    Now,
}

/// [`Start`] packed into a byte (its kind and the initial-events-end
/// flag) and a version, with a watcher's bookmark flag in the byte too:
/// 16 bytes and a flag become 8 and a byte that packs with the other
/// flags of `WatcherShared`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed {
    pub(crate) shape: u8,
    pub(crate) rv: ResourceVersion,
}

const SNAPSHOT: u8 = 0;
const AFTER: u8 = 1;
const NOW: u8 = 2;
const KIND: u8 = 0b11;
const INITIAL_EVENTS_END: u8 = 1 << 2;
const BOOKMARKS: u8 = 1 << 3;

impl Packed {
    pub(crate) fn new(start: Start, allow_bookmarks: bool) -> Packed {
        let bookmarks = if allow_bookmarks { BOOKMARKS } else { 0 };
        let (kind, rv) = match start {
            Start::Snapshot {
                min_rv,
                initial_events_end,
            } => {
                let end = if initial_events_end {
                    INITIAL_EVENTS_END
                } else {
                    0
                };
                (SNAPSHOT | end, min_rv)
            }
            Start::After(rv) => (AFTER, rv),
            Start::Now => (NOW, ResourceVersion::ZERO),
        };
        Packed {
            shape: kind | bookmarks,
            rv,
        }
    }

    pub(crate) fn start(self) -> Start {
        match self.shape & KIND {
            SNAPSHOT => Start::Snapshot {
                min_rv: self.rv,
                initial_events_end: self.shape & INITIAL_EVENTS_END != 0,
            },
            AFTER => Start::After(self.rv),
            _ => Start::Now,
        }
    }

    pub(crate) fn allow_bookmarks(self) -> bool {
        self.shape & BOOKMARKS != 0
    }
}

impl Start {
    /// The lowest version a bookmark may carry: a watch-list's version
    /// (the reference's `nonblockingAdd` rule, `bookmarkAfterResourceVersion`:
    /// a bookmark below it is dropped, never enqueued); any otherwise.
    pub(crate) fn bookmarks_from(self) -> ResourceVersion {
        match self {
            Start::Snapshot { min_rv, .. } => min_rv,
            Start::After(_) | Start::Now => ResourceVersion::ZERO,
        }
    }

    /// The version the cache must have reached before the watch starts.
    pub(crate) fn wait_for(self) -> ResourceVersion {
        match self {
            Start::Snapshot { min_rv, .. } => min_rv,
            Start::After(rv) => rv,
            Start::Now => ResourceVersion::ZERO,
        }
    }
}

/// What a watcher is, as [`Engine::watch`](crate::Engine::watch) resolved
/// it: immutable for the watcher's life. Its start and whether it takes
/// bookmarks are the shared state's, packed into a word and a byte there
/// (`WatcherShared::start`, `WatcherShared::allow_bookmarks`).
#[derive(Debug)]
pub(crate) struct WatcherSpec {
    pub(crate) id: u64,
    pub(crate) filter: Filter,
    pub(crate) route: Route,
    /// When the watch was begun, on the engine's clock.
    pub(crate) created: Instant,
    /// The timeout (`WatchRequest::timeout`), split so that it packs:
    /// whole seconds, and nanoseconds ([`NO_TIMEOUT`]: none), which share
    /// a word with the route. An `Option<Instant>` deadline took 16
    /// bytes; [`WatcherSpec::deadline`] computes it, as it was computed.
    timeout_secs: u64,
    timeout_nanos: u32,
}

/// `timeout_nanos` of a watch without a timeout (a `Duration`'s
/// nanoseconds are below 10^9).
const NO_TIMEOUT: u32 = u32::MAX;

impl WatcherSpec {
    pub(crate) fn new(
        id: u64,
        filter: Filter,
        route: Route,
        created: Instant,
        timeout: Option<Duration>,
    ) -> WatcherSpec {
        let (timeout_secs, timeout_nanos) =
            timeout.map_or((0, NO_TIMEOUT), |t| (t.as_secs(), t.subsec_nanos()));
        WatcherSpec {
            id,
            filter,
            route,
            created,
            timeout_secs,
            timeout_nanos,
        }
    }

    /// When the watch ends with `Deadline`, on the engine's clock: its
    /// creation plus its timeout, if it has one and that is within the
    /// clock's range (past it: no deadline). Read at registration and when
    /// a bookmark is scheduled.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if self.timeout_nanos == NO_TIMEOUT {
            return None;
        }
        let timeout = Duration::new(self.timeout_secs, self.timeout_nanos);
        self.created.checked_add(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_packs_and_unpacks() {
        let rv = ResourceVersion::new(42);
        for start in [
            Start::Snapshot {
                min_rv: rv,
                initial_events_end: true,
            },
            Start::Snapshot {
                min_rv: rv,
                initial_events_end: false,
            },
            Start::After(rv),
            Start::Now,
        ] {
            for bookmarks in [false, true] {
                let p = Packed::new(start, bookmarks);
                assert_eq!((p.start(), p.allow_bookmarks()), (start, bookmarks));
            }
        }
    }

    #[test]
    fn the_split_timeout_gives_the_deadline() {
        let now = Instant::now();
        let spec = |t| WatcherSpec::new(1, Filter::default(), Route::All, now, t);
        assert_eq!(spec(None).deadline(), None);
        for t in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new(3, 999_999_999),
            Duration::from_secs(3600),
            Duration::MAX,
        ] {
            assert_eq!(spec(Some(t)).deadline(), now.checked_add(t), "{t:?}");
        }
    }
}
