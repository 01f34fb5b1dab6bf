//! The Kubernetes resourceVersion tables, whole (issue 16, point 2): every
//! combination of `resourceVersion`, `resourceVersionMatch` and
//! `sendInitialEvents` for a watch, and of `resourceVersion`,
//! `resourceVersionMatch`, `limit` and `continue` for a read, valid and
//! invalid, as the API concepts page and `ValidateListOptions` have them;
//! and the consistent ("most recent") starts with a source attached.

mod common;

use std::sync::Arc;

use common::*;
use herald::object::Item;
use herald::options::OptionsError;
use herald::read::{ListRequest, ReadAt};
use herald::reflector::{Reflector, ReflectorConfig};
use herald::rv::ResourceVersionMatch;
use herald::rv::ResourceVersionMatch::{Exact, NotOlderThan};
use herald::source::MemorySource;
use herald::watch::WatchError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).build()
}

/// An engine listed at 10 (a at 3, b at 7), then c at 11.
fn engine_at_11() -> (Engine, Writer) {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    let listed = [Item::new(obj("a"), 3.into()), Item::new(obj("b"), 7.into())];
    writer.replace(Relist::items(listed, 10.into())).unwrap();
    writer.apply(Change::added(obj("c"), 11.into())).unwrap();
    (engine, writer)
}

/// A watch as the wire spells it.
fn request(
    rv: Option<u64>,
    sie: Option<bool>,
    rvm: Option<ResourceVersionMatch>,
    bookmarks: bool,
) -> WatchRequest {
    let mut req = WatchRequest::new()
        .resource_version(rv.map(ResourceVersion::new))
        .allow_bookmarks(bookmarks);
    if let Some(sie) = sie {
        req = req.send_initial_events(sie);
    }
    if let Some(rvm) = rvm {
        req = req.resource_version_match(rvm);
    }
    req
}

/// The next event of a watch, as (kind, version, key; "iee" for the
/// initial-events-end bookmark).
fn next(w: &mut Watch) -> (EventKind, u64, String) {
    let (seen, end) = recv_events(w, 1);
    assert_eq!(end, None);
    let s = &seen[0];
    let key = if s.initial_events_end {
        "iee".to_owned()
    } else {
        s.key.clone()
    };
    (s.kind, s.rv, key)
}

/// What a watch receives up to and including `ns/d` (the change made
/// after it was created).
fn received_until_d(w: &mut Watch) -> Vec<(EventKind, u64, String)> {
    let mut out = vec![next(w)];
    while out.last().is_none_or(|(_, _, k)| k != "ns/d") {
        out.push(next(w));
    }
    out
}

/// (resourceVersion, sendInitialEvents, resourceVersionMatch, bookmarks,
/// what the watch receives).
type WatchRow = (
    Option<u64>,
    Option<bool>,
    Option<ResourceVersionMatch>,
    bool,
    Vec<(EventKind, u64, &'static str)>,
);

/// (resourceVersion, resourceVersionMatch, limit set, continue set, the
/// read or the rule broken).
type ReadRow = (
    Option<ResourceVersion>,
    Option<ResourceVersionMatch>,
    bool,
    bool,
    Result<ReadAt, OptionsError>,
);

#[test]
fn every_watch_row_of_the_table() {
    use EventKind::{Added, Bookmark};
    let a = (Added, 3, "ns/a");
    let b = (Added, 7, "ns/b");
    let c = (Added, 11, "ns/c");
    let iee = (Bookmark, 11, "iee");
    let d = (Added, 12, "ns/d");
    let nto = Some(NotOlderThan);
    #[rustfmt::skip]
    let rows: Vec<WatchRow> = vec![
        // sendInitialEvents unset: the legacy watch.
        (None,     None,        None, false, vec![a, b, c, d]), // Get State and Start at Most Recent (the cache's: the reference's cacher too)
        (Some(0),  None,        None, false, vec![a, b, c, d]), // Get State and Start at Any
        (Some(10), None,        None, false, vec![c, d]),       // Start at Exact
        (None,     None,        None, true,  vec![a, b, c, d]), // bookmarks change nothing here
        // sendInitialEvents=true, NotOlderThan: a watch-list.
        (None,     Some(true),  nto,  true,  vec![a, b, c, iee, d]), // Get State and Start at Most Recent
        (Some(0),  Some(true),  nto,  true,  vec![a, b, c, iee, d]), // Get State and Start at Any
        (Some(10), Some(true),  nto,  true,  vec![a, b, c, iee, d]), // Get State and Start at Not older than
        (Some(10), Some(true),  nto,  false, vec![a, b, c, d]),      // no bookmarks: no end bookmark
        // sendInitialEvents=false, NotOlderThan: changes only.
        (None,     Some(false), nto,  true,  vec![d]),    // Start at Most Recent
        (Some(0),  Some(false), nto,  true,  vec![d]),    // Start at Any
        (Some(10), Some(false), nto,  true,  vec![c, d]), // Start at Exact
    ];
    for (rv, sie, rvm, bookmarks, want) in rows {
        let (engine, mut writer) = engine_at_11();
        let mut w = engine.watch(request(rv, sie, rvm, bookmarks)).unwrap();
        // A snapshot is taken at the watch's first receive (see the crate
        // docs' differences): take it before `d` comes.
        let mut got = Vec::new();
        if want[0] == a {
            got.push(next(&mut w));
        }
        writer.apply(Change::added(obj("d"), 12.into())).unwrap();
        got.extend(received_until_d(&mut w));
        let want: Vec<_> = want
            .iter()
            .map(|&(k, v, key)| (k, v, key.to_owned()))
            .collect();
        assert_eq!(
            got, want,
            "rv {rv:?}, sendInitialEvents {sie:?}, match {rvm:?}, bookmarks {bookmarks}"
        );
    }
}

#[test]
fn every_invalid_watch_row_is_a_typed_error_naming_its_rule() {
    use OptionsError::*;
    #[rustfmt::skip]
    let rows = [
        // sendInitialEvents without NotOlderThan.
        (None,     Some(true),  None,        InitialEventsNeedNotOlderThan),
        (Some(5),  Some(false), None,        InitialEventsNeedNotOlderThan),
        (Some(5),  Some(true),  Some(Exact), InitialEventsNeedNotOlderThan),
        (Some(0),  Some(false), Some(Exact), InitialEventsNeedNotOlderThan),
        // A match without sendInitialEvents.
        (None,     None,        Some(NotOlderThan), MatchNeedsInitialEvents),
        (Some(5),  None,        Some(NotOlderThan), MatchNeedsInitialEvents),
        (Some(5),  None,        Some(Exact),        MatchNeedsInitialEvents),
    ];
    let (engine, _writer) = engine_at_11();
    for (rv, sie, rvm, rule) in rows {
        let err = engine.watch(request(rv, sie, rvm, true)).unwrap_err();
        assert_eq!(
            err,
            WatchError::InvalidOptions(rule),
            "{rv:?} {sie:?} {rvm:?}"
        );
        assert!(
            err.to_string()
                .starts_with("resourceVersionMatch: Forbidden: ")
        );
    }
    assert_eq!(engine.stats().watches_started, 0);
}

#[test]
fn every_read_row_of_the_table() {
    use OptionsError::*;
    let r = |v: u64| Some(ResourceVersion::new(v));
    // (resourceVersion, match, limit set, continue set) -> the read, or
    // the rule broken: the API concepts page's table for list, row by row.
    #[rustfmt::skip]
    let rows: Vec<ReadRow> = vec![
        // match unset, no limit: Most Recent, Any, Not older than.
        (None, None, false, false, Ok(ReadAt::Latest)),
        (r(0), None, false, false, Ok(ReadAt::Any)),
        (r(5), None, false, false, Ok(ReadAt::NotOlderThan(5.into()))),
        // match unset, a limit: Most Recent, Any, Exact.
        (None, None, true, false, Ok(ReadAt::Latest)),
        (r(0), None, true, false, Ok(ReadAt::Any)),
        (r(5), None, true, false, Ok(ReadAt::Exact(5.into()))),
        // match unset, continued: the token's version; `0` is treated as
        // the token; another version is refused.
        (None, None, true, true, Ok(ReadAt::Latest)),
        (r(0), None, true, true, Ok(ReadAt::Latest)),
        (r(5), None, true, true, Err(ContinueWithResourceVersion)),
        // Exact: invalid without a version or at 0.
        (None, Some(Exact), false, false, Err(MatchNeedsResourceVersion)),
        (r(0), Some(Exact), false, false, Err(ExactAtZero)),
        (r(5), Some(Exact), false, false, Ok(ReadAt::Exact(5.into()))),
        (r(5), Some(Exact), true, false, Ok(ReadAt::Exact(5.into()))),
        // NotOlderThan: invalid without a version; Any at 0.
        (None, Some(NotOlderThan), false, false, Err(MatchNeedsResourceVersion)),
        (r(0), Some(NotOlderThan), false, false, Ok(ReadAt::Any)),
        (r(5), Some(NotOlderThan), false, false, Ok(ReadAt::NotOlderThan(5.into()))),
        (r(5), Some(NotOlderThan), true, false, Ok(ReadAt::NotOlderThan(5.into()))),
        // A match with a continue token.
        (r(5), Some(NotOlderThan), true, true, Err(MatchWithContinue)),
        (r(5), Some(Exact), true, true, Err(MatchWithContinue)),
    ];
    for (rv, rvm, limited, continued, want) in rows {
        assert_eq!(
            ReadAt::for_list(rv, rvm, limited, continued),
            want,
            "rv {rv:?}, match {rvm:?}, limit {limited}, continue {continued}"
        );
    }
    // A get has no paging: the same rules without it.
    assert_eq!(
        ReadAt::for_get(r(5), None),
        Ok(ReadAt::NotOlderThan(5.into()))
    );
    assert_eq!(
        ReadAt::for_get(None, Some(NotOlderThan)),
        Err(MatchNeedsResourceVersion)
    );
    // What each read serves, on an engine without a source: Latest is the
    // present; a continued list at Latest reads at the token's version.
    let (engine, mut writer) = engine_at_11();
    let latest = engine.list(&ListRequest::new().at(ReadAt::Latest)).unwrap();
    assert_eq!((latest.resource_version.get(), latest.items.len()), (11, 3));
    let page = engine.list(&ListRequest::new().limit(2)).unwrap();
    writer.apply(Change::added(obj("d"), 12.into())).unwrap();
    let token = page.continue_token.unwrap();
    let rest = engine
        .list(&ListRequest::new().at(ReadAt::Latest).continue_from(token))
        .unwrap();
    assert_eq!((rest.resource_version.get(), rest.items.len()), (11, 1));
}

/// With a source attached, "most recent" is the source's current revision:
/// a watch-list without a version waits until the cache holds it (asking
/// the source for progress meanwhile), then sends the state and the
/// initial-events-end bookmark at that version; `sendInitialEvents=false`
/// starts after it; a read at `Latest` is consistent. The legacy watch
/// from an unset version stays "the cache now", as the reference's.
#[test]
fn the_most_recent_version_is_the_sources_with_a_reflector() {
    let source = MemorySource::new();
    let a = source.put(obj("a"));
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let reflector = Reflector::spawn(
        Arc::new(source.clone()),
        engine.clone(),
        writer,
        ReflectorConfig::default(),
    )
    .unwrap();
    eventually("the list", || engine.resource_version() == a);
    // Writes to other resources: only progress tells the cache.
    let now = source.advance_revision(4);
    let consistent = engine
        .watch(request(None, Some(true), Some(NotOlderThan), true))
        .unwrap();
    let after_now = engine
        .watch(request(None, Some(false), Some(NotOlderThan), true))
        .unwrap();
    let mut consistent = consistent;
    let (seen, _) = recv_events(&mut consistent, 2);
    assert_eq!((seen[0].key.as_str(), seen[0].rv), ("ns/a", a.get()));
    assert!(seen[1].initial_events_end);
    assert_eq!(
        seen[1].rv,
        now.get(),
        "the bookmark carries the source's revision"
    );
    let mut after_now = after_now;
    let b = source.put(obj("b"));
    let (seen, _) = recv_events(&mut after_now, 1);
    assert_eq!((seen[0].key.as_str(), seen[0].rv), ("ns/b", b.get()));
    // A consistent read.
    let later = source.advance_revision(2);
    let list = engine.list(&ListRequest::new().at(ReadAt::Latest)).unwrap();
    assert_eq!(list.resource_version, later);
    assert!(reflector.stats().progress_requests >= 2);
    // Without the reflector, "most recent" is the cache's again.
    drop(reflector);
    let mut w = engine
        .watch(request(None, Some(true), Some(NotOlderThan), true))
        .unwrap();
    let (seen, _) = recv_events(&mut w, 3);
    assert!(seen[2].initial_events_end);
    assert_eq!(seen[2].rv, engine.resource_version().get());
}
