//! events.k8s.io/v1 `Event`s as core `Event`s: both groups' events are one
//! storage, whose printer (`printEvent`) reads the internal core event that
//! `Convert_v1_Event_To_core_Event` makes of an events.k8s.io one. Herald
//! prints their JSON, so the fields that group renamed are renamed back.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// events.k8s.io/v1's names of the core fields the printer reads: (its
/// name, core/v1's).
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// `o` with core/v1's field names: an events.k8s.io/v1 event (one with a
/// field of that group's names) renamed, a core one as it is.
pub(crate) fn as_core(o: &Value) -> Cow<'_, Value> {
    let Some(map) = o.as_object() else {
        return Cow::Borrowed(o);
    };
    if !RENAMED.iter().any(|(events, _)| map.contains_key(*events)) {
        return Cow::Borrowed(o);
    }
    let renamed: Map<String, Value> = map
        .iter()
        .map(|(k, v)| {
            let core = RENAMED
                .iter()
                .find(|(events, _)| events == k)
                .map_or(k.as_str(), |(_, core)| core);
            (core.to_owned(), v.clone())
        })
        .collect();
    Cow::Owned(Value::Object(renamed))
}
