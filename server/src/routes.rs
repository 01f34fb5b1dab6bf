//! The routes: the edge (the module `guard`) in front of every request,
//! serving resource requests itself (the module `resources`: LIST, WATCH
//! and GET under the apiserver's paths, `/api/v1/...` for the core group,
//! `/apis/<group>/<version>/...` for the others), and behind it the other
//! paths, matched on the decoded path: discovery, health, readiness,
//! metrics and the open watches.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Extension, Router};
use herald::engine::Lifecycle;
use herald_kube::query::Pair;
use herald_kube::{ApiError, aggregated};

use crate::discovery;
use crate::parsed::Parsed;
use crate::respond::json_response;
use crate::server::{Server, nosniff};
use crate::status;

impl Server {
    /// The routes, ready for `axum::serve`.
    pub fn router(&self) -> Router {
        let paths = Router::new()
            .route("/version", any(version))
            .route("/version/", any(version))
            .route("/api", any(api))
            .route("/api/", any(api))
            .route("/api/v1", any(api_v1))
            .route("/api/v1/", any(api_v1))
            .route("/apis", any(apis))
            .route("/apis/", any(apis))
            .route("/apis/{group}", any(api_group))
            .route("/apis/{group}/", any(api_group))
            .route("/apis/{group}/{version}", any(group_resources))
            .route("/apis/{group}/{version}/", any(group_resources))
            .route("/healthz", any(healthz))
            .route("/livez", any(healthz))
            .route("/readyz", any(readyz))
            .route("/metrics", any(metrics))
            .route("/debug/herald/watches", any(debug_watches))
            .fallback(fallback)
            .with_state(self.clone());
        // The edge runs before any route is matched: it reads the request
        // once (see the module `parsed`), decides on it, serves a resource
        // request itself and hands the rest to `paths`, matched on the
        // decoded path authorization saw.
        Router::new()
            .fallback_service(paths)
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                crate::guard::guard,
            ))
            .layer(axum::middleware::map_response(nosniff))
    }
}

/// A path's segments, percent-decoded; a segment that is not UTF-8 once
/// decoded is a `400` `Status` (axum's own answer is plain text).
type Segments<T> = Result<Path<T>, PathRejection>;

fn segments<T>(p: Segments<T>) -> Result<T, ApiError> {
    p.map(|Path(t)| t).map_err(|e| {
        let text = e.body_text();
        let what = if text.contains("`ns`") {
            "invalid namespace"
        } else if text.contains("`name`") {
            "invalid resource name"
        } else {
            "invalid path"
        };
        ApiError::bad_request(format!("{what}: {text}"))
    })
}

async fn version() -> Response {
    json_response(StatusCode::OK, discovery::version())
}

async fn api(State(s): State<Server>, headers: HeaderMap) -> Response {
    if let Some(r) = aggregated(&s, &headers, true) {
        return r;
    }
    json_response(StatusCode::OK, discovery::api_versions())
}

async fn api_v1(State(s): State<Server>) -> Response {
    json_response(
        StatusCode::OK,
        discovery::api_resources("", "v1", s.snapshot().values().flat_map(|r| r.served())),
    )
}

async fn apis(State(s): State<Server>, headers: HeaderMap) -> Response {
    if let Some(r) = aggregated(&s, &headers, false) {
        return r;
    }
    json_response(
        StatusCode::OK,
        discovery::api_groups(s.snapshot().values().flat_map(|r| r.served())),
    )
}

/// The aggregated document of the core group (`core`: `/api`) or of the
/// others (`/apis`), if the request's `Accept` asks for it: `304` when
/// its `If-None-Match` names the document's `ETag`.
fn aggregated(s: &Server, headers: &HeaderMap, core: bool) -> Option<Response> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    if !aggregated::wanted(accept) {
        return None;
    }
    let map = s.snapshot();
    let doc = aggregated::document(
        map.values()
            .flat_map(|r| r.served())
            .filter(|r| r.group.is_empty() == core),
    );
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == doc.etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, doc.body).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(aggregated::CONTENT_TYPE),
        );
        r
    };
    let h = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&doc.etag) {
        h.insert(header::ETAG, etag);
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    Some(response)
}

async fn api_group(State(s): State<Server>, path: Segments<String>) -> Response {
    let group = match segments(path) {
        Ok(g) => g,
        Err(e) => return status::response(e),
    };
    match discovery::api_group(&group, s.snapshot().values().flat_map(|r| r.served())) {
        Some(body) => json_response(StatusCode::OK, body),
        None => status::response(ApiError::no_route()),
    }
}

async fn group_resources(State(s): State<Server>, path: Segments<(String, String)>) -> Response {
    let (group, version) = match segments(path) {
        Ok(p) => p,
        Err(e) => return status::response(e),
    };
    let map = s.snapshot();
    let served = || {
        map.values()
            .flat_map(|r| r.served())
            .filter(|r| r.group == group && r.version == version)
    };
    if served().next().is_none() {
        return status::response(ApiError::no_route());
    }
    json_response(
        StatusCode::OK,
        discovery::api_resources(&group, &version, served()),
    )
}

async fn healthz(State(s): State<Server>) -> Response {
    let failed: Vec<String> = s
        .resources()
        .iter()
        .filter_map(|r| {
            r.engine
                .failure()
                .map(|f| format!("{}: {f}", r.info.qualified()))
        })
        .collect();
    if failed.is_empty() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (StatusCode::INTERNAL_SERVER_ERROR, failed.join("\n")).into_response()
    }
}

async fn readyz(State(s): State<Server>) -> Response {
    let mut out = String::new();
    let mut ready = true;
    let tolerated = s.config().max_undecodable;
    for r in s.resources() {
        let state = r.engine.lifecycle();
        let mut ok = state == Lifecycle::Ready;
        let mut line = format!("{}: {state:?}", r.info.qualified());
        if let Some(h) = &r.health {
            let now = h.undecodable_now();
            if now > 0 {
                line.push_str(&format!(
                    ", {now} stored values not decodable (tolerated: {tolerated})"
                ));
                if let Some((key, why)) = h.last_undecodable() {
                    line.push_str(&format!("; last: {key}: {why}"));
                }
                ok &= now <= tolerated;
            }
        }
        ready &= ok;
        out.push_str(&format!("[{}] {line}\n", if ok { "+" } else { "-" }));
    }
    if let Some(since) = s.termination().since() {
        ready = false;
        out.push_str(&format!(
            "[-] shutdown: terminating for {:.1} s: this replica is going away\n",
            since.elapsed().as_secs_f64()
        ));
    }
    if let Some(access) = s.access() {
        let ok = access.ready();
        ready &= ok;
        out.push_str(if ok {
            "[+] authorizer: ready\n"
        } else {
            "[-] authorizer: the cluster's RBAC objects are not read yet\n"
        });
    }
    out.push_str(if ready {
        "readyz check passed\n"
    } else {
        "readyz check failed\n"
    });
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, out).into_response()
}

async fn metrics(State(s): State<Server>) -> Response {
    let mut r = crate::metrics::render(s.registry()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// The open watches, furthest behind first (see the module
/// `open_watches`): `?limit=N` of them (500 unless asked, at most 10,000).
async fn debug_watches(
    State(s): State<Server>,
    Extension(parsed): Extension<Arc<Parsed>>,
) -> Response {
    const MAX: usize = 10_000;
    let mut limit = 500;
    for Pair { key, value: v, .. } in parsed.query.pairs() {
        match (key.as_str(), v.parse::<usize>()) {
            ("limit", Ok(n)) if (1..=MAX).contains(&n) => limit = n,
            ("limit", _) => {
                return status::response(ApiError::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX}, not {v:?}"
                )));
            }
            _ => {}
        }
    }
    let body = serde_json::to_vec(&s.open_watches().list(limit)).unwrap_or_default();
    json_response(StatusCode::OK, body)
}

async fn fallback() -> Response {
    status::response(ApiError::no_route())
}
