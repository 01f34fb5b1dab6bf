//! [`Target`]: the resource a request's path names.

/// The resource a path names: its group, version and plural.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
}

impl Target {
    /// `plural` or `plural.group`, as the server keys its resources.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}
