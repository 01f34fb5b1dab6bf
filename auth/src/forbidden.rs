//! The apiserver's answers to a refused request: 401 when credentials
//! were not accepted, 403 when the user may not do what it asked, with
//! the message the apiserver's `forbiddenMessage` words
//! (`responsewriters/errors.go`):
//!
//! ```text
//! pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "ns"
//! pods is forbidden: User "alice" cannot watch resource "pods" in API group "" at the cluster scope
//! forbidden: User "alice" cannot get path "/metrics"
//! ```
//!
//! The generated part is HTML-escaped (`&`, `<`, `>`), as the apiserver
//! escapes it; the authorizer's reason, if any, follows after `: `.

use herald_kube::ApiError;
use herald_kube::quote::go_quote;

use crate::request::RequestInfo;
use crate::user::User;

/// 401 `Unauthorized`.
pub fn unauthorized() -> ApiError {
    ApiError::unauthorized()
}

/// 403 `Forbidden` for `user` asking for `info`, with the authorizer's
/// `reason` (empty when it had none: RBAC found no rule).
pub fn forbidden(user: &User, info: &RequestInfo, reason: &str) -> ApiError {
    let message = sanitize(&forbidden_message(user, info));
    let message = if reason.is_empty() {
        message
    } else {
        format!("{message}: {reason}")
    };
    if info.is_resource {
        ApiError::forbidden(&info.api_group, &info.resource, &info.name, &message)
    } else {
        ApiError::forbidden("", "", "", &message)
    }
}

/// `User "u" cannot <verb> ...`.
fn forbidden_message(user: &User, info: &RequestInfo) -> String {
    let name = go_quote(&user.name);
    if !info.is_resource {
        return format!(
            "User {name} cannot {} path {}",
            info.verb,
            go_quote(&info.path)
        );
    }
    let resource = go_quote(&info.resource_and_subresource());
    let group = go_quote(&info.api_group);
    if info.namespace.is_empty() {
        format!(
            "User {name} cannot {} resource {resource} in API group {group} at the cluster scope",
            info.verb
        )
    } else {
        format!(
            "User {name} cannot {} resource {resource} in API group {group} in the namespace {}",
            info.verb,
            go_quote(&info.namespace)
        )
    }
}

/// The apiserver's sanitizer: `&`, `<` and `>` as HTML entities.
fn sanitize(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> User {
        User {
            name: "alice".into(),
            ..User::default()
        }
    }

    fn refused(method: &str, path: &str, query: &str) -> (String, serde_json::Value) {
        let e = forbidden(
            &alice(),
            &RequestInfo::new(method, path, &herald_kube::Query::parse(Some(query))),
            "",
        );
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        let details = e.to_status()["details"].clone();
        (e.message, details)
    }

    #[test]
    fn messages_are_the_apiservers() {
        let (m, d) = refused("GET", "/api/v1/namespaces/ns/pods/x", "");
        assert_eq!(
            m,
            r#"pods "x" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "ns""#
        );
        assert_eq!(d, serde_json::json!({"name": "x", "kind": "pods"}));
        let (m, d) = refused("GET", "/api/v1/pods", "watch=1");
        assert_eq!(
            m,
            r#"pods is forbidden: User "alice" cannot watch resource "pods" in API group "" at the cluster scope"#
        );
        assert_eq!(d, serde_json::json!({"kind": "pods"}));
        let (m, d) = refused("GET", "/apis/apps/v1/namespaces/ns/deployments", "");
        assert_eq!(
            m,
            r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" in the namespace "ns""#
        );
        assert_eq!(
            d,
            serde_json::json!({"group": "apps", "kind": "deployments"})
        );
        let (m, d) = refused("GET", "/api/v1/namespaces/ns/pods/x/log", "");
        assert!(
            m.starts_with(r#"pods "x" is forbidden: User "alice" cannot get resource "pods/log""#)
        );
        assert_eq!(d["kind"], "pods");
        let (m, d) = refused("GET", "/metrics", "");
        assert_eq!(m, r#"forbidden: User "alice" cannot get path "/metrics""#);
        assert_eq!(d, serde_json::json!({}));
    }

    #[test]
    fn the_generated_part_is_escaped_and_the_reason_follows() {
        let info = RequestInfo::new("GET", "/a<b>&c", &herald_kube::Query::parse(None));
        let e = forbidden(&alice(), &info, "RBAC: <x>");
        assert_eq!(
            e.message,
            r#"forbidden: User "alice" cannot get path "/a&lt;b&gt;&amp;c": RBAC: <x>"#
        );
    }
}
