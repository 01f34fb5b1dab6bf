//! The query parameters of LIST, WATCH and GET, parsed and checked as the
//! apiserver does (`metav1.ListOptions`), each failure a 400 with the
//! parser's text.

use std::time::Duration;

use herald::ResourceVersion;
use herald::read::Continue;
use herald::rv::ResourceVersionMatch;
use herald::selector::{FieldSelector, LabelSelector};

use crate::query::{Pair, Query};
use crate::selector_errors;
use crate::status::ApiError;

/// The longest selector accepted (bytes). Longer is refused with 400
/// before parsing: the parser is linear, but a parsed selector costs
/// several times its text for as long as its watch is open (each value
/// of a set is a string of its own), so its text is bounded per request
/// here and over every open watch by admission.
pub const MAX_SELECTOR_LEN: usize = 16 * 1024;

/// The parameters a request may name (each read once: the first counts).
const KNOWN: [&str; 11] = [
    "watch",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "labelSelector",
    "fieldSelector",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "includeObject",
];

/// A list or watch request's options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `watch=true|1`.
    pub watch: bool,
    /// `resourceVersion` (`None`: unset or empty).
    pub resource_version: Option<ResourceVersion>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit` (0: none).
    pub limit: usize,
    /// `continue`, parsed.
    pub continue_token: Option<Continue>,
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// The bytes of selector text (label and field) the request holds.
    pub selector_bytes: usize,
    /// `includeObject`, as given: what a table's rows embed, read (with
    /// `table::IncludeObject::parse`) only when a table is asked for, as
    /// the apiserver reads it.
    pub include_object: Option<String>,
}

/// A boolean parameter as the apiserver's conversion reads it
/// (`runtime.Convert_Slice_string_To_bool`): `0` and `false` (any case)
/// are false, anything else, the empty string included, is true.
fn query_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

fn parse_selector_len(name: &str, value: &str) -> Result<(), ApiError> {
    if value.len() > MAX_SELECTOR_LEN {
        return Err(ApiError::bad_request(format!(
            "{name} is {} bytes long: at most {MAX_SELECTOR_LEN} are accepted",
            value.len()
        )));
    }
    Ok(())
}

/// What the apiserver's `RequestInfo` reads from a collection's query:
/// whether it is a watch, and the name its field selector requires.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListAttributes {
    /// The first `watch` value is other than `0` or `false` (any case).
    pub watch: bool,
    /// The name a `metadata.name=N` (or `==`) term requires, if the
    /// query decodes as the apiserver decodes `ListOptions` and `N` is a
    /// valid path segment.
    pub name: Option<String>,
}

impl ListAttributes {
    /// Reads `query` as `requestinfo.go` does: `DecodeParameters` into
    /// `ListOptions` (which fails on an integer that does not parse or a
    /// selector that does not), the watch from the first `watch` value
    /// either way, and the name from the field selector's terms in Go's
    /// order (sorted as text; the first `metadata.name` term with `=` or
    /// `==`). A field selector (or label selector, limit, timeout) that is
    /// not UTF-8 names nothing: the apiserver's name would be bytes no
    /// `resourceNames` entry (JSON text) can equal, or its decoding fails.
    pub fn of(query: &Query) -> ListAttributes {
        let watch = query.first("watch").is_some_and(|p| query_bool(&p.value));
        let name = decodes(query)
            .then(|| query.first("fieldSelector"))
            .flatten()
            .and_then(|p| go_required_name(&p.value).ok().flatten())
            .filter(|n| valid_path_segment(n));
        ListAttributes { watch, name }
    }
}

/// Whether the apiserver's `DecodeParameters` into `ListOptions` succeeds
/// on `query` (the label parser is Herald's; the field selector's is Go's,
/// [`go_required_name`]).
fn decodes(query: &Query) -> bool {
    let first = |k: &str| query.first(k);
    // Bytes that are not UTF-8 fail Go's decoding of these (or, in a
    // field selector, name what no `resourceNames` entry can be); in the
    // others they are strings the conversion takes as they are.
    let all_utf8 = ["fieldSelector", "labelSelector", "limit", "timeoutSeconds"]
        .iter()
        .all(|k| first(k).is_none_or(|p| p.utf8));
    let int = |k: &str| first(k).is_none_or(|p| p.value.parse::<i64>().is_ok());
    let labels = first("labelSelector").is_none_or(|p| {
        p.value.is_empty() || p.value.parse::<herald::selector::LabelSelector>().is_ok()
    });
    let fields = first("fieldSelector").is_none_or(|p| go_required_name(&p.value).is_ok());
    all_utf8 && int("limit") && int("timeoutSeconds") && labels && fields
}

/// The name Go's `fields.ParseSelector(s).RequiresExactMatch("metadata.name")`
/// returns: terms split at unescaped `,`, sorted as text, each split at
/// its first `!=`, `==` or `=`, its value unescaped; the first
/// `metadata.name` term (verbatim, untrimmed) that is not `!=`. `Err` if
/// Go's parser refuses the selector.
fn go_required_name(selector: &str) -> Result<Option<String>, ()> {
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms.sort_unstable();
    let mut name = None;
    for term in terms.into_iter().filter(|t| !t.is_empty()) {
        let split = term.char_indices().find_map(|(i, _)| {
            ["!=", "==", "="]
                .into_iter()
                .find(|op| term[i..].starts_with(op))
                .map(|op| (&term[..i], op, &term[i + op.len()..]))
        });
        let (field, op, value) = split.ok_or(())?;
        let value = go_unescape_value(value)?;
        if name.is_none() && op != "!=" && field == "metadata.name" {
            name = Some(value);
        }
    }
    Ok(name)
}

/// Go's `fields.UnescapeValue`: `\\`, `\,` and `\=` resolved; any other
/// escape, a trailing `\`, or an unescaped `,` or `=` is an error.
fn go_unescape_value(v: &str) -> Result<String, ()> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return Err(()),
            },
            ',' | '=' => return Err(()),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The apiserver's `IsValidPathSegmentName`: not `.` or `..`, no `/`
/// and no `%`.
pub fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

impl Options {
    /// Parses a collection's query, in one pass over its pairs: the
    /// first of a repeated parameter counts, as the apiserver's
    /// conversions read `url.Values`; unknown parameters are ignored, as
    /// the apiserver does. Booleans are read as the apiserver's
    /// conversion reads them ([`ListAttributes`]); `watch` is what the
    /// request was decided as (its verb: the query's `watch`, or a
    /// `/watch/` path), not read again here. A known parameter whose value
    /// is not UTF-8, an integer that does not parse (empty included) and
    /// a selector that does not are 400s; options that parse but break a
    /// rule of the apiserver's `ValidateListOptions` that only the front
    /// can see (`sendInitialEvents` on a list) are a 422.
    pub fn parse(query: &Query, watch: bool) -> Result<Options, ApiError> {
        let mut o = Options {
            watch,
            ..Options::default()
        };
        let mut seen = [false; KNOWN.len()];
        for Pair { key, value, utf8 } in query.pairs() {
            let Some(at) = KNOWN.iter().position(|k| k == key) else {
                continue;
            };
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            if !utf8 && key != "watch" {
                return Err(ApiError::bad_request(format!(
                    "invalid value for {key}: not valid UTF-8 once percent-decoded"
                )));
            }
            let name = key.as_str();
            match name {
                "resourceVersion" => {
                    o.resource_version = ResourceVersion::parse_param(value)
                        .map_err(|_| invalid_resource_version(value))?;
                }
                "resourceVersionMatch" if !value.is_empty() => {
                    o.resource_version_match =
                        Some(value.parse().map_err(|e: herald::rv::UnsupportedMatch| {
                            ApiError::bad_request(e.to_string())
                        })?);
                }
                "limit" => {
                    let n: i64 = value.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid value {value:?} for limit"))
                    })?;
                    // Zero or negative: no limit (the apiserver's rule).
                    o.limit = usize::try_from(n).unwrap_or(0);
                }
                "continue" if !value.is_empty() => {
                    o.continue_token =
                        Some(value.parse().map_err(|e: herald::read::ReadError| {
                            ApiError::bad_request(e.to_string())
                        })?);
                }
                "labelSelector" if !value.is_empty() => {
                    parse_selector_len(name, value)?;
                    o.selector_bytes += value.len();
                    // Go's parser words the refusal (its message is the
                    // 400's); Herald's decides what the selector means.
                    if let Some(message) = selector_errors::label_error(value) {
                        return Err(ApiError::bad_request(message));
                    }
                    o.labels = Some(value.parse().map_err(
                        |e: herald::selector::SelectorError| {
                            ApiError::bad_request(format!(
                                "unable to parse requirement: labelSelector {value:?}: {e}"
                            ))
                        },
                    )?);
                }
                "fieldSelector" if !value.is_empty() => {
                    parse_selector_len(name, value)?;
                    o.selector_bytes += value.len();
                    if let Some(message) = selector_errors::field_error(value) {
                        return Err(ApiError::bad_request(message));
                    }
                    o.fields = Some(value.parse().map_err(
                        |e: herald::selector::SelectorError| {
                            ApiError::bad_request(format!("invalid fieldSelector {value:?}: {e}"))
                        },
                    )?);
                }
                "timeoutSeconds" => {
                    let n: u64 = value.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid value {value:?} for timeoutSeconds"))
                    })?;
                    // 0 is "unset": the server's default (the apiserver's
                    // rule; a watch that ended at once would be re-opened
                    // in a tight loop).
                    o.timeout = (n > 0).then(|| Duration::from_secs(n));
                }
                "allowWatchBookmarks" => o.allow_bookmarks = query_bool(value),
                "sendInitialEvents" => o.send_initial_events = Some(query_bool(value)),
                "includeObject" => o.include_object = Some(value.clone()),
                _ => {}
            }
        }
        if o.send_initial_events.is_some() && !o.watch {
            return Err(ApiError::invalid_options(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ));
        }
        Ok(o)
    }

    /// Parses a GET's query as the apiserver decodes `GetOptions`: its
    /// `resourceVersion` alone (and `resourceVersionMatch`, which Herald
    /// reads on a GET too), and a table's `includeObject`; every other
    /// parameter, `watch` included, is ignored.
    pub fn parse_get(query: &Query) -> Result<Options, ApiError> {
        let only = query.pairs().iter().filter(|p| {
            p.key == "resourceVersion"
                || p.key == "resourceVersionMatch"
                || p.key == "includeObject"
        });
        Options::parse(&Query::from_kept(only.cloned()), false)
    }
}

/// 400 for a `resourceVersion` that is not an unsigned decimal of 64
/// bits, in the apiserver's words (`APIObjectVersioner`'s field error over
/// Go's `strconv.ParseUint` error).
fn invalid_resource_version(value: &str) -> ApiError {
    let why = match value.bytes().all(|b| b.is_ascii_digit()) {
        // Only digits, so too many of them.
        true => "value out of range",
        false => "invalid syntax",
    };
    let q = crate::quote::go_quote(value);
    ApiError::bad_request(format!(
        "invalid resource version: resourceVersion: Invalid value: {q}: strconv.ParseUint: parsing {q}: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<Options, ApiError> {
        let query = Query::from_pairs(pairs.iter().copied());
        Options::parse(&query, ListAttributes::of(&query).watch)
    }

    fn attrs(raw: &str) -> ListAttributes {
        ListAttributes::of(&Query::parse(Some(raw)))
    }

    #[test]
    fn parses_the_list_options() {
        let o = q(&[
            ("watch", "1"),
            ("resourceVersion", "42"),
            ("labelSelector", "app in (web,api)"),
            ("fieldSelector", "spec.nodeName=n1"),
            ("timeoutSeconds", "290"),
            ("allowWatchBookmarks", "true"),
            ("limit", "-1"),
            ("pretty", "whatever"),
            ("watch", "garbage: the first counts"),
        ])
        .unwrap();
        assert!(o.watch && o.allow_bookmarks);
        assert_eq!(o.resource_version, Some(42.into()));
        assert_eq!(o.limit, 0);
        assert_eq!(o.timeout, Some(Duration::from_secs(290)));
        assert!(o.labels.is_some() && o.fields.is_some());
        assert_eq!(
            q(&[("resourceVersion", "")]).unwrap().resource_version,
            None
        );
    }

    #[test]
    fn bad_values_are_400s_with_the_parsers_text() {
        for bad in [
            ("resourceVersion", "abc"),
            ("resourceVersion", "-1"),
            ("resourceVersionMatch", "Newest"),
            ("limit", "ten"),
            ("continue", "!!!"),
            ("labelSelector", "app in (web"),
            ("labelSelector", "a=b,,"),
            ("fieldSelector", "spec.nodeName"),
            ("timeoutSeconds", "-5"),
            // Integers the apiserver's conversion refuses, empty included.
            ("limit", ""),
            ("timeoutSeconds", ""),
        ] {
            let e = q(&[bad]).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{bad:?}");
            assert!(!e.message.is_empty());
        }
        let huge = "a=".to_owned() + &"x".repeat(MAX_SELECTOR_LEN);
        let e = q(&[("labelSelector", &huge)]).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.len() < 200, "the message does not echo the input");
    }

    #[test]
    fn a_zero_timeout_is_the_default_and_initial_events_need_a_watch() {
        assert_eq!(q(&[("timeoutSeconds", "0")]).unwrap().timeout, None);
        let e = q(&[("sendInitialEvents", "true")]).unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        assert!(
            e.message
                .contains("sendInitialEvents is forbidden for list")
        );
        assert!(q(&[("sendInitialEvents", "true"), ("watch", "1")]).is_ok());
    }

    #[test]
    fn booleans_are_read_as_the_apiservers_conversion_reads_them() {
        for (v, want) in [
            ("1", true),
            ("true", true),
            ("yes", true),
            ("", true),
            ("maybe", true),
            ("0", false),
            ("false", false),
            ("FaLsE", false),
        ] {
            let o = q(&[("watch", v), ("allowWatchBookmarks", v)]).unwrap();
            assert_eq!((o.watch, o.allow_bookmarks), (want, want), "{v:?}");
            assert_eq!(attrs(&format!("watch={v}")).watch, want, "{v:?}");
        }
        assert!(!attrs("").watch && !attrs("watch=0&watch=1").watch);
        // A watch that the path decided (`/watch/...`), whatever the query.
        let o = Options::parse(&Query::parse(Some("watch=false")), true).unwrap();
        assert!(o.watch);
    }

    #[test]
    fn the_name_a_field_selector_requires_is_read_as_go_reads_it() {
        let name = |raw: &str| attrs(raw).name;
        assert_eq!(
            name("fieldSelector=metadata.name%3Da"),
            Some("a".to_owned())
        );
        // Terms sorted as text: `metadata.name==b` sorts before `...=a`.
        assert_eq!(
            name("fieldSelector=metadata.name%3Da,metadata.name%3D%3Db"),
            Some("b".to_owned())
        );
        assert_eq!(
            name("fieldSelector=metadata.name%3Db,metadata.name%3Da"),
            Some("a".to_owned())
        );
        // Untrimmed fields, `!=`, a name no path segment can be.
        assert_eq!(name("fieldSelector=+metadata.name%3Da"), None);
        assert_eq!(name("fieldSelector=metadata.name!%3Da"), None);
        assert_eq!(name("fieldSelector=metadata.name%3Da%2Fb"), None);
        assert_eq!(name("fieldSelector=metadata.name%3D.."), None);
        // The first pair that decodes; a malformed one is dropped.
        assert_eq!(
            name("fieldSelector=%zz&fieldSelector=metadata.name%3Da"),
            Some("a".to_owned())
        );
        // Bytes that are not UTF-8 name nothing.
        assert_eq!(
            name("fieldSelector=%ff&fieldSelector=metadata.name%3Da"),
            None
        );
        // A query the apiserver's conversion refuses names nothing.
        for bad in [
            "limit=x",
            "limit=",
            "timeoutSeconds=1.5",
            "labelSelector=a%20in%20(",
        ] {
            assert_eq!(
                name(&format!("{bad}&fieldSelector=metadata.name%3Da")),
                None,
                "{bad}"
            );
        }
        assert_eq!(
            go_required_name("metadata.name=a\\,b"),
            Ok(Some("a,b".to_owned()))
        );
        assert!(go_required_name("metadata.name=a=b").is_err());
        assert!(go_required_name("metadata.name").is_err());
        assert!(go_required_name("metadata.name=a\\").is_err());
    }

    #[test]
    fn a_get_reads_its_resource_version_alone() {
        let o = Options::parse_get(&Query::parse(Some(
            "watch=1&labelSelector=((&resourceVersion=7&limit=x",
        )))
        .unwrap();
        assert!(!o.watch && o.labels.is_none());
        assert_eq!(o.resource_version, Some(7.into()));
    }

    #[test]
    fn many_distinct_parameters_are_read_in_one_pass() {
        // 200,000 unknown names: linear (this took minutes when each name
        // was looked up among those seen).
        let mut pairs: Vec<(String, String)> = (0..200_000)
            .map(|i| (format!("p{i}"), "x".into()))
            .collect();
        pairs.push(("limit".into(), "5".into()));
        pairs.push(("limit".into(), "nonsense: the first counts".into()));
        let o = Options::parse(&Query::from_pairs(pairs), false).unwrap();
        assert_eq!(o.limit, 5);
        let sel = q(&[("labelSelector", "a=b"), ("fieldSelector", "x=yz")]).unwrap();
        assert_eq!(sel.selector_bytes, 7);
    }
}
