//! Several resources of one cluster through one connection: an
//! [`EtcdCluster`] on a runtime it is given (it builds none of its own),
//! three sources of three prefixes made from it, each feeding its own
//! engine. Each engine holds its own prefix's objects and no other's, each
//! follows its prefix's writes, a consistent read of each reaches etcd's
//! revision through progress asked on its own watch, and the process
//! holds one TCP connection to etcd for the three (the old
//! `EtcdSource::connect` per resource held one each, on a runtime each).
//!
//! One test, in a binary of its own: it counts the process's threads and
//! sockets, which tests running beside it would change.

mod support;

use std::collections::{BTreeSet, HashSet};

use herald::engine::Lifecycle;
use herald::read::ListRequest;
use herald::*;
use herald_etcd::{Bridge, ClusterConfig, ConnectError, EtcdCluster};
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use herald_testkit::eventually;
use support::*;

const PREFIXES: [&str; 3] = [
    "/registry/pods/",
    "/registry/configmaps/",
    "/registry/secrets/",
];

/// This process's established TCP connections to `port` on loopback.
fn connections_to(port: u16) -> usize {
    let ours: HashSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_string_lossy();
            Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut n = 0;
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st ... inode (the tenth column).
            let remote = f[2].rsplit(':').next().unwrap_or_default();
            let established = f[3] == "01";
            if established && u16::from_str_radix(remote, 16) == Ok(port) && ours.contains(f[9]) {
                n += 1;
            }
        }
    }
    n
}

/// This process's threads named `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// The keys an engine holds now.
fn keys(engine: &Engine) -> BTreeSet<String> {
    engine
        .list(&ListRequest::new())
        .unwrap()
        .items
        .iter()
        .map(|i| i.object.key().to_owned())
        .collect()
}

#[test]
fn three_resources_share_one_connection_on_a_runtime_they_were_given() {
    let bin = etcd_binary().unwrap_or_else(|e| panic!("NO ETCD: {e}"));
    let etcd = LocalEtcd::start(&bin).unwrap_or_else(|e| panic!("etcd did not start: {e}"));
    let endpoints = vec![etcd.endpoint()];
    let port: u16 = endpoints[0].rsplit(':').next().unwrap().parse().unwrap();
    let rt = runtime();
    let mut c = client(&rt, &endpoints);
    for p in PREFIXES {
        rt.block_on(put(
            &mut c,
            &format!("{p}ns/a"),
            &pod_json("ns", "a", "web", "n1", 0),
        ));
    }
    // The test's own client is connected now: the rest is the sources'.
    let before = connections_to(port);
    assert!(before >= 1, "the test's client holds a connection");

    // The embedder's runtime, handed to the cluster.
    let upstreams = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("test-upstreams")
        .enable_all()
        .build()
        .unwrap();
    let bridge = Bridge::from_handle(upstreams.handle().clone()).unwrap();
    let cluster =
        EtcdCluster::connect_on(ClusterConfig::new(endpoints.clone()), bridge.clone()).unwrap();
    assert!(cluster.bridge().same(&bridge));
    assert!(!cluster.bridge().owns_runtime());
    assert_eq!(
        threads_named("herald-etcd"),
        0,
        "it built a runtime of its own"
    );
    assert!(
        cluster.progress_trusted(),
        "{:?}",
        cluster.progress_distrust()
    );
    // A prefix that would take in another resource's keys is refused.
    assert!(matches!(
        cluster.source("/registry/pods", decoder()),
        Err(ConnectError::Config(_))
    ));

    let sources: Vec<_> = PREFIXES
        .iter()
        .map(|p| cluster.source(p, decoder()).unwrap())
        .collect();
    let on: Vec<_> = sources.iter().map(|s| engine_on(s, quick())).collect();
    for (engine, _) in &on {
        eventually("each engine lists its prefix", || {
            engine.lifecycle() == Lifecycle::Ready
        });
        assert_eq!(keys(engine), BTreeSet::from(["ns/a".to_owned()]));
    }

    // Writes to each prefix reach its engine only.
    let mut last = 0;
    for (i, p) in PREFIXES.iter().enumerate() {
        let name = format!("only-{i}");
        last = rt.block_on(put(
            &mut c,
            &format!("{p}ns/{name}"),
            &pod_json("ns", &name, "web", "n1", 1),
        ));
    }
    last = last.max(rt.block_on(delete(&mut c, &format!("{}ns/a", PREFIXES[2]))));
    for (i, (engine, _)) in on.iter().enumerate() {
        let mut want = BTreeSet::from([format!("ns/only-{i}")]);
        if i != 2 {
            want.insert("ns/a".to_owned());
        }
        eventually("each engine follows its own prefix", || {
            keys(engine) == want
        });
    }

    // A consistent read of each reaches etcd's revision (past writes to
    // the other prefixes): progress asked on each source's own watch.
    for (i, (engine, reflector)) in on.iter().enumerate() {
        let list = reflector.consistent_list(&ListRequest::new()).unwrap();
        assert!(
            list.resource_version.get() >= last as u64,
            "{}: {} < {last}",
            PREFIXES[i],
            list.resource_version
        );
        assert!(engine.resource_version().get() >= list.resource_version.get());
        let stats = sources[i].stats();
        assert!(stats.watches_opened >= 1, "{}: {stats:?}", PREFIXES[i]);
    }
    assert!(
        sources.iter().any(|s| s.stats().progress_passed >= 1),
        "no progress passed on"
    );

    // One connection for the three (the version check's own, one an
    // endpoint, close once it has answered).
    eventually("the sources hold one connection", || {
        connections_to(port) == before + 1
    });
    assert_eq!(threads_named("herald-etcd"), 0);

    drop(on);
    drop(sources);
    drop(cluster);
    // The runtime was lent, not given away: it still runs.
    assert_eq!(
        upstreams
            .block_on(bridge.spawn(async { "still running" }))
            .unwrap(),
        "still running"
    );
    drop(c);
    drop(rt);
    drop(etcd);
}
