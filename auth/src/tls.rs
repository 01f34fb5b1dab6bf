//! TLS serving as the apiserver serves it (`secure_serving.go`,
//! `dynamiccertificates`): a certificate chain and key from PEM files,
//! TLS 1.2 and 1.3, and client certificates *requested* against a
//! client CA file: any certificate the client proves it holds the key of
//! is taken at the handshake (Go's `tls.RequestClientCert`), and each
//! request checks it against the CA ([`Serving::identify`]), so a
//! certificate from another CA is a 401 on an open connection, as the
//! apiserver answers it, not a handshake failure the client cannot read.
//!
//! The files are read again by [`ServingTls::reload`] (the server calls
//! it every few seconds; the apiserver re-reads every minute and on
//! change): a changed certificate, key or CA is served to new
//! connections; one that does not load (a half-written file, a key that
//! is not the certificate's) is refused and the previous one kept, with
//! the error returned for the operator to see.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, SubjectPublicKeyInfoDer, UnixTime};

use crate::user::User;
use crate::x509::{CertError, ClientCa, public_key_of, user_of};

/// Why the serving certificate, key or client CA did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsError {
    /// A file could not be read.
    Io(String),
    /// The certificate file held no certificate, or one that does not
    /// parse.
    Cert(String),
    /// The key file held no private key, or one rustls cannot use, or
    /// not the certificate's.
    Key(String),
    /// The client CA file.
    ClientCa(CertError),
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::Io(e) => write!(f, "{e}"),
            TlsError::Cert(e) => write!(f, "serving certificate: {e}"),
            TlsError::Key(e) => write!(f, "serving key: {e}"),
            TlsError::ClientCa(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// Where the serving certificate, its key and the client CA are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM, the server's certificate first).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA client certificates must chain to (PEM); without it no
    /// client certificate is asked for.
    pub client_ca: Option<PathBuf>,
}

/// What serves new connections: the rustls configuration and the client
/// CA it asks for.
#[derive(Debug)]
pub struct Serving {
    /// The configuration for new connections.
    pub config: Arc<ServerConfig>,
    /// The client CA, if client certificates are asked for.
    pub client_ca: Option<Arc<ClientCa>>,
}

impl Serving {
    /// The user a client's certificate chain (its certificate first)
    /// names, checked against the client CA now: `Ok(None)` without a
    /// chain, without a client CA, or for a certificate with no CN.
    pub fn identify(&self, chain: &[CertificateDer<'_>]) -> Result<Option<User>, CertError> {
        let (Some(ca), Some(leaf)) = (&self.client_ca, chain.first()) else {
            return Ok(None);
        };
        ca.verify(chain, UnixTime::now())?;
        user_of(leaf)
    }
}

/// The serving TLS, reloaded from its files.
#[derive(Debug)]
pub struct ServingTls {
    files: TlsFiles,
    current: ArcSwap<Serving>,
    /// The files' bytes the current configuration was made of.
    loaded: Mutex<Vec<Vec<u8>>>,
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Io(format!("{}: {e}", path.display())))
}

impl ServingTls {
    /// Loads `files`.
    pub fn load(files: TlsFiles) -> Result<ServingTls, TlsError> {
        let bytes = ServingTls::read_all(&files)?;
        let serving = build(&bytes)?;
        Ok(ServingTls {
            files,
            current: ArcSwap::from_pointee(serving),
            loaded: Mutex::new(bytes),
        })
    }

    fn read_all(files: &TlsFiles) -> Result<Vec<Vec<u8>>, TlsError> {
        let mut out = vec![read(&files.cert)?, read(&files.key)?];
        if let Some(ca) = &files.client_ca {
            out.push(read(ca)?);
        }
        Ok(out)
    }

    /// What serves a new connection.
    pub fn current(&self) -> Arc<Serving> {
        self.current.load_full()
    }

    /// Reads the files again: `Ok(true)` if they changed and the new
    /// ones now serve, `Ok(false)` if unchanged, and the error (the
    /// previous configuration kept) if they changed and do not load.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let bytes = ServingTls::read_all(&self.files)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if *loaded == bytes {
            return Ok(false);
        }
        let serving = build(&bytes)?;
        self.current.store(Arc::new(serving));
        *loaded = bytes;
        Ok(true)
    }
}

/// The configuration made of the files' bytes (certificate, key, CA).
fn build(bytes: &[Vec<u8>]) -> Result<Serving, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes[0])
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Cert(format!("PEM: {e}")))?;
    if chain.is_empty() {
        return Err(TlsError::Cert("no certificate".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(&bytes[1]).map_err(|e| TlsError::Key(format!("{e}")))?;
    let client_ca = match bytes.get(2) {
        Some(pem) => Some(Arc::new(
            ClientCa::from_pem(pem).map_err(TlsError::ClientCa)?,
        )),
        None => None,
    };
    let provider = Arc::new(provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Key(format!("{e}")))?;
    let builder = match &client_ca {
        Some(ca) => builder.with_client_cert_verifier(Arc::new(RequestClientCert {
            subjects: ca.subjects().to_vec(),
            algorithms: provider.signature_verification_algorithms,
        })),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Key(format!("{e}")))?;
    // HTTP/1.1 only: the server speaks no HTTP/2 (a client offering
    // both picks HTTP/1.1, as kubectl and client-go do).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    // The server's order of suites decides (AES-128-GCM first): see
    // `provider`.
    config.ignore_client_order = true;
    Ok(Serving {
        config: Arc::new(config),
        client_ca,
    })
}

/// ring's provider with the AEAD suites in the server's order of
/// preference: AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305.
/// Every event a watch sends is sealed for each connection, so the
/// suite's cost per byte is the delivery's: AES-128 runs 10 rounds to
/// AES-256's 14, with the same GHASH, and keeps 128-bit security (the
/// suite Go's own TLS stack, kube-apiserver's, prefers on hardware with
/// AES instructions). rustls' default order puts AES-256 first, and a
/// rustls client (kube-rs) would get it.
fn provider() -> rustls::crypto::CryptoProvider {
    let mut p = rustls::crypto::ring::default_provider();
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
        | rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
        | rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
        _ => 2,
    };
    p.cipher_suites.sort_by_key(rank);
    p
}

/// Go's `tls.RequestClientCert`: a client certificate is asked for
/// (naming the CA's subjects) and never required; any certificate the
/// client proves it holds the key of is taken, to be checked against
/// the CA per request.
#[derive(Debug)]
struct RequestClientCert {
    subjects: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        public_key_of(end_entity).map_err(|_| bad_encoding())?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verify_with_key(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let spki = public_key_of(cert).map_err(|_| bad_encoding())?;
        rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(spki),
            dss,
            &self.algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

fn bad_encoding() -> rustls::Error {
    rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
}

impl RequestClientCert {
    /// The client's TLS 1.2 handshake signature checked with its
    /// certificate's key, whatever the certificate's X.509 version
    /// (rustls's own check parses the certificate with webpki, which
    /// refuses v1).
    fn verify_with_key(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        let spki = SubjectPublicKeyInfoDer::from(public_key_of(cert).map_err(|_| bad_encoding())?);
        let key = webpki::RawPublicKeyEntity::try_from(&spki).map_err(|_| bad())?;
        let (_, algorithms) = self
            .algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .ok_or_else(bad)?;
        algorithms
            .iter()
            .any(|alg| key.verify_signature(*alg, message, dss.signature()).is_ok())
            .then(HandshakeSignatureValid::assertion)
            .ok_or_else(bad)
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
