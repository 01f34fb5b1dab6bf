//! What a watch or a list selects: which keys ([`KeyScope`]), and
//! Kubernetes label, field and shard selectors.
//!
//! A watch request can carry a `labelSelector` and a `fieldSelector`; the
//! cache evaluates them against every event to decide which watchers receive
//! it. This module parses both languages exactly as
//! `k8s.io/apimachinery/pkg/labels` and `pkg/fields` do (same grammar, same
//! validation, same matching semantics), with three deliberate differences,
//! each documented where it applies:
//!
//! * errors are structured ([`SelectorError`]: a byte position and a
//!   [`SelectorErrorKind`]) instead of strings;
//! * parsed selectors are normalized (`==` becomes `=`, requirements are
//!   sorted and deduplicated), so equal selectors compare, hash and print
//!   equal, and [`Display`](std::fmt::Display) output parses back to an
//!   equal selector;
//! * an empty label value set, `key in ()`, is rejected
//!   ([`SelectorErrorKind::EmptyValueSet`]); Kubernetes reads it as
//!   `key in ("")`, which here is written `key in (,)`.
//!
//! Both selector types are immutable and `Arc`-backed: cloning is a
//! reference count increment, they are `Send + Sync`, and
//! [`LabelSelector::matches`] / [`FieldSelector::matches`] never allocate.
//! An object's labels or fields are supplied as a lookup closure, so any map
//! type (or a hand-written accessor over a decoded object) can be used.
//!
//! ```
//! use std::collections::HashMap;
//! use herald::selector::{FieldSelector, LabelSelector};
//!
//! let labels: LabelSelector = "app=web,tier notin (db)".parse()?;
//! let fields: FieldSelector = "spec.nodeName=node-1".parse()?;
//!
//! let pod_labels = HashMap::from([("app", "web")]);
//! let pod_fields = HashMap::from([("spec.nodeName", "node-1")]);
//! assert!(labels.matches(|k| pod_labels.get(k).copied()));
//! assert!(fields.matches(|f| pod_fields.get(f).copied()));
//! assert_eq!(fields.requires_exact("spec.nodeName"), Some("node-1"));
//! # Ok::<(), herald::selector::SelectorError>(())
//! ```

mod error;
mod fields;
mod labels;
mod lexer;
mod scope;
mod shard;
mod validate;

#[cfg(test)]
mod tests;

pub use error::{ExpectedToken, InvalidLabelReason, SelectorError, SelectorErrorKind};
pub use fields::{FieldOperator, FieldSelector, FieldTerm};
pub use labels::{LabelOperator, LabelRequirement, LabelSelector};
pub use scope::KeyScope;
pub use shard::{
    MAX_SHARD_RANGES, ShardKey, ShardRange, ShardSelector, ShardSelectorError, fnv1a64,
};
