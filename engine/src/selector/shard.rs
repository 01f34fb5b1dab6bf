//! Shard selectors (KEP-5866, `ShardedListAndWatch`, alpha): a list or
//! watch narrowed to objects whose hashed field falls in one of a few
//! ranges, so that N clients (or N Herald instances) split a collection
//! between them.
//!
//! The wire form is `shardRange(<path>, '<start>', '<end>')`, several joined
//! by `||`: `<path>` is `object.metadata.uid` or
//! `object.metadata.namespace`; `<start>` (inclusive) and `<end>`
//! (exclusive) are `0x`-prefixed lowercase hex in the 64-bit FNV-1a hash
//! space `[0x0, 0x10000000000000000)`. The hash is FNV-1a 64 of the
//! field's UTF-8 bytes (a missing field hashes as the empty string, as
//! field selectors read it as `""`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::object::{FIELD_NAMESPACE, Object};

/// The field a shard range hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ShardKey {
    /// `object.metadata.uid` (the object's field `metadata.uid`).
    Uid,
    /// `object.metadata.namespace`.
    Namespace,
}

impl ShardKey {
    /// The path as the wire spells it.
    pub fn path(self) -> &'static str {
        match self {
            ShardKey::Uid => "object.metadata.uid",
            ShardKey::Namespace => "object.metadata.namespace",
        }
    }

    /// The object's hashed value of this key.
    #[inline]
    pub fn hash(self, object: &Object) -> u64 {
        let value = match self {
            ShardKey::Uid => object.field(UID_FIELD).unwrap_or(""),
            ShardKey::Namespace => object.field(FIELD_NAMESPACE).unwrap_or(""),
        };
        fnv1a64(value.as_bytes())
    }
}

/// The object field a uid shard reads.
const UID_FIELD: &str = "metadata.uid";

/// FNV-1a, 64 bits (the hash space of every shard range).
///
/// ```
/// // The FNV-1a test vectors.
/// assert_eq!(herald::selector::fnv1a64(b""), 0xcbf29ce484222325);
/// assert_eq!(herald::selector::fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One `shardRange(key, start, end)`: objects whose key hashes into
/// `[start, end)`. `end` may be 2^64 (the whole top of the space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardRange {
    key: ShardKey,
    start: u64,
    /// Exclusive; at most 2^64.
    end: u128,
}

impl ShardRange {
    /// `[start, end)` on `key`; `None` unless `start < end <= 2^64`.
    ///
    /// ```
    /// use herald::selector::{ShardKey, ShardRange};
    /// let all = ShardRange::new(ShardKey::Uid, 0, 1 << 64).unwrap();
    /// assert!(all.contains(u64::MAX));
    /// assert!(ShardRange::new(ShardKey::Uid, 5, 5).is_none());
    /// ```
    pub fn new(key: ShardKey, start: u64, end: u128) -> Option<ShardRange> {
        (u128::from(start) < end && end <= 1 << 64).then_some(ShardRange { key, start, end })
    }

    /// Shard `i` of `n` equal ranges of the space (as clients split it:
    /// boundaries at `floor(i * 2^64 / n)`); `None` unless `i < n`.
    ///
    /// ```
    /// use herald::selector::{ShardKey, ShardRange};
    /// let half = ShardRange::nth(ShardKey::Uid, 1, 2).unwrap();
    /// assert_eq!(half.to_string(), "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')");
    /// ```
    pub fn nth(key: ShardKey, i: u64, n: u64) -> Option<ShardRange> {
        let bound = |i: u64| (u128::from(i) << 64) / u128::from(n);
        (i < n).then(|| ShardRange {
            key,
            start: bound(i) as u64,
            end: bound(i + 1),
        })
    }

    /// The hashed key.
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// The inclusive start.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The exclusive end (at most 2^64).
    pub fn end(&self) -> u128 {
        self.end
    }

    /// Whether `hash` falls in the range.
    #[inline]
    pub fn contains(&self, hash: u64) -> bool {
        self.start <= hash && u128::from(hash) < self.end
    }
}

impl fmt::Display for ShardRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shardRange({}, '0x{:016x}', '0x{:016x}')",
            self.key.path(),
            self.start,
            self.end
        )
    }
}

/// A shard selector: one or more [`ShardRange`]s, an object passes if any
/// admits it; the empty selector admits everything. Parsed from its wire
/// form ([`FromStr`]) and printed back in a canonical one ([`Display`](fmt::Display):
/// each bound as 16 hex digits, or 17 for 2^64).
///
/// ```
/// use herald::*;
/// use herald::selector::{ShardSelector, ShardSelectorError};
/// let s: ShardSelector =
///     "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')".parse()?;
/// // Kubernetes uids are UUIDs: their hashes spread over the space.
/// let pod = |i: u32| {
///     let uid = format!("6f1c2a4e-{i:04x}-4a1b-8c3d-0242ac120002");
///     Object::builder("ns", "p").field("metadata.uid", &uid).build()
/// };
/// let low = (0..400).map(pod).filter(|p| s.admits(p)).count();
/// assert!(150 < low && low < 250, "about half: {low}");
/// # Ok::<(), ShardSelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ShardSelector {
    ranges: Arc<[ShardRange]>,
}

/// The most ranges one selector may join: a bound on what one request
/// makes the engine evaluate per change (Herald's, not the KEP's).
pub const MAX_SHARD_RANGES: usize = 64;

const TOO_MANY: &str = "too many ranges (at most 64)";

impl ShardSelector {
    /// A selector of these ranges (none: everything); refused past
    /// [`MAX_SHARD_RANGES`] (every change would pay for each range).
    ///
    /// ```
    /// use herald::selector::{MAX_SHARD_RANGES, ShardKey, ShardRange, ShardSelector};
    /// let r = ShardRange::nth(ShardKey::Uid, 0, 2).unwrap();
    /// assert!(ShardSelector::new([r]).is_ok());
    /// assert!(ShardSelector::new(vec![r; MAX_SHARD_RANGES + 1]).is_err());
    /// ```
    pub fn new(
        ranges: impl IntoIterator<Item = ShardRange>,
    ) -> Result<ShardSelector, ShardSelectorError> {
        let ranges: Arc<[ShardRange]> = ranges.into_iter().collect();
        if ranges.len() > MAX_SHARD_RANGES {
            return Err(ShardSelectorError {
                position: 0,
                reason: TOO_MANY,
            });
        }
        Ok(ShardSelector { ranges })
    }

    /// Whether it admits every object (no range).
    pub fn is_everything(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Its ranges.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// Whether `object` falls in one of the ranges.
    #[inline]
    pub fn admits(&self, object: &Object) -> bool {
        self.is_everything() || self.ranges.iter().any(|r| r.contains(r.key.hash(object)))
    }

    /// The one range, if there is exactly one (a watcher the engine routes
    /// by a range lookup).
    pub(crate) fn single(&self) -> Option<ShardRange> {
        match &*self.ranges {
            [r] => Some(*r),
            _ => None,
        }
    }
}

impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            fmt::Display::fmt(r, f)?;
        }
        Ok(())
    }
}

/// A shard selector that does not parse: where, and why.
///
/// ```
/// let err = "shardRange(object.metadata.name, '0x0', '0x1')".parse::<herald::selector::ShardSelector>().unwrap_err();
/// assert_eq!(err.position(), 11);
/// assert_eq!(err.to_string(), "invalid shard selector at byte 11: the path must be object.metadata.uid or object.metadata.namespace");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSelectorError {
    position: usize,
    reason: &'static str,
}

impl ShardSelectorError {
    /// The byte offset of the problem.
    pub fn position(&self) -> usize {
        self.position
    }

    /// What is wrong there.
    pub fn reason(&self) -> &str {
        self.reason
    }
}

impl fmt::Display for ShardSelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid shard selector at byte {}: {}",
            self.position, self.reason
        )
    }
}

impl std::error::Error for ShardSelectorError {}

/// A small cursor over the selector's text.
struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn err<T>(&self, reason: &'static str) -> Result<T, ShardSelectorError> {
        Err(ShardSelectorError {
            position: self.at,
            reason,
        })
    }

    fn skip_ws(&mut self) {
        let rest = &self.s[self.at..];
        self.at += rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
    }

    /// Consumes `token` (after whitespace) or fails with `reason`.
    fn expect(&mut self, token: &str, reason: &'static str) -> Result<(), ShardSelectorError> {
        self.skip_ws();
        if self.s[self.at..].starts_with(token) {
            self.at += token.len();
            Ok(())
        } else {
            self.err(reason)
        }
    }

    fn key(&mut self) -> Result<ShardKey, ShardSelectorError> {
        self.skip_ws();
        for key in [ShardKey::Uid, ShardKey::Namespace] {
            let path = key.path();
            let rest = &self.s[self.at..];
            let ends = rest[path.len().min(rest.len())..]
                .chars()
                .next()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
            if rest.starts_with(path) && ends {
                self.at += path.len();
                return Ok(key);
            }
        }
        self.err("the path must be object.metadata.uid or object.metadata.namespace")
    }

    /// `'0x<hex>'`: lowercase hex, at most 2^64.
    fn bound(&mut self) -> Result<u128, ShardSelectorError> {
        self.expect(
            "'0x",
            "expected a quoted hex bound such as '0x8000000000000000'",
        )?;
        let start = self.at;
        let digits = self.s[start..]
            .bytes()
            .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .count();
        if digits == 0 {
            return self.err("expected lowercase hex digits after 0x");
        }
        if digits > 17 {
            return self.err("a bound is at most 0x10000000000000000 (2^64)");
        }
        let value = u128::from_str_radix(&self.s[start..start + digits], 16).map_err(|_| {
            ShardSelectorError {
                position: start,
                reason: "expected lowercase hex digits after 0x",
            }
        })?;
        if value > 1 << 64 {
            return self.err("a bound is at most 0x10000000000000000 (2^64)");
        }
        self.at += digits;
        self.expect(
            "'",
            "expected the closing quote of a hex bound (lowercase hex only)",
        )?;
        Ok(value)
    }

    fn range(&mut self) -> Result<ShardRange, ShardSelectorError> {
        self.expect("shardRange", "expected shardRange(")?;
        self.expect("(", "expected shardRange(")?;
        let key = self.key()?;
        self.expect(",", "expected ',' after the path")?;
        self.skip_ws();
        let at = self.at;
        let start = self.bound()?;
        self.expect(",", "expected ',' between the bounds")?;
        let end = self.bound()?;
        self.expect(")", "expected ')' after the bounds")?;
        let Ok(start) = u64::try_from(start) else {
            return Err(ShardSelectorError {
                position: at,
                reason: "the start is at most 0xffffffffffffffff",
            });
        };
        ShardRange::new(key, start, end).ok_or(ShardSelectorError {
            position: at,
            reason: "the start must be below the end",
        })
    }
}

impl FromStr for ShardSelector {
    type Err = ShardSelectorError;

    /// Parses the wire form; the empty string (or only whitespace) is the
    /// empty selector. At most [`MAX_SHARD_RANGES`] ranges.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut c = Cursor { s, at: 0 };
        c.skip_ws();
        let mut ranges = Vec::new();
        if c.at == s.len() {
            return Ok(ShardSelector::default());
        }
        loop {
            if ranges.len() == MAX_SHARD_RANGES {
                return c.err(TOO_MANY);
            }
            ranges.push(c.range()?);
            c.skip_ws();
            if c.at == s.len() {
                return Ok(ShardSelector {
                    ranges: ranges.into(),
                });
            }
            c.expect("||", "expected '||' or the end")?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ShardSelector, (usize, &'static str)> {
        s.parse::<ShardSelector>()
            .map_err(|e| (e.position(), e.reason))
    }

    #[test]
    fn the_wire_forms_round_trip() {
        let two = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || \
                   shardRange(object.metadata.namespace,'0x8000000000000000','0x10000000000000000')";
        let s = parse(two).unwrap();
        assert_eq!(s.ranges().len(), 2);
        assert_eq!(
            s.to_string(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
        );
        assert_eq!(parse(&s.to_string()), Ok(s));
        assert_eq!(parse("  "), Ok(ShardSelector::default()));
    }

    #[test]
    fn malformed_selectors_say_where_and_why() {
        let at = |s: &str| parse(s).unwrap_err().0;
        assert_eq!(at("shardrange(object.metadata.uid, '0x0', '0x1')"), 0);
        assert_eq!(at("shardRange(object.metadata.uidx, '0x0', '0x1')"), 11);
        assert_eq!(at("shardRange(object.metadata.uid '0x0', '0x1')"), 31);
        assert_eq!(at("shardRange(object.metadata.uid, '0X0', '0x1')"), 32);
        assert_eq!(at("shardRange(object.metadata.uid, '0xA', '0x1')"), 35);
        assert_eq!(at("shardRange(object.metadata.uid, '0x1', '0x1')"), 32);
        assert_eq!(
            at("shardRange(object.metadata.uid, '0x0', '0x10000000000000001')"),
            42
        );
        assert_eq!(at("shardRange(object.metadata.uid, '0x0', '0x1') |"), 46);
        assert_eq!(at("shardRange(object.metadata.uid, '0x0', '0x1')) "), 45);
        let term = "shardRange(object.metadata.uid, '0x0', '0x1')";
        assert!(parse(&vec![term; MAX_SHARD_RANGES + 1].join("||")).is_err());
        assert!(parse(&vec![term; MAX_SHARD_RANGES].join("||")).is_ok());
    }

    #[test]
    fn nth_ranges_partition_the_space() {
        for n in [1u64, 2, 3, 7, 64] {
            let ranges: Vec<_> = (0..n)
                .map(|i| ShardRange::nth(ShardKey::Uid, i, n).unwrap())
                .collect();
            assert_eq!(ranges[0].start(), 0);
            assert_eq!(ranges[n as usize - 1].end(), 1 << 64);
            for w in ranges.windows(2) {
                assert_eq!(u128::from(w[1].start()), w[0].end());
            }
            for h in [0, 1, u64::MAX / 3, u64::MAX] {
                assert_eq!(ranges.iter().filter(|r| r.contains(h)).count(), 1);
            }
        }
    }
}
