//! Errors as the apiserver reports them: a `metav1.Status` object with an
//! HTTP code, a reason and a message (and `Retry-After` where a client
//! should come back), built from Herald's typed errors.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald::{EndReason, ReadError, WatchError};
use serde_json::{Value, json};

/// A failed request: what the client is told, as a `Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status code (also the Status object's `code`).
    pub code: u16,
    /// The machine-readable reason (`BadRequest`, `NotFound`, `Expired`, ...).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// `details` of the Status, if any.
    pub details: Option<Box<Value>>,
    /// When the client should try again (`Retry-After`, and
    /// `details.retryAfterSeconds`).
    pub retry_after: Option<Duration>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 400 `BadRequest`: a malformed parameter, with the parser's text.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 404 `NotFound` for one object (`pods "web-0" not found`).
    pub fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError {
            details: Some(Box::new(json!({"name": name, "kind": resource}))),
            ..ApiError::new(404, "NotFound", format!("{resource} \"{name}\" not found"))
        }
    }

    /// 404 `NotFound` for a path the server does not serve.
    pub fn no_route(path: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 405 `MethodNotAllowed`: the server only reads.
    pub fn method_not_allowed(method: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{method} is not supported: this server serves list, watch and get"),
        )
    }

    /// 410 `Expired`: a version older than the history the cache keeps
    /// (the apiserver's `NewResourceExpired`; clients re-list on it).
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// 429 `TooManyRequests` with a retry hint: the cache is not ready.
    pub fn not_ready(message: impl Into<String>, retry_after: Duration) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            ..ApiError::new(429, "TooManyRequests", message)
        }
    }

    /// 429 `TooManyRequests` with a retry hint: admission refused the
    /// request (the apiserver's priority and fairness answer).
    pub fn too_many_requests(message: impl Into<String>, retry_after: Duration) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            ..ApiError::new(429, "TooManyRequests", message)
        }
    }

    /// 422 `Invalid`: list options that parse but break a rule (the
    /// apiserver's `ValidateListOptions`), as `NewInvalid` reports them
    /// for the kind `ListOptions` of `meta.k8s.io`. `error` reads
    /// `field: Forbidden: rule`, as [`herald::OptionsError`] prints.
    pub fn invalid_options(error: impl std::fmt::Display) -> ApiError {
        let error = error.to_string();
        let (field, detail) = error.split_once(": ").unwrap_or(("", error.as_str()));
        ApiError {
            details: Some(Box::new(json!({
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [{
                    "reason": "FieldValueForbidden",
                    "message": detail,
                    "field": field,
                }],
            }))),
            ..ApiError::new(
                422,
                "Invalid",
                format!("ListOptions.meta.k8s.io \"\" is invalid: {error}"),
            )
        }
    }

    /// 504 `Timeout` with a retry hint: the cache did not reach the
    /// requested version in time (the apiserver's
    /// `NewTooLargeResourceVersionError`).
    pub fn too_large(message: impl Into<String>, retry_after: Duration) -> ApiError {
        ApiError {
            details: Some(Box::new(json!({
                "causes": [{
                    "reason": "ResourceVersionTooLarge",
                    "message": "Too large resource version",
                }],
                "retryAfterSeconds": retry_after.as_secs().max(1),
            }))),
            retry_after: Some(retry_after),
            ..ApiError::new(504, "Timeout", message)
        }
    }

    /// 503 `ServiceUnavailable`: the engine is stopped or failed.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            retry_after: Some(Duration::from_secs(1)),
            ..ApiError::new(503, "ServiceUnavailable", message)
        }
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = self.details.as_deref().cloned();
        if let Some(after) = self.retry_after {
            let d = details.get_or_insert_with(|| json!({}));
            d["retryAfterSeconds"] = json!(after.as_secs().max(1));
        }
        if let Some(d) = details {
            status["details"] = d;
        }
        status
    }

    /// The `Status` object as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_status()).unwrap_or_default()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, self.to_json()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(after) = self.retry_after {
            headers.insert(header::RETRY_AFTER, after.as_secs().max(1).into());
        }
        response
    }
}

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
    fn a_status_has_the_apiservers_shape() {
        let s = ApiError::not_found("pods", "web-0").to_status();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["message"], "pods \"web-0\" not found");
        assert_eq!(s["details"]["name"], "web-0");
        let t = ApiError::too_large("x", Duration::from_secs(2)).to_status();
        assert_eq!(t["code"], 504);
        assert_eq!(t["details"]["retryAfterSeconds"], 2);
        assert_eq!(
            t["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
    }

    #[test]
    fn ends_map_to_what_a_client_does_next() {
        let gone = herald::Gone::new(5.into(), 9.into());
        let e = end_error(&EndReason::Gone(gone)).unwrap();
        assert_eq!((e.code, e.reason), (410, "Expired"));
        assert_eq!(e.message, "too old resource version: 5 (9)");
        assert_eq!(end_error(&EndReason::Relisted).unwrap().code, 410);
        assert!(end_error(&EndReason::Deadline).is_none());
        assert!(end_error(&EndReason::TooSlow).is_none());
        assert_eq!(end_error(&EndReason::EngineStopped).unwrap().code, 503);
    }
}
