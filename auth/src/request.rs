//! What a request asks for, read from its method, path and query as the
//! apiserver's `RequestInfoFactory` reads it (`requestinfo.go`): the
//! attributes authorization decides on and a refusal names.
//!
//! - `/api/v1/...` and `/apis/<group>/<version>/...` with a resource are
//!   resource requests; anything else (`/version`, `/apis/apps/v1`,
//!   `/metrics`) is a non-resource request whose verb is the method,
//!   lowercased.
//! - GET of a collection is `list`, or `watch` with `watch=true` (or
//!   `/api/v1/watch/...`); GET of one object is `get`.
//! - A list or watch whose field selector requires `metadata.name=N` is
//!   a request for the name `N`, so that RBAC's `resourceNames` allow a
//!   watch of one object, as the apiserver allows it.
//! - `/api/v1/namespaces/ns` is the object `ns` of `namespaces` in the
//!   namespace `ns`; its `status` and `finalize` are its subresources.

use herald_kube::Query;
use herald_kube::params::ListAttributes;

/// A request's attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// Whether it names a resource (else the path is what is asked for).
    pub is_resource: bool,
    /// The URL path as requested.
    pub path: String,
    /// `get`, `list`, `watch`, `create`, ...; for a non-resource request
    /// the method, lowercased.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The namespace (`""`: cluster scope, or every namespace).
    pub namespace: String,
    /// The resource's plural name.
    pub resource: String,
    /// The subresource (`status`), if any.
    pub subresource: String,
    /// The object's name, if one is named (in the path, or by a field
    /// selector `metadata.name=`).
    pub name: String,
    /// Whether the path names a collection (a list or watch of it; a
    /// `name` came from its field selector), not one object.
    pub collection: bool,
}

impl RequestInfo {
    /// The attributes of a request with `method`, `path` (percent-decoded
    /// whole, as Go's `URL.Path`) and `query` (parsed once, as Go's
    /// `URL.Query()`: the same [`Query`] the request is then served
    /// from).
    pub fn new(method: &str, path: &str, query: &Query) -> RequestInfo {
        let non_resource = || RequestInfo {
            is_resource: false,
            path: path.to_owned(),
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let trimmed = path.trim_matches('/');
        let parts: Vec<&str> = trimmed.split('/').collect();
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return non_resource();
        }
        let mut info = RequestInfo {
            path: path.to_owned(),
            ..RequestInfo::default()
        };
        let mut rest = &parts[1..];
        if parts[0] == "apis" {
            if rest.len() < 3 {
                return non_resource();
            }
            info.api_group = rest[0].to_owned();
            rest = &rest[1..];
        }
        info.api_version = rest[0].to_owned();
        rest = &rest[1..];
        if matches!(rest[0], "proxy" | "watch") {
            if rest.len() < 2 {
                // The apiserver answers this with an error before any
                // authorization: treated as the path it is.
                return non_resource();
            }
            info.verb = rest[0].to_owned();
            rest = &rest[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }
        if rest[0] == "namespaces" && rest.len() > 1 {
            info.namespace = rest[1].to_owned();
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        info.is_resource = true;
        if rest.len() >= 3 && info.verb != "proxy" {
            info.subresource = rest[2].to_owned();
        }
        if rest.len() >= 2 {
            info.name = rest[1].to_owned();
        }
        info.resource = rest[0].to_owned();
        info.collection = info.name.is_empty();
        if info.name.is_empty() && info.verb == "get" {
            let asked = ListAttributes::of(query);
            info.verb = if asked.watch { "watch" } else { "list" }.to_owned();
            if let Some(name) = asked.name {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        info
    }

    /// The resource with its subresource (`pods/log`), as RBAC matches
    /// it and a refusal names it.
    pub fn resource_and_subresource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RequestInfo;

    fn info(method: &str, path: &str, query: &str) -> RequestInfo {
        RequestInfo::new(method, path, &herald_kube::Query::parse(Some(query)))
    }

    #[test]
    fn collections_are_listed_or_watched() {
        let r = info("GET", "/api/v1/namespaces/ns/pods", "");
        assert!(r.is_resource);
        assert_eq!(
            (r.verb.as_str(), r.namespace.as_str(), r.resource.as_str()),
            ("list", "ns", "pods")
        );
        assert_eq!(info("GET", "/api/v1/pods", "watch=1").verb, "watch");
        assert_eq!(info("GET", "/api/v1/pods", "watch=true").verb, "watch");
        assert_eq!(info("GET", "/api/v1/pods", "watch=false").verb, "list");
        // Not a boolean: the apiserver's conversion calls it a watch, the
        // empty value too.
        assert_eq!(info("GET", "/api/v1/pods", "watch=yes").verb, "watch");
        assert_eq!(info("GET", "/api/v1/pods", "watch=").verb, "watch");
        assert_eq!(info("GET", "/api/v1/pods", "watch=FALSE").verb, "list");
        assert_eq!(info("GET", "/api/v1/pods", "watch=0").verb, "list");
        let w = info("GET", "/api/v1/watch/namespaces/ns/pods", "");
        assert_eq!((w.verb.as_str(), w.namespace.as_str()), ("watch", "ns"));
        let g = info("GET", "/apis/apps/v1/namespaces/ns/deployments/web", "");
        assert_eq!(
            (g.verb.as_str(), g.api_group.as_str(), g.name.as_str()),
            ("get", "apps", "web")
        );
        assert_eq!(info("HEAD", "/api/v1/nodes/n1", "").verb, "get");
        assert_eq!(
            info("DELETE", "/api/v1/namespaces/ns/pods", "").verb,
            "deletecollection"
        );
    }

    #[test]
    fn a_field_selector_on_the_name_names_the_object() {
        let r = info(
            "GET",
            "/api/v1/namespaces/ns/secrets",
            "fieldSelector=metadata.name%3Dtoken&watch=1",
        );
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("watch", "token"));
        let r = info(
            "GET",
            "/api/v1/secrets",
            "fieldSelector=metadata.name==a,status.phase=x",
        );
        assert_eq!(r.name, "a");
        assert_eq!(
            info("GET", "/api/v1/secrets", "fieldSelector=metadata.name!=a").name,
            ""
        );
        // A name that is no path segment, or a selector that does not
        // parse, names nothing.
        assert_eq!(
            info(
                "GET",
                "/api/v1/secrets",
                "fieldSelector=metadata.name%3Da%2Fb"
            )
            .name,
            ""
        );
        assert_eq!(
            info("GET", "/api/v1/secrets", "fieldSelector=metadata.name").name,
            ""
        );
        let bad = info(
            "GET",
            "/api/v1/secrets",
            "fieldSelector=metadata.name%3D..&watch=1",
        );
        assert_eq!((bad.verb.as_str(), bad.name.as_str()), ("watch", ""));
    }

    #[test]
    fn namespaces_and_subresources() {
        let n = info("GET", "/api/v1/namespaces/foo", "");
        assert_eq!(
            (n.resource.as_str(), n.namespace.as_str(), n.name.as_str()),
            ("namespaces", "foo", "foo")
        );
        let s = info("GET", "/api/v1/namespaces/foo/status", "");
        assert_eq!((s.name.as_str(), s.subresource.as_str()), ("foo", "status"));
        let l = info("GET", "/api/v1/namespaces/ns/pods/web/log", "");
        assert_eq!(l.resource_and_subresource(), "pods/log");
        assert_eq!(info("GET", "/api/v1/namespaces", "").verb, "list");
    }

    #[test]
    fn everything_else_is_a_path() {
        for p in [
            "/version",
            "/apis/apps/v1",
            "/api/v1",
            "/metrics",
            "/",
            "/foo/bar/baz",
            "/api/v1/watch",
        ] {
            let r = info("GET", p, "");
            assert!(!r.is_resource, "{p}");
            assert_eq!((r.verb.as_str(), r.path.as_str()), ("get", p));
        }
        assert_eq!(info("POST", "/healthz", "").verb, "post");
    }
}
