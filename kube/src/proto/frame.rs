//! What a protobuf client is sent around objects: a list (the list kind's
//! message in the `k8s\0` envelope: `ListMeta` as field 1, each item's
//! typed message as field 2) and a watch stream's events (each a 4-byte
//! big-endian length, then a `metav1.WatchEvent`: `type` 1, `object` 2, a
//! `RawExtension` whose `raw` (1) is the object's envelope), as
//! client-go's protobuf list and watch decoders read them
//! (`protobuf.RawSerializer` with the `LengthDelimitedFramer`).

use super::envelope::envelope;
use super::error::{MAGIC, ProtoError};
use super::wire::{Fields, Wire, close_len, open_len, put_bytes, put_varint};

/// A list's protobuf body, built item by item.
#[derive(Debug)]
pub struct ListFrame {
    out: Vec<u8>,
    /// Where the `raw` field's length goes.
    raw: usize,
}

impl ListFrame {
    /// Starts a list of `list_kind` in `api_version` at revision `rv`,
    /// with a continue token if there are more pages.
    pub fn new(
        api_version: &str,
        list_kind: &str,
        rv: u64,
        continue_token: Option<&str>,
    ) -> ListFrame {
        ListFrame::paged(api_version, list_kind, rv, continue_token, None)
    }

    /// [`ListFrame::new`] for a page that says how many objects follow
    /// it (`ListMeta.remainingItemCount`, field 4).
    pub fn paged(
        api_version: &str,
        list_kind: &str,
        rv: u64,
        continue_token: Option<&str>,
        remaining: Option<u64>,
    ) -> ListFrame {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(MAGIC);
        let meta = open_len(&mut out, 1);
        put_bytes(&mut out, 1, api_version.as_bytes());
        put_bytes(&mut out, 2, list_kind.as_bytes());
        close_len(&mut out, meta);
        let raw = open_len(&mut out, 2);
        // `ListMeta` as gogo-protobuf writes it: its strings (`selfLink`,
        // `continue`) even when empty; `remainingItemCount`, a pointer,
        // only when set.
        let list_meta = open_len(&mut out, 1);
        put_bytes(&mut out, 1, b"");
        put_bytes(&mut out, 2, rv.to_string().as_bytes());
        put_bytes(&mut out, 3, continue_token.unwrap_or_default().as_bytes());
        if let Some(n) = remaining {
            put_varint(&mut out, 4 << 3);
            put_varint(&mut out, n);
        }
        close_len(&mut out, list_meta);
        ListFrame { out, raw }
    }

    /// Appends one object, given its envelope ([`super::encode`]).
    pub fn push(&mut self, object: &[u8]) -> Result<(), ProtoError> {
        put_bytes(&mut self.out, 2, envelope(object)?.raw);
        Ok(())
    }

    /// The whole body.
    pub fn finish(mut self) -> Vec<u8> {
        close_len(&mut self.out, self.raw);
        put_bytes(&mut self.out, 3, b"");
        put_bytes(&mut self.out, 4, b"");
        self.out
    }
}

/// Appends one watch event whose object's envelope is `object`: its
/// length (4 bytes, big-endian), then the `WatchEvent` message.
pub fn watch_event(out: &mut Vec<u8>, kind: &str, object: &[u8]) {
    out.extend_from_slice(&watch_event_head(kind, object.len()));
    out.extend_from_slice(object);
}

/// What comes before an event's object envelope of `object_len` bytes:
/// the frame's length, the `WatchEvent`'s `type`, and the keys and
/// lengths of its `object` and that `RawExtension`'s `raw`. The frame is
/// this, then the envelope (so that a server writes the shared envelope
/// without copying it into a new event first).
pub fn watch_event_head(kind: &str, object_len: usize) -> Vec<u8> {
    let mut raw_key = Vec::with_capacity(12);
    put_varint(&mut raw_key, (1 << 3) | 2);
    put_varint(&mut raw_key, object_len as u64);
    let extension_len = raw_key.len() + object_len;
    let mut head = vec![0; 4];
    put_bytes(&mut head, 1, kind.as_bytes());
    put_varint(&mut head, (2 << 3) | 2);
    put_varint(&mut head, extension_len as u64);
    head.extend_from_slice(&raw_key);
    let len = u32::try_from(head.len() - 4 + object_len).unwrap_or(u32::MAX);
    head[..4].copy_from_slice(&len.to_be_bytes());
    head
}

/// Reads one `WatchEvent` message (a frame's bytes after its length):
/// its `type` and its object's envelope (`object.raw`), as client-go's
/// protobuf watch decoder does. Unknown fields are skipped; a missing
/// type or object, or bytes that are not the wire format, are an error.
pub fn read_watch_event(event: &[u8]) -> Result<(&str, &[u8]), ProtoError> {
    let (mut kind, mut object) = (None, None);
    for field in Fields::new(event) {
        match field? {
            (1, Wire::Bytes(b)) => {
                kind = Some(
                    std::str::from_utf8(b)
                        .map_err(|_| ProtoError::Wire("a WatchEvent type is not UTF-8".into()))?,
                );
            }
            (2, Wire::Bytes(extension)) => {
                for f in Fields::new(extension) {
                    if let (1, Wire::Bytes(raw)) = f? {
                        object = Some(raw);
                    }
                }
            }
            (1 | 2, _) => {
                return Err(ProtoError::Wire(
                    "a WatchEvent field of the wrong type".into(),
                ));
            }
            _ => {}
        }
    }
    match (kind, object) {
        (Some(kind), Some(object)) => Ok((kind, object)),
        _ => Err(ProtoError::Wire(
            "a WatchEvent without its type or object".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decode, encode};
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn lists_and_events_read_back() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}});
        let env = encode(pod.as_object().unwrap()).unwrap();
        let mut list = ListFrame::new("v1", "PodList", 9, Some("tok"));
        list.push(&env).unwrap();
        list.push(&env).unwrap();
        let body = list.finish();
        let l = envelope(&body).unwrap();
        assert_eq!((l.api_version, l.kind), ("v1", "PodList"));
        let got = decode(&body).unwrap();
        assert_eq!(
            got["metadata"],
            json!({"resourceVersion": "9", "continue": "tok"})
        );
        assert_eq!(got["items"].as_array().map(Vec::len), Some(2));
        assert_eq!(got["items"][1]["metadata"]["name"], "a");
        assert!(
            ListFrame::new("v1", "PodList", 1, None)
                .push(b"junk")
                .is_err()
        );

        let mut out = vec![9];
        watch_event(&mut out, "ADDED", &env);
        let len = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - 5);
        // The event is a WatchEvent whose object's raw is the envelope.
        let event = &out[5..];
        let mut fields = super::super::wire::Fields::new(event);
        let (n, t) = fields.next().unwrap().unwrap();
        assert_eq!((n, t), (1, super::super::wire::Wire::Bytes(b"ADDED")));
        let (_, obj) = fields.next().unwrap().unwrap();
        let super::super::wire::Wire::Bytes(obj) = obj else {
            panic!()
        };
        let (_, raw) = super::super::wire::Fields::new(obj)
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(raw, super::super::wire::Wire::Bytes(&env));
        assert_eq!(read_watch_event(event).unwrap(), ("ADDED", &env[..]));
        for bad in [
            &event[..event.len() - 1],
            &event[..3],
            b"\x0a\x01A",
            b"\x08\x01\x12\x00",
        ] {
            assert!(read_watch_event(bad).is_err(), "{bad:?}");
        }
        let _: Value = Value::Object(decode(&env).unwrap());
    }
}
