//! Reads from the cache (docs/semantics.md §7): Get and List at every kind of
//! resource version, exact-version lists across the history window, pages
//! across concurrent writes, expired and malformed tokens, index-served
//! lists. The expected answers come from the sequential model in `common`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use herald::clock::ManualClock;
use herald::config::ConfigError;
use herald::event::{ChangeKind, TooLargeResourceVersion};
use herald::object::Item;
use herald::options::OptionsError;
use herald::read::{Continue, ListRequest, NotReady, ReadAt, ReadError};
use herald::selector::{FieldSelector, KeyScope};
use herald::*;

const LIST_RV: u64 = 100;
const INDEX: &str = "spec.nodeName";

/// An engine with the initial list and `n` changes applied; the model of
/// the same.
fn setup(config: Config, n: usize, seed: u64) -> (Engine, Writer, Model) {
    let mut rng = Rng::new(seed);
    let mut live = BTreeMap::new();
    workload(&mut rng, 0, 300, 300, 4, 8, &mut live);
    let base: Vec<Object> = live.values().cloned().collect();
    let changes = workload(&mut rng, LIST_RV, n, 400, 4, 8, &mut live);
    let (engine, mut writer) = Engine::new(config).unwrap();
    writer
        .replace(Relist::new(base.iter().cloned(), LIST_RV.into()))
        .unwrap();
    for c in &changes {
        writer.apply(c.clone()).unwrap();
    }
    let model = Model::new(LIST_RV, &base, &changes);
    (engine, writer, model)
}

fn big_history() -> Config {
    Config::default()
        .list_index(INDEX)
        .history_bounds(100, 100_000)
        .history_window(Duration::from_secs(3600))
}

/// (key, rv of the last change) pairs of a list answer.
fn keys(items: &[Item]) -> Vec<(String, u64)> {
    items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect()
}

/// The model's answer to a list with `f` at `rv`.
fn expected(model: &Model, f: &ModelFilter, rv: u64) -> Vec<(String, u64)> {
    model
        .state_at(rv)
        .into_iter()
        .filter(|(_, (o, _))| f.admits(o))
        .map(|(k, (_, r))| (k, r))
        .collect()
}

fn request(f: &ModelFilter) -> ListRequest {
    ListRequest::new()
        .scope(f.scope.clone())
        .labels(f.labels.clone())
        .fields(f.fields.clone())
}

fn filters() -> Vec<ModelFilter> {
    let f = ModelFilter::parse;
    vec![
        ModelFilter::everything(),
        f(KeyScope::prefix("ns-1"), "", ""),
        f(KeyScope::All, "app=web", ""),
        f(KeyScope::All, "", "spec.nodeName=node-3"),
        f(KeyScope::prefix("ns-2"), "tier!=a", "spec.nodeName=node-5"),
        f(KeyScope::exact("ns-0/pod-8"), "", ""),
        f(KeyScope::All, "", "metadata.namespace=ns-3"),
    ]
}

#[test]
fn lists_at_every_version_of_the_window_equal_the_model() {
    let (engine, _writer, model) = setup(big_history(), 1_500, 7);
    let last = model.changes.last().unwrap().1;
    let rvs: Vec<u64> = (LIST_RV..=last).step_by(7).chain([last]).collect();
    for f in filters() {
        for &rv in &rvs {
            let got = engine
                .list(&request(&f).at(ReadAt::Exact(rv.into())))
                .unwrap();
            assert_eq!(got.resource_version.get(), rv);
            assert_eq!(keys(&got.items), expected(&model, &f, rv), "{f:?} at {rv}");
        }
        // The present, by every kind of read that serves it.
        for at in [ReadAt::Any, ReadAt::NotOlderThan(last.into())] {
            let got = engine.list(&request(&f).at(at)).unwrap();
            assert_eq!(got.resource_version.get(), last);
            assert_eq!(keys(&got.items), expected(&model, &f, last), "{f:?} {at:?}");
        }
    }
}

#[test]
fn the_list_version_and_those_before_the_first_change_are_listable() {
    let (engine, mut writer) = Engine::new(Config::default().history_bounds(100, 100)).unwrap();
    let a = Object::builder("ns", "a").build();
    writer.replace(Relist::new([a.clone()], 10.into())).unwrap();
    writer
        .apply(Change::added(Object::builder("ns", "b").build(), 15.into()))
        .unwrap();
    for rv in 10..15 {
        let got = engine
            .list(&ListRequest::new().at(ReadAt::Exact(rv.into())))
            .unwrap();
        assert_eq!(keys(&got.items), [("ns/a".to_owned(), 10)], "at {rv}");
    }
    let got = engine
        .list(&ListRequest::new().at(ReadAt::Exact(15.into())))
        .unwrap();
    assert_eq!(got.items.len(), 2);
    // Before the list: gone.
    let err = engine.list(&ListRequest::new().at(ReadAt::Exact(9.into())));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
}

#[test]
fn gets_at_every_kind_of_version_equal_the_model() {
    let (engine, _writer, model) = setup(big_history(), 600, 11);
    let last = model.changes.last().unwrap().1;
    let some_keys: Vec<String> = (0..400)
        .step_by(13)
        .map(|k| format!("ns-{}/pod-{k}", k % 4))
        .collect();
    for rv in (LIST_RV..=last).step_by(29).chain([last]) {
        let state = model.state_at(rv);
        for key in &some_keys {
            let got = engine.get(key, ReadAt::Exact(rv.into())).unwrap();
            assert_eq!(got.resource_version.get(), rv);
            let want = state.get(key).map(|(_, r)| *r);
            assert_eq!(
                got.item.map(|i| i.resource_version.get()),
                want,
                "{key}@{rv}"
            );
        }
    }
    let state = model.state_at(last);
    for key in &some_keys {
        for at in [ReadAt::Any, ReadAt::NotOlderThan(last.into())] {
            let got = engine.get(key, at).unwrap();
            assert_eq!(got.resource_version.get(), last);
            let want = state.get(key).map(|(o, r)| (o.clone(), *r));
            assert_eq!(
                got.item.map(|i| (i.object, i.resource_version.get())),
                want,
                "{key} {at:?}"
            );
        }
    }
}

#[test]
fn index_served_lists_equal_scans() {
    // The same changes into an engine with the index and one without.
    let (indexed, _w1, model) = setup(big_history(), 800, 3);
    let plain = Config::default()
        .history_bounds(100, 100_000)
        .history_window(Duration::from_secs(3600));
    let (scanned, _w2, _) = setup(plain, 800, 3);
    let last = model.changes.last().unwrap().1;
    for n in 0..8 {
        let sel: FieldSelector = format!("{INDEX}=node-{n}").parse().unwrap();
        for at in [ReadAt::Any, ReadAt::Exact((last - 200).into())] {
            let req = ListRequest::new().fields(sel.clone()).at(at);
            let a = indexed.list(&req).unwrap();
            let b = scanned.list(&req).unwrap();
            assert_eq!(keys(&a.items), keys(&b.items), "node-{n} {at:?}");
            assert!(!a.items.is_empty());
        }
    }
    // A value nobody has.
    let req = ListRequest::new().fields(format!("{INDEX}=node-99").parse().unwrap());
    assert!(indexed.list(&req).unwrap().items.is_empty());
}

#[test]
fn versions_outside_the_window_are_gone_or_too_large() {
    let clock = ManualClock::new();
    let config = Config::default()
        .history_bounds(100, 100)
        .too_large_timeout(Duration::from_secs(3))
        .clock(clock.clone());
    let (engine, _writer, model) = setup(config, 500, 5);
    let last = model.changes.last().unwrap().1;
    // The ring keeps the last 100 changes: the list version is long gone.
    let err = engine.list(&ListRequest::new().at(ReadAt::Exact(LIST_RV.into())));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
    let err = engine.get("ns-0/pod-0", ReadAt::Exact(LIST_RV.into()));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
    // The oldest version a watch may start from is listable, one older is
    // not.
    let oldest = model.changes[model.changes.len() - 100].1 - 1;
    let at = |rv: u64| engine.list(&ListRequest::new().at(ReadAt::Exact(rv.into())));
    let got = at(oldest).unwrap();
    assert_eq!(
        keys(&got.items),
        expected(&model, &ModelFilter::everything(), oldest)
    );
    let before = model.changes[model.changes.len() - 101].1;
    if before < oldest {
        assert!(matches!(at(before), Err(ReadError::Gone(_))));
    }
    // A future version waits, then fails on the engine's clock.
    let future = ReadAt::NotOlderThan((last + 10).into());
    let (engine2, clock2) = (engine.clone(), clock.clone());
    let waiting = std::thread::spawn(move || engine2.get("ns-0/pod-0", future));
    std::thread::sleep(Duration::from_millis(20));
    assert!(!waiting.is_finished());
    clock2.advance(Duration::from_secs(3));
    match waiting.join().unwrap() {
        Err(ReadError::TooLargeResourceVersion(t)) => {
            assert_eq!(
                t.to_string(),
                TooLargeResourceVersion::new((last + 10).into(), last.into()).to_string()
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_future_version_is_served_once_the_cache_reaches_it() {
    let (engine, mut writer, model) = setup(big_history(), 50, 9);
    let last = model.changes.last().unwrap().1;
    let want = last + 5;
    let reader = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (
                engine.list(&ListRequest::new().at(ReadAt::NotOlderThan(want.into()))),
                engine.get("ns-0/new", ReadAt::Exact(want.into())),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    let new = Object::builder("ns-0", "new").build();
    writer.apply(Change::added(new, (last + 3).into())).unwrap();
    writer.progress(want.into()).unwrap();
    let (list, get) = reader.join().unwrap();
    let list = list.unwrap();
    assert_eq!(list.resource_version.get(), want);
    assert!(list.items.iter().any(|i| i.object.key() == "ns-0/new"));
    let get = get.unwrap();
    assert_eq!(get.resource_version.get(), want);
    assert_eq!(get.item.unwrap().resource_version.get(), last + 3);
}

#[test]
fn pages_across_concurrent_writes_equal_the_list_at_their_version() {
    let (engine, mut writer, model) = setup(big_history(), 200, 13);
    let start = model.changes.last().unwrap().1;
    // Writes go on while the pages are read.
    let mut rng = Rng::new(99);
    let mut live: BTreeMap<String, Object> = model
        .state_at(start)
        .into_iter()
        .map(|(k, (o, _))| (k, o))
        .collect();
    let more = workload(&mut rng, start, 3_000, 400, 4, 8, &mut live);
    let writes = std::thread::spawn(move || {
        for c in more {
            writer.apply(c).unwrap();
        }
        writer
    });
    for f in filters() {
        let mut pages = 0;
        let mut got = Vec::new();
        let mut page = engine.list(&request(&f).limit(7)).unwrap();
        let rv = page.resource_version;
        // (objects listed so far, what the page said remained).
        let mut counts = Vec::new();
        loop {
            pages += 1;
            assert!(page.items.len() <= 7);
            assert_eq!(
                page.resource_version, rv,
                "every page names the first's version"
            );
            got.extend(keys(&page.items));
            counts.push((got.len(), page.remaining_item_count));
            let Some(token) = page.continue_token.take() else {
                break;
            };
            assert_eq!(token.resource_version(), rv);
            // The token survives printing and parsing, as a client's would.
            let token: Continue = token.to_string().parse().unwrap();
            page = engine
                .list(&request(&f).limit(7).continue_from(token))
                .unwrap();
        }
        let whole = engine.list(&request(&f).at(ReadAt::Exact(rv))).unwrap();
        assert_eq!(got, keys(&whole.items), "{f:?}: {pages} pages at {rv}");
        // A page cut by the limit says how many follow it, as the
        // reference's cacher does, unless a selector chooses objects.
        let counted = f.labels.is_everything() && f.fields.is_everything();
        for (i, (so_far, remaining)) in counts.iter().enumerate() {
            let last = i + 1 == counts.len();
            let want = (counted && !last).then(|| (whole.items.len() - so_far) as u64);
            assert_eq!(*remaining, want, "{f:?}: page {i}");
        }
    }
    writes.join().unwrap();
}

#[test]
fn expired_malformed_and_misused_tokens_are_typed_errors() {
    let config = Config::default().history_bounds(100, 100);
    let (engine, mut writer, model) = setup(config, 10, 17);
    let last = model.changes.last().unwrap().1;
    let first = engine.list(&ListRequest::new().limit(5)).unwrap();
    let token = first.continue_token.unwrap();
    // Misused: a continued list names its version through the token.
    let err = engine.list(
        &ListRequest::new()
            .continue_from(token.clone())
            .at(ReadAt::Exact(last.into())),
    );
    let rule = OptionsError::ContinueWithResourceVersion;
    assert_eq!(err, Err(ReadError::InvalidOptions(rule)));
    // Malformed.
    for bad in [
        "",
        "h1",
        "h1.1.x.",
        "h2.1.5.61",
        "h1.1.5.6",
        "h1.1.5.zz",
        "h1.1.5.ff",
    ] {
        let err = bad.parse::<Continue>();
        assert!(
            matches!(err, Err(ReadError::InvalidContinue(_))),
            "{bad:?}: {err:?}"
        );
    }
    // Expired: the writer moves the version out of the window.
    for i in 1..=150 {
        let o = Object::builder("ns-9", &format!("x{i}")).build();
        writer.apply(Change::added(o, (last + i).into())).unwrap();
    }
    let err = engine.list(&ListRequest::new().limit(5).continue_from(token));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
    // A re-list expires every token, even a young one.
    let young = engine.list(&ListRequest::new().limit(5)).unwrap();
    writer
        .replace(Relist::new([], (last + 500).into()))
        .unwrap();
    let err = engine.list(&ListRequest::new().continue_from(young.continue_token.unwrap()));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
    // And the version before the re-list is gone for exact reads.
    let err = engine.get("ns-9/x1", ReadAt::Exact((last + 10).into()));
    assert!(matches!(err, Err(ReadError::Gone(_))), "{err:?}");
}

#[test]
fn list_indexes_are_validated_like_trigger_indexes() {
    for bad in [
        Config::default().list_index(""),
        Config::default().list_index("a").list_index("a"),
    ] {
        assert!(matches!(Engine::new(bad), Err(ConfigError::BadIndex(_))));
    }
    // The same field may be both a trigger and a list index.
    assert!(Engine::new(Config::default().index("a").list_index("a")).is_ok());
}

#[test]
fn reads_before_the_list_and_after_the_stop_say_so() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    let Err(ReadError::NotReady(why)) = engine.get("a", ReadAt::Any) else {
        panic!("a read before the list")
    };
    assert_eq!(
        (why.retry_after(), why.cause()),
        (NotReady::RETRY_AFTER, None)
    );
    assert!(matches!(
        engine.list(&ListRequest::new()),
        Err(ReadError::NotReady(_))
    ));
    writer
        .replace(Relist::new([Object::builder("ns", "a").build()], 1.into()))
        .unwrap();
    assert_eq!(engine.list(&ListRequest::new()).unwrap().items.len(), 1);
    engine.stop();
    assert_eq!(
        engine.get("ns/a", ReadAt::Any),
        Err(ReadError::EngineStopped)
    );
}

/// Issue 14, finding 7: a list index files an object without the field
/// under `""`, as a field selector reads it, so `spec.nodeName=` served
/// from the index equals a scan at the present and at past versions.
#[test]
fn index_served_lists_equal_scans_for_the_empty_value_and_missing_fields() {
    let pod = |k: u64, node: u64| {
        let b = Object::builder("ns", &format!("pod-{k}"));
        match node {
            0 => b,
            1 => b.field(INDEX, ""),
            n => b.field(INDEX, &format!("node-{n}")),
        }
        .build()
    };
    let history = |c: Config| {
        c.history_bounds(1_000, 1_000)
            .history_window(Duration::from_secs(3600))
    };
    let (indexed, mut w1) = Engine::new(history(Config::default().list_index(INDEX))).unwrap();
    let (scanned, mut w2) = Engine::new(history(Config::default())).unwrap();
    let base: Vec<Object> = (0..40).map(|k| pod(k, k % 4)).collect();
    for w in [&mut w1, &mut w2] {
        w.replace(Relist::new(base.iter().cloned(), LIST_RV.into()))
            .unwrap();
    }
    let mut rng = Rng::new(21);
    let mut live: BTreeMap<u64, Object> = (0..40).zip(base).collect();
    let mut rv = LIST_RV;
    for _ in 0..300 {
        rv += 1;
        let k = rng.below(50);
        let o = pod(k, rng.below(4));
        let change = match live.get(&k) {
            None => Change::added(o.clone(), rv.into()),
            Some(old) if rng.below(6) == 0 => Change::deleted(old.clone(), rv.into()),
            Some(_) => Change::modified(o.clone(), rv.into()),
        };
        if change.kind() == ChangeKind::Deleted {
            live.remove(&k);
        } else {
            live.insert(k, o);
        }
        for w in [&mut w1, &mut w2] {
            w.apply(change.clone()).unwrap();
        }
    }
    let reads = [ReadAt::Any]
        .into_iter()
        .chain((LIST_RV..=rv).step_by(37).map(|r| ReadAt::Exact(r.into())));
    for at in reads {
        for value in ["", "node-2", "node-3", "node-9"] {
            let req = ListRequest::new()
                .fields(format!("{INDEX}={value}").parse().unwrap())
                .at(at);
            let a = indexed.list(&req).unwrap();
            let b = scanned.list(&req).unwrap();
            assert_eq!(keys(&a.items), keys(&b.items), "{value:?} {at:?}");
            if value.is_empty() {
                // Some without the field, some with it empty.
                assert!(a.items.iter().any(|i| i.object.field(INDEX).is_none()));
                assert!(a.items.iter().any(|i| i.object.field(INDEX) == Some("")));
            }
        }
    }
}

/// Issue 14, finding 10: an error repeats at most a bounded start of the
/// input it rejects (here 1 MB of it), as `InvalidResourceVersion` does.
#[test]
fn errors_repeat_a_bounded_part_of_hostile_input() {
    const MB: usize = 1 << 20;
    let bounded = |msg: String| {
        assert!(msg.len() < 512, "{} bytes: {}...", msg.len(), &msg[..200]);
    };
    for token in [
        "x".repeat(MB),
        format!("h1.{}", "9".repeat(MB)),
        format!("h2.{}", "0".repeat(MB)),
        format!("h1.1.2.{}zz", "61".repeat(MB / 2)),
        format!("{}.", "é".repeat(MB / 2)),
    ] {
        match token.parse::<Continue>() {
            Err(e) => bounded(e.to_string()),
            Ok(t) => panic!("parsed {} bytes as {}", token.len(), t.resource_version()),
        }
    }
    bounded(
        "1".repeat(MB)
            .parse::<ResourceVersion>()
            .unwrap_err()
            .to_string(),
    );
    let name = "f".repeat(MB);
    let dup = Config::default().list_index(&name).list_index(&name);
    bounded(Engine::new(dup).map(|_| ()).unwrap_err().to_string());
}

/// A token's text with its `i`-th dot-separated part from the end
/// replaced: the version is second to last, the generation third.
fn forge(token: &Continue, from_end: usize, with: &str) -> Continue {
    let text = token.to_string();
    let mut parts: Vec<&str> = text.split('.').collect();
    let i = parts.len() - from_end;
    parts[i] = with;
    parts.join(".").parse().unwrap()
}

/// Issue 14, finding 6: a forged token naming a version the engine has
/// not reached (or a re-list it has not made) is refused as invalid; it
/// was served, the present labelled with the forged version.
#[test]
fn tokens_naming_a_state_the_engine_has_not_reached_are_invalid() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    let objs: Vec<Object> = (0..43)
        .map(|i| Object::builder("ns", &format!("pod-{i:02}")).build())
        .collect();
    writer
        .replace(Relist::new(objs.iter().cloned(), 10.into()))
        .unwrap();
    let token = engine
        .list(&ListRequest::new().limit(5))
        .unwrap()
        .continue_token
        .unwrap();
    assert_eq!(token.resource_version().get(), 10);
    let future = forge(&token, 2, "1000000");
    assert_eq!(future.resource_version().get(), 1_000_000);
    // Before and after a delete (43 items, then 42, both "at 1000000").
    for delete in [true, false] {
        let err = engine.list(&ListRequest::new().continue_from(future.clone()));
        match err {
            Err(ReadError::InvalidContinue(e)) => assert!(e.to_string().contains("1000000")),
            other => panic!("{:?}", other.map(|l| (l.items.len(), l.resource_version))),
        }
        if delete {
            let gone = objs[42].clone();
            writer.apply(Change::deleted(gone, 11.into())).unwrap();
        }
    }
    // The version reached is served; one above it is not.
    let reached = forge(&token, 2, "11");
    let page = engine
        .list(&ListRequest::new().continue_from(reached))
        .unwrap();
    assert_eq!((page.items.len(), page.resource_version.get()), (37, 11));
    let err = engine.list(&ListRequest::new().continue_from(forge(&token, 2, "12")));
    assert!(matches!(err, Err(ReadError::InvalidContinue(_))), "{err:?}");
    // A re-list the engine has not made.
    let err = engine.list(&ListRequest::new().continue_from(forge(&token, 3, "7")));
    assert!(matches!(err, Err(ReadError::InvalidContinue(_))), "{err:?}");
}

/// Issue 14, finding 6: a token carries its engine's id, and another
/// engine refuses it, even one holding the same objects at the same
/// versions; both still serve their own.
#[test]
fn tokens_from_another_engine_are_refused() {
    let objs: Vec<Object> = (0..10)
        .map(|i| Object::builder("ns", &format!("pod-{i}")).build())
        .collect();
    let engines: Vec<(Engine, Writer)> = (0..2)
        .map(|_| {
            let (engine, mut writer) = Engine::new(Config::default()).unwrap();
            writer
                .replace(Relist::new(objs.iter().cloned(), 10.into()))
                .unwrap();
            (engine, writer)
        })
        .collect();
    let token = |e: &Engine| {
        e.list(&ListRequest::new().limit(3))
            .unwrap()
            .continue_token
            .unwrap()
    };
    let (a, b) = (&engines[0].0, &engines[1].0);
    let (ta, tb) = (token(a), token(b));
    assert_ne!(ta.to_string(), tb.to_string());
    for (engine, own, foreign) in [(a, &ta, &tb), (b, &tb, &ta)] {
        let err = engine.list(&ListRequest::new().continue_from(foreign.clone()));
        assert_eq!(err, Err(ReadError::ForeignContinue));
        assert!(err.unwrap_err().to_string().contains("another engine"));
        let page = engine
            .list(&ListRequest::new().continue_from(own.clone()))
            .unwrap();
        assert_eq!(page.items.len(), 7);
    }
}
