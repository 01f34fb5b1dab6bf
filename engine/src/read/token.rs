//! The continue token of a paged list ([`Continue`]): its format, its one
//! spelling, and its parse.

use std::fmt;
use std::str::FromStr;

use super::error::{InvalidContinue, MalformedContinue, ReadError};
use crate::rv::ResourceVersion;

/// A list's continue token: printable (`Display`) and parsed back
/// (`FromStr`), as a server hands it to its client and takes it back.
///
/// # Format
///
/// `h2.<engine>.<generation>.<version>.<key>`, in ASCII:
///
/// - `h2`: the format's version (Herald's first format, `h1`, had no
///   engine and is refused as malformed);
/// - `<engine>`: the issuing engine's id, 16 lowercase hex digits, drawn
///   at random by [`Engine::new`](crate::Engine::new);
/// - `<generation>`: the number of re-lists the engine had made (see
///   [`Engine::generation`](crate::Engine::generation)), decimal;
/// - `<version>`: the version every page of the list is read at, decimal;
/// - `<key>`: the last key served, its UTF-8 bytes in lowercase hex.
///
/// Each part has exactly one spelling (no sign, no leading zero, no
/// capital hex), so a token that parses prints back as the same text.
///
/// # Rules
///
/// A token is served only by the engine that issued it, and only as that
/// engine could have issued it:
///
/// - text that does not parse is [`InvalidContinue::Malformed`];
/// - another engine's token (another process, a replica, an engine since
///   restarted: its generations and key order mean nothing here) is
///   [`ReadError::ForeignContinue`];
/// - a version above the one the engine has reached, or a generation it
///   has not, is [`InvalidContinue::VersionNotReached`] or
///   [`InvalidContinue::GenerationNotReached`]: only a forged or corrupted
///   token names one (the engine's version and generation never go back),
///   and serving it would label the present with a version it is not at;
/// - a version that has left the history window, or a generation before
///   the last re-list, is [`ReadError::Gone`] (Kubernetes' "continue token
///   too old"): list again from the start.
///
/// The key is not checked against anything: a client may skip keys, and
/// the selectors still decide what each page holds.
///
/// ```
/// use herald::*;
/// use herald::read::{Continue, ListRequest};
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// let obj = |n: &str| Object::builder("ns", n).build();
/// writer.replace(Relist::new([obj("a"), obj("b"), obj("c")], 10.into()))?;
/// let page = engine.list(&ListRequest::new().limit(2))?;
/// let token = page.continue_token.unwrap();
/// let text = token.to_string();
/// assert!(text.starts_with("h2.") && text.ends_with(".1.10.6e732f62")); // "ns/b"
/// let token: Continue = text.parse()?;
/// let next = engine.list(&ListRequest::new().limit(2).continue_from(token))?;
/// assert_eq!(next.items[0].object.name(), "c");
/// assert_eq!(next.continue_token, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Continue {
    pub(crate) engine: u64,
    pub(crate) generation: u64,
    pub(crate) rv: ResourceVersion,
    pub(crate) after: Box<str>,
}

impl Continue {
    /// The version every page of the list is read at.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::ListRequest;
    /// # let (engine, mut writer) = Engine::new(Config::default())?;
    /// # writer.replace(Relist::new([Object::builder("ns", "a").build(), Object::builder("ns", "b").build()], 7.into()))?;
    /// let page = engine.list(&ListRequest::new().limit(1))?;
    /// assert_eq!(page.continue_token.unwrap().resource_version().get(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }
}

/// The token's format version.
const TOKEN_PREFIX: &str = "h2";

impl fmt::Display for Continue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TOKEN_PREFIX}.{:016x}.{}.{}.",
            self.engine, self.generation, self.rv
        )?;
        for b in self.after.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A decimal in its one spelling: digits only, no leading zero but `0`.
fn canonical_decimal(s: &str) -> Option<u64> {
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

/// A lowercase hex digit's value.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

impl FromStr for Continue {
    type Err = ReadError;

    /// Parses a token in the [format](Continue#format) above; anything
    /// else is [`InvalidContinue::Malformed`].
    fn from_str(s: &str) -> Result<Self, ReadError> {
        let bad = |why| {
            ReadError::InvalidContinue(InvalidContinue::Malformed(MalformedContinue::new(why, s)))
        };
        let mut parts = s.splitn(5, '.');
        if parts.next() != Some(TOKEN_PREFIX) {
            return Err(bad("not a Herald continue token of this format"));
        }
        let engine = parts
            .next()
            .filter(|p| p.len() == 16 && p.bytes().all(|b| hex_digit(b).is_some()))
            .and_then(|p| u64::from_str_radix(p, 16).ok())
            .ok_or_else(|| bad("malformed engine id"))?;
        let generation = parts
            .next()
            .and_then(canonical_decimal)
            .ok_or_else(|| bad("malformed generation"))?;
        let rv = parts
            .next()
            .and_then(canonical_decimal)
            .map(ResourceVersion::new)
            .ok_or_else(|| bad("malformed resource version"))?;
        let hex = parts.next().ok_or_else(|| bad("no key"))?.as_bytes();
        if hex.len() % 2 != 0 {
            return Err(bad("malformed key"));
        }
        let bytes = hex
            .chunks_exact(2)
            .map(|pair| Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| bad("malformed key"))?;
        let after = String::from_utf8(bytes).map_err(|_| bad("malformed key"))?;
        Ok(Continue {
            engine,
            generation,
            rv,
            after: after.into(),
        })
    }
}
