//! The local etcd launcher: a single member survives `kill -9` and a restart
//! on its data directory; a three-member cluster elects a new leader when
//! its leader is killed; the old binary is etcd 3.4.
//!
//! These need the etcd binaries (`eval "$(scripts/ensure-etcd.sh)"`); when
//! one is missing they fail with the launcher's message, never skip.

use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};
use herald_testkit::etcd::{
    EtcdBinary, LocalCluster, LocalError, LocalEtcd, MIN_ETCD_VERSION, etcd_binary, old_etcd_binary,
};

/// The value, or a test failure with the launcher's message.
fn must<T>(result: Result<T, LocalError>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{e}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn connect(endpoints: &[String]) -> Result<Client, etcd_client::Error> {
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(3));
    Client::connect(endpoints, Some(options)).await
}

/// The value of `key`, through a fresh client to `endpoints`.
async fn get(endpoints: &[String], key: &str) -> Option<String> {
    let mut client = connect(endpoints).await.expect("connect to etcd");
    let response = client.get(key, None).await.expect("get");
    response
        .kvs()
        .first()
        .map(|kv| kv.value_str().expect("utf-8 value").to_owned())
}

/// Puts `key` through `endpoints`, retrying (an election may be under way)
/// until `deadline`.
async fn put_until(endpoints: &[String], key: &str, value: &str, deadline: Instant) {
    loop {
        let error = match connect(endpoints).await {
            Ok(mut client) => match client.put(key, value, None).await {
                Ok(_) => return,
                Err(e) => e,
            },
            Err(e) => e,
        };
        assert!(
            Instant::now() < deadline,
            "put {key} through {endpoints:?}: {error}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Put, get, kill -9, restart, get again.
fn survives_kill_and_restart(bin: &EtcdBinary) {
    let started = Instant::now();
    let mut etcd = must(LocalEtcd::start(bin));
    let endpoint = vec![etcd.endpoint()];
    assert!(etcd.endpoint().starts_with("http://127.0.0.1:"));
    assert!(etcd.data_dir().is_dir());
    let data_dir = etcd.data_dir().to_path_buf();
    let rt = runtime();

    rt.block_on(async {
        let mut client = connect(&endpoint).await.expect("connect");
        client.put("herald/k", "v1", None).await.expect("put");
        assert_eq!(get(&endpoint, "herald/k").await.as_deref(), Some("v1"));
    });

    let pid = etcd.pid().expect("a pid");
    assert!(etcd.is_running());
    etcd.kill();
    assert!(!etcd.is_running());
    assert_eq!(etcd.pid(), None);
    etcd.kill(); // killing a dead member is a no-op

    must(etcd.restart());
    assert!(etcd.is_running());
    assert_ne!(etcd.pid(), Some(pid));
    assert_eq!(etcd.endpoint(), endpoint[0], "same port after a restart");
    assert_eq!(etcd.data_dir(), data_dir);
    rt.block_on(async {
        assert_eq!(get(&endpoint, "herald/k").await.as_deref(), Some("v1"));
        put_until(&endpoint, "herald/k", "v2", Instant::now()).await;
        assert_eq!(get(&endpoint, "herald/k").await.as_deref(), Some("v2"));
    });

    drop(etcd);
    assert!(!data_dir.exists(), "the data directory is removed on drop");
    eprintln!("etcd {:?}: {:?}", bin.version(), started.elapsed());
}

#[test]
fn single_member_survives_kill_and_restart() {
    let bin = must(etcd_binary());
    assert!(bin.version() >= MIN_ETCD_VERSION, "{bin:?}");
    survives_kill_and_restart(&bin);
}

#[test]
fn old_binary_is_etcd_3_4_and_runs() {
    let bin = must(old_etcd_binary());
    let (major, minor, _) = bin.version();
    assert_eq!((major, minor), (3, 4), "{bin:?}");
    survives_kill_and_restart(&bin);
}

#[test]
fn three_member_cluster_elects_a_new_leader() {
    let started = Instant::now();
    let bin = must(etcd_binary());
    let mut cluster = must(LocalCluster::start(&bin, 3));
    assert_eq!(cluster.member_count(), 3);
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    for (i, endpoint) in endpoints.iter().enumerate() {
        assert_eq!(&cluster.member_endpoint(i), endpoint);
        assert!(cluster.is_running(i));
    }
    let rt = runtime();
    rt.block_on(async {
        for (i, endpoint) in endpoints.iter().enumerate() {
            let one = std::slice::from_ref(endpoint);
            put_until(one, &format!("herald/m{i}"), "x", Instant::now()).await;
        }
    });
    let healthy = started.elapsed();

    let leader = must(cluster.leader());
    assert!(leader < 3);
    assert_eq!(must(cluster.leader()), leader, "a stable leader");
    cluster.kill(leader);
    assert!(!cluster.is_running(leader));
    let killed = Instant::now();
    let new_leader = must(cluster.leader());
    let election = killed.elapsed();
    assert_ne!(new_leader, leader);
    assert!(cluster.is_running(new_leader));
    assert!(election < Duration::from_secs(10), "{election:?}");

    let others: Vec<String> = (0..3)
        .filter(|&i| i != leader)
        .map(|i| cluster.member_endpoint(i))
        .collect();
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        put_until(&others, "herald/after", "y", deadline).await;
        for endpoint in &others {
            let one = std::slice::from_ref(endpoint);
            assert_eq!(get(one, "herald/after").await.as_deref(), Some("y"));
        }
    });

    // The old leader comes back on its data directory and catches up.
    must(cluster.restart(leader));
    assert!(cluster.is_running(leader));
    rt.block_on(async {
        let one = [cluster.member_endpoint(leader)];
        assert_eq!(get(&one, "herald/after").await.as_deref(), Some("y"));
        assert_eq!(get(&one, "herald/m0").await.as_deref(), Some("x"));
    });
    assert!(cluster.leader().is_ok());
    assert!(matches!(
        cluster.restart(3),
        Err(LocalError::NoSuchMember {
            index: 3,
            members: 3
        })
    ));
    eprintln!(
        "cluster healthy after {healthy:?}, new leader {election:?} after the kill, \
         total {:?}",
        started.elapsed()
    );
}

#[test]
fn a_missing_binary_is_an_error_that_says_how_to_install() {
    let error = EtcdBinary::at("/nonexistent/herald/etcd").expect_err("no such binary");
    assert!(matches!(error, LocalError::Unusable { .. }), "{error:?}");
    assert!(
        error.to_string().contains("scripts/ensure-etcd.sh"),
        "{error}"
    );
    assert!(matches!(
        LocalCluster::start(&must(etcd_binary()), 0),
        Err(LocalError::NoMembers)
    ));
}
