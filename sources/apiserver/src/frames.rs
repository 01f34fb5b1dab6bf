//! What the apiserver sends, read: a list's page (JSON or protobuf) and a
//! watch stream's events, split out of the byte stream (JSON: one event
//! per line; protobuf: a 4-byte big-endian length, then a `WatchEvent`)
//! and read into their type and object.

use bytes::{Buf, Bytes, BytesMut};
use herald_kube::proto;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One page of a list.
#[derive(Debug)]
pub(crate) struct Page {
    /// The version the list is at.
    pub(crate) resource_version: String,
    /// The token for the next page, if there is one.
    pub(crate) continue_token: Option<String>,
    /// The objects, as served (a typed list's items have no `kind`).
    pub(crate) items: Vec<Map<String, Value>>,
}

#[derive(Deserialize)]
struct JsonList {
    #[serde(default)]
    kind: String,
    metadata: JsonListMeta,
    #[serde(default)]
    items: Option<Vec<Map<String, Value>>>,
}

#[derive(Deserialize)]
struct JsonListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Reads a page of a list of `list_kind`.
pub(crate) fn page(protobuf: bool, body: &[u8], list_kind: &str) -> Result<Page, String> {
    let list: JsonList = if protobuf {
        let map = proto::decode(body).map_err(|e| format!("a protobuf list: {e}"))?;
        serde_json::from_value(Value::Object(map)).map_err(|e| format!("a protobuf list: {e}"))?
    } else {
        serde_json::from_slice(body).map_err(|e| format!("a JSON list: {e}"))?
    };
    if list.kind != list_kind {
        return Err(format!("a list of kind {:?}, not {list_kind}", list.kind));
    }
    Ok(Page {
        resource_version: list.metadata.resource_version,
        continue_token: list.metadata.continue_token.filter(|t| !t.is_empty()),
        items: list.items.unwrap_or_default(),
    })
}

/// One event of a watch stream.
#[derive(Debug)]
pub(crate) struct Event {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub(crate) kind: String,
    /// Its object (a `Status` for an `ERROR`).
    pub(crate) object: Map<String, Value>,
}

#[derive(Deserialize)]
struct JsonEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Map<String, Value>,
}

/// Reads one event's bytes (a JSON line, or a protobuf frame's message).
pub(crate) fn event(protobuf: bool, frame: &[u8]) -> Result<Event, String> {
    if protobuf {
        let (kind, envelope) =
            proto::read_watch_event(frame).map_err(|e| format!("a protobuf watch event: {e}"))?;
        let object =
            proto::decode(envelope).map_err(|e| format!("a protobuf watch event's object: {e}"))?;
        Ok(Event {
            kind: kind.to_owned(),
            object,
        })
    } else {
        let e: JsonEvent =
            serde_json::from_slice(frame).map_err(|e| format!("a JSON watch event: {e}"))?;
        Ok(Event {
            kind: e.kind,
            object: e.object,
        })
    }
}

/// Splits a watch stream's bytes into events' bytes.
#[derive(Debug)]
pub(crate) struct Splitter {
    buf: BytesMut,
    protobuf: bool,
    max: usize,
}

impl Splitter {
    /// A splitter for a stream in protobuf (`true`) or JSON, refusing an
    /// event longer than `max` bytes.
    pub(crate) fn new(protobuf: bool, max: usize) -> Splitter {
        Splitter {
            buf: BytesMut::new(),
            protobuf,
            max,
        }
    }

    /// More of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Whether a part of an event is waiting for the rest.
    pub(crate) fn partial(&self) -> bool {
        if self.protobuf {
            !self.buf.is_empty()
        } else {
            self.buf.iter().any(|b| !b.is_ascii_whitespace())
        }
    }

    /// The next whole event's bytes, `None` until one is in, or an error
    /// for one longer than allowed.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Bytes>, String> {
        if self.protobuf {
            if self.buf.len() < 4 {
                return Ok(None);
            }
            let len =
                u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
            if len > self.max {
                return Err(format!(
                    "a watch event of {len} bytes (at most {})",
                    self.max
                ));
            }
            if self.buf.len() < 4 + len {
                return Ok(None);
            }
            self.buf.advance(4);
            return Ok(Some(self.buf.split_to(len).freeze()));
        }
        loop {
            let Some(end) = self.buf.iter().position(|&b| b == b'\n') else {
                if self.buf.len() > self.max {
                    return Err(format!("a watch event longer than {} bytes", self.max));
                }
                return Ok(None);
            };
            let line = self.buf.split_to(end + 1).freeze();
            let line = line.slice(..end);
            if line.iter().any(|b| !b.is_ascii_whitespace()) {
                return Ok(Some(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_lines_split_at_newlines_across_chunks() {
        let mut s = Splitter::new(false, 64);
        s.push(b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n\n{\"type\"");
        let e = event(false, &s.next_frame().unwrap().unwrap()).unwrap();
        assert_eq!(
            (e.kind.as_str(), &e.object),
            ("ADDED", json!({"a": 1}).as_object().unwrap())
        );
        assert!(s.next_frame().unwrap().is_none());
        assert!(s.partial());
        s.push(b":\"BOOKMARK\",\"object\":{}}\n");
        assert_eq!(
            event(false, &s.next_frame().unwrap().unwrap())
                .unwrap()
                .kind,
            "BOOKMARK"
        );
        assert!(!s.partial());
        s.push(&[b'x'; 65]);
        assert!(s.next_frame().is_err());
        assert!(event(false, b"{\"type\":\"ADDED\"}").is_err());
        assert!(event(false, b"not json").is_err());
    }

    #[test]
    fn protobuf_frames_split_by_length() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "resourceVersion": "5"}});
        let env = proto::encode(pod.as_object().unwrap()).unwrap();
        let mut stream = Vec::new();
        proto::watch_event(&mut stream, "MODIFIED", &env);
        proto::watch_event(&mut stream, "DELETED", &env);
        let mut s = Splitter::new(true, 1 << 20);
        s.push(&stream[..7]);
        assert!(s.next_frame().unwrap().is_none());
        s.push(&stream[7..]);
        let e = event(true, &s.next_frame().unwrap().unwrap()).unwrap();
        assert_eq!(
            (e.kind.as_str(), &e.object["metadata"]["name"]),
            ("MODIFIED", &json!("a"))
        );
        assert_eq!(
            event(true, &s.next_frame().unwrap().unwrap()).unwrap().kind,
            "DELETED"
        );
        assert!(!s.partial());
        let mut s = Splitter::new(true, 10);
        s.push(&stream);
        assert!(s.next_frame().is_err());
        assert!(event(true, b"\x0a\x05ADDED").is_err());
    }

    #[test]
    fn pages_are_read_in_both_encodings_and_checked() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"t"},"items":[{"metadata":{"name":"a"}}]}"#;
        let p = page(false, body, "PodList").unwrap();
        assert_eq!(
            (
                p.resource_version.as_str(),
                p.continue_token.as_deref(),
                p.items.len()
            ),
            ("9", Some("t"), 1)
        );
        assert!(page(false, body, "NodeList").is_err());
        assert!(page(false, b"{}", "PodList").is_err());
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}});
        let mut list = proto::ListFrame::new("v1", "PodList", 9, None);
        list.push(&proto::encode(pod.as_object().unwrap()).unwrap())
            .unwrap();
        let p = page(true, &list.finish(), "PodList").unwrap();
        assert_eq!(
            (p.resource_version.as_str(), p.continue_token, p.items.len()),
            ("9", None, 1)
        );
        assert_eq!(p.items[0]["metadata"]["name"], "a");
        assert!(page(true, b"k8s\x00junk", "PodList").is_err());
    }
}
