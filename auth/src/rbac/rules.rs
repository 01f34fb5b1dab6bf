//! Whether one rule allows a request: the apiserver's `RuleAllows` and
//! its helpers (`pkg/apis/rbac/v1/evaluation_helpers.go`), exact and
//! case-sensitive:
//!
//! - a verb, group or resource of `*` matches any;
//! - a resource matches exactly, subresource included (`pods` does not
//!   match `pods/log`), or as `*/sub` for any resource's `sub`;
//! - `resourceNames` limit the rule to those names (a request naming no
//!   object, a list or watch, matches none of them);
//! - a non-resource URL matches exactly, or by prefix when it ends in
//!   `*`.

use super::model::PolicyRule;
use crate::request::RequestInfo;

/// Whether `rule` allows `info`.
pub fn allows(rule: &PolicyRule, info: &RequestInfo) -> bool {
    if !any_or(&rule.verbs, &info.verb) {
        return false;
    }
    if !info.is_resource {
        return rule
            .non_resource_urls
            .iter()
            .any(|u| url_matches(u, &info.path));
    }
    any_or(&rule.api_groups, &info.api_group)
        && resource_matches(rule, &info.resource_and_subresource(), &info.subresource)
        && (rule.resource_names.is_empty() || rule.resource_names.contains(&info.name))
}

/// Whether `values` holds `*` or `value`.
fn any_or(values: &[String], value: &str) -> bool {
    values.iter().any(|v| v == "*" || v == value)
}

fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

fn url_matches(rule: &str, path: &str) -> bool {
    if rule == "*" || rule == path {
        return true;
    }
    rule.ends_with('*') && path.starts_with(rule.trim_end_matches('*'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: vec![],
        }
    }

    fn req(path: &str, query: &str) -> RequestInfo {
        RequestInfo::new("GET", path, &herald_kube::Query::parse(Some(query)))
    }

    #[test]
    fn matching_is_exact_with_stars() {
        let pods = rule(&["get", "list"], &[""], &["pods"], &[]);
        assert!(allows(&pods, &req("/api/v1/namespaces/a/pods", "")));
        assert!(!allows(&pods, &req("/api/v1/namespaces/a/pods", "watch=1")));
        assert!(!allows(&pods, &req("/api/v1/namespaces/a/pods/x/log", "")));
        assert!(!allows(
            &pods,
            &req("/apis/apps/v1/namespaces/a/deployments", "")
        ));
        assert!(!allows(
            &rule(&["GET"], &[""], &["pods"], &[]),
            &req("/api/v1/pods", "")
        ));
        let all = rule(&["*"], &["*"], &["*"], &[]);
        assert!(allows(&all, &req("/api/v1/namespaces/a/pods/x/log", "")));
        let status = rule(&["get"], &[""], &["*/status"], &[]);
        assert!(allows(
            &status,
            &req("/api/v1/namespaces/a/pods/x/status", "")
        ));
        assert!(!allows(&status, &req("/api/v1/namespaces/a/pods/x", "")));
        assert!(!allows(
            &rule(&["get"], &[""], &["pods/*"], &[]),
            &req("/api/v1/namespaces/a/pods/x/log", "")
        ));
    }

    #[test]
    fn resource_names_limit_to_named_requests() {
        let one = rule(&["get", "list", "watch"], &[""], &["secrets"], &["token"]);
        assert!(allows(&one, &req("/api/v1/namespaces/a/secrets/token", "")));
        assert!(!allows(
            &one,
            &req("/api/v1/namespaces/a/secrets/other", "")
        ));
        assert!(!allows(
            &one,
            &req("/api/v1/namespaces/a/secrets", "watch=1")
        ));
        assert!(allows(
            &one,
            &req(
                "/api/v1/namespaces/a/secrets",
                "watch=1&fieldSelector=metadata.name%3Dtoken"
            )
        ));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/logs/*".into()],
            ..PolicyRule::default()
        };
        assert!(allows(&r, &req("/healthz", "")));
        assert!(!allows(&r, &req("/healthz/ping", "")));
        assert!(allows(&r, &req("/logs/a/b", "")));
        assert!(allows(&r, &req("/logs/", "")));
        assert!(!allows(&r, &req("/logs", "")));
        // A resource rule never allows a path, nor a path rule a resource.
        assert!(!allows(&r, &req("/api/v1/pods", "")));
    }
}
