//! Impersonation (`Impersonate-User`, `-Uid`, `-Group`, `-Extra-<key>`),
//! decided as kube-apiserver v1.37 decides it: its
//! `WithConstrainedImpersonation` filter (the `ConstrainedImpersonation`
//! feature gate, beta and on by default), which tries five modes in turn
//! and serves the request as the first that allows it:
//!
//! | mode | who it is for | checks (verbs) |
//! |---|---|---|
//! | `associated-node` | a service account impersonating the node its token is bound to | `impersonate-on:associated-node:<verb>`, `impersonate:associated-node` on `nodes` `*` |
//! | `arbitrary-node` | a node (`system:node:<name>`) | `impersonate-on:arbitrary-node:<verb>`, `impersonate:arbitrary-node` on `nodes` |
//! | `serviceaccount` | a service account | `impersonate-on:serviceaccount:<verb>`, `impersonate:serviceaccount` on `serviceaccounts` |
//! | `user-info` | any other user, with UID, groups and extra | `impersonate-on:user-info:<verb>`, `impersonate:user-info` on `users`, `uids`, `groups`, `userextras/<key>` |
//! | legacy | anyone (the original filter, unchanged) | `impersonate` on `users` or `serviceaccounts`, `groups`, `uids`, `userextras/<key>` |
//!
//! The node and service-account modes apply only when the user name is
//! all that is asked for; `impersonate-on:<mode>:<verb>` is the request's
//! own attributes with its verb so prefixed. Every check is an
//! authorization of the requester (`checkAuthorization`); the first that
//! fails ends its mode, and when no mode allows, the refusal is the 403
//! of the first mode that failed (`firstErr`).
//!
//! - [`headers`](Wanted::from_headers): the headers, and their 400s;
//! - `names`: service-account and node user names, extra keys;
//! - `modes`: each mode's checks, the resulting user and the order.
//!
//! The apiserver caches successful impersonations (`cache.go`); Herald
//! decides afresh each time (the decisions are the same). The one thing
//! its cache changes is which refusal is returned: it tries first the
//! mode that last succeeded for the requester, so its error comes first.
//! The `first` argument of [`impersonate`] reproduces that for a caller
//! that remembers [`Impersonated::mode`].

mod headers;
mod model;
mod modes;
mod names;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests;

pub use model::{Impersonated, Mode, Refusal, Wanted};
pub use modes::impersonate;
