//! What a `get` can fail with.

use std::fmt;
use std::time::Duration;

/// Why [`ObjectManager::get`](crate::ObjectManager::get) has no answer.
/// An object that does not exist is an answer (`Ok(None)`), not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetError {
    /// No registered pod references the object (seeds/002: "object %q/%q
    /// not registered"). The kubelet asks only for what its pods use.
    NotRegistered {
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
    },
    /// The object's watch did not complete its first sync in time
    /// (seeds/002: "failed to sync ... cache"). Asking again waits again.
    SyncTimeout {
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        /// How long the call waited.
        waited: Duration,
        /// How the object's last watch ended, if one did before syncing.
        last_end: Option<String>,
    },
    /// The manager was stopped and holds no synced state for the object.
    Stopped,
}

impl fmt::Display for GetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GetError::NotRegistered { namespace, name } => {
                write!(f, "object {namespace:?}/{name:?} not registered")
            }
            GetError::SyncTimeout {
                namespace,
                name,
                waited,
                last_end,
            } => {
                write!(
                    f,
                    "object {namespace:?}/{name:?} not synced after {waited:?}"
                )?;
                match last_end {
                    Some(why) => write!(f, " (its last watch ended: {why})"),
                    None => Ok(()),
                }
            }
            GetError::Stopped => f.write_str("the object manager is stopped"),
        }
    }
}

impl std::error::Error for GetError {}
