//! Worked examples over Herald's own RBAC snapshot (the golden table,
//! `golden_tests`, covers every mode and message against the real
//! filter).

use std::cell::RefCell;
use std::future::ready;

use serde_json::json;

use super::golden_tests::now;
use super::{Impersonated, Mode, Refusal, Wanted, impersonate};
use crate::rbac::{Rbac, RbacBuilder};
use crate::request::RequestInfo;
use crate::user::User;

fn bytes(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// `alice` may use the legacy verb on `bob` only; `carol` may list pods
/// as anyone through user-info, impersonating users and groups.
fn rbac() -> Rbac {
    let mut b = RbacBuilder::new();
    b.cluster_role(&bytes(json!({
        "metadata": {"name": "legacy-bob"},
        "rules": [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]}],
    })))
    .cluster_role(&bytes(json!({
        "metadata": {"name": "user-info-lister"},
        "rules": [
            {"verbs": ["impersonate-on:user-info:list"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["impersonate:user-info"], "apiGroups": ["authentication.k8s.io"], "resources": ["users", "groups"]},
        ],
    })))
    .cluster_role_binding(&bytes(json!({
        "metadata": {"name": "alice"},
        "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "ClusterRole", "name": "legacy-bob"},
    })))
    .cluster_role_binding(&bytes(json!({
        "metadata": {"name": "carol"},
        "subjects": [{"kind": "User", "name": "carol"}],
        "roleRef": {"kind": "ClusterRole", "name": "user-info-lister"},
    })));
    b.build()
}

fn user(name: &str) -> User {
    User {
        name: name.into(),
        groups: vec!["system:authenticated".into()],
        ..User::default()
    }
}

fn pods(verb: &str) -> RequestInfo {
    RequestInfo {
        is_resource: true,
        path: "/api/v1/namespaces/ns/pods".into(),
        verb: verb.into(),
        api_version: "v1".into(),
        namespace: "ns".into(),
        resource: "pods".into(),
        ..RequestInfo::default()
    }
}

fn wanted(headers: &[(&str, &str)]) -> Wanted {
    Wanted::from_headers(headers.iter().map(|(n, v)| (*n, v.as_bytes())))
        .unwrap()
        .unwrap()
}

fn decide(
    rbac: &Rbac,
    wanted: &Wanted,
    requester: &User,
    request: &RequestInfo,
    first: Option<Mode>,
) -> Result<Impersonated, Refusal> {
    now(impersonate(wanted, requester, request, first, |u, a| {
        ready(Ok(rbac.authorize(&u, &a)))
    }))
}

#[test]
fn legacy_impersonation_through_rbac() {
    let rbac = rbac();
    let bob = wanted(&[("Impersonate-User", "bob")]);
    let ok = decide(&rbac, &bob, &user("alice"), &pods("list"), None).unwrap();
    assert_eq!((ok.mode, ok.constraint), (Mode::Legacy, ""));
    assert_eq!(ok.user, user("bob"));

    // Refused: the first mode that failed is user-info's
    // `impersonate-on`; with legacy remembered, legacy's own 403.
    let eve = wanted(&[("Impersonate-User", "eve")]);
    let no = decide(&rbac, &eve, &user("alice"), &pods("list"), None).unwrap_err();
    assert_eq!((no.error.code, no.error.reason), (403, "Forbidden"));
    assert_eq!(
        no.error.message,
        r#"pods is forbidden: User "alice" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "ns""#
    );
    let no = decide(
        &rbac,
        &eve,
        &user("alice"),
        &pods("list"),
        Some(Mode::Legacy),
    )
    .unwrap_err();
    assert_eq!(
        no.error.message,
        r#"users "eve" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(no.reason, r#"impersonate users "eve""#);
    assert_eq!(
        no.error.to_status()["details"],
        json!({"name": "eve", "kind": "users"})
    );
}

#[test]
fn user_info_impersonation_through_rbac() {
    let rbac = rbac();
    let w = wanted(&[("Impersonate-User", "dave"), ("Impersonate-Group", "ops")]);
    let ok = decide(&rbac, &w, &user("carol"), &pods("list"), None).unwrap();
    assert_eq!(
        (ok.mode, ok.constraint),
        (Mode::UserInfo, "impersonate:user-info")
    );
    assert_eq!(ok.user.groups, ["ops", "system:authenticated"]);
    // Only for lists: a create is refused on `impersonate-on`, legacy
    // being no help.
    let no = decide(&rbac, &w, &user("carol"), &pods("create"), None).unwrap_err();
    assert_eq!(
        no.error.message,
        r#"pods is forbidden: User "carol" cannot impersonate-on:user-info:create resource "pods" in API group "" in the namespace "ns""#
    );
    // system:masters never, whatever RBAC says.
    let m = wanted(&[
        ("Impersonate-User", "dave"),
        ("Impersonate-Group", "system:masters"),
    ]);
    let no = decide(&rbac, &m, &user("carol"), &pods("list"), None).unwrap_err();
    assert_eq!(
        no.error.message,
        r#"groups.authentication.k8s.io "system:masters" is forbidden: User "carol" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope: impersonating the system:masters group is not allowed"#
    );
}

#[test]
fn the_associated_node_mode_shows_the_authorizer_the_extra_keys_only() {
    let sa = User {
        name: "system:serviceaccount:kube-system:agent".into(),
        extra: [
            ("authentication.kubernetes.io/node-name", "n1"),
            ("authentication.kubernetes.io/pod-name", "agent-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), vec![v.to_owned()]))
        .collect(),
        ..User::default()
    };
    let seen = RefCell::new(Vec::new());
    let w = wanted(&[("Impersonate-User", "system:node:n1")]);
    let ok = now(impersonate(&w, &sa, &pods("get"), None, |u, a| {
        seen.borrow_mut().push((u, a.verb, a.name));
        ready(Ok(crate::rbac::Decision {
            allowed: true,
            reason: String::new(),
        }))
    }))
    .unwrap();
    assert_eq!(ok.mode, Mode::AssociatedNode);
    assert_eq!(ok.user.name, "system:node:n1");
    assert_eq!(ok.user.groups, ["system:nodes", "system:authenticated"]);
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].1, "impersonate:associated-node");
    assert_eq!(seen[1].2, "*");
    for (u, _, _) in &seen {
        assert_eq!(u.name, sa.name);
        let keys: Vec<_> = u.extra.iter().collect();
        assert_eq!(
            keys,
            [(
                &"authentication.kubernetes.io/associated-node-keys".to_owned(),
                &vec![
                    "authentication.kubernetes.io/node-name".to_owned(),
                    "authentication.kubernetes.io/pod-name".to_owned()
                ]
            )]
        );
    }
}

#[test]
fn an_authorizer_failure_is_the_403s_reason() {
    let w = wanted(&[("Impersonate-User", "bob")]);
    let no = now(impersonate(
        &w,
        &user("alice"),
        &pods("get"),
        None,
        |_, _| ready(Err("webhook: timeout".to_owned())),
    ))
    .unwrap_err();
    assert_eq!(
        no.error.message,
        r#"pods is forbidden: User "alice" cannot impersonate-on:user-info:get resource "pods" in API group "" in the namespace "ns": webhook: timeout"#
    );
    assert_eq!(
        no.reason,
        r#"impersonate-on:user-info:get pods "": webhook: timeout"#
    );
}

#[test]
fn modes_are_named_as_the_apiserver_names_them() {
    let names: Vec<_> = Mode::ALL.iter().map(|m| m.name()).collect();
    assert_eq!(
        names,
        [
            "associated-node",
            "arbitrary-node",
            "serviceaccount",
            "user-info",
            "legacy"
        ]
    );
    assert_eq!(
        Mode::ServiceAccount.constraint(),
        "impersonate:serviceaccount"
    );
    assert_eq!(Mode::Legacy.verb(), "impersonate");
}
