//! Which etcd servers send progress notifications a cache may trust.
//!
//! etcd#15220: a server could send a progress notification (periodic, or
//! the answer to `RequestProgress`) carrying a revision while events at or
//! below it were still queued for the same watch stream. A cache that
//! takes the notification as "everything up to here has been sent" then
//! serves a consistent read that misses those events. Fixed in 3.5.8 and
//! 3.4.25; the follow-up (progress for a watch that had been sent nothing
//! yet) in 3.5.13 and 3.4.31. Kubernetes requires those versions before it
//! serves consistent reads from its watch cache (its
//! `storage/feature` support checker); Herald does the same.

use std::fmt;

/// An etcd server's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl ServerVersion {
    /// Parses `3.5.16` (a suffix such as `-rc.0` or `+git` is ignored).
    ///
    /// ```
    /// use herald_etcd::ServerVersion;
    /// let v = ServerVersion::parse("3.5.16").unwrap();
    /// assert!(v.progress_is_trusted());
    /// assert!(!ServerVersion::parse("3.4.23").unwrap().progress_is_trusted());
    /// assert!(ServerVersion::parse("three").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<ServerVersion> {
        let core = text
            .trim()
            .trim_start_matches('v')
            .split(['-', '+', ' '])
            .next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
        let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
        Some(ServerVersion {
            major,
            minor,
            patch,
        })
    }

    /// Whether this server's progress notifications mean what they say
    /// (3.4.31 and later 3.4, 3.5.13 and later, any 3.6 or later).
    pub fn progress_is_trusted(self) -> bool {
        let v = (self.major, self.minor, self.patch);
        match (self.major, self.minor) {
            (3, 4) => v >= (3, 4, 31),
            (3, 5) => v >= (3, 5, 13),
            _ => v >= (3, 6, 0),
        }
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_releases_are_trusted_and_the_ones_before_them_are_not() {
        let t = |s: &str| ServerVersion::parse(s).unwrap().progress_is_trusted();
        for ok in [
            "3.4.31",
            "3.4.35",
            "3.5.13",
            "3.5.16",
            "3.6.0",
            "v3.6.1",
            "4.0.0",
            "3.5.13-rc.0",
        ] {
            assert!(t(ok), "{ok}");
        }
        for bad in ["3.4.23", "3.4.30", "3.5.8", "3.5.12", "3.3.27", "2.3.8"] {
            assert!(!t(bad), "{bad}");
        }
        assert_eq!(ServerVersion::parse("3.5"), None);
    }
}
