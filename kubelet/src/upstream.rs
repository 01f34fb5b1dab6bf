//! Where the manager's per-object watches come from.
//!
//! The manager opens one watch per referenced object through an
//! [`Upstream`] and reads it as a stream of [`Update`]s: the object's
//! state once the initial sync is complete, then its changes, then an end.
//! Two upstreams ship: [`EngineUpstream`] (an in-process [`Engine`]) and
//! [`RemoteUpstream`](crate::RemoteUpstream) (a Herald, or any apiserver,
//! over the Kubernetes API). Both open a watch-list of exactly one object:
//! `metadata.name=<name>` in its namespace, with initial events and
//! bookmarks, so the end of the initial state is an explicit event rather
//! than a guess.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use herald::rv::ResourceVersionMatch;
use herald::selector::{FieldSelector, KeyScope};
use herald::{Engine, EventKind, Object, Watch, WatchItem, WatchRequest};

/// What an object's watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Update {
    /// The initial state is complete: the object, or `None` when it does
    /// not exist. Comes first, once per stream.
    Synced(Option<Object>),
    /// The object was created or changed (after the sync).
    Put(Object),
    /// The object was deleted (after the sync).
    Deleted,
    /// The stream is over, and why; nothing follows. The manager opens
    /// another after a backoff, and serves the last state meanwhile.
    Ended(String),
}

/// A watch of one object, as the manager polls it (from one thread, with
/// its own waker per object: an upstream needs no thread per watch).
/// Dropping it stops the watch.
pub type ObjectStream = Pin<Box<dyn Stream<Item = Update> + Send>>;

/// A source of per-object watches.
pub trait Upstream: Send + Sync + fmt::Debug + 'static {
    /// Opens a watch of `namespace`/`name` (`namespace` empty: a
    /// cluster-scoped object). Never fails here: a watch that cannot be
    /// opened is a stream that yields [`Update::Ended`] with the reason.
    fn watch_object(&self, namespace: &str, name: &str) -> ObjectStream;
}

/// Per-object watches on an in-process [`Engine`].
///
/// Each is a watch-list of the object's key with the field selector
/// `metadata.name=<name>`: the engine routes it by that exact value, so a
/// change costs the dispatcher one look-up per watched name, not one
/// filter per watch.
#[derive(Debug, Clone)]
pub struct EngineUpstream {
    engine: Engine,
}

impl EngineUpstream {
    /// Watches objects of `engine`.
    pub fn new(engine: Engine) -> EngineUpstream {
        EngineUpstream { engine }
    }
}

impl Upstream for EngineUpstream {
    fn watch_object(&self, namespace: &str, name: &str) -> ObjectStream {
        let opened = object_selector(name)
            .map_err(|e| e.to_string())
            .and_then(|fields| {
                let req = WatchRequest::new()
                    .scope(KeyScope::exact(&object_key(namespace, name)))
                    .fields(fields)
                    .send_initial_events(true)
                    .resource_version_match(ResourceVersionMatch::NotOlderThan)
                    .allow_bookmarks(true);
                self.engine.watch(req).map_err(|e| e.to_string())
            });
        match opened {
            Ok(watch) => Box::pin(EngineObjectStream {
                watch: Some(watch),
                initial: None,
                synced: false,
            }),
            Err(why) => Box::pin(Ended(Some(why))),
        }
    }
}

/// `namespace/name`, or `name` when cluster-scoped: the engine's key.
pub(crate) fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// `metadata.name=<name>`, the name escaped as the selector grammar wants
/// (`\`, `,` and `=` are special in a value).
pub(crate) fn object_selector(
    name: &str,
) -> Result<FieldSelector, herald::selector::SelectorError> {
    let mut sel = String::with_capacity(name.len() + 16);
    sel.push_str(herald::object::FIELD_NAME);
    sel.push('=');
    for c in name.chars() {
        if matches!(c, '\\' | ',' | '=') {
            sel.push('\\');
        }
        sel.push(c);
    }
    sel.parse()
}

/// A stream that yields one end and stops.
struct Ended(Option<String>);

impl Stream for Ended {
    type Item = Update;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Update>> {
        Poll::Ready(self.0.take().map(Update::Ended))
    }
}

/// An engine watch of one object, read as updates.
struct EngineObjectStream {
    watch: Option<Watch>,
    /// The object seen in the initial events, until the bookmark that
    /// ends them.
    initial: Option<Object>,
    synced: bool,
}

impl Stream for EngineObjectStream {
    type Item = Update;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Update>> {
        let this = &mut *self;
        loop {
            let Some(watch) = this.watch.as_mut() else {
                return Poll::Ready(None);
            };
            let item = match Pin::new(watch).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            };
            let ev = match item {
                Some(WatchItem::Event(ev)) => ev,
                Some(WatchItem::End(reason)) => {
                    this.watch = None;
                    return Poll::Ready(Some(Update::Ended(reason.to_string())));
                }
                None => {
                    this.watch = None;
                    return Poll::Ready(None);
                }
            };
            match (ev.kind(), this.synced) {
                (EventKind::Bookmark, false) if ev.is_initial_events_end() => {
                    this.synced = true;
                    return Poll::Ready(Some(Update::Synced(this.initial.take())));
                }
                (EventKind::Bookmark, _) => {}
                (EventKind::Added | EventKind::Modified, false) => {
                    this.initial = ev.into_object();
                }
                (EventKind::Deleted, false) => this.initial = None,
                (EventKind::Added | EventKind::Modified, true) => {
                    if let Some(object) = ev.into_object() {
                        return Poll::Ready(Some(Update::Put(object)));
                    }
                }
                (EventKind::Deleted, true) => return Poll::Ready(Some(Update::Deleted)),
                // A kind added to the engine later: not one this stream
                // knows, so not one it can apply.
                (_, _) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_escapes_the_name() {
        let sel = object_selector(r"a,b=c\d").unwrap();
        assert_eq!(sel.requires_exact("metadata.name"), Some(r"a,b=c\d"));
    }

    #[test]
    fn keys() {
        assert_eq!(object_key("ns", "a"), "ns/a");
        assert_eq!(object_key("", "a"), "a");
    }
}
