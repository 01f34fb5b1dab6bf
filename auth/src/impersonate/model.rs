//! What impersonation is asked ([`Wanted`]) and what it decides: the
//! modes ([`Mode`]), the identity a request is served as
//! ([`Impersonated`]), a refusal ([`Refusal`]).

use std::collections::BTreeMap;

use herald_kube::ApiError;

use crate::user::User;

/// The identity a request's impersonation headers ask for, as sent (no
/// defaulting: the groups and extra the headers name, nothing added).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wanted {
    /// `Impersonate-User` (never empty).
    pub name: String,
    /// `Impersonate-Uid`, or empty.
    pub uid: String,
    /// Every `Impersonate-Group` value, in order.
    pub groups: Vec<String>,
    /// `Impersonate-Extra-<key>` values by key (lowercased, unescaped).
    /// Go keeps them in a map, so its order of checks among keys is
    /// random; here it is key order.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// An impersonation mode, in the order the apiserver tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A service account impersonating the node it is bound to.
    AssociatedNode,
    /// Any node.
    ArbitraryNode,
    /// A service account.
    ServiceAccount,
    /// Any other user, with UID, groups and extra.
    UserInfo,
    /// The legacy `impersonate` verb.
    Legacy,
}

impl Mode {
    /// Every mode, in the apiserver's order (`allImpersonationModes`).
    pub const ALL: [Mode; 5] = [
        Mode::AssociatedNode,
        Mode::ArbitraryNode,
        Mode::ServiceAccount,
        Mode::UserInfo,
        Mode::Legacy,
    ];

    /// The mode's name, as the apiserver's metrics label it
    /// (`associated-node`, ..., `legacy`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::AssociatedNode => "associated-node",
            Mode::ArbitraryNode => "arbitrary-node",
            Mode::ServiceAccount => "serviceaccount",
            Mode::UserInfo => "user-info",
            Mode::Legacy => "legacy",
        }
    }

    /// The verb of the mode's checks on the impersonated identity
    /// (`impersonate:<mode>`, or `impersonate` for legacy).
    pub fn verb(self) -> &'static str {
        match self {
            Mode::AssociatedNode => "impersonate:associated-node",
            Mode::ArbitraryNode => "impersonate:arbitrary-node",
            Mode::ServiceAccount => "impersonate:serviceaccount",
            Mode::UserInfo => "impersonate:user-info",
            Mode::Legacy => "impersonate",
        }
    }

    /// What the audit event records as
    /// `authenticationMetadata.impersonationConstraint`: the mode's verb,
    /// or nothing (`""`, the field omitted) for legacy.
    pub fn constraint(self) -> &'static str {
        match self {
            Mode::Legacy => "",
            m => m.verb(),
        }
    }
}

/// An allowed impersonation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impersonated {
    /// The user the request is served as: the name, UID, groups and extra
    /// asked for, with the groups the apiserver adds (a service
    /// account's when none were asked; `system:nodes` for a node in a
    /// constrained mode; `system:authenticated`, or
    /// `system:unauthenticated` for `system:anonymous`).
    pub user: User,
    /// The mode that allowed it.
    pub mode: Mode,
    /// The audit event's `authenticationMetadata.impersonationConstraint`
    /// (`impersonate:user-info`; empty for legacy).
    pub constraint: &'static str,
}

/// A refused impersonation.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The answer: the apiserver's 403 for the failed check (or a 500
    /// should no mode answer at all, which the legacy mode makes
    /// impossible).
    pub error: ApiError,
    /// For the log and metrics: the check that failed (`impersonate
    /// users "bob"`), with the authorizer's reason if it gave one.
    pub reason: String,
}
