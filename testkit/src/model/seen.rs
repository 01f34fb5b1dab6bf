//! What a watcher sees: an event in the model's terms, and what a receive
//! gives.

use std::fmt;

use herald::{EndReason, Event, EventKind, Object};

/// One event as a watcher sees it (kind, version, key, object, whether it
/// is the initial-events-end bookmark).
#[derive(Clone, PartialEq, Eq)]
pub struct Seen {
    /// The event's kind.
    pub kind: EventKind,
    /// Its resource version.
    pub rv: u64,
    /// The object's key (empty for a bookmark).
    pub key: String,
    /// The object shown (none for a bookmark).
    pub object: Option<Object>,
    /// The initial-events-end marker.
    pub initial_events_end: bool,
}

impl Seen {
    /// The model's view of an engine event.
    pub fn from_event(ev: &Event) -> Seen {
        Seen {
            kind: ev.kind(),
            rv: ev.resource_version().get(),
            key: ev.object().map(|o| o.key().to_owned()).unwrap_or_default(),
            object: ev.object().cloned(),
            initial_events_end: ev.is_initial_events_end(),
        }
    }

    pub(crate) fn object_event(kind: EventKind, rv: u64, o: &Object) -> Seen {
        Seen {
            kind,
            rv,
            key: o.key().to_owned(),
            object: Some(o.clone()),
            initial_events_end: false,
        }
    }

    pub(crate) fn initial_events_end(rv: u64) -> Seen {
        Seen {
            kind: EventKind::Bookmark,
            rv,
            key: String::new(),
            object: None,
            initial_events_end: true,
        }
    }
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            None => write!(
                f,
                "{:?}@{}{}",
                self.kind,
                self.rv,
                if self.initial_events_end { "(iee)" } else { "" }
            ),
            Some(o) => {
                let labels: Vec<String> = o.labels().map(|(k, v)| format!("{k}={v}")).collect();
                write!(
                    f,
                    "{:?}@{} {} [{}] node={:?} {:?}",
                    self.kind,
                    self.rv,
                    self.key,
                    labels.join(","),
                    o.field("spec.nodeName"),
                    String::from_utf8_lossy(o.payload())
                )
            }
        }
    }
}

/// One step of a receive, as `Watch::try_recv` reports it.
#[derive(Clone, PartialEq, Eq)]
pub enum Recv {
    /// An event.
    Event(Seen),
    /// The terminal item.
    End(EndReason),
    /// Nothing ready now.
    Empty,
    /// The End has already been received.
    Finished,
}

impl fmt::Debug for Recv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recv::Event(s) => write!(f, "{s:?}"),
            Recv::End(r) => write!(f, "End({r:?})"),
            Recv::Empty => f.write_str("Empty"),
            Recv::Finished => f.write_str("Finished"),
        }
    }
}
