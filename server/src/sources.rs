//! Resources fed by a source: the embedded in-memory source (with the
//! demo's changing pods), a kube-apiserver, or, in a build with the
//! `etcd` feature (the default), an etcd cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use herald::reflector::{Reflector, ReflectorConfig};
use herald::source::{MemorySource, Source};
use herald::{Config, Engine, Object};
use herald_apiserver::ApiServer;
#[cfg(feature = "etcd")]
use herald_etcd::EtcdCluster;
#[cfg(feature = "etcd")]
use herald_kube::Keyring;
use herald_kube::ResourceInfo;
use herald_kube::{Decoder, UndecodableReport};

use crate::resource::{Resource, SourceHealth};

/// How many of the upstream's revisions back a resource's first list
/// reaches ([`ReflectorConfig::backfill`]): 10,000, minutes of a busy
/// cluster's writes, less than the apiserver's compaction (every 5
/// minutes) usually leaves. On the apiserver upstream, no further back
/// than its watch cache's window (`Source::oldest_watchable`).
pub const HISTORY_BACKFILL: u64 = 10_000;

/// An engine for `info` fed by `source` through a reflector. Pods get a
/// trigger index on `spec.nodeName` (the kubelet's watch).
pub fn resource_on(
    info: ResourceInfo,
    source: Arc<dyn Source>,
) -> Result<Resource, Box<dyn std::error::Error + Send + Sync>> {
    resource_with(info, source, Config::default(), ReflectorConfig::default())
}

/// [`resource_on`] with the engine's `config` and the reflector's.
fn resource_with(
    info: ResourceInfo,
    source: Arc<dyn Source>,
    mut config: Config,
    reflector: ReflectorConfig,
) -> Result<Resource, Box<dyn std::error::Error + Send + Sync>> {
    if info.plural == "pods" {
        config = config.index("spec.nodeName");
    }
    let (engine, writer) = Engine::new(config)?;
    let reflector = Reflector::spawn(source, engine.clone(), writer, reflector)?;
    Ok(Resource::new(info, engine, Some(reflector)))
}

/// A resource read from etcd through `cluster` (one connection, shared
/// by every resource of the cluster): keys under `prefix` (the
/// apiserver's `/registry/pods/`), values decoded with `fields`. Only in a
/// build with the `etcd` feature (the default).
#[cfg(feature = "etcd")]
pub fn etcd_resource(
    info: ResourceInfo,
    cluster: &EtcdCluster,
    prefix: &str,
    fields: &[String],
) -> Result<Resource, Box<dyn std::error::Error + Send + Sync>> {
    etcd_resource_with(info, cluster, prefix, fields, None, HISTORY_BACKFILL)
}

/// [`etcd_resource`], its values encrypted at rest decrypted with
/// `keyring` (the apiserver's `--encryption-provider-config`), under the
/// resource's group-qualified name (`secrets`, `deployments.apps`) as
/// that file names resources; its first list reaching `backfill`
/// revisions back ([`ReflectorConfig::backfill`], [`HISTORY_BACKFILL`]).
#[cfg(feature = "etcd")]
pub fn etcd_resource_with(
    info: ResourceInfo,
    cluster: &EtcdCluster,
    prefix: &str,
    fields: &[String],
    keyring: Option<Arc<Keyring>>,
    backfill: u64,
) -> Result<Resource, Box<dyn std::error::Error + Send + Sync>> {
    let mut decoder = decoder_for(&info, fields);
    if let Some(keyring) = keyring {
        decoder = decoder.keyring(&info.qualified(), prefix, keyring);
    }
    let source = cluster.source(prefix, decoder)?;
    let report = source.clone();
    let health = Arc::new(Undecodable(move || report.undecodable()));
    let reflector = ReflectorConfig {
        backfill,
        ..ReflectorConfig::default()
    };
    let resource = resource_with(
        info.with_fields(fields),
        Arc::new(source),
        Config::default(),
        reflector,
    )?;
    Ok(resource.with_health(health))
}

/// A decoder taking `fields` (field selectors' names) from where the
/// resource's objects hold them.
fn decoder_for(info: &ResourceInfo, fields: &[String]) -> Decoder {
    let mut decoder = Decoder::new();
    for f in fields {
        let (paths, default) = herald_kube::builtin::field_source(info, f);
        decoder = decoder.field_from(f, &paths, default);
    }
    decoder
}

/// A resource read through a kube-apiserver (`apiserver`, connected
/// once and shared by every resource), objects decoded with `fields`; its
/// first list reaching `backfill` revisions back, within the apiserver's
/// watch cache ([`ReflectorConfig::backfill`], [`HISTORY_BACKFILL`]).
pub fn apiserver_resource(
    info: ResourceInfo,
    apiserver: &ApiServer,
    fields: &[String],
    backfill: u64,
) -> Result<Resource, Box<dyn std::error::Error + Send + Sync>> {
    let source = apiserver.source(&info, decoder_for(&info, fields));
    let report = source.clone();
    let health = Arc::new(Undecodable(move || report.undecodable()));
    // A version the cache has not reached is waited for 10 s, not the
    // apiserver's 3: progress comes from the apiserver's bookmarks, up to
    // about 3 s late (a consistent watch-list waits for one).
    let config = Config::default().too_large_timeout(std::time::Duration::from_secs(10));
    let reflector = ReflectorConfig {
        backfill,
        ..ReflectorConfig::default()
    };
    let resource = resource_with(
        info.with_fields(fields),
        Arc::new(source),
        config,
        reflector,
    )?;
    Ok(resource.with_health(health))
}

/// A source's report of what it could not decode, asked afresh each
/// time (`EtcdSource::undecodable`, `ApiServerSource::undecodable`).
struct Undecodable<F>(F);

impl<F> std::fmt::Debug for Undecodable<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Undecodable")
    }
}

impl<F: Fn() -> UndecodableReport + Send + Sync> SourceHealth for Undecodable<F> {
    fn undecodable_now(&self) -> u64 {
        (self.0)().now
    }

    fn undecodable_by_reason(&self) -> Vec<(&'static str, u64)> {
        (self.0)().by_reason
    }

    fn last_undecodable(&self) -> Option<(String, String)> {
        (self.0)().last
    }
}

/// A demo pod as the apiserver stores one (JSON), at version `rv`.
pub fn demo_pod(i: usize, rv: u64, generation: u64) -> Object {
    let ns = format!("demo-{}", i % 10);
    let name = format!("pod-{i:05}");
    let node = format!("node-{}", i % 50);
    let phases = ["Pending", "Running", "Running", "Running", "Succeeded"];
    let phase = phases[(generation as usize + i) % phases.len()];
    let ready = phase == "Running";
    let restarts = generation / phases.len() as u64;
    let payload = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "resourceVersion": rv.to_string(),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": format!("app-{}", i % 7), "demo": "true"},
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
        "status": {
            "phase": phase,
            "startTime": "2026-01-01T00:00:00Z",
            "containerStatuses": [{
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "imageID": "",
                "ready": ready,
                "started": ready,
                "restartCount": restarts,
                "state": if ready { serde_json::json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}) } else { serde_json::json!({"waiting": {"reason": phase}}) },
            }],
        },
    });
    Object::builder(&ns, &name)
        .label("app", &format!("app-{}", i % 7))
        .label("demo", "true")
        .field("spec.nodeName", &node)
        .field("status.phase", phase)
        .payload(serde_json::to_vec(&payload).unwrap_or_default())
        .build()
}

/// The demo: an in-memory source of `pods` pods that change at `rate`
/// changes per second (each change moves one pod to its next phase), until
/// dropped.
#[derive(Debug)]
pub struct Demo {
    source: MemorySource,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Demo {
    /// Seeds the source and starts changing it. Each pod's
    /// `metadata.resourceVersion` is the revision its put gets
    /// ([`MemorySource::put_with`]).
    /// Fails only if its thread cannot be started.
    pub fn start(pods: usize, rate: f64) -> std::io::Result<Demo> {
        let source = MemorySource::new();
        for i in 0..pods {
            source.put_with(|rv| demo_pod(i, rv.get(), 0));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = if pods > 0 && rate > 0.0 {
            let (source, stop) = (source.clone(), stop.clone());
            Some(
                std::thread::Builder::new()
                    .name("herald-demo".into())
                    .spawn(move || change(&source, pods, rate, &stop))?,
            )
        } else {
            None
        };
        Ok(Demo {
            source,
            stop,
            thread,
        })
    }

    /// The source.
    pub fn source(&self) -> &MemorySource {
        &self.source
    }
}

/// Changes the demo's source keeps behind its head; older ones are
/// compacted away (as the apiserver compacts etcd), so a demo left
/// running at thousands of changes a second does not grow for ever.
pub(crate) const DEMO_KEEP: u64 = 20_000;

fn change(source: &MemorySource, pods: usize, rate: f64, stop: &AtomicBool) {
    let every = Duration::from_secs_f64(1.0 / rate);
    let mut next = Instant::now();
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let i = (n.wrapping_mul(7919) % pods as u64) as usize;
        let generation = n / pods as u64 + 1;
        let rv = source.put_with(|rv| demo_pod(i, rv.get(), generation));
        if n.is_multiple_of(1024) && rv.get() > DEMO_KEEP {
            source.compact((rv.get() - DEMO_KEEP).into());
        }
        n += 1;
        next += every;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > Duration::from_secs(1) {
            // Fell behind (a stalled machine): do not burst to catch up.
            next = now;
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_pods_carry_their_version_and_move() {
        let demo = Demo::start(20, 0.0).unwrap();
        let listing = demo.source().list().unwrap();
        assert_eq!(listing.items.len(), 20);
        for item in &listing.items {
            let v: serde_json::Value = serde_json::from_slice(item.object.payload()).unwrap();
            assert_eq!(
                v["metadata"]["resourceVersion"],
                item.resource_version.get().to_string()
            );
            assert_eq!(v["metadata"]["name"], item.object.name());
        }
        let a = demo_pod(3, 9, 0);
        // Compacted as it goes: a demo at full speed keeps DEMO_KEEP
        // changes behind its head, not every change it made.
        let fast = Demo::start(10, 1e9).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let at = |d: &Demo| d.source().current_revision().map_or(0, |r| r.get());
        while at(&fast) < 3 * DEMO_KEEP {
            assert!(Instant::now() < deadline, "the demo did not move");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(matches!(
            fast.source().watch(1.into()).map(drop),
            Err(herald::source::SourceError::Compacted { .. })
        ));
        let b = demo_pod(3, 10, 1);
        assert_ne!(a.field("status.phase"), b.field("status.phase"));
    }
}
