//! The current state: key -> object, kept by the writer, with an index
//! per configured field (value -> keys).
//!
//! A persistent ordered set (`imbl`) of [`Stored`] entries ordered by the
//! object's key: a snapshot is an O(1) clone, walked in key order outside
//! any lock, and a change costs O(log n) (path copying). Entries are keyed
//! by the key inside the object itself, so a change costs no key
//! allocation. The field indexes are persistent maps too, so they travel
//! with every snapshot; a change that leaves an indexed value as it was
//! (the common Modified) does not touch them.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;

use std::sync::Arc;

use crate::selector::FieldSelector;
use crate::selector::KeyScope;
use crate::{Object, ResourceVersion};

/// The objects (persistent; clones share structure).
pub(crate) type Store = imbl::OrdSet<Stored>;

/// Entries in key order, from a bound on.
pub(crate) type Range<'a> =
    imbl::ordset::RangedIter<'a, Stored, imbl::shared_ptr::DefaultSharedPtr>;

/// One field index: an entry per object, in one ordered set; an index look-up is a range over one value. One set
/// rather than a set per value: a B-tree node is about a kilobyte however
/// few entries it holds, and a hundred thousand nodes with two pods each
/// would pay that a hundred thousand times. An entry is one string,
/// [`entry`], shared (`Arc`): one allocation and one comparison per step,
/// where a pair of strings cost two of each, and copying a B-tree leaf
/// (the first change after a snapshot shared it) counts references rather
/// than allocating.
type FieldIndex = imbl::OrdSet<Arc<str>>;

/// The value an index files `object` under for `field`. A missing field
/// reads as `""`, as field selectors read it (and as the trigger routes
/// in `index.rs` do): `spec.nodeName=` selects the objects without one,
/// so they must be in the index for a list served from it to equal a scan.
fn indexed_value<'a>(object: &'a Object, field: &str) -> &'a str {
    object.field(field).unwrap_or("")
}

/// An index entry: the value's length, `:`, the value, then the key. The
/// length makes the value part a prefix no other value shares (a value
/// may contain any character), so one value's entries are one range,
/// ordered by key.
fn entry(value: &str, key: &str) -> String {
    let mut e = value_prefix(value);
    e.push_str(key);
    e
}

/// The prefix every entry of `value` starts with.
fn value_prefix(value: &str) -> String {
    format!("{}:{value}", value.len())
}

/// One object of the state and the resource version of its last change.
/// Equality and order are the object's key only: a set of these is a map
/// from key to object.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) object: Object,
    pub(crate) rv: ResourceVersion,
    /// The key's first bytes, inline: see [`KeyPrefix`].
    prefix: KeyPrefix,
}

impl Stored {
    pub(crate) fn new(object: Object, rv: ResourceVersion) -> Stored {
        let prefix = KeyPrefix::of(object.key());
        Stored { object, rv, prefix }
    }
}

/// How many of a key's bytes an entry holds inline.
const INLINE: usize = 24;

/// A key's first [`INLINE`] bytes, zero-padded, as big-endian words, and
/// its length. Two entries compare without reading either object unless
/// both keys are longer than [`INLINE`] and those bytes tie:
///
/// - where the padded heads differ, they order as the keys do (a short
///   key padded with zeros is at most any key it begins);
/// - where they tie and either key fits inline, the shorter key is the
///   other's beginning (the longer one's bytes past it are the zeros
///   they tie with), so the lengths decide.
///
/// A B-tree search compares against about 20 of 200,000 entries, each
/// another object's allocation: read through the object, each compare
/// was a cache miss once the store outgrew the cache. The harness's keys
/// (`default/pod-N`, at most 18 bytes) compare inline; a cluster's longer
/// keys read their objects only among those sharing 24 bytes (often a
/// ReplicaSet's pods in one namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyPrefix {
    head: [u64; INLINE / 8],
    len: u32,
}

impl KeyPrefix {
    fn of(key: &str) -> KeyPrefix {
        let mut b = [0u8; INLINE];
        let n = key.len().min(INLINE);
        b[..n].copy_from_slice(&key.as_bytes()[..n]);
        let mut head = [0u64; INLINE / 8];
        for (w, bytes) in head.iter_mut().zip(b.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            *w = u64::from_be_bytes(word);
        }
        KeyPrefix {
            head,
            len: u32::try_from(key.len()).unwrap_or(u32::MAX),
        }
    }

    /// The keys' order when it shows without them: `None` when both are
    /// longer than [`INLINE`] and their heads tie.
    fn order(&self, other: &KeyPrefix) -> Option<Ordering> {
        match self.head.cmp(&other.head) {
            Ordering::Equal if self.len.min(other.len) as usize > INLINE => None,
            Ordering::Equal => Some(self.len.cmp(&other.len)),
            o => Some(o),
        }
    }
}

/// The state: objects and their field indexes. Cloning is O(1).
#[derive(Debug, Clone)]
pub(crate) struct State {
    objects: Store,
    /// The indexed fields, in configuration order.
    fields: Arc<[Box<str>]>,
    indexes: Vec<FieldIndex>,
}

impl State {
    pub(crate) fn new(fields: Arc<[Box<str>]>) -> State {
        let indexes = fields.iter().map(|_| FieldIndex::new()).collect();
        State {
            objects: Store::new(),
            fields,
            indexes,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Stored> {
        self.objects.get(key)
    }

    /// The entries from `from` on, in key order.
    pub(crate) fn range(&self, from: Bound<&str>) -> Range<'_> {
        self.objects.range::<_, str>((from, Bound::Unbounded))
    }

    /// The entries a read or a watch's initial events look at, in key
    /// order, after `after`: those of a list index when `fields` requires
    /// an exact value of its field, of the key range when `scope` is one
    /// key or a prefix, else all. The filter still decides: this only
    /// narrows, so a per-object watch's snapshot is a look-up, not a walk
    /// of the whole store.
    pub(crate) fn candidates<'a>(
        &'a self,
        scope: &'a KeyScope,
        fields: &'a FieldSelector,
        after: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Stored> + 'a> {
        let indexed = fields
            .terms()
            .iter()
            .find_map(|t| Some((self.index_of(t.field())?, fields.requires_exact(t.field())?)));
        if let Some((index, value)) = indexed {
            return Box::new(self.iter_indexed(index, value, after));
        }
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        match scope {
            KeyScope::All => Box::new(self.range(from)),
            KeyScope::Exact(key) => Box::new(
                self.get(key)
                    .filter(|e| after.is_none_or(|a| e.object.key() > a))
                    .into_iter(),
            ),
            KeyScope::Prefix(prefix) => {
                let start = format!("{prefix}/");
                let from = match after {
                    Some(a) if a >= start.as_str() => Bound::Excluded(a),
                    _ => Bound::Included(start.as_str()),
                };
                let range = self.range(from);
                Box::new(range.take_while(move |e| e.object.key().starts_with(&start)))
            }
        }
    }

    /// The number of the index on `field`, if one is configured.
    pub(crate) fn index_of(&self, field: &str) -> Option<usize> {
        self.fields.iter().position(|f| &**f == field)
    }

    /// The entries whose field of index `index` has `value`, with keys
    /// after `after`, in key order: served from the index (O(log n) per
    /// entry), not a scan.
    pub(crate) fn iter_indexed<'a>(
        &'a self,
        index: usize,
        value: &str,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        let prefix = value_prefix(value);
        let from = entry(value, after.unwrap_or(""));
        let from = match after {
            Some(_) => Bound::Excluded(from.as_str()),
            None => Bound::Included(from.as_str()),
        };
        let keys = self
            .indexes
            .get(index)
            .map(|ix| ix.range::<_, str>((from, Bound::Unbounded)));
        keys.into_iter()
            .flatten()
            .map_while(move |e| e.strip_prefix(prefix.as_str()))
            .filter_map(|key| self.objects.get(key))
    }

    /// Inserts or replaces the entry for `stored`'s key; returns the entry
    /// it replaced. One traversal of the map (the writer's hot path).
    pub(crate) fn put(&mut self, stored: Stored) -> Option<Stored> {
        if self.fields.is_empty() {
            return self.objects.insert(stored);
        }
        let new = stored.object.clone();
        let old = self.objects.insert(stored);
        let key = new.key();
        for (i, field) in self.fields.iter().enumerate() {
            let before = old.as_ref().map(|o| indexed_value(&o.object, field));
            let after = indexed_value(&new, field);
            if before == Some(after) {
                // The common Modified: the indexes stay as they are.
                continue;
            }
            let ix = &mut self.indexes[i];
            if let Some(v) = before {
                ix.remove(entry(v, key).as_str());
            }
            ix.insert(Arc::from(entry(after, key)));
        }
        old
    }

    /// Removes the entry for `key`; returns it.
    pub(crate) fn delete(&mut self, key: &str) -> Option<Stored> {
        let old = self.objects.remove(key)?;
        for (i, field) in self.fields.iter().enumerate() {
            let v = indexed_value(&old.object, field);
            self.indexes[i].remove(entry(v, key).as_str());
        }
        Some(old)
    }
}

impl PartialEq for Stored {
    fn eq(&self, other: &Self) -> bool {
        match self.prefix.order(&other.prefix) {
            Some(o) => o == Ordering::Equal,
            None => self.object.key() == other.object.key(),
        }
    }
}

impl Eq for Stored {}

impl PartialOrd for Stored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Stored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.prefix
            .order(&other.prefix)
            .unwrap_or_else(|| self.object.key().cmp(other.object.key()))
    }
}

/// Lookups by key (`&str`): consistent with `Eq` and `Ord` above, which
/// compare exactly this string.
impl Borrow<str> for Stored {
    fn borrow(&self) -> &str {
        self.object.key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, app: &str) -> Object {
        Object::builder("ns", name).label("app", app).build()
    }

    #[test]
    fn a_set_of_entries_is_a_map_by_key() {
        let mut s = Store::new();
        s.insert(Stored::new(obj("b", "x"), 1.into()));
        s.insert(Stored::new(obj("a", "x"), 2.into()));
        // Same key: replaces.
        s.insert(Stored::new(obj("b", "y"), 3.into()));
        assert_eq!(s.len(), 2);
        let b = s.get("ns/b").unwrap();
        assert_eq!((b.object.label("app"), b.rv.get()), (Some("y"), 3));
        let keys: Vec<_> = s.iter().map(|e| e.object.key()).collect();
        assert_eq!(keys, ["ns/a", "ns/b"]);
        assert!(s.remove("ns/a").is_some());
        assert!(s.get("ns/a").is_none());
    }

    #[test]
    fn entries_order_as_their_keys_do_whatever_their_prefixes_share() {
        // Keys tying on the inline prefix, shorter than it, a prefix of
        // one another, padded with what the padding is, past ASCII.
        let names = [
            "a",
            "ab",
            "abcdefghijklm",
            "abcdefghijklmn",
            "abcdefghijklmno",
            "abcdefghijklmnop",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            "abcdefghijklmnoq",
            "abcdefghijklmnopqrstuvw",
            "abcdefghijklmnopqrstuvwx",
            "abcdefghijklmnopqrstuvwxy",
            "abcdefghijklmnopqrstuvwxz",
            "abcdefghijklmnopqrstuvwxyz",
            "abcdefghijklmnopqrstuv\u{0}",
            "b",
            "pod-0000000000001",
            "pod-0000000000010",
            "pod-000000000001",
            "\u{e9}t\u{e9}",
            "\u{ff}",
        ];
        let mut keys = Vec::new();
        for ns in ["", "n", "ns", "namespace-long-1"] {
            for n in names {
                keys.push(Object::builder(ns, n).build());
            }
        }
        let entries: Vec<Stored> = keys
            .iter()
            .map(|o| Stored::new(o.clone(), 1.into()))
            .collect();
        for a in &entries {
            for b in &entries {
                let (ka, kb) = (a.object.key(), b.object.key());
                assert_eq!(a.cmp(b), ka.cmp(kb), "{ka:?} against {kb:?}");
                assert_eq!(a == b, ka == kb, "{ka:?} against {kb:?}");
            }
        }
        // A set of them is the keys in order, found by key.
        let set: Store = entries.iter().cloned().collect();
        let mut sorted: Vec<&str> = keys.iter().map(Object::key).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let walked: Vec<&str> = set.iter().map(|e| e.object.key()).collect();
        assert_eq!(walked, sorted);
        for k in &sorted {
            assert_eq!(set.get(*k).map(|e| e.object.key()), Some(*k));
        }
    }

    proptest::proptest! {
        /// Any two keys, drawn from few letters and the padding's zero so
        /// that heads tie often, at lengths either side of [`INLINE`].
        #[test]
        fn two_entries_compare_as_their_keys(
            a in "[ab\\x00]{0,30}",
            b in "[ab\\x00]{0,30}",
            common in "[ab]{0,26}",
        ) {
            let (a, b) = (format!("{common}{a}"), format!("{common}{b}"));
            let (x, y) = (
                Stored::new(Object::builder("", &a).build(), 1.into()),
                Stored::new(Object::builder("", &b).build(), 1.into()),
            );
            let (ka, kb) = (x.object.key(), y.object.key());
            proptest::prop_assert_eq!(x.cmp(&y), ka.cmp(kb));
            proptest::prop_assert_eq!(x == y, ka == kb);
        }
    }

    #[test]
    fn field_indexes_follow_puts_moves_and_deletes() {
        let node = |name: &str, n: &str| {
            Stored::new(
                Object::builder("ns", name)
                    .field("spec.nodeName", n)
                    .build(),
                1.into(),
            )
        };
        let mut st = State::new(vec![Box::from("spec.nodeName")].into());
        let ix = st.index_of("spec.nodeName").unwrap();
        let on = |st: &State, n: &str, after: Option<&str>| -> Vec<String> {
            st.iter_indexed(ix, n, after)
                .map(|e| e.object.key().to_owned())
                .collect()
        };
        st.put(node("a", "n1"));
        st.put(node("b", "n1"));
        st.put(node("c", "n2"));
        let before = st.clone();
        assert_eq!(on(&st, "n1", None), ["ns/a", "ns/b"]);
        assert_eq!(on(&st, "n1", Some("ns/a")), ["ns/b"]);
        // A move, an unchanged value, a delete.
        st.put(node("a", "n2"));
        st.put(node("b", "n1"));
        assert!(st.delete("ns/c").is_some());
        assert_eq!(on(&st, "n1", None), ["ns/b"]);
        assert_eq!(on(&st, "n2", None), ["ns/a"]);
        assert!(on(&st, "n3", None).is_empty());
        // The clone taken before is a snapshot: untouched.
        assert_eq!(on(&before, "n1", None), ["ns/a", "ns/b"]);
        assert_eq!(on(&before, "n2", None), ["ns/c"]);
        assert_eq!(st.len(), 2);
        let keys: Vec<_> = st
            .range(Bound::Excluded("ns/a"))
            .map(|e| e.object.key())
            .collect();
        assert_eq!(keys, ["ns/b"]);
    }

    #[test]
    fn a_missing_field_is_indexed_as_empty() {
        let with = |name: &str, n: Option<&str>| {
            let b = Object::builder("ns", name);
            Stored::new(
                match n {
                    Some(n) => b.field("spec.nodeName", n),
                    None => b,
                }
                .build(),
                1.into(),
            )
        };
        let mut st = State::new(vec![Box::from("spec.nodeName")].into());
        let ix = st.index_of("spec.nodeName").unwrap();
        let on = |st: &State, n: &str| -> Vec<String> {
            st.iter_indexed(ix, n, None)
                .map(|e| e.object.key().to_owned())
                .collect()
        };
        st.put(with("a", None));
        st.put(with("b", Some("")));
        st.put(with("c", Some("n1")));
        assert_eq!(on(&st, ""), ["ns/a", "ns/b"]);
        // Scheduled, then unscheduled again, then deleted.
        st.put(with("a", Some("n1")));
        assert_eq!(on(&st, ""), ["ns/b"]);
        assert_eq!(on(&st, "n1"), ["ns/a", "ns/c"]);
        st.put(with("c", None));
        assert_eq!(on(&st, ""), ["ns/b", "ns/c"]);
        assert!(st.delete("ns/c").is_some());
        assert!(st.delete("ns/b").is_some());
        assert!(on(&st, "").is_empty());
        assert_eq!(on(&st, "n1"), ["ns/a"]);
    }
}
