//! What a consumer hands out: an owned [`WatchItem`], or an [`EventRef`]
//! lent straight from the history ring; both made from the consumer's
//! `Raw` find.

use crate::event::{EndReason, Event, EventKind, WatchItem};
use crate::filter::Verdict;
use crate::object::Object;
use crate::ring::{Record, RecordRef};
use crate::rv::ResourceVersion;

/// What the consumer found next, before it is turned into an owned
/// [`WatchItem`] or lent out as an [`EventRef`]. A ring record stays in the
/// ring: lending it costs no reference-count traffic on the object.
pub(crate) enum Raw {
    Initial(Object, ResourceVersion),
    Bookmark {
        rv: ResourceVersion,
        initial_events_end: bool,
    },
    Record(RecordRef, Verdict),
    End(EndReason),
}

impl Raw {
    pub(crate) fn into_item(self) -> WatchItem {
        match self {
            Raw::End(reason) => WatchItem::End(reason),
            Raw::Initial(object, rv) => {
                WatchItem::Event(Event::object_event(EventKind::Added, rv, object))
            }
            Raw::Bookmark {
                rv,
                initial_events_end,
            } => WatchItem::Event(Event::bookmark(rv, initial_events_end)),
            Raw::Record(rec, v) => {
                let (kind, rv, object) = record_event(&rec, v);
                WatchItem::Event(Event::object_event(kind, rv, object.clone()))
            }
        }
    }
}

/// The kind, version and visible object of a record seen through a
/// verdict: Deleted carries the state the watcher could see, with the
/// change's resource version (seeds/004 `convertToWatchEvent`).
#[inline]
pub(crate) fn record_event(rec: &Record, v: Verdict) -> (EventKind, ResourceVersion, &Object) {
    let object = rec.object.as_ref();
    let shown = match v {
        Verdict::Deleted => rec.prev.as_ref().or(object),
        Verdict::Added | Verdict::Modified => object,
    };
    // Records handed out as events are changes, which carry an object.
    let shown = shown.unwrap_or_else(|| unreachable!("a change record without an object"));
    (v.event_kind(), rec.rv, shown)
}

impl Raw {
    /// The event lent out without touching the object's reference count;
    /// `None` for the end.
    #[inline]
    pub(crate) fn as_event_ref(&self) -> Option<EventRef<'_>> {
        Some(match self {
            Raw::End(_) => return None,
            Raw::Initial(object, rv) => EventRef::of(EventKind::Added, *rv, object),
            Raw::Bookmark {
                rv,
                initial_events_end,
            } => EventRef::bookmark(*rv, *initial_events_end),
            Raw::Record(rec, v) => {
                let (kind, rv, object) = record_event(rec, *v);
                EventRef::of(kind, rv, object)
            }
        })
    }
}

/// An event lent to a [`Watch::visit_batch`](crate::Watch::visit_batch) callback: like [`Event`], but
/// borrowing the object from the history ring instead of holding a
/// reference count on it. Keep what you need with
/// [`to_event`](EventRef::to_event).
///
/// ```
/// # use herald::*;
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// writer.replace(Relist::new([], 1.into()))?;
/// let mut w = engine.watch(WatchRequest::new().resource_version(Some(1.into())))?;
/// writer.apply(Change::added(Object::builder("ns", "a").payload("{}").build(), 2.into()))?;
/// let mut bytes = 0;
/// while bytes == 0 {
///     w.visit_batch(16, |ev| bytes += ev.object().map_or(0, |o| o.payload().len()));
/// }
/// assert_eq!(bytes, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    kind: EventKind,
    rv: ResourceVersion,
    object: Option<&'a Object>,
    initial_events_end: bool,
}

impl<'a> EventRef<'a> {
    #[inline]
    pub(crate) fn of(kind: EventKind, rv: ResourceVersion, object: &'a Object) -> Self {
        EventRef {
            kind,
            rv,
            object: Some(object),
            initial_events_end: false,
        }
    }

    #[inline]
    pub(crate) fn bookmark(rv: ResourceVersion, initial_events_end: bool) -> Self {
        EventRef {
            kind: EventKind::Bookmark,
            rv,
            object: None,
            initial_events_end,
        }
    }

    /// The kind of event.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The resource version (see [`Event::resource_version`]).
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }

    /// The object, none for a bookmark (see [`Event::object`]).
    pub fn object(&self) -> Option<&'a Object> {
        self.object
    }

    /// Whether this is the initial-events-end bookmark.
    pub fn is_initial_events_end(&self) -> bool {
        self.initial_events_end
    }

    /// An owned copy (one reference count on the object).
    pub fn to_event(&self) -> Event {
        match self.object {
            Some(o) => Event::object_event(self.kind, self.rv, o.clone()),
            None => Event::bookmark(self.rv, self.initial_events_end),
        }
    }
}
