//! The audit log: the apiserver's `audit.k8s.io/v1` events, at the
//! stages and levels the policy chooses. The same events as the real
//! kube-apiserver writes are compared in `access_real.rs`.

use std::time::{Duration, Instant};

use herald_server::AccessConfig;
use serde_json::Value;

use crate::fixture::{Cluster, Dir, dir, start_audited};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/metrics"]
  - level: Metadata
"#;

fn audited(d: &Dir) -> Cluster {
    start_audited(d, POLICY)
}

/// The log's events once it holds `n` (waiting up to 10 s).
fn events(d: &Dir, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(d.0.join("audit.log")).unwrap_or_default();
        let got: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} events, not {n}, after 10 s: {text}",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn requests_are_audited_as_the_apiserver_audits_them() {
    let d = dir("audit");
    let c = audited(&d);
    let bearer = |t: &str| format!("Authorization: Bearer {t}\r\nUser-Agent: audit-test/1\r\n");
    // Not logged (policy None).
    assert_eq!(c.raw_get("/healthz", b"").0, 200);
    // Allowed: RequestReceived and ResponseComplete, the ID in a header.
    let (code, head) = c.raw_get(
        "/api/v1/namespaces/a/pods?limit=5",
        bearer("bob-token").as_bytes(),
    );
    assert_eq!(code, 200);
    let e = events(&d, 2);
    assert_eq!(e[0]["stage"], "RequestReceived");
    assert_eq!(e[1]["stage"], "ResponseComplete");
    let id = e[0]["auditID"].as_str().unwrap();
    assert_eq!(e[1]["auditID"], id);
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("audit-id: {id}")),
        "{head}"
    );
    let done = &e[1];
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["verb"], "list");
    assert_eq!(done["requestURI"], "/api/v1/namespaces/a/pods?limit=5");
    assert_eq!(done["user"]["username"], "bob");
    assert_eq!(
        done["user"]["groups"],
        serde_json::json!(["devs", "qa", "system:authenticated"])
    );
    assert_eq!(done["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    assert_eq!(done["userAgent"], "audit-test/1");
    assert_eq!(
        done["objectRef"],
        serde_json::json!({"resource": "pods", "namespace": "a", "apiVersion": "v1"})
    );
    assert_eq!(
        done["responseStatus"],
        serde_json::json!({"metadata": {}, "code": 200})
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"], "allow",
        "{done}"
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/reason"],
        r#"RBAC: allowed by ClusterRoleBinding "devs-read-pods" of ClusterRole "pod-reader" to Group "devs""#
    );
    assert!(e[0].get("responseStatus").is_none() && e[0].get("annotations").is_none());
    // Forbidden: the 403's status, decision forbid.
    assert_eq!(
        c.raw_get(
            "/api/v1/namespaces/a/pods",
            bearer("alice-token").as_bytes()
        )
        .0,
        403
    );
    let e = events(&d, 4);
    let forbidden = &e[3];
    assert_eq!(forbidden["stage"], "ResponseComplete");
    assert_eq!(forbidden["responseStatus"]["code"], 403);
    assert_eq!(forbidden["responseStatus"]["reason"], "Forbidden");
    assert_eq!(forbidden["responseStatus"]["status"], "Failure");
    assert_eq!(
        forbidden["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    // Refused credentials: one ResponseStarted, no user.
    assert_eq!(
        c.raw_get("/api/v1/pods", bearer("forged").as_bytes()).0,
        401
    );
    let e = events(&d, 5);
    assert_eq!(e[4]["stage"], "ResponseStarted");
    assert_eq!(e[4]["user"], serde_json::json!({}));
    assert_eq!(
        e[4]["responseStatus"],
        serde_json::json!({"metadata": {}, "status": "Failure", "message": "Unauthorized",
                           "reason": "Unauthorized", "code": 401})
    );
    // A watch: received, started, and complete when it ends; the
    // client's Audit-ID names it.
    let (code, _) = c.raw_get(
        "/api/v1/pods?watch=1&timeoutSeconds=1",
        format!("{}Audit-ID: my-watch-1\r\n", bearer("bob-token")).as_bytes(),
    );
    assert_eq!(code, 200);
    let e = events(&d, 8);
    let stages: Vec<_> = e[5..8]
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert!(
        e[5..8]
            .iter()
            .all(|e| e["auditID"] == "my-watch-1" && e["verb"] == "watch")
    );
    // Counted.
    let metrics = c.get("/metrics", Some("root-token")).1;
    assert!(
        metrics.contains("herald_http_audit_events_total 8"),
        "{metrics}"
    );
    assert!(metrics.contains("herald_http_audit_events_dropped_total 0"));
}

#[test]
fn audit_flags_and_policies_are_checked_at_start() {
    let d = dir("audit-flags");
    let half = AccessConfig {
        audit_log_path: Some(d.0.join("audit.log")),
        ..AccessConfig::default()
    };
    assert!(half.audit().unwrap_err().contains("--audit-policy-file"));
    std::fs::write(
        d.0.join("bad.yaml"),
        "apiVersion: audit.k8s.io/v1\nkind: Policy\n",
    )
    .unwrap();
    let bad = AccessConfig {
        audit_policy_file: Some(d.0.join("bad.yaml")),
        ..half.clone()
    };
    let e = bad.audit().unwrap_err();
    assert!(e.contains("bad.yaml") && e.contains("no rules"), "{e}");
    std::fs::write(d.0.join("ok.yaml"), POLICY).unwrap();
    let unwritable = AccessConfig {
        audit_log_path: Some("/proc/herald-cannot-write-here/audit.log".into()),
        audit_policy_file: Some(d.0.join("ok.yaml")),
        ..AccessConfig::default()
    };
    assert!(unwritable.audit().unwrap_err().contains("--audit-log-path"));
}
