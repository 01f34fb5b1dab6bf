//! Trigger indexes: which watchers a change may concern.
//!
//! A watcher whose field selector requires an exact value of an indexed field
//! (`spec.nodeName=node-7`) is registered under that value; every other
//! watcher is registered under "all". A change reaches the "all" watchers and,
//! for each index, those registered under its object's value and its previous
//! object's value (both, when they differ: the object moved from one to the
//! other, and both sides must hear of it). The reference (seeds/004
//! `indexedWatchers`, `triggerValuesThreadUnsafe`) allows one index; Herald
//! allows any number.
//!
//! A watcher is registered in exactly one bucket, and a change visits each
//! bucket at most once, so no watcher is offered a change twice.
//!
//! A watcher that admits everything under the park policy is a follower
//! (see `watcher/shared.rs`, Following): registered apart, offered nothing.
//!
//! # Selector routes
//!
//! A watcher whose field selector requires an exact value of a field that
//! has no index (`metadata.name=web-1`, or `spec.nodeName=node-7` on an
//! engine without that index) is routed the same way, by an implicit map
//! on that field, built from the watchers themselves: a change looks up
//! each such field once, so a thousand distinct selectors cost a thousand
//! hash look-ups fewer than a thousand evaluations. Routing only narrows
//! the candidates (their filters still decide), so delivery is exactly the
//! reference's; only the queue size follows the configured indexes, as in
//! the reference. A field's map goes away with its last watcher.
//!
//! # Shard routes
//!
//! A watcher whose shard selector (KEP-5866) has exactly one range, and no
//! exact field to route by, is registered under that range in a table per
//! hashed key (uid, namespace): the distinct ranges sorted by start, each
//! with its watchers, and a running maximum of the ends. A change hashes
//! its object's key once and finds the ranges that hold the hash by a
//! binary search, walking back only while an earlier range could still
//! reach it: for ranges that partition the space (N shards, any number of
//! watchers each), exactly one range is visited, whatever N is. The
//! previous object's hash is looked up only if it differs, skipping the
//! ranges that hold both, so no watcher is offered a change twice.
//!
//! # Synchronization
//!
//! The dispatcher is the only writer and the only reader: it changes its
//! master copy in place on registrations and sweeps, and a batch walks a
//! snapshot of it (an `Arc<Routes>` the dispatcher takes when the routes
//! have changed, `publish_routes`), so the batch can borrow the routes while
//! the slow-watcher policy and the wakes borrow the dispatcher. No other
//! thread touches them, so they need no atomics. Buckets live in a persistent hash
//! map (`imbl`), so a registration costs O(log n + bucket size), not
//! O(watchers) (but the "all" and follower buckets are flat vectors: a
//! registration there copies the bucket once per publication). A removed
//! watcher is not taken out at once: it has ended, so the dispatcher skips
//! it, and [`Routes::retain`] drops the ended in one pass once they are
//! half of the table (see `dispatch/`).

use crate::Object;
use crate::filter::Routed;
use crate::selector::ShardKey;
use crate::sync::Arc;
use crate::watcher::{Route, WatcherShared};

/// Immutable once published: plain data sharing, so `std`'s `Arc` (it
/// needs `make_mut`, which loom's lacks).
type Bucket = std::sync::Arc<Vec<Arc<WatcherShared>>>;
/// A value's watchers: a slice in the `Arc`'s own allocation, sized
/// exactly. A registration copies the bucket (as `make_mut` did once it
/// was published), and a value has few watchers (one per node in the
/// kubelet shape: 24 bytes, where a `Vec` in an `Arc` took 40 plus 32 of
/// capacity); reading one is a load less (no `Vec` header in between).
type ValueBucket = std::sync::Arc<[Arc<WatcherShared>]>;
/// A value's watchers by the value's 64-bit hash (see [`IndexMap`]).
type HashedMap =
    imbl::GenericHashMap<u64, ValueBucket, PassThrough, imbl::shared_ptr::DefaultSharedPtr>;

/// An index (or a selector route's map): value -> watchers, keyed by the
/// value's hash under a per-map random key rather than by the value.
/// An entry holds no copy of the value (a `Box<str>` and its allocation:
/// about 25 bytes per kubelet-shaped watcher, with the map's nodes), and
/// a look-up compares two words instead of following the key to its
/// bytes. Two values with the same hash (2^-64 per pair, under a key the
/// senders of changes cannot see) share a bucket: their watchers are
/// offered each other's changes and their filters refuse them, as for
/// any candidate, so delivery is unchanged (routing only narrows).
#[derive(Debug, Clone)]
struct IndexMap {
    keys: ahash::RandomState,
    map: HashedMap,
}

impl IndexMap {
    fn new() -> IndexMap {
        IndexMap {
            keys: ahash::RandomState::new(),
            map: HashedMap::default(),
        }
    }

    #[inline]
    fn key(&self, value: &str) -> u64 {
        self.keys.hash_one(value)
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    #[inline]
    fn get(&self, key: u64) -> Option<&ValueBucket> {
        self.map.get(&key)
    }

    /// Adds `w` to the bucket of `value`.
    fn insert(&mut self, value: &str, w: Arc<WatcherShared>) {
        let key = self.key(value);
        let bucket: ValueBucket = match self.map.get(&key) {
            Some(old) => old.iter().cloned().chain(std::iter::once(w)).collect(),
            None => std::sync::Arc::new([w]),
        };
        self.map.insert(key, bucket);
    }
}

/// The map's hasher for keys that are hashes already: passes the key
/// through.
#[derive(Debug, Clone, Copy, Default)]
struct PassThrough;

impl std::hash::BuildHasher for PassThrough {
    type Hasher = PassThroughHasher;

    fn build_hasher(&self) -> PassThroughHasher {
        PassThroughHasher(0)
    }
}

/// See [`PassThrough`].
#[derive(Debug, Clone, Copy)]
struct PassThroughHasher(u64);

impl std::hash::Hasher for PassThroughHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here (`write_u64`); any other input
        // is folded in, FNV-1a style, so the hasher stays a hasher.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// The routing table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes {
    /// Field names of the indexes, in configuration order.
    fields: std::sync::Arc<[Box<str>]>,
    all: Bucket,
    /// Followers (`Route::Follow`): offered no change, woken per batch.
    followers: Bucket,
    /// One map per index: value -> watchers.
    by_value: Vec<IndexMap>,
    /// Selector routes: (field, value -> watchers), for fields with no
    /// index and at least one watcher.
    selected: Vec<(Box<str>, IndexMap)>,
    /// Shard routes, one table per hashed key with at least one watcher.
    sharded: Vec<(ShardKey, std::sync::Arc<ShardTable>)>,
    len: usize,
}

/// One key's shard routes (see [Shard routes](self#shard-routes)).
#[derive(Debug, Clone, Default)]
struct ShardTable {
    /// Distinct ranges `[start, end)`, sorted, each with its watchers.
    ranges: Vec<(u64, u128, Bucket)>,
    /// `reach[i]`: the largest end among `ranges[..=i]`.
    reach: Vec<u128>,
}

impl ShardTable {
    fn insert(&mut self, start: u64, end: u128, w: Arc<WatcherShared>) {
        let at = self.ranges.partition_point(|r| (r.0, r.1) < (start, end));
        match self.ranges.get_mut(at) {
            Some(r) if (r.0, r.1) == (start, end) => std::sync::Arc::make_mut(&mut r.2).push(w),
            _ => {
                self.ranges
                    .insert(at, (start, end, std::sync::Arc::new(vec![w])));
                self.reindex();
            }
        }
    }

    fn reindex(&mut self) {
        let mut reach = 0;
        self.reach = self
            .ranges
            .iter()
            .map(|r| {
                reach = reach.max(r.1);
                reach
            })
            .collect();
    }

    /// Calls `f` with the bucket of every range that holds `hash` and
    /// not `skip` (a hash already looked up).
    #[inline]
    fn for_each_holding(&self, hash: u64, skip: Option<u64>, mut f: impl FnMut(&Bucket)) {
        let holds = |r: &(u64, u128, Bucket), h: u64| r.0 <= h && u128::from(h) < r.1;
        let below = self.ranges.partition_point(|r| r.0 <= hash);
        for i in (0..below).rev() {
            if self.reach[i] <= u128::from(hash) {
                break;
            }
            let r = &self.ranges[i];
            if holds(r, hash) && !skip.is_some_and(|s| holds(r, s)) {
                f(&r.2);
            }
        }
    }
}

impl Routes {
    pub(crate) fn new(fields: std::sync::Arc<[Box<str>]>) -> Routes {
        let by_value = fields.iter().map(|_| IndexMap::new()).collect();
        Routes {
            fields,
            all: Bucket::default(),
            followers: Bucket::default(),
            by_value,
            selected: Vec::new(),
            sharded: Vec::new(),
            len: 0,
        }
    }

    /// Registers `w` under its route. The value (or range) it is routed
    /// by is read from its filter, as the request's resolution found it
    /// there (`watch/request.rs`); should it somehow be missing, the
    /// watcher goes under "all": routing only narrows the candidates, so
    /// that is never wrong, only slower.
    pub(crate) fn insert(&mut self, w: Arc<WatcherShared>) {
        let filter = &w.spec.filter;
        match w.spec.route {
            Route::Follow => std::sync::Arc::make_mut(&mut self.followers).push(w),
            Route::Indexed(i) => {
                let i = i as usize;
                match (self.fields.get(i), self.by_value.get_mut(i)) {
                    (Some(field), Some(map)) => match filter.fields().requires_exact(field) {
                        Some(value) => map.insert(value, w.clone()),
                        None => std::sync::Arc::make_mut(&mut self.all).push(w.clone()),
                    },
                    _ => std::sync::Arc::make_mut(&mut self.all).push(w.clone()),
                }
            }
            Route::Selected => match filter.fields().first_exact() {
                Some((field, value)) => {
                    let at = match self.selected.iter().position(|(f, _)| **f == *field) {
                        Some(at) => at,
                        None => {
                            self.selected.push((field.into(), IndexMap::new()));
                            self.selected.len() - 1
                        }
                    };
                    self.selected[at].1.insert(value, w.clone());
                }
                None => std::sync::Arc::make_mut(&mut self.all).push(w.clone()),
            },
            Route::Sharded => match filter.shard().single() {
                Some(range) => {
                    let key = range.key();
                    let at = match self.sharded.iter().position(|(k, _)| *k == key) {
                        Some(at) => at,
                        None => {
                            self.sharded.push((key, Default::default()));
                            self.sharded.len() - 1
                        }
                    };
                    let table = std::sync::Arc::make_mut(&mut self.sharded[at].1);
                    table.insert(range.start(), range.end(), w.clone());
                }
                None => std::sync::Arc::make_mut(&mut self.all).push(w.clone()),
            },
            Route::All => std::sync::Arc::make_mut(&mut self.all).push(w),
        }
        self.len += 1;
    }

    /// Keeps only the watchers `keep` accepts; returns whether any went.
    /// O(watchers): the dispatcher calls it to sweep retired watchers once
    /// they are half of what it holds, so a removal costs O(1) amortised
    /// (one at a time, a removal from the "all" bucket would copy it).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&WatcherShared) -> bool) -> bool {
        let before = self.len;
        let mut kept_in = |bucket: &mut Bucket| {
            if !bucket.iter().all(|w| keep(w)) {
                let v: Vec<_> = bucket.iter().filter(|w| keep(w)).cloned().collect();
                *bucket = std::sync::Arc::new(v);
            }
            bucket.len()
        };
        let mut len = kept_in(&mut self.all) + kept_in(&mut self.followers);
        for (_, table) in &mut self.sharded {
            let table = std::sync::Arc::make_mut(table);
            for r in &mut table.ranges {
                len += kept_in(&mut r.2);
            }
            table.ranges.retain(|r| !r.2.is_empty());
            table.reindex();
        }
        self.sharded.retain(|(_, t)| !t.ranges.is_empty());
        for map in self
            .by_value
            .iter_mut()
            .chain(self.selected.iter_mut().map(|(_, m)| m))
        {
            let mut rebuilt = HashedMap::default();
            for (key, bucket) in map.map.iter() {
                let bucket = if bucket.iter().all(|w| keep(w)) {
                    bucket.clone()
                } else {
                    bucket.iter().filter(|w| keep(w)).cloned().collect()
                };
                if !bucket.is_empty() {
                    len += bucket.len();
                    rebuilt.insert(*key, bucket);
                }
            }
            map.map = rebuilt;
        }
        self.selected.retain(|(_, m)| !m.is_empty());
        self.len = len;
        len != before
    }

    /// Gives back the growth room of the flat buckets ("all" and the
    /// followers) before the table is published: a registration after a
    /// publication copies the bucket and then grows it by doubling, so
    /// without this up to half of it would be room never used (8 bytes per
    /// watcher). O(bucket) once per publication, as the copy was.
    pub(crate) fn trim(&mut self) {
        for bucket in [&mut self.all, &mut self.followers] {
            if let Some(v) = std::sync::Arc::get_mut(bucket) {
                v.shrink_to_fit();
            }
        }
    }

    /// Every registered watcher.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<WatcherShared>> {
        let sharded = self
            .sharded
            .iter()
            .flat_map(|(_, t)| t.ranges.iter().flat_map(|r| r.2.iter()));
        self.all
            .iter()
            .chain(self.followers.iter())
            .chain(
                self.by_value
                    .iter()
                    .chain(self.selected.iter().map(|(_, m)| m))
                    .flat_map(|m| m.map.values().flat_map(|b| b.iter())),
            )
            .chain(sharded)
    }

    /// The followers: they read the ring themselves; the dispatcher only
    /// wakes them.
    pub(crate) fn followers(&self) -> &[Arc<WatcherShared>] {
        &self.followers
    }

    /// Calls `f` for every watcher a change of `object` (previously `prev`)
    /// may concern, each at most once (followers excepted: they concern
    /// themselves).
    #[inline]
    pub(crate) fn for_each_candidate(
        &self,
        object: &Object,
        prev: Option<&Object>,
        mut f: impl FnMut(&Arc<WatcherShared>, Option<Routed<'_>>),
    ) {
        self.all.iter().for_each(|w| f(w, None));
        let indexes = self.fields.iter().map(|f| &**f).zip(&self.by_value);
        let selected = self.selected.iter().map(|(f, m)| (&**f, m));
        for (field, map) in indexes.chain(selected) {
            if map.is_empty() {
                continue;
            }
            // A missing field reads as "", as field selectors read it.
            let cur = object.field(field).unwrap_or("");
            let old = prev.map(|p| p.field(field).unwrap_or(""));
            let routed = Some(Routed { field, cur, old });
            let cur_key = map.key(cur);
            if let Some(b) = map.get(cur_key) {
                b.iter().for_each(|w| f(w, routed));
            }
            // Compared by key: two values that share a key share a
            // bucket, visited once.
            if let Some(old) = old.filter(|&o| o != cur) {
                let old_key = map.key(old);
                if old_key != cur_key {
                    if let Some(b) = map.get(old_key) {
                        b.iter().for_each(|w| f(w, routed));
                    }
                }
            }
        }
        for (key, table) in &self.sharded {
            let cur = key.hash(object);
            table.for_each_holding(cur, None, |b| b.iter().for_each(|w| f(w, None)));
            if let Some(p) = prev {
                let old = key.hash(p);
                if old != cur {
                    table.for_each_holding(old, Some(cur), |b| b.iter().for_each(|w| f(w, None)));
                }
            }
        }
    }
}

/// The routing table for the micro-benchmarks in `benches/` (feature
/// `internals`, as `herald::internals::Routes`): a thin wrapper over
/// inert watchers, so the module stays private.
#[cfg(feature = "internals")]
pub(crate) mod bench {
    use crate::filter::Filter;
    use crate::object::Object;
    use crate::rv::ResourceVersion;
    use crate::selector::{FieldSelector, KeyScope, LabelSelector, ShardSelector};
    use crate::sync::Arc;
    use crate::watcher::{Route, Start, WatcherShared, WatcherSpec};

    /// The dispatcher's routing table, over inert watchers (admit
    /// everything, never attached) identified by number.
    #[derive(Debug)]
    pub struct Routes(super::Routes, Vec<Box<str>>);

    impl Routes {
        /// An empty table with trigger indexes on `fields`.
        pub fn new(fields: &[&str]) -> Routes {
            let fields: Vec<Box<str>> = fields.iter().map(|f| Box::from(*f)).collect();
            Routes(super::Routes::new(fields.clone().into()), fields)
        }

        /// Registers watcher `id` under `indexed` (index number, value), or
        /// under "all" when `None`.
        pub fn insert(&mut self, id: u64, indexed: Option<(usize, &str)>) {
            // The routed value is read from the filter (see the module).
            let field = indexed.and_then(|(i, _)| Some((u16::try_from(i).ok()?, self.1.get(i)?)));
            let (route, filter) = match indexed.zip(field) {
                Some(((_, v), (i, field))) => {
                    let filter = Filter::new(
                        KeyScope::All,
                        LabelSelector::default(),
                        FieldSelector::exact(field, v),
                        ShardSelector::default(),
                    );
                    (Route::Indexed(i), filter)
                }
                None => (Route::All, Filter::default()),
            };
            let spec = WatcherSpec::new(id, filter, route, std::time::Instant::now(), None);
            let start = Start::After(ResourceVersion::ZERO);
            let w = WatcherShared::new(spec, start, false, None, 1);
            self.0.insert(Arc::new(w));
        }

        /// Calls `f` with the id of every watcher a change of `object`
        /// (previously `prev`) may concern, as the dispatcher looks them up.
        #[inline]
        pub fn for_each_candidate(
            &self,
            object: &Object,
            prev: Option<&Object>,
            mut f: impl FnMut(u64),
        ) {
            self.0.for_each_candidate(object, prev, |w, _| f(w.spec.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;
    use crate::rv::ResourceVersion;
    use crate::selector::{FieldSelector, KeyScope, LabelSelector, ShardRange, ShardSelector};
    use crate::watcher::{Start, WatcherSpec};

    /// A watcher selecting one shard range, as the engine registers one
    /// (a single range routes by shard: `WatchRequest::resolve`).
    fn sharded(id: u64, range: ShardRange) -> Arc<WatcherShared> {
        let shard = ShardSelector::new([range]).unwrap();
        let filter = Filter::new(
            KeyScope::All,
            LabelSelector::default(),
            FieldSelector::default(),
            shard,
        );
        let spec = WatcherSpec::new(id, filter, Route::Sharded, std::time::Instant::now(), None);
        let start = Start::Snapshot {
            min_rv: ResourceVersion::ZERO,
            initial_events_end: false,
        };
        Arc::new(WatcherShared::new(spec, start, false, Some(1), 1))
    }

    /// A watcher of shard `i` of `n` (on uid).
    fn shard_watcher(id: u64, i: u64, n: u64) -> Arc<WatcherShared> {
        sharded(id, ShardRange::nth(ShardKey::Uid, i, n).unwrap())
    }

    fn pod(uid: &str) -> Object {
        Object::builder("ns", "p")
            .field("metadata.uid", uid)
            .build()
    }

    /// Watchers whose ranges partition the space are found by a range
    /// lookup: each change is offered to the one shard that holds it (or
    /// its watchers), not to every sharded watcher.
    #[test]
    fn a_partition_offers_each_change_to_its_one_shard() {
        let n = 1000;
        let mut routes = Routes::new(std::sync::Arc::from(Vec::new()));
        for i in 0..n {
            routes.insert(shard_watcher(i, i, n));
        }
        // A second watcher on shard 7, and one on a range across 3 shards.
        routes.insert(shard_watcher(n, 7, n));
        let wide = ShardRange::new(ShardKey::Uid, 0, u128::from(u64::MAX / n * 3)).unwrap();
        routes.insert(sharded(n + 1, wide));
        let mut offered = 0;
        for u in 0..5000 {
            let object = pod(&format!("6f1c2a4e-{u:04x}-4a1b-8c3d-0242ac120002"));
            let hash = ShardKey::Uid.hash(&object);
            let mut ids = Vec::new();
            routes.for_each_candidate(&object, None, |w, _| ids.push(w.spec.id));
            offered += ids.len();
            let shard = ((u128::from(hash) * u128::from(n)) >> 64) as u64;
            let mut want = vec![shard];
            if shard == 7 {
                want.push(n);
            }
            if u128::from(hash) < wide.end() {
                want.push(n + 1);
            }
            ids.sort_unstable();
            want.sort_unstable();
            assert_eq!(ids, want, "object {u}");
            // A move to another uid reaches both sides once each.
            let moved = pod(&format!("moved-{u}"));
            let mut both = Vec::new();
            routes.for_each_candidate(&moved, Some(&object), |w, _| both.push(w.spec.id));
            let mut dedup = both.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), both.len(), "offered twice: {both:?}");
        }
        // About one offer per change, not a thousand.
        assert!(offered < 5000 * 2, "{offered}");
        assert_eq!(routes.iter().count() as u64, n + 2);
        assert!(routes.retain(|w| w.spec.id % 2 == 0));
        assert_eq!(routes.iter().count() as u64, n / 2 + 1);
    }
}
