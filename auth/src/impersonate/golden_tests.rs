//! The decisions of kube-apiserver v1.37.2's own filter, replayed.
//!
//! `golden/golden.json` holds cases (a requester, the request's
//! attributes, the headers, the authorizer's rules, and optionally an
//! earlier request of the same requester) with what the real
//! `WithConstrainedImpersonation` answered: status code and message, the
//! user served, the audit event's impersonation constraint, and every
//! authorization check it made, in order. `golden/oracle.go` writes it
//! (see its header); here each case is run through
//! [`Wanted::from_headers`] and [`impersonate`] with the same rules, and
//! must give the same answer after the same checks.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::{Future, ready};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde::Deserialize;

use super::{Mode, Wanted, impersonate};
use crate::rbac::Decision;
use crate::request::RequestInfo;
use crate::user::User;

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(rename_all = "PascalCase")]
struct GoUser {
    name: String,
    #[serde(rename = "UID")]
    uid: String,
    groups: Option<Vec<String>>,
    extra: Option<BTreeMap<String, Vec<String>>>,
}

impl GoUser {
    fn user(&self) -> User {
        User {
            name: self.name.clone(),
            uid: self.uid.clone(),
            groups: self.groups.clone().unwrap_or_default(),
            extra: self.extra.clone().unwrap_or_default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GoRequest {
    is_resource_request: bool,
    path: String,
    verb: String,
    #[serde(rename = "APIGroup")]
    api_group: String,
    #[serde(rename = "APIVersion")]
    api_version: String,
    namespace: String,
    resource: String,
    subresource: String,
    name: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase", default)]
struct Rule {
    user: Option<String>,
    group: Option<String>,
    verb: Option<String>,
    #[serde(rename = "APIGroup")]
    api_group: Option<String>,
    resource: Option<String>,
    subresource: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    path: Option<String>,
    error: String,
    deny: bool,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
struct Check {
    user: GoUserEq,
    verb: String,
    #[serde(rename = "APIGroup")]
    api_group: String,
    #[serde(rename = "APIVersion")]
    api_version: String,
    resource: String,
    subresource: String,
    name: String,
    namespace: String,
    path: String,
    resource_request: bool,
    allowed: bool,
}

/// A user compared as Herald holds it (no nil-versus-empty).
#[derive(Debug, PartialEq)]
struct GoUserEq(User);

impl<'de> Deserialize<'de> for GoUserEq {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        GoUser::deserialize(d).map(|u| GoUserEq(u.user()))
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Case {
    name: String,
    requester: GoUser,
    request: GoRequest,
    headers: Vec<(String, String)>,
    #[serde(default)]
    prior: Vec<(String, String)>,
    allow: Vec<Rule>,
    code: u16,
    message: String,
    user: Option<GoUser>,
    constraint: String,
    checks: Option<Vec<Check>>,
}

fn matches(rule: &Option<String>, value: &str) -> bool {
    rule.as_deref().is_none_or(|r| r == value)
}

/// The oracle's authorizer: the first rule that matches decides;
/// without one, no opinion (no reason).
fn decide(rules: &[Rule], user: &User, a: &RequestInfo) -> Result<Decision, String> {
    let hit = rules.iter().find(|r| {
        r.group.as_deref().is_none_or(|g| user.in_group(g))
            && matches(&r.user, &user.name)
            && matches(&r.verb, &a.verb)
            && matches(&r.api_group, &a.api_group)
            && matches(&r.resource, &a.resource)
            && matches(&r.subresource, &a.subresource)
            && matches(&r.name, &a.name)
            && matches(&r.namespace, &a.namespace)
            && matches(&r.path, &a.path)
    });
    match hit {
        Some(r) if !r.error.is_empty() => Err(r.error.clone()),
        Some(r) if r.deny => Ok(Decision {
            allowed: false,
            reason: "denied by rule".into(),
        }),
        Some(_) => Ok(Decision {
            allowed: true,
            reason: String::new(),
        }),
        None => Ok(Decision {
            allowed: false,
            reason: String::new(),
        }),
    }
}

/// Polls a future that never waits (the fake authorizer answers at once).
pub(super) fn now<T>(f: impl Future<Output = T>) -> T {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}

/// The checks as comparable: Go checks extra keys in its map's order,
/// which is random, so each run of checks on single extra values is
/// compared as a set, with the one that failed, if any, apart (the
/// checks before it are the keys Go happened to visit first).
type Run<'a> = (Vec<&'a Check>, Option<&'a Check>);

fn flush<'a>(run: &mut Vec<&'a Check>, out: &mut Vec<Run<'a>>) {
    if run.is_empty() {
        return;
    }
    let failed = run.last().filter(|c| !c.allowed).copied();
    if failed.is_some() {
        // Which keys were visited before it is Go's luck.
        run.clear();
    }
    run.sort_by(|a, b| (&a.subresource, &a.name).cmp(&(&b.subresource, &b.name)));
    out.push((std::mem::take(run), failed));
}

fn runs(checks: &[Check]) -> Vec<Run<'_>> {
    let single_extra = |c: &Check| {
        c.resource == "userextras" && c.subresource != "*" && c.verb.starts_with("impersonate")
    };
    let mut out = Vec::new();
    let mut run: Vec<&Check> = Vec::new();
    for c in checks {
        if single_extra(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push((vec![c], None));
        }
    }
    flush(&mut run, &mut out);
    out
}

struct Outcome {
    code: u16,
    message: String,
    user: Option<User>,
    constraint: &'static str,
    mode: Option<Mode>,
}

fn run(
    case: &Case,
    headers: &[(String, String)],
    first: Option<Mode>,
    log: &RefCell<Vec<Check>>,
) -> Outcome {
    let requester = case.requester.user();
    let r = &case.request;
    // Every field today; `RequestInfo` is growing (`collection`).
    #[allow(clippy::needless_update)]
    let request = RequestInfo {
        is_resource: r.is_resource_request,
        path: r.path.clone(),
        verb: r.verb.clone(),
        api_group: r.api_group.clone(),
        api_version: r.api_version.clone(),
        namespace: r.namespace.clone(),
        resource: r.resource.clone(),
        subresource: r.subresource.clone(),
        name: r.name.clone(),
        ..RequestInfo::default()
    };
    let wanted = Wanted::from_headers(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())));
    let wanted = match wanted {
        Err(e) => {
            return Outcome {
                code: e.code,
                message: e.message,
                user: None,
                constraint: "",
                mode: None,
            };
        }
        Ok(None) => {
            return Outcome {
                code: 200,
                message: String::new(),
                user: Some(requester),
                constraint: "",
                mode: None,
            };
        }
        Ok(Some(w)) => w,
    };
    let authorize = |user: User, a: RequestInfo| {
        let d = decide(&case.allow, &user, &a);
        log.borrow_mut().push(Check {
            user: GoUserEq(user),
            verb: a.verb,
            api_group: a.api_group,
            api_version: a.api_version,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
            namespace: a.namespace,
            path: a.path,
            resource_request: a.is_resource,
            allowed: d.as_ref().is_ok_and(|d| d.allowed),
        });
        ready(d)
    };
    match now(impersonate(&wanted, &requester, &request, first, authorize)) {
        Ok(i) => Outcome {
            code: 200,
            message: String::new(),
            user: Some(i.user),
            constraint: i.constraint,
            mode: Some(i.mode),
        },
        Err(r) => {
            assert!(!r.reason.is_empty());
            Outcome {
                code: r.error.code,
                message: r.error.message,
                user: None,
                constraint: "",
                mode: None,
            }
        }
    }
}

#[test]
fn every_case_is_decided_as_the_apiserver_decided_it() {
    let cases: Vec<Case> =
        serde_json::from_str(include_str!("golden/golden.json")).expect("golden.json");
    assert!(cases.len() >= 90, "{}", cases.len());
    for case in &cases {
        let log = RefCell::new(Vec::new());
        // An earlier request: the mode that allowed it goes first.
        let first = if case.prior.is_empty() {
            None
        } else {
            let prior = run(case, &case.prior, None, &log);
            log.borrow_mut().clear();
            prior.mode
        };
        let got = run(case, &case.headers, first, &log);
        let name = &case.name;
        assert_eq!(got.code, case.code, "{name}: code");
        assert_eq!(got.message, case.message, "{name}: message");
        assert_eq!(
            got.user,
            case.user.as_ref().map(GoUser::user),
            "{name}: user"
        );
        assert_eq!(got.constraint, case.constraint, "{name}: constraint");
        let want = case.checks.as_deref().unwrap_or_default();
        assert_eq!(runs(log.borrow().as_slice()), runs(want), "{name}: checks");
    }
}
