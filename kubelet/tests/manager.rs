//! The object manager's rules (seeds/002), each on a manual clock, over an
//! in-process engine driven by the test's writer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use herald::clock::ManualClock;
use herald::reflector::BackoffConfig;
use herald::{Change, Config, Engine, Object, Relist, Writer};
use herald_kubelet::{
    EngineUpstream, GetError, ManagerConfig, ManagerStats, ObjectManager, PodRefs,
};

/// A secret as stored: its data, and `immutable` when asked.
fn secret(name: &str, data: &str, immutable: bool) -> Object {
    let payload = if immutable {
        format!(r#"{{"kind":"Secret","data":{{"v":"{data}"}},"immutable":true}}"#)
    } else {
        format!(r#"{{"kind":"Secret","data":{{"v":"{data}"}}}}"#)
    };
    Object::builder("ns", name).payload(payload).build()
}

/// The value a stored secret carries.
fn data(object: &Object) -> String {
    let v: serde_json::Value = serde_json::from_slice(object.payload()).unwrap();
    v["data"]["v"].as_str().unwrap().to_owned()
}

struct Fixture {
    clock: ManualClock,
    engine: Engine,
    writer: Writer,
    rv: u64,
    manager: ObjectManager,
}

impl Fixture {
    /// An engine not listed yet, and a manager on it.
    fn pending(config: ManagerConfig) -> Fixture {
        let clock = ManualClock::new();
        let (engine, writer) = Engine::new(Config::default().clock(clock.clone())).unwrap();
        let backoff = BackoffConfig {
            initial: Duration::from_secs(1),
            jitter: 0.0,
            ..BackoffConfig::default()
        };
        let manager = ObjectManager::new(
            EngineUpstream::new(engine.clone()),
            config.clock(clock.clone()).backoff(backoff),
        )
        .unwrap();
        Fixture {
            clock,
            engine,
            writer,
            rv: 1,
            manager,
        }
    }

    /// Listed with `objects`.
    fn with(objects: Vec<Object>) -> Fixture {
        let mut f = Fixture::pending(ManagerConfig::default());
        f.writer.replace(Relist::new(objects, 1.into())).unwrap();
        f
    }

    fn put(&mut self, object: Object) {
        self.rv += 1;
        self.writer
            .apply(Change::modified(object, self.rv.into()))
            .unwrap();
    }

    fn delete(&mut self, object: Object) {
        self.rv += 1;
        self.writer
            .apply(Change::deleted(object, self.rv.into()))
            .unwrap();
    }

    fn stats(&self) -> ManagerStats {
        self.manager.stats()
    }

    /// Waits (real time, 10 s at most) until the manager's stats satisfy `f`.
    fn until(&self, what: &str, f: impl Fn(&ManagerStats) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.stats();
            if f(&s) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: not within 10 s: {s:?}");
            thread::sleep(Duration::from_millis(2));
        }
    }

    fn get_data(&self, name: &str) -> Option<String> {
        self.manager.get("ns", name).unwrap().map(|o| data(&o))
    }
}

/// A `get` of `ns/name` on another thread, the clock moving 250 ms at a
/// time until it returns: the wait is on the manager's clock, so it ends
/// once the clock has moved far enough past the get's start, whenever
/// that was.
fn get_while_the_clock_moves(
    manager: &Arc<ObjectManager>,
    clock: &ManualClock,
    name: &'static str,
) -> Result<Option<Object>, GetError> {
    let m = manager.clone();
    let getter = thread::spawn(move || m.get("ns", name));
    while !getter.is_finished() {
        clock.advance(Duration::from_millis(250));
        thread::sleep(Duration::from_millis(5));
    }
    getter.join().unwrap()
}

fn pod(name: &str, uid: &str, objects: &[&str]) -> PodRefs {
    PodRefs {
        namespace: "ns".into(),
        name: name.into(),
        uid: uid.into(),
        objects: objects
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    }
}

#[test]
fn references_are_counted_across_pods() {
    let names = ["s1", "s2", "s3", "s4"];
    let f = Fixture::with(names.iter().map(|n| secret(n, n, false)).collect());
    let a = pod("a", "uid-a", &["s1", "s2"]);
    let b = pod("b", "uid-b", &["s2", "s3"]);
    f.manager.register_pod(&a).unwrap();
    f.manager.register_pod(&b).unwrap();
    assert_eq!(
        (f.stats().objects, f.stats().watches_open, f.stats().pods),
        (3, 3, 2)
    );
    f.until("three syncs", |s| s.syncs == 3);
    for n in ["s1", "s2", "s3"] {
        assert_eq!(f.get_data(n).as_deref(), Some(n));
    }

    // s2 is still b's: only s1 goes.
    f.manager.unregister_pod(&a);
    assert_eq!((f.stats().objects, f.stats().watches_open), (2, 2));
    assert_eq!(
        f.manager.get("ns", "s1"),
        Err(GetError::NotRegistered {
            namespace: "ns".into(),
            name: "s1".into()
        })
    );
    assert_eq!(f.get_data("s2").as_deref(), Some("s2"));

    // A new version of b: s3 is in both (its watch stays), s2 goes, s4 comes.
    let b2 = pod("b", "uid-b", &["s3", "s4"]);
    f.manager.register_pod(&b2).unwrap();
    assert!(f.manager.get("ns", "s2").is_err());
    assert_eq!(f.get_data("s4").as_deref(), Some("s4"));
    assert_eq!(f.stats().syncs, 4, "s3's watch was not restarted");
    assert_eq!((f.stats().objects, f.stats().watches_open), (2, 2));

    // Another pod with b's name but another uid is another pod.
    let b_again = pod("b", "uid-b2", &["s3"]);
    f.manager.register_pod(&b_again).unwrap();
    f.manager.unregister_pod(&b2);
    assert_eq!(f.get_data("s3").as_deref(), Some("s3"));
    assert!(f.manager.get("ns", "s4").is_err());
    f.manager.unregister_pod(&b_again);
    f.manager.unregister_pod(&b_again); // twice: ignored
    let s = f.stats();
    assert_eq!((s.objects, s.watches_open, s.pods), (0, 0, 0));

    // References by hand: two from one pod need two deletes.
    f.manager.add_reference("ns", "s1", "p").unwrap();
    f.manager.add_reference("ns", "s1", "p").unwrap();
    f.manager.delete_reference("ns", "s1", "p");
    f.manager.delete_reference("ns", "s1", "other"); // not held: ignored
    assert_eq!(f.get_data("s1").as_deref(), Some("s1"));
    f.manager.delete_reference("ns", "s1", "p");
    assert_eq!(f.stats().watches_open, 0);
}

#[test]
fn a_get_before_the_sync_waits_for_it() {
    let f = Fixture::pending(ManagerConfig::default());
    f.manager.add_reference("ns", "s", "p").unwrap();
    let getter = {
        let manager = Arc::new(f.manager);
        let m = manager.clone();
        (thread::spawn(move || m.get("ns", "s")), manager)
    };
    // The engine has not listed: no sync, and the clock does not move.
    thread::sleep(Duration::from_millis(50));
    assert!(!getter.0.is_finished(), "the get returned before any sync");
    let mut writer = f.writer;
    writer
        .replace(Relist::new([secret("s", "v1", false)], 5.into()))
        .unwrap();
    let got = getter.0.join().unwrap().unwrap().unwrap();
    assert_eq!(data(&got), "v1");
}

#[test]
fn a_get_that_sees_no_sync_times_out() {
    let f = Fixture::pending(ManagerConfig::default().sync_timeout(Duration::from_secs(1)));
    f.manager.add_reference("ns", "s", "p").unwrap();
    let manager = Arc::new(f.manager);
    match get_while_the_clock_moves(&manager, &f.clock, "s") {
        Err(GetError::SyncTimeout { name, waited, .. }) => {
            assert_eq!(name, "s");
            assert!(waited >= Duration::from_secs(1), "{waited:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(manager.stats().sync_timeouts, 1);
    // Not registered is an error at once, without a wait.
    assert!(matches!(
        manager.get("ns", "other"),
        Err(GetError::NotRegistered { .. })
    ));
}

#[test]
fn a_deleted_object_is_not_found_and_may_come_back() {
    let mut f = Fixture::with(vec![secret("s", "v1", false)]);
    f.manager.add_reference("ns", "s", "p").unwrap();
    f.manager.add_reference("ns", "absent", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    assert_eq!(f.manager.get("ns", "absent"), Ok(None));

    f.delete(secret("s", "v1", false));
    f.until("the delete", |s| s.updates == 1);
    assert_eq!(f.manager.get("ns", "s"), Ok(None));
    f.put(secret("s", "v2", false));
    f.put(secret("absent", "now", false));
    f.until("two puts", |s| s.updates == 3);
    assert_eq!(f.get_data("s").as_deref(), Some("v2"));
    assert_eq!(f.get_data("absent").as_deref(), Some("now"));
}

#[test]
fn an_immutable_object_stops_its_watch_at_first_sight() {
    let mut f = Fixture::with(vec![secret("s", "v1", true), secret("m", "m1", false)]);
    f.manager.add_reference("ns", "s", "p").unwrap();
    f.manager.add_reference("ns", "m", "p").unwrap();
    f.until("the immutable stop", |s| {
        s.immutable_stops == 1 && s.syncs == 2
    });
    assert_eq!(f.stats().watches_open, 1, "only the mutable one is watched");
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));

    // A change the cache would refuse (it is immutable) or a delete: the
    // last value is served for as long as it is referenced.
    f.put(secret("s", "v2", false));
    f.delete(secret("s", "v2", false));
    f.put(secret("m", "m2", false));
    f.until("m's change", |s| s.updates == 1);
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    // Not even the idle recycler restarts it.
    f.clock.advance(Duration::from_secs(3600));
    f.until("m idles", |s| s.idle_stops == 1);
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    assert_eq!(f.stats().restarts, 0);
    assert_eq!(f.get_data("m").as_deref(), Some("m2"));
    assert_eq!(f.stats().restarts, 1);
}

#[test]
fn an_object_made_immutable_later_stops_its_watch() {
    let mut f = Fixture::with(vec![secret("s", "v1", false)]);
    f.manager.add_reference("ns", "s", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    f.put(secret("s", "v2", false));
    f.put(secret("s", "v3", true));
    f.until("the immutable stop", |s| s.immutable_stops == 1);
    assert_eq!(f.stats().watches_open, 0);
    f.put(secret("s", "v4", false));
    assert_eq!(f.get_data("s").as_deref(), Some("v3"));
    // The last reference still forgets it; a new one watches it afresh.
    f.manager.delete_reference("ns", "s", "p");
    f.manager.add_reference("ns", "s", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v4"));
}

#[test]
fn an_idle_watch_stops_and_the_next_get_restarts_it() {
    // Resync 1 min: idle after 5 min; the recycler runs every minute.
    let mut f = Fixture::with(vec![
        secret("idle", "i1", false),
        secret("busy", "b1", false),
    ]);
    f.manager.add_reference("ns", "idle", "p").unwrap();
    f.manager.add_reference("ns", "busy", "p").unwrap();
    assert_eq!(f.get_data("idle").as_deref(), Some("i1"));
    assert_eq!(f.get_data("busy").as_deref(), Some("b1"));

    // 4 min: nothing idle yet; busy is read.
    for _ in 0..4 {
        f.clock.advance(Duration::from_secs(60));
    }
    assert_eq!(f.get_data("busy").as_deref(), Some("b1"));
    f.clock.advance(Duration::from_secs(61));
    f.clock.advance(Duration::from_secs(60));
    // 6 min: idle was last read at 0, busy at 4.
    f.until("idle stops", |s| s.idle_stops == 1);
    assert_eq!(f.stats().watches_open, 1);

    // Changes while it is stopped are not seen...
    f.put(secret("idle", "i2", false));
    // ...until a get restarts the watch and waits for the new sync.
    assert_eq!(f.get_data("idle").as_deref(), Some("i2"));
    let s = f.stats();
    assert_eq!((s.restarts, s.watches_open, s.syncs), (1, 2, 3));

    // busy goes idle in its turn (read at 4 min, now past 9).
    for _ in 0..4 {
        f.clock.advance(Duration::from_secs(60));
    }
    f.until("busy stops", |s| s.idle_stops == 2);
    assert_eq!(f.stats().watches_open, 1);
}

#[test]
fn an_idle_watch_restarted_before_the_engine_can_serve_waits_then_times_out() {
    let f = Fixture::with(vec![secret("s", "v1", false)]);
    f.manager.add_reference("ns", "s", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    f.clock.advance(Duration::from_secs(400));
    f.until("the idle stop", |s| s.idle_stops == 1);
    // The engine stops: the restarted watch ends before its sync, and the
    // get fails with the reason.
    f.engine.stop();
    let manager = Arc::new(f.manager);
    match get_while_the_clock_moves(&manager, &f.clock, "s") {
        Err(GetError::SyncTimeout { last_end, .. }) => {
            let why = last_end.expect("the end's reason");
            assert!(why.contains("stopped"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_ended_watch_is_opened_again_after_its_backoff() {
    let mut f = Fixture::with(vec![secret("s", "v1", false)]);
    f.manager.add_reference("ns", "s", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    // A re-list ends every engine watch (Relisted).
    f.writer
        .replace(Relist::new([secret("s", "v2", false)], 10.into()))
        .unwrap();
    f.rv = 10;
    f.until("the end", |s| s.watch_ends == 1);
    assert_eq!(f.stats().watches_open, 0);
    // Meanwhile the last state is served.
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    // The backoff (1 s, no jitter) is on the manager's clock.
    f.clock.advance(Duration::from_millis(999));
    thread::sleep(Duration::from_millis(20));
    assert_eq!(f.stats().reopens, 0);
    f.clock.advance(Duration::from_millis(1));
    f.until("the re-open and its sync", |s| {
        s.reopens == 1 && s.syncs == 2
    });
    assert_eq!(f.get_data("s").as_deref(), Some("v2"));
    f.put(secret("s", "v3", false));
    f.until("the next change", |s| s.updates == 1);
    assert_eq!(f.get_data("s").as_deref(), Some("v3"));
}

#[test]
fn the_manager_stops() {
    let f = Fixture::with(vec![secret("imm", "i", true), secret("m", "m", false)]);
    f.manager.add_reference("ns", "imm", "p").unwrap();
    f.manager.add_reference("ns", "m", "p").unwrap();
    assert_eq!(f.get_data("m").as_deref(), Some("m"));
    assert_eq!(f.get_data("imm").as_deref(), Some("i"));
    f.manager.stop();
    f.manager.stop(); // idempotent
    assert_eq!(f.stats().watches_open, 0);
    assert_eq!(f.manager.get("ns", "m"), Err(GetError::Stopped));
    // An immutable object's value is still served.
    assert_eq!(f.get_data("imm").as_deref(), Some("i"));
    // References are still counted; none starts a watch.
    f.manager.add_reference("ns", "new", "p").unwrap();
    assert_eq!(f.manager.get("ns", "new"), Err(GetError::Stopped));
    assert_eq!((f.stats().objects, f.stats().watches_open), (3, 0));
    // The engine's watches are gone too.
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.engine.stats().watchers_active > 0 {
        assert!(Instant::now() < deadline, "{:?}", f.engine.stats());
        thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_stop_ends_a_get_waiting_for_a_sync() {
    let f = Fixture::pending(ManagerConfig::default());
    f.manager.add_reference("ns", "s", "p").unwrap();
    let manager = Arc::new(f.manager);
    let m = manager.clone();
    let getter = thread::spawn(move || m.get("ns", "s"));
    thread::sleep(Duration::from_millis(20));
    manager.stop();
    assert_eq!(getter.join().unwrap(), Err(GetError::Stopped));
}

#[test]
fn removing_the_last_reference_ends_a_waiting_get() {
    let f = Fixture::pending(ManagerConfig::default());
    f.manager.add_reference("ns", "s", "p").unwrap();
    let manager = Arc::new(f.manager);
    let m = manager.clone();
    let getter = thread::spawn(move || m.get("ns", "s"));
    thread::sleep(Duration::from_millis(20));
    manager.delete_reference("ns", "s", "p");
    assert!(matches!(
        getter.join().unwrap(),
        Err(GetError::NotRegistered { .. })
    ));
}

#[test]
fn invalid_names_change_nothing() {
    let f = Fixture::with(vec![]);
    for bad in ["", ".", "..", "a/b", "a%2F"] {
        let err = f.manager.add_reference("ns", bad, "p").unwrap_err();
        assert_eq!(err.name, bad);
        assert!(err.to_string().contains("invalid object name"));
    }
    assert!(f.manager.add_reference("a/b", "s", "p").is_err());
    let p = pod("p", "u", &["fine", "not/fine"]);
    assert!(f.manager.register_pod(&p).is_err());
    let s = f.stats();
    assert_eq!((s.objects, s.pods, s.watches_open), (0, 0, 0));
    // Names the selector grammar escapes are fine.
    f.manager.add_reference("ns", "a,b=c\\d", "p").unwrap();
    assert_eq!(f.manager.get("ns", "a,b=c\\d"), Ok(None));
}

#[test]
fn a_panicking_immutability_test_is_counted_and_the_change_applied() {
    let mut f = Fixture::pending(ManagerConfig::default().immutable(|o: &Object| {
        assert!(!data(o).contains("boom"), "a hostile predicate");
        false
    }));
    f.writer
        .replace(Relist::new([secret("s", "v1", false)], 1.into()))
        .unwrap();
    f.manager.add_reference("ns", "s", "p").unwrap();
    assert_eq!(f.get_data("s").as_deref(), Some("v1"));
    f.put(secret("s", "boom", false));
    f.until("the panic", |s| s.panics == 1 && s.updates == 1);
    assert_eq!(f.get_data("s").as_deref(), Some("boom"));
    f.put(secret("s", "v3", false));
    f.until("the next change", |s| s.updates == 2);
    assert_eq!(f.get_data("s").as_deref(), Some("v3"));
}

/// Pods registered and unregistered from many threads at once, with gets
/// and changes: every object referenced at the end has exactly one watch,
/// and every get answers the latest value once the changes are done.
#[test]
fn many_threads_at_once() {
    const OBJECTS: usize = 50;
    let f = Fixture::with(
        (0..OBJECTS)
            .map(|i| secret(&format!("s{i}"), "v0", false))
            .collect(),
    );
    let manager = Arc::new(f.manager);
    let mut writer = f.writer;
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let m = manager.clone();
            thread::spawn(move || {
                for round in 0..200usize {
                    let objs: Vec<String> = (0..3)
                        .map(|k| format!("s{}", (t * 7 + round * 3 + k) % OBJECTS))
                        .collect();
                    let refs: Vec<&str> = objs.iter().map(String::as_str).collect();
                    let p = pod(
                        &format!("pod-{t}-{}", round % 5),
                        &format!("u{t}-{}", round % 5),
                        &refs,
                    );
                    m.register_pod(&p).unwrap();
                    for o in &objs {
                        // Each is referenced by the pod just registered.
                        let got = m.get("ns", o).unwrap();
                        assert!(got.is_some());
                    }
                    if round % 2 == 1 {
                        m.unregister_pod(&p);
                    }
                }
            })
        })
        .collect();
    for rv in 2..300u64 {
        let i = rv as usize % OBJECTS;
        writer
            .apply(Change::modified(
                secret(&format!("s{i}"), &format!("v{rv}"), false),
                rv.into(),
            ))
            .unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    let s = manager.stats();
    assert_eq!(s.watches_open, s.objects, "{s:?}");
    assert!(s.objects > 0);
    // The last value of each object, once the pump has caught up.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..OBJECTS {
        let name = format!("s{i}");
        let last = (2..300u64)
            .filter(|rv| *rv as usize % OBJECTS == i)
            .max()
            .unwrap();
        if manager.get("ns", &name).is_err() {
            continue; // not referenced at the end
        }
        loop {
            let got = manager.get("ns", &name).unwrap().map(|o| data(&o));
            if got.as_deref() == Some(&format!("v{last}")) {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: {got:?}, not v{last}");
            thread::sleep(Duration::from_millis(2));
        }
    }
}
