//! What the apiserver does to a stored object on its way out, besides
//! decoding it: the conversion from the storage version to the served
//! one, and the defaulting functions its decoder runs on every read.
//!
//! Most defaulting is a fixpoint by the time an object is stored (it ran
//! on the write), so reading it again changes nothing; the cases here are
//! those where it is not, found by the differential vectors
//! (`kube/tests/vectors.rs`) against the real apiserver.

use serde_json::{Map, Value};

/// Turns a stored object (decoded to JSON, `kind` and `apiVersion` set)
/// into what the apiserver serves for it.
pub(crate) fn as_served(doc: &mut Map<String, Value>) {
    let _ = doc;
}
