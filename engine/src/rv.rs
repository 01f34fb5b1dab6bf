//! Resource versions and their wire forms.

use std::fmt;
use std::str::FromStr;

use crate::echo::Echo;

/// A resource version: the position of a change in the upstream store's
/// history. Strictly increases with every applied change.
///
/// Kubernetes sends resource versions as opaque strings; the watch cache (and
/// Herald) parse them as unsigned decimal integers. See
/// [`ResourceVersion::parse_param`] for the wire forms of a request parameter.
///
/// ```
/// use herald::ResourceVersion;
/// let rv: ResourceVersion = "42".parse()?;
/// assert_eq!(rv.get(), 42);
/// assert_eq!(rv.to_string(), "42");
/// # Ok::<(), herald::rv::InvalidResourceVersion>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ResourceVersion(u64);

impl ResourceVersion {
    /// The zero resource version: "any", before every change.
    pub const ZERO: ResourceVersion = ResourceVersion(0);

    /// Wraps a raw resource version.
    ///
    /// ```
    /// # use herald::ResourceVersion;
    /// assert_eq!(ResourceVersion::new(7).get(), 7);
    /// ```
    pub const fn new(rv: u64) -> Self {
        ResourceVersion(rv)
    }

    /// The raw value.
    ///
    /// ```
    /// # use herald::ResourceVersion;
    /// assert_eq!(ResourceVersion::ZERO.get(), 0);
    /// ```
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Parses a resource-version request parameter in its three wire forms:
    /// `""` (unset) gives `Ok(None)`, `"0"` ("any") gives
    /// `Ok(Some(ResourceVersion::ZERO))`, and a decimal number gives that
    /// version. Anything else (signs, spaces, non-digits, overflow) is an
    /// [`InvalidResourceVersion`] error.
    ///
    /// ```
    /// use herald::ResourceVersion;
    /// assert_eq!(ResourceVersion::parse_param("")?, None);
    /// assert_eq!(ResourceVersion::parse_param("0")?, Some(ResourceVersion::ZERO));
    /// assert_eq!(ResourceVersion::parse_param("17")?, Some(ResourceVersion::new(17)));
    /// assert!(ResourceVersion::parse_param("-1").is_err());
    /// # Ok::<(), herald::rv::InvalidResourceVersion>(())
    /// ```
    pub fn parse_param(s: &str) -> Result<Option<ResourceVersion>, InvalidResourceVersion> {
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some)
    }
}

/// Kubernetes' `resourceVersionMatch`: how a read's (or a watch-list's)
/// resource version is matched. Parsed from its wire form with
/// [`FromStr`] (`"NotOlderThan"`, `"Exact"`; anything else is refused with
/// [`UnsupportedMatch`], naming the value).
///
/// ```
/// use herald::rv::ResourceVersionMatch;
/// assert_eq!("Exact".parse(), Ok(ResourceVersionMatch::Exact));
/// assert!("exact".parse::<ResourceVersionMatch>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResourceVersionMatch {
    /// The state at the version or any later one.
    NotOlderThan,
    /// The state exactly at the version (reads only).
    Exact,
}

impl ResourceVersionMatch {
    /// The wire form.
    pub fn as_str(&self) -> &'static str {
        match self {
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
            ResourceVersionMatch::Exact => "Exact",
        }
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ResourceVersionMatch {
    type Err = UnsupportedMatch;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "NotOlderThan" => Ok(ResourceVersionMatch::NotOlderThan),
            "Exact" => Ok(ResourceVersionMatch::Exact),
            _ => Err(UnsupportedMatch(Echo::new(s))),
        }
    }
}

/// A `resourceVersionMatch` that is neither `NotOlderThan` nor `Exact`.
///
/// ```
/// let err = "Newest".parse::<herald::rv::ResourceVersionMatch>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan""#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedMatch(Echo);

impl fmt::Display for UnsupportedMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "resourceVersionMatch: Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\"",
            self.0
        )
    }
}

impl std::error::Error for UnsupportedMatch {}

impl From<u64> for ResourceVersion {
    fn from(rv: u64) -> Self {
        ResourceVersion(rv)
    }
}

impl fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for ResourceVersion {
    type Err = InvalidResourceVersion;

    /// Parses a decimal resource version. Unlike [`ResourceVersion::parse_param`],
    /// the empty string is an error here: a value is required.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // `u64::from_str` accepts a leading '+', which the wire form does not.
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InvalidResourceVersion::new(s));
        }
        s.parse::<u64>()
            .map(ResourceVersion)
            .map_err(|_| InvalidResourceVersion::new(s))
    }
}

/// A resource version that is not `""`, `"0"` or an unsigned decimal that
/// fits in 64 bits.
///
/// ```
/// use herald::ResourceVersion;
/// let err = "12a".parse::<ResourceVersion>().unwrap_err();
/// assert_eq!(err.to_string(), "invalid resource version: \"12a\"");
/// assert_eq!(err.input(), "12a");
/// ```
///
/// The error keeps and shows at most the first 64 bytes of hostile input:
///
/// ```
/// # use herald::ResourceVersion;
/// let err = "9".repeat(1 << 20).parse::<ResourceVersion>().unwrap_err();
/// assert_eq!(err.input().len(), 64);
/// assert!(err.to_string().ends_with("... (1048576 bytes)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidResourceVersion {
    input: Echo,
}

impl InvalidResourceVersion {
    fn new(input: &str) -> Self {
        InvalidResourceVersion {
            input: Echo::new(input),
        }
    }

    /// The rejected text (at most its first 64 bytes).
    ///
    /// ```
    /// # use herald::ResourceVersion;
    /// assert_eq!("-1".parse::<ResourceVersion>().unwrap_err().input(), "-1");
    /// ```
    pub fn input(&self) -> &str {
        self.input.head()
    }
}

impl fmt::Display for InvalidResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid resource version: {}", self.input)
    }
}

impl std::error::Error for InvalidResourceVersion {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wire_forms() {
        assert_eq!(ResourceVersion::parse_param(""), Ok(None));
        assert_eq!(
            ResourceVersion::parse_param("0"),
            Ok(Some(ResourceVersion::ZERO))
        );
        assert_eq!(
            ResourceVersion::parse_param("18446744073709551615"),
            Ok(Some(ResourceVersion::new(u64::MAX)))
        );
        for bad in [
            "+1",
            "-1",
            " 1",
            "1 ",
            "0x10",
            "1.5",
            "18446744073709551616",
            "abc",
        ] {
            let err = ResourceVersion::parse_param(bad).unwrap_err();
            assert_eq!(err.input(), bad);
        }
        assert!("".parse::<ResourceVersion>().is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 256 }))]
        #[test]
        fn display_round_trips(v: u64) {
            let rv = ResourceVersion::new(v);
            prop_assert_eq!(rv.to_string().parse::<ResourceVersion>(), Ok(rv));
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,30}") {
            match ResourceVersion::parse_param(&s) {
                Ok(None) => prop_assert!(s.is_empty()),
                Ok(Some(rv)) => {
                    prop_assert!(s.bytes().all(|b| b.is_ascii_digit()));
                    prop_assert_eq!(Ok(rv.get()), s.parse::<u64>());
                }
                Err(e) => prop_assert!(s.len() > 64 || e.input() == s),
            }
        }
    }
}
