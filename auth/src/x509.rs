//! Client certificates: checked against the client CA as the apiserver's
//! x509 authenticator checks them (`x509.go`, Go's `x509.Verify`: a
//! chain to one of the CA file's certificates, the client-auth usage
//! required only of a certificate that lists usages, the client's other
//! certificates as intermediates, valid now, any X.509 version), and read
//! as its `CommonNameUserConversion`
//! reads them: the user is the subject's (last) CN, the groups its O
//! values in order, the UID the attribute `1.3.6.1.4.1.57683.2`, and the
//! credential id `X509SHA256=<hex of the certificate's SHA-256>`.

use std::path::Path;

use rustls::DistinguishedName;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::user::{CREDENTIAL_ID, User};

/// Why a client CA file, or a client's certificate, was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertError {
    /// The file could not be read, or held no certificate.
    File(String),
    /// The client's certificate does not chain to the client CA, or is
    /// expired, or not for client authentication (webpki's reason).
    Untrusted(String),
    /// The certificate's subject could not be read (a UID attribute
    /// twice, or empty, or not a string).
    Subject(String),
}

impl std::fmt::Display for CertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertError::File(e) => write!(f, "client CA: {e}"),
            CertError::Untrusted(e) => write!(f, "verifying certificate failed: {e}"),
            CertError::Subject(e) => write!(f, "certificate subject: {e}"),
        }
    }
}

impl std::error::Error for CertError {}

/// The certificates client certificates must chain to.
///
/// The chain is built and checked here, not by webpki: Go's verifier,
/// which the apiserver uses, takes X.509 v1 certificates (what
/// `openssl x509 -req` makes without extensions), which webpki refuses
/// by design; a client the apiserver accepts must not be refused here.
/// Checked as Go checks them: each certificate valid now, each link an
/// issuer whose subject is the child's issuer and whose key verifies its
/// signature, intermediates (the client's other certificates) CAs, the
/// client certificate's extended key usages, if it lists any, including
/// client authentication.
#[derive(Debug)]
pub struct ClientCa {
    anchors: Vec<Vec<u8>>,
    subjects: Vec<DistinguishedName>,
}

/// How many intermediates a chain may have.
const MAX_DEPTH: usize = 5;

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, CertError> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| CertError::Untrusted(format!("x509: malformed certificate: {e}")))
}

fn valid_at(cert: &X509Certificate<'_>, now: UnixTime) -> bool {
    let now = now.as_secs() as i64;
    let v = cert.validity();
    v.not_before.timestamp() <= now && now <= v.not_after.timestamp()
}

fn issued_by(child: &X509Certificate<'_>, parent: &X509Certificate<'_>) -> bool {
    child.issuer().as_raw() == parent.subject().as_raw()
        && child.verify_signature(Some(parent.public_key())).is_ok()
}

impl ClientCa {
    /// The CA certificates of a PEM file.
    pub fn from_file(path: &Path) -> Result<ClientCa, CertError> {
        let pem =
            std::fs::read(path).map_err(|e| CertError::File(format!("{}: {e}", path.display())))?;
        ClientCa::from_pem(&pem).map_err(|e| match e {
            CertError::File(e) => CertError::File(format!("{}: {e}", path.display())),
            other => other,
        })
    }

    /// The CA certificates of a PEM text.
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, CertError> {
        let mut anchors = Vec::new();
        let mut subjects = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| CertError::File(format!("PEM: {e}")))?;
            let parsed =
                parse(&cert).map_err(|e| CertError::File(format!("a CA certificate: {e}")))?;
            subjects.push(DistinguishedName::from(parsed.subject().as_raw().to_vec()));
            anchors.push(cert.to_vec());
        }
        if anchors.is_empty() {
            return Err(CertError::File("no certificate".into()));
        }
        Ok(ClientCa { anchors, subjects })
    }

    /// The CA subjects, as the handshake names them to clients.
    pub fn subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    /// Checks the client's `chain` (its certificate first) at `now`.
    pub fn verify(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<(), CertError> {
        let (leaf, rest) = chain
            .split_first()
            .ok_or_else(|| CertError::Untrusted("no certificate".into()))?;
        let leaf = parse(leaf)?;
        if !valid_at(&leaf, now) {
            return Err(CertError::Untrusted(
                "x509: certificate has expired or is not yet valid".into(),
            ));
        }
        if let Ok(Some(eku)) = leaf.extended_key_usage() {
            if !(eku.value.client_auth || eku.value.any) {
                return Err(CertError::Untrusted(
                    "x509: certificate specifies an incompatible key usage".into(),
                ));
            }
        }
        let anchors: Vec<X509Certificate<'_>> =
            self.anchors.iter().filter_map(|a| parse(a).ok()).collect();
        let intermediates: Vec<X509Certificate<'_>> = rest
            .iter()
            .filter_map(|c| parse(c).ok())
            .filter(|c| c.is_ca() && valid_at(c, now))
            .collect();
        let mut current = &leaf;
        for _ in 0..=MAX_DEPTH {
            if anchors
                .iter()
                .any(|a| valid_at(a, now) && issued_by(current, a))
            {
                return Ok(());
            }
            match intermediates.iter().find(|i| issued_by(current, i)) {
                Some(i) => current = i,
                None => break,
            }
        }
        Err(CertError::Untrusted(
            "x509: certificate signed by unknown authority".into(),
        ))
    }
}

/// The public key of a certificate (its `SubjectPublicKeyInfo` DER), of
/// any X.509 version: what the handshake checks the client's signature
/// with.
pub fn public_key_of(der: &[u8]) -> Result<Vec<u8>, CertError> {
    Ok(parse(der)?.public_key().raw.to_vec())
}

/// The UID attribute of a certificate subject (Kubernetes' private OID).
const UID_OID: &str = "1.3.6.1.4.1.57683.2";

/// The user a (verified) certificate names, or `None` when its subject
/// has no CN (the apiserver then tries the request's other
/// credentials).
pub fn user_of(der: &[u8]) -> Result<Option<User>, CertError> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| CertError::Subject(format!("{e}")))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()
        .unwrap_or_default();
    if name.is_empty() {
        return Ok(None);
    }
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_owned)
        .collect();
    let mut uid = String::new();
    let mut uids = 0;
    for attr in subject.iter().flat_map(|rdn| rdn.iter()) {
        if attr.attr_type().to_id_string() == UID_OID {
            uids += 1;
            uid = attr
                .as_str()
                .map_err(|_| CertError::Subject("the UID is not a string".into()))?
                .to_owned();
        }
    }
    if uids > 1 {
        return Err(CertError::Subject("more than one UID".into()));
    }
    if uids == 1 && uid.is_empty() {
        return Err(CertError::Subject("an empty UID".into()));
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let mut user = User {
        name: name.to_owned(),
        uid,
        groups,
        ..User::default()
    };
    user.extra
        .insert(CREDENTIAL_ID.into(), vec![format!("X509SHA256={hex}")]);
    Ok(Some(user))
}

#[cfg(test)]
#[path = "x509_tests.rs"]
mod tests;
