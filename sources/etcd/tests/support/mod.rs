//! Shared support for the tests against a real etcd: a client, writers,
//! etcd's own history, and what an engine's watcher saw.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{Client, EventType, GetOptions, WatchOptions};
use herald::event::ChangeKind;
use herald::object::Item;
use herald::reflector::{BackoffConfig, Reflector, ReflectorConfig};
use herald::*;
use herald_etcd::{EtcdConfig, EtcdSource};
use herald_kube::Decoder;

pub const PREFIX: &str = "/registry/pods/";

/// A runtime for the test's own etcd client (the source has its own).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub fn client(rt: &tokio::runtime::Runtime, endpoints: &[String]) -> Client {
    rt.block_on(Client::connect(endpoints, None)).unwrap()
}

/// A pod as the apiserver stores it (JSON).
pub fn pod_json(ns: &str, name: &str, app: &str, node: &str, n: u64) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}","labels":{{"app":"{app}"}}}},"spec":{{"nodeName":"{node}"}},"status":{{"phase":"Running","n":{n}}}}}"#
    )
}

pub fn decoder() -> Decoder {
    Decoder::new().field("spec.nodeName").field("status.phase")
}

pub fn source(endpoints: Vec<String>) -> EtcdSource {
    EtcdSource::connect(EtcdConfig::new(endpoints, PREFIX).decoder(decoder())).unwrap()
}

/// A reflector config that resumes quickly (tests wait for it).
pub fn quick() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(2),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

pub fn engine_on(source: &EtcdSource, config: ReflectorConfig) -> (Engine, Reflector) {
    let (engine, writer) = Engine::new(Config::default().history_bounds(1 << 15, 1 << 17)).unwrap();
    let reflector =
        Reflector::spawn(Arc::new(source.clone()), engine.clone(), writer, config).unwrap();
    (engine, reflector)
}

/// Puts with retries: through an outage, until etcd takes the write.
/// Returns the revision.
pub async fn put(client: &mut Client, key: &str, value: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match tokio::time::timeout(Duration::from_secs(2), client.put(key, value, None)).await {
            Ok(Ok(r)) => return r.header().unwrap().revision(),
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            other => panic!("put {key}: {other:?}"),
        }
    }
}

pub async fn delete(client: &mut Client, key: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match tokio::time::timeout(Duration::from_secs(2), client.delete(key, None)).await {
            Ok(Ok(r)) => return r.header().unwrap().revision(),
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            other => panic!("delete {key}: {other:?}"),
        }
    }
}

/// Writers that put, modify and delete pods under the prefix until told
/// to stop; each write retried through outages.
pub struct Writers {
    stop: Arc<AtomicBool>,
    pub writes: Arc<AtomicU64>,
    handles: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    pub fn start(
        rt: &tokio::runtime::Runtime,
        endpoints: &[String],
        n: usize,
        keys: u64,
    ) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let writes = Arc::new(AtomicU64::new(0));
        let handles = (0..n)
            .map(|w| {
                let mut c = client(rt, endpoints);
                let (stop, writes) = (stop.clone(), writes.clone());
                rt.spawn(async move {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (w as u64 + 1);
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let k = x % keys;
                        let ns = format!("ns-{}", k % 4);
                        let key = format!("{PREFIX}{ns}/w{w}-{k}");
                        if x % 5 == 0 {
                            delete(&mut c, &key).await;
                        } else {
                            let app = ["web", "api", "db"][(x % 3) as usize];
                            let v =
                                pod_json(&ns, &format!("w{w}-{k}"), app, &format!("n{}", x % 7), i);
                            put(&mut c, &key, &v).await;
                        }
                        i += 1;
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        Writers {
            stop,
            writes,
            handles,
        }
    }

    pub fn wait_for(&self, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.writes.load(Ordering::Relaxed) < n {
            assert!(Instant::now() < deadline, "writers stalled");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn stop(self, rt: &tokio::runtime::Runtime) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            rt.block_on(h).unwrap();
        }
    }
}

/// One change as both sides name it: kind, key under the prefix, revision.
pub type Seen = (ChangeKind, String, u64);

/// etcd's own history of the prefix after `after` up to `upto`, read with
/// a fresh watch (kind from the create revision, as the source does).
pub fn etcd_history(
    rt: &tokio::runtime::Runtime,
    c: &mut Client,
    after: u64,
    upto: u64,
) -> Vec<Seen> {
    rt.block_on(async {
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(after as i64 + 1)
            .with_prev_key();
        let mut stream = c.watch(PREFIX, Some(options)).await.unwrap();
        let mut out = Vec::new();
        if upto <= after {
            return out;
        }
        loop {
            let resp = tokio::time::timeout(Duration::from_secs(20), stream.message())
                .await
                .expect("etcd's history in time")
                .unwrap()
                .expect("a watch response");
            assert!(
                !resp.canceled(),
                "history watch cancelled: {}",
                resp.cancel_reason()
            );
            for e in resp.events() {
                let kv = e.kv().unwrap();
                let rev = kv.mod_revision() as u64;
                if rev > upto {
                    return out;
                }
                let key = String::from_utf8(kv.key()[PREFIX.len()..].to_vec()).unwrap();
                let kind = match e.event_type() {
                    EventType::Delete => ChangeKind::Deleted,
                    EventType::Put if kv.create_revision() == kv.mod_revision() => {
                        ChangeKind::Added
                    }
                    EventType::Put => ChangeKind::Modified,
                };
                out.push((kind, key, rev));
                if rev == upto {
                    return out;
                }
            }
        }
    })
}

/// The prefix as etcd holds it now: key -> mod revision, and the revision.
pub fn etcd_state(rt: &tokio::runtime::Runtime, c: &mut Client) -> (BTreeMap<String, u64>, u64) {
    rt.block_on(async {
        let r = c
            .get(
                PREFIX,
                Some(GetOptions::new().with_prefix().with_keys_only()),
            )
            .await
            .unwrap();
        let state = r
            .kvs()
            .iter()
            .map(|kv| {
                (
                    String::from_utf8(kv.key()[PREFIX.len()..].to_vec()).unwrap(),
                    kv.mod_revision() as u64,
                )
            })
            .collect();
        (state, r.header().unwrap().revision() as u64)
    })
}

/// The last revision of a change under the prefix, at or below `now`.
pub fn last_prefix_revision(
    rt: &tokio::runtime::Runtime,
    c: &mut Client,
    after: u64,
    now: u64,
) -> u64 {
    etcd_history(rt, c, after, now)
        .last()
        .map_or(after, |s| s.2)
}

pub fn engine_state(items: &[Item]) -> BTreeMap<String, u64> {
    items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect()
}

/// Receives a watch's changes until one at `upto` or later (or its end).
pub fn collect(w: &mut Watch, upto: u64) -> (Vec<Seen>, Option<EndReason>) {
    collect_until(w, |s| s.2 >= upto)
}

/// Receives `n` changes (or up to the watch's end).
pub fn collect_n(w: &mut Watch, n: usize) -> (Vec<Seen>, Option<EndReason>) {
    if n == 0 {
        return (Vec::new(), None);
    }
    let mut count = 0;
    collect_until(w, |_| {
        count += 1;
        count == n
    })
}

/// Receives changes until none comes for `quiet` (the watcher has caught
/// up: the caller knows the engine reached the end first).
pub fn collect_quiet(w: &mut Watch, quiet: Duration) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(WatchItem::Event(e)) = w.recv_timeout(quiet) {
        out.push(e);
    }
    out
}

/// Receives changes until `last` says one was the last (or the end).
pub fn collect_until(
    w: &mut Watch,
    mut last: impl FnMut(&Seen) -> bool,
) -> (Vec<Seen>, Option<EndReason>) {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match w.recv_timeout(left) {
            Ok(WatchItem::Event(e)) => {
                let kind = match e.kind() {
                    EventKind::Added => ChangeKind::Added,
                    EventKind::Modified => ChangeKind::Modified,
                    EventKind::Deleted => ChangeKind::Deleted,
                    _ => continue,
                };
                let rv = e.resource_version().get();
                out.push((kind, e.object().unwrap().key().to_owned(), rv));
                if last(out.last().unwrap()) {
                    return (out, None);
                }
            }
            Ok(WatchItem::End(reason)) => return (out, Some(reason)),
            Err(e) => {
                eprintln!(
                    "a watch stopped at {}: {e:?}",
                    out.last().map_or(0, |s| s.2)
                );
                return (out, None);
            }
        }
    }
}

/// Asserts two streams are equal, showing where they part.
pub fn assert_same(seen: &[Seen], expected: &[Seen], what: &str) {
    if seen == expected {
        return;
    }
    let at = seen
        .iter()
        .zip(expected)
        .take_while(|(a, b)| a == b)
        .count();
    let lo = at.saturating_sub(3);
    panic!(
        "{what}: the streams part at {at} (seen {}, expected {}):\n seen {:?}\n expected {:?}",
        seen.len(),
        expected.len(),
        &seen[lo..(at + 3).min(seen.len())],
        &expected[lo..(at + 3).min(expected.len())]
    );
}
