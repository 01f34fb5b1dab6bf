//! The HTTPS client that POSTs a `ConversionReview` to a CRD's webhook:
//! one connection per review (HTTP/1.1 over rustls), the server's
//! certificate verified against the CRD's `caBundle` (or, without one,
//! the system's roots), as the apiserver's webhook client does, with the
//! apiserver's 30 s timeout for a conversion webhook.
//!
//! A `service` reference is `https://<name>.<namespace>.svc:<port><path>`,
//! the name the apiserver's default resolver dials; Herald, which may
//! not resolve cluster DNS, dials the service's ClusterIP when a
//! [`ServiceIps`] knows it (Herald serves services), else that name.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;

use super::spec::{WebhookSpec, WebhookTarget};

/// How long a review may take (the apiserver's conversion webhooks' 30 s).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// A service's ClusterIP by namespace and name, when Herald knows it.
pub type ServiceIps = Arc<dyn Fn(&str, &str) -> Option<IpAddr> + Send + Sync>;

/// Where and how to POST reviews.
pub(crate) struct Client {
    /// The URL as the apiserver names it in its errors.
    url: String,
    host: String,
    port: u16,
    path: String,
    /// For a service: its namespace and name, to find its ClusterIP.
    service: Option<(String, String)>,
    ips: Option<ServiceIps>,
    tls: TlsConnector,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `spec`'s webhook, or why there is none (a URL that
    /// is not `https://host[:port][/path]`, a CA bundle with no
    /// certificate).
    pub(crate) fn new(spec: &WebhookSpec, ips: Option<ServiceIps>) -> Result<Client, String> {
        let (url, host, port, path, service) = match &spec.target {
            WebhookTarget::Url(url) => {
                let rest = url
                    .strip_prefix("https://")
                    .ok_or_else(|| format!("webhook url {url:?} is not https"))?;
                let (authority, path) = match rest.find(['/', '?']) {
                    Some(i) => (&rest[..i], &rest[i..]),
                    None => (rest, "/"),
                };
                let (host, port) = split_authority(authority)
                    .ok_or_else(|| format!("webhook url {url:?}: no host"))?;
                (url.clone(), host, port, path.to_owned(), None)
            }
            WebhookTarget::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let host = format!("{name}.{namespace}.svc");
                let path = if path.is_empty() { "/" } else { path };
                let url = format!("https://{host}:{port}{path}");
                let service = Some((namespace.clone(), name.clone()));
                (url, host, *port, path.to_owned(), service)
            }
        };
        let mut roots = rustls::RootCertStore::empty();
        if spec.ca_bundle.iter().all(u8::is_ascii_whitespace) {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        } else {
            for cert in CertificateDer::pem_slice_iter(&spec.ca_bundle) {
                let cert = cert.map_err(|e| format!("webhook caBundle: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("webhook caBundle: {e}"))?;
            }
            if roots.is_empty() {
                return Err("webhook caBundle: no certificate".into());
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Client {
            url,
            host,
            port,
            path,
            service,
            ips,
            tls: TlsConnector::from(Arc::new(config)),
        })
    }

    /// POSTs `body`; the response's body if it is a 2xx, else the
    /// apiserver's message for the failure (`Post "<url>": ...` for a
    /// transport error).
    pub(crate) async fn post(&self, body: Vec<u8>) -> Result<Bytes, String> {
        match tokio::time::timeout(TIMEOUT, self.exchange(body)).await {
            Ok(r) => r,
            Err(_) => Err(format!("Post {:?}: context deadline exceeded", self.url)),
        }
    }

    async fn exchange(&self, body: Vec<u8>) -> Result<Bytes, String> {
        let failed = |e: &dyn std::fmt::Display| format!("Post {:?}: {e}", self.url);
        let ip = match (&self.service, &self.ips) {
            (Some((ns, name)), Some(ips)) => ips(ns, name),
            _ => None,
        };
        let tcp = match ip {
            Some(ip) => tokio::net::TcpStream::connect((ip, self.port)).await,
            None => {
                let host = self.host.trim_matches(['[', ']']);
                tokio::net::TcpStream::connect((host, self.port)).await
            }
        }
        .map_err(|e| failed(&e))?;
        let name = ServerName::try_from(self.host.trim_matches(['[', ']']).to_owned())
            .map_err(|e| failed(&e))?;
        let tls = self.tls.connect(name, tcp).await.map_err(|e| failed(&e))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| failed(&e))?;
        tokio::spawn(conn);
        let authority = if self.port == 443 {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let request = Request::post(&self.path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed(&e))?;
        let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        if status.is_success() {
            return Ok(bytes);
        }
        // client-go's reading of an error answer: a Status's message,
        // else the code alone.
        let message = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .filter(|v| v["kind"] == "Status")
            .and_then(|v| v["message"].as_str().map(str::to_owned));
        Err(message.unwrap_or_else(|| {
            format!(
                "the server responded with the status code {} but did not return more information",
                status.as_u16()
            )
        }))
    }
}

/// `host[:port]` (an IPv6 host in brackets); 443 by default.
fn split_authority(authority: &str) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => {
            (&authority[..i], authority[i + 1..].parse().ok()?)
        }
        _ => (authority, 443),
    };
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_as_urls_do() {
        assert_eq!(
            split_authority("conv.example"),
            Some(("conv.example".into(), 443))
        );
        assert_eq!(
            split_authority("127.0.0.1:8443"),
            Some(("127.0.0.1".into(), 8443))
        );
        assert_eq!(split_authority("[::1]:9"), Some(("[::1]".into(), 9)));
        assert_eq!(split_authority("[::1]"), Some(("[::1]".into(), 443)));
        assert_eq!(split_authority(""), None);
    }
}
