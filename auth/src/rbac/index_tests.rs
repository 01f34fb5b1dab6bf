use serde_json::json;

use super::*;

fn user(name: &str, groups: &[&str]) -> User {
    User {
        name: name.into(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..User::default()
    }
}

fn req(path: &str, query: &str) -> RequestInfo {
    RequestInfo::new("GET", path, &herald_kube::Query::parse(Some(query)))
}

fn bytes(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

fn cluster() -> Rbac {
    let mut b = RbacBuilder::new();
    b.cluster_role(&bytes(json!({
        "metadata": {"name": "pod-reader"},
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}],
    })))
    .cluster_role(&bytes(json!({"metadata": {"name": "empty"}, "rules": null})))
    .role(&bytes(json!({
        "metadata": {"name": "secret-one", "namespace": "a"},
        "rules": [{"verbs": ["get", "watch"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["token"]}],
    })))
    .cluster_role_binding(&bytes(json!({
        "metadata": {"name": "devs-read-pods"},
        "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"kind": "ClusterRole", "name": "pod-reader", "apiGroup": "rbac.authorization.k8s.io"},
    })))
    .role_binding(&bytes(json!({
        "metadata": {"name": "alice-pods", "namespace": "b"},
        "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
    })))
    .role_binding(&bytes(json!({
        "metadata": {"name": "sa-secret", "namespace": "a"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot"}],
        "roleRef": {"kind": "Role", "name": "secret-one"},
    })))
    .role_binding(&bytes(json!({
        "metadata": {"name": "broken", "namespace": "c"},
        "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "ClusterRole", "name": "gone"},
    })))
    .role_binding(b"{not json");
    b.build()
}

#[test]
fn a_group_binding_allows_everywhere_and_names_itself() {
    let rbac = cluster();
    let d = rbac.authorize(&user("bob", &["devs"]), &req("/api/v1/pods", "watch=1"));
    assert_eq!(
        d,
        Decision {
            allowed: true,
            reason: r#"RBAC: allowed by ClusterRoleBinding "devs-read-pods" of ClusterRole "pod-reader" to Group "devs""#.into(),
        }
    );
    assert!(
        !rbac
            .authorize(&user("bob", &["devs"]), &req("/api/v1/secrets", ""))
            .allowed
    );
    assert!(
        !rbac
            .authorize(&user("bob", &[]), &req("/api/v1/pods", ""))
            .allowed
    );
    assert_eq!(rbac.undecodable(), 1);
}

#[test]
fn a_role_binding_allows_in_its_namespace_only() {
    let rbac = cluster();
    let alice = user("alice", &[]);
    let d = rbac.authorize(&alice, &req("/api/v1/namespaces/b/pods", ""));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "alice-pods/b" of ClusterRole "pod-reader" to User "alice""#
    );
    assert!(
        !rbac
            .authorize(&alice, &req("/api/v1/namespaces/a/pods", ""))
            .allowed
    );
    // Every namespace is the cluster scope: a RoleBinding never grants it.
    assert!(!rbac.authorize(&alice, &req("/api/v1/pods", "")).allowed);
}

#[test]
fn service_accounts_and_resource_names() {
    let rbac = cluster();
    let bot = user("system:serviceaccount:a:bot", &["system:serviceaccounts"]);
    let one = req("/api/v1/namespaces/a/secrets/token", "");
    let d = rbac.authorize(&bot, &one);
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "sa-secret/a" of Role "secret-one" to ServiceAccount "bot/a""#
    );
    assert!(
        !rbac
            .authorize(&bot, &req("/api/v1/namespaces/a/secrets", "watch=1"))
            .allowed
    );
    assert!(
        rbac.authorize(
            &bot,
            &req(
                "/api/v1/namespaces/a/secrets",
                "watch=1&fieldSelector=metadata.name=token"
            )
        )
        .allowed
    );
    assert!(
        !rbac
            .authorize(&user("system:serviceaccount:b:bot", &[]), &one)
            .allowed
    );
}

#[test]
fn a_missing_role_is_the_reason_of_a_refusal() {
    let rbac = cluster();
    let d = rbac.authorize(&user("alice", &[]), &req("/api/v1/namespaces/c/pods", ""));
    assert_eq!(
        d,
        Decision {
            allowed: false,
            reason: r#"rbac: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#.into(),
        }
    );
}

#[test]
fn masters_are_allowed_everything_first() {
    let d = Rbac::default().authorize(&user("root", &[MASTERS]), &req("/metrics", ""));
    assert_eq!(
        d,
        Decision {
            allowed: true,
            reason: String::new()
        }
    );
}
