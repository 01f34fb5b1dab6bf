//! Each listed object keeps its own resource version (issue 16, point 1):
//! a re-list of `Relist::items` stamps every object with the version of
//! its last change, and initial events, gets and lists report it, as the
//! apiserver reports `metadata.resourceVersion`; the reflector re-lists
//! with the source's per-object revisions.

mod common;

use common::*;
use herald::object::Item;
use herald::read::{ListRequest, ReadAt};
use herald::reflector::{Reflector, ReflectorConfig};
use herald::rv::ResourceVersionMatch;
use herald::source::MemorySource;
use herald::writer::WriteError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str) -> Object {
    Object::builder("ns", name).label("app", "web").build()
}

fn listed() -> [Item; 3] {
    [
        Item::new(obj("a"), 3.into()),
        Item::new(obj("b"), 9.into()),
        Item::new(obj("c"), 12.into()),
    ]
}

/// (name, version) of the objects, in key order.
fn versions(items: &[Item]) -> Vec<(String, u64)> {
    items
        .iter()
        .map(|i| (i.object.name().to_owned(), i.resource_version.get()))
        .collect()
}

#[test]
fn gets_and_lists_report_each_objects_version() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::items(listed(), 12.into())).unwrap();
    writer.apply(Change::modified(obj("a"), 13.into())).unwrap();
    let want = vec![("a".into(), 13), ("b".into(), 9), ("c".into(), 12)];
    let now = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(
        (now.resource_version.get(), versions(&now.items)),
        (13, want)
    );
    // At the list's version, exactly: as listed.
    let then = engine
        .list(&ListRequest::new().at(ReadAt::Exact(12.into())))
        .unwrap();
    let listed = vec![("a".into(), 3), ("b".into(), 9), ("c".into(), 12)];
    assert_eq!(versions(&then.items), listed);
    // Paged: the second page keeps the versions too.
    let first = engine.list(&ListRequest::new().limit(2)).unwrap();
    let token = first.continue_token.unwrap();
    let rest = engine
        .list(&ListRequest::new().limit(2).continue_from(token))
        .unwrap();
    assert_eq!(versions(&rest.items), [("c".into(), 12)]);
    let b = engine.get("ns/b", ReadAt::Any).unwrap();
    assert_eq!(b.item.unwrap().resource_version.get(), 9);
    let a = engine.get("ns/a", ReadAt::Exact(12.into())).unwrap();
    assert_eq!(a.item.unwrap().resource_version.get(), 3);
}

#[test]
fn initial_events_carry_each_objects_version() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::items(listed(), 12.into())).unwrap();
    for req in [
        WatchRequest::new(),
        WatchRequest::new().resource_version(Some(0.into())),
        WatchRequest::new()
            .send_initial_events(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .allow_bookmarks(true),
    ] {
        let mut w = engine.watch(req.clone()).unwrap();
        let (seen, _) = recv_events(&mut w, 3);
        let got: Vec<_> = seen.iter().map(|s| (s.key.clone(), s.rv)).collect();
        assert_eq!(
            got,
            [("ns/a".into(), 3), ("ns/b".into(), 9), ("ns/c".into(), 12)],
            "{req:?}"
        );
    }
}

#[test]
fn an_object_newer_than_its_list_is_refused_and_nothing_changes() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer.replace(Relist::items(listed(), 12.into())).unwrap();
    let ahead = [
        Item::new(obj("x"), 20.into()),
        Item::new(obj("y"), 1.into()),
    ];
    assert_eq!(
        writer.replace(Relist::items(ahead, 15.into())),
        Err(WriteError::ItemAhead {
            key: "ns/x".into(),
            item: 20.into(),
            list: 15.into(),
        })
    );
    assert_eq!(engine.generation(), 1);
    assert_eq!(engine.list(&ListRequest::new()).unwrap().items.len(), 3);
    // `replace` keeps stamping every object with the list's version.
    writer.replace(Relist::new([obj("z")], 15.into())).unwrap();
    let z = engine.get("ns/z", ReadAt::Any).unwrap().item.unwrap();
    assert_eq!(z.resource_version.get(), 15);
}

/// A reflector keeping `engine` in step with `source` through `writer`.
fn reflect(source: &MemorySource, engine: &Engine, writer: Writer) -> Reflector {
    let source = std::sync::Arc::new(source.clone());
    Reflector::spawn(source, engine.clone(), writer, ReflectorConfig::default()).unwrap()
}

#[test]
fn the_reflector_lists_the_sources_revisions() {
    let source = MemorySource::new();
    let a = source.put(obj("a"));
    let b = source.put(obj("b"));
    source.put(obj("c"));
    source.delete("ns/c");
    let now = source.advance_revision(5);
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let reflector = reflect(&source, &engine, writer);
    eventually("the list", || engine.resource_version() == now);
    let list = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(
        versions(&list.items),
        [("a".into(), a.get()), ("b".into(), b.get())]
    );
    // A re-list into the same engine (a new reflector) keeps them too.
    let writer = reflector.stop().unwrap();
    let a2 = source.put(obj("a"));
    let reflector = reflect(&source, &engine, writer);
    eventually("the re-list", || engine.generation() == 2);
    let list = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(list.resource_version, a2);
    assert_eq!(
        versions(&list.items),
        [("a".into(), a2.get()), ("b".into(), b.get())]
    );
    assert_eq!(reflector.stats().lists, 1);
}
