//! A request's query string, parsed once as the apiserver reads it (Go's
//! `url.ParseQuery`, which `req.URL.Query()` calls), so that whatever
//! decides on a request and whatever serves it read the same parameters.
//!
//! Go's rules, each kept:
//!
//! - pairs are separated by `&` only; a pair holding a `;` is dropped
//!   (Go 1.17 and later), and so is an empty one;
//! - `key=value`, `key` alone is `key=`; `+` is a space and `%XX` a byte;
//!   a pair whose key or value holds a malformed escape (`%zz`, `%4`) is
//!   dropped, the others kept;
//! - more than 10,000 pairs (`&` count + 1, Go's `urlmaxqueryparams`
//!   default) is no query at all: Go's `ParseQuery` returns an empty map
//!   with its error, and `req.URL.Query()` drops the error;
//! - a repeated key keeps every value in order; a reader takes the first
//!   ([`Query::first`], Go's `Values.Get` and the apiserver's parameter
//!   conversions).
//!
//! Go keeps a value that decodes to bytes that are not UTF-8; Herald's
//! strings cannot hold them, so such a pair is kept with its text decoded
//! lossily and marked ([`Pair::utf8`]): a reader of a known parameter
//! refuses it ([`crate::params`]: 400) rather than act on a value that is
//! not the one sent.

/// The most pairs Go's `url.ParseQuery` reads (`urlmaxqueryparams`'s
/// default); past it, none.
pub const MAX_PAIRS: usize = 10_000;

/// One `key=value` pair, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The key.
    pub key: String,
    /// The value (lossily decoded if `utf8` is false).
    pub value: String,
    /// Whether the key and value decoded to UTF-8.
    pub utf8: bool,
}

/// A query string's pairs, as Go's `url.ParseQuery` keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<Pair>,
}

impl Query {
    /// Parses a raw query (without the `?`; `None`: none).
    pub fn parse(raw: Option<&str>) -> Query {
        let raw = raw.unwrap_or("");
        if raw.is_empty() || raw.bytes().filter(|b| *b == b'&').count() + 1 > MAX_PAIRS {
            return Query::default();
        }
        let pairs = raw
            .split('&')
            .filter(|p| !p.is_empty() && !p.contains(';'))
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                let (k, v) = (unescape(k)?, unescape(v)?);
                let utf8 = std::str::from_utf8(&k).is_ok() && std::str::from_utf8(&v).is_ok();
                Some(Pair {
                    key: String::from_utf8_lossy(&k).into_owned(),
                    value: String::from_utf8_lossy(&v).into_owned(),
                    utf8,
                })
            })
            .collect();
        Query { pairs }
    }

    /// A query of these pairs, all UTF-8 (tests, and callers that build
    /// a request themselves).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Query {
        Query {
            pairs: pairs
                .into_iter()
                .map(|(k, v)| Pair {
                    key: k.into(),
                    value: v.into(),
                    utf8: true,
                })
                .collect(),
        }
    }

    /// A query of these pairs, as they are (a subset of another's).
    pub fn from_kept(pairs: impl IntoIterator<Item = Pair>) -> Query {
        Query {
            pairs: pairs.into_iter().collect(),
        }
    }

    /// Every pair, in the order sent.
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// The first pair of `key`, as Go's `Values.Get` and the apiserver's
    /// parameter conversions read it.
    pub fn first(&self, key: &str) -> Option<&Pair> {
        self.pairs.iter().find(|p| p.key == key)
    }

    /// Whether `key` is present at all (with any value).
    pub fn has(&self, key: &str) -> bool {
        self.first(key).is_some()
    }
}

/// Go's `QueryUnescape`: `+` is a space, `%XX` a byte; `None` for a
/// malformed escape.
fn unescape(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let digit = |b: u8| (b as char).to_digit(16);
                out.push((digit(hex[0])? * 16 + digit(hex[1])?) as u8);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(q: &Query) -> Vec<(&str, &str, bool)> {
        q.pairs()
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str(), p.utf8))
            .collect()
    }

    #[test]
    fn pairs_as_go_parses_them() {
        let q = Query::parse(Some("a=1&b&c=x+y%21&&a=2&d=%zz&e%4=1&f=ok"));
        assert_eq!(
            kv(&q),
            [
                ("a", "1", true),
                ("b", "", true),
                ("c", "x y!", true),
                ("a", "2", true),
                ("f", "ok", true)
            ]
        );
        assert_eq!(q.first("a").map(|p| p.value.as_str()), Some("1"));
        assert!(q.has("b") && !q.has("d"));
    }

    #[test]
    fn a_semicolon_drops_its_pair_and_a_bad_escape_only_its_own() {
        let q = Query::parse(Some(
            "fieldSelector=%ZZ&fieldSelector=metadata.name%3Da&x=1;y=2",
        ));
        assert_eq!(kv(&q), [("fieldSelector", "metadata.name=a", true)]);
        // An escaped semicolon is a value's byte.
        let q = Query::parse(Some("x=1%3By"));
        assert_eq!(kv(&q), [("x", "1;y", true)]);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_and_marked() {
        let q = Query::parse(Some("fieldSelector=%ff&limit=1"));
        let p = q.first("fieldSelector").unwrap();
        assert!(!p.utf8);
        assert_eq!(p.value, "\u{fffd}");
        assert!(q.first("limit").unwrap().utf8);
    }

    #[test]
    fn past_ten_thousand_pairs_there_is_no_query() {
        let within = vec!["a=1"; MAX_PAIRS].join("&");
        assert_eq!(Query::parse(Some(&within)).pairs().len(), MAX_PAIRS);
        let past = format!("{within}&b=2");
        assert!(Query::parse(Some(&past)).pairs().is_empty());
        assert!(Query::parse(None).pairs().is_empty());
    }
}
