//! The engine's typed errors. Each names what was wrong; none loses data: a
//! refused call changes nothing.

use std::fmt;

use crate::echo::Echo;
use crate::options::OptionsError;
use crate::{Gone, ResourceVersion};

/// A change, re-list or progress the writer refused. The engine is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// The resource version does not move forward: changes need one greater
    /// than the engine's, a re-list or progress one at least as great.
    OutOfOrder {
        /// The version given.
        given: ResourceVersion,
        /// The engine's current version.
        current: ResourceVersion,
    },
    /// [`Writer::replace_after_regression`](crate::Writer::replace_after_regression)
    /// with a version not older than the engine's: nothing went back, so
    /// [`Writer::replace`](crate::Writer::replace) is the call.
    NotARegression {
        /// The version given.
        given: ResourceVersion,
        /// The engine's current version.
        current: ResourceVersion,
    },
    /// An object's name, or its namespace, is not a valid path segment
    /// (see [`Object`'s names](crate::Object#names)): keys could collide.
    ///
    /// ```
    /// # use herald::*;
    /// let (_engine, mut writer) = Engine::new(Config::default())?;
    /// let err = writer.replace([Object::builder("a/b", "c").build()], 1.into()).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid namespace \"a/b\": may not contain '/'");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    InvalidName {
        /// `"namespace"` or `"name"`.
        part: &'static str,
        /// The value refused, cut to at most 128 bytes.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A listed object's own version is above the list's: no consistent
    /// list holds an object changed after it was taken
    /// ([`Writer::replace_items`](crate::Writer::replace_items)).
    ///
    /// ```
    /// # use herald::*;
    /// let (_engine, mut writer) = Engine::new(Config::default())?;
    /// let a = Item::new(Object::builder("ns", "a").build(), 8.into());
    /// let err = writer.replace_items([a], 7.into()).unwrap_err();
    /// assert_eq!(err.to_string(), "object \"ns/a\" at resource version 8 is newer than its list at 7");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ItemAhead {
        /// The object's key, cut to at most 128 bytes.
        key: String,
        /// The object's version.
        item: ResourceVersion,
        /// The list's version.
        list: ResourceVersion,
    },
    /// A change or progress before the first `replace` (the initial list),
    /// or a re-list after a regression with nothing listed to go back from.
    NotReady,
    /// The engine has been stopped.
    Stopped,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::OutOfOrder { given, current } => write!(
                f,
                "out-of-order resource version {given}: the cache is at {current}"
            ),
            WriteError::NotARegression { given, current } => write!(
                f,
                "resource version {given} is not older than the cache's {current}: \
                 a re-list that does not go back is a replace()"
            ),
            WriteError::InvalidName { part, value, rule } => {
                write!(f, "invalid {part} {value:?}: {rule}")
            }
            WriteError::ItemAhead { key, item, list } => write!(
                f,
                "object {key:?} at resource version {item} is newer than its list at {list}"
            ),
            WriteError::NotReady => {
                f.write_str("the cache has not been listed yet: replace() must come first")
            }
            WriteError::Stopped => f.write_str("the engine is stopped"),
        }
    }
}

impl std::error::Error for WriteError {}

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
    /// [`Reflector`](crate::Reflector)).
    Upstream(crate::ReadError),
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

/// An engine configuration that cannot work, or an engine that could not
/// start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The history bounds are inverted or zero.
    HistoryBounds {
        /// The lower bound given.
        lower: usize,
        /// The upper bound given.
        upper: usize,
    },
    /// A duration setting is zero.
    ZeroDuration(&'static str),
    /// An indexed field name is empty or listed twice. The message shows
    /// at most the name's first 64 bytes.
    BadIndex(String),
    /// The dispatcher thread could not be spawned.
    Spawn(std::io::Error),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::HistoryBounds { lower, upper } => write!(
                f,
                "history capacity bounds must satisfy 1 <= lower <= upper (got {lower}..{upper})"
            ),
            ConfigError::ZeroDuration(what) => write!(f, "{what} must be greater than zero"),
            ConfigError::BadIndex(name) => {
                write!(
                    f,
                    "indexed field {} is empty or listed twice",
                    Echo::new(name)
                )
            }
            ConfigError::Spawn(e) => write!(f, "could not spawn the dispatcher thread: {e}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}
