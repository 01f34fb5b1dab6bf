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
//! (see `watch/shared.rs`, Following): registered apart, offered nothing.
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
//! # Synchronization
//!
//! The dispatcher is the only writer: it builds a new [`Routes`] value
//! after registrations and sweeps and publishes it through an `ArcSwap`;
//! readers (the dispatcher itself, once per batch, and anyone inspecting
//! the routes) load it without locks. Buckets live in a persistent hash
//! map (`imbl`), so a registration costs O(log n + bucket size), not
//! O(watchers) (but the "all" and follower buckets are flat vectors: a
//! registration there copies the bucket once per publication). A removed
//! watcher is not taken out at once: it has ended, so the dispatcher skips
//! it, and [`Routes::retain`] drops the ended in one pass once they are
//! half of the table (see `dispatch/`).

use crate::Object;
use crate::sync::Arc;
use crate::watch::{Route, WatcherShared};

/// Immutable once published: plain data sharing, so `std`'s `Arc` (it
/// needs `make_mut`, which loom's lacks).
type Bucket = std::sync::Arc<Vec<Arc<WatcherShared>>>;
type IndexMap =
    imbl::GenericHashMap<Box<str>, Bucket, ahash::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

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
    len: usize,
}

impl Routes {
    pub(crate) fn new(fields: std::sync::Arc<[Box<str>]>) -> Routes {
        let by_value = fields
            .iter()
            .map(|_| IndexMap::with_hasher(ahash::RandomState::new()))
            .collect();
        Routes {
            fields,
            all: Bucket::default(),
            followers: Bucket::default(),
            by_value,
            selected: Vec::new(),
            len: 0,
        }
    }

    pub(crate) fn insert(&mut self, w: Arc<WatcherShared>) {
        match &w.spec.route {
            Route::All => std::sync::Arc::make_mut(&mut self.all).push(w),
            Route::Follow => std::sync::Arc::make_mut(&mut self.followers).push(w),
            Route::Indexed(i, value) => {
                bucket_insert(&mut self.by_value[*i as usize], value, w.clone())
            }
            Route::Selected(selected) => {
                let (field, value) = &**selected;
                let at = match self.selected.iter().position(|(f, _)| f == field) {
                    Some(at) => at,
                    None => {
                        let map = IndexMap::with_hasher(ahash::RandomState::new());
                        self.selected.push((field.clone(), map));
                        self.selected.len() - 1
                    }
                };
                bucket_insert(&mut self.selected[at].1, value, w.clone());
            }
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
        for map in self
            .by_value
            .iter_mut()
            .chain(self.selected.iter_mut().map(|(_, m)| m))
        {
            let mut rebuilt = IndexMap::with_hasher(map.hasher().clone());
            for (value, bucket) in map.iter() {
                let mut bucket = bucket.clone();
                let n = kept_in(&mut bucket);
                if n > 0 {
                    rebuilt.insert(value.clone(), bucket);
                    len += n;
                }
            }
            *map = rebuilt;
        }
        self.selected.retain(|(_, m)| !m.is_empty());
        self.len = len;
        len != before
    }

    /// Every registered watcher.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<WatcherShared>> {
        self.all.iter().chain(self.followers.iter()).chain(
            self.by_value
                .iter()
                .chain(self.selected.iter().map(|(_, m)| m))
                .flat_map(|m| m.values().flat_map(|b| b.iter())),
        )
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
        mut f: impl FnMut(&Arc<WatcherShared>),
    ) {
        self.all.iter().for_each(&mut f);
        let indexes = self.fields.iter().map(|f| &**f).zip(&self.by_value);
        let selected = self.selected.iter().map(|(f, m)| (&**f, m));
        for (field, map) in indexes.chain(selected) {
            if map.is_empty() {
                continue;
            }
            // A missing field reads as "", as field selectors read it.
            let cur = object.field(field).unwrap_or("");
            if let Some(b) = map.get(cur) {
                b.iter().for_each(&mut f);
            }
            if let Some(p) = prev {
                let old = p.field(field).unwrap_or("");
                if old != cur {
                    if let Some(b) = map.get(old) {
                        b.iter().for_each(&mut f);
                    }
                }
            }
        }
    }
}

fn bucket_insert(map: &mut IndexMap, value: &str, w: Arc<WatcherShared>) {
    let mut bucket = map.get(value).cloned().unwrap_or_default();
    std::sync::Arc::make_mut(&mut bucket).push(w);
    map.insert(value.into(), bucket);
}
