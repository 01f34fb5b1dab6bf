//! Why a watch could not be started ([`WatchError`]): raised by
//! [`Engine::watch`](crate::Engine::watch) and by its request's
//! resolution (`request.rs`). What can only be known later ends the watch
//! with an [`EndReason`](crate::EndReason) instead.

use std::fmt;

use crate::event::Gone;
use crate::options::OptionsError;
use crate::read::ReadError;

/// A watch that could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchError {
    /// The start resource version is older than the history the cache keeps.
    Gone(Gone),
    /// The engine has been stopped.
    EngineStopped,
    /// The request's options break one of Kubernetes' rules for a watch
    /// (see [`OptionsError`]).
    InvalidOptions(OptionsError),
    /// The watch starts at the most recent version (a watch-list, or
    /// `send_initial_events(false)`, without a resource version), and the
    /// engine's source could not say which that is (see
    /// [`Reflector`](crate::reflector::Reflector)).
    Upstream(ReadError),
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::Gone(g) => fmt::Display::fmt(g, f),
            WatchError::EngineStopped => f.write_str("the engine is stopped"),
            WatchError::InvalidOptions(e) => fmt::Display::fmt(e, f),
            WatchError::Upstream(e) => write!(f, "the most recent resource version: {e}"),
        }
    }
}

impl std::error::Error for WatchError {}

impl From<OptionsError> for WatchError {
    fn from(e: OptionsError) -> Self {
        WatchError::InvalidOptions(e)
    }
}

impl From<Gone> for WatchError {
    fn from(g: Gone) -> Self {
        WatchError::Gone(g)
    }
}
