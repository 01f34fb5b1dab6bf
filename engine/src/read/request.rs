//! What a read asks ([`ListRequest`], [`ReadAt`]) and what it answers
//! ([`GetResponse`], [`ListResponse`]).

use super::token::Continue;
use crate::filter::KeyScope;
use crate::object::Item;
use crate::rv::ResourceVersion;
use crate::selector::{FieldSelector, LabelSelector};

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
    /// [`ReadError::TooLargeResourceVersion`](crate::ReadError::TooLargeResourceVersion) (or `NotReady`).
    NotOlderThan(ResourceVersion),
    /// The state exactly at this version (match `Exact`), anywhere in the
    /// history window; a future version waits as `NotOlderThan` does.
    Exact(ResourceVersion),
}

/// What to list. Built with chained setters.
///
/// ```
/// use herald::{KeyScope, ListRequest, ReadAt};
/// let req = ListRequest::new()
///     .scope(KeyScope::prefix("team-a"))
///     .fields("spec.nodeName=node-7".parse()?)
///     .at(ReadAt::Exact(42.into()))
///     .limit(500);
/// # Ok::<(), herald::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    pub(crate) scope: KeyScope,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
    pub(crate) at: ReadAt,
    pub(crate) limit: usize,
    pub(crate) continue_from: Option<Continue>,
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
}
