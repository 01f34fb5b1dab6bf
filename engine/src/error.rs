//! Why the writer refused a call ([`WriteError`]): raised by the
//! [`Writer`](crate::Writer) and by the shared state's write protocol
//! under the writer lock (`shared.rs`), so it sits below both; public as
//! `herald::writer::WriteError`. A refused call changes nothing.

use std::fmt;

use crate::rv::ResourceVersion;

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
    /// A re-list [after a regression](crate::Relist::after_regression)
    /// with a version not older than the engine's: nothing went back, so a
    /// plain re-list is the call.
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
    /// let err = writer.replace(Relist::new([Object::builder("a/b", "c").build()], 1.into())).unwrap_err();
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
    /// ([`Relist::items`](crate::Relist::items)).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::object::Item;
    /// let (_engine, mut writer) = Engine::new(Config::default())?;
    /// let a = Item::new(Object::builder("ns", "a").build(), 8.into());
    /// let err = writer.replace(Relist::items([a], 7.into())).unwrap_err();
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
