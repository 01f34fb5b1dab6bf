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
//!
//! The judgment is conservative, as that checker is: progress is trusted
//! only when every member was asked its version at connect, answered, and
//! runs a fixed release. A member that did not answer, or whose version
//! does not parse, might run an affected release: it makes progress
//! untrusted ([`Distrust`] says which member and why).

use std::fmt;

/// Whether the source passes the server's progress notifications on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProgressTrust {
    /// Trust them when every member answered at connect with a release
    /// without etcd#15220 (3.4.31+, 3.5.13+; see
    /// [`ServerVersion::progress_is_trusted`]).
    #[default]
    Auto,
    /// Never: consistent reads fall back to reading etcd (slower, and
    /// always correct).
    Never,
}

/// Why an [`EtcdCluster`](crate::EtcdCluster) does not trust progress
/// notifications ([`EtcdCluster::progress_distrust`](crate::EtcdCluster::progress_distrust)).
///
/// ```
/// use herald_etcd::{Distrust, ServerVersion};
/// let old = Distrust::OldServer {
///     endpoint: "http://10.0.0.1:2379".into(),
///     version: ServerVersion::parse("3.4.23").unwrap(),
/// };
/// assert!(old.to_string().contains("etcd#15220"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Distrust {
    /// [`ProgressTrust::Never`] was configured.
    Configured,
    /// A member runs a release with etcd#15220 (the oldest such member).
    OldServer {
        /// The member's endpoint.
        endpoint: String,
        /// Its version.
        version: ServerVersion,
    },
    /// A member reported a version that does not parse.
    UnknownVersion {
        /// The member's endpoint.
        endpoint: String,
        /// What it reported.
        reported: String,
    },
    /// A member did not answer the version check at connect.
    Unchecked {
        /// The member's endpoint.
        endpoint: String,
        /// Why it did not answer.
        error: String,
    },
}

impl fmt::Display for Distrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distrust::Configured => write!(f, "ProgressTrust::Never is configured"),
            Distrust::OldServer { endpoint, version } => write!(
                f,
                "{endpoint} runs etcd {version}, which has etcd#15220 (fixed in 3.5.13 and 3.4.31)"
            ),
            Distrust::UnknownVersion { endpoint, reported } => write!(
                f,
                "{endpoint} reports etcd version {reported:?}, which does not parse: it may \
                 have etcd#15220 (fixed in 3.5.13 and 3.4.31)"
            ),
            Distrust::Unchecked { endpoint, error } => write!(
                f,
                "{endpoint} did not answer the version check at connect ({error}): it may \
                 have etcd#15220 (fixed in 3.5.13 and 3.4.31)"
            ),
        }
    }
}

/// What the members said at connect: the oldest version that parsed, and
/// why progress is not trusted (`None`: it is). `answers` holds, for each
/// endpoint, the version text it reported or why it did not answer. The
/// reason given is the first that applies of: configured, an old server
/// (the oldest), a version that does not parse, a member that did not
/// answer.
pub(crate) fn judge(
    trust: ProgressTrust,
    answers: &[(String, Result<String, String>)],
) -> (Option<ServerVersion>, Option<Distrust>) {
    let mut oldest: Option<(&String, ServerVersion)> = None;
    let mut unknown = None;
    let mut unchecked = None;
    for (endpoint, answer) in answers {
        match answer {
            Ok(text) => match ServerVersion::parse(text) {
                Some(v) => {
                    if oldest.is_none_or(|(_, o)| v < o) {
                        oldest = Some((endpoint, v));
                    }
                }
                None => {
                    unknown.get_or_insert_with(|| Distrust::UnknownVersion {
                        endpoint: endpoint.clone(),
                        reported: text.clone(),
                    });
                }
            },
            Err(error) => {
                unchecked.get_or_insert_with(|| Distrust::Unchecked {
                    endpoint: endpoint.clone(),
                    error: error.clone(),
                });
            }
        }
    }
    let old = oldest
        .filter(|(_, v)| !v.progress_is_trusted())
        .map(|(endpoint, version)| Distrust::OldServer {
            endpoint: endpoint.clone(),
            version,
        });
    let configured = (trust == ProgressTrust::Never).then_some(Distrust::Configured);
    let distrust = configured.or(old).or(unknown).or(unchecked);
    (oldest.map(|(_, v)| v), distrust)
}

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

    fn answers(list: &[(&str, Result<&str, &str>)]) -> Vec<(String, Result<String, String>)> {
        list.iter()
            .map(|(e, a)| ((*e).to_owned(), a.map(str::to_owned).map_err(str::to_owned)))
            .collect()
    }

    #[test]
    fn progress_is_trusted_only_when_every_member_answered_with_a_fixed_release() {
        let v = |s: &str| ServerVersion::parse(s).unwrap();
        let all_good = answers(&[("a", Ok("3.5.16")), ("b", Ok("3.5.13")), ("c", Ok("3.6.0"))]);
        assert_eq!(
            judge(ProgressTrust::Auto, &all_good),
            (Some(v("3.5.13")), None)
        );
        assert_eq!(
            judge(ProgressTrust::Never, &all_good),
            (Some(v("3.5.13")), Some(Distrust::Configured))
        );
        // The oldest member decides, wherever it is in the list.
        let one_old = answers(&[("a", Ok("3.5.16")), ("b", Ok("3.4.23")), ("c", Ok("3.5.8"))]);
        assert_eq!(
            judge(ProgressTrust::Auto, &one_old),
            (
                Some(v("3.4.23")),
                Some(Distrust::OldServer {
                    endpoint: "b".into(),
                    version: v("3.4.23")
                })
            )
        );
        // A version that does not parse: not trusted, not a failure.
        let garbled = answers(&[("a", Ok("3.5.16")), ("b", Ok("three point five"))]);
        assert_eq!(
            judge(ProgressTrust::Auto, &garbled),
            (
                Some(v("3.5.16")),
                Some(Distrust::UnknownVersion {
                    endpoint: "b".into(),
                    reported: "three point five".into()
                })
            )
        );
        assert_eq!(
            judge(ProgressTrust::Auto, &answers(&[("a", Ok(""))])).0,
            None
        );
        // A member that did not answer was not checked: not trusted.
        let silent = answers(&[("a", Ok("3.5.16")), ("b", Err("connection refused"))]);
        assert_eq!(
            judge(ProgressTrust::Auto, &silent),
            (
                Some(v("3.5.16")),
                Some(Distrust::Unchecked {
                    endpoint: "b".into(),
                    error: "connection refused".into()
                })
            )
        );
        // An old server is named before a member that was not checked.
        let both = answers(&[("a", Err("timeout")), ("b", Ok("3.4.23"))]);
        assert!(matches!(
            judge(ProgressTrust::Auto, &both).1,
            Some(Distrust::OldServer { .. })
        ));
        for d in [
            judge(ProgressTrust::Auto, &garbled).1.unwrap(),
            judge(ProgressTrust::Auto, &silent).1.unwrap(),
        ] {
            assert!(d.to_string().contains("etcd#15220"), "{d}");
        }
    }
}
