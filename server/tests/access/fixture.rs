//! The in-process cluster the access tests run against: a server with a
//! token file and RBAC over in-memory roles and bindings (the same
//! engines and reflectors an etcd or apiserver source feeds), optionally
//! over TLS.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herald::{MemorySource, Object};
use herald_kube::ResourceInfo;
use herald_kube::builtin::{REGISTRY, builtin};
use herald_server::{AccessConfig, Server, ServerConfig, resource_on};
use serde_json::{Value, json};

pub(crate) const TOKENS: &str = "root-token,root,uid-root,system:masters\n\
alice-token,alice,uid-alice,\n\
bob-token,bob,uid-bob,\"devs,qa\"\n";

/// The cluster's RBAC objects, each kind in a store of its own.
pub(crate) struct Rbac {
    pub(crate) cluster_roles: MemorySource,
    pub(crate) roles: MemorySource,
    pub(crate) cluster_bindings: MemorySource,
    pub(crate) bindings: MemorySource,
}

pub(crate) fn object(
    ns: &str,
    name: &str,
    v: Value,
) -> impl FnOnce(herald::ResourceVersion) -> Object {
    let (ns, name) = (ns.to_owned(), name.to_owned());
    move |_| {
        Object::builder(&ns, &name)
            .payload(serde_json::to_vec(&v).unwrap())
            .build()
    }
}

pub(crate) fn pod(ns: &str, name: &str) -> impl FnOnce(herald::ResourceVersion) -> Object {
    let (ns2, name2) = (ns.to_owned(), name.to_owned());
    move |rv| {
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name2, "namespace": ns2, "resourceVersion": rv.get().to_string()}});
        Object::builder(&ns2, &name2)
            .payload(serde_json::to_vec(&v).unwrap())
            .build()
    }
}

pub(crate) struct Dir(pub(crate) PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("herald-access-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

pub(crate) struct Cluster {
    pub(crate) rbac: Rbac,
    pub(crate) pods: MemorySource,
    pub(crate) server: Server,
    pub(crate) addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

/// A TLS serving pair and client CA: (certificate, key, CA).
pub(crate) type Tls = (PathBuf, PathBuf, PathBuf);

/// A cluster with the default server configuration.
pub(crate) fn start(d: &Dir, tls: Option<Tls>, anonymous: bool) -> Cluster {
    start_with(
        d,
        tls,
        ServerConfig::default(),
        AccessConfig {
            anonymous,
            ..AccessConfig::default()
        },
    )
}

/// A cluster whose audit log (`audit.log` in `d`) follows `policy`.
pub(crate) fn start_audited(d: &Dir, policy: &str) -> Cluster {
    std::fs::write(d.0.join("policy.yaml"), policy).unwrap();
    start_with(
        d,
        None,
        ServerConfig::default(),
        AccessConfig {
            audit_log_path: Some(d.0.join("audit.log")),
            audit_policy_file: Some(d.0.join("policy.yaml")),
            ..AccessConfig::default()
        },
    )
}

/// A cluster serving with `server_config`, its access configured by
/// `access` plus the token file (and `tls`, if any).
pub(crate) fn start_with(
    d: &Dir,
    tls: Option<Tls>,
    server_config: ServerConfig,
    access: AccessConfig,
) -> Cluster {
    std::fs::write(d.0.join("tokens.csv"), TOKENS).unwrap();
    let rbac = Rbac {
        cluster_roles: MemorySource::new(),
        roles: MemorySource::new(),
        cluster_bindings: MemorySource::new(),
        bindings: MemorySource::new(),
    };
    rbac.cluster_roles.put_with(object("", "pod-reader", json!({
        "metadata": {"name": "pod-reader"},
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}],
    })));
    rbac.cluster_bindings.put_with(object(
        "",
        "devs-read-pods",
        json!({
            "metadata": {"name": "devs-read-pods"},
            "subjects": [{"kind": "Group", "name": "devs"}],
            "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
        }),
    ));
    let pods = MemorySource::new();
    pods.put_with(pod("a", "web-0"));
    pods.put_with(pod("b", "db-0"));
    let info = |name: &str| builtin(name, REGISTRY).unwrap().info;
    let resources = vec![
        resource_on(ResourceInfo::pods(), Arc::new(pods.clone())).unwrap(),
        resource_on(
            info("clusterroles.rbac.authorization.k8s.io"),
            Arc::new(rbac.cluster_roles.clone()),
        )
        .unwrap(),
        resource_on(
            info("roles.rbac.authorization.k8s.io"),
            Arc::new(rbac.roles.clone()),
        )
        .unwrap(),
        resource_on(
            info("clusterrolebindings.rbac.authorization.k8s.io"),
            Arc::new(rbac.cluster_bindings.clone()),
        )
        .unwrap(),
        resource_on(
            info("rolebindings.rbac.authorization.k8s.io"),
            Arc::new(rbac.bindings.clone()),
        )
        .unwrap(),
    ];
    let server = Server::new(resources, server_config);
    let mut config = AccessConfig {
        token_auth_file: Some(d.0.join("tokens.csv")),
        ..access
    };
    if let Some((cert, key, ca)) = &tls {
        config.tls_cert_file = Some(cert.clone());
        config.tls_private_key_file = Some(key.clone());
        config.client_ca_file = Some(ca.clone());
    }
    let access = config.build(&server, None).unwrap().unwrap();
    assert!(server.set_access(access));
    if let Some(log) = config.audit().unwrap() {
        assert!(server.set_audit(log));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = server.clone();
    let tls = config.tls().unwrap();
    runtime.spawn(async move {
        let _ = match tls {
            Some(tls) => {
                serving
                    .serve_tls(listener, tls, std::future::pending())
                    .await
            }
            None => serving.serve(listener, std::future::pending()).await,
        };
    });
    let c = Cluster {
        rbac,
        pods,
        server,
        addr,
        _runtime: runtime,
    };
    // Ready: the engines have listed and the RBAC snapshot exists.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ready = || match &config.tls_cert_file {
        None => c.get("/readyz", None).0 == 200,
        Some(_) => std::process::Command::new("curl")
            .args(["-sfk", "-o", "/dev/null", "--max-time", "5"])
            .arg(format!("https://{}/readyz", c.addr))
            .status()
            .is_ok_and(|s| s.success()),
    };
    while !ready() {
        assert!(Instant::now() < deadline, "not ready within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    c
}

impl Cluster {
    /// A plain GET: (status, body).
    pub(crate) fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        // A TLS port may have closed already (the handshake failed).
        let _ = write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        );
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let out = String::from_utf8_lossy(&out).to_string();
        // Not HTTP (a TLS alert): 0.
        let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        let body = out
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (code, body)
    }

    /// A HEAD as `token`: (status, head).
    pub(crate) fn raw_head(&self, path: &str, token: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = write!(
            s,
            "HEAD {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let out = String::from_utf8_lossy(&out).to_string();
        let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        (code, out)
    }

    /// A GET with `headers` (raw bytes): (status, head). A connection the
    /// server closed without an answer is status 0.
    pub(crate) fn raw_get(&self, path: &str, headers: &[u8]) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n").into_bytes();
        req.extend_from_slice(headers);
        req.extend_from_slice(b"Connection: close\r\n\r\n");
        // The server may answer and close before it has read all of a huge
        // request.
        let _ = s.write_all(&req);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let out = String::from_utf8_lossy(&out).to_string();
        let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        (code, out.split("\r\n\r\n").next().unwrap_or("").to_owned())
    }

    /// Polls `path` as `token` until it answers `code` (RBAC changes take
    /// a rebuild to show).
    pub(crate) fn until(&self, path: &str, token: &str, code: u16) -> Duration {
        let start = Instant::now();
        loop {
            if self.get(path, Some(token)).0 == code {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{path}: not {code} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

pub(crate) fn status(body: &str) -> Value {
    // A chunked body's first chunk, or the whole body.
    let json = body.lines().find(|l| l.starts_with('{')).unwrap_or(body);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {body}"))
}
