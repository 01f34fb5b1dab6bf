//! The names impersonation recognises, validated as the apiserver
//! validates them: service-account user names (`serviceaccount.SplitUsername`),
//! node user names (`isNodeUsername`, `mode.go`) and the keys of extra
//! values a constrained mode accepts (`validateExtra`, `mode.go`).

use std::collections::BTreeMap;

use herald_kube::quote::go_quote;

/// The prefix of a service account's user name.
const SA_PREFIX: &str = "system:serviceaccount:";
/// The prefix of a node's user name.
const NODE_PREFIX: &str = "system:node:";
/// The group every service account is in.
pub(super) const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The group every node is in (`user.NodesGroup`).
pub(super) const NODES: &str = "system:nodes";

/// The namespace and name of a service account's user name
/// (`system:serviceaccount:<ns>:<name>`, the namespace a DNS-1123 label,
/// the name a DNS-1123 subdomain), as `serviceaccount.SplitUsername`.
pub(super) fn service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SA_PREFIX)?;
    let mut parts = rest.split(':');
    let (namespace, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || !dns_label(namespace) || !dns_subdomain(name) {
        return None;
    }
    Some((namespace, name))
}

/// A service account's groups (`serviceaccount.MakeGroupNames`).
pub(super) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS.to_owned(),
        format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
    ]
}

/// The node a node's user name names (`system:node:<name>`, the name a
/// DNS-1123 subdomain), as `isNodeUsername`.
pub(super) fn node(username: &str) -> Option<&str> {
    username
        .strip_prefix(NODE_PREFIX)
        .filter(|n| dns_subdomain(n))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 bytes.
fn dns_label(s: &str) -> bool {
    s.len() <= 63 && label_shape(s)
}

fn label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// Labels joined by `.`, at most 253 bytes (`IsDNS1123Subdomain`).
fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && subdomain_shape(s)
}

fn subdomain_shape(s: &str) -> bool {
    s.split('.').all(label_shape)
}

const SUBDOMAIN_ERROR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const PATH_ERROR: &str =
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";

/// `IsDomainPrefixedPath(field.NewPath("extra", "key"), key)` as its
/// aggregated error's text, `None` when the key is valid (`acme.io/foo`).
fn domain_prefixed_path_error(key: &str) -> Option<String> {
    let invalid = |value: &str, detail: &str| {
        format!("extra.key: Invalid value: {}: {detail}", go_quote(value))
    };
    if key.is_empty() {
        return Some("extra.key: Required value".to_owned());
    }
    let Some((host, path)) = key
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return Some(invalid(
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
    };
    let mut errors = Vec::new();
    if host.len() > 253 {
        errors.push(invalid(host, "must be no more than 253 characters"));
    }
    if !subdomain_shape(host) {
        errors.push(invalid(host, SUBDOMAIN_ERROR));
    }
    let path_ok = path
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !path_ok {
        errors.push(invalid(path, PATH_ERROR));
    }
    // `utilerrors.NewAggregate(...).Error()`: one error as it is, more
    // in brackets, each distinct message once.
    errors.dedup();
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

/// `validateExtra`: the reason a constrained mode refuses these extra
/// values, if it does. Go ranges over a map, so with several bad keys
/// the one named is random there; here it is the first in key order.
pub(super) fn extra_error(extra: &BTreeMap<String, Vec<String>>) -> Option<String> {
    for (key, values) in extra {
        if key.is_empty() {
            return Some("impersonating the empty string key in extra is not allowed".to_owned());
        }
        if let Some(e) = domain_prefixed_path_error(key) {
            return Some(format!(
                "impersonating an invalid key in extra is not allowed: {e}"
            ));
        }
        if *key != key.to_lowercase() {
            return Some(format!(
                "impersonating a non-lowercase key in extra is not allowed: {}",
                go_quote(key)
            ));
        }
        if values.is_empty() {
            return Some("impersonating empty values in extra is not allowed".to_owned());
        }
        if values.iter().any(String::is_empty) {
            return Some("impersonating the empty string value in extra is not allowed".to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_split_as_split_username() {
        assert_eq!(
            service_account("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(
            service_account("system:serviceaccount:ns:a.b-c"),
            Some(("ns", "a.b-c"))
        );
        for bad in [
            "system:serviceaccount:ns",
            "system:serviceaccount:ns:sa:x",
            "system:serviceaccount::sa",
            "system:serviceaccount:ns:",
            "system:serviceaccount:a.b:sa",
            "system:serviceaccount:NS:sa",
            "system:serviceaccount:ns:Sa",
            "system:serviceaccounts:ns:sa",
        ] {
            assert_eq!(service_account(bad), None, "{bad}");
        }
        let long_ns = format!("system:serviceaccount:{}:sa", "a".repeat(64));
        assert_eq!(service_account(&long_ns), None);
        assert_eq!(
            service_account_groups("ns"),
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }

    #[test]
    fn node_names_are_subdomains() {
        assert_eq!(node("system:node:n1"), Some("n1"));
        assert_eq!(node("system:node:a.b.c"), Some("a.b.c"));
        assert_eq!(node("system:node:"), None);
        assert_eq!(node("system:node:N1"), None);
        assert_eq!(node("system:node:a..b"), None);
        assert_eq!(node("system:nodes:n1"), None);
        assert_eq!(node(&format!("system:node:{}", "a".repeat(254))), None);
        // The subdomain regex has no per-label limit: 253 bytes of one
        // label pass.
        let long = "a".repeat(253);
        assert_eq!(node(&format!("system:node:{long}")), Some(long.as_str()));
        let ok = format!("{}.{}", "a".repeat(63), "b".repeat(63));
        assert_eq!(node(&format!("system:node:{ok}")), Some(ok.as_str()));
    }
}
