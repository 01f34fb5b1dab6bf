//! The request ([`WatchRequest`]): what a caller asks for, and how
//! [`Engine::watch`](crate::Engine::watch) resolves it (a start, a route in
//! the trigger index, a filter) into what is immutable for the watcher's
//! life ([`WatcherSpec`], `watcher/spec.rs`).

use std::time::{Duration, Instant};

use super::error::WatchError;
use crate::filter::Filter;
use crate::options::OptionsError;
use crate::rv::{ResourceVersion, ResourceVersionMatch};
use crate::selector::KeyScope;
use crate::selector::{FieldSelector, LabelSelector, ShardSelector};
use crate::watcher::{Route, Start, WatcherSpec};

/// What to watch and from where. Built with chained setters.
///
/// ```
/// use herald::WatchRequest;
/// use herald::selector::KeyScope;
/// let req = WatchRequest::new()
///     .scope(KeyScope::prefix("team-a"))
///     .labels("app in (web,api),tier!=canary".parse()?)
///     .fields("spec.nodeName=node-7".parse()?)
///     .resource_version(Some(42.into()));
/// # Ok::<(), herald::selector::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WatchRequest {
    pub(crate) scope: KeyScope,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
    pub(crate) shard: ShardSelector,
    pub(crate) resource_version: Option<ResourceVersion>,
    pub(crate) send_initial_events: Option<bool>,
    pub(crate) resource_version_match: Option<ResourceVersionMatch>,
    pub(crate) allow_bookmarks: bool,
    pub(crate) timeout: Option<Duration>,
}

impl WatchRequest {
    /// Every object, from the current state (resource version unset).
    pub fn new() -> Self {
        Self::default()
    }

    crate::filter::selection_setters!(
        "An exact requirement on a field with a trigger index \
         ([`Config::index`](crate::Config::index)) routes the watcher \
         through that index."
    );

    /// Where to start:
    /// - `None` (the wire form `""`) or `Some(0)`: the current state first,
    ///   each object as Added in key order, then every later change;
    /// - `Some(R)`: every change after `R`, replayed from history (a watch
    ///   from an `R` older than the history ends with `Gone`); if the cache
    ///   has not reached `R` yet, the watch waits for it, and ends with
    ///   `TooLargeResourceVersion` when the wait times out.
    ///
    /// Parse the wire form with [`ResourceVersion::parse_param`].
    ///
    /// ```
    /// use herald::{ResourceVersion, WatchRequest};
    /// // `?resourceVersion=` from a request's query string:
    /// let rv = ResourceVersion::parse_param("1234")?;
    /// let req = WatchRequest::new().resource_version(rv);
    /// # Ok::<(), herald::rv::InvalidResourceVersion>(())
    /// ```
    pub fn resource_version(mut self, rv: Option<ResourceVersion>) -> Self {
        self.resource_version = rv;
        self
    }

    /// Kubernetes' `sendInitialEvents` (a watch-list, KEP-3157): unset by
    /// default. With `true`, the watch sends the state at its start as
    /// Added events, then (if bookmarks are allowed) a Bookmark marked
    /// [`initial-events-end`](crate::Event::is_initial_events_end), then
    /// changes; with `false`, only changes. Either value requires
    /// [`resource_version_match`](WatchRequest::resource_version_match)
    /// `NotOlderThan`, as Kubernetes' validation does. Where it starts:
    ///
    /// | `send_initial_events` | version unset | `0` | `R` |
    /// | --- | --- | --- | --- |
    /// | unset | the state now, then changes | the same | changes after `R` |
    /// | `true` | the state at the most recent version, then changes | the state now, then changes | the state at `R` or later, then changes |
    /// | `false` | changes after the most recent version | changes after the cache's version | changes after `R` |
    ///
    /// "The most recent version" is the source's current revision when a
    /// [`Reflector`](crate::reflector::Reflector) drives the engine (a consistent
    /// start: the watch waits until the cache holds it, asking the source
    /// for progress meanwhile); without one, the cache's own version.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::rv::ResourceVersionMatch;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 7.into()))?;
    /// let mut w = engine.watch(
    ///     WatchRequest::new()
    ///         .send_initial_events(true)
    ///         .resource_version_match(ResourceVersionMatch::NotOlderThan)
    ///         .allow_bookmarks(true),
    /// )?;
    /// let Some(WatchItem::Event(added)) = w.recv() else { panic!() };
    /// let Some(WatchItem::Event(end)) = w.recv() else { panic!() };
    /// assert_eq!(added.kind(), EventKind::Added);
    /// assert!(end.is_initial_events_end() && end.resource_version().get() == 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_initial_events(mut self, yes: bool) -> Self {
        self.send_initial_events = Some(yes);
        self
    }

    /// Kubernetes' `resourceVersionMatch` for a watch: only
    /// `NotOlderThan`, and only with
    /// [`send_initial_events`](WatchRequest::send_initial_events); anything
    /// else is refused with [`WatchError::InvalidOptions`](crate::watch::WatchError::InvalidOptions).
    pub fn resource_version_match(mut self, rvm: ResourceVersionMatch) -> Self {
        self.resource_version_match = Some(rvm);
        self
    }

    /// Whether the watcher accepts Bookmark events: one every
    /// [`bookmark_frequency`](crate::Config::bookmark_frequency) (1 min by
    /// default) and one 2 s before the deadline, each carrying the version
    /// the engine has processed, so that a client re-watching from it
    /// skips the replay. Never blocking and never ending a watch.
    pub fn allow_bookmarks(mut self, yes: bool) -> Self {
        self.allow_bookmarks = yes;
        self
    }

    /// Ends the watch with [`EndReason::Deadline`](crate::EndReason::Deadline) once `timeout` has
    /// passed on the engine's clock, counted from [`Engine::watch`](crate::Engine::watch)
    /// (the Kubernetes `timeoutSeconds`). With bookmarks allowed, the last
    /// one comes 2 s before.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A request resolved against the engine's configuration, before the
/// engine gives it an id and a generation.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) filter: Filter,
    pub(crate) route: Route,
    pub(crate) start: Start,
    timeout: Option<Duration>,
    pub(crate) allow_bookmarks: bool,
}

impl WatchRequest {
    /// Validates the request and resolves its start and route: the first
    /// field with a trigger index (`index_fields`) that the selector
    /// requires an exact value of routes it; else an exact requirement on
    /// any field; else everything, which under a policy with followers
    /// (`followers`) and with nothing to filter is a follower.
    pub(crate) fn resolve(
        self,
        index_fields: &[Box<str>],
        followers: bool,
        most_recent: impl FnOnce() -> Result<Option<ResourceVersion>, WatchError>,
    ) -> Result<Resolved, WatchError> {
        let start = self.start(most_recent)?;
        let route = index_fields
            .iter()
            .enumerate()
            .find_map(|(i, f)| {
                let i = u16::try_from(i).ok()?;
                self.fields.requires_exact(f).map(|_| Route::Indexed(i))
            })
            .or_else(|| self.fields.first_exact().map(|_| Route::Selected))
            .or_else(|| self.shard.single().map(|_| Route::Sharded))
            .unwrap_or(Route::All);
        let filter = Filter::new(self.scope, self.labels, self.fields, self.shard);
        let route = if route == Route::All && filter.is_everything() && followers {
            Route::Follow
        } else {
            route
        };
        Ok(Resolved {
            filter,
            route,
            start,
            timeout: self.timeout,
            allow_bookmarks: self.allow_bookmarks,
        })
    }
}

impl WatchRequest {
    /// Checks the options by Kubernetes' rules (`validateWatchOptions`)
    /// and resolves where the watch starts (see
    /// [`send_initial_events`](WatchRequest::send_initial_events)).
    /// `most_recent` gives the source's current revision, if the engine
    /// has a source.
    fn start(
        &self,
        most_recent: impl FnOnce() -> Result<Option<ResourceVersion>, WatchError>,
    ) -> Result<Start, WatchError> {
        use ResourceVersionMatch::{Exact, NotOlderThan};
        // The first rule broken, in the order Kubernetes checks them (a
        // watch's `Exact` always breaks one of these first).
        let sie = self.send_initial_events;
        match (sie, self.resource_version_match) {
            (Some(_), None | Some(Exact)) => {
                return Err(OptionsError::InitialEventsNeedNotOlderThan.into());
            }
            (None, Some(_)) => return Err(OptionsError::MatchNeedsInitialEvents.into()),
            (None, None) | (Some(_), Some(NotOlderThan)) => {}
        }
        let zero = ResourceVersion::ZERO;
        // The end bookmark goes only to a watch that takes bookmarks
        // (seeds/004 `setInitialEventsEndBookmarkIfRequested`).
        let end = sie == Some(true) && self.allow_bookmarks;
        let snapshot = |min_rv| Start::Snapshot {
            min_rv,
            initial_events_end: end,
        };
        Ok(match (sie, self.resource_version) {
            (None | Some(false), Some(rv)) if rv != zero => Start::After(rv),
            // The legacy watch from an unset version or `0`: the state now
            // (the reference's cacher serves an unset version as "0").
            (None, _) => snapshot(zero),
            (Some(true), Some(rv)) => snapshot(rv),
            // `0`: any version; the cache's, when the watch begins.
            (Some(false), Some(_)) => Start::Now,
            (Some(true), None) => snapshot(most_recent()?.unwrap_or(zero)),
            (Some(false), None) => most_recent()?.map_or(Start::Now, Start::After),
        })
    }
}

impl Resolved {
    /// The watcher's spec, with its id and its creation time (its start,
    /// whether it takes bookmarks and the generation it was begun against
    /// go to `WatcherShared::new` apart: see [`WatcherSpec`]).
    pub(crate) fn into_spec(self, id: u64, created: Instant) -> WatcherSpec {
        WatcherSpec::new(id, self.filter, self.route, created, self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::{ShardKey, ShardRange};

    /// A shard selector of one range, and nothing else to route by, is
    /// routed by its range (`index.rs`, Shard routes).
    #[test]
    fn one_shard_range_routes_by_shard() {
        let range = ShardRange::nth(ShardKey::Uid, 3, 10).unwrap();
        let resolved = WatchRequest::new()
            .shard(ShardSelector::new([range]).unwrap())
            .resolve(&[], true, || Ok(None))
            .unwrap();
        assert_eq!(resolved.route, Route::Sharded);
        let two = ShardSelector::new([range, ShardRange::nth(ShardKey::Uid, 5, 10).unwrap()]);
        let resolved = WatchRequest::new()
            .shard(two.unwrap())
            .resolve(&[], true, || Ok(None))
            .unwrap();
        assert_eq!(resolved.route, Route::All);
    }
}
