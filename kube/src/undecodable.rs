//! The stored values a source could not decode: which keys hold one now,
//! how many were met by reason, and the last one met, so that a cache
//! that serves less than is stored says so (in `/metrics` and readiness)
//! instead of looking healthy. Shared by the upstreams that decode what
//! they read (etcd's stored values, the apiserver's served objects).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::DecodeError;

/// What a source has met that it could not decode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndecodableReport {
    /// Keys whose current value could not be decoded (as of the last list
    /// and the watch events since): objects stored and not served.
    pub now: u64,
    /// Every undecodable value met, by [`DecodeError::reason`].
    pub by_reason: Vec<(&'static str, u64)>,
    /// The last one met: its key and why.
    pub last: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct State {
    now: HashMap<Vec<u8>, &'static str>,
    by_reason: BTreeMap<&'static str, u64>,
    last: Option<(String, String)>,
}

/// The tracker, keyed by each value's key (an etcd key, or an object's
/// `namespace/name`); every method takes a short lock.
#[derive(Debug, Default)]
pub struct Undecodable {
    state: Mutex<State>,
}

impl Undecodable {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A list starts: it will say again which keys are undecodable.
    pub fn relist(&self) {
        self.state().now.clear();
    }

    /// `key`'s current value could not be decoded. Returns how many were
    /// met so far (for the log's pacing).
    pub fn met(&self, key: &[u8], e: &DecodeError) -> u64 {
        let mut s = self.state();
        s.now.insert(key.to_vec(), e.reason());
        let n = s.by_reason.entry(e.reason()).or_default();
        *n += 1;
        s.last = Some((String::from_utf8_lossy(key).into_owned(), e.to_string()));
        s.by_reason.values().sum()
    }

    /// `key` now holds a decodable value, or none.
    pub fn cleared(&self, key: &[u8]) {
        let mut s = self.state();
        if !s.now.is_empty() {
            s.now.remove(key);
        }
    }

    /// What was met so far.
    pub fn report(&self) -> UndecodableReport {
        let s = self.state();
        UndecodableReport {
            now: s.now.len() as u64,
            by_reason: s.by_reason.iter().map(|(r, n)| (*r, *n)).collect(),
            last: s.last.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_and_go_and_totals_stay() {
        let u = Undecodable::default();
        let e = DecodeError::Json("x".into());
        u.met(b"/registry/pods/a/b", &e);
        u.met(b"/registry/pods/a/c", &DecodeError::Encrypted("kms".into()));
        assert_eq!(u.report().now, 2);
        u.cleared(b"/registry/pods/a/b");
        let r = u.report();
        assert_eq!(r.now, 1);
        assert_eq!(r.by_reason, vec![("encrypted", 1), ("json", 1)]);
        assert_eq!(r.last.unwrap().0, "/registry/pods/a/c");
        u.relist();
        assert_eq!(u.report().now, 0);
        assert_eq!(u.report().by_reason.len(), 2);
    }
}
