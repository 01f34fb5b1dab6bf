//! Keys never collide (issue 14): the writer refuses an object whose name
//! or namespace is not a valid path segment (Kubernetes'
//! `path.IsValidPathSegmentName`), with a bounded, typed error.

use herald::read::ListRequest;
use herald::writer::WriteError;
use herald::*;

fn ready() -> (Engine, Writer) {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer
        .replace(Relist::new([Object::builder("a", "x").build()], 1.into()))
        .unwrap();
    (engine, writer)
}

fn keys(engine: &Engine) -> Vec<String> {
    let list = engine.list(&ListRequest::new()).unwrap();
    list.items
        .iter()
        .map(|i| i.object.key().to_owned())
        .collect()
}

#[test]
fn colliding_keys_are_refused_and_change_nothing() {
    let (engine, mut writer) = ready();
    // Both would be "a/b/c".
    let by_namespace = Object::builder("a/b", "c").build();
    let by_name = Object::builder("a", "b/c").build();
    assert_eq!(by_namespace.key(), by_name.key());
    assert_eq!(
        writer.apply(Change::added(by_namespace.clone(), 2.into())),
        Err(WriteError::InvalidName {
            part: "namespace",
            value: "a/b".into(),
            rule: "may not contain '/'"
        })
    );
    assert_eq!(
        writer.apply(Change::added(by_name.clone(), 2.into())),
        Err(WriteError::InvalidName {
            part: "name",
            value: "b/c".into(),
            rule: "may not contain '/'"
        })
    );
    // A list with one bad object is refused whole.
    let good = Object::builder("a", "y").build();
    assert!(matches!(
        writer.replace(Relist::new([good.clone(), by_name], 5.into())),
        Err(WriteError::InvalidName { .. })
    ));
    assert_eq!(
        (
            keys(&engine),
            engine.resource_version().get(),
            engine.generation()
        ),
        (vec!["a/x".to_owned()], 1, 1)
    );
    writer.apply(Change::added(good, 2.into())).unwrap();
    assert_eq!(keys(&engine), ["a/x", "a/y"]);
}

#[test]
fn each_rule_of_a_path_segment_is_enforced() {
    let (engine, mut writer) = ready();
    let cases = [
        ("a", "", "name", "must not be empty"),
        ("a", ".", "name", "may not be '.' or '..'"),
        ("a", "..", "name", "may not be '.' or '..'"),
        ("a", "50%", "name", "may not contain '%'"),
        ("..", "x", "namespace", "may not be '.' or '..'"),
        ("%2F", "x", "namespace", "may not contain '%'"),
        ("", "", "name", "must not be empty"),
    ];
    for (rv, (ns, name, part, rule)) in (2u64..).zip(cases) {
        let o = Object::builder(ns, name).build();
        match writer.apply(Change::added(o, rv.into())) {
            Err(WriteError::InvalidName {
                part: p, rule: r, ..
            }) => {
                assert_eq!((p, r), (part, rule), "{ns:?}/{name:?}")
            }
            other => panic!("{ns:?}/{name:?}: {other:?}"),
        }
    }
    // Dots inside a name, cluster-scoped objects: fine.
    for (rv, (ns, name)) in (2u64..).zip([("a", "web.v1"), ("", "node-1"), ("a", "...")]) {
        writer
            .apply(Change::added(Object::builder(ns, name).build(), rv.into()))
            .unwrap();
    }
    assert_eq!(keys(&engine), ["a/...", "a/web.v1", "a/x", "node-1"]);
}

#[test]
fn the_error_repeats_at_most_128_bytes_of_the_name() {
    let (_engine, mut writer) = ready();
    // 'é' is two bytes: 127 of them do not split evenly at 128.
    let name = format!("x{}/", "é".repeat(10_000));
    let err = writer
        .apply(Change::added(Object::builder("a", &name).build(), 2.into()))
        .unwrap_err();
    let WriteError::InvalidName { value, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(value.len(), 127);
    assert!(name.starts_with(value.as_str()));
    assert!(err.to_string().len() < 200, "{err}");
}
