//! The reflector (docs/semantics.md §9): a cache kept in step with an in-memory
//! MVCC source through lists, watches, compactions and outages; the
//! backoff schedule on the manual clock; consistent reads and their
//! coalesced progress requests.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use herald::clock::ManualClock;
use herald::engine::Lifecycle;
use herald::event::ChangeKind;
use herald::object::Item;
use herald::read::{ListRequest, ReadAt, ReadError};
use herald::reflector::{Backoff, BackoffConfig, Reflector, ReflectorConfig};
use herald::source::{Listing, MemorySource, Source, SourceError, SourceEvent, SourceWatch};
use herald::watch::TryRecvError;
use herald::*;
use herald_testkit::eventually;

fn obj(name: &str, v: &str) -> Object {
    Object::builder("ns", name).label("v", v).build()
}

/// (key, label v, the version of its last change) of every object, in
/// key order: the cache must report each object's own version, as the
/// source does, however it came to hold it (a list or a watch).
fn contents(items: &[Item]) -> Vec<(String, String, u64)> {
    let mut l: Vec<_> = items
        .iter()
        .map(|i| {
            (
                i.object.key().to_owned(),
                i.object.label("v").unwrap_or("").to_owned(),
                i.resource_version.get(),
            )
        })
        .collect();
    l.sort();
    l
}

fn source_contents(source: &MemorySource) -> Vec<(String, String, u64)> {
    contents(&source.list().unwrap().items)
}

fn start(source: &MemorySource, config: ReflectorConfig) -> (Engine, Reflector) {
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let r = Reflector::spawn(Arc::new(source.clone()), engine.clone(), writer, config).unwrap();
    (engine, r)
}

#[test]
fn the_cache_converges_to_the_source_and_watchers_see_every_change() {
    let source = MemorySource::new();
    for i in 0..50 {
        source.put(obj(&format!("o{i}"), "0"));
    }
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    let first = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(contents(&first.items), source_contents(&source));
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(first.resource_version)))
        .unwrap();
    for i in 0..50 {
        if i % 3 == 0 {
            source.delete(&format!("ns/o{i}"));
        } else {
            source.put(obj(&format!("o{i}"), "1"));
        }
    }
    let now = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(contents(&now.items), source_contents(&source));
    assert_eq!(now.resource_version, source.current_revision().unwrap());
    let (seen, end) = recv_events(&mut watch, 50);
    assert!(end.is_none());
    assert_eq!(seen.len(), 50);
    assert!(seen.windows(2).all(|w| w[0].rv < w[1].rv));
    let got = reflector.consistent_get("ns/o1").unwrap();
    assert_eq!(got.item.unwrap().object.label("v"), Some("1"));
    assert!(reflector.consistent_get("ns/o0").unwrap().item.is_none());
    assert_eq!(reflector.stats().lists, 1);
}

#[test]
fn a_compaction_relists_ends_watchers_and_the_cache_converges() {
    let source = MemorySource::new();
    for i in 0..10 {
        source.put(obj(&format!("o{i}"), "0"));
    }
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut watch = engine.watch(WatchRequest::new()).unwrap();
    // The store compacts past what the reflector's watch has been sent,
    // and drops the watch: the reflector must list again.
    source.put(obj("o1", "1"));
    let rev = source.put(obj("o2", "1"));
    source.compact(rev);
    source.fail_watches(SourceError::Compacted {
        requested: rev,
        compacted: rev,
    });
    eventually("a re-list after the compaction", || {
        reflector.stats().compactions >= 1 && reflector.stats().lists >= 2
    });
    assert_eq!(
        reflector.stats().backoffs,
        0,
        "a compaction re-lists at once"
    );
    // Every watcher ends with a reason.
    let (_, end) = recv_to_end(&mut watch);
    assert_eq!(end, EndReason::Relisted);
    source.put(obj("o3", "2"));
    let now = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(contents(&now.items), source_contents(&source));
}

#[test]
fn failures_back_off_on_the_manual_clock_and_recover() {
    let clock = ManualClock::new();
    let source = MemorySource::new();
    source.put(obj("a", "0"));
    source.go_down("maintenance");
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        clock: Arc::new(clock.clone()),
        ..ReflectorConfig::default()
    };
    let (engine, reflector) = start(&source, config);
    // 800 ms, 1.6 s, 3.2 s: each retry comes only once the clock has
    // moved by the whole delay.
    for (failures, delay_ms) in (1..).zip([800u64, 1_600, 3_200]) {
        eventually("a failed attempt", || {
            reflector.stats().backoffs == failures
        });
        clock.advance(Duration::from_millis(delay_ms - 1));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            reflector.stats().backoffs,
            failures,
            "retried early ({delay_ms} ms)"
        );
        clock.advance(Duration::from_millis(1));
    }
    eventually("the fourth failure", || reflector.stats().backoffs == 4);
    assert!(reflector.last_error().unwrap().contains("maintenance"));
    assert_eq!(engine.lifecycle(), Lifecycle::Pending);
    source.recover();
    clock.advance(Duration::from_millis(6_400));
    eventually("the list after recovery", || {
        engine.lifecycle() == Lifecycle::Ready
    });
    assert_eq!(reflector.stats().lists, 1);
}

#[test]
fn backoff_jitter_stays_within_its_bounds_and_resets_after_health() {
    let config = BackoffConfig {
        seed: 42,
        ..BackoffConfig::default()
    };
    let mut b = Backoff::new(config);
    let t = std::time::Instant::now();
    let mut base = 800u128;
    for i in 0..10 {
        let d = b.next_delay(t + Duration::from_secs(i)).as_millis();
        assert!(
            d >= base && d <= 2 * base,
            "step {i}: {d} ms for base {base}"
        );
        base = (base * 2).min(30_000);
    }
    // Reset after 2 minutes without a failure.
    let d = b.next_delay(t + Duration::from_secs(9 + 120)).as_millis();
    assert!((800..=1_600).contains(&d), "{d}");
}

#[test]
fn consistent_reads_wait_for_progress_and_share_its_requests() {
    let source = MemorySource::new();
    source.put(obj("a", "0"));
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    reflector.consistent_list(&ListRequest::new()).unwrap();
    let before = reflector.stats().progress_requests;
    // Writes elsewhere move the revision; no change reaches the watch, so
    // only a progress notification lets the cache catch up.
    let target = source.advance_revision(1_000);
    let reflector = Arc::new(reflector);
    let readers: Vec<_> = (0..16)
        .map(|i| {
            let r = reflector.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    r.consistent_list(&ListRequest::new())
                        .map(|l| l.resource_version)
                } else {
                    r.consistent_get("ns/a").map(|g| g.resource_version)
                }
            })
        })
        .collect();
    for r in readers {
        assert!(r.join().unwrap().unwrap() >= target);
    }
    assert!(engine.resource_version() >= target);
    let requests = reflector.stats().progress_requests - before;
    assert!(
        (1..=8).contains(&requests),
        "16 waiting readers, {requests} progress requests"
    );
    // Nobody waits: no more requests.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(reflector.stats().progress_requests - before, requests);
}

#[test]
fn stopping_returns_the_writer_and_an_engine_stop_ends_the_reflector() {
    let source = MemorySource::new();
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    eventually("the first list", || engine.lifecycle() == Lifecycle::Ready);
    let mut writer = reflector.stop().expect("the writer comes back");
    writer.progress(5.into()).unwrap();
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    eventually("the first list", || engine.lifecycle() == Lifecycle::Ready);
    engine.stop();
    // The writer's calls now fail with `Stopped`: the reflector's thread
    // returns rather than backing off forever, and hands the writer back.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(reflector.stats().backoffs, 0);
    assert!(reflector.stop().is_some());
}

/// Issue 16, point 3: a watch or a read waiting for a version the cache has
/// not reached makes the reflector ask the source for progress, whatever
/// API the wait came from; so a version reached only through writes the
/// cache never sees (other resources) is reached, and the wait ends,
/// instead of timing out.
#[test]
fn waits_from_the_engine_itself_are_served_by_progress_requests() {
    let source = MemorySource::new();
    source.put(obj("a", "1"));
    let (engine, reflector) = start(&source, ReflectorConfig::default());
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    let before = reflector.stats().progress_requests;
    // Writes to other resources: the revision moves, no event comes.
    let future = source.advance_revision(5);
    assert!(future > listed.resource_version);
    let mut watch = engine
        .watch(WatchRequest::new().resource_version(Some(future)))
        .unwrap();
    // Activated through progress alone: nothing else moves the cache.
    eventually("the watch to start", || {
        let s = engine.stats();
        s.watchers_pending == 0 && s.watchers_active == 1
    });
    assert_eq!(engine.resource_version(), future);
    // A read waiting for a version is a waiter too.
    let further = source.advance_revision(3);
    let read = engine
        .list(&ListRequest::new().at(ReadAt::NotOlderThan(further)))
        .unwrap();
    assert_eq!(read.resource_version, further);
    assert!(reflector.stats().progress_requests >= before + 2);
    // The watch then follows the source from the version it asked for.
    let b = source.put(obj("b", "1"));
    let (seen, end) = recv_events(&mut watch, 1);
    assert_eq!(
        (seen[0].key.as_str(), seen[0].rv, end),
        ("ns/b", b.get(), None)
    );
}

/// Issue 18: a lost watch (a member restarted, the connection cut) is
/// resumed from the engine's version: no re-list, the engine stays ready
/// and its watchers keep going, with nothing lost or repeated.
#[test]
fn a_lost_watch_resumes_from_the_engines_version_without_a_relist() {
    let source = MemorySource::new();
    source.put(obj("a", "1"));
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: std::time::Duration::from_millis(20),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    };
    let (engine, reflector) = start(&source, config);
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    let mut running = engine
        .watch(WatchRequest::new().resource_version(Some(listed.resource_version)))
        .unwrap();
    let b = source.put(obj("b", "1"));
    source.go_down("etcd: member restarting");
    eventually("the watch lost", || reflector.stats().backoffs >= 1);
    assert_eq!(
        engine.lifecycle(),
        Lifecycle::Ready,
        "ready while it resumes"
    );
    let c = source.put(obj("c", "1"));
    source.recover();
    eventually("the watch resumed", || reflector.stats().resumes >= 1);
    let d = source.put(obj("d", "1"));
    let (seen, _) = recv_events(&mut running, 3);
    let got: Vec<_> = seen.iter().map(|s| (s.key.as_str(), s.rv)).collect();
    assert_eq!(
        got,
        [("ns/b", b.get()), ("ns/c", c.get()), ("ns/d", d.get())]
    );
    assert_eq!(running.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(reflector.stats().lists, 1);
    assert_eq!(engine.lifecycle(), Lifecycle::Ready);
}

/// Issue 16, point 4: while the reflector has neither a list nor a watch
/// (the source down, re-lists failing), the engine falls back to Pending:
/// reads at any version fail with `NotReady` carrying the retry-after hint
/// and the source's error, new watches wait, running watches keep running
/// and are told nothing false; the next list makes it ready again.
#[test]
fn an_outage_falls_back_to_pending_and_the_next_list_recovers() {
    let source = MemorySource::new();
    source.put(obj("a", "1"));
    source.put(obj("b", "1"));
    // A watch lost for longer than `resume_for` (here at once) is given up.
    let config = ReflectorConfig {
        resume_for: std::time::Duration::ZERO,
        ..ReflectorConfig::default()
    };
    let (engine, reflector) = start(&source, config);
    let listed = reflector.consistent_list(&ListRequest::new()).unwrap();
    assert_eq!(engine.lifecycle(), Lifecycle::Ready);
    let mut running = engine
        .watch(WatchRequest::new().resource_version(Some(listed.resource_version)))
        .unwrap();
    source.go_down("etcd: connection refused");
    eventually("the fall back to pending", || {
        engine.lifecycle() == Lifecycle::Pending
    });
    let Err(ReadError::NotReady(why)) = engine.list(&ListRequest::new()) else {
        panic!("a read at any version while the source is down")
    };
    assert_eq!(why.retry_after(), std::time::Duration::from_secs(1));
    let down = SourceError::Unavailable("etcd: connection refused".into());
    assert_eq!(why.cause(), Some(&down));
    assert!(why.to_string().contains("connection refused"), "{why}");
    // A new watch waits for the next list rather than serve a stale state.
    let mut new = engine.watch(WatchRequest::new()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(new.try_recv(), Err(TryRecvError::Empty));
    // The running watch is not ended, and nothing is invented for it.
    assert_eq!(running.try_recv(), Err(TryRecvError::Empty));
    let c = source.put(obj("c", "1"));
    source.recover();
    eventually("ready again", || engine.lifecycle() == Lifecycle::Ready);
    let now = engine.list(&ListRequest::new()).unwrap();
    assert_eq!(now.items.len(), 3);
    assert!(now.resource_version >= c);
    // The new watch begins at the new list; the running one ends with it.
    let (seen, _) = recv_events(&mut new, 3);
    let keys: Vec<_> = seen.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["ns/a", "ns/b", "ns/c"]);
    let (seen, end) = recv_to_end(&mut running);
    assert_eq!((seen.len(), end), (0, EndReason::Relisted));
}

/// A source whose progress notifications cannot be trusted (an etcd with
/// etcd#15220): the memory store, saying so, and sending none.
struct Untrusted(MemorySource);

impl Source for Untrusted {
    fn list(&self) -> Result<Listing, SourceError> {
        self.0.list()
    }
    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        self.0.watch(after)
    }
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        self.0.current_revision()
    }
    fn request_progress(&self) -> Result<(), SourceError> {
        panic!("progress asked of a source that said it cannot be trusted")
    }
    fn progress_is_reliable(&self) -> bool {
        false
    }
}

/// Issue 18: consistent reads on a source whose progress is not reliable
/// are read from the source (no progress asked, selectors applied, the
/// limit not), and plain reads stay the cache's.
#[test]
fn consistent_reads_read_through_a_source_whose_progress_is_not_reliable() {
    let source = MemorySource::new();
    for i in 0..5 {
        source.put(obj(&format!("o{i}"), "0"));
    }
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let reflector = Reflector::spawn(
        Arc::new(Untrusted(source.clone())),
        engine.clone(),
        writer,
        ReflectorConfig::default(),
    )
    .unwrap();
    // Other resources move the revision: the cache cannot get there.
    let moved = source.advance_revision(7);
    let list = reflector
        .consistent_list(&ListRequest::new().limit(2))
        .unwrap();
    assert_eq!((list.items.len(), list.resource_version), (5, moved));
    assert!(list.continue_token.is_none(), "read whole");
    let selected = reflector
        .consistent_list(&ListRequest::new().labels("v=1".parse().unwrap()))
        .unwrap();
    assert!(selected.items.is_empty());
    let put = source.put(obj("o9", "1"));
    let got = reflector.consistent_get("ns/o9").unwrap();
    assert_eq!(got.item.map(|i| i.resource_version), Some(put));
    assert_eq!(got.resource_version, put);
    assert!(reflector.consistent_get("ns/none").unwrap().item.is_none());
    assert_eq!(reflector.stats().progress_requests, 0);
    // The cache follows changes only; reads at any version are its own.
    eventually("the cache has o9", || engine.resource_version() == put);
    assert_eq!(engine.list(&ListRequest::new()).unwrap().items.len(), 6);
}

/// [`Untrusted`] that can read the past at its present revision only (as
/// a source whose `list_at` answers for what it still holds).
struct UntrustedWithPast(MemorySource);

impl Source for UntrustedWithPast {
    fn list(&self) -> Result<Listing, SourceError> {
        self.0.list()
    }
    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        self.0.watch(after)
    }
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        self.0.current_revision()
    }
    fn request_progress(&self) -> Result<(), SourceError> {
        panic!("progress asked of a source that said it cannot be trusted")
    }
    fn progress_is_reliable(&self) -> bool {
        false
    }
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        let now = self.0.list()?;
        Ok((now.revision == revision).then_some(now))
    }
}

/// Issue 33: on a source whose progress is not reliable (a resource the
/// apiserver does not cache), a list not older than a version the cache
/// has not reached is read from the source when the source has reached
/// it, and an exact list there when the source can read that version;
/// else each waits as any read and is too large.
#[test]
fn reads_past_the_cache_read_through_a_source_without_progress() {
    let source = MemorySource::new();
    for i in 0..3 {
        source.put(obj(&format!("o{i}"), "0"));
    }
    let config = Config::default().too_large_timeout(Duration::from_millis(300));
    let (engine, writer) = Engine::new(config).unwrap();
    let _reflector = Reflector::spawn(
        Arc::new(UntrustedWithPast(source.clone())),
        engine.clone(),
        writer,
        ReflectorConfig::default(),
    )
    .unwrap();
    eventually("listed", || engine.lifecycle() == Lifecycle::Ready);
    let cache = engine.resource_version();
    // Other resources move the revision: the cache cannot get there.
    let moved = source.advance_revision(7);
    assert!(moved > cache);
    let at = |r: ReadAt| engine.list(&ListRequest::new().at(r));
    let list = at(ReadAt::NotOlderThan(moved)).unwrap();
    assert_eq!((list.items.len(), list.resource_version), (3, moved));
    let list = at(ReadAt::Exact(moved)).unwrap();
    assert_eq!((list.items.len(), list.resource_version), (3, moved));
    // A version the source has not reached; one it cannot read.
    let future = ResourceVersion::new(moved.get() + 100);
    assert!(matches!(
        at(ReadAt::NotOlderThan(future)),
        Err(ReadError::TooLargeResourceVersion(_))
    ));
    let past = ResourceVersion::new(moved.get() - 1);
    assert!(matches!(
        at(ReadAt::Exact(past)),
        Err(ReadError::TooLargeResourceVersion(_))
    ));
    // At or below the cache's version: the cache's own.
    assert_eq!(
        at(ReadAt::NotOlderThan(cache)).unwrap().resource_version,
        cache
    );
}

/// A source whose first watch hands over a scripted run of results, all
/// ready at once (as the events of one etcd watch response are); its later
/// watches (the resume after the script's error) stay quiet. Lists come
/// from the memory store; the current revision is the script's last (a
/// source behind the cache would be re-listed, not resumed).
struct Scripted {
    store: MemorySource,
    script: std::sync::Mutex<Option<Vec<Result<SourceEvent, SourceError>>>>,
    current: ResourceVersion,
}

struct ScriptedWatch(std::collections::VecDeque<Result<SourceEvent, SourceError>>);

impl SourceWatch for ScriptedWatch {
    fn next(&mut self, timeout: Duration) -> Result<Option<SourceEvent>, SourceError> {
        match self.0.pop_front() {
            Some(r) => r.map(Some),
            None => {
                std::thread::sleep(timeout.min(Duration::from_millis(5)));
                Ok(None)
            }
        }
    }
}

impl Source for Scripted {
    fn list(&self) -> Result<Listing, SourceError> {
        self.store.list()
    }
    fn watch(&self, _after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        let script = self.script.lock().unwrap().take().unwrap_or_default();
        Ok(Box::new(ScriptedWatch(script.into())))
    }
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        Ok(self.current)
    }
    fn request_progress(&self) -> Result<(), SourceError> {
        Ok(())
    }
}

/// The reflector applies the changes its source holds ready as one batch
/// (`Writer::apply_batch`); what ends the batch, a progress notice or an
/// error, still takes effect after the batch's changes and before the
/// next ones. A progress notice applied out of order would be refused as
/// behind the engine (a re-list); an error before the changes would lose
/// them to the resume.
#[test]
fn ready_changes_go_in_as_a_batch_and_what_ends_it_comes_after() {
    let store = MemorySource::new();
    store.put(obj("a", "1"));
    let change = |kind, name: &str, rv: u64| {
        SourceEvent::Change(Change::new(kind, obj(name, "2"), rv.into()))
    };
    let script = vec![
        Ok(change(ChangeKind::Added, "b", 5)),
        Ok(change(ChangeKind::Added, "c", 6)),
        Ok(SourceEvent::Progress(8.into())),
        Ok(change(ChangeKind::Modified, "b", 9)),
        Ok(change(ChangeKind::Added, "d", 10)),
        Err(SourceError::Unavailable("the scripted stream broke".into())),
    ];
    let source = Scripted {
        store,
        script: std::sync::Mutex::new(Some(script)),
        current: 10.into(),
    };
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(5),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::spawn(Arc::new(source), engine.clone(), writer, config).unwrap();
    let mut w = engine
        .watch(WatchRequest::new().resource_version(Some(1.into())))
        .unwrap();
    let (seen, end) = recv_events(&mut w, 4);
    let got: Vec<_> = seen
        .iter()
        .map(|s| (s.kind, s.key.as_str(), s.rv))
        .collect();
    assert_eq!(
        (got, end),
        (
            vec![
                (EventKind::Added, "ns/b", 5),
                (EventKind::Added, "ns/c", 6),
                (EventKind::Modified, "ns/b", 9),
                (EventKind::Added, "ns/d", 10),
            ],
            None
        )
    );
    eventually("the watch resumed after the error", || {
        reflector.stats().resumes >= 1
    });
    assert_eq!(engine.resource_version().get(), 10);
    // No re-list: the progress notice went in between its neighbours.
    assert_eq!(reflector.stats().lists, 1);
    assert_quiet(&mut w);
}

/// The memory store with a watch window of its own (`floor`, as a
/// kube-apiserver's watch cache says), recording the revisions its first
/// list was asked to reach back to; it cannot read the past.
struct Windowed {
    store: MemorySource,
    floor: Result<Option<u64>, SourceError>,
    asked: std::sync::Mutex<Vec<u64>>,
}

impl Source for Windowed {
    fn list(&self) -> Result<Listing, SourceError> {
        self.store.list()
    }
    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        self.store.watch(after)
    }
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        self.store.current_revision()
    }
    fn request_progress(&self) -> Result<(), SourceError> {
        self.store.request_progress()
    }
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        self.asked.lock().unwrap().push(revision.get());
        Ok(None)
    }
    fn oldest_watchable(&self) -> Result<Option<ResourceVersion>, SourceError> {
        self.floor.clone().map(|f| f.map(ResourceVersion::new))
    }
}

/// A first list reaches back `backfill` revisions, but no further than
/// the source can watch from: not at all when its window begins at the
/// present, or when it cannot say where its window begins.
#[test]
fn the_backfill_reaches_back_no_further_than_the_source_can_watch() {
    // (the source's window, the backfill, the revisions list_at is asked)
    type Case = (Result<Option<u64>, SourceError>, u64, &'static [u64]);
    let cases: [Case; 5] = [
        (Ok(None), 1_000, &[1]),
        (Ok(Some(60)), 1_000, &[60]),
        (Ok(Some(5)), 10, &[90]),
        (Ok(Some(100)), 1_000, &[]),
        (Err(SourceError::Unavailable("refused".into())), 1_000, &[]),
    ];
    for (floor, backfill, want) in cases {
        let store = MemorySource::new();
        store.put(obj("a", "0"));
        store.advance_revision(99);
        assert_eq!(store.current_revision().unwrap().get(), 100);
        let source = Arc::new(Windowed {
            store,
            floor: floor.clone(),
            asked: Default::default(),
        });
        let (engine, writer) = Engine::new(Config::default()).unwrap();
        let config = ReflectorConfig {
            backfill,
            ..ReflectorConfig::default()
        };
        let reflector = Reflector::spawn(source.clone(), engine.clone(), writer, config).unwrap();
        eventually("listed", || engine.lifecycle() == Lifecycle::Ready);
        assert_eq!(
            &source.asked.lock().unwrap()[..],
            want,
            "window from {floor:?}"
        );
        // Listed at the present either way (this source reads no past).
        assert_eq!(engine.resource_version().get(), 100);
        assert_eq!(reflector.stats().backfills, 0);
    }
}
