//! Reads under loom: a list of the present and a list at an exact version,
//! racing the writer (the model's second thread) and the engine's
//! dispatcher. Every answer must be exactly the state at the version it
//! names: never a change from past it, never one missing before it.
#![cfg(herald_loom)]

use herald::read::{ListRequest, ReadAt};
use herald::{Change, Config, Engine, Object, Relist};
use herald_loom_tests::{FrozenClock, model};
use loom::thread;

fn obj(name: &str, v: &str) -> Object {
    Object::builder("ns", name).label("v", v).build()
}

/// (key, label v, rv of the last change) of a list.
fn state(items: &[herald::object::Item]) -> Vec<(String, String, u64)> {
    items
        .iter()
        .map(|i| {
            (
                i.object.key().to_owned(),
                i.object.label("v").unwrap_or("").to_owned(),
                i.resource_version.get(),
            )
        })
        .collect()
}

/// The model: the state at each version.
fn expected(rv: u64) -> Vec<(String, String, u64)> {
    let s = |k: &str, v: &str, r: u64| (format!("ns/{k}"), v.to_owned(), r);
    match rv {
        1 => vec![s("a", "0", 1)],
        2 => vec![s("a", "1", 2)],
        _ => vec![s("a", "1", 2), s("b", "0", 3)],
    }
}

#[test]
fn lists_racing_the_writer_are_exact_at_their_version() {
    model(|| {
        let (engine, mut writer) = Engine::new(
            Config::default()
                .clock(FrozenClock::new())
                .history_bounds(4, 4),
        )
        .unwrap();
        writer
            .replace(Relist::new([obj("a", "0")], 1.into()))
            .unwrap();
        let w = thread::spawn(move || {
            writer
                .apply(Change::modified(obj("a", "1"), 2.into()))
                .unwrap();
            writer
                .apply(Change::added(obj("b", "0"), 3.into()))
                .unwrap();
            writer
        });
        let now = engine.list(&ListRequest::new()).unwrap();
        let rv = now.resource_version.get();
        assert_eq!(state(&now.items), expected(rv), "present at {rv}");
        let past = engine
            .list(&ListRequest::new().at(ReadAt::Exact(1.into())))
            .unwrap();
        assert_eq!(past.resource_version.get(), 1);
        assert_eq!(state(&past.items), expected(1));
        let _writer = w.join().unwrap();
        engine.stop();
    });
}
