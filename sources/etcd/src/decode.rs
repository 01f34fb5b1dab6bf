//! Keys and values to objects: a prefix's key range
//! ([`prefix_end`], etcd's `GetPrefixRangeEnd`), a key under the prefix
//! to the object's key, a stored value to an object at its revision
//! ([`Shared::decode`]: the configured [`herald_kube::Decoder`]), a watch
//! event to a change ([`Shared::change`], the apiserver's `parseKV` and
//! `prevKV`), and what could not be decoded: counted, logged (the first
//! few, then every thousandth), skipped; never a stop.

use etcd_client::{EventType, KeyValue};
use herald::{Change, ResourceVersion};
use herald_kube::DecodeError;

use crate::shared::{Shared, bump};

/// The end of a prefix's key range: the prefix with its last byte below
/// 0xff incremented (etcd's `GetPrefixRangeEnd`); `\0` (to the end of the
/// key space) for an empty or all-0xff prefix.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// An etcd revision as a resource version (a negative one, which etcd
/// never sends, as 0).
pub(crate) fn rv_of(rev: i64) -> ResourceVersion {
    ResourceVersion::new(rev.max(0) as u64)
}

impl Shared {
    fn key_under(&self, key: &[u8]) -> Option<Vec<u8>> {
        key.strip_prefix(self.prefix.as_bytes()).map(<[u8]>::to_vec)
    }

    /// An object from a stored key and value, or `None` (counted, logged)
    /// if it cannot be decoded.
    pub(crate) fn decode(&self, kv: &KeyValue, rv: i64) -> Option<herald::Object> {
        let key = self.key_under(kv.key())?;
        match self.decoder.decode(&key, kv.value(), rv_of(rv)) {
            Ok(object) => {
                self.undecodable.cleared(kv.key());
                Some(object)
            }
            Err(e) => {
                self.skip(kv.key(), &e);
                None
            }
        }
    }

    fn skip(&self, key: &[u8], e: &DecodeError) {
        bump(&self.counters.undecodable);
        let n = self.undecodable.met(key, e) - 1;
        // The first few in full, then every 1,000th: a stream of garbage
        // must not flood the log.
        if n < 10 || n % 1_000 == 0 {
            eprintln!(
                "herald-etcd: skipped the value under {:?} ({} skipped so far): {e}",
                String::from_utf8_lossy(key),
                n + 1
            );
        }
    }

    /// The change a watch event makes, if any: a put is `Added` when
    /// created at this revision, `Modified` otherwise; a deletion carries
    /// the previous value (or, that gone or undecodable, an object built
    /// from the key) at the deletion's revision.
    pub(crate) fn change(&self, event: &etcd_client::Event) -> Option<Change> {
        let kv = event.kv()?;
        match event.event_type() {
            EventType::Put => {
                let object = self.decode(kv, kv.mod_revision())?;
                let rv = rv_of(kv.mod_revision());
                Some(if kv.create_revision() == kv.mod_revision() {
                    Change::added(object, rv)
                } else {
                    Change::modified(object, rv)
                })
            }
            EventType::Delete => {
                self.undecodable.cleared(kv.key());
                // The deletion's revision is the tombstone's mod revision;
                // the object is the previous value, at that revision (as
                // the apiserver's watcher sets it).
                let rev = kv.mod_revision();
                let prev = event.prev_kv().and_then(|p| {
                    let key = self.key_under(p.key())?;
                    self.decoder.decode(&key, p.value(), rv_of(rev)).ok()
                });
                let object = match prev {
                    Some(o) => o,
                    None => {
                        let key = self.key_under(kv.key())?;
                        match self.decoder.bare(&key) {
                            Ok(o) => {
                                bump(&self.counters.bare_deletes);
                                o
                            }
                            Err(e) => {
                                self.skip(kv.key(), &e);
                                return None;
                            }
                        }
                    }
                };
                Some(Change::deleted(object, rv_of(rev)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_as_etcds() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
        assert_eq!(prefix_end(b""), b"\0");
    }
}
