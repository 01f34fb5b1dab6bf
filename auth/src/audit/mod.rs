//! Auditing, as the apiserver audits: the policy that chooses a
//! request's level and stages ([`policy`]), and the `audit.k8s.io/v1`
//! `Event` it writes ([`event`]). Where the events go (a file, off the
//! request's path) is the server's.

pub mod event;
pub mod policy;

pub use event::{Event, ResponseStatus, new_id};
pub use policy::{Decided, Level, Policy, PolicyError, Stage};
