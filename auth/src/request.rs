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
}

impl RequestInfo {
    /// The attributes of a request with `method`, `path` (decoded) and
    /// raw `query` (without `?`).
    pub fn new(method: &str, path: &str, query: Option<&str>) -> RequestInfo {
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
        if info.name.is_empty() && info.verb == "get" {
            let (watch, name) = list_options(query.unwrap_or(""));
            info.verb = if watch { "watch" } else { "list" }.to_owned();
            if let Some(name) = name.filter(|n| valid_path_segment(n)) {
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

/// From a list's query: whether it is a watch, and the name its field
/// selector requires, as the apiserver's parameter decoding reads them.
/// A query that does not decode (a `watch` that is not a boolean, a
/// field selector that does not parse) names nothing, and is a watch if
/// its first `watch` value is other than `false` or `0`.
fn list_options(query: &str) -> (bool, Option<String>) {
    let mut watch_values = Vec::new();
    let mut selector = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(k), Some(v)) = (unescape_query(k), unescape_query(v)) else {
            continue;
        };
        match k.as_str() {
            "watch" => watch_values.push(v),
            "fieldSelector" if selector.is_none() => selector = Some(v),
            _ => {}
        }
    }
    let first_watch = watch_values.first().map(String::as_str);
    let parsed_watch = match first_watch {
        None | Some("") => Some(false),
        Some(v) => go_parse_bool(v),
    };
    let name = selector.as_deref().map(required_name);
    match (parsed_watch, name) {
        (Some(watch), None) => (watch, None),
        (Some(watch), Some(Ok(name))) => (watch, name),
        _ => {
            let watch = first_watch
                .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"));
            (watch, None)
        }
    }
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The name a field selector requires (`metadata.name=N` or `==N`
/// among its terms), `Ok(None)` if it requires none, or `Err` if it does
/// not parse.
fn required_name(selector: &str) -> Result<Option<String>, ()> {
    let mut name = None;
    for term in split_unescaped(selector, ',') {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        let (field, op, value) = if let Some(at) = find_unescaped(term, "!=") {
            (&term[..at], "!=", &term[at + 2..])
        } else if let Some(at) = find_unescaped(term, "==") {
            (&term[..at], "==", &term[at + 2..])
        } else if let Some(at) = find_unescaped(term, "=") {
            (&term[..at], "=", &term[at + 1..])
        } else {
            return Err(());
        };
        let value = unescape_selector(value)?;
        if field.trim() == "metadata.name" && op != "!=" && name.is_none() {
            name = Some(value);
        }
    }
    Ok(name)
}

/// `s` split at each `sep` not escaped by a backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// Where `pat` first occurs in `s` outside a backslash escape.
fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if s[i..].starts_with(pat) {
            return Some(i);
        }
    }
    None
}

/// A field selector value with its escapes (`\\`, `\,`, `\=`) resolved;
/// any other escape is an error, as the apiserver's `UnescapeValue`.
fn unescape_selector(v: &str) -> Result<String, ()> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return Err(()),
            }
        } else if c == ',' || c == '=' {
            return Err(());
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A query component with `+` as space and `%XX` decoded, or `None` if
/// it is not valid UTF-8 or a `%` escape is malformed (Go drops such
/// pairs).
fn unescape_query(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The apiserver's `IsValidPathSegmentName`: not `.` or `..`, no `/`
/// and no `%`.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

#[cfg(test)]
mod tests {
    use super::RequestInfo;

    fn info(method: &str, path: &str, query: &str) -> RequestInfo {
        RequestInfo::new(method, path, Some(query))
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
        // Not a boolean: the apiserver's fallback calls it a watch.
        assert_eq!(info("GET", "/api/v1/pods", "watch=yes").verb, "watch");
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
