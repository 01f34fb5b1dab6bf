//! [`KeyScope`]: which keys a watch or a list covers (Kubernetes' request
//! path: everything, a namespace, one object).

/// Which keys a watch covers.
///
/// ```
/// use herald::selector::KeyScope;
/// let s = KeyScope::prefix("team-a");
/// assert!(s.contains("team-a/web-1"));
/// assert!(!s.contains("team-ab/web-1"));
/// assert!(KeyScope::exact("team-a/web-1").contains("team-a/web-1"));
/// assert!(KeyScope::All.contains("anything"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum KeyScope {
    /// Every key.
    #[default]
    All,
    /// Exactly one key (`namespace/name` or `name`).
    Exact(Box<str>),
    /// Every key under a prefix (recursive): prefix `p` covers `p/...`.
    /// Build it with [`KeyScope::prefix`], which normalises the prefix.
    Prefix(Box<str>),
}

impl KeyScope {
    /// One key.
    pub fn exact(key: &str) -> Self {
        KeyScope::Exact(key.into())
    }

    /// Every key under `prefix` (a trailing `/` is optional; the empty prefix
    /// is [`KeyScope::All`]).
    pub fn prefix(prefix: &str) -> Self {
        let p = prefix.trim_end_matches('/');
        if p.is_empty() {
            KeyScope::All
        } else {
            KeyScope::Prefix(p.into())
        }
    }

    /// Whether `key` is covered.
    pub fn contains(&self, key: &str) -> bool {
        match self {
            KeyScope::All => true,
            KeyScope::Exact(k) => **k == *key,
            KeyScope::Prefix(p) => key
                .strip_prefix(&**p)
                .is_some_and(|rest| rest.starts_with('/')),
        }
    }
}
