//! Each mode's checks (`mode.go`) and the order they are tried in
//! (`getImpersonatedUser`, `constrained_impersonation.go`).

use std::collections::BTreeMap;
use std::future::Future;

use herald_kube::ApiError;
use herald_kube::quote::go_quote;

use super::model::{Impersonated, Mode, Refusal, Wanted};
use super::names::{self, NODES};
use crate::forbidden::forbidden;
use crate::rbac::Decision;
use crate::request::RequestInfo;
use crate::user::{ANONYMOUS, AUTHENTICATED, MASTERS, UNAUTHENTICATED, User};

/// The API group of the constrained modes' checks, and of every mode's
/// `uids` and `userextras` checks.
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
/// The extra key of the node a service account's token is bound to.
const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
/// The extra key the associated-node mode shows the authorizer instead of
/// the requester's extra values.
const ASSOCIATED_NODE_KEYS: &str = "authentication.kubernetes.io/associated-node-keys";
/// From this many groups (or extra values), a constrained mode first
/// tries one check on `*` (`manyAuthorizationChecksInLoop`).
const MANY: usize = 4;

/// Whether `requester` may impersonate `wanted` for `request` (the
/// request's own attributes, as authorization sees them), and as whom.
///
/// `authorize` is the authorizer: it receives the user to authorize (the
/// requester; for the associated-node mode, the requester with its extra
/// values replaced by `authentication.kubernetes.io/associated-node-keys`,
/// the sorted list of their keys) and the attributes to check, and
/// answers with a [`Decision`] or `Err` when it failed (a refusal whose
/// reason is the error, as the apiserver's `checkAuthorization`).
///
/// `first` is the mode to try first: the apiserver tries first the mode
/// that last allowed the requester (an LRU by user name), and so, if it
/// fails, returns its error; `None` tries them in order.
pub async fn impersonate<F, Fut>(
    wanted: &Wanted,
    requester: &User,
    request: &RequestInfo,
    first: Option<Mode>,
    mut authorize: F,
) -> Result<Impersonated, Refusal>
where
    F: FnMut(User, RequestInfo) -> Fut,
    Fut: Future<Output = Result<Decision, String>>,
{
    let mut first_err = None;
    if let Some(mode) = first {
        match check(mode, wanted, requester, request, &mut authorize).await {
            Ok(Some(user)) => return Ok(impersonated(user, mode)),
            // Go's `firstErr = err`: the first mode's error, or none.
            Ok(None) => {}
            Err(e) => first_err = Some(e),
        }
    }
    for mode in Mode::ALL.into_iter().filter(|m| Some(*m) != first) {
        match check(mode, wanted, requester, request, &mut authorize).await {
            Ok(Some(user)) => return Ok(impersonated(user, mode)),
            Ok(None) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| Refusal {
        error: ApiError::internal("all impersonation modes failed"),
        reason: "all impersonation modes failed".to_owned(),
    }))
}

fn impersonated(user: User, mode: Mode) -> Impersonated {
    Impersonated {
        user,
        mode,
        constraint: mode.constraint(),
    }
}

/// The authorizer as a mode sees it: the user it authorizes and, for
/// the associated-node mode, the node name widened to `*`
/// (`associatedNodeImpersonationAttributes`).
struct Checker<'a, F> {
    authorize: &'a mut F,
    user: User,
    associated_node: bool,
}

impl<F, Fut> Checker<'_, F>
where
    F: FnMut(User, RequestInfo) -> Fut,
    Fut: Future<Output = Result<Decision, String>>,
{
    /// `checkAuthorization`: allowed, or the 403 for `attrs` with the
    /// authorizer's reason or error.
    async fn check(&mut self, mut attrs: RequestInfo) -> Result<(), Refusal> {
        if self.associated_node && attrs.verb == Mode::AssociatedNode.verb() {
            attrs.name = "*".to_owned();
        }
        let reason = match (self.authorize)(self.user.clone(), attrs.clone()).await {
            Ok(d) if d.allowed => return Ok(()),
            Ok(d) => d.reason,
            Err(e) => e,
        };
        Err(refuse(&self.user, &attrs, &reason))
    }
}

/// The 403 for `user` on `attrs` (`responsewriters.ForbiddenStatusError`).
fn refuse(user: &User, attrs: &RequestInfo, reason: &str) -> Refusal {
    let mut what = if attrs.is_resource {
        format!(
            "{} {} {}",
            attrs.verb,
            attrs.resource_and_subresource(),
            go_quote(&attrs.name)
        )
    } else {
        format!("{} {}", attrs.verb, go_quote(&attrs.path))
    };
    if !reason.is_empty() {
        what = format!("{what}: {reason}");
    }
    Refusal {
        error: forbidden(user, attrs, reason),
        reason: what,
    }
}

/// The attributes of a check on the impersonated identity
/// (`impersonationAttributes`).
fn attributes(group: &str, verb: &str, resource: &str, name: &str) -> RequestInfo {
    RequestInfo {
        is_resource: true,
        verb: verb.to_owned(),
        api_group: group.to_owned(),
        api_version: "v1".to_owned(),
        resource: resource.to_owned(),
        name: name.to_owned(),
        ..RequestInfo::default()
    }
}

/// Whether only a user name is asked for (`onlyUsernameSet`).
fn only_name(wanted: &Wanted) -> bool {
    wanted.uid.is_empty() && wanted.groups.is_empty() && wanted.extra.is_empty()
}

/// A constrained mode's filter: whether it applies at all.
fn applies(mode: Mode, wanted: &Wanted, requester: &User) -> bool {
    let node = names::node(&wanted.name);
    let sa = names::service_account(&wanted.name);
    match mode {
        // `requesterAssociatedWithRequestedNodeUsername`.
        Mode::AssociatedNode => {
            only_name(wanted)
                && node.is_some_and(|n| {
                    names::service_account(&requester.name).is_some()
                        && requester.extra.get(NODE_NAME_KEY).map(Vec::as_slice)
                            == Some(&[n.to_owned()][..])
                })
        }
        Mode::ArbitraryNode => only_name(wanted) && node.is_some(),
        Mode::ServiceAccount => only_name(wanted) && sa.is_some(),
        Mode::UserInfo => node.is_none() && sa.is_none(),
        Mode::Legacy => true,
    }
}

/// One mode's decision: `Ok(None)` when it does not apply, the user when
/// it allows, the first failed check's 403 when it refuses
/// (`constrainedImpersonationModeState.check`, `legacyImpersonationCheck`).
async fn check<F, Fut>(
    mode: Mode,
    wanted: &Wanted,
    requester: &User,
    request: &RequestInfo,
    authorize: &mut F,
) -> Result<Option<User>, Refusal>
where
    F: FnMut(User, RequestInfo) -> Fut,
    Fut: Future<Output = Result<Decision, String>>,
{
    if !applies(mode, wanted, requester) {
        return Ok(None);
    }
    let associated_node = mode == Mode::AssociatedNode;
    let mut checker = Checker {
        authorize,
        user: if associated_node {
            associated_node_requester(requester)
        } else {
            requester.clone()
        },
        associated_node,
    };
    if mode != Mode::Legacy {
        let on = RequestInfo {
            verb: format!("impersonate-on:{}:{}", mode.name(), request.verb),
            ..request.clone()
        };
        checker.check(on).await?;
    }
    identity(mode, wanted, requester, &mut checker)
        .await
        .map(Some)
}

/// The requester as the associated-node mode's checks show it
/// (`associatedNodeImpersonationRequestorUserInfo`): its extra values
/// replaced by the sorted list of their keys.
fn associated_node_requester(requester: &User) -> User {
    let keys = requester.extra.keys().cloned().collect();
    User {
        extra: BTreeMap::from([(ASSOCIATED_NODE_KEYS.to_owned(), keys)]),
        ..requester.clone()
    }
}

/// The checks on the identity asked for, in the apiserver's order (user
/// name, UID, groups, extra), and the user they allow
/// (`impersonationModeState.check`).
async fn identity<F, Fut>(
    mode: Mode,
    wanted: &Wanted,
    requester: &User,
    checker: &mut Checker<'_, F>,
) -> Result<User, Refusal>
where
    F: FnMut(User, RequestInfo) -> Fut,
    Fut: Future<Output = Result<Decision, String>>,
{
    let constrained = mode != Mode::Legacy;
    let verb = mode.verb();
    // Users and groups are `authentication.k8s.io` in the constrained
    // modes, the core group in the legacy one.
    let user_group = if constrained {
        AUTHENTICATION_GROUP
    } else {
        ""
    };
    let mut user = User {
        name: wanted.name.clone(),
        uid: wanted.uid.clone(),
        groups: wanted.groups.clone(),
        extra: wanted.extra.clone(),
    };

    // authorizeUsername
    let mut attrs = attributes(user_group, verb, "users", &wanted.name);
    if let Some(node) = names::node(&wanted.name).filter(|_| constrained) {
        attrs.resource = "nodes".to_owned();
        attrs.name = node.to_owned();
        if !wanted.groups.is_empty() {
            let reason = format!(
                "when impersonating a node, cannot impersonate groups {}",
                go_quote_list(&wanted.groups)
            );
            return Err(refuse(requester, &attrs, &reason));
        }
        user.groups = vec![NODES.to_owned()];
    }
    if let Some((namespace, name)) = names::service_account(&wanted.name) {
        attrs.resource = "serviceaccounts".to_owned();
        attrs.namespace = namespace.to_owned();
        attrs.name = name.to_owned();
        if constrained && !wanted.groups.is_empty() {
            let reason = format!(
                "when impersonating a service account, cannot impersonate groups {}",
                go_quote_list(&wanted.groups)
            );
            return Err(refuse(requester, &attrs, &reason));
        }
        if wanted.groups.is_empty() {
            user.groups = names::service_account_groups(namespace);
        }
    }
    checker.check(attrs).await?;

    // authorizeUID
    if !wanted.uid.is_empty() {
        let attrs = attributes(AUTHENTICATION_GROUP, verb, "uids", &wanted.uid);
        checker.check(attrs).await?;
    }

    // authorizeGroups
    if !wanted.groups.is_empty() {
        let mut attrs = attributes(user_group, verb, "groups", "");
        if constrained {
            if wanted.groups.iter().any(String::is_empty) {
                let reason = "impersonating the empty string group is not allowed";
                return Err(refuse(requester, &attrs, reason));
            }
            if wanted.groups.iter().any(|g| g == MASTERS) {
                attrs.name = MASTERS.to_owned();
                let reason = "impersonating the system:masters group is not allowed";
                return Err(refuse(requester, &attrs, reason));
            }
        }
        let mut all = false;
        if constrained && wanted.groups.len() >= MANY {
            attrs.name = "*".to_owned();
            all = checker.check(attrs.clone()).await.is_ok();
        }
        if !all {
            for group in &wanted.groups {
                attrs.name = group.clone();
                checker.check(attrs.clone()).await?;
            }
        }
    }

    // authorizeExtra
    if !wanted.extra.is_empty() {
        let mut attrs = attributes(AUTHENTICATION_GROUP, verb, "userextras", "");
        if constrained {
            if let Some(reason) = names::extra_error(&wanted.extra) {
                return Err(refuse(requester, &attrs, &reason));
            }
        }
        let mut all = false;
        let values: usize = wanted.extra.values().map(Vec::len).sum();
        if constrained && (wanted.extra.len() >= MANY || values >= MANY) {
            attrs.subresource = "*".to_owned();
            attrs.name = "*".to_owned();
            all = checker.check(attrs.clone()).await.is_ok();
        }
        if !all {
            for (key, values) in &wanted.extra {
                attrs.subresource = key.clone();
                for value in values {
                    attrs.name = value.clone();
                    checker.check(attrs.clone()).await?;
                }
            }
        }
    }

    if user.name == ANONYMOUS {
        ensure_group(&mut user, UNAUTHENTICATED);
    } else if !user.in_group(UNAUTHENTICATED) {
        ensure_group(&mut user, AUTHENTICATED);
    }
    Ok(user)
}

fn ensure_group(user: &mut User, group: &str) {
    if !user.in_group(group) {
        user.groups.push(group.to_owned());
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}
