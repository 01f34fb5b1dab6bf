//! Access control end to end, in process: a server with a token file
//! and RBAC over in-memory roles and bindings (the same engines and
//! reflectors an etcd or apiserver source feeds), and over TLS with
//! client certificates (curl as the client). The same decisions against
//! the real kube-apiserver's are `access_real.rs`.

#[path = "access/audit.rs"]
mod audit;
#[path = "access/debug.rs"]
mod debug;
#[path = "access/fixture.rs"]
mod fixture;
#[path = "access/hostile.rs"]
mod hostile;
#[path = "access/limits.rs"]
mod limits;
#[path = "access/one_parse.rs"]
mod one_parse;
#[path = "support/proc.rs"]
mod proc;
mod support;

use std::io::{BufRead, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use fixture::*;

#[test]
fn credentials_are_checked_and_refusals_are_the_apiservers() {
    let d = dir("authn");
    let c = start(&d, None, false);
    let (code, body) = c.get("/api/v1/pods", None);
    assert_eq!(code, 401);
    assert_eq!(
        status(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    assert_eq!(c.get("/api/v1/pods", Some("wrong")).0, 401);
    // Health is answered whoever asks; metrics are not.
    assert_eq!(c.get("/healthz", None).0, 200);
    assert_eq!(c.get("/readyz", None).0, 200);
    let (code, body) = c.get("/metrics", Some("alice-token"));
    assert_eq!(code, 403);
    assert_eq!(
        status(&body)["message"],
        r#"forbidden: User "alice" cannot get path "/metrics""#
    );
    let (code, body) = c.get("/api/v1/namespaces/a/pods", Some("alice-token"));
    assert_eq!(code, 403);
    assert_eq!(
        status(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "a""#,
               "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403})
    );
    // The namespace is decided as the router will serve it: decoded.
    let (code, body) = c.get("/api/v1/namespaces/%61/pods", Some("alice-token"));
    assert_eq!(code, 403);
    assert!(body.contains(r#"in the namespace \"a\""#), "{body}");
    assert_eq!(
        c.get("/api/v1/namespaces/%61/pods", Some("bob-token")).0,
        200
    );
    // bob is in devs: pods everywhere, nothing else.
    assert_eq!(c.get("/api/v1/pods", Some("bob-token")).0, 200);
    assert_eq!(
        c.get("/api/v1/namespaces/b/pods/db-0", Some("bob-token")).0,
        200
    );
    let (code, body) = c.get(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        Some("bob-token"),
    );
    assert_eq!(code, 403, "{body}");
    // root is in system:masters.
    assert_eq!(c.get("/metrics", Some("root-token")).0, 200);
    let metrics = c.get("/metrics", Some("root-token")).1;
    let refused = |reason: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("herald_http_access_refused_requests_total")
                    && l.contains(&format!("reason=\"{reason}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .unwrap()
    };
    assert_eq!(refused("anonymous"), 1);
    assert_eq!(refused("token"), 1);
    assert_eq!(refused("forbidden"), 4);
}

#[test]
fn anonymous_requests_are_authorized_as_system_anonymous_when_allowed() {
    let d = dir("anon");
    let c = start(&d, None, true);
    let (code, body) = c.get("/api/v1/pods", None);
    assert_eq!(code, 403);
    assert_eq!(
        status(&body)["message"],
        r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope"#
    );
    // A bad token is never anonymous.
    assert_eq!(c.get("/api/v1/pods", Some("wrong")).0, 401);
    c.rbac.cluster_bindings.put_with(object(
        "",
        "anon",
        json!({
            "metadata": {"name": "anon"},
            "subjects": [{"kind": "Group", "name": "system:unauthenticated"}],
            "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
        }),
    ));
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.get("/api/v1/pods", None).0 != 200 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads a watch's events until it ends: (events, how it ended).
fn watch_until_end(
    addr: SocketAddr,
    path: &str,
    token: &str,
    on_open: impl FnOnce(),
) -> (Vec<Value>, Instant) {
    let mut r = proc::open_stream(addr, path, &format!("Authorization: Bearer {token}\r\n"));
    let mut line = String::new();
    let mut events = Vec::new();
    let mut on_open = Some(on_open);
    loop {
        // Chunked: a size line, then the chunk (whole JSON lines).
        line.clear();
        if r.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        let mut chunk = vec![0; size + 2];
        r.read_exact(&mut chunk).unwrap();
        for l in String::from_utf8_lossy(&chunk[..size]).lines() {
            events.push(serde_json::from_str::<Value>(l).unwrap());
        }
        if let Some(f) = on_open.take() {
            f();
        }
    }
    (events, Instant::now())
}

#[test]
fn a_binding_added_allows_and_removed_ends_the_watch_it_allowed() {
    let d = dir("revoke");
    let c = start(&d, None, false);
    let path = "/api/v1/namespaces/a/pods?watch=1";
    assert_eq!(c.get(path, Some("alice-token")).0, 403);
    let rv = c.rbac.bindings.put_with(object(
        "a",
        "alice-pods",
        json!({
            "metadata": {"name": "alice-pods", "namespace": "a"},
            "subjects": [{"kind": "User", "name": "alice"}],
            "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
        }),
    ));
    let granted_in = c.until("/api/v1/namespaces/a/pods", "alice-token", 200);
    eprintln!("a new RoleBinding allowed within {granted_in:?}");
    // In its namespace only.
    assert_eq!(
        c.get("/api/v1/namespaces/b/pods", Some("alice-token")).0,
        403
    );
    let revoked_at = std::cell::Cell::new(None);
    let (events, ended) = watch_until_end(c.addr, path, "alice-token", || {
        // The first chunk (the initial ADDED) came: revoke.
        let _ = rv;
        c.rbac
            .bindings
            .delete_with("a/alice-pods", |last, _| last.clone());
        revoked_at.set(Some(Instant::now()));
    });
    let took = ended - revoked_at.get().unwrap();
    eprintln!("a removed RoleBinding ended the watch within {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(events[0]["type"], "ADDED");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "ERROR");
    assert_eq!(last["object"]["code"], 403);
    assert_eq!(
        last["object"]["message"],
        r#"pods is forbidden: User "alice" cannot watch resource "pods" in API group "" in the namespace "a""#
    );
    let metrics = c.get("/metrics", Some("root-token")).1;
    assert!(
        metrics.contains("herald_http_watches_revoked_total{resource=\"pods\"} 1"),
        "{metrics}"
    );
    // Later changes reach nobody through the ended watch; a new one is refused.
    c.pods.put_with(pod("a", "web-1"));
    assert_eq!(c.get(path, Some("alice-token")).0, 403);
    drop(c.server);
}

mod tls {
    use std::process::Command;

    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

    use super::*;

    fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
    }

    /// Writes `name.crt` and `name.key`: a client certificate for `cn` in
    /// group `o`, signed by `ca`.
    fn client(d: &Dir, name: &str, ca: &CertifiedIssuer<'static, KeyPair>, cn: &str, o: &str) {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.distinguished_name.push(DnType::OrganizationName, o);
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, ca).unwrap();
        std::fs::write(d.0.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(d.0.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }

    /// Writes the server's `tls.crt`/`tls.key` (self-signed, for
    /// 127.0.0.1).
    fn serving(d: &Dir) -> String {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(d.0.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(d.0.join("tls.key"), key.serialize_pem()).unwrap();
        cert.pem()
    }

    /// curl over TLS trusting `ca_pem`: (status, body).
    fn curl(c: &Cluster, d: &Dir, ca_pem: &str, path: &str, extra: &[&str]) -> (u16, String) {
        let ca = d.0.join(format!("trust-{}.crt", ca_pem.len() % 997));
        std::fs::write(&ca, ca_pem).unwrap();
        let out = Command::new("curl")
            .args(["-s", "--max-time", "10", "-w", "\n%{http_code}", "--cacert"])
            .arg(&ca)
            .args(extra)
            .arg(format!("https://{}{path}", c.addr))
            .current_dir(&d.0)
            .output()
            .expect("curl (on every image this project runs on)");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    #[test]
    fn client_certificates_of_the_ca_name_users_and_others_are_refused() {
        let d = dir("tls");
        let clients = ca("clients");
        std::fs::write(d.0.join("ca.crt"), clients.pem()).unwrap();
        client(&d, "carol", &clients, "carol", "devs");
        // Another CA's certificate claiming system:masters.
        client(&d, "mallory", &ca("elsewhere"), "mallory", "system:masters");
        let server_pem = serving(&d);
        let c = start(
            &d,
            Some((d.0.join("tls.crt"), d.0.join("tls.key"), d.0.join("ca.crt"))),
            false,
        );
        let carol = ["--cert", "carol.crt", "--key", "carol.key"];
        assert_eq!(curl(&c, &d, &server_pem, "/api/v1/pods", &carol).0, 200);
        let (code, body) = curl(&c, &d, &server_pem, "/api/v1/secrets", &carol);
        assert_eq!(code, 403, "{body}");
        assert!(
            body.contains(r#"User \"carol\" cannot list resource \"secrets\""#),
            "{body}"
        );
        let mallory = ["--cert", "mallory.crt", "--key", "mallory.key"];
        let (code, body) = curl(&c, &d, &server_pem, "/api/v1/pods", &mallory);
        assert_eq!(code, 401, "{body}");
        // No certificate: the token decides; neither: 401.
        let bearer = ["-H", "Authorization: Bearer bob-token"];
        assert_eq!(curl(&c, &d, &server_pem, "/api/v1/pods", &bearer).0, 200);
        assert_eq!(curl(&c, &d, &server_pem, "/api/v1/pods", &[]).0, 401);
        // Plain HTTP on the TLS port: no answer, counted.
        let plain = c.get("/healthz", None);
        assert_ne!(plain.0, 200);
        let metrics = curl(
            &c,
            &d,
            &server_pem,
            "/metrics",
            &["-H", "Authorization: Bearer root-token"],
        )
        .1;
        assert!(
            metrics
                .contains("herald_http_access_refused_requests_total{reason=\"tls_handshake\"} 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("herald_http_access_refused_requests_total{reason=\"certificate\"} 1"),
            "{metrics}"
        );
    }

    #[test]
    fn a_new_serving_certificate_serves_new_connections() {
        let d = dir("tls-reload");
        let clients = ca("clients");
        std::fs::write(d.0.join("ca.crt"), clients.pem()).unwrap();
        let first = serving(&d);
        let c = start(
            &d,
            Some((d.0.join("tls.crt"), d.0.join("tls.key"), d.0.join("ca.crt"))),
            false,
        );
        let bearer = ["-H", "Authorization: Bearer bob-token"];
        assert_eq!(curl(&c, &d, &first, "/api/v1/pods", &bearer).0, 200);
        let second = serving(&d);
        let start = Instant::now();
        while curl(&c, &d, &second, "/api/v1/pods", &bearer).0 != 200 {
            assert!(
                start.elapsed() < Duration::from_secs(25),
                "the new certificate not served within 25 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("a new certificate served within {:?}", start.elapsed());
        // The old one is no longer.
        assert_eq!(curl(&c, &d, &first, "/api/v1/pods", &bearer).0, 0);
        // A broken pair is refused; the current one keeps serving.
        std::fs::write(d.0.join("tls.key"), "not a key").unwrap();
        std::thread::sleep(Duration::from_secs(11));
        assert_eq!(curl(&c, &d, &second, "/api/v1/pods", &bearer).0, 200);
        let metrics = curl(
            &c,
            &d,
            &second,
            "/metrics",
            &["-H", "Authorization: Bearer root-token"],
        )
        .1;
        // One failure per reload while the key is broken (one or two in
        // these 11 s).
        let failures = metrics
            .lines()
            .find_map(|l| l.strip_prefix("herald_http_tls_reload_failures_total "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        assert!(failures.is_some_and(|n| n >= 1), "{metrics}");
    }
}
