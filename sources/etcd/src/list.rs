//! A list of the prefix at one revision, in pages (the apiserver's
//! `GetList`): the first page at the current revision (or at a revision
//! asked for), the rest at the first's, each from the key after the last
//! one read. A compaction past the list's revision while it pages starts
//! it over, three tries in all; past a revision asked for, it fails
//! `Compacted` at once, with the oldest revision etcd still holds.

use etcd_client::GetOptions;
use herald::object::Item;
use herald::source::{Listing, SourceError};

use crate::calls::{Failed, unavailable};
use crate::compaction::is_compacted;
use crate::decode::rv_of;
use crate::shared::{Shared, bump};

/// How many times a list starts over when a compaction passes its
/// revision while it pages, before it fails `Compacted`.
const LIST_ATTEMPTS: u32 = 3;

impl Shared {
    /// The prefix in pages at revision `at`, or (0) at the first page's:
    /// see [`herald::source::Source::list`]. A compaction past a fixed `at` fails
    /// at once (`Compacted`); past the first page's revision, the list
    /// starts over (three tries in all).
    pub(crate) fn list_pages(&self, at: i64) -> Result<Listing, SourceError> {
        let cluster = &*self.cluster;
        let mut attempts = 0;
        'list: loop {
            attempts += 1;
            self.undecodable.relist();
            let mut items = Vec::new();
            let mut revision = at;
            let mut from = self.prefix.as_bytes().to_vec();
            loop {
                let mut options = GetOptions::new()
                    .with_range(self.prefix_end.clone())
                    .with_limit(cluster.config.page_size);
                if revision > 0 {
                    options = options.with_revision(revision);
                }
                let kv = cluster
                    .client
                    .kv_client()
                    .max_decoding_message_size(i32::MAX as usize);
                let page = match cluster.read("list", || {
                    let (mut kv, from, options) = (kv.clone(), from.clone(), options.clone());
                    async move { kv.get(from, Some(options)).await }
                }) {
                    Ok(page) => page,
                    Err(Failed { error: Some(e), .. }) if revision > 0 && is_compacted(&e) => {
                        if at == 0 && attempts < LIST_ATTEMPTS {
                            continue 'list;
                        }
                        return Err(SourceError::Compacted {
                            requested: rv_of(revision),
                            compacted: rv_of(self.compacted_at(revision).unwrap_or(revision)),
                        });
                    }
                    Err(Failed { text, .. }) => return Err(unavailable(text)),
                };
                bump(&self.counters.list_pages);
                if revision == 0 {
                    revision = page.header().map_or(0, |h| h.revision());
                }
                let more = page.more();
                for kv in page.kvs() {
                    if let Some(object) = self.decode(kv, kv.mod_revision()) {
                        items.push(Item::new(object, rv_of(kv.mod_revision())));
                    }
                }
                match page.kvs().last() {
                    Some(last) if more => {
                        from = last.key().to_vec();
                        from.push(0);
                    }
                    _ => break,
                }
            }
            return Ok(Listing {
                items,
                revision: rv_of(revision),
            });
        }
    }
}
