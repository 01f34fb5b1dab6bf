//! Content negotiation as the apiserver does it: the client's `Accept`
//! list (media ranges with parameters and `q` weights, RFC 9110) against
//! the [`FORMATS`] a response can be in. The best acceptable range wins:
//! highest `q`, then the more specific, then the client's order; each
//! range is offered to the formats in turn ([`Format::takes`]). Nothing
//! acceptable is a `406 Not Acceptable`, as the apiserver answers (it
//! never falls back to JSON for a client that did not ask for it), naming
//! what it would have taken ([`Format::advertised`]).

use super::encoder::Format;
use super::formats::FORMATS;
use super::range::{MediaRange, Offer, ranges};
use crate::status::ApiError;

/// The response's encoding for a request whose `Accept` header is
/// `accept`, among what `offer` allows. A missing or empty header is
/// JSON (the first of [`FORMATS`]).
pub fn negotiate(accept: Option<&str>, offer: Offer) -> Result<&'static dyn Format, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(FORMATS[0]);
    };
    ranked(accept)
        .iter()
        .find_map(|r| FORMATS.iter().copied().find(|f| f.takes(r, offer)))
        .ok_or_else(|| not_acceptable(offer))
}

/// The media ranges of `accept` in the order they are tried: highest
/// `q` first (a range of `q=0` is left out), then the more specific,
/// then the client's order.
pub fn ranked(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges = ranges(accept);
    ranges.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then(b.specificity().cmp(&a.specificity()))
            .then(a.order.cmp(&b.order))
    });
    ranges
}

/// The apiserver's 406 message: what it would have accepted.
fn not_acceptable(offer: Offer) -> ApiError {
    let offered: Vec<&str> = FORMATS.iter().filter_map(|f| f.advertised(offer)).collect();
    ApiError::not_acceptable(format!(
        "only the following media types are accepted: {}",
        offered.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::PROTOBUF;
    use crate::wire::PROTOBUF_WATCH;

    fn n(accept: &str, protobuf: bool) -> Result<&'static str, u16> {
        negotiate(
            Some(accept),
            Offer {
                protobuf,
                watch: false,
            },
        )
        .map(|f| f.name())
        .map_err(|e| e.code)
    }

    fn w(accept: &str, protobuf: bool) -> Result<&'static str, u16> {
        negotiate(
            Some(accept),
            Offer {
                protobuf,
                watch: true,
            },
        )
        .map(|f| f.name())
        .map_err(|e| e.code)
    }

    #[test]
    fn clients_get_what_they_ask_for_in_their_order() {
        // client-go's typed clients.
        let cg = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(n(cg, true), Ok("protobuf"));
        assert_eq!(n(cg, false), Ok("json"));
        // kubectl get.
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(n(kubectl, true), Ok("table"));
        assert_eq!(n("application/json", true), Ok("json"));
        assert_eq!(n("*/*", true), Ok("json"));
        assert_eq!(n("application/*", true), Err(406));
        assert_eq!(n("application/*", false), Ok("json"));
        let any = Offer {
            protobuf: true,
            watch: false,
        };
        assert_eq!(negotiate(None, any).unwrap().name(), "json");
        assert_eq!(negotiate(Some("  "), any).unwrap().name(), "json");
        assert_eq!(n("application/yaml", false), Ok("yaml"));
        assert_eq!(w("application/yaml, application/json", true), Ok("json"));
        assert_eq!(
            w("application/vnd.kubernetes.protobuf;stream=watch", true),
            Ok("protobuf")
        );
        // Found by fuzzing `accept`: the empty header repeated is `, `, a
        // list of no media range, which the apiserver refuses (goautoneg's
        // ParseAccept yields no clause) while it answers an empty header
        // with its first type (NegotiateMediaTypeOptions, len(header) == 0).
        assert_eq!(negotiate(Some(""), any).unwrap().name(), "json");
        assert_eq!(n(", ", false), Err(406));
        assert_eq!(n(", ", true), Err(406));
        // Weights win over order; the more specific over a wildcard.
        assert_eq!(
            n(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf",
                true
            ),
            Ok("protobuf")
        );
        assert_eq!(
            n("*/*, application/vnd.kubernetes.protobuf", true),
            Ok("protobuf")
        );
        assert_eq!(
            n(
                "application/vnd.kubernetes.protobuf;q=0, application/json",
                true
            ),
            Ok("json")
        );
    }

    #[test]
    fn metadata_clients_get_partial_object_metadata() {
        // client-go's metadata client: a GET (and a watch), a LIST.
        let get = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
        let list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        for protobuf in [true, false] {
            assert_eq!(n(get, protobuf), Ok("metadata-protobuf"));
            assert_eq!(w(get, protobuf), Ok("metadata-protobuf"));
            assert_eq!(n(list, protobuf), Ok("metadata-list-protobuf"));
        }
        let json = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
        assert_eq!(n(json, true), Ok("metadata-list"));
        assert_eq!(
            n(
                "application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                true
            ),
            Ok("metadata")
        );
        // A watch of lists: not taken (the next range, or 406).
        let watch_list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(w(watch_list, true), Err(406));
        assert_eq!(
            w(&format!("{watch_list}, application/json"), true),
            Ok("json")
        );
    }

    #[test]
    fn nothing_acceptable_is_406() {
        assert_eq!(w("application/yaml", true), Err(406));
        for accept in [
            "application/vnd.kubernetes.protobuf",
            "text/html",
            "application/json;q=0",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2",
            "application/json;as=PartialObjectMetadata;v=v1",
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            "garbage",
            ",,,;;;",
            "application/json;q=abc",
        ] {
            assert_eq!(n(accept, false), Err(406), "{accept}");
        }
        assert_eq!(
            n("application/vnd.kubernetes.protobuf", true),
            Ok("protobuf")
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
