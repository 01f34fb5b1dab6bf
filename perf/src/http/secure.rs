//! http-fanout's `herald-server-tls`: the same server and clients over TLS,
//! every watch request authenticated with a bearer token of the server's
//! token file and authorized by RBAC (a ClusterRoleBinding of the
//! token's group to a role that may watch pods, among the cluster's other
//! roles), as a server in front of a real cluster runs. The parent makes
//! the material (a serving certificate for 127.0.0.1, its key, the token
//! file) in a directory of its own and hands the child its path.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::Context as _;
use herald::{MemorySource, Object};
use herald_kube::builtin::{REGISTRY, builtin};
use herald_server::{Resource, resource_on};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The clients' bearer token.
pub const TOKEN: &str = "perf-watcher-token";
/// The token's group, bound to a role that may watch pods.
const GROUP: &str = "perf-watchers";

/// The TLS material and the token file, in a directory removed on drop.
#[derive(Debug)]
pub struct Material {
    dir: PathBuf,
    cert_pem: String,
}

impl Material {
    /// Makes them in a new directory.
    pub fn make() -> anyhow::Result<Material> {
        let dir = std::env::temp_dir().join(format!(
            "herald-perf-tls-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        let key = rcgen::KeyPair::generate()?;
        let cert =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.self_signed(&key)?;
        std::fs::write(dir.join("tls.crt"), cert.pem())?;
        std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
        // Other users beside the watchers' (a token file of some size).
        let mut tokens = format!("{TOKEN},perf-watcher,uid-perf,{GROUP}\n");
        for i in 0..1_000 {
            tokens.push_str(&format!("token-{i},user-{i},uid-{i},team-{}\n", i % 50));
        }
        std::fs::write(dir.join("tokens.csv"), tokens)?;
        Ok(Material {
            dir,
            cert_pem: cert.pem(),
        })
    }

    /// Its directory (the child's `--tls` argument).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A connector that trusts the serving certificate.
    pub fn connector(&self) -> anyhow::Result<tokio_rustls::TlsConnector> {
        let mut roots = tokio_rustls::rustls::RootCertStore::empty();
        for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(self.cert_pem.as_bytes()) {
            roots.add(cert.context("the serving certificate")?)?;
        }
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
    }
}

impl Drop for Material {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TLS handshake with the server on 127.0.0.1.
pub async fn handshake(
    tls: &tokio_rustls::TlsConnector,
    stream: TcpStream,
) -> anyhow::Result<TlsStream<TcpStream>> {
    let name = rustls_pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    tls.connect(name, stream).await.context("TLS handshake")
}

/// The child's RBAC resources: the four kinds, in memory, holding a role
/// that may watch pods bound to the watchers' group, and 200 other roles
/// and bindings (a cluster's RBAC is not empty).
pub fn rbac_resources() -> anyhow::Result<Vec<Resource>> {
    let store = |objects: Vec<(String, String, serde_json::Value)>| {
        let source = MemorySource::new();
        for (ns, name, v) in objects {
            source.put_with(move |_| {
                Object::builder(&ns, &name)
                    .payload(serde_json::to_vec(&v).unwrap_or_default())
                    .build()
            });
        }
        source
    };
    let role = |name: &str, resource: &str| {
        serde_json::json!({"metadata": {"name": name}, "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": [resource]}]})
    };
    let binding = |name: &str, group: &str, role: &str| {
        serde_json::json!({"metadata": {"name": name},
            "subjects": [{"kind": "Group", "name": group}],
            "roleRef": {"kind": "ClusterRole", "name": role}})
    };
    let mut roles = vec![(
        String::new(),
        "pod-watcher".to_owned(),
        role("pod-watcher", "pods"),
    )];
    let mut bindings = vec![(
        String::new(),
        "perf-watchers".to_owned(),
        binding("perf-watchers", GROUP, "pod-watcher"),
    )];
    for i in 0..100 {
        let name = format!("team-{i}-configmaps");
        roles.push((String::new(), name.clone(), role(&name, "configmaps")));
        bindings.push((
            String::new(),
            name.clone(),
            binding(&name, &format!("team-{}", i % 50), &name),
        ));
    }
    let info = |name: &str| {
        builtin(name, REGISTRY)
            .map(|b| b.info)
            .with_context(|| format!("{name}: not a built-in resource"))
    };
    let on = |name: &str, source: MemorySource| -> anyhow::Result<Resource> {
        resource_on(info(name)?, Arc::new(source)).map_err(|e| anyhow::anyhow!("{name}: {e}"))
    };
    Ok(vec![
        on("clusterroles.rbac.authorization.k8s.io", store(roles))?,
        on("roles.rbac.authorization.k8s.io", store(vec![]))?,
        on(
            "clusterrolebindings.rbac.authorization.k8s.io",
            store(bindings),
        )?,
        on("rolebindings.rbac.authorization.k8s.io", store(vec![]))?,
    ])
}

/// A watch connection: plain, or over TLS.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
