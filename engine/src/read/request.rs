//! What a read asks ([`ListRequest`], [`ReadAt`]) and what it answers
//! ([`GetResponse`], [`ListResponse`]).

use super::token::Continue;
use crate::object::Item;
use crate::options::OptionsError;
use crate::rv::{ResourceVersion, ResourceVersionMatch};
use crate::selector::KeyScope;
use crate::selector::{FieldSelector, LabelSelector, ShardSelector};

/// Which state a read is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadAt {
    /// Whatever the cache has now (Kubernetes' `resourceVersion="0"`).
    #[default]
    Any,
    /// The present, once the cache has reached this version (Kubernetes'
    /// `resourceVersion=R`, match `NotOlderThan`): waits up to
    /// [`Config::too_large_timeout`](crate::Config::too_large_timeout)
    /// (for the first list too), then
    /// [`ReadError::TooLargeResourceVersion`](crate::read::ReadError::TooLargeResourceVersion) (or `NotReady`).
    NotOlderThan(ResourceVersion),
    /// The state exactly at this version (match `Exact`), anywhere in the
    /// history window; a future version waits as `NotOlderThan` does.
    Exact(ResourceVersion),
    /// The most recent state (Kubernetes' unset `resourceVersion`: a
    /// consistent read): with a [`Reflector`](crate::reflector::Reflector) driving
    /// the engine, the present once the cache has reached the source's
    /// current revision (it asks the source, and for progress while it
    /// waits); without one, the present, as [`ReadAt::Any`].
    Latest,
}

impl ReadAt {
    /// The state a get asks for, as Kubernetes spells it
    /// (`resourceVersion`, `resourceVersionMatch`; the API concepts'
    /// table): unset is [`ReadAt::Latest`], `0` is [`ReadAt::Any`], `R` is
    /// [`ReadAt::NotOlderThan`] unless the match says `Exact`. A match
    /// without a version, or `Exact` at `0`, is refused.
    ///
    /// ```
    /// use herald::options::OptionsError;
    /// use herald::read::ReadAt;
    /// use herald::rv::ResourceVersionMatch::*;
    /// assert_eq!(ReadAt::for_get(None, None), Ok(ReadAt::Latest));
    /// assert_eq!(ReadAt::for_get(Some(0.into()), Some(NotOlderThan)), Ok(ReadAt::Any));
    /// assert_eq!(ReadAt::for_get(Some(5.into()), Some(Exact)), Ok(ReadAt::Exact(5.into())));
    /// assert_eq!(ReadAt::for_get(None, Some(Exact)), Err(OptionsError::MatchNeedsResourceVersion));
    /// assert_eq!(ReadAt::for_get(Some(0.into()), Some(Exact)), Err(OptionsError::ExactAtZero));
    /// ```
    pub fn for_get(
        rv: Option<ResourceVersion>,
        rvm: Option<ResourceVersionMatch>,
    ) -> Result<ReadAt, OptionsError> {
        ReadAt::for_list(rv, rvm, false, false)
    }

    /// The state a list asks for, as Kubernetes spells it: as
    /// [`ReadAt::for_get`], plus the paging rules (`limited`: a `limit` is
    /// set; `continued`: a `continue` token is). With a limit and no
    /// match, a version `R` is read exactly (the legacy paging rule); with
    /// a token, the token names the version: an unset version or `0` read
    /// at it ([`ReadAt::Latest`], to pass with the token), a match or any
    /// other version is refused.
    ///
    /// ```
    /// use herald::options::OptionsError;
    /// use herald::read::ReadAt;
    /// use herald::rv::ResourceVersionMatch::*;
    /// assert_eq!(ReadAt::for_list(Some(5.into()), None, false, false), Ok(ReadAt::NotOlderThan(5.into())));
    /// assert_eq!(ReadAt::for_list(Some(5.into()), None, true, false), Ok(ReadAt::Exact(5.into())));
    /// assert_eq!(ReadAt::for_list(Some(0.into()), None, true, true), Ok(ReadAt::Latest));
    /// assert_eq!(
    ///     ReadAt::for_list(Some(5.into()), None, true, true),
    ///     Err(OptionsError::ContinueWithResourceVersion)
    /// );
    /// assert_eq!(
    ///     ReadAt::for_list(Some(5.into()), Some(NotOlderThan), true, true),
    ///     Err(OptionsError::MatchWithContinue)
    /// );
    /// ```
    pub fn for_list(
        rv: Option<ResourceVersion>,
        rvm: Option<ResourceVersionMatch>,
        limited: bool,
        continued: bool,
    ) -> Result<ReadAt, OptionsError> {
        use ResourceVersionMatch::{Exact, NotOlderThan};
        let zero = ResourceVersion::ZERO;
        // In the order Kubernetes checks them (`validateListOptions`).
        if rvm.is_some() && rv.is_none() {
            return Err(OptionsError::MatchNeedsResourceVersion);
        }
        if rvm.is_some() && continued {
            return Err(OptionsError::MatchWithContinue);
        }
        if rvm == Some(Exact) && rv == Some(zero) {
            return Err(OptionsError::ExactAtZero);
        }
        Ok(match (rv, rvm) {
            (Some(rv), _) if continued && rv != zero => {
                return Err(OptionsError::ContinueWithResourceVersion);
            }
            _ if continued => ReadAt::Latest,
            (None, _) => ReadAt::Latest,
            (Some(rv), _) if rv == zero => ReadAt::Any,
            (Some(rv), Some(Exact)) => ReadAt::Exact(rv),
            (Some(rv), None) if limited => ReadAt::Exact(rv),
            (Some(rv), None | Some(NotOlderThan)) => ReadAt::NotOlderThan(rv),
        })
    }
}

/// What to list. Built with chained setters.
///
/// ```
/// use herald::read::{ListRequest, ReadAt};
/// use herald::selector::KeyScope;
/// let req = ListRequest::new()
///     .scope(KeyScope::prefix("team-a"))
///     .fields("spec.nodeName=node-7".parse()?)
///     .at(ReadAt::Exact(42.into()))
///     .limit(500);
/// # Ok::<(), herald::selector::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    pub(crate) scope: KeyScope,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
    pub(crate) shard: ShardSelector,
    pub(crate) at: ReadAt,
    pub(crate) limit: usize,
    pub(crate) continue_from: Option<Continue>,
    pub(crate) cancel: Option<ReadCancel>,
}

impl ListRequest {
    /// Every object, whatever the cache has now, in one page.
    pub fn new() -> Self {
        Self::default()
    }

    crate::filter::selection_setters!(
        "An exact value of a field with a list index \
         ([`Config::list_index`](crate::Config::list_index)) is served from \
         the index."
    );

    /// Which state to read (default [`ReadAt::Any`]). A continued list
    /// reads its token's version and must leave this at the default.
    pub fn at(mut self, at: ReadAt) -> Self {
        self.at = at;
        self
    }

    /// At most this many objects per page (0, the default: no limit).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The next page of an earlier list with the same scope and selectors.
    pub fn continue_from(mut self, token: Continue) -> Self {
        self.continue_from = Some(token);
        self
    }

    /// Ends the list's wait for a version (at
    /// [`ReadAt::NotOlderThan`], [`ReadAt::Exact`] or [`ReadAt::Latest`])
    /// with [`ReadError::Cancelled`](crate::read::ReadError::Cancelled) as soon as
    /// `cancel` is cancelled, from any thread (a client hung up). A read
    /// that does not wait is not affected.
    pub fn cancel_on(mut self, cancel: &ReadCancel) -> Self {
        self.cancel = Some(cancel.clone());
        self
    }
}

/// What [`Engine::get`](crate::Engine::get) found.
#[derive(Debug, Clone, PartialEq)]
pub struct GetResponse {
    /// The object, if the key exists in the state read.
    pub item: Option<Item>,
    /// The version of the state read.
    pub resource_version: ResourceVersion,
}

/// One page of [`Engine::list`](crate::Engine::list).
#[derive(Debug, Clone, PartialEq)]
pub struct ListResponse {
    /// The objects, in key order.
    pub items: Vec<Item>,
    /// The version of the state read (for every page of a list, the
    /// first page's).
    pub resource_version: ResourceVersion,
    /// Set when more objects follow: pass it to
    /// [`ListRequest::continue_from`].
    pub continue_token: Option<Continue>,
    /// How many objects follow this page, when it is cut by the limit and
    /// the list selects nothing by label, field or shard (the reference's
    /// `PrepareContinueToken` counts only then: with a selector it could
    /// not count what matches without reading it); `None` otherwise.
    pub remaining_item_count: Option<u64>,
    /// The shard selector the list applied (KEP-5866's shard info, echoed
    /// back so a client knows the server honoured it); `None` for a list
    /// without one.
    pub shard: Option<ShardSelector>,
}

/// Cancels reads that wait for a version, from any thread: pass it to
/// [`ListRequest::cancel_on`] or [`Engine::get_with`](crate::Engine::get_with),
/// and call [`ReadCancel::cancel`] when the caller no longer wants the
/// answer (an HTTP client hung up). Clones share one flag; a cancelled
/// token stays cancelled. A waiting read sees it within a millisecond (it
/// looks at its clock that often).
///
/// ```
/// # use herald::*;
/// # use herald::read::{ListRequest, ReadAt, ReadCancel, ReadError};
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// writer.replace(Relist::new([], 1.into()))?;
/// let cancel = ReadCancel::new();
/// let waiting = {
///     let (engine, cancel) = (engine.clone(), cancel.clone());
///     std::thread::spawn(move || {
///         engine.list(&ListRequest::new().at(ReadAt::NotOlderThan(9.into())).cancel_on(&cancel))
///     })
/// };
/// cancel.cancel();
/// assert_eq!(waiting.join().unwrap(), Err(ReadError::Cancelled));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReadCancel(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl ReadCancel {
    /// A token not cancelled yet.
    pub fn new() -> ReadCancel {
        ReadCancel::default()
    }

    /// Cancels every read waiting with this token (or a clone), now and
    /// later. Idempotent.
    pub fn cancel(&self) {
        // Release: pairs with the waiting read's Acquire; no data rides on
        // it, but a cancel is then seen no later than the reader's next look.
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}
