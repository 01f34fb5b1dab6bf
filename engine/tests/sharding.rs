//! Server-side sharding (KEP-5866; issue 16, point 7): N shard selectors
//! that partition the hash space split a collection exactly: every change
//! reaches exactly one shard's watcher, in order, and N sharded lists
//! together are the whole list; a list echoes its selector.

mod common;

use common::*;
use herald::read::ListRequest;
use herald::selector::{ShardKey, ShardRange, ShardSelector};
use herald::*;
use herald_testkit::pod;

/// A UUID-shaped uid (as Kubernetes' are: their FNV-1a hashes spread over
/// the space; short uids with a common prefix, such as `uid-7`, do not).
fn uid(k: u64) -> String {
    format!("6f1c2a4e-{k:04x}-4a1b-8c3d-0242ac120002")
}

fn shard(i: u64, n: u64) -> ShardSelector {
    ShardSelector::new([ShardRange::nth(ShardKey::Uid, i, n).unwrap()]).unwrap()
}

#[test]
fn n_shards_together_receive_every_change_exactly_once() {
    for n in [1u64, 2, 3, 8] {
        let (engine, mut writer) = Engine::new(Config::default()).unwrap();
        writer.replace(Relist::new([], 1.into())).unwrap();
        let mut watches: Vec<Watch> = (0..n)
            .map(|i| {
                let req = WatchRequest::new()
                    .shard(shard(i, n))
                    .resource_version(Some(1.into()));
                engine.watch(req).unwrap()
            })
            .collect();
        // 300 changes over 60 objects (uids fixed per object, as in
        // Kubernetes): adds, updates, deletes.
        let mut rv = 1;
        let mut live = std::collections::BTreeSet::new();
        for step in 0..300u64 {
            rv += 1;
            let k = step * 7 % 60;
            let p = pod("ns", &format!("p{k}")).app("web").uid(&uid(k)).build();
            let change = if live.contains(&k) && step % 5 == 0 {
                live.remove(&k);
                Change::deleted(p, rv.into())
            } else {
                live.insert(k);
                Change::modified(p, rv.into())
            };
            writer.apply(change).unwrap();
        }
        let mut all = Vec::new();
        for (i, w) in watches.iter_mut().enumerate() {
            let mut seen = Vec::new();
            while let Ok(WatchItem::Event(ev)) =
                w.recv_timeout(std::time::Duration::from_millis(200))
            {
                let o = ev.object().unwrap();
                // Each shard holds only its own objects.
                assert!(
                    shard(i as u64, n).admits(o),
                    "shard {i} of {n} got {}",
                    o.key()
                );
                seen.push(ev.resource_version().get());
            }
            assert!(seen.windows(2).all(|p| p[0] < p[1]), "in order");
            assert!(!seen.is_empty(), "shard {i} of {n} got nothing");
            all.extend(seen);
        }
        all.sort_unstable();
        assert_eq!(
            all,
            (2..=rv).collect::<Vec<_>>(),
            "{n} shards: every change once"
        );
        // The lists partition the state too, and say which shard they are.
        let mut listed = Vec::new();
        for i in 0..n {
            let list = engine.list(&ListRequest::new().shard(shard(i, n))).unwrap();
            assert_eq!(list.shard, Some(shard(i, n)));
            listed.extend(list.items.into_iter().map(|it| it.object.name().to_owned()));
        }
        listed.sort();
        let mut want: Vec<_> = live.iter().map(|k| format!("p{k}")).collect();
        want.sort();
        assert_eq!(listed, want);
        assert_eq!(engine.list(&ListRequest::new()).unwrap().shard, None);
    }
}

#[test]
fn a_shard_selector_combines_with_the_others_and_parses_from_the_wire() {
    let (engine, mut writer) = Engine::new(Config::default()).unwrap();
    writer
        .replace(Relist::new(
            (0..40).map(|k| {
                pod("ns", &format!("p{k}"))
                    .app("web")
                    .uid(&format!("uid-{k}"))
                    .build()
            }),
            5.into(),
        ))
        .unwrap();
    let wire = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || \
                shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
    let whole: ShardSelector = wire.parse().unwrap();
    let req = ListRequest::new()
        .shard(whole)
        .labels("app=web".parse().unwrap());
    assert_eq!(engine.list(&req).unwrap().items.len(), 40);
    let req = ListRequest::new()
        .shard(shard(0, 2))
        .labels("app=db".parse().unwrap());
    assert_eq!(engine.list(&req).unwrap().items.len(), 0);
    let bad = "shardRange(object.metadata.uid, '0x0')".parse::<ShardSelector>();
    assert!(
        bad.unwrap_err()
            .to_string()
            .starts_with("invalid shard selector at byte 37")
    );
    // The namespace key: one namespace, one shard.
    let ns = ShardSelector::new([ShardRange::nth(ShardKey::Namespace, 0, 1).unwrap()]).unwrap();
    let mut w = engine.watch(WatchRequest::new().shard(ns)).unwrap();
    let (seen, _) = recv_events(&mut w, 40);
    assert_eq!(seen.len(), 40);
}
