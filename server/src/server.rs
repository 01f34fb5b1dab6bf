//! [`Server`]: LIST, WATCH and GET of the served resources, admitted,
//! bounded and counted (the paths are in `routes`).

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use herald::WatchRequest;
use herald::read::{ListRequest, ReadAt, ReadCancel};
use herald::selector::{FieldSelector, KeyScope};
use herald_kube::params::Options;
use herald_kube::wire::{self, Encoder, Format, ListHead, Offer, Outgoing};
use herald_kube::{ApiError, Query, proto};
use prometheus_client::registry::Registry;

use crate::access::{Access, Grant, Revocation};
use crate::admit::{Admission, Class, Client, Limits, Seat};
use crate::audit_log::AuditLog;
use crate::conn::{Flight, Reaper};
use crate::counts::ServerMetrics;
use crate::metrics::AuditSlot;
use crate::open_watches::{Asked, OpenWatches};
use crate::outgoing;
use crate::resource::{Resource, ResourceMap};
use crate::respond::{body_response, list_response};
use crate::shutdown::Termination;
use crate::status;
use crate::target::Target;
use crate::watch::WatchBody;

/// The server's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// A watch without `timeoutSeconds` ends after a random time in
    /// `[min_request_timeout, 2 × min_request_timeout)` (the apiserver's
    /// `--min-request-timeout`, 1,800 s).
    pub min_request_timeout: Duration,
    /// A watch connection that has not taken the chunk it was handed for
    /// this long (its client stopped reading) is closed; see
    /// [`Server::serve`]. Default 10 s.
    pub write_stall_timeout: Duration,
    /// Any other response not written in full within this is closed (the
    /// apiserver's `--request-timeout`, 60 s); see [`Server::serve`].
    pub request_timeout: Duration,
    /// The most bytes a watch connection holds handed to its socket and
    /// not yet written (64 KiB); past it the watch waits for its client.
    /// One event larger than this is still sent whole.
    pub watch_in_flight_bytes: usize,
    /// Keys of a resource whose stored value could not be decoded that
    /// `/readyz` tolerates (0): past it the resource is not ready, since
    /// it serves fewer objects than are stored.
    pub max_undecodable: u64,
    /// Lists, gets and watch initialisations doing engine work at once
    /// (64); see the module `admit`. Bounds the blocking pool's threads
    /// with [`ServerConfig::max_waiting_reads`].
    pub max_inflight_reads: usize,
    /// Reads of a version the cache has not reached, waiting for it at
    /// once (64), apart from the others.
    pub max_waiting_reads: usize,
    /// Requests queued for a seat, in all (256); past it: 429.
    pub max_queued_reads: usize,
    /// How long a request waits for a seat (5 s); past it: 429.
    pub queue_wait: Duration,
    /// Watches open at once, in all (100,000); past it: 429.
    pub max_watches: usize,
    /// Watches open at once per client (its user once authenticated, else
    /// its address; 10,000); past it: 429.
    pub max_watches_per_client: usize,
    /// Selector text held by open watches, in all (16 MiB; a parsed
    /// selector costs up to about twelve times its text, a set's values
    /// each a string of their own); past it: 429.
    pub max_selector_bytes: usize,
    /// Response bytes not yet taken by their clients, in all (512 MiB):
    /// past it a list or get is refused with 429 until clients read (or
    /// their connections are closed at `request_timeout`).
    pub max_unwritten_bytes: usize,
    /// After a drain, how long connections may take to finish before
    /// they are closed (30 s); see the module `shutdown`.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            min_request_timeout: Duration::from_secs(1800),
            write_stall_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            watch_in_flight_bytes: 64 * 1024,
            max_undecodable: 0,
            max_inflight_reads: 64,
            max_waiting_reads: 64,
            max_queued_reads: 256,
            queue_wait: Duration::from_secs(5),
            max_watches: 100_000,
            max_watches_per_client: 10_000,
            max_selector_bytes: 16 << 20,
            max_unwritten_bytes: 512 << 20,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl ServerConfig {
    fn limits(&self) -> Limits {
        Limits {
            max_inflight_reads: self.max_inflight_reads,
            max_waiting_reads: self.max_waiting_reads,
            max_queued_reads: self.max_queued_reads,
            queue_wait: self.queue_wait,
            max_watches: self.max_watches,
            max_watches_per_client: self.max_watches_per_client,
            max_selector_bytes: self.max_selector_bytes,
            max_unwritten_bytes: self.max_unwritten_bytes,
        }
    }

    /// Threads the blocking pool needs: a seat each, and a few for the
    /// rest.
    pub fn blocking_threads(&self) -> usize {
        self.max_inflight_reads
            .saturating_add(self.max_waiting_reads)
            .saturating_add(8)
    }
}

/// The Kubernetes list/watch API of a set of resources.
#[derive(Debug, Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    /// Swapped whole when a resource comes or goes (a CRD's): a request
    /// reads one consistent map.
    resources: Arc<ArcSwap<ResourceMap>>,
    registry: Registry,
    config: ServerConfig,
    reaper: Arc<Reaper>,
    admission: Admission,
    metrics: Arc<ServerMetrics>,
    /// Authentication and authorization, when set (see the module
    /// `access`); without, every request is served.
    access: OnceLock<Arc<Access>>,
    /// The open watches (`/debug/herald/watches`).
    watches: Arc<OpenWatches>,
    /// The audit log, when set.
    audit: AuditSlot,
    /// Whether the server is going away (see the module `shutdown`).
    termination: Termination,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field(
                "resources",
                &self.resources.load().keys().cloned().collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Cancels a blocking read when the request is dropped (the client went
/// away).
struct CancelOnDrop(ReadCancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Runs a blocking engine call off the runtime's workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ApiError::internal(format!("a read failed: {e}"))))
}

impl Server {
    /// Serves `resources` (by their group-qualified plural names,
    /// `deployments.apps`; a later one of the same name replaces an
    /// earlier).
    pub fn new(resources: impl IntoIterator<Item = Resource>, config: ServerConfig) -> Server {
        let resources: ResourceMap = resources
            .into_iter()
            .map(|r| (r.info.qualified(), r))
            .collect();
        let resources = Arc::new(ArcSwap::from_pointee(resources));
        let metrics = Arc::new(ServerMetrics::default());
        let audit = AuditSlot::default();
        let registry = crate::metrics::registry(resources.clone(), metrics.clone(), audit.clone());
        Server {
            inner: Arc::new(Inner {
                resources,
                registry,
                reaper: Arc::new(Reaper::new(
                    config.write_stall_timeout,
                    config.request_timeout,
                    metrics.clone(),
                )),
                admission: Admission::new(config.limits(), metrics.clone()),
                metrics,
                access: OnceLock::new(),
                watches: Arc::default(),
                audit,
                config,
                termination: Termination::default(),
            }),
        }
    }

    /// The open watches.
    pub(crate) fn open_watches(&self) -> &OpenWatches {
        &self.inner.watches
    }

    /// The served resources, now.
    pub fn resources(&self) -> Vec<Resource> {
        self.inner.resources.load().values().cloned().collect()
    }

    /// The served resources, now, by group-qualified plural name.
    pub(crate) fn snapshot(&self) -> Arc<ResourceMap> {
        self.inner.resources.load_full()
    }

    /// Serves `resource` too (replacing one of the same name, which it
    /// returns): a custom resource whose CRD appeared.
    pub fn add(&self, resource: Resource) -> Option<Resource> {
        let name = resource.info.qualified();
        let mut old = None;
        self.inner.resources.rcu(|map| {
            let mut map = ResourceMap::clone(map);
            old = map.insert(name.clone(), resource.clone());
            map
        });
        old
    }

    /// Stops serving the resource of this group-qualified name (a custom
    /// resource whose CRD went), and returns it: its caller stops its
    /// engine, which ends its watches.
    pub fn remove(&self, qualified: &str) -> Option<Resource> {
        let mut old = None;
        self.inner.resources.rcu(|map| {
            let mut map = ResourceMap::clone(map);
            old = map.remove(qualified);
            map
        });
        old
    }

    /// Authenticates and authorizes every request with `access` (see
    /// the module `access`), from the next connection on; `false` if
    /// access control was set already (it is set once, before serving).
    pub fn set_access(&self, access: Access) -> bool {
        self.inner.access.set(Arc::new(access)).is_ok()
    }

    /// Whether access control can decide (no access control, or its RBAC
    /// snapshot exists): what `/readyz` also reports.
    pub fn access_ready(&self) -> bool {
        self.access().is_none_or(|a| a.ready())
    }

    /// The access control, if set.
    pub(crate) fn access(&self) -> Option<&Arc<Access>> {
        self.inner.access.get()
    }

    /// Audits requests to `log` from now on (see the module `audit_log`);
    /// `false` (and `log` dropped) if an audit log is already set.
    pub fn set_audit(&self, log: AuditLog) -> bool {
        self.inner.audit.set(Arc::new(log)).is_ok()
    }

    /// The audit log, if set.
    pub(crate) fn audit(&self) -> Option<&Arc<AuditLog>> {
        self.inner.audit.get()
    }

    /// The server's own counters.
    pub(crate) fn metrics(&self) -> &Arc<ServerMetrics> {
        &self.inner.metrics
    }

    /// The reaper of the connections [`Server::serve`] serves.
    pub(crate) fn reaper(&self) -> &Arc<Reaper> {
        &self.inner.reaper
    }

    /// Whether the server is going away.
    pub(crate) fn termination(&self) -> &Termination {
        &self.inner.termination
    }

    /// The served resource a path names, if any.
    pub(crate) fn resource(&self, target: &Target, namespaced: bool) -> Result<Resource, ApiError> {
        match self.inner.resources.load().get(&target.qualified()) {
            Some(r) => r
                .at(&target.version)
                .filter(|r| !namespaced || r.info.namespaced)
                .ok_or_else(ApiError::no_route),
            None => Err(ApiError::no_route()),
        }
    }

    /// The server's settings.
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The registry `/metrics` renders.
    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// A watch's timeout when the client set none: random in
    /// `[min, 2 × min)`, so that watches opened together do not all end
    /// together.
    fn default_timeout(&self) -> Duration {
        let min = self.inner.config.min_request_timeout;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        // A cheap mix of the clock's low bits: spread, not secret.
        let frac = f64::from(nanos.wrapping_mul(2_654_435_761) % 1_000_000) / 1e6;
        // Saturating: a configured `Duration::MAX` means "never".
        let spread = Duration::try_from_secs_f64(min.as_secs_f64() * frac).unwrap_or(Duration::MAX);
        min.saturating_add(spread)
    }

    /// A LIST or WATCH of `resource`'s collection (in `ns`, or every
    /// namespace), with the options of `query`; `watch` as the request
    /// was decided (see the module `resources`).
    pub(crate) async fn collection(
        &self,
        resource: &Resource,
        ns: Option<&str>,
        query: &Query,
        watch: bool,
        caller: Caller,
    ) -> Response {
        let verb = if watch { "watch" } else { "list" };
        let errors = caller.error_format(resource);
        let options = match options_for(resource, query, watch) {
            Ok(o) => o,
            Err(e) => return self.answer(resource, verb, Err(e), errors),
        };
        let caller = match caller.negotiated(resource, watch) {
            Ok(c) => c,
            Err(e) => return self.answer(resource, verb, Err(e), errors),
        };
        let scope = ns.map_or(KeyScope::All, KeyScope::prefix);
        let r = if watch {
            self.watch(resource, scope, options, caller).await
        } else {
            self.list(resource, scope, options, caller).await
        };
        self.answer(resource, verb, r, errors)
    }

    /// A GET of `resource`'s object `name` (in `ns`), at the version
    /// `query` asks for.
    pub(crate) async fn object(
        &self,
        resource: &Resource,
        ns: Option<&str>,
        name: &str,
        query: &Query,
        caller: Caller,
    ) -> Response {
        let errors = caller.error_format(resource);
        let r = match Options::parse_get(query)
            .and_then(|o| Ok((o, caller.negotiated(resource, false)?)))
        {
            Ok((options, caller)) => self.get(resource, ns, name, options, caller).await,
            Err(e) => Err(e),
        };
        self.answer(resource, "get", r, errors)
    }

    /// The legacy single-object watch (`/watch/.../{name}`): the
    /// collection narrowed to the one key, its field selector required to
    /// name the object if it names one (the apiserver's `ListResource`:
    /// `fieldSelector metadata.name doesn't match requested name`).
    pub(crate) async fn object_watch(
        &self,
        resource: &Resource,
        ns: Option<&str>,
        name: &str,
        query: &Query,
        caller: Caller,
    ) -> Response {
        let errors = caller.error_format(resource);
        let r = async {
            let mut options = options_for(resource, query, true)?;
            let caller = caller.negotiated(resource, true)?;
            match &options.fields {
                Some(f) if !f.is_everything() => {
                    if f.requires_exact("metadata.name") != Some(name) {
                        return Err(ApiError::bad_request(
                            "fieldSelector metadata.name doesn't match requested name",
                        ));
                    }
                }
                _ => {
                    options.fields = Some(
                        format!("metadata.name={}", escape_field_value(name))
                            .parse::<FieldSelector>()
                            .map_err(|e| {
                                ApiError::bad_request(format!("invalid name {name:?}: {e}"))
                            })?,
                    );
                }
            }
            let key = resource.info.key(ns, name);
            self.watch(resource, KeyScope::exact(&key), options, caller)
                .await
        }
        .await;
        self.answer(resource, "watch", r, errors)
    }

    /// The response `r`, an error written in `errors` (the encoding the
    /// request's `Accept` chose: [`Caller::error_format`]), with the
    /// resource's deprecation warning.
    fn answer(
        &self,
        resource: &Resource,
        verb: &'static str,
        r: Result<Response, ApiError>,
        errors: Option<&'static dyn Format>,
    ) -> Response {
        let mut response = r.unwrap_or_else(|e| status::response_in(e, errors));
        resource.metrics.request(verb, response.status().as_u16());
        if let Some(warning) = &resource.info.deprecation {
            // The apiserver's deprecation warning (kubectl prints it).
            if let Some(v) = crate::respond::warning_header(warning) {
                response.headers_mut().append(header::WARNING, v);
            }
        }
        response
    }

    /// A seat for a read at `rv` (see the module `admit`): of the waiting
    /// class if the cache has not reached `rv` yet.
    async fn seat(
        &self,
        resource: &Resource,
        rv: Option<herald::ResourceVersion>,
        client: Client,
    ) -> Result<Seat, ApiError> {
        let ahead = rv.is_some_and(|rv| rv > resource.engine.resource_version());
        let class = if ahead { Class::Waiting } else { Class::Read };
        self.inner.admission.seat(class, client).await
    }

    async fn watch(
        &self,
        resource: &Resource,
        scope: KeyScope,
        o: Options,
        caller: Caller,
    ) -> Result<Response, ApiError> {
        let encoder = caller.encoder(resource, &o)?;
        let ticket = self
            .inner
            .admission
            .watch(caller.client.clone(), o.selector_bytes)?;
        let seat = self
            .seat(resource, o.resource_version, caller.client)
            .await?;
        let asked = Asked {
            user: caller.grant.as_deref().map(|g| g.user().name.clone()),
            address: caller.address,
            resource: resource.info.qualified(),
            path: caller.path.to_string(),
            labels: o.labels.as_ref().map(|l| l.to_string()),
            fields: o.fields.as_ref().map(|f| f.to_string()),
            media: encoder.name(),
        };
        let mut req = WatchRequest::new()
            .scope(scope)
            .resource_version(o.resource_version)
            .allow_bookmarks(o.allow_bookmarks)
            .timeout(o.timeout.unwrap_or_else(|| self.default_timeout()));
        if let Some(labels) = o.labels {
            req = req.labels(labels);
        }
        if let Some(fields) = o.fields {
            req = req.fields(fields);
        }
        if let Some(rvm) = o.resource_version_match {
            req = req.resource_version_match(rvm);
        }
        if let Some(send) = o.send_initial_events {
            req = req.send_initial_events(send);
        }
        let engine = resource.engine.clone();
        // The seat goes with the engine call: a call that outlives its
        // request (the client went) still holds it.
        let opened = blocking(move || {
            let _seat = seat;
            Ok(engine.watch(req))
        })
        .await?;
        let body = match opened {
            Ok(watch) => {
                let registered =
                    self.inner
                        .watches
                        .register(asked, resource.engine.clone(), watch.stopper());
                let mut body = WatchBody::new(resource.clone(), watch, encoder.clone())
                    .admitted(ticket)
                    .registered(registered);
                if let Some(revocation) = caller.grant.as_ref().and_then(Revocation::of) {
                    body = body.revocable(revocation);
                }
                match caller.flight {
                    Some(flight) => body.in_flight(flight, self.inner.config.watch_in_flight_bytes),
                    None => body,
                }
            }
            Err(e) => {
                let e = ApiError::from(e);
                // Options and readiness fail the request; a version the
                // cache cannot serve is an ERROR event on a 200, which is
                // what makes a client re-list (the apiserver's error
                // watcher).
                if matches!(e.code, 400 | 422 | 429 | 503) {
                    return Err(e);
                }
                WatchBody::error(resource.clone(), e, encoder.clone())
            }
        };
        let mut response = Response::new(Body::new(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(encoder.stream_content_type()),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        Ok(response)
    }

    async fn list(
        &self,
        resource: &Resource,
        scope: KeyScope,
        o: Options,
        caller: Caller,
    ) -> Result<Response, ApiError> {
        let encoder = caller.encoder(resource, &o)?;
        let at = ReadAt::for_list(
            o.resource_version,
            o.resource_version_match,
            o.limit > 0,
            o.continue_token.is_some(),
        )
        .map_err(ApiError::invalid_options)?;
        let cancel = ReadCancel::new();
        let mut req = ListRequest::new().scope(scope).at(at).cancel_on(&cancel);
        if o.limit > 0 {
            req = req.limit(o.limit);
        }
        if let Some(token) = o.continue_token {
            req = req.continue_from(token);
        }
        if let Some(labels) = o.labels {
            req = req.labels(labels);
        }
        if let Some(fields) = o.fields {
            req = req.fields(fields);
        }
        self.inner
            .admission
            .check_unwritten(self.inner.reaper.in_flight())?;
        let _guard = CancelOnDrop(cancel);
        let seat = self
            .seat(resource, o.resource_version, caller.client)
            .await?;
        let r = resource.clone();
        blocking(move || {
            let _seat = seat;
            let page = r.engine.list(&req)?;
            let token = page.continue_token.as_ref().map(ToString::to_string);
            let json = outgoing::items(&r, &page.items)?;
            let items: Vec<Outgoing> = (page.items.iter().zip(&json))
                .map(|(i, json)| Outgoing {
                    object: Some(&i.object),
                    json,
                    rv: i.resource_version,
                })
                .collect();
            let head = ListHead {
                info: &r.info,
                rv: page.resource_version,
                continue_token: token.as_deref(),
                remaining: page.remaining_item_count,
            };
            let body = encoder.list(head, &items)?;
            Ok(list_response(caller.gzip, encoder.content_type(), body))
        })
        .await
    }

    async fn get(
        &self,
        resource: &Resource,
        ns: Option<&str>,
        name: &str,
        o: Options,
        caller: Caller,
    ) -> Result<Response, ApiError> {
        let encoder = caller.encoder(resource, &o)?;
        let at = ReadAt::for_get(o.resource_version, o.resource_version_match)
            .map_err(ApiError::invalid_options)?;
        let key = resource.info.key(ns, name);
        self.inner
            .admission
            .check_unwritten(self.inner.reaper.in_flight())?;
        let seat = self
            .seat(resource, o.resource_version, caller.client)
            .await?;
        let r = resource.clone();
        let name = name.to_owned();
        blocking(move || {
            let _seat = seat;
            let got = r.engine.get(&key, at)?;
            let Some(item) = got.item else {
                return Err(ApiError::not_found_in(&r.info.group, &r.info.plural, &name));
            };
            let json = outgoing::item(&r, &item)?;
            let body = encoder.object(Outgoing {
                object: Some(&item.object),
                json: &json,
                rv: item.resource_version,
            })?;
            Ok(body_response(StatusCode::OK, encoder.content_type(), body))
        })
        .await
    }
}

/// A field selector value with `\\`, `,` and `=` escaped.
fn escape_field_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The request's options for `resource`, its field selector checked
/// against the fields the resource's objects carry.
fn options_for(resource: &Resource, query: &Query, watch: bool) -> Result<Options, ApiError> {
    let o = Options::parse(query, watch)?;
    if let Some(fields) = &o.fields {
        for term in fields.terms() {
            if !resource.info.selectable(term.field()) {
                return Err(ApiError::bad_request(unselectable(
                    &resource.info,
                    term.field(),
                )));
            }
        }
    }
    Ok(o)
}

/// Why a field selector may not name `field`, in the apiserver's words:
/// a built-in kind with no conversion of its own (its labels are the
/// metadata's two) refuses it with `runtime.DefaultMetaV1FieldSelectorConversion`'s
/// message; the others (their own conversion, custom resources'
/// `crConverter`) with `field label not supported`.
fn unselectable(info: &herald_kube::ResourceInfo, field: &str) -> String {
    if info.typed && info.fields.is_empty() && info.namespace_selectable != Some(false) {
        format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            herald_kube::quote::go_quote(field)
        )
    } else {
        format!("field label not supported: {field}")
    }
}

/// Who asks, as the resource handlers need it: its address (for
/// admission), its response's flight (with [`Server::serve`]), what it
/// accepts (JSON, protobuf, `Table`s) and whether it takes gzip.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    client: Client,
    flight: Option<Arc<Flight>>,
    accept: Option<Arc<str>>,
    /// The encoding negotiated for the resource ([`Caller::negotiated`]).
    format: &'static dyn Format,
    gzip: bool,
    /// What access control allowed it as, if it is on.
    grant: Option<Arc<Grant>>,
    /// Its connection's address.
    address: Option<std::net::IpAddr>,
    /// The request's path.
    path: Arc<str>,
}

impl Caller {
    /// The same caller, with the encoding its `Accept` header chooses
    /// for `resource`'s responses; 406 if none.
    fn negotiated(mut self, resource: &Resource, watch: bool) -> Result<Caller, ApiError> {
        self.format = wire::negotiate(self.accept.as_deref(), offer(resource, watch))?;
        Ok(self)
    }

    /// The encoding an error to this caller is written in: the one its
    /// `Accept` chooses for `resource`'s objects (the apiserver's
    /// `ErrorNegotiated` negotiates again, whatever failed), `None` if
    /// none (a 406 is written as JSON).
    fn error_format(&self, resource: &Resource) -> Option<&'static dyn Format> {
        wire::negotiate(self.accept.as_deref(), offer(resource, false)).ok()
    }

    /// The encoder of this request's response to `resource`, in the
    /// negotiated format, shaped by the request's options `o` (a table's
    /// `includeObject`, refused here as the apiserver refuses it).
    fn encoder(&self, resource: &Resource, o: &Options) -> Result<Arc<dyn Encoder>, ApiError> {
        self.format.encoder(&wire::Request {
            info: &resource.info,
            printer: &resource.printer,
            include_object: o.include_object.as_deref(),
            encodings: &resource.encodings,
        })
    }
}

/// What `resource`'s responses may be encoded as: protobuf where its kind
/// has a protobuf form.
fn offer(resource: &Resource, watch: bool) -> Offer {
    let info = &resource.info;
    let protobuf = info.typed && proto::knows(&info.api_version(), &info.kind);
    Offer { protobuf, watch }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Caller, Self::Rejection> {
        let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let grant = parts.extensions.get::<Arc<Grant>>().cloned();
        // Fairness counts a request against its user once access control
        // has named one (an anonymous request, like any with access
        // control off, against its address).
        let connection = parts
            .extensions
            .get::<Client>()
            .cloned()
            .unwrap_or_default();
        let address = match connection {
            Client::Addr(ip) => Some(ip),
            Client::User(_) => None,
        };
        let client = match grant.as_deref().map(Grant::user) {
            Some(user) if user.name != herald_auth::user::ANONYMOUS => {
                Client::User(Arc::from(user.name.as_str()))
            }
            _ => connection,
        };
        Ok(Caller {
            client,
            flight: parts.extensions.get::<Arc<Flight>>().cloned(),
            accept: header(header::ACCEPT).map(Arc::from),
            format: wire::FORMATS[0],
            gzip: crate::compress::accepts_gzip(header(header::ACCEPT_ENCODING)),
            grant,
            address,
            path: Arc::from(parts.uri.path()),
        })
    }
}

/// Every response says its content type is the one it declares (the
/// apiserver's `X-Content-Type-Options: nosniff`): error bodies echo a
/// client's text.
pub(crate) async fn nosniff(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_watch_timeout_is_spread_and_never_overflows() {
        for min in [Duration::from_secs(1800), Duration::ZERO, Duration::MAX] {
            let server = Server::new(
                [],
                ServerConfig {
                    min_request_timeout: min,
                    ..ServerConfig::default()
                },
            );
            let t = server.default_timeout();
            assert!(t >= min && t <= min.saturating_mul(2), "{min:?}: {t:?}");
        }
    }
}
