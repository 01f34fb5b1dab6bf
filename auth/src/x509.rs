//! Client certificates: checked against the client CA as the apiserver's
//! x509 authenticator checks them (`x509.go`, Go's `x509.Verify` with
//! `Roots` the CA file, `Intermediates` the client's other certificates,
//! `KeyUsages: [ClientAuth]`, now), never more loosely (see
//! [`ClientCa`]), and read as its `CommonNameUserConversion` reads
//! them: the user is the subject's (last) CN, the groups its O values in
//! order, the UID the attribute `1.3.6.1.4.1.57683.2`, and the
//! credential id `X509SHA256=<hex of the certificate's SHA-256>`.

use std::path::Path;
use std::time::Duration;

use rustls::DistinguishedName;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};
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
/// A chain is checked by webpki (signatures, validity, basic
/// constraints and path lengths of intermediates, name constraints,
/// unknown critical extensions of the client's certificates, at most 6
/// intermediates) with the EKU rule and a `verify_path` hook adding what
/// Go's `x509.Verify` checks and webpki does not (see `go_rules`): the
/// root's own validity, path length, extended key usages, critical
/// extensions and right to sign (basic constraints, key usage), the
/// intermediates' key usage, and the critical extensions Go itself
/// refuses. Both must accept, so Herald is never looser than either.
///
/// Where webpki refuses what Go accepts, Herald refuses too, except for
/// one case a real cluster meets: a client certificate of X.509 v1 (what
/// `openssl x509 -req` makes without `-extfile`, to this day), which
/// webpki cannot parse. Such a certificate has no extension, so all Go
/// checks of it are its validity and its issuer's signature; Herald
/// accepts it when a CA certificate issued it directly (see
/// `ClientCa::verify_v1`) and refuses a v1 certificate under an
/// intermediate (stricter than Go). The other cases Herald refuses and
/// Go accepts, on purpose: a client certificate that is a CA
/// (`CA:TRUE`; the key of a CA is not a client's identity), chains of
/// more than 6 intermediates, RSA keys under 2048 bits, P-521 and
/// ECDSA with SHA-512 (ring's algorithms), an empty EKU extension,
/// critical policy extensions on the client's certificates (webpki
/// refuses every critical extension it does not know), and policy
/// mappings or a `requireExplicitPolicy` anywhere below the root (Go's
/// RFC 9618 policy check, not re-created here, may refuse those).
#[derive(Debug)]
pub struct ClientCa {
    roots: Vec<Root>,
    anchors: Vec<TrustAnchor<'static>>,
    subjects: Vec<DistinguishedName>,
}

/// What Go checks of a root that webpki, which keeps only its subject,
/// key and name constraints, does not.
#[derive(Debug)]
struct Root {
    /// Valid from and until (Unix seconds, both included).
    not_before: i64,
    not_after: i64,
    /// Its path-length limit, if any: how many intermediates may follow.
    max_path_len: Option<u32>,
    /// Its extended key usages allow client authentication (none
    /// listed, or client auth, or any).
    client_auth: bool,
    /// A critical extension Go does not handle (Go: never a root).
    unhandled_critical: bool,
    /// It may sign certificates by Go's `CheckSignatureFrom`.
    can_sign: bool,
    /// Its DER (a client certificate that is one of the CA file's
    /// certificates is Go's chain of one).
    der: Vec<u8>,
}

/// `id-kp-clientAuth` (1.3.6.1.5.5.7.3.2), its DER value.
const EKU_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
/// `anyExtendedKeyUsage` (2.5.29.37.0), its DER value.
const EKU_ANY: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// Go's EKU rule for `KeyUsages: [ClientAuth]` (`checkChainForKeyUsage`):
/// each certificate of the chain that lists usages lists client auth
/// or any. webpki's `KeyUsage::client_auth()` would refuse
/// `anyExtendedKeyUsage`, which Go (and so the apiserver) accepts.
#[derive(Debug, Clone, Copy)]
struct ClientAuthOrAny;

impl webpki::ExtendedKeyUsageValidator for ClientAuthOrAny {
    fn validate(&self, iter: webpki::KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        let mut empty = true;
        for id in iter {
            let id = id?;
            empty = false;
            if id == webpki::KeyPurposeId::new(EKU_CLIENT_AUTH)
                || id == webpki::KeyPurposeId::new(EKU_ANY)
            {
                return Ok(());
            }
        }
        if empty { Ok(()) } else { Err(eku_refused()) }
    }
}

fn eku_refused() -> webpki::Error {
    webpki::Error::RequiredEkuNotFoundContext(webpki::RequiredEkuNotFoundContext {
        required: webpki::KeyUsage::client_auth(),
        present: Vec::new(),
    })
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, CertError> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| CertError::Untrusted(format!("x509: malformed certificate: {e}")))
}

fn untrusted(e: impl std::fmt::Debug) -> CertError {
    CertError::Untrusted(format!("x509: {e:?}"))
}

/// Go's `Certificate.UnhandledCriticalExtensions` (`parser.go`
/// `processExtensions`) is not empty, or the certificate has an
/// extension Go refuses to parse as critical (subject key identifier,
/// authority information access).
fn go_unhandled_critical(cert: &X509Certificate<'_>) -> bool {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    let known = |n: &GeneralName<'_>| {
        matches!(
            n,
            GeneralName::DNSName(_)
                | GeneralName::RFC822Name(_)
                | GeneralName::IPAddress(_)
                | GeneralName::URI(_)
        )
    };
    cert.extensions().iter().filter(|e| e.critical).any(|e| {
        let handled = match e.oid.to_id_string().as_str() {
            // Key usage, basic constraints, CRL distribution points,
            // policies, policy mappings, authority key id, policy
            // constraints, EKU, inhibit anyPolicy.
            "2.5.29.15" | "2.5.29.19" | "2.5.29.31" | "2.5.29.32" | "2.5.29.33" | "2.5.29.35"
            | "2.5.29.36" | "2.5.29.37" | "2.5.29.54" => true,
            // A SAN is handled if Go read a name of it.
            "2.5.29.17" => matches!(
                e.parsed_extension(),
                ParsedExtension::SubjectAlternativeName(san) if san.general_names.iter().any(known)
            ),
            // Name constraints: only of DNS, email, IP and URI names.
            "2.5.29.30" => match e.parsed_extension() {
                ParsedExtension::NameConstraints(nc) => nc
                    .permitted_subtrees
                    .iter()
                    .chain(nc.excluded_subtrees.iter())
                    .flatten()
                    .all(|s| known(&s.base)),
                _ => false,
            },
            _ => false,
        };
        !handled
    })
}

/// A policy extension under which Go's policy check (`policiesValid`)
/// may refuse the chain: policy mappings, or policy constraints with
/// `requireExplicitPolicy`. Without either, Go's check (with the
/// apiserver's options: no policy asked for) accepts every chain.
fn policy_may_refuse(cert: &X509Certificate<'_>) -> bool {
    use x509_parser::extensions::ParsedExtension;
    cert.extensions()
        .iter()
        .any(|e| match e.oid.to_id_string().as_str() {
            "2.5.29.33" => true,
            "2.5.29.36" => !matches!(
                e.parsed_extension(),
                ParsedExtension::PolicyConstraints(pc) if pc.require_explicit_policy.is_none()
            ),
            _ => false,
        })
}

/// Go refuses to parse a certificate with a negative serial number
/// (since Go 1.23), and so the TLS handshake presenting it.
fn negative_serial(cert: &X509Certificate<'_>) -> bool {
    cert.raw_serial().first().is_some_and(|b| b & 0x80 != 0)
}

/// Whether `cert` may sign certificates, as Go's `CheckSignatureFrom`
/// asks of every parent, root or intermediate: a v3 certificate has
/// basic constraints, basic constraints say CA, and key usages, if any
/// are set, include certificate signing. (webpki checks neither the
/// root's basic constraints nor anyone's key usage.)
fn can_sign(cert: &X509Certificate<'_>) -> bool {
    let v3 = cert.version() == x509_parser::x509::X509Version::V3;
    let ca = match cert.basic_constraints() {
        Ok(Some(bc)) => bc.value.ca,
        Ok(None) => !v3,
        Err(_) => false,
    };
    let cert_sign = match cert.key_usage() {
        Ok(Some(ku)) => ku.value.flags == 0 || ku.value.key_cert_sign(),
        Ok(None) => true,
        Err(_) => false,
    };
    ca && cert_sign
}

/// Whether `cert` allows client authentication by Go's EKU rule.
fn eku_allows_client_auth(cert: &X509Certificate<'_>) -> bool {
    match cert.extended_key_usage() {
        Ok(None) => true,
        Ok(Some(eku)) => {
            let e = eku.value;
            let listed = e.any
                || e.server_auth
                || e.client_auth
                || e.code_signing
                || e.email_protection
                || e.time_stamping
                || e.ocsp_signing
                || !e.other.is_empty();
            !listed || e.client_auth || e.any
        }
        Err(_) => false,
    }
}

impl Root {
    fn of(der: &[u8], cert: &X509Certificate<'_>) -> Root {
        let max_path_len = match cert.basic_constraints() {
            Ok(Some(bc)) => bc.value.path_len_constraint,
            _ => None,
        };
        Root {
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            max_path_len,
            client_auth: eku_allows_client_auth(cert),
            unhandled_critical: go_unhandled_critical(cert),
            can_sign: can_sign(cert),
            der: der.to_vec(),
        }
    }

    /// Go's `isValid` of the root over `intermediates` intermediates, its
    /// EKUs (`checkChainForKeyUsage` walks the root too), and that it may
    /// sign, unless `leaf` is the root itself (Go's chain of one, when
    /// the pool contains the client's certificate: no signature
    /// checked).
    fn check(&self, leaf: &[u8], intermediates: usize, now: UnixTime) -> Result<(), webpki::Error> {
        let pinned = intermediates == 0 && leaf == self.der;
        if !self.can_sign && !pinned {
            return Err(webpki::Error::EndEntityUsedAsCa);
        }
        let at = |secs: i64| UnixTime::since_unix_epoch(Duration::from_secs(secs.max(0) as u64));
        if self.unhandled_critical {
            return Err(webpki::Error::UnsupportedCriticalExtension);
        }
        let secs = now.as_secs() as i64;
        if secs < self.not_before {
            return Err(webpki::Error::CertNotValidYet {
                time: now,
                not_before: at(self.not_before),
            });
        }
        if secs > self.not_after {
            return Err(webpki::Error::CertExpired {
                time: now,
                not_after: at(self.not_after),
            });
        }
        if self
            .max_path_len
            .is_some_and(|max| intermediates > max as usize)
        {
            return Err(webpki::Error::PathLenConstraintViolated);
        }
        if !self.client_auth {
            return Err(eku_refused());
        }
        Ok(())
    }
}

/// Go's rules webpki does not apply, over a path webpki accepted: the
/// root's ([`Root::check`]), the intermediates' key usages (certificate
/// signing, if any listed), and, of the client's certificates, the
/// critical extensions Go does not handle (a SAN of no name Go reads,
/// name constraints of other name forms) and the policy extensions Go's
/// policy check may refuse.
fn go_rules(
    path: &webpki::VerifiedPath<'_>,
    roots: &[Root],
    anchors: &[TrustAnchor<'static>],
    now: UnixTime,
) -> Result<(), webpki::Error> {
    let root = anchors
        .iter()
        .position(|a| std::ptr::eq(a, path.anchor()))
        .and_then(|i| roots.get(i))
        .ok_or(webpki::Error::UnknownIssuer)?;
    let intermediates: Vec<_> = path.intermediate_certificates().collect();
    root.check(&path.end_entity().der(), intermediates.len(), now)?;
    let certs = std::iter::once(path.end_entity().der())
        .chain(intermediates.iter().map(|c| c.der()))
        .collect::<Vec<_>>();
    for (i, der) in certs.iter().enumerate() {
        let cert = X509Certificate::from_der(der)
            .map_err(|_| webpki::Error::BadDer)?
            .1;
        if i > 0 && !can_sign(&cert) {
            return Err(webpki::Error::EndEntityUsedAsCa);
        }
        if go_unhandled_critical(&cert) {
            return Err(webpki::Error::UnsupportedCriticalExtension);
        }
        if policy_may_refuse(&cert) {
            // (webpki has no error of policies.)
            return Err(webpki::Error::ExtensionValueInvalid);
        }
    }
    Ok(())
}

/// A DER element: its tag, contents, whole encoding, and what follows
/// it.
type Element<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// The DER element at the start of `input`.
fn der_element(input: &[u8]) -> Option<Element<'_>> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |l, b| (l << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some((tag, &rest[..len], &input[..header + len], &rest[len..]))
}

/// A certificate's signed part, its signature algorithm (the contents of
/// the AlgorithmIdentifier) and signature, if the TBS names the same
/// algorithm as the outer one (Go refuses otherwise).
fn signed_parts(der: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (0x30, cert, _, _) = der_element(der)? else {
        return None;
    };
    let (0x30, tbs_body, tbs, rest) = der_element(cert)? else {
        return None;
    };
    let (0x30, alg, _, rest) = der_element(rest)? else {
        return None;
    };
    let (0x03, sig, _, _) = der_element(rest)? else {
        return None;
    };
    let (&0, sig) = sig.split_first()? else {
        return None;
    };
    // The TBS: an optional [0] version, the serial, then the algorithm.
    let (tag, _, _, mut body) = der_element(tbs_body)?;
    if tag == 0xa0 {
        body = der_element(body)?.3;
    }
    let (0x30, inner_alg, _, _) = der_element(body)? else {
        return None;
    };
    (inner_alg == alg).then_some((tbs, alg, sig))
}

/// `child`'s signature checked with `anchor`'s key, with webpki's
/// algorithms (as it checks a chain: no SHA-1, no MD5).
fn signed_by_anchor(child: &[u8], anchor: &TrustAnchor<'_>) -> bool {
    let Some((tbs, alg, sig)) = signed_parts(child) else {
        return false;
    };
    let Some((0x30, key_alg, _, rest)) = der_element(&anchor.subject_public_key_info) else {
        return false;
    };
    let Some((0x03, key, _, _)) = der_element(rest) else {
        return false;
    };
    let Some((&0, key)) = key.split_first() else {
        return false;
    };
    webpki::ALL_VERIFICATION_ALGS.iter().any(|a| {
        a.signature_alg_id().as_ref() == alg
            && a.public_key_alg_id().as_ref() == key_alg
            && a.verify_signature(key, tbs, sig).is_ok()
    })
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
        let mut roots = Vec::new();
        let mut anchors = Vec::new();
        let mut subjects = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| CertError::File(format!("PEM: {e}")))?;
            let parsed =
                parse(&cert).map_err(|e| CertError::File(format!("a CA certificate: {e}")))?;
            let anchor = webpki::anchor_from_trusted_cert(&cert)
                .map_err(|e| CertError::File(format!("a CA certificate: {e:?}")))?
                .to_owned();
            subjects.push(DistinguishedName::from(parsed.subject().as_raw().to_vec()));
            roots.push(Root::of(&cert, &parsed));
            anchors.push(anchor);
        }
        if anchors.is_empty() {
            return Err(CertError::File("no certificate".into()));
        }
        Ok(ClientCa {
            roots,
            anchors,
            subjects,
        })
    }

    /// The CA subjects, as the handshake names them to clients.
    pub fn subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    /// Checks the client's `chain` (its certificate first) at `now`.
    pub fn verify(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<(), CertError> {
        let (leaf_der, rest) = chain
            .split_first()
            .ok_or_else(|| CertError::Untrusted("no certificate".into()))?;
        // Go's TLS stack parses every certificate the client sends, and
        // fails the handshake on one it cannot parse.
        for der in chain {
            if negative_serial(&parse(der)?) {
                return Err(CertError::Untrusted("x509: negative serial number".into()));
            }
        }
        let leaf = parse(leaf_der)?;
        if leaf.version() != x509_parser::x509::X509Version::V3 {
            return self.verify_v1(leaf_der, &leaf, now);
        }
        let end_entity = webpki::EndEntityCert::try_from(leaf_der).map_err(untrusted)?;
        let hook =
            |path: &webpki::VerifiedPath<'_>| go_rules(path, &self.roots, &self.anchors, now);
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &self.anchors,
                rest,
                now,
                ClientAuthOrAny,
                None,
                Some(&hook),
            )
            .map(|_| ())
            .map_err(untrusted)
    }

    /// A client certificate of X.509 v1 (or v2): accepted, as Go accepts
    /// it, when valid now and signed directly by a CA certificate that
    /// passes Go's root rules. It has no extension, so nothing else of it
    /// is Go's to check (no usages, no names for name constraints). One
    /// under an intermediate is refused: webpki cannot check the
    /// intermediates' path without a leaf it parses, and a chain built
    /// here instead would be the unreviewed verifier this replaces.
    fn verify_v1(
        &self,
        der: &[u8],
        leaf: &X509Certificate<'_>,
        now: UnixTime,
    ) -> Result<(), CertError> {
        if !leaf.extensions().is_empty() {
            return Err(CertError::Untrusted(
                "x509: extensions in a certificate before v3".into(),
            ));
        }
        let secs = now.as_secs() as i64;
        let v = leaf.validity();
        if secs < v.not_before.timestamp() || secs > v.not_after.timestamp() {
            return Err(CertError::Untrusted(
                "x509: certificate has expired or is not yet valid".into(),
            ));
        }
        let mut refused = None;
        let cas = self.anchors.iter().zip(&self.roots).zip(&self.subjects);
        for ((anchor, root), subject) in cas {
            if leaf.issuer().as_raw() != subject.as_ref() || !signed_by_anchor(der, anchor) {
                continue;
            }
            match root.check(der, 0, now) {
                Ok(()) => return Ok(()),
                Err(e) => refused = Some(e),
            }
        }
        Err(match refused {
            Some(e) => untrusted(e),
            None => CertError::Untrusted(
                "x509: certificate signed by unknown authority (a v1 certificate is taken only \
                 directly under a CA certificate)"
                    .into(),
            ),
        })
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
