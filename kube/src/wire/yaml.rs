//! YAML (`application/yaml`): an object or a list as the apiserver
//! prints it ([`crate::yaml`]), made from its JSON per request (a client
//! asking for YAML is a person). A watch has no YAML form: the format is
//! never offered for one.

use std::sync::Arc;

use bytes::BytesMut;
use herald::EventKind;
use serde_json::Value;

use super::encoder::{Encoder, Format, ListHead, Outgoing, Request, Stream};
use super::json::{JsonEncoder, list_body};
use super::range::{MediaRange, Offer};
use crate::status::ApiError;

/// The YAML media type.
pub const YAML: &str = "application/yaml";

/// `application/yaml`, for anything but a watch.
#[derive(Debug)]
pub(super) struct Yaml;

impl Format for Yaml {
    fn name(&self) -> &'static str {
        "yaml"
    }

    fn takes(&self, range: &MediaRange<'_>, offer: Offer) -> bool {
        !offer.watch && range.param("as").is_none() && range.media_type() == ("application", "yaml")
    }

    fn advertised(&self, offer: Offer) -> Option<&'static str> {
        (!offer.watch).then_some(YAML)
    }

    fn encoder(&self, _: &Request<'_>) -> Result<Arc<dyn Encoder>, ApiError> {
        Ok(Arc::new(YamlEncoder))
    }

    fn status(&self, status: &Value) -> Option<(&'static str, Vec<u8>)> {
        let yaml = crate::yaml::to_yaml(status).ok()?;
        Some((YAML, yaml.into_bytes()))
    }
}

/// Writes YAML; a stream (never negotiated) as JSON lines.
#[derive(Debug)]
struct YamlEncoder;

impl Encoder for YamlEncoder {
    fn name(&self) -> &'static str {
        "yaml"
    }

    fn content_type(&self) -> &'static str {
        YAML
    }

    fn stream_content_type(&self) -> &'static str {
        JsonEncoder.stream_content_type()
    }

    fn object(&self, item: Outgoing<'_>) -> Result<Vec<u8>, ApiError> {
        yaml(item.json.bytes())
    }

    fn list(&self, head: ListHead<'_>, items: &[Outgoing<'_>]) -> Result<Vec<u8>, ApiError> {
        yaml(&list_body(head, items))
    }

    fn event(&self, stream: Stream, buf: &mut BytesMut, kind: EventKind, item: Outgoing<'_>) {
        JsonEncoder.event(stream, buf, kind, item);
    }

    fn notice(&self, buf: &mut BytesMut, kind: &str, json: &[u8]) {
        JsonEncoder.notice(buf, kind, json);
    }
}

/// The YAML of a JSON body (an object or a list), as the apiserver
/// prints it ([`crate::yaml`]).
pub fn yaml(json: &[u8]) -> Result<Vec<u8>, ApiError> {
    let value: Value = serde_json::from_slice(json)
        .map_err(|e| ApiError::internal(format!("a body's JSON does not parse: {e}")))?;
    // go-yaml refusing the text fails the request as the apiserver's
    // encoder failing does: a 500 with go-yaml's message and no reason
    // (`ErrorToAPIStatus` of a plain error).
    crate::yaml::to_yaml(&value)
        .map(String::into_bytes)
        .map_err(|e| ApiError::unclassified(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_sorts_keys_as_the_apiserver_prints_them() {
        let got = yaml(br#"{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"2","a":"x\ny\n"}}"#)
            .unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            // A string with a line break is a literal block (go-yaml v2).
            "apiVersion: v1\ndata:\n  a: |\n    x\n    y\n  b: \"2\"\nkind: ConfigMap\n"
        );
        // Text go-yaml's reader refuses fails the request, as the
        // apiserver's encoder failing does.
        let e = yaml(br#"{"a":"\u007f"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "yaml: control characters are not allowed")
        );
        assert!(yaml(b"{").is_err());
    }
}
