//! [`ApiServer`] (a connection) and [`ApiServerSource`] (one resource
//! through it): Herald's [`Source`] over the Kubernetes API.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use herald::ResourceVersion;
use herald::source::{Listing, Source, SourceError, SourceWatch};
use herald_bridge::Bridge;
use herald_kube::{Decoder, ResourceInfo, Undecodable, UndecodableReport, proto};
use tokio::sync::watch as notify;

use crate::config::{ApiServerConfig, ConnectError};
use crate::conn::{Conn, Failure, is_protobuf, own_runtime};
use crate::frames;
use crate::revision::Coalesced;
use crate::shared::{
    ApiServerStats, BOOKMARKS_NONE, BOOKMARKS_UNKNOWN, Shared, WATCH_LIST_REFUSED,
    WATCH_LIST_SERVED, WATCH_LIST_UNKNOWN, bump, parse_rv,
};
use crate::watch::ApiWatch;
use crate::watchlist::Outcome;

/// A connection to one apiserver, shared by every source made from it
/// (one client, one connection pool, one runtime). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ApiServer {
    conn: Arc<Conn>,
}

impl ApiServer {
    /// Reads the configuration (kubeconfig or in-cluster), connects on a
    /// runtime of its own (two worker threads, `herald-apiserver`), and
    /// asks the apiserver its `/version`: an unreachable apiserver or
    /// refused credentials fail here, not at the first list.
    pub fn connect(config: ApiServerConfig) -> Result<ApiServer, ConnectError> {
        ApiServer::connect_on(config, own_runtime()?)
    }

    /// [`ApiServer::connect`], on `bridge`'s runtime (shared with etcd
    /// clusters, other apiservers, or the embedder's own runtime): it
    /// builds none. See [`Bridge`] for what a shared runtime asks of its
    /// callers.
    ///
    /// ```no_run
    /// use std::num::NonZeroUsize;
    /// use herald_apiserver::{ApiServer, ApiServerConfig, Bridge};
    /// let upstreams = Bridge::new("upstreams", NonZeroUsize::new(2).unwrap())?;
    /// let apiserver = ApiServer::connect_on(ApiServerConfig::default(), upstreams)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect_on(config: ApiServerConfig, bridge: Bridge) -> Result<ApiServer, ConnectError> {
        Ok(ApiServer {
            conn: Arc::new(Conn::connect(config, bridge)?),
        })
    }

    /// The runtime the connection runs on.
    pub fn bridge(&self) -> &Bridge {
        self.conn.bridge()
    }

    /// The apiserver's version (`/version`'s `gitVersion`).
    pub fn version(&self) -> &str {
        &self.conn.version
    }

    /// The cluster's address.
    pub fn url(&self) -> &str {
        &self.conn.url
    }

    /// Creates `object` (JSON) at `path` and returns what the apiserver
    /// answered: a review (`TokenReview`, `SubjectAccessReview`) with its
    /// status filled in. Runs on the connection's runtime; any other
    /// answer than 200 or 201, or none within the request timeout, is an
    /// error naming it.
    pub async fn create(
        &self,
        path: &str,
        object: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let conn = self.conn.clone();
        let path = path.to_owned();
        let body = serde_json::to_vec(object).unwrap_or_default();
        self.conn.spawn(async move {
            let _ = tx.send(conn.post(&path, body).await.map_err(|e| e.to_string()));
        });
        rx.await
            .unwrap_or_else(|_| Err("the apiserver connection is gone".into()))
    }

    /// A source for the resource `info` names, its objects read with
    /// `decoder` (which fields to take for selectors).
    pub fn source(&self, info: &ResourceInfo, decoder: Decoder) -> ApiServerSource {
        let api_version = info.api_version();
        let path = if info.group.is_empty() {
            format!("/api/{}/{}", info.version, info.plural)
        } else {
            format!("/apis/{}/{}/{}", info.group, info.version, info.plural)
        };
        let protobuf = self.conn.config.protobuf && proto::knows(&api_version, &info.kind);
        ApiServerSource {
            shared: Arc::new(Shared {
                conn: self.conn.clone(),
                path,
                api_version,
                kind: info.kind.clone(),
                list_kind: info.list_kind.clone(),
                decoder,
                protobuf,
                progress: notify::channel(0).0,
                revision: Coalesced::default(),
                undecodable: Arc::new(Undecodable::default()),
                counters: Arc::default(),
                bookmarks: AtomicU8::new(BOOKMARKS_UNKNOWN),
                current: AtomicU64::new(0),
                watch_list: AtomicU8::new(WATCH_LIST_UNKNOWN),
                stash: std::sync::Mutex::new(None),
            }),
        }
    }

    pub(crate) fn conn(&self) -> &Conn {
        &self.conn
    }
}

/// A [`Source`] over one resource of the Kubernetes API, listed and
/// watched as client-go's reflector does:
///
/// - **list**: paged (`limit`, `continue`), a consistent read (no
///   `resourceVersion`); a continue token that expired (410) starts the
///   list again;
/// - **watch**: `allowWatchBookmarks=true` from the version asked, ended
///   by the apiserver after `timeoutSeconds` (5 to 10 minutes) and
///   resumed from the last version seen; bookmarks are progress; a 410,
///   as an answer or an `ERROR` event in the stream, is
///   [`SourceError::Compacted`]; any other failure (a 5xx, a cut stream, a
///   frame that does not parse, an object of another kind, a version that
///   goes back) ends the watch with [`SourceError::Unavailable`], which
///   the reflector retries with backoff;
/// - **consistent reads**: the current version is one `limit=1` list (no
///   `resourceVersion`), shared by every read waiting; progress is asked
///   for by opening a short watch from the last version seen (3 s:
///   the apiserver sends a bookmark 2 s before a watch's deadline), whose
///   bookmark carries the apiserver's cache version, fresh after that
///   consistent list.
///
/// Protobuf is asked for where the kind has it (the built-in kinds, when
/// [`ApiServerConfig::protobuf`]); the objects are kept as the JSON the
/// apiserver serves for them.
#[derive(Debug, Clone)]
pub struct ApiServerSource {
    shared: Arc<Shared>,
}

impl ApiServerSource {
    /// What this source has done so far.
    pub fn stats(&self) -> ApiServerStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ApiServerStats {
            lists: get(&c.lists),
            watch_lists: get(&c.watch_lists),
            list_pages: get(&c.list_pages),
            watches_opened: get(&c.watches_opened),
            progress_watches: get(&c.progress_watches),
            bookmarks: get(&c.bookmarks),
            revision_requests: self.shared.revision.requests(),
            undecodable: get(&c.undecodable),
            progress_reliable: self.shared.bookmarks.load(Ordering::Relaxed) != BOOKMARKS_NONE,
        }
    }

    /// The objects it could not decode (an object of another kind, a
    /// protobuf this release cannot read): which now, how many by reason.
    pub fn undecodable(&self) -> UndecodableReport {
        self.shared.undecodable.report()
    }

    /// The resource's path (`/api/v1/pods`).
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// Whether it asks for protobuf.
    pub fn asks_protobuf(&self) -> bool {
        self.shared.protobuf
    }
}

/// How many times a list starts again after its continue token expired.
const LIST_ATTEMPTS: usize = 3;

impl Source for ApiServerSource {
    fn list(&self) -> Result<Listing, SourceError> {
        let shared = &self.shared;
        bump(&shared.counters.lists);
        shared.undecodable.relist();
        if shared.bookmarks.load(Ordering::Relaxed) == BOOKMARKS_UNKNOWN {
            // Whether consistent reads may wait for bookmarks, known
            // before the first one waits (a backfill has asked already);
            // a probe that fails leaves it to the first short watch.
            let _ = shared.conn.block(crate::watch::oldest_watchable(shared));
        }
        // A stream kept from an earlier list is not this one's.
        shared
            .stash
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if shared.conn.config.watch_list
            && shared.watch_list.load(Ordering::Relaxed) != WATCH_LIST_REFUSED
        {
            // Its initial events within the apiserver's own bound on a
            // list (its request timeout): a stream that never sends its
            // end bookmark is an error, not a reflector stuck for minutes.
            let within = shared.conn.config.request_timeout;
            let listed = shared.conn.block(async {
                tokio::time::timeout(within, shared.watch_list())
                    .await
                    .unwrap_or_else(|_| {
                        Err(Failure::Other(format!(
                            "{}: a watch-list sent no initial-events-end bookmark within {within:?}",
                            shared.path
                        )))
                    })
            });
            match listed {
                Ok(Outcome::Listed(listing, stream)) => {
                    shared
                        .watch_list
                        .store(WATCH_LIST_SERVED, Ordering::Relaxed);
                    *shared.stash.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((listing.revision.get(), stream));
                    return Ok(listing);
                }
                Ok(Outcome::Refused(why)) => {
                    shared
                        .watch_list
                        .store(WATCH_LIST_REFUSED, Ordering::Relaxed);
                    eprintln!(
                        "herald-apiserver: {}: the apiserver refused a watch-list ({why}): paged lists from now on",
                        shared.path
                    );
                }
                Err(Failure::Gone(why) | Failure::Other(why)) => {
                    shared.undecodable.relist();
                    return Err(SourceError::Unavailable(why));
                }
            }
            shared.undecodable.relist();
        }
        let mut last = None;
        for _ in 0..LIST_ATTEMPTS {
            match shared.conn.block(shared.list_once(None)) {
                Ok(listing) => return Ok(listing),
                // A continue token that expired mid-list: from the start.
                Err(Failure::Gone(why)) => last = Some(why),
                Err(Failure::Other(why)) => return Err(SourceError::Unavailable(why)),
            }
        }
        Err(SourceError::Unavailable(format!(
            "{}: the list's continue token expired {LIST_ATTEMPTS} times: {}",
            shared.path,
            last.unwrap_or_default()
        )))
    }

    /// A list exactly at `revision` (`resourceVersionMatch=Exact`), which
    /// the apiserver serves from its cache's history or from etcd; `None`
    /// when that version is compacted away (410).
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        let shared = &self.shared;
        match shared.conn.block(shared.list_once(Some(revision.get()))) {
            Ok(listing) => Ok(Some(listing)),
            Err(Failure::Gone(_)) => Ok(None),
            Err(Failure::Other(why)) => Err(SourceError::Unavailable(why)),
        }
    }

    /// The apiserver's watch cache window's start, from its answer to a
    /// watch from version 1 (`too old resource version: 1 (M)`).
    fn oldest_watchable(&self) -> Result<Option<ResourceVersion>, SourceError> {
        let shared = &self.shared;
        Ok(shared
            .conn
            .block(crate::watch::oldest_watchable(shared))?
            .map(ResourceVersion::new))
    }

    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        // The last watch-list's stream goes on from its version.
        let opened = self
            .shared
            .stash
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .filter(|(rv, _)| *rv == after.get())
            .map(|(_, stream)| stream);
        Ok(Box::new(ApiWatch::start(
            self.shared.clone(),
            after,
            opened,
        )))
    }

    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        let shared = &self.shared;
        shared.revision.get(|| {
            let uri = format!("{}?limit=1", shared.path);
            let (content_type, body) = shared
                .conn
                .block(shared.conn.get(&uri, shared.accept()))
                .map_err(|e| SourceError::Unavailable(e.to_string()))?;
            let page = frames::page(is_protobuf(&content_type), &body, &shared.list_kind)
                .map_err(|e| SourceError::Unavailable(format!("GET {uri}: {e}")))?;
            let rv = parse_rv(&page.resource_version);
            if let Some(rv) = rv {
                shared.current.fetch_max(rv, Ordering::Relaxed);
            }
            rv.map(ResourceVersion::new).ok_or_else(|| {
                SourceError::Unavailable(format!(
                    "GET {uri}: a list at version {:?}",
                    page.resource_version
                ))
            })
        })
    }

    /// `false` once the apiserver is found to send this resource's
    /// watches no bookmarks (its watch cache is off): consistent reads are
    /// then read from the apiserver, as the apiserver itself reads them
    /// from etcd.
    fn progress_is_reliable(&self) -> bool {
        self.shared.bookmarks.load(Ordering::Relaxed) != BOOKMARKS_NONE
    }

    fn request_progress(&self) -> Result<(), SourceError> {
        self.shared.progress.send_modify(|n| *n += 1);
        Ok(())
    }
}
