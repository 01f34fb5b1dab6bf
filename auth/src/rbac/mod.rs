//! RBAC, decided as the apiserver's RBAC authorizer decides it, over the
//! cluster's own Roles, ClusterRoles and bindings.
//!
//! An [`Rbac`] is a snapshot of those objects, indexed by subject; the
//! server builds a new one when any of them changes and swaps it in, so
//! that a decision reads one immutable snapshot and takes no lock.
//! `system:masters` is allowed everything first, as the apiserver's
//! privileged-group authorizer allows it ahead of RBAC.
//!
//! - `model`: the objects' fields a decision reads;
//! - `rules`: whether one rule allows a request;
//! - `index`: the snapshot and the decision.

mod index;
pub mod model;
pub mod rules;

pub use index::{Decision, Rbac, RbacBuilder};
