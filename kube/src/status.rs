//! Errors as the apiserver reports them: a `metav1.Status` object with an
//! HTTP code, a reason and a message (and a retry hint where a client
//! should come back). Which of Herald's errors is which status is
//! [`errors`](crate::errors)' policy; writing one as an HTTP response is
//! the server's.

use std::time::Duration;

use serde_json::{Value, json};

use crate::quote::go_quote;

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

    /// 406 `NotAcceptable`: no media type of the client's `Accept` can
    /// be served.
    pub fn not_acceptable(message: impl Into<String>) -> ApiError {
        ApiError::new(406, "NotAcceptable", message)
    }

    /// 404 `NotFound` for one object of a core resource (`pods "web-0"
    /// not found`).
    pub fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError::not_found_in("", resource, name)
    }

    /// 404 `NotFound` for one object of `resource` in `group`
    /// (`deployments.apps "web" not found`, `details.group` set), as the
    /// apiserver words it.
    pub fn not_found_in(group: &str, resource: &str, name: &str) -> ApiError {
        let (qualified, details) = if group.is_empty() {
            (resource.to_owned(), json!({"name": name, "kind": resource}))
        } else {
            (
                format!("{resource}.{group}"),
                json!({"name": name, "group": group, "kind": resource}),
            )
        };
        ApiError {
            details: Some(Box::new(details)),
            ..ApiError::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
        }
    }

    /// 404 `NotFound` for a path the server does not serve, in the
    /// apiserver's words (which do not repeat the path).
    pub fn no_route() -> ApiError {
        ApiError {
            // `details: {}`, as the apiserver's `NewNotFound` of no
            // resource and no name gives it.
            details: Some(Box::new(json!({}))),
            ..ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
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
    /// `field: Forbidden: rule`, as [`herald::options::OptionsError`] prints.
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
    /// `NewTooLargeResourceVersionError`, whose `NewTimeoutError` puts
    /// `Timeout: ` before the message).
    pub fn too_large(message: impl Into<String>, retry_after: Duration) -> ApiError {
        let message = format!("Timeout: {}", message.into());
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

    /// 401 `Unauthorized`: credentials were presented and not accepted
    /// (or none, where anonymous requests are refused). The apiserver's
    /// body names no detail, whatever failed.
    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 `Forbidden`, as the apiserver's `NewForbidden`: `message` is
    /// the authorizer's (`User "u" cannot list ...`), prefixed with what
    /// was refused (`pods "web" is forbidden: `, `pods is forbidden: `,
    /// or `forbidden: ` for a path); `details` always present, with the
    /// name, group and resource that are set.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: &str) -> ApiError {
        let qualified = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let message = if qualified.is_empty() {
            format!("forbidden: {message}")
        } else if name.is_empty() {
            format!("{qualified} is forbidden: {message}")
        } else {
            format!("{qualified} {} is forbidden: {message}", go_quote(name))
        };
        let mut details = serde_json::Map::new();
        for (key, value) in [("name", name), ("group", group), ("kind", resource)] {
            if !value.is_empty() {
                details.insert(key.into(), json!(value));
            }
        }
        ApiError {
            details: Some(Box::new(Value::Object(details))),
            ..ApiError::new(403, "Forbidden", message)
        }
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }

    /// 500 with no reason: an error the apiserver did not classify
    /// (`ErrorToAPIStatus` of a plain Go error, as a conversion
    /// webhook's failure is).
    pub fn unclassified(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "", message)
    }

    /// The `Status` object (an empty reason is left out, as Go's
    /// `omitempty` leaves it).
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
        if self.reason.is_empty()
            && let Some(status) = status.as_object_mut()
        {
            status.shift_remove("reason");
        }
        let mut details = self.details.as_deref().cloned();
        if let Some(after) = self.retry_after {
            let d = details.get_or_insert_with(|| json!({}));
            d["retryAfterSeconds"] = json!(after.as_secs().max(1));
        }
        if let (Some(d), Some(map)) = (details, status.as_object_mut()) {
            // `metav1.Status` declares `Details` before `Code`.
            let at = map.len() - 1;
            map.shift_insert(at, "details".into(), d);
        }
        status
    }

    /// The `Status` object as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        crate::gojson::to_vec(&self.to_status()).unwrap_or_default()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

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
    fn an_unclassified_error_has_no_reason() {
        let s =
            ApiError::unclassified("conversion webhook for g/v1, Kind=W failed: no").to_status();
        assert_eq!(
            s,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "conversion webhook for g/v1, Kind=W failed: no", "code": 500})
        );
    }
}
