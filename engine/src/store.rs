//! The current state: key -> object, kept by the writer.
//!
//! A persistent ordered set (`imbl`) of [`Stored`] entries ordered by the
//! object's key: a watch's snapshot is an O(1) clone taken under the writer
//! lock and walked, in key order, outside it. Entries are keyed by the key
//! inside the object itself, so a change costs no key allocation.

use std::borrow::Borrow;
use std::cmp::Ordering;

use crate::{Object, ResourceVersion};

/// The state (persistent; clones share structure).
pub(crate) type Store = imbl::OrdSet<Stored>;

/// One object of the state and the resource version of its last change.
/// Equality and order are the object's key only: a set of these is a map
/// from key to object.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) object: Object,
    pub(crate) rv: ResourceVersion,
}

impl PartialEq for Stored {
    fn eq(&self, other: &Self) -> bool {
        self.object.key() == other.object.key()
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
        self.object.key().cmp(other.object.key())
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
        s.insert(Stored {
            object: obj("b", "x"),
            rv: 1.into(),
        });
        s.insert(Stored {
            object: obj("a", "x"),
            rv: 2.into(),
        });
        // Same key: replaces.
        s.insert(Stored {
            object: obj("b", "y"),
            rv: 3.into(),
        });
        assert_eq!(s.len(), 2);
        let b = s.get("ns/b").unwrap();
        assert_eq!((b.object.label("app"), b.rv.get()), (Some("y"), 3));
        let keys: Vec<_> = s.iter().map(|e| e.object.key()).collect();
        assert_eq!(keys, ["ns/a", "ns/b"]);
        assert!(s.remove("ns/a").is_some());
        assert!(s.get("ns/a").is_none());
    }
}
