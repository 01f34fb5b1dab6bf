//! What a resource's source and its watches share: the connection, the
//! resource's path and type, the decoder, progress requests, counters;
//! and a list, page by page.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use herald::ResourceVersion;
use herald::object::Item;
use herald::source::{Listing, SourceError};
use herald_kube::{Decoder, Undecodable};
use tokio::sync::watch as notify;

use crate::conn::{Conn, Failure, JSON, PROTOBUF_OR_JSON, is_protobuf};
use crate::frames;
use crate::revision::Coalesced;
use crate::stream::OpenStream;

/// What an [`ApiServerSource`](crate::ApiServerSource) has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ApiServerStats {
    /// Lists made (each one or more pages, or one watch-list).
    pub lists: u64,
    /// Of those, watch-lists (their stream then the watch).
    pub watch_lists: u64,
    /// Pages read by lists.
    pub list_pages: u64,
    /// Watches opened, resumed ones included.
    pub watches_opened: u64,
    /// Of those, short watches opened to get a bookmark for a consistent
    /// read.
    pub progress_watches: u64,
    /// Bookmarks passed on as progress.
    pub bookmarks: u64,
    /// Requests for the current resource version (each shared by every
    /// consistent read waiting).
    pub revision_requests: u64,
    /// Objects skipped because they could not be decoded.
    pub undecodable: u64,
    /// Whether the apiserver sends the resource's watches bookmarks (its
    /// watch cache is on); `false` once a short watch ended without one,
    /// and consistent reads are then read from the apiserver itself.
    pub progress_reliable: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) lists: AtomicU64,
    pub(crate) list_pages: AtomicU64,
    pub(crate) watches_opened: AtomicU64,
    pub(crate) progress_watches: AtomicU64,
    pub(crate) bookmarks: AtomicU64,
    pub(crate) watch_lists: AtomicU64,
    pub(crate) undecodable: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) conn: Arc<Conn>,
    /// `/api/v1/pods`, `/apis/apps/v1/deployments`.
    pub(crate) path: String,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) list_kind: String,
    pub(crate) decoder: Decoder,
    /// Ask for protobuf.
    pub(crate) protobuf: bool,
    /// Progress requests so far; watches wait on it.
    pub(crate) progress: notify::Sender<u64>,
    pub(crate) revision: Coalesced<Result<ResourceVersion, SourceError>>,
    pub(crate) undecodable: Arc<Undecodable>,
    pub(crate) counters: Arc<Counters>,
    /// Whether the apiserver sends this resource's watches bookmarks:
    /// [`BOOKMARKS_UNKNOWN`], [`BOOKMARKS_SENT`], or [`BOOKMARKS_NONE`]
    /// (a short watch ended without one: the resource's watch cache is
    /// off, as it is for `events` by default, and its watches are served
    /// from etcd with no progress).
    pub(crate) bookmarks: AtomicU8,
    /// The highest current version the apiserver has told (its consistent
    /// `limit=1` lists): a short watch from below it that ends without a
    /// bookmark shows the resource has none (a cached resource's cache is
    /// at least there, and sends one; from its own version, there is
    /// nothing to tell, and it sends none).
    pub(crate) current: AtomicU64,
    /// Whether the apiserver serves watch-lists: [`WATCH_LIST_UNKNOWN`],
    /// [`WATCH_LIST_SERVED`] or [`WATCH_LIST_REFUSED`] (paged lists from
    /// then on).
    pub(crate) watch_list: AtomicU8,
    /// A watch-list's stream, at the list's version, kept for the watch
    /// the reflector opens next from that version.
    pub(crate) stash: std::sync::Mutex<Option<(u64, OpenStream)>>,
}

/// Not known yet whether the apiserver serves watch-lists.
pub(crate) const WATCH_LIST_UNKNOWN: u8 = 0;
/// It does.
pub(crate) const WATCH_LIST_SERVED: u8 = 1;
/// It refused one: paged lists.
pub(crate) const WATCH_LIST_REFUSED: u8 = 2;

// `bookmarks`, `current` and `watch_list` are read and written Relaxed:
// each is a hint read on its own (whether to read through, whether a short
// watch owed a bookmark, whether to try a watch-list), publishing no other
// data; a stale read costs one more request or one more wait, never a
// stale answer.

/// Not known yet whether the apiserver sends bookmarks for the resource.
pub(crate) const BOOKMARKS_UNKNOWN: u8 = 0;
/// It does.
pub(crate) const BOOKMARKS_SENT: u8 = 1;
/// It does not: consistent reads go to the apiserver itself.
pub(crate) const BOOKMARKS_NONE: u8 = 2;

impl Shared {
    pub(crate) fn accept(&self) -> &'static str {
        if self.protobuf {
            PROTOBUF_OR_JSON
        } else {
            JSON
        }
    }

    /// The `(apiVersion, kind)` every object must have.
    pub(crate) fn type_meta(&self) -> (&str, &str) {
        (&self.api_version, &self.kind)
    }

    /// An object's key for the undecodable report: its metadata's
    /// `namespace/name` as far as it has one.
    pub(crate) fn key_of(object: &serde_json::Map<String, serde_json::Value>) -> String {
        let meta = object.get("metadata");
        let part = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match (part("namespace"), part("name")) {
            (ns, name) if ns.is_empty() => name,
            (ns, name) => format!("{ns}/{name}"),
        }
    }

    /// One list, page by page, at one version: the present (a consistent
    /// read), or exactly `exact`.
    pub(crate) async fn list_once(&self, exact: Option<u64>) -> Result<Listing, Failure> {
        let mut items = Vec::new();
        let mut revision: Option<u64> = None;
        let mut token: Option<String> = None;
        loop {
            let mut uri = format!("{}?limit={}", self.path, self.conn.config.page_size);
            if let Some(rv) = exact.filter(|_| token.is_none()) {
                uri.push_str(&format!("&resourceVersion={rv}&resourceVersionMatch=Exact"));
            }
            if let Some(t) = &token {
                uri.push_str("&continue=");
                uri.push_str(&percent_encode(t));
            }
            let (content_type, body) = self.conn.get(&uri, self.accept()).await?;
            bump(&self.counters.list_pages);
            let page = frames::page(is_protobuf(&content_type), &body, &self.list_kind)
                .map_err(|e| Failure::Other(format!("GET {uri}: {e}")))?;
            let rv = parse_rv(&page.resource_version).ok_or_else(|| {
                Failure::Other(format!(
                    "GET {uri}: a list at version {:?}",
                    page.resource_version
                ))
            })?;
            match revision {
                None => revision = Some(rv),
                Some(r) if r != rv => {
                    return Err(Failure::Other(format!(
                        "GET {uri}: a page at version {rv}, the list's first at {r}"
                    )));
                }
                Some(_) => {}
            }
            for object in page.items {
                let key = Shared::key_of(&object);
                match self.decoder.served(object, self.type_meta()) {
                    Ok((object, rv)) => items.push(Item::new(object, rv)),
                    Err(e) => {
                        bump(&self.counters.undecodable);
                        self.undecodable.met(key.as_bytes(), &e);
                    }
                }
            }
            token = page.continue_token;
            if token.is_none() {
                break;
            }
        }
        Ok(Listing {
            items,
            revision: ResourceVersion::new(revision.unwrap_or_default()),
        })
    }
}

/// A resource version as the apiserver writes them (a positive integer).
pub(crate) fn parse_rv(s: &str) -> Option<u64> {
    s.parse().ok().filter(|&v| v > 0)
}

/// `token` as a query value (continue tokens are base64: `+`, `/`, `=`).
fn percent_encode(token: &str) -> String {
    let mut out = String::with_capacity(token.len() + 8);
    for b in token.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
