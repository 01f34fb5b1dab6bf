//! `/metrics` in the Prometheus text format (the `prometheus-client`
//! crate), under the apiserver's watch-cache metric names where one
//! exists, and Herald's own stage histograms.
//!
//! The engine's figures are read from [`herald::Engine::stats`] at scrape
//! time; the server's own are counted as it serves (the module `counts`,
//! whose types are re-exported here).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use arc_swap::ArcSwap;

use crate::resource::{Resource, ResourceMap};

pub use crate::counts::{
    EVENT_SIZE_BUCKETS, OpenWatch, Reported, ResourceMetrics, ServerMetrics, Tally,
};

/// The label values each server counter always shows (0 until counted).
const REJECTIONS: [&str; 4] = [
    "queue_full",
    "queue_timeout",
    "watch_limit",
    "unwritten_bytes",
];
const CLOSINGS: [&str; 3] = ["write_stall", "write_deadline", "shutdown_grace"];
/// Why access control refused a request: 401s (`certificate`, `token`,
/// `anonymous`), 403s (`forbidden`), 429s before the RBAC snapshot
/// exists (`authorizer_not_ready`), and TLS handshakes that failed or
/// timed out (`tls_handshake`).
pub(crate) const ACCESS_REFUSALS: [&str; 7] = [
    "certificate",
    "token",
    "anonymous",
    "forbidden",
    "authorizer_not_ready",
    "authorizer_error",
    "tls_handshake",
];

/// Where the server's audit log is, once set (its counts are shown).
pub(crate) type AuditSlot = Arc<std::sync::OnceLock<Arc<crate::audit_log::AuditLog>>>;

/// The collector of the server's own figures.
#[derive(Debug)]
struct Server(Arc<ServerMetrics>, AuditSlot);

impl Collector for Server {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let counter = |m: &mut prometheus_client::encoding::MetricEncoder<'_>, v: u64| {
            m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&v, None)
        };
        let by_reason = |names: &[&str], f: &dyn Fn(&str) -> u64| {
            names
                .iter()
                .map(|r| (vec![("reason", (*r).to_owned())], f(r)))
                .collect::<Vec<_>>()
        };
        family(
            &mut encoder,
            "herald_http_rejected_requests",
            "Requests refused with 429 by admission, by reason.",
            MetricType::Counter,
            &by_reason(&REJECTIONS, &|r| self.0.rejected_total(r)),
            counter,
        )?;
        family(
            &mut encoder,
            "herald_http_access_refused_requests",
            "Requests refused by authentication (401), authorization (403, or 429 before the RBAC snapshot exists), and failed TLS handshakes, by reason.",
            MetricType::Counter,
            &by_reason(&ACCESS_REFUSALS, &|r| self.0.access_refused_total(r)),
            counter,
        )?;
        family(
            &mut encoder,
            "herald_http_tls_reload_failures",
            "Reloads of the TLS certificate, key or client CA that failed (the previous ones kept serving).",
            MetricType::Counter,
            &[(vec![], self.0.tls_reload_failures.load(Ordering::Relaxed))],
            counter,
        )?;
        let reviews: Vec<_> = crate::delegate::REVIEW_KINDS
            .iter()
            .enumerate()
            .flat_map(|(k, kind)| {
                crate::delegate::REVIEW_RESULTS
                    .iter()
                    .enumerate()
                    .map(move |(r, result)| (k, *kind, r, *result))
            })
            .map(|(k, kind, r, result)| {
                (
                    vec![("kind", kind.to_owned()), ("result", result.to_owned())],
                    self.0.reviews[k][r].load(Ordering::Relaxed),
                )
            })
            .collect();
        family(
            &mut encoder,
            "herald_http_delegated_reviews",
            "TokenReviews (kind=token) and SubjectAccessReviews (kind=access) delegated to the upstream apiserver: answered from the cache, sent, or failed (no answer).",
            MetricType::Counter,
            &reviews,
            counter,
        )?;
        if let Some(audit) = self.1.get() {
            let c = audit.counts();
            for (name, help, v) in [
                (
                    "herald_http_audit_events",
                    "Audit events written.",
                    &c.written,
                ),
                (
                    "herald_http_audit_events_dropped",
                    "Audit events dropped: the writer's queue was full (the disk slower than the requests).",
                    &c.dropped,
                ),
                (
                    "herald_http_audit_write_failures",
                    "Writes to the audit log that failed.",
                    &c.write_failures,
                ),
            ] {
                family(
                    &mut encoder,
                    name,
                    help,
                    MetricType::Counter,
                    &[(vec![], v.load(Ordering::Relaxed))],
                    counter,
                )?;
            }
        }
        family(
            &mut encoder,
            "herald_http_closed_connections",
            "Connections closed for not taking what they were sent, by reason.",
            MetricType::Counter,
            &by_reason(&CLOSINGS, &|r| self.0.closed_total(r)),
            counter,
        )?;
        let classes = ["read", "waiting"];
        let seats = |i: usize| {
            classes
                .iter()
                .zip(&self.0.seats)
                .map(|(c, s)| {
                    (
                        vec![("class", (*c).to_owned())],
                        s[i].load(Ordering::Relaxed) as u64,
                    )
                })
                .collect::<Vec<_>>()
        };
        family(
            &mut encoder,
            "herald_http_seats_taken",
            "Admission seats taken (requests doing engine work), by class.",
            MetricType::Gauge,
            &seats(0),
            |m, v| m.encode_gauge(&v),
        )?;
        family(
            &mut encoder,
            "herald_http_requests_queued",
            "Requests waiting for an admission seat, by class.",
            MetricType::Gauge,
            &seats(1),
            |m, v| m.encode_gauge(&v),
        )?;
        family(
            &mut encoder,
            "herald_http_unwritten_bytes",
            "Response bytes handed to connections and not yet written to their sockets.",
            MetricType::Gauge,
            &[(Vec::new(), self.0.unwritten_bytes() as u64)],
            |m, v| m.encode_gauge(&v),
        )
    }
}

/// A figure of one resource, read at scrape time.
type Pick<'a> = &'a dyn Fn(&Resource, &herald::stats::Stats) -> u64;

/// The collector of every served resource's figures.
#[derive(Debug)]
struct Resources(Arc<ArcSwap<ResourceMap>>);

/// Encodes one metric family: `name` (without `_total` for counters),
/// its help and type, then one sample per `(labels, value)`.
fn family<V: Copy>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    samples: &[(Vec<(&str, String)>, V)],
    mut encode: impl FnMut(&mut prometheus_client::encoding::MetricEncoder<'_>, V) -> std::fmt::Result,
) -> std::fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, value) in samples {
        let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut m = metric.encode_family(&labels)?;
        encode(&mut m, *value)?;
    }
    Ok(())
}

impl Collector for Resources {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let map = self.0.load_full();
        let stats: Vec<_> = map.values().map(|r| (r, r.engine.stats())).collect();
        let by_resource = |f: Pick<'_>| {
            stats
                .iter()
                .map(|(r, s)| (vec![("resource", r.info.qualified())], f(r, s)))
                .collect::<Vec<_>>()
        };
        let gvr = |r: &Resource| {
            vec![
                ("group", r.info.group.clone()),
                ("version", r.info.version.clone()),
                ("resource", r.info.plural.clone()),
            ]
        };
        let counter = |m: &mut prometheus_client::encoding::MetricEncoder<'_>, v: u64| {
            m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&v, None)
        };
        let gauge =
            |m: &mut prometheus_client::encoding::MetricEncoder<'_>, v: u64| m.encode_gauge(&v);
        let counters: [(&str, &str, Pick<'_>); 6] = [
            (
                "apiserver_watch_cache_events_received",
                "Changes the watch cache received from its source.",
                &|_, s| s.changes_received,
            ),
            (
                "apiserver_watch_cache_events_dispatched",
                "Changes the watch cache dispatched to its watchers.",
                &|_, s| s.changes_dispatched,
            ),
            (
                "apiserver_watch_cache_initializations",
                "Times the watch cache was (re-)listed from its source.",
                &|_, s| s.relists,
            ),
            (
                "apiserver_terminated_watchers",
                "Watchers closed for not keeping up: ended by the engine's slow-watcher policy, or their connection closed for not reading.",
                &|r, s| s.terminations.too_slow + r.metrics.stalled_total(),
            ),
            (
                "herald_http_watches_revoked",
                "Watches ended with a 403 because a new RBAC snapshot no longer allowed them.",
                &|r, _| r.metrics.revoked_total(),
            ),
            (
                "herald_deliveries",
                "Events delivered to the engine's watches (in-process).",
                &|_, s| s.deliveries,
            ),
        ];
        for (name, help, f) in counters {
            family(
                &mut encoder,
                name,
                help,
                MetricType::Counter,
                &by_resource(f),
                counter,
            )?;
        }
        let undecodable: Vec<_> = stats
            .iter()
            .filter_map(|(r, _)| Some((r, r.health.as_ref()?)))
            .flat_map(|(r, h)| {
                h.undecodable_by_reason().into_iter().map(|(reason, n)| {
                    (
                        vec![
                            ("resource", r.info.qualified()),
                            ("reason", reason.to_owned()),
                        ],
                        n,
                    )
                })
            })
            .collect();
        family(
            &mut encoder,
            "herald_source_undecodable_values",
            "Stored values the source could not decode (skipped, not served), by reason.",
            MetricType::Counter,
            &undecodable,
            counter,
        )?;
        let gauges: [(&str, &str, Pick<'_>); 5] = [
            (
                "herald_source_undecodable_objects",
                "Keys whose current stored value could not be decoded: objects stored and not served.",
                &|r, _| r.health.as_ref().map_or(0, |h| h.undecodable_now()),
            ),
            (
                "apiserver_watch_cache_capacity",
                "Records the watch cache's history ring holds room for.",
                &|_, s| s.ring_capacity,
            ),
            (
                "apiserver_watch_cache_resource_version",
                "The resource version the watch cache has reached.",
                &|r, _| r.engine.resource_version().get(),
            ),
            (
                "herald_watchers_active",
                "Watches registered with the engine's dispatcher.",
                &|_, s| s.watchers_active,
            ),
            (
                "herald_http_watch_connections",
                "Watch connections open on this server.",
                &|r, _| r.metrics.watches_open(),
            ),
        ];
        for (name, help, f) in gauges {
            family(
                &mut encoder,
                name,
                help,
                MetricType::Gauge,
                &by_resource(f),
                gauge,
            )?;
        }
        let registered: Vec<_> = stats
            .iter()
            .map(|(r, s)| {
                (
                    vec![
                        ("group", r.info.group.clone()),
                        ("version", r.info.version.clone()),
                        ("kind", r.info.kind.clone()),
                    ],
                    s.watchers_active,
                )
            })
            .collect();
        family(
            &mut encoder,
            "apiserver_registered_watchers",
            "Watchers registered, by kind.",
            MetricType::Gauge,
            &registered,
            gauge,
        )?;
        let sent: Vec<_> = stats
            .iter()
            .map(|(r, _)| (gvr(r), r.metrics.events_sent()))
            .collect();
        family(
            &mut encoder,
            "apiserver_watch_events",
            "Watch events written to clients.",
            MetricType::Counter,
            &sent,
            counter,
        )?;
        let bytes: Vec<_> = stats
            .iter()
            .map(|(r, _)| (gvr(r), r.metrics.bytes_sent.load(Ordering::Relaxed)))
            .collect();
        family(
            &mut encoder,
            "herald_http_watch_bytes",
            "Bytes of watch events written to clients.",
            MetricType::Counter,
            &bytes,
            counter,
        )?;
        let chunks: Vec<_> = stats
            .iter()
            .map(|(r, _)| (gvr(r), r.metrics.chunks_sent.load(Ordering::Relaxed)))
            .collect();
        family(
            &mut encoder,
            "herald_http_watch_chunks",
            "Chunks of watch events handed to connections (events over chunks: events per write).",
            MetricType::Counter,
            &chunks,
            counter,
        )?;
        let described: Vec<_> = stats
            .iter()
            .map(|(r, _)| (by_plural(r), r.metrics.described.load(Ordering::Relaxed)))
            .collect();
        let protobuf: Vec<_> = stats
            .iter()
            .map(|(r, _)| (by_plural(r), r.encodings.made()))
            .collect();
        family(
            &mut encoder,
            "herald_http_protobuf_encodings",
            "Objects encoded as protobuf for clients that ask for it: once per change, however many connections send it.",
            MetricType::Counter,
            &protobuf,
            counter,
        )?;
        let restamped: Vec<_> = stats
            .iter()
            .map(|(r, _)| (by_plural(r), r.restamps.made()))
            .collect();
        family(
            &mut encoder,
            "herald_http_restamped_objects",
            "Deleted objects re-encoded with their event's version (an object that left a watcher's filter), once per event.",
            MetricType::Counter,
            &restamped,
            counter,
        )?;
        family(
            &mut encoder,
            "herald_http_described_objects",
            "Objects sent described from their metadata (their payload was not JSON): encoded per delivery.",
            MetricType::Counter,
            &described,
            counter,
        )?;
        // Ended watches by reason.
        let mut ends = Vec::new();
        for (r, s) in &stats {
            let t = &s.terminations;
            for (reason, n) in [
                ("stopped", t.stopped),
                ("deadline", t.deadline),
                ("too_slow", t.too_slow),
                ("gone", t.gone),
                ("relisted", t.relisted),
                ("engine_stopped", t.engine_stopped),
                ("too_large_resource_version", t.too_large_resource_version),
                ("engine_failed", t.engine_failed),
                ("drained", t.drained),
            ] {
                ends.push((
                    vec![
                        ("resource", r.info.plural.clone()),
                        ("reason", reason.to_owned()),
                    ],
                    n,
                ));
            }
        }
        family(
            &mut encoder,
            "herald_watch_terminations",
            "Watches ended, by reason.",
            MetricType::Counter,
            &ends,
            counter,
        )?;
        // Requests by verb and code.
        let mut requests = Vec::new();
        for (r, _) in &stats {
            let map = r.metrics.requests.lock().unwrap_or_else(|e| e.into_inner());
            for (&(verb, code), &n) in map.iter() {
                requests.push((
                    vec![
                        ("verb", verb.to_owned()),
                        ("resource", r.info.plural.clone()),
                        ("code", code.to_string()),
                    ],
                    n,
                ));
            }
        }
        family(
            &mut encoder,
            "apiserver_request",
            "Requests answered, by verb and HTTP code.",
            MetricType::Counter,
            &requests,
            counter,
        )?;
        // Histograms.
        {
            let mut metric = encoder.encode_descriptor(
                "apiserver_watch_events_sizes",
                "Sizes of watch events written to clients (bytes).",
                None,
                MetricType::Histogram,
            )?;
            for (r, _) in &stats {
                let labels = gvr(r);
                let labels: Vec<(&str, &str)> =
                    labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let mut cumulative = 0;
                let mut buckets = Vec::with_capacity(9);
                for (i, b) in r.metrics.size_buckets.iter().enumerate() {
                    cumulative += b.load(Ordering::Relaxed);
                    let le = EVENT_SIZE_BUCKETS
                        .get(i)
                        .map_or(f64::INFINITY, |&le| le as f64);
                    buckets.push((le, cumulative));
                }
                let sum = r.metrics.bytes_sent.load(Ordering::Relaxed) as f64;
                metric
                    .encode_family(&labels)?
                    .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                        sum, cumulative, &buckets, None,
                    )?;
            }
        }
        for (name, help, pick) in [
            (
                "herald_applied_to_enqueued_seconds",
                "From the writer applying a change to the dispatcher enqueuing it (sampled).",
                (|s: &herald::stats::Stats| s.applied_to_enqueued.clone())
                    as fn(&herald::stats::Stats) -> herald::stats::Histogram,
            ),
            (
                "herald_enqueued_to_received_seconds",
                "From the dispatcher enqueuing a change to a watch receiving it (sampled).",
                |s: &herald::stats::Stats| s.enqueued_to_received.clone(),
            ),
        ] {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
            for (r, s) in &stats {
                let h = pick(s);
                let labels = [("resource", r.info.plural.as_str())];
                let buckets: Vec<(f64, u64)> = h
                    .buckets()
                    .map(|b| {
                        (
                            b.le.map_or(f64::INFINITY, |d| d.as_secs_f64()),
                            b.cumulative,
                        )
                    })
                    .collect();
                metric
                    .encode_family(&labels)?
                    .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                        h.sum().as_secs_f64(),
                        h.count(),
                        &buckets,
                        None,
                    )?;
            }
        }
        Ok(())
    }
}

fn by_plural(r: &Resource) -> Vec<(&'static str, String)> {
    vec![("resource", r.info.plural.clone())]
}

/// The registry of a server serving `resources`, counting its own
/// figures in `server`.
pub(crate) fn registry(
    resources: Arc<ArcSwap<ResourceMap>>,
    server: Arc<ServerMetrics>,
    audit: AuditSlot,
) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Resources(resources)));
    registry.register_collector(Box::new(Server(server, audit)));
    registry
}

/// The registry's text exposition.
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}
