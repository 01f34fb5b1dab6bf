//! Content negotiation as the apiserver does it: the client's `Accept`
//! list (media ranges with parameters and `q` weights, RFC 9110) against
//! what a response can be: JSON, YAML (not for a watch), the apiserver's
//! protobuf (built-in kinds only), or a `meta.k8s.io/v1` `Table` (JSON). The best acceptable range
//! wins: highest `q`, then the more specific, then the client's order.
//! Nothing acceptable is a `406 Not Acceptable`, as the apiserver answers
//! (it never falls back to JSON for a client that did not ask for it).

use crate::status::ApiError;

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The protobuf media type of a watch stream.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// What a response is encoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf`: `k8s\0` + `runtime.Unknown`
    /// (watch streams: length-prefixed `WatchEvent`s).
    Protobuf,
    /// `application/json;as=Table;v=v1;g=meta.k8s.io`.
    Table,
    /// `application/yaml` (a list or an object; a watch has no YAML form).
    Yaml,
}

/// What a request's response may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    /// The resource has a protobuf form (a built-in kind).
    pub protobuf: bool,
    /// The response is a watch stream (JSON or protobuf only).
    pub watch: bool,
}

/// One media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
struct Range<'a> {
    kind: &'a str,
    subtype: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
    order: usize,
}

impl Range<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// What this range lets the response be, if anything.
    fn media(&self, offer: Offer) -> Option<Media> {
        // `*/*` is JSON. `application/*` is too for a custom resource, but
        // the apiserver's handler of built-in kinds takes it for none of
        // its types (406), and so does this.
        let json = matches!(
            (self.kind, self.subtype),
            ("application", "json") | ("*", "*")
        ) || (!offer.protobuf && (self.kind, self.subtype) == ("application", "*"));
        let pb = offer.protobuf
            && (self.kind, self.subtype) == ("application", "vnd.kubernetes.protobuf");
        let yaml = !offer.watch && (self.kind, self.subtype) == ("application", "yaml");
        match self.param("as") {
            None => {
                if pb {
                    Some(Media::Protobuf)
                } else if json {
                    Some(Media::Json)
                } else if yaml {
                    Some(Media::Yaml)
                } else {
                    None
                }
            }
            Some("Table")
                if (self.kind, self.subtype) == ("application", "json")
                    && self.param("g") == Some("meta.k8s.io")
                    && self.param("v") == Some("v1") =>
            {
                Some(Media::Table)
            }
            // PartialObjectMetadata, a table in protobuf, another version:
            // not served; a later range may be.
            Some(_) => None,
        }
    }

    fn specificity(&self) -> u8 {
        match (self.kind, self.subtype) {
            ("*", _) => 0,
            _ => 2 + u8::from(!self.params.is_empty()),
        }
    }
}

fn ranges(accept: &str) -> Vec<Range<'_>> {
    let mut out = Vec::new();
    for (order, part) in accept.split(',').enumerate() {
        let mut pieces = part.split(';').map(str::trim);
        let Some((kind, subtype)) = pieces.next().and_then(|m| m.split_once('/')) else {
            continue;
        };
        let mut range = Range {
            kind: kind.trim(),
            subtype: subtype.trim(),
            params: Vec::new(),
            q: 1.0,
            order,
        };
        for p in pieces {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim().trim_matches('"'));
            if k.eq_ignore_ascii_case("q") {
                range.q = v
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .unwrap_or(0.0);
            } else {
                range.params.push((k, v));
            }
        }
        if range.q > 0.0 {
            out.push(range);
        }
    }
    out
}

/// The response's encoding for a request whose `Accept` header is
/// `accept`, among what `offer` allows. A missing or empty header is
/// JSON.
pub fn negotiate(accept: Option<&str>, offer: Offer) -> Result<Media, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Media::Json);
    };
    let mut ranges = ranges(accept);
    ranges.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then(b.specificity().cmp(&a.specificity()))
            .then(a.order.cmp(&b.order))
    });
    ranges
        .iter()
        .find_map(|r| r.media(offer))
        .ok_or_else(|| not_acceptable(offer))
}

/// The apiserver's 406 message: what it would have accepted.
fn not_acceptable(offer: Offer) -> ApiError {
    let offered = match (offer.watch, offer.protobuf) {
        (true, true) => format!("application/json;stream=watch, {PROTOBUF_WATCH}"),
        (true, false) => "application/json;stream=watch".to_owned(),
        (false, true) => format!("application/json, application/yaml, {PROTOBUF}"),
        (false, false) => "application/json, application/yaml".to_owned(),
    };
    ApiError::not_acceptable(format!(
        "only the following media types are accepted: {offered}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(accept: &str, protobuf: bool) -> Result<Media, u16> {
        negotiate(
            Some(accept),
            Offer {
                protobuf,
                watch: false,
            },
        )
        .map_err(|e| e.code)
    }

    fn w(accept: &str, protobuf: bool) -> Result<Media, u16> {
        negotiate(
            Some(accept),
            Offer {
                protobuf,
                watch: true,
            },
        )
        .map_err(|e| e.code)
    }

    #[test]
    fn clients_get_what_they_ask_for_in_their_order() {
        // client-go's typed clients.
        let cg = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(n(cg, true), Ok(Media::Protobuf));
        assert_eq!(n(cg, false), Ok(Media::Json));
        // kubectl get.
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(n(kubectl, true), Ok(Media::Table));
        assert_eq!(n("application/json", true), Ok(Media::Json));
        assert_eq!(n("*/*", true), Ok(Media::Json));
        assert_eq!(n("application/*", true), Err(406));
        assert_eq!(n("application/*", false), Ok(Media::Json));
        let any = Offer {
            protobuf: true,
            watch: false,
        };
        assert_eq!(negotiate(None, any).unwrap(), Media::Json);
        assert_eq!(negotiate(Some("  "), any).unwrap(), Media::Json);
        assert_eq!(n("application/yaml", false), Ok(Media::Yaml));
        assert_eq!(
            w("application/yaml, application/json", true),
            Ok(Media::Json)
        );
        assert_eq!(
            w("application/vnd.kubernetes.protobuf;stream=watch", true),
            Ok(Media::Protobuf)
        );
        // Found by fuzzing `accept`: the empty header repeated is `, `, a
        // list of no media range, which the apiserver refuses (goautoneg's
        // ParseAccept yields no clause) while it answers an empty header
        // with its first type (NegotiateMediaTypeOptions, len(header) == 0).
        assert_eq!(negotiate(Some(""), any).unwrap(), Media::Json);
        assert_eq!(n(", ", false), Err(406));
        assert_eq!(n(", ", true), Err(406));
        // Weights win over order; the more specific over a wildcard.
        assert_eq!(
            n(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf",
                true
            ),
            Ok(Media::Protobuf)
        );
        assert_eq!(
            n("*/*, application/vnd.kubernetes.protobuf", true),
            Ok(Media::Protobuf)
        );
        assert_eq!(
            n(
                "application/vnd.kubernetes.protobuf;q=0, application/json",
                true
            ),
            Ok(Media::Json)
        );
    }

    #[test]
    fn nothing_acceptable_is_406() {
        assert_eq!(w("application/yaml", true), Err(406));
        for accept in [
            "application/vnd.kubernetes.protobuf",
            "text/html",
            "application/json;q=0",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            "garbage",
            ",,,;;;",
            "application/json;q=abc",
        ] {
            assert_eq!(n(accept, false), Err(406), "{accept}");
        }
        assert_eq!(
            n("application/vnd.kubernetes.protobuf", true),
            Ok(Media::Protobuf)
        );
        let e = negotiate(
            Some("text/html"),
            Offer {
                protobuf: true,
                watch: false,
            },
        )
        .unwrap_err();
        assert_eq!(e.reason, "NotAcceptable");
        assert!(e.message.contains(PROTOBUF), "{}", e.message);
        let e = negotiate(
            Some("application/yaml"),
            Offer {
                protobuf: true,
                watch: true,
            },
        )
        .unwrap_err();
        assert!(e.message.contains(PROTOBUF_WATCH), "{}", e.message);
    }
}
