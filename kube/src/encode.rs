//! The JSON a client reads: objects, lists, watch events.
//!
//! An object is sent as its payload: the source stores each object's JSON
//! once, with `metadata.resourceVersion` set (the [`Decoder`](crate::Decoder)
//! does this for etcd; the demo source writes it), and every list and watch
//! frame that carries the object copies those bytes: nothing is encoded
//! per connection (the reference's serialize-once). An object whose
//! payload is not a JSON object (an engine fed with bare
//! `Object::builder` objects) is described from its metadata instead,
//! which does cost an encoding per delivery ([`ObjectJson::Described`]).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use herald::{EventKind, Object, ResourceVersion};
use serde_json::{Map, Value, json};

use crate::gojson;
use crate::info::ResourceInfo;

/// Where an object's JSON came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectJson {
    /// The stored payload, shared (no copy, no encoding).
    Stored(Bytes),
    /// Described from the object's name, namespace and labels (its
    /// payload is not a JSON object).
    Described(Bytes),
    /// The stored payload with `metadata.resourceVersion` set to the
    /// event's: a deletion whose object is a state older than the event
    /// (an object that left a watcher's filter is deleted for it with the
    /// last state it could see, at the change's version, as the
    /// reference's `cacheWatcher` re-stamps it). Encoded once per event
    /// and shared ([`Restamps`]).
    Restamped(Bytes),
}

impl ObjectJson {
    /// The bytes.
    pub fn bytes(&self) -> &Bytes {
        match self {
            ObjectJson::Stored(b) | ObjectJson::Described(b) | ObjectJson::Restamped(b) => b,
        }
    }
}

/// Whether a payload is a JSON object (by its first non-blank byte; the
/// source is trusted to have stored valid JSON).
fn is_json_object(payload: &[u8]) -> bool {
    payload
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// The object's JSON at version `rv`.
pub fn object_json(info: &ResourceInfo, object: &Object, rv: ResourceVersion) -> ObjectJson {
    let payload = object.payload();
    if is_json_object(payload) {
        return ObjectJson::Stored(payload.clone());
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(object.name()));
    if !object.namespace().is_empty() {
        metadata.insert("namespace".into(), json!(object.namespace()));
    }
    metadata.insert("resourceVersion".into(), json!(rv.get().to_string()));
    if object.labels().len() > 0 {
        let labels: Map<String, Value> =
            object.labels().map(|(k, v)| (k.into(), json!(v))).collect();
        metadata.insert("labels".into(), Value::Object(labels));
    }
    let described = json!({
        "apiVersion": info.api_version(),
        "kind": info.kind,
        "metadata": metadata,
    });
    ObjectJson::Described(Bytes::from(gojson::to_vec(&described).unwrap_or_default()))
}

/// The `metadata.resourceVersion` a stored payload carries: the first
/// `"resourceVersion":"N"` after the first `"metadata":{` (a built-in
/// kind writes `metadata` after its type; a custom resource's sorted
/// keys may put others, `data`, before it).
pub fn stored_version(payload: &[u8]) -> Option<u64> {
    const META: &[u8] = b"\"metadata\":{";
    const KEY: &[u8] = b"\"resourceVersion\":\"";
    let from = payload
        .windows(META.len())
        .position(|w| w == META)
        .unwrap_or(0);
    let payload = &payload[from..];
    let at = payload.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digits = &payload[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// Payloads re-stamped with an event's version, shared by the
/// connections that send the same event: the last [`Restamps::KEEP`],
/// keyed by the event's version and the payload's address.
#[derive(Debug, Default)]
pub struct Restamps {
    recent: Mutex<VecDeque<(u64, usize, Bytes)>>,
    made: AtomicU64,
}

impl Restamps {
    /// Re-stamped payloads kept.
    pub const KEEP: usize = 1024;

    /// Encodings made so far (not deliveries).
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    fn get(&self, rv: u64, payload: &Bytes) -> Bytes {
        let id = payload.as_ptr() as usize;
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, b)) = recent.iter().find(|(r, p, _)| *r == rv && *p == id) {
            return b.clone();
        }
        let stamped = restamp(payload, rv).unwrap_or_else(|| payload.clone());
        self.made.fetch_add(1, Ordering::Relaxed);
        if recent.len() == Self::KEEP {
            recent.pop_front();
        }
        recent.push_back((rv, id, stamped.clone()));
        stamped
    }
}

/// The payload with `metadata.resourceVersion` set to `rv` (key order
/// kept), or `None` if it is not a JSON object with `metadata`.
fn restamp(payload: &[u8], rv: u64) -> Option<Bytes> {
    let mut v: Value = serde_json::from_slice(payload).ok()?;
    let metadata = v.get_mut("metadata")?.as_object_mut()?;
    metadata.insert("resourceVersion".into(), json!(rv.to_string()));
    gojson::to_vec(&v).ok().map(Bytes::from)
}

/// The JSON of a watch event's object: [`object_json`], and for a
/// deletion whose stored payload names another version than the event's,
/// the payload re-stamped (once per event, shared through `restamps`).
pub fn event_object(
    info: &ResourceInfo,
    restamps: &Restamps,
    kind: EventKind,
    object: &Object,
    rv: ResourceVersion,
) -> ObjectJson {
    let json = object_json(info, object, rv);
    match json {
        ObjectJson::Stored(payload)
            if kind == EventKind::Deleted && stored_version(&payload) != Some(rv.get()) =>
        {
            ObjectJson::Restamped(restamps.get(rv.get(), &payload))
        }
        other => other,
    }
}

/// The `type` of a watch event.
pub fn event_type(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Added => "ADDED",
        EventKind::Modified => "MODIFIED",
        EventKind::Deleted => "DELETED",
        _ => "BOOKMARK",
    }
}

/// Appends one watch event line: `{"type":T,"object":O}\n`.
pub fn push_event(buf: &mut BytesMut, kind: &str, object: &[u8]) {
    buf.reserve(object.len() + 32);
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(kind.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(object);
    buf.put_slice(b"}\n");
}

/// The annotation under which a watch-list's last bookmark carries the
/// list's blueprint.
pub const BLUEPRINT_ANNOTATION: &str = "kubernetes.io/initial-events-list-blueprint";

/// A bookmark's object: the kind and the version (and, at the end of a
/// watch-list's initial events, the `k8s.io/initial-events-end`
/// annotation that says so, and the list's blueprint under
/// `kubernetes.io/initial-events-list-blueprint`, the key Kubernetes 1.32
/// and 1.33 send and client-go's `WatchListClient` reads).
pub fn bookmark_object(info: &ResourceInfo, rv: ResourceVersion, initial_end: bool) -> Vec<u8> {
    let mut metadata = json!({
        "resourceVersion": rv.get().to_string(),
        "creationTimestamp": null,
    });
    if initial_end {
        metadata["annotations"] = json!({
            "k8s.io/initial-events-end": "true",
            BLUEPRINT_ANNOTATION: info.list_blueprint(),
        });
    }
    gojson::to_vec(&json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": metadata,
    }))
    .unwrap_or_default()
}

/// A list's body, built from objects' JSON: `{"kind":"PodList",
/// "apiVersion":"v1","metadata":{...},"items":[...]}` for a built-in
/// kind (`metav1.ListMeta`'s field order), and for a custom resource the
/// apiserver's `UnstructuredList`, a map written with its keys sorted:
/// `{"apiVersion":...,"items":[...],"kind":...,"metadata":{...}}`.
pub struct ListBody {
    buf: BytesMut,
    first: bool,
    /// `{"kind":"Pod","apiVersion":"v1",`: what a typed list's items do
    /// not carry (the apiserver prints a built-in kind's list items with
    /// an empty `TypeMeta`; custom resources' items keep theirs).
    strip: Option<Vec<u8>>,
    /// What follows the items: `]}`, or a custom resource list's `kind`
    /// and `metadata`.
    tail: Vec<u8>,
}

impl ListBody {
    /// Starts a list at `rv`, with a continue token if there are more pages.
    pub fn new(info: &ResourceInfo, rv: ResourceVersion, continue_token: Option<&str>) -> ListBody {
        ListBody::paged(info, rv, continue_token, None)
    }

    /// [`ListBody::new`] for a page that says how many objects follow it
    /// (`metadata.remainingItemCount`).
    pub fn paged(
        info: &ResourceInfo,
        rv: ResourceVersion,
        continue_token: Option<&str>,
        remaining: Option<u64>,
    ) -> ListBody {
        let mut metadata = Map::new();
        let version = json!(rv.get().to_string());
        if info.typed {
            metadata.insert("resourceVersion".into(), version.clone());
        }
        // A custom resource's list is printed from a map: its `continue`
        // is there, empty, when there is no next page.
        match continue_token {
            Some(token) => {
                metadata.insert("continue".into(), json!(token));
            }
            None if !info.typed => {
                metadata.insert("continue".into(), json!(""));
            }
            None => {}
        }
        if let Some(n) = remaining {
            metadata.insert("remainingItemCount".into(), json!(n));
        }
        if !info.typed {
            metadata.insert("resourceVersion".into(), version);
        }
        let metadata = gojson::to_vec(&Value::Object(metadata)).unwrap_or_default();
        let mut buf = BytesMut::with_capacity(4096);
        let mut tail = Vec::new();
        if info.typed {
            buf.put_slice(b"{\"kind\":");
            buf.put_slice(&json_string(&info.list_kind));
            buf.put_slice(b",\"apiVersion\":");
            buf.put_slice(&json_string(&info.api_version()));
            buf.put_slice(b",\"metadata\":");
            buf.put_slice(&metadata);
            buf.put_slice(b",\"items\":[");
            tail.extend_from_slice(b"]}");
        } else {
            buf.put_slice(b"{\"apiVersion\":");
            buf.put_slice(&json_string(&info.api_version()));
            buf.put_slice(b",\"items\":[");
            tail.extend_from_slice(b"],\"kind\":");
            tail.extend_from_slice(&json_string(&info.list_kind));
            tail.extend_from_slice(b",\"metadata\":");
            tail.extend_from_slice(&metadata);
            tail.push(b'}');
        }
        let strip = info.typed.then(|| {
            format!(
                "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",",
                info.kind,
                info.api_version()
            )
            .into_bytes()
        });
        ListBody {
            buf,
            first: true,
            strip,
            tail,
        }
    }

    /// Appends one object.
    pub fn push(&mut self, object: &[u8]) {
        if !self.first {
            self.buf.put_u8(b',');
        }
        self.first = false;
        match self.strip.as_deref().and_then(|p| object.strip_prefix(p)) {
            Some(rest) => {
                self.buf.put_u8(b'{');
                self.buf.put_slice(rest);
            }
            None => self.buf.put_slice(object),
        }
    }

    /// The whole body, ending with a newline as Go's `json.Encoder` ends
    /// the apiserver's.
    pub fn finish(mut self) -> Bytes {
        self.buf.put_slice(&self.tail);
        self.buf.put_u8(b'\n');
        self.buf.freeze()
    }
}

/// A string as Go writes it.
fn json_string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    gojson::string(&mut out, s);
    out
}

impl std::fmt::Debug for ListBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListBody")
            .field("bytes", &self.buf.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::ResourceInfo;

    #[test]
    fn a_stored_payload_is_shared_and_a_bare_object_is_described() {
        let info = ResourceInfo::pods();
        let stored = Object::builder("ns", "a")
            .payload(&b" {\"kind\":\"Pod\"}"[..])
            .build();
        match object_json(&info, &stored, 3.into()) {
            ObjectJson::Stored(b) => assert_eq!(b.as_ptr(), stored.payload().as_ptr()),
            other => panic!("{other:?}"),
        }
        let bare = Object::builder("ns", "b").label("app", "web").build();
        let ObjectJson::Described(b) = object_json(&info, &bare, 7.into()) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["kind"], "Pod");
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["labels"]["app"], "web");
    }

    #[test]
    fn a_deletion_older_than_its_event_is_restamped_once() {
        let info = ResourceInfo::pods();
        let restamps = Restamps::default();
        let last = Object::builder("ns", "a")
            .payload(&br#"{"metadata":{"name":"a","resourceVersion":"5"},"spec":{"x":1}}"#[..])
            .build();
        // A real deletion stamped with its own version: shared as stored.
        let at5 = event_object(&info, &restamps, EventKind::Deleted, &last, 5.into());
        assert!(matches!(at5, ObjectJson::Stored(_)));
        // The object left the filter at version 9: re-stamped, once.
        let a = event_object(&info, &restamps, EventKind::Deleted, &last, 9.into());
        let b = event_object(&info, &restamps, EventKind::Deleted, &last, 9.into());
        let (ObjectJson::Restamped(a), ObjectJson::Restamped(b)) = (a, b) else {
            panic!()
        };
        assert_eq!(a.as_ptr(), b.as_ptr());
        assert_eq!(restamps.made(), 1);
        assert_eq!(
            std::str::from_utf8(&a).unwrap(),
            r#"{"metadata":{"name":"a","resourceVersion":"9"},"spec":{"x":1}}"#
        );
        // Modifications are never touched.
        let m = event_object(&info, &restamps, EventKind::Modified, &last, 9.into());
        assert!(matches!(m, ObjectJson::Stored(_)));
        assert_eq!(stored_version(b"{}"), None);
    }

    #[test]
    fn events_and_lists_are_json() {
        let mut buf = BytesMut::new();
        push_event(&mut buf, "ADDED", b"{\"a\":1}");
        let line: Value = serde_json::from_slice(&buf[..buf.len() - 1]).unwrap();
        assert_eq!(line["type"], "ADDED");
        assert_eq!(line["object"]["a"], 1);
        let info = ResourceInfo::pods();
        let mut list = ListBody::new(&info, 9.into(), Some("tok"));
        list.push(b"{}");
        list.push(b"{\"x\":2}");
        let v: Value = serde_json::from_slice(&list.finish()).unwrap();
        assert_eq!(v["kind"], "PodList");
        assert_eq!(v["metadata"]["resourceVersion"], "9");
        assert_eq!(v["metadata"]["continue"], "tok");
        assert_eq!(v["items"].as_array().unwrap().len(), 2);
        let bm: Value = serde_json::from_slice(&bookmark_object(&info, 4.into(), true)).unwrap();
        assert_eq!(
            bm["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
    }

    #[test]
    fn list_bodies_are_the_apiservers_bytes() {
        let pods = ResourceInfo::pods();
        let mut list = ListBody::paged(&pods, 9.into(), Some("tok"), Some(3));
        list.push(br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#);
        assert_eq!(
            std::str::from_utf8(&list.finish()).unwrap(),
            concat!(
                r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"tok","remainingItemCount":3},"items":[{"metadata":{"name":"a"}}]}"#,
                "\n"
            )
        );
        let list = ListBody::new(&pods, 9.into(), None);
        assert_eq!(
            std::str::from_utf8(&list.finish()).unwrap(),
            concat!(
                r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}"#,
                "\n"
            )
        );
        // A custom resource's list is an `UnstructuredList`: a map, its
        // keys sorted.
        let mut custom = ResourceInfo::secrets();
        custom.typed = false;
        let mut list = ListBody::paged(&custom, 9.into(), Some("tok"), Some(3));
        list.push(br#"{"apiVersion":"v1","kind":"Secret"}"#);
        assert_eq!(
            std::str::from_utf8(&list.finish()).unwrap(),
            concat!(
                r#"{"apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Secret"}],"kind":"SecretList","metadata":{"continue":"tok","remainingItemCount":3,"resourceVersion":"9"}}"#,
                "\n"
            )
        );
        let list = ListBody::new(&custom, 9.into(), None);
        assert_eq!(
            std::str::from_utf8(&list.finish()).unwrap(),
            concat!(
                r#"{"apiVersion":"v1","items":[],"kind":"SecretList","metadata":{"continue":"","resourceVersion":"9"}}"#,
                "\n"
            )
        );
    }
}
