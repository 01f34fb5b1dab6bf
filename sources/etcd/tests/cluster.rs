//! Scale-out the Kubernetes way: two Herald engines, each with its own
//! reflector, behind one 3-member etcd cluster on loopback. At any
//! revision both answer the same list; their watchers get the same
//! sequence, which is etcd's own history; killing every member in turn
//! (the leader first) while writes go on breaks each engine's etcd watch
//! and loses nothing: every engine resumes without a re-list and
//! converges, and every watcher's stream stays gap-free, or ends with a
//! reason.

mod support;

use herald::read::{ListRequest, ReadAt};
use herald::*;
use herald_testkit::etcd::{LocalCluster, etcd_binary};
use support::*;

#[test]
fn two_engines_behind_a_three_member_cluster_agree_through_member_kills() {
    let bin = etcd_binary().unwrap_or_else(|e| panic!("NO ETCD: {e}"));
    let mut cluster = LocalCluster::start(&bin, 3).unwrap();
    let endpoints = cluster.endpoints();
    let rt = runtime();
    let mut c = client(&rt, &endpoints);
    for i in 0..200 {
        let ns = format!("ns-{}", i % 4);
        rt.block_on(put(
            &mut c,
            &format!("{PREFIX}{ns}/seed-{i}"),
            &pod_json(&ns, &format!("seed-{i}"), "web", "n1", i),
        ));
    }
    let mut reversed = endpoints.clone();
    reversed.reverse();
    let engines: Vec<_> = [endpoints.clone(), reversed]
        .into_iter()
        .map(|e| {
            let source = source(e);
            let (engine, reflector) = engine_on(&source, quick());
            (source, engine, reflector)
        })
        .collect();
    // Both consistent, with no write in between: both at etcd's revision.
    let (_, start) = etcd_state(&rt, &mut c);
    for (_, engine, reflector) in &engines {
        let list = reflector.consistent_list(&ListRequest::new()).unwrap();
        assert!(list.resource_version.get() >= start);
        assert_eq!(list.items.len(), 200);
        assert_eq!(engine.resource_version(), list.resource_version);
    }
    let start = ResourceVersion::new(start);
    let mut watches: Vec<_> = engines
        .iter()
        .map(|(_, engine, _)| {
            engine
                .watch(WatchRequest::new().resource_version(Some(start)))
                .unwrap()
        })
        .collect();
    let writers = Writers::start(&rt, &endpoints, 3, 300);
    writers.wait_for(300);
    // Kill every member in turn, the leader first, while the writers go on;
    // bring each back before the next. A watch stays on the member it was
    // opened on until that member dies (a watch on a follower outlives a
    // leader kill), so killing every member is what makes each engine lose
    // its watch at least once, whichever member its balancer picked.
    let first = cluster.leader().unwrap();
    let order: Vec<usize> = std::iter::once(first)
        .chain((0..cluster.member_count()).filter(|&i| i != first))
        .collect();
    let mut writes = 300;
    for &member in &order {
        let was_leader = cluster.leader().unwrap() == member;
        cluster.kill(member);
        writes += 300;
        writers.wait_for(writes);
        if was_leader {
            let next = cluster.leader().unwrap();
            assert_ne!(next, member, "a new leader was elected");
        }
        cluster.restart(member).unwrap();
        writes += 150;
        writers.wait_for(writes);
    }
    writers.stop(&rt);
    let mut c = client(&rt, &endpoints);
    let (etcd_now, rev) = etcd_state(&rt, &mut c);
    let upto = last_prefix_revision(&rt, &mut c, start.get(), rev);
    let history = etcd_history(&rt, &mut c, start.get(), upto);
    assert!(history.len() >= 500, "{}", history.len());
    let mut streams = Vec::new();
    for (w, (source, engine, reflector)) in watches.iter_mut().zip(&engines) {
        let (seen, end) = collect(w, upto);
        match end {
            None => assert_same(&seen, &history, "a watcher through the kills"),
            // Gap-free up to a stated end.
            Some(reason) => {
                assert_same(&seen, &history[..seen.len()], "a watcher up to its end");
                eprintln!("a watcher ended: {reason}");
            }
        }
        streams.push(seen);
        let list = reflector.consistent_list(&ListRequest::new()).unwrap();
        assert_eq!(engine_state(&list.items), etcd_now, "the engine converged");
        assert!(engine.resource_version().get() >= upto);
        eprintln!(
            "engine: {:?} {:?} last error {:?}",
            reflector.stats(),
            source.stats(),
            reflector.last_error()
        );
    }
    assert_eq!(
        streams[0], streams[1],
        "both engines' watchers saw the same sequence"
    );
    // At any revision both answer the same list.
    for at in history.iter().step_by(97).map(|s| s.2).chain([upto]) {
        let lists: Vec<_> = engines
            .iter()
            .map(|(_, engine, _)| {
                let l = engine
                    .list(&ListRequest::new().at(ReadAt::Exact(ResourceVersion::new(at))))
                    .unwrap();
                (l.resource_version, engine_state(&l.items))
            })
            .collect();
        assert_eq!(lists[0], lists[1], "the lists at {at}");
    }
    // Every engine lost its watch (its member was killed) and resumed it
    // where it was: nothing was re-listed.
    for (source, _, reflector) in &engines {
        let stats = reflector.stats();
        assert!(
            stats.resumes >= 1,
            "the watch was lost and resumed: {stats:?}"
        );
        assert!(source.stats().watches_opened >= 2, "{:?}", source.stats());
        assert_eq!(stats.lists, 1, "resumed, not re-listed: {stats:?}");
    }
}
