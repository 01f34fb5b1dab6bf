//! Why a read could not be served ([`ReadError`]), and why a continue
//! token was refused ([`InvalidContinue`], [`MalformedContinue`]).

use std::fmt;
use std::time::Duration;

use crate::echo::Echo;
use crate::event::{Gone, TooLargeResourceVersion};
use crate::options::OptionsError;
use crate::rv::ResourceVersion;
use crate::source::{SourceError, UpstreamError};

/// A continue token this engine refuses as one it could not have issued
/// ([`ReadError::InvalidContinue`]); see the [rules](crate::read::Continue#rules).
///
/// ```
/// use herald::*;
/// use herald::read::{Continue, InvalidContinue, ReadError};
/// let err = "h2.nope".parse::<Continue>().unwrap_err();
/// match err {
///     ReadError::InvalidContinue(InvalidContinue::Malformed(m)) => assert_eq!(m.input(), "h2.nope"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidContinue {
    /// The text is not a token in the [format](crate::read::Continue#format).
    Malformed(MalformedContinue),
    /// The token names a version above the one the engine has reached.
    VersionNotReached {
        /// The token's version.
        token: ResourceVersion,
        /// The engine's version when the token was checked.
        reached: ResourceVersion,
    },
    /// The token names a re-list the engine has not made.
    GenerationNotReached {
        /// The token's generation.
        token: u64,
        /// The engine's generation when the token was checked.
        reached: u64,
    },
}

impl fmt::Display for InvalidContinue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidContinue::Malformed(m) => fmt::Display::fmt(m, f),
            InvalidContinue::VersionNotReached { token, reached } => write!(
                f,
                "it names resource version {token}, which the cache has not reached (it is at {reached})"
            ),
            InvalidContinue::GenerationNotReached { token, reached } => write!(
                f,
                "it names generation {token}, which the cache has not reached (it is at {reached})"
            ),
        }
    }
}

/// Text that is not a continue token: what is wrong with it, and its start.
///
/// ```
/// use herald::*;
/// use herald::read::{Continue, InvalidContinue, ReadError};
/// let long = format!("h1.{}", "7".repeat(1 << 20));
/// let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = long.parse::<Continue>() else {
///     panic!()
/// };
/// assert_eq!(m.input().len(), 64);
/// assert_eq!(m.reason(), "not a Herald continue token of this format");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedContinue {
    reason: &'static str,
    input: Echo,
}

impl MalformedContinue {
    pub(crate) fn new(reason: &'static str, input: &str) -> MalformedContinue {
        MalformedContinue {
            reason,
            input: Echo::new(input),
        }
    }

    /// What is wrong with the text.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::{Continue, InvalidContinue, ReadError};
    /// # let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = "h2.00000000000000zz.0.0.".parse::<Continue>() else { panic!() };
    /// assert_eq!(m.reason(), "malformed engine id");
    /// ```
    pub fn reason(&self) -> &str {
        self.reason
    }

    /// The rejected text (at most its first 64 bytes).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::{Continue, InvalidContinue, ReadError};
    /// # let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = "abc".parse::<Continue>() else { panic!() };
    /// assert_eq!(m.input(), "abc");
    /// ```
    pub fn input(&self) -> &str {
        self.input.head()
    }
}

impl fmt::Display for MalformedContinue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.input)
    }
}

/// Why a cache cannot serve a read now: it has not been listed yet, or it
/// lost its source (the engine fell back to
/// [`Lifecycle::Pending`](crate::engine::Lifecycle::Pending) with
/// [`Writer::mark_unready`](crate::Writer::mark_unready)). Retry after
/// [`NotReady::retry_after`]; [`NotReady::cause`] says what the source
/// last failed with. An HTTP front answers 429 with `Retry-After`, as the
/// apiserver does while its cache (re)initializes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    cause: Option<SourceError>,
}

impl NotReady {
    /// The hint a client is given: 1 s, the reference's `Retry-After`
    /// while its watch cache (re)initializes.
    pub const RETRY_AFTER: Duration = Duration::from_secs(1);

    pub(crate) fn new(cause: Option<SourceError>) -> NotReady {
        NotReady { cause }
    }

    /// How long a client should wait before it retries: [`NotReady::RETRY_AFTER`].
    pub fn retry_after(&self) -> Duration {
        NotReady::RETRY_AFTER
    }

    /// Why the cache lost its source, if it had one: the source's last
    /// error. `None` before the first list.
    pub fn cause(&self) -> Option<&SourceError> {
        self.cause.as_ref()
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            None => f.write_str("the cache has not been listed yet")?,
            Some(cause) => write!(f, "the cache is not ready: {cause}")?,
        }
        write!(f, "; retry after {:?}", self.retry_after())
    }
}

/// A read that could not be served. Nothing is changed by a failed read.
///
/// ```
/// use herald::*;
/// use herald::config::ConfigError;
/// use herald::read::{ReadAt, ReadError};
/// let (engine, _writer) = Engine::new(Config::default())?;
/// let Err(ReadError::NotReady(why)) = engine.get("ns/a", ReadAt::Any) else { panic!() };
/// assert_eq!(why.retry_after(), std::time::Duration::from_secs(1));
/// assert_eq!(why.to_string(), "the cache has not been listed yet; retry after 1s");
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// The cache has not been listed yet, or lost its source: retry after
    /// the hint it carries.
    NotReady(NotReady),
    /// The engine has been stopped.
    EngineStopped,
    /// The version asked for (or the continue token's) is older than the
    /// history the cache keeps, or before its last re-list.
    Gone(Gone),
    /// The cache did not reach the version asked for in time.
    TooLargeResourceVersion(TooLargeResourceVersion),
    /// A continue token that does not parse, or that names a state the
    /// engine has never been in (forged or corrupted).
    InvalidContinue(InvalidContinue),
    /// A continue token issued by another engine (a replica, or this
    /// engine's predecessor before a restart): its versions and
    /// generations are not this engine's. List again from the start.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::{ListRequest, ReadError};
    /// let obj = |n: &str| Object::builder("ns", n).build();
    /// let (a, mut wa) = Engine::new(Config::default())?;
    /// let (b, mut wb) = Engine::new(Config::default())?;
    /// wa.replace(Relist::new([obj("x"), obj("y")], 5.into()))?;
    /// wb.replace(Relist::new([obj("x"), obj("y")], 5.into()))?;
    /// let token = a.list(&ListRequest::new().limit(1))?.continue_token.unwrap();
    /// let err = b.list(&ListRequest::new().continue_from(token));
    /// assert_eq!(err, Err(ReadError::ForeignContinue));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ForeignContinue,
    /// A continued list names its version in the token: the request must
    /// not name one too. Now reported as
    /// [`ReadError::InvalidOptions`]`(`[`OptionsError::ContinueWithResourceVersion`]`)`.
    #[deprecated(
        note = "reported as ReadError::InvalidOptions(OptionsError::ContinueWithResourceVersion)"
    )]
    ContinueWithResourceVersion,
    /// The read waited for a version, and its
    /// [`ReadCancel`](crate::read::ReadCancel) was cancelled.
    Cancelled,
    /// The request's options break one of Kubernetes' rules for a read
    /// (see [`OptionsError`]).
    InvalidOptions(OptionsError),
    /// A consistent read could not learn the source's current revision.
    Source(SourceError),
    /// A consistent read found the source behind the cache: its history
    /// went back (restored from a backup), and the cache had not re-listed
    /// from it in time. What the cache holds is of the old history, so it
    /// is not served; retry once the reflector has re-listed.
    SourceRegressed {
        /// The source's revision.
        source: ResourceVersion,
        /// The cache's version, of the old history.
        cache: ResourceVersion,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotReady(why) => fmt::Display::fmt(why, f),
            ReadError::EngineStopped => f.write_str("the engine is stopped"),
            ReadError::Gone(g) => fmt::Display::fmt(g, f),
            ReadError::TooLargeResourceVersion(t) => fmt::Display::fmt(t, f),
            ReadError::InvalidContinue(why) => write!(f, "invalid continue token: {why}"),
            ReadError::ForeignContinue => f.write_str(
                "the continue token was issued by another engine: list again from the start",
            ),
            #[allow(deprecated)]
            ReadError::ContinueWithResourceVersion => {
                f.write_str("a continued list must not name a resource version")
            }
            ReadError::InvalidOptions(e) => fmt::Display::fmt(e, f),
            ReadError::Cancelled => f.write_str("the read was cancelled"),
            ReadError::Source(e) => write!(f, "consistent read: {e}"),
            ReadError::SourceRegressed { source, cache } => write!(
                f,
                "consistent read: the source's revision {source} is behind the cache's \
                 {cache} (its history went back, e.g. a restore from a backup); \
                 the cache has not re-listed yet"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<UpstreamError> for ReadError {
    fn from(e: UpstreamError) -> Self {
        match e {
            UpstreamError::Source(e) => ReadError::Source(e),
            UpstreamError::Regressed { source, cache } => {
                ReadError::SourceRegressed { source, cache }
            }
        }
    }
}
