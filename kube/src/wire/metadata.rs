//! `PartialObjectMetadata`: an object's metadata alone, and lists of them
//! (`PartialObjectMetadataList`), which client-go's metadata client and
//! metadata informers ask for (the garbage collector, the namespace and
//! quota controllers, controller-runtime's metadata cache):
//! `Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, ...`.
//! As the apiserver's `transformResponseObject`:
//!
//! - a GET asks for `PartialObjectMetadata`, a LIST for
//!   `PartialObjectMetadataList`; the other way round is a 406 naming the
//!   internal Go type (`you requested PartialObjectMetadata, but the
//!   requested object is a list (*core.PodList)`), or for a custom
//!   resource's GET as a list, a 500 (`content is not a list`);
//! - a watch asks for `PartialObjectMetadata`: each event's object is one
//!   (a bookmark's too: its version, and its annotation at the end of a
//!   watch-list's initial events); an `ERROR`'s `Status` is unchanged;
//! - `meta.k8s.io/v1` and `v1beta1`, in JSON, YAML (not on a watch) and
//!   protobuf, for built-in kinds and custom resources alike; the
//!   `Content-Type` carries no `as=`;
//! - a list's items carry their `kind` and `apiVersion`; an empty list's
//!   `items` is `null` (Go's nil slice); `v1beta1`'s protobuf list has
//!   its items as field 1 and its `ListMeta` as field 2.
//!
//! Herald does not take `PartialObjectMetadataList` for a watch (the
//! apiserver answers 200 and ends the stream at its first object).

use std::sync::Arc;

use bytes::BytesMut;
use herald::EventKind;
use serde_json::{Map, Value, json};

use super::encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
use super::protobuf::{PROTOBUF, PROTOBUF_WATCH, push_proto};
use super::range::{MediaRange, Offer};
use super::yaml::{YAML, yaml};
use crate::encode::{event_type, push_event};
use crate::partial;
use crate::proto::{self, wire};
use crate::status::ApiError;

/// The encoding of a metadata response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
    Json,
    Yaml,
    Protobuf,
}

/// One `as=PartialObjectMetadata[List];g=meta.k8s.io;v=...` format.
#[derive(Debug, Clone, Copy)]
pub(super) struct Metadata {
    /// `PartialObjectMetadataList` (a LIST's) rather than one object's.
    list: bool,
    /// `meta.k8s.io/v1beta1` rather than `v1`.
    v1beta1: bool,
    media: Media,
}

macro_rules! metadata {
    ($list:expr, $beta:expr, $media:ident) => {
        Metadata {
            list: $list,
            v1beta1: $beta,
            media: Media::$media,
        }
    };
}

/// Every metadata format.
pub(super) static METADATA: [Metadata; 12] = [
    metadata!(false, false, Json),
    metadata!(false, false, Yaml),
    metadata!(false, false, Protobuf),
    metadata!(true, false, Json),
    metadata!(true, false, Yaml),
    metadata!(true, false, Protobuf),
    metadata!(false, true, Json),
    metadata!(false, true, Yaml),
    metadata!(false, true, Protobuf),
    metadata!(true, true, Json),
    metadata!(true, true, Yaml),
    metadata!(true, true, Protobuf),
];

impl Metadata {
    fn kind(&self) -> &'static str {
        if self.list {
            "PartialObjectMetadataList"
        } else {
            "PartialObjectMetadata"
        }
    }

    fn group_version(&self) -> &'static str {
        if self.v1beta1 {
            "meta.k8s.io/v1beta1"
        } else {
            "meta.k8s.io/v1"
        }
    }
}

impl Format for Metadata {
    fn name(&self) -> &'static str {
        match (self.list, self.media) {
            (false, Media::Protobuf) => "metadata-protobuf",
            (true, Media::Protobuf) => "metadata-list-protobuf",
            (false, _) => "metadata",
            (true, _) => "metadata-list",
        }
    }

    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool {
        let version = if self.v1beta1 { "v1beta1" } else { "v1" };
        if range.param("as") != Some(self.kind())
            || range.param("g") != Some("meta.k8s.io")
            || range.param("v") != Some(version)
            || (self.list && offer.watch)
        {
            return false;
        }
        match (self.media, range.media_type()) {
            (Media::Json, ("application", "json") | ("*", "*")) => true,
            // The handler of built-in kinds takes `application/*` for
            // none of its types (see `Json`).
            (Media::Json, ("application", "*")) => !offer.protobuf,
            (Media::Yaml, ("application", "yaml")) => !offer.watch,
            // Custom resources too: the transform has a protobuf form.
            (Media::Protobuf, ("application", "vnd.kubernetes.protobuf")) => true,
            _ => false,
        }
    }

    /// Not named in a 406: the apiserver lists the plain media types.
    fn advertised(&self, _: Offer) -> Option<&'static str> {
        None
    }

    fn encoder(&self, request: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        Ok(Arc::new(MetadataEncoder {
            format: *self,
            kind: request.info.kind.clone(),
            typed: request.info.typed,
            group: request.info.group.clone(),
        }))
    }

    // `status`: the default (JSON), as the apiserver's error writer
    // refuses every `as=` range.
}

/// Writes one request's metadata responses.
#[derive(Debug)]
struct MetadataEncoder {
    format: Metadata,
    kind: String,
    typed: bool,
    group: String,
}

impl MetadataEncoder {
    /// The metadata of an object's JSON.
    fn metadata_of(&self, json: &[u8]) -> Result<Map<String, Value>, ApiError> {
        let object: Value = serde_json::from_slice(json)
            .map_err(|e| ApiError::internal(format!("an object's JSON does not parse: {e}")))?;
        partial::metadata(&self.kind, self.typed, &object)
            .map_err(|e| ApiError::internal(format!("an object's metadata: {e}")))
    }

    /// One `PartialObjectMetadata` (with its `kind` and `apiVersion`).
    fn partial(&self, metadata: Map<String, Value>) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": self.format.group_version(),
            "metadata": Value::Object(metadata),
        })
    }

    /// A `PartialObjectMetadata` message: `ObjectMeta` as field 1.
    fn partial_message(metadata: &Map<String, Value>) -> Result<Vec<u8>, ApiError> {
        let meta = partial::metadata_message(metadata)
            .map_err(|e| ApiError::internal(format!("an object's metadata as protobuf: {e}")))?;
        let mut out = Vec::with_capacity(meta.len() + 6);
        wire::put_bytes(&mut out, 1, &meta);
        Ok(out)
    }

    /// The body of one `PartialObjectMetadata` in the format's encoding.
    fn single(&self, metadata: Map<String, Value>) -> Result<Vec<u8>, ApiError> {
        match self.format.media {
            Media::Protobuf => Ok(proto::unknown(
                self.format.group_version(),
                "PartialObjectMetadata",
                &Self::partial_message(&metadata)?,
            )),
            media => {
                let mut body = gojson(&self.partial(metadata))?;
                if media == Media::Yaml {
                    return yaml(&body);
                }
                body.push(b'\n');
                Ok(body)
            }
        }
    }

    /// The apiserver's 406 for the other shape.
    fn not_acceptable(&self, list: bool) -> ApiError {
        let asked = self.format.kind();
        let go_type = partial::go_type(&self.group, &self.kind, self.typed, list);
        if list {
            ApiError::not_acceptable(format!(
                "you requested {asked}, but the requested object is a list ({go_type})"
            ))
        } else if !self.typed {
            // An `Unstructured` passes for a list, then fails as one.
            ApiError::unclassified("content is not a list")
        } else {
            ApiError::not_acceptable(format!(
                "you requested {asked}, but the requested object is not a list ({go_type})"
            ))
        }
    }
}

/// Go's JSON of `value`.
fn gojson(value: &Value) -> Result<Vec<u8>, ApiError> {
    crate::gojson::to_vec(value).map_err(|e| ApiError::internal(e.to_string()))
}

impl Encoder for MetadataEncoder {
    fn name(&self) -> &'static str {
        self.format.name()
    }

    fn content_type(&self) -> &'static str {
        match self.format.media {
            Media::Json => "application/json",
            Media::Yaml => YAML,
            Media::Protobuf => PROTOBUF,
        }
    }

    fn stream_content_type(&self) -> &'static str {
        match self.format.media {
            Media::Protobuf => PROTOBUF_WATCH,
            _ => "application/json",
        }
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        if self.format.list {
            return Err(self.not_acceptable(false));
        }
        self.single(self.metadata_of(item.json.bytes())?)
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        if !self.format.list {
            return Err(self.not_acceptable(true));
        }
        let gv = self.format.group_version();
        if self.format.media == Media::Protobuf {
            return self.list_protobuf(head, items);
        }
        let mut list_meta = Map::new();
        list_meta.insert("resourceVersion".into(), Value::from(head.rv.to_string()));
        if let Some(token) = head.continue_token.filter(|t| !t.is_empty()) {
            list_meta.insert("continue".into(), Value::from(token));
        }
        if let Some(n) = head.remaining {
            list_meta.insert("remainingItemCount".into(), Value::from(n));
        }
        let mut parts = Vec::with_capacity(items.len());
        for item in items {
            parts.push(self.partial(self.metadata_of(item.json.bytes())?));
        }
        let list = json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": gv,
            "metadata": list_meta,
            // Go's nil slice when nothing was listed.
            "items": if parts.is_empty() { Value::Null } else { Value::Array(parts) },
        });
        let mut body = gojson(&list)?;
        if self.format.media == Media::Yaml {
            return yaml(&body);
        }
        body.push(b'\n');
        Ok(body)
    }

    fn event(&self, _: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        match self.event_object(item.json.bytes()) {
            Ok(object) => self.push(buf, event_type(kind), &object),
            Err(e) => self.notice(buf, "ERROR", &e.to_json()),
        }
    }

    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        if kind == "ERROR" {
            // A `Status` is not transformed.
            return match self.format.media {
                Media::Protobuf => match super::encodings::envelope(json) {
                    Ok(pb) => push_proto(buf, kind, &pb),
                    Err(_) => push_event(buf, kind, json),
                },
                _ => push_event(buf, kind, json),
            };
        }
        match self.bookmark_object(json) {
            Ok(object) => self.push(buf, kind, &object),
            Err(e) => self.notice(buf, "ERROR", &e.to_json()),
        }
    }
}

impl MetadataEncoder {
    /// A watch event's object: one `PartialObjectMetadata` (JSON without
    /// its newline, or the protobuf envelope).
    fn event_object(&self, json: &[u8]) -> Result<Vec<u8>, ApiError> {
        self.encoded(self.metadata_of(json)?)
    }

    /// A bookmark's object: its metadata typed as Go writes it (no null
    /// `creationTimestamp`), without the list blueprint Herald's
    /// watch-list bookmarks carry for full objects (the apiserver sends
    /// none).
    fn bookmark_object(&self, json: &[u8]) -> Result<Vec<u8>, ApiError> {
        let mut object: Value = serde_json::from_slice(json)
            .map_err(|e| ApiError::internal(format!("a bookmark's JSON does not parse: {e}")))?;
        if let Some(a) = object
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove(crate::encode::BLUEPRINT_ANNOTATION);
            if a.is_empty() {
                object["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("annotations"));
            }
        }
        let metadata = partial::metadata(&self.kind, false, &object)
            .map_err(|e| ApiError::internal(format!("a bookmark's metadata: {e}")))?;
        self.encoded(metadata)
    }

    /// One `PartialObjectMetadata` of `metadata` as an event carries it:
    /// JSON without its newline, or the protobuf envelope.
    fn encoded(&self, metadata: Map<String, Value>) -> Result<Vec<u8>, ApiError> {
        match self.format.media {
            Media::Protobuf => Ok(proto::unknown(
                self.format.group_version(),
                "PartialObjectMetadata",
                &Self::partial_message(&metadata)?,
            )),
            _ => gojson(&self.partial(metadata)),
        }
    }

    fn push(&self, buf: &mut BytesMut, kind: &str, object: &[u8]) {
        match self.format.media {
            Media::Protobuf => push_proto(buf, kind, object),
            _ => push_event(buf, kind, object),
        }
    }

    /// A `PartialObjectMetadataList` in protobuf: `v1`'s `ListMeta` (1)
    /// then items (2); `v1beta1`'s items (1) then `ListMeta` (2).
    fn list_protobuf(
        &self,
        head: ListHead<'_>,
        items: &[Outgoing<'_>],
    ) -> Result<Vec<u8>, ApiError> {
        let mut list_meta = Vec::with_capacity(32);
        wire::put_bytes(&mut list_meta, 1, b"");
        wire::put_bytes(&mut list_meta, 2, head.rv.to_string().as_bytes());
        wire::put_bytes(
            &mut list_meta,
            3,
            head.continue_token.unwrap_or_default().as_bytes(),
        );
        if let Some(n) = head.remaining {
            wire::put_varint(&mut list_meta, 4 << 3);
            wire::put_varint(&mut list_meta, n);
        }
        let (meta_field, items_field) = if self.format.v1beta1 { (2, 1) } else { (1, 2) };
        let mut raw = Vec::with_capacity(64 + items.len() * 256);
        if !self.format.v1beta1 {
            wire::put_bytes(&mut raw, meta_field, &list_meta);
        }
        for item in items {
            let metadata = self.metadata_of(item.json.bytes())?;
            wire::put_bytes(&mut raw, items_field, &Self::partial_message(&metadata)?);
        }
        if self.format.v1beta1 {
            wire::put_bytes(&mut raw, meta_field, &list_meta);
        }
        Ok(proto::unknown(
            self.format.group_version(),
            "PartialObjectMetadataList",
            &raw,
        ))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use herald::ResourceVersion;

    use super::*;
    use crate::encode::ObjectJson;
    use crate::info::ResourceInfo;
    use crate::table::Printer;
    use crate::wire::Encodings;
    use crate::wire::range::ranges;

    const POD: &str = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7","labels":{"app":"<web>"}},"spec":{"nodeName":"n"}}"#;

    /// The metadata format that takes `accept` (one range) for `info`.
    fn encoder(accept: &str, info: &ResourceInfo) -> Arc<dyn Encoder> {
        let offer = Offer {
            protobuf: info.typed,
            watch: false,
        };
        let range = &ranges(accept)[0];
        let format = METADATA.iter().find(|f| f.takes(range, offer)).unwrap();
        let printer = Printer::for_kind(&info.kind);
        format
            .encoder(&Request {
                info,
                printer: &printer,
                include_object: None,
                encodings: &Arc::new(Encodings::default()),
            })
            .unwrap()
    }

    fn item(json: &ObjectJson) -> Outgoing<'_> {
        Outgoing {
            object: None,
            json,
            rv: ResourceVersion::new(7),
        }
    }

    fn head(info: &ResourceInfo) -> ListHead<'_> {
        ListHead {
            info,
            rv: ResourceVersion::new(9),
            continue_token: None,
            remaining: None,
        }
    }

    #[test]
    fn a_get_and_a_list_as_the_apiserver_writes_them() {
        let pods = ResourceInfo::pods();
        let pod = ObjectJson::Stored(Bytes::from_static(POD.as_bytes()));
        let one = encoder(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            &pods,
        );
        assert_eq!(one.content_type(), "application/json");
        assert_eq!(
            String::from_utf8(one.object(item(&pod)).unwrap()).unwrap(),
            "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"7\",\"labels\":{\"app\":\"\\u003cweb\\u003e\"}}}\n"
        );
        let e = one.list(head(&pods), &[]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                406,
                "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
            )
        );
        let list = encoder(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
            &pods,
        );
        assert_eq!(
            String::from_utf8(list.list(head(&pods), &[]).unwrap()).unwrap(),
            "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1beta1\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":null}\n"
        );
        let body: Value =
            serde_json::from_slice(&list.list(head(&pods), &[item(&pod)]).unwrap()).unwrap();
        assert_eq!(body["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(body["items"][0]["apiVersion"], "meta.k8s.io/v1beta1");
        let e = list.object(item(&pod)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                406,
                "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)"
            )
        );
        let widgets = ResourceInfo::namespaced("widgets", "widget", "Widget", &[])
            .in_group("herald.dev", "v1");
        let mut widgets = widgets;
        widgets.typed = false;
        let e = encoder(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            &widgets,
        )
        .object(item(&pod))
        .unwrap_err();
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (500, "", "content is not a list")
        );
    }

    #[test]
    fn protobuf_wraps_the_object_meta() {
        let pods = ResourceInfo::pods();
        let pod = ObjectJson::Stored(Bytes::from_static(POD.as_bytes()));
        let pb = encoder(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            &pods,
        )
        .object(item(&pod))
        .unwrap();
        let env = proto::envelope(&pb).unwrap();
        assert_eq!(
            (env.api_version, env.kind),
            ("meta.k8s.io/v1", "PartialObjectMetadata")
        );
        // PartialObjectMetadata { metadata = 1 }.
        assert_eq!(env.raw[0], 0x0a);
        let meta = proto::type_json(&env.raw[2..], partial::OBJECT_META).unwrap();
        assert_eq!(meta["name"], "a");
        assert_eq!(meta["labels"]["app"], "<web>");
        for (accept, first) in [
            (
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                0x0a,
            ),
            (
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
                0x0a,
            ),
        ] {
            let pb = encoder(accept, &pods)
                .list(head(&pods), &[item(&pod)])
                .unwrap();
            let env = proto::envelope(&pb).unwrap();
            assert_eq!(env.kind, "PartialObjectMetadataList");
            assert_eq!(env.raw[0], first);
        }
    }

    #[test]
    fn watch_events_carry_metadata_and_errors_pass() {
        let pods = ResourceInfo::pods();
        let pod = ObjectJson::Stored(Bytes::from_static(POD.as_bytes()));
        let e = encoder(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            &pods,
        );
        let mut buf = BytesMut::new();
        e.event(Stream::default(), &mut buf, EventKind::Added, item(&pod));
        e.notice(&mut buf, "BOOKMARK", br#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}"#);
        e.notice(
            &mut buf,
            "ERROR",
            br#"{"kind":"Status","apiVersion":"v1","code":410}"#,
        );
        let lines: Vec<Value> = buf[..]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines[0]["object"]["kind"], "PartialObjectMetadata");
        assert!(lines[0]["object"].get("spec").is_none());
        assert_eq!(lines[1]["type"], "BOOKMARK");
        assert_eq!(
            lines[1]["object"],
            serde_json::json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}})
        );
        assert_eq!(lines[2]["object"]["kind"], "Status");
    }
}
