//! States, history records, start versions and watch specifications.

use std::collections::BTreeMap;
use std::time::Duration;

use herald::event::ChangeKind;
use herald::options::OptionsError;
use herald::rv::ResourceVersionMatch;
use herald::watch::WatchError;
use herald::writer::WriteError;
use herald::{Object, ResourceVersion, WatchRequest};

use super::filter::Filter;

/// A state: key -> (object, the version of its last change).
pub type State = BTreeMap<String, (Object, u64)>;

/// A plain list's items: every object at the list's version.
pub fn at_list(objects: Vec<Object>, rv: u64) -> Vec<(Object, u64)> {
    objects.into_iter().map(|o| (o, rv)).collect()
}

/// The state a list at `rv` holds (objects with the same key: the last
/// wins), or the error that refuses the whole list: the first item, in
/// the list's order, whose own version is above the list's
/// (`WriteError::ItemAhead`; checked before the lifecycle, so even a
/// stopped engine says so).
pub(crate) fn listed_state(items: Vec<(Object, u64)>, rv: u64) -> Result<State, WriteError> {
    let mut state = State::new();
    for (o, at) in items {
        if at > rv {
            return Err(WriteError::ItemAhead {
                key: o.key().to_owned(),
                item: at.into(),
                list: rv.into(),
            });
        }
        state.insert(o.key().to_owned(), (o, at));
    }
    Ok(state)
}

/// What a history position holds (docs/semantics.md §2.1).
#[derive(Debug, Clone)]
pub enum RecordKind {
    /// A change to one object.
    Change(ChangeKind),
    /// A re-list marker (takes a position; empties the window).
    Relist,
}

/// One history position.
#[derive(Debug, Clone)]
pub struct Record {
    /// What it is.
    pub kind: RecordKind,
    /// Its resource version.
    pub rv: u64,
    /// The object (for a deletion, the given object).
    pub object: Option<Object>,
    /// The previous state (docs/semantics.md §1.1).
    pub prev: Option<Object>,
    /// The generation it belongs to.
    pub generation: u64,
}

/// How a watch starts (docs/semantics.md §3.2, §11.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The state first (once the cache has reached `min_rv`), then changes;
    /// with the initial-events-end bookmark in between if asked.
    Snapshot {
        /// The version to wait for (0: none).
        min_rv: u64,
        /// Whether to send the initial-events-end bookmark.
        initial_events_end: bool,
    },
    /// Every change after this version.
    After(u64),
    /// Every change after the version the cache has when the watch
    /// begins: `send_initial_events=false` from an unset version or `0`,
    /// created while the engine is Pending (created while Ready, it is
    /// `After` the version then).
    Now,
}

impl Start {
    /// The version the cache must have reached before the watch starts.
    pub(crate) fn wait_for(self) -> u64 {
        match self {
            Start::Snapshot { min_rv, .. } => min_rv,
            Start::After(rv) => rv,
            Start::Now => 0,
        }
    }
}

/// A watch request in the model's terms.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    /// The filter.
    pub filter: Filter,
    /// `None`: unset; `Some(0)`: any; `Some(R)`.
    pub resource_version: Option<u64>,
    /// `send_initial_events` (`None`: unset).
    pub send_initial_events: Option<bool>,
    /// `resource_version_match` (`None`: unset).
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `allow_bookmarks`.
    pub allow_bookmarks: bool,
    /// The deadline, from creation.
    pub timeout: Option<Duration>,
}

impl WatchSpec {
    /// Every object, from the current state.
    pub fn new(filter: Filter) -> WatchSpec {
        WatchSpec {
            filter,
            resource_version: None,
            send_initial_events: None,
            resource_version_match: None,
            allow_bookmarks: false,
            timeout: None,
        }
    }

    /// A watch-list: `send_initial_events=true` with
    /// `resource_version_match=NotOlderThan` (and, usually, bookmarks).
    pub fn watch_list(filter: Filter, allow_bookmarks: bool) -> WatchSpec {
        WatchSpec {
            send_initial_events: Some(true),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            allow_bookmarks,
            ..WatchSpec::new(filter)
        }
    }

    /// Kubernetes' option rules (`validateWatchOptions`: the first rule
    /// broken, in its order), then where the watch starts:
    ///
    /// | `send_initial_events` | version unset | `0` | `R` |
    /// | --- | --- | --- | --- |
    /// | unset | the state now | the same | changes after `R` |
    /// | `true` | the state at the most recent version (with no source: now) | the state now | the state at `R` or later |
    /// | `false` | changes after the most recent version (with no source: the cache's) | changes after the cache's version | changes after `R` |
    ///
    /// The initial-events-end bookmark only with `send_initial_events=true`
    /// and bookmarks (KEP-3157). "The cache's version" is `Start::Now`: the
    /// engine resolves it when the watch is created if it is Ready, else
    /// when the watch begins.
    pub fn start(&self) -> Result<Start, WatchError> {
        use ResourceVersionMatch::NotOlderThan;
        let sie = self.send_initial_events;
        match (sie, self.resource_version_match) {
            (Some(_), Some(NotOlderThan)) | (None, None) => {}
            (Some(_), _) => {
                return Err(WatchError::InvalidOptions(
                    OptionsError::InitialEventsNeedNotOlderThan,
                ));
            }
            (None, Some(_)) => {
                return Err(WatchError::InvalidOptions(
                    OptionsError::MatchNeedsInitialEvents,
                ));
            }
        }
        let snapshot = |min_rv| Start::Snapshot {
            min_rv,
            initial_events_end: sie == Some(true) && self.allow_bookmarks,
        };
        Ok(match (sie, self.resource_version) {
            (None | Some(false), Some(r)) if r != 0 => Start::After(r),
            (None, _) => snapshot(0),
            (Some(true), r) => snapshot(r.unwrap_or(0)),
            (Some(false), _) => Start::Now,
        })
    }

    /// The engine request.
    pub fn request(&self) -> WatchRequest {
        let mut req = self
            .filter
            .request()
            .resource_version(self.resource_version.map(ResourceVersion::new))
            .allow_bookmarks(self.allow_bookmarks);
        if let Some(sie) = self.send_initial_events {
            req = req.send_initial_events(sie);
        }
        if let Some(rvm) = self.resource_version_match {
            req = req.resource_version_match(rvm);
        }
        if let Some(t) = self.timeout {
            req = req.timeout(t);
        }
        req
    }
}
