//! The impersonation headers read as `processImpersonationHeaders`
//! (`constrained_impersonation.go`) reads them.
//!
//! - `Impersonate-User` and `Impersonate-Uid`: the first value (Go's
//!   `Header.Get`); an empty value counts as absent.
//! - `Impersonate-Group`: every value, in order (an empty one included).
//! - `Impersonate-Extra-<key>`: every value, the key lowercased and
//!   `%`-unescaped (`url.PathUnescape`; kept as it is when an escape is
//!   malformed).
//! - Groups, a UID or extra without a user name: 400, worded as the
//!   apiserver words it (`requested &user.DefaultInfo{...} without
//!   impersonating a user name`).
//!
//! Header names match whatever their case, as Go's canonical keys do.
//! Go keeps a value's bytes as they are; Herald's users are UTF-8, so a
//! value that is not (or an extra key whose escapes decode to bytes that
//! are not) is a 400 here (`Impersonate-Group: value is not valid
//! UTF-8`), checked before anything else.

use std::collections::BTreeMap;

use herald_kube::ApiError;
use herald_kube::quote::go_quote;

use super::model::Wanted;

const USER: &str = "impersonate-user";
const UID: &str = "impersonate-uid";
const GROUP: &str = "impersonate-group";
const EXTRA_PREFIX: &str = "impersonate-extra-";

impl Wanted {
    /// The identity a request's headers (`(name, value)`, names in any
    /// case) ask to impersonate: `Ok(None)` when they ask for none, a 400
    /// when they ask for groups, a UID or extra values without a user
    /// name, or when a value the apiserver would use is not UTF-8.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Option<Wanted>, ApiError> {
        let mut user = None;
        let mut uid = None;
        let mut groups = Vec::new();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            if name.eq_ignore_ascii_case(USER) {
                user.get_or_insert(value);
            } else if name.eq_ignore_ascii_case(UID) {
                uid.get_or_insert(value);
            } else if name.eq_ignore_ascii_case(GROUP) {
                groups.push(text("Impersonate-Group", value)?);
            } else if let Some(key) = extra_key(name) {
                let key = unescape_extra_key(&key.to_lowercase()).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "impersonation header {name}: the extra key is not valid UTF-8"
                    ))
                })?;
                let value = text(name, value)?;
                extra.entry(key).or_default().push(value);
            }
        }
        let name = text("Impersonate-User", user.unwrap_or_default())?;
        let uid = text("Impersonate-Uid", uid.unwrap_or_default())?;
        if name.is_empty() {
            if uid.is_empty() && groups.is_empty() && extra.is_empty() {
                return Ok(None);
            }
            return Err(ApiError::bad_request(format!(
                "requested {} without impersonating a user name",
                go_default_info(&uid, &groups, &extra)
            )));
        }
        Ok(Some(Wanted {
            name,
            uid,
            groups,
            extra,
        }))
    }
}

/// The key of an `Impersonate-Extra-<key>` header (any case), as sent.
fn extra_key(name: &str) -> Option<&str> {
    let prefix = name.as_bytes().get(..EXTRA_PREFIX.len())?;
    // The prefix is ASCII, so its end is a character boundary.
    prefix
        .eq_ignore_ascii_case(EXTRA_PREFIX.as_bytes())
        .then(|| &name[EXTRA_PREFIX.len()..])
}

/// A header value as text, or the 400 for one that is not UTF-8.
fn text(header: &str, value: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(value.to_vec()).map_err(|_| {
        ApiError::bad_request(format!(
            "impersonation header {header}: value is not valid UTF-8"
        ))
    })
}

/// `unescapeExtraKey`: `url.PathUnescape` (`%XX` decoded, `+` kept), or
/// the key as it is when an escape is malformed; `None` when the decoded
/// bytes are not UTF-8.
fn unescape_extra_key(key: &str) -> Option<String> {
    let b = key.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (
                b.get(i + 1).and_then(|c| hex(*c)),
                b.get(i + 2).and_then(|c| hex(*c)),
            ) {
                (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                _ => return Some(key.to_owned()),
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Go's `%#v` of the `*user.DefaultInfo` the headers asked for (its
/// name empty): `&user.DefaultInfo{Name:"", UID:"u", Groups:[]string(nil),
/// Extra:map[string][]string(nil)}`.
fn go_default_info(uid: &str, groups: &[String], extra: &BTreeMap<String, Vec<String>>) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "[]string(nil)".to_owned()
        } else {
            let items: Vec<String> = v.iter().map(|s| go_quote(s)).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    };
    let extra = if extra.is_empty() {
        "map[string][]string(nil)".to_owned()
    } else {
        let items: Vec<String> = extra
            .iter()
            .map(|(k, v)| format!("{}:{}", go_quote(k), list(v)))
            .collect();
        format!("map[string][]string{{{}}}", items.join(", "))
    };
    format!(
        "&user.DefaultInfo{{Name:\"\", UID:{}, Groups:{}, Extra:{extra}}}",
        go_quote(uid),
        list(groups)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(headers: &[(&str, &str)]) -> Result<Option<Wanted>, ApiError> {
        Wanted::from_headers(headers.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn nothing_asked_is_none() {
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(read(&[("Accept", "x")]).unwrap(), None);
        // Present but empty counts as absent.
        assert_eq!(read(&[("Impersonate-User", "")]).unwrap(), None);
        assert_eq!(
            read(&[("Impersonate-User", ""), ("Impersonate-Uid", "")]).unwrap(),
            None
        );
    }

    #[test]
    fn every_header_is_read_whatever_its_case() {
        let w = read(&[
            ("impersonate-user", "bob"),
            ("IMPERSONATE-USER", "ignored"),
            ("Impersonate-Uid", "u1"),
            ("impersonate-uid", "u2"),
            ("Impersonate-Group", "a"),
            ("impersonate-group", ""),
            ("Impersonate-Group", "b"),
            ("Impersonate-Extra-Scopes", "s1"),
            ("impersonate-extra-SCOPES", "s2"),
            ("Impersonate-Extra-Acme.io%2fFoo", "x"),
            ("Impersonate-Extra-bad%zz", "y"),
            ("Impersonate-Extra-", "z"),
            ("Impersonate-Extra-a+b%20c", "w"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((w.name.as_str(), w.uid.as_str()), ("bob", "u1"));
        assert_eq!(w.groups, ["a", "", "b"]);
        let extra: Vec<(&str, Vec<&str>)> = w
            .extra
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            extra,
            [
                ("", vec!["z"]),
                ("a+b c", vec!["w"]),
                ("acme.io/foo", vec!["x"]),
                ("bad%zz", vec!["y"]),
                ("scopes", vec!["s1", "s2"]),
            ]
        );
    }

    #[test]
    fn anything_without_a_user_is_a_400() {
        let e = read(&[("Impersonate-Group", "g")]).unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            r#"requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g"}, Extra:map[string][]string(nil)} without impersonating a user name"#
        );
        let e = read(&[("Impersonate-User", ""), ("Impersonate-Uid", "u")]).unwrap_err();
        assert_eq!(
            e.message,
            r#"requested &user.DefaultInfo{Name:"", UID:"u", Groups:[]string(nil), Extra:map[string][]string(nil)} without impersonating a user name"#
        );
        let e = read(&[
            ("Impersonate-Extra-b", "2"),
            ("Impersonate-Extra-a", "1"),
            ("Impersonate-Extra-a", "\"q\""),
            ("Impersonate-Group", "x"),
            ("Impersonate-Group", "y"),
        ])
        .unwrap_err();
        assert_eq!(
            e.message,
            r#"requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"x", "y"}, Extra:map[string][]string{"a":[]string{"1", "\"q\""}, "b":[]string{"2"}}} without impersonating a user name"#
        );
        // An empty group or extra value still counts as asked for.
        assert_eq!(read(&[("Impersonate-Group", "")]).unwrap_err().code, 400);
        assert_eq!(read(&[("Impersonate-Extra-k", "")]).unwrap_err().code, 400);
    }

    #[test]
    fn values_that_are_not_utf8_are_a_400() {
        let bad: &[u8] = b"\xff";
        let e = Wanted::from_headers([("Impersonate-User", bad)]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "impersonation header Impersonate-User: value is not valid UTF-8"
            )
        );
        let e = Wanted::from_headers([
            ("Impersonate-User", &b"bob"[..]),
            ("Impersonate-Group", bad),
        ])
        .unwrap_err();
        assert_eq!(e.code, 400);
        let e = Wanted::from_headers([
            ("Impersonate-User", &b"bob"[..]),
            ("Impersonate-Extra-k%ff", &b"v"[..]),
        ])
        .unwrap_err();
        assert_eq!(e.code, 400);
        // A value Go's Header.Get never reads is not looked at.
        let w =
            Wanted::from_headers([("Impersonate-User", &b"bob"[..]), ("Impersonate-User", bad)])
                .unwrap()
                .unwrap();
        assert_eq!(w.name, "bob");
    }
}
