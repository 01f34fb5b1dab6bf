//! An `Accept` header's media ranges (RFC 9110: `type/subtype`, with
//! parameters and a `q` weight), parsed as goautoneg parses them, and
//! what a response may be ([`Offer`]).

/// What a request's response may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    /// The resource has a protobuf form (a built-in kind).
    pub protobuf: bool,
    /// The response is a watch stream (JSON or protobuf only).
    pub watch: bool,
}

/// One media range of an `Accept` header: `type/subtype;param=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaRange<'a> {
    kind: &'a str,
    subtype: &'a str,
    params: Vec<(&'a str, &'a str)>,
    pub(super) q: f32,
    pub(super) order: usize,
}

impl<'a> MediaRange<'a> {
    /// Its type and subtype (`("application", "json")`, `("*", "*")`).
    pub fn media_type(&self) -> (&'a str, &'a str) {
        (self.kind, self.subtype)
    }

    /// A parameter's value (names compared ignoring case), unquoted.
    pub fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    pub(super) fn specificity(&self) -> u8 {
        match (self.kind, self.subtype) {
            ("*", _) => 0,
            _ => 2 + u8::from(!self.params.is_empty()),
        }
    }
}

pub(super) fn ranges(accept: &str) -> Vec<MediaRange<'_>> {
    let mut out = Vec::new();
    for (order, part) in accept.split(',').enumerate() {
        let mut pieces = part.split(';').map(str::trim);
        let Some((kind, subtype)) = pieces.next().and_then(|m| m.split_once('/')) else {
            continue;
        };
        let mut range = MediaRange {
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
