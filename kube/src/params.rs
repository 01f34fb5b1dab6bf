//! The query parameters of LIST, WATCH and GET, parsed and checked as the
//! apiserver does (`metav1.ListOptions`), each failure a 400 with the
//! parser's text.

use std::time::Duration;

use herald::{Continue, FieldSelector, LabelSelector, ResourceVersion, ResourceVersionMatch};

use crate::status::ApiError;

/// The longest selector accepted (bytes). Longer is refused with 400
/// before parsing: the parser is linear, but a parsed selector costs
/// several times its text for as long as its watch is open (each value
/// of a set is a string of its own), so its text is bounded per request
/// here and over every open watch by admission.
pub const MAX_SELECTOR_LEN: usize = 16 * 1024;

/// The parameters a request may name (each read once: the first counts).
const KNOWN: [&str; 10] = [
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
}

/// A boolean as Go's `strconv.ParseBool` reads it.
fn parse_bool(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "invalid value {value:?} for {name}: not a boolean"
        ))),
    }
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

impl Options {
    /// Parses the query's pairs (already percent-decoded), in one pass:
    /// the first of a repeated parameter counts, as Go's
    /// `url.Values.Get`; unknown parameters are ignored, as the apiserver
    /// does. Options that parse but break a rule of the apiserver's
    /// `ValidateListOptions` that only the front can see
    /// (`sendInitialEvents` on a list) are a 422.
    pub fn parse(pairs: &[(String, String)]) -> Result<Options, ApiError> {
        let mut o = Options::default();
        let mut seen = [false; KNOWN.len()];
        for (name, value) in pairs {
            let Some(at) = KNOWN.iter().position(|k| k == name) else {
                continue;
            };
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            match name.as_str() {
                "watch" => o.watch = parse_bool(name, value)?,
                "resourceVersion" => {
                    o.resource_version = ResourceVersion::parse_param(value).map_err(|e| {
                        ApiError::bad_request(format!("invalid resourceVersion: {e}"))
                    })?;
                }
                "resourceVersionMatch" if !value.is_empty() => {
                    o.resource_version_match =
                        Some(value.parse().map_err(|e: herald::UnsupportedMatch| {
                            ApiError::bad_request(e.to_string())
                        })?);
                }
                "limit" if !value.is_empty() => {
                    let n: i64 = value.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid value {value:?} for limit"))
                    })?;
                    // Zero or negative: no limit (the apiserver's rule).
                    o.limit = usize::try_from(n).unwrap_or(0);
                }
                "continue" if !value.is_empty() => {
                    o.continue_token =
                        Some(value.parse().map_err(|e: herald::ReadError| {
                            ApiError::bad_request(e.to_string())
                        })?);
                }
                "labelSelector" if !value.is_empty() => {
                    parse_selector_len(name, value)?;
                    o.selector_bytes += value.len();
                    o.labels = Some(value.parse().map_err(|e: herald::SelectorError| {
                        ApiError::bad_request(format!(
                            "unable to parse requirement: labelSelector {value:?}: {e}"
                        ))
                    })?);
                }
                "fieldSelector" if !value.is_empty() => {
                    parse_selector_len(name, value)?;
                    o.selector_bytes += value.len();
                    o.fields = Some(value.parse().map_err(|e: herald::SelectorError| {
                        ApiError::bad_request(format!("invalid fieldSelector {value:?}: {e}"))
                    })?);
                }
                "timeoutSeconds" if !value.is_empty() => {
                    let n: u64 = value.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid value {value:?} for timeoutSeconds"))
                    })?;
                    // 0 is "unset": the server's default (the apiserver's
                    // rule; a watch that ended at once would be re-opened
                    // in a tight loop).
                    o.timeout = (n > 0).then(|| Duration::from_secs(n));
                }
                "allowWatchBookmarks" => o.allow_bookmarks = parse_bool(name, value)?,
                "sendInitialEvents" => o.send_initial_events = Some(parse_bool(name, value)?),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<Options, ApiError> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        Options::parse(&owned)
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
            ("watch", "maybe"),
            ("resourceVersion", "abc"),
            ("resourceVersion", "-1"),
            ("resourceVersionMatch", "Newest"),
            ("limit", "ten"),
            ("continue", "!!!"),
            ("labelSelector", "app in (web"),
            ("labelSelector", "a=b,,"),
            ("fieldSelector", "spec.nodeName"),
            ("timeoutSeconds", "-5"),
            ("sendInitialEvents", "yes"),
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
    fn many_distinct_parameters_are_read_in_one_pass() {
        // 200,000 unknown names: linear (this took minutes when each name
        // was looked up among those seen).
        let mut pairs: Vec<(String, String)> = (0..200_000)
            .map(|i| (format!("p{i}"), "x".into()))
            .collect();
        pairs.push(("limit".into(), "5".into()));
        pairs.push(("limit".into(), "nonsense: the first counts".into()));
        let o = Options::parse(&pairs).unwrap();
        assert_eq!(o.limit, 5);
        let sel = q(&[("labelSelector", "a=b"), ("fieldSelector", "x=yz")]).unwrap();
        assert_eq!(sel.selector_bytes, 7);
    }
}
