//! A deletion of a key the cache never held (issue 14): no watcher is told
//! of it, as in the reference (seeds/000 `convertToWatchEvent`: a deletion
//! without a previous object passes no filter); the version moves as with
//! progress, and no history is kept of it.

mod common;

use common::*;
use herald::read::{ListRequest, ReadAt};
use herald::selector::KeyScope;
use herald::*;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).label("app", "web").build()
}

#[test]
fn a_deletion_of_an_unknown_key_reaches_no_watcher_and_moves_the_version() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::new([obj("a")], 10.into())).unwrap();
    let from_list = || WatchRequest::new().resource_version(Some(10.into()));
    let requests = [
        // Everything (a follower under the default policy), a selector,
        // the key itself; each from the list's version (a watch of the
        // present would take its snapshot whenever it begins).
        from_list(),
        from_list().labels("app=web".parse().unwrap()),
        from_list().scope(KeyScope::exact("ns/ghost")),
    ];
    let mut watches: Vec<Watch> = requests
        .into_iter()
        .map(|r| engine.watch(r).unwrap())
        .collect();
    writer
        .apply(Change::deleted(obj("ghost"), 11.into()))
        .unwrap();
    assert_eq!(engine.resource_version().get(), 11);
    // Deleted twice: the second is of a key no longer held.
    writer.apply(Change::added(obj("b"), 12.into())).unwrap();
    writer.apply(Change::deleted(obj("b"), 13.into())).unwrap();
    writer.apply(Change::deleted(obj("b"), 14.into())).unwrap();
    writer
        .apply(Change::added(obj("ghost"), 15.into()))
        .unwrap();
    let everything = vec![
        (EventKind::Added, "ns/b", 12),
        (EventKind::Deleted, "ns/b", 13),
        (EventKind::Added, "ns/ghost", 15),
    ];
    let expected = [
        everything.clone(),
        everything,
        vec![(EventKind::Added, "ns/ghost", 15)],
    ];
    for (i, (w, want)) in watches.iter_mut().zip(expected).enumerate() {
        let (seen, end) = recv_events(w, want.len());
        let got: Vec<_> = seen
            .iter()
            .map(|s| (s.kind, s.key.as_str(), s.rv))
            .collect();
        assert_eq!((got, end), (want, None), "watch {i}");
        assert_quiet(w);
    }
    // The version is readable exactly; the state there is the list's.
    let at = engine
        .list(&ListRequest::new().at(ReadAt::Exact(11.into())))
        .unwrap();
    let keys: Vec<_> = at.items.iter().map(|i| i.object.key()).collect();
    assert_eq!((keys, at.resource_version.get()), (vec!["ns/a"], 11));
    let stats = engine.stats();
    assert_eq!((stats.changes_received, stats.progress_updates), (3, 2));
    // A watch from the version of the unknown deletion starts after it.
    let mut from_11 = engine
        .watch(WatchRequest::new().resource_version(Some(11.into())))
        .unwrap();
    let (seen, _) = recv_events(&mut from_11, 3);
    assert_eq!(seen.first().map(|s| s.rv), Some(12));
}
