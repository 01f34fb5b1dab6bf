//! A list made as client-go's reflector makes it by default: a
//! watch-list (`sendInitialEvents=true`, `allowWatchBookmarks=true`,
//! `resourceVersionMatch=NotOlderThan`, no `resourceVersion`: a
//! consistent one), the current objects as `ADDED` events then a bookmark
//! annotated `k8s.io/initial-events-end` at the list's version; the same
//! stream then goes on as the watch from there, so the list costs the
//! apiserver no separate watch and is served from its cache. An
//! apiserver that refuses it (a 4xx such as 422, from a release or
//! configuration without it) gets paged lists from then on.

use herald::ResourceVersion;
use herald::object::Item;
use herald::source::Listing;

use crate::conn::{Failure, status_object};
use crate::shared::{Shared, bump, parse_rv};
use crate::stream::OpenStream;
use crate::watch::jittered;

/// The annotation on the bookmark that ends the initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What a watch-list came to.
pub(crate) enum Outcome {
    /// The list, and its stream, now at the list's version.
    Listed(Listing, OpenStream),
    /// The apiserver does not serve watch-lists (its message).
    Refused(String),
}

impl Shared {
    /// One watch-list.
    pub(crate) async fn watch_list(&self) -> Result<Outcome, Failure> {
        let uri = format!(
            "{}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds={}",
            self.path,
            jittered(self.conn.config.watch_timeout)
        );
        bump(&self.counters.watches_opened);
        let mut stream = match OpenStream::open(&self.conn, uri, self.accept()).await {
            Ok(s) => s,
            Err((Some(code), Failure::Other(why)))
                if code.is_client_error() && ![401, 403, 408, 429].contains(&code.as_u16()) =>
            {
                return Ok(Outcome::Refused(why));
            }
            Err((_, failure)) => return Err(failure),
        };
        let mut items = Vec::new();
        loop {
            let Some(event) = stream.next().await.map_err(Failure::Other)? else {
                return Err(Failure::Other(format!(
                    "GET {}: the stream ended before its initial-events-end bookmark",
                    stream.uri
                )));
            };
            match event.kind.as_str() {
                "ADDED" => {
                    let key = Shared::key_of(&event.object);
                    match self.decoder.served(event.object, self.type_meta()) {
                        Ok((object, rv)) => items.push(Item::new(object, rv)),
                        Err(e) => {
                            bump(&self.counters.undecodable);
                            self.undecodable.met(key.as_bytes(), &e);
                        }
                    }
                }
                "BOOKMARK" => {
                    let meta = event.object.get("metadata");
                    let end = meta
                        .and_then(|m| m.get("annotations"))
                        .and_then(|a| a.get(INITIAL_EVENTS_END))
                        .and_then(serde_json::Value::as_str)
                        == Some("true");
                    if !end {
                        continue;
                    }
                    let rv = meta
                        .and_then(|m| m.get("resourceVersion"))
                        .and_then(serde_json::Value::as_str)
                        .and_then(parse_rv)
                        .ok_or_else(|| {
                            Failure::Other(format!(
                                "GET {}: an initial-events-end bookmark without a version",
                                stream.uri
                            ))
                        })?;
                    if let Some(ahead) =
                        items.iter().find(|i: &&Item| i.resource_version.get() > rv)
                    {
                        return Err(Failure::Other(format!(
                            "GET {}: {} at version {}, after the list's {rv}",
                            stream.uri,
                            ahead.object.key(),
                            ahead.resource_version.get()
                        )));
                    }
                    bump(&self.counters.watch_lists);
                    let listing = Listing {
                        items,
                        revision: ResourceVersion::new(rv),
                    };
                    return Ok(Outcome::Listed(listing, stream));
                }
                "ERROR" => {
                    let status =
                        status_object(&serde_json::to_vec(&event.object).unwrap_or_default());
                    let get = |k: &str| status.as_ref().and_then(|s| s.get(k)).cloned();
                    let message = get("message")
                        .and_then(|m| m.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "an ERROR event that is not a Status".into());
                    return Err(if get("code").and_then(|c| c.as_u64()) == Some(410) {
                        Failure::Gone(message)
                    } else {
                        Failure::Other(format!("GET {}: {message}", stream.uri))
                    });
                }
                other => {
                    return Err(Failure::Other(format!(
                        "GET {}: a {other} event before the initial-events-end bookmark",
                        stream.uri
                    )));
                }
            }
        }
    }
}
