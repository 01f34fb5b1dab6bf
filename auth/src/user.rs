//! An authenticated identity, as the apiserver's `user.Info`: a name, a
//! UID, groups and extra values.

use std::collections::BTreeMap;

/// The user of a request that carried no credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of [`ANONYMOUS`].
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group the apiserver allows everything (its privileged-group
/// authorizer, ahead of RBAC).
pub const MASTERS: &str = "system:masters";
/// The extra key naming the credential a user presented.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// Who made a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct User {
    /// The user name (`alice`, `system:serviceaccount:ns:sa`).
    pub name: String,
    /// The UID, when the credential carries one.
    pub uid: String,
    /// The groups, in the order the credential gave them.
    pub groups: Vec<String>,
    /// Extra values (`authentication.kubernetes.io/credential-id`, a
    /// service account's pod), sorted by key.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// `system:anonymous` in `system:unauthenticated`.
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The user with `system:authenticated` appended, as the apiserver's
    /// `AuthenticatedGroupAdder` does (not to the anonymous user, nor to
    /// one already in it or in `system:unauthenticated`).
    pub fn authenticated(mut self) -> User {
        if self.name != ANONYMOUS
            && !self.in_group(AUTHENTICATED)
            && !self.in_group(UNAUTHENTICATED)
        {
            self.groups.push(AUTHENTICATED.into());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authenticated_group_is_added_once_and_never_to_anonymous() {
        let u = User {
            name: "alice".into(),
            groups: vec!["dev".into()],
            ..User::default()
        }
        .authenticated()
        .authenticated();
        assert_eq!(u.groups, ["dev", AUTHENTICATED]);
        assert_eq!(User::anonymous().authenticated().groups, [UNAUTHENTICATED]);
    }
}
