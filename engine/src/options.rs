//! Kubernetes' rules for combining a request's version options
//! ([`OptionsError`]): shared by watches
//! ([`WatchRequest`](crate::WatchRequest)) and reads
//! ([`ListRequest`](crate::read::ListRequest), [`ReadAt`](crate::read::ReadAt)).

use std::fmt;

/// A combination of `resourceVersion`, `resourceVersionMatch`,
/// `sendInitialEvents` and `continue` that Kubernetes refuses
/// (`ValidateListOptions`, apimachinery's internalversion validation);
/// each names its rule, and prints as the API server words it (HTTP 422).
///
/// ```
/// # use herald::*;
/// # use herald::options::OptionsError;
/// # use herald::watch::WatchError;
/// let (engine, _writer) = Engine::new(Config::default())?;
/// let err = engine.watch(WatchRequest::new().send_initial_events(true)).unwrap_err();
/// assert_eq!(err, WatchError::InvalidOptions(OptionsError::InitialEventsNeedNotOlderThan));
/// assert_eq!(
///     err.to_string(),
///     "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// A watch with `sendInitialEvents` needs `resourceVersionMatch=NotOlderThan`.
    InitialEventsNeedNotOlderThan,
    /// A watch may carry `resourceVersionMatch` only with `sendInitialEvents`.
    MatchNeedsInitialEvents,
    /// A read may carry `resourceVersionMatch` only with a `resourceVersion`.
    MatchNeedsResourceVersion,
    /// `resourceVersionMatch=Exact` at `resourceVersion=0`.
    ExactAtZero,
    /// `resourceVersionMatch` with a `continue` token.
    MatchWithContinue,
    /// A continued list (`continue`) with a `resourceVersion` other than
    /// `0`: the token names its version.
    ContinueWithResourceVersion,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (field, rule) = match self {
            OptionsError::InitialEventsNeedNotOlderThan => (
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ),
            OptionsError::MatchNeedsInitialEvents => (
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ),
            OptionsError::MatchNeedsResourceVersion => (
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
            OptionsError::ExactAtZero => (
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            OptionsError::MatchWithContinue => (
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ),
            OptionsError::ContinueWithResourceVersion => (
                "resourceVersion",
                "specifying resource version is not allowed when using continue",
            ),
        };
        write!(f, "{field}: Forbidden: {rule}")
    }
}

impl std::error::Error for OptionsError {}
