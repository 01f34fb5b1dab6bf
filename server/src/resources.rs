//! A resource request, served from exactly what authorization decided on:
//! the verb, group, version, resource, namespace and name of its
//! `RequestInfo` (see the module `parsed`), with its options from the same
//! parsed query. No path is matched here and no query read again, so a
//! request cannot be served as anything but what it was allowed as:
//!
//! - `get` of a name: that object (a `watch` parameter on it is ignored,
//!   as the apiserver's GET handler ignores it); `list`: the collection;
//!   `watch`: the collection's watch, or with a name from a `/watch/`
//!   path, the legacy watch of that one object;
//! - a subresource (`status`, `log`, `scale`), `proxy`, or any other
//!   verb: Herald serves none (404); on a path that names something, a
//!   method other than GET is a 405 (the apiserver's answer to `HEAD` on
//!   a built-in resource's paths too; `HEAD` of a custom resource is
//!   served as a GET, as its handler serves it);
//! - the scope as the resource has it: a namespaced resource's objects
//!   under `namespaces/{ns}/`, a cluster-scoped one's without, and the
//!   namespace object `namespaces/{name}` itself (for which `RequestInfo`
//!   names the namespace and the name alike). Any other shape is a 404,
//!   whatever authorization allowed.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use herald_kube::ApiError;

use crate::names;
use crate::parsed::Parsed;
use crate::respond::json_response;
use crate::server::{Caller, Server};
use crate::status;
use crate::target::Target;

/// Serves a resource request (`parsed.info.is_resource`).
pub(crate) async fn serve(
    server: &Server,
    method: &Method,
    parsed: &Parsed,
    caller: Caller,
) -> Response {
    let info = &parsed.info;
    let target = Target {
        group: info.api_group.clone(),
        version: info.api_version.clone(),
        plural: info.resource.clone(),
    };
    let not_found = || status::response(ApiError::no_route());
    let parts: Vec<&str> = parsed.path.trim_matches('/').split('/').collect();
    // `/apis/{group}/...` with a group, and no empty segment anywhere
    // (`RequestInfo` reads `namespaces//pods` as every namespace's pods).
    let grouped = parts[0] == "apis";
    if parts.iter().any(|p| p.is_empty())
        || (grouped && info.api_group.is_empty())
        || !info.subresource.is_empty()
        || info.verb == "proxy"
    {
        return not_found();
    }
    // Where the path names the namespace object itself: `namespaces/{name}`
    // and nothing after it, past `/api/v1` or `/apis/{group}/{version}`
    // (and a `/watch`).
    let mut prefix = if grouped { 3 } else { 2 };
    if parts.get(prefix) == Some(&"watch") {
        prefix += 1;
    }
    let namespace_object =
        info.resource == "namespaces" && parts.len() == prefix + 2 && parts[prefix] == "namespaces";
    let resource = match server.resource(&target, false) {
        Ok(r) => r,
        Err(_) if namespace_object && target.group.is_empty() && method != Method::GET => {
            return status::response(ApiError::method_not_allowed(method.as_str()));
        }
        Err(_) if namespace_object && target.group.is_empty() && info.verb == "get" => {
            return implicit_namespace(&info.name);
        }
        Err(e) => return status::response(e),
    };
    let ns = match (resource.info.namespaced, info.namespace.as_str()) {
        (true, "") if info.collection => None,
        (true, "") => return not_found(),
        (true, ns) if !namespace_object => Some(ns),
        (false, "") => None,
        (false, _) if namespace_object => None,
        _ => return not_found(),
    };
    let checked = ns.map_or(Ok(()), names::namespace).and_then(|()| {
        if info.collection {
            Ok(())
        } else {
            names::object_name(&info.name)
        }
    });
    if let Err(e) = checked {
        return status::response(e);
    }
    // A path that names something: the method. Nothing here writes
    // (405); the apiserver's custom resource handler serves HEAD as GET
    // (hyper sends no body), its built-in routes have no HEAD.
    let head_as_get = method == Method::HEAD && !resource.info.typed;
    if method != Method::GET && !head_as_get {
        return status::response(ApiError::method_not_allowed(method.as_str()));
    }
    let query = &parsed.query;
    match (info.verb.as_str(), info.collection) {
        ("get", false) => {
            server
                .object(&resource, ns, &info.name, query, caller)
                .await
        }
        ("list", true) => server.collection(&resource, ns, query, false, caller).await,
        ("watch", true) => server.collection(&resource, ns, query, true, caller).await,
        ("watch", false) => {
            server
                .object_watch(&resource, ns, &info.name, query, caller)
                .await
        }
        _ => not_found(),
    }
}

/// A namespace where no Namespace objects are served: every name is an
/// active one, so that a client that checks the namespace of a missing
/// object (kubectl does) reports the object missing.
fn implicit_namespace(name: &str) -> Response {
    if let Err(e) = names::namespace(name) {
        return status::response(e);
    }
    let ns = serde_json::json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    });
    json_response(StatusCode::OK, serde_json::to_vec(&ns).unwrap_or_default())
}
