//! Herald's typed errors as the statuses the apiserver answers with: a
//! read's and a watch's failures ([`ApiError`]'s `From`), and the end of a
//! watch stream ([`end_error`]): which code and reason tells a client what
//! to do next (410 `Expired`: re-list; 429 and 504: retry; 503: retry
//! elsewhere).

use std::time::Duration;

use herald::EndReason;
use herald::read::ReadError;
use herald::watch::WatchError;

use crate::status::ApiError;

impl From<ReadError> for ApiError {
    fn from(e: ReadError) -> ApiError {
        let message = e.to_string();
        match e {
            ReadError::NotReady(n) => ApiError::not_ready(message, n.retry_after()),
            ReadError::EngineStopped => ApiError::unavailable(message),
            ReadError::Gone(_) => ApiError::expired(message),
            ReadError::TooLargeResourceVersion(t) => ApiError::too_large(message, t.retry_after()),
            ReadError::InvalidOptions(rule) => ApiError::invalid_options(rule),
            ReadError::InvalidContinue(_) => ApiError::bad_request(message),
            // The apiserver answers a continue token it cannot serve with
            // 410: the client lists again from the start.
            ReadError::ForeignContinue => ApiError::expired(message),
            ReadError::Cancelled => ApiError::internal(message),
            ReadError::Source(_) | ReadError::SourceRegressed { .. } => {
                ApiError::not_ready(message, Duration::from_secs(1))
            }
            _ => ApiError::bad_request(message),
        }
    }
}

impl From<WatchError> for ApiError {
    fn from(e: WatchError) -> ApiError {
        let message = e.to_string();
        match e {
            WatchError::Gone(_) => ApiError::expired(message),
            WatchError::EngineStopped => ApiError::unavailable(message),
            WatchError::InvalidOptions(rule) => ApiError::invalid_options(rule),
            WatchError::Upstream(r) => ApiError::from(r),
            _ => ApiError::internal(message),
        }
    }
}

/// What a watch stream says when the watch ends, if anything: the
/// `ERROR` event a client acts on (410 `Expired` makes it re-list), or
/// `None` where the stream just closes and the client watches again from
/// the last version it saw (a deadline, a stop).
pub fn end_error(reason: &EndReason) -> Option<ApiError> {
    let message = reason.to_string();
    match reason {
        EndReason::Stopped | EndReason::Deadline => None,
        // A server going away (a rolling restart): the stream ends after
        // a bookmark, with no error, and the client watches again from
        // its last version, which the next server serves too (an ERROR
        // event would make client-go re-list).
        EndReason::Drained => None,
        // Too slow: the apiserver closes the connection (the cacher's
        // terminated watcher); the client watches again from its last
        // version, which is still in the history.
        EndReason::TooSlow => None,
        EndReason::Gone(_) => Some(ApiError::expired(message)),
        // A re-list of the cache: the client must re-list too.
        EndReason::Relisted => Some(ApiError::expired(format!(
            "{message}: the cache re-listed from its source"
        ))),
        EndReason::TooLargeResourceVersion(t) => {
            Some(ApiError::too_large(message, t.retry_after()))
        }
        EndReason::EngineStopped | EndReason::EngineFailed => Some(ApiError::unavailable(message)),
        _ => Some(ApiError::internal(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_map_to_what_a_client_does_next() {
        let gone = herald::event::Gone::new(5.into(), 9.into());
        let e = end_error(&EndReason::Gone(gone)).unwrap();
        assert_eq!((e.code, e.reason), (410, "Expired"));
        assert_eq!(e.message, "too old resource version: 5 (9)");
        assert_eq!(end_error(&EndReason::Relisted).unwrap().code, 410);
        assert!(end_error(&EndReason::Deadline).is_none());
        assert!(end_error(&EndReason::TooSlow).is_none());
        assert_eq!(end_error(&EndReason::EngineStopped).unwrap().code, 503);
    }

    #[test]
    fn read_and_watch_errors_map_to_the_apiservers_codes() {
        let code = |e: ReadError| ApiError::from(e).code;
        assert_eq!(code(ReadError::EngineStopped), 503);
        assert_eq!(code(ReadError::ForeignContinue), 410);
        assert_eq!(code(ReadError::Cancelled), 500);
        let e = ApiError::from(WatchError::EngineStopped);
        assert_eq!((e.code, e.reason), (503, "ServiceUnavailable"));
        assert!(e.retry_after.is_some());
    }
}
