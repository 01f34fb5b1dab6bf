//! Hostile input on the access surfaces: oversized, malformed and
//! repeated credentials, an oversized `Audit-ID`, access control set
//! twice, and TLS handshakes opened and never finished. Each is refused
//! or bounded, and the server serves on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use herald_server::{AccessConfig, ServerConfig};

use crate::fixture::{dir, start_audited, start_with};

#[test]
fn hostile_credentials_are_refused_and_the_server_serves_on() {
    let d = dir("hostile-creds");
    let c = start_audited(
        &d,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n",
    );
    let pods = "/api/v1/pods";
    let bearer = |t: &[u8]| [b"Authorization: Bearer ".as_slice(), t, b"\r\n"].concat();
    // 1 MiB of token: within Go's head limit (1 MiB and 4 KiB), so read
    // and refused (401), as the apiserver does; past the limit, 431.
    let (code, _) = c.raw_get(pods, &bearer(&vec![b'a'; (1 << 20) - 200]));
    assert_eq!(code, 401, "a 1 MiB token");
    let (code, _) = c.raw_get(pods, &bearer(&vec![b'a'; 2 << 20]));
    assert!(code == 431 || code == 0, "past the head limit: {code}");
    // 60 KB of garbage, a JWT of three 20 KB parts, bytes that are not
    // UTF-8, a scheme with no token: 401 each.
    let jwt = ["e".repeat(20_000), "f".repeat(20_000), "g".repeat(20_000)].join(".");
    for token in [
        "x".repeat(60_000).into_bytes(),
        jwt.into_bytes(),
        vec![0xff, 0xfe, b'a', 0x80],
        b" ".repeat(5_000),
    ] {
        assert_eq!(c.raw_get(pods, &bearer(&token)).0, 401);
    }
    // 90 Authorization headers: the first decides, as Go's Header.Get;
    // 200 headers are past hyper's limit of 100: 431.
    let mut many = bearer(b"bob-token");
    for i in 0..89 {
        many.extend(bearer(format!("forged-{i}").as_bytes()));
    }
    assert_eq!(c.raw_get(pods, &many).0, 200);
    for i in 89..199 {
        many.extend(bearer(format!("forged-{i}").as_bytes()));
    }
    assert_eq!(c.raw_get(pods, &many).0, 431);
    let mut many = bearer(b"forged");
    many.extend(bearer(b"bob-token"));
    assert_eq!(c.raw_get(pods, &many).0, 401);
    // An Audit-ID too long to take: the request gets an ID of its own.
    let long_id = format!("Audit-ID: {}\r\n", "i".repeat(10_000));
    let (code, head) = c.raw_get(pods, &[bearer(b"bob-token"), long_id.into_bytes()].concat());
    assert_eq!(code, 200);
    let id = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("audit-id: ")
                .map(str::to_owned)
        })
        .expect("an Audit-Id header");
    assert_eq!(id.len(), 36, "{id}");
    // Access control and the audit log are set once.
    let again = AccessConfig {
        token_auth_file: Some(d.0.join("tokens.csv")),
        ..AccessConfig::default()
    };
    assert!(
        !c.server
            .set_access(again.build(&c.server, None).unwrap().unwrap())
    );
    let audit_again = AccessConfig {
        audit_log_path: Some(d.0.join("audit-2.log")),
        audit_policy_file: Some(d.0.join("policy.yaml")),
        ..AccessConfig::default()
    };
    assert!(!c.server.set_audit(audit_again.audit().unwrap().unwrap()));
    // Served on: ready, and a correct list.
    assert_eq!(c.get("/readyz", None).0, 200);
    let (code, body) = c.get(pods, Some("bob-token"));
    assert_eq!(code, 200);
    assert!(body.contains("web-0") && body.contains("db-0"), "{body}");
}

#[test]
fn tls_handshakes_never_finished_are_dropped_within_the_handshake_timeout() {
    let d = dir("hostile-tls");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(d.0.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(d.0.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(d.0.join("ca.crt"), cert.pem()).unwrap();
    let c = start_with(
        &d,
        Some((d.0.join("tls.crt"), d.0.join("tls.key"), d.0.join("ca.crt"))),
        ServerConfig::default(),
        AccessConfig::default(),
    );
    // 300 connections that never say a word, and 50 that send a third of
    // a ClientHello.
    let mut silent: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(c.addr).unwrap())
        .collect();
    for _ in 0..50 {
        let mut s = TcpStream::connect(c.addr).unwrap();
        s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc])
            .unwrap();
        silent.push(s);
    }
    let opened = Instant::now();
    // Meanwhile the server serves.
    let curl = |path: &str| {
        std::process::Command::new("curl")
            .args([
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "5",
            ])
            .args(["-H", "Authorization: Bearer bob-token"])
            .arg(format!("https://{}{path}", c.addr))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default()
    };
    assert_eq!(curl("/readyz"), "200");
    assert_eq!(curl("/api/v1/pods"), "200");
    // Each is closed by the server within its 10 s (and a little).
    for s in &mut silent {
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut buf = [0u8; 64];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                // An alert for the partial hello.
                Ok(_) => continue,
            }
        }
    }
    let took = opened.elapsed();
    eprintln!("350 unfinished TLS handshakes closed by the server within {took:?}");
    assert!(took < Duration::from_secs(14), "{took:?}");
    assert_eq!(curl("/api/v1/pods"), "200");
}
