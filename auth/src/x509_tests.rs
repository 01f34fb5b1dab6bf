use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

use super::*;

type Ca = CertifiedIssuer<'static, KeyPair>;

fn ca_params(name: &str, edit: impl FnOnce(&mut CertificateParams)) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    edit(&mut p);
    p
}

/// A self-signed CA, edited.
fn root(name: &str, edit: impl FnOnce(&mut CertificateParams)) -> Ca {
    CertifiedIssuer::self_signed(ca_params(name, edit), KeyPair::generate().unwrap()).unwrap()
}

/// An intermediate CA under `issuer`, edited.
fn intermediate(issuer: &Ca, name: &str, edit: impl FnOnce(&mut CertificateParams)) -> Ca {
    CertifiedIssuer::signed_by(ca_params(name, edit), KeyPair::generate().unwrap(), issuer).unwrap()
}

fn trust(ca: &Ca) -> ClientCa {
    ClientCa::from_pem(ca.pem().as_bytes()).unwrap()
}

/// An extension of a private OID (content: DER NULL).
fn unknown_extension(critical: bool) -> CustomExtension {
    let mut e = CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 1], vec![5, 0]);
    e.set_criticality(critical);
    e
}

fn ca(name: &str) -> Ca {
    root(name, |_| {})
}

fn client(
    ca: &CertifiedIssuer<'static, KeyPair>,
    edit: impl FnOnce(&mut CertificateParams),
) -> CertificateDer<'static> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "alice");
    p.distinguished_name.push(DnType::OrganizationName, "devs");
    edit(&mut p);
    p.signed_by(&KeyPair::generate().unwrap(), ca)
        .unwrap()
        .der()
        .clone()
}

fn now() -> UnixTime {
    UnixTime::now()
}

#[test]
fn a_certificate_of_the_ca_is_its_subjects_user() {
    let ca = ca("clients");
    let trusted = ClientCa::from_pem(ca.pem().as_bytes()).unwrap();
    assert_eq!(trusted.subjects().len(), 1);
    // Named to clients as a whole DER Name (a SEQUENCE): a bare RDN list
    // fails OpenSSL's handshake ("wrong tag").
    assert_eq!(trusted.subjects()[0].as_ref()[0], 0x30);
    let leaf = client(&ca, |_| {});
    trusted.verify(std::slice::from_ref(&leaf), now()).unwrap();
    let user = user_of(&leaf).unwrap().unwrap();
    assert_eq!(
        (user.name.as_str(), user.groups.as_slice()),
        ("alice", &["devs".to_owned()][..])
    );
    let id = &user.extra[CREDENTIAL_ID][0];
    assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");
}

#[test]
fn other_cas_expired_and_server_only_certificates_are_refused() {
    let ca_a = ca("a");
    let trusted = ClientCa::from_pem(ca_a.pem().as_bytes()).unwrap();
    let other = client(&ca("b"), |_| {});
    assert!(matches!(
        trusted.verify(&[other], now()),
        Err(CertError::Untrusted(_))
    ));
    let expired = client(&ca_a, |p| {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    });
    assert!(matches!(
        trusted.verify(&[expired], now()),
        Err(CertError::Untrusted(_))
    ));
    let server_only = client(&ca_a, |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth]
    });
    assert!(trusted.verify(&[server_only], now()).is_err());
    // Listing the client usage is fine; listing none is too (as Go).
    let with_usage = client(&ca_a, |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]
    });
    trusted.verify(&[with_usage], now()).unwrap();
    assert!(trusted.verify(&[], now()).is_err());
}

#[test]
fn a_subject_without_a_cn_names_nobody_and_the_uid_is_read() {
    let ca = ca("c");
    let anonymous = client(&ca, |p| {
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::OrganizationName, "devs");
    });
    assert_eq!(user_of(&anonymous).unwrap(), None);
    let with_uid = client(&ca, |p| {
        p.distinguished_name.push(
            DnType::CustomDnType(vec![1, 3, 6, 1, 4, 1, 57683, 2]),
            "uid-7",
        );
    });
    assert_eq!(user_of(&with_uid).unwrap().unwrap().uid, "uid-7");
    assert!(user_of(b"not a certificate").is_err());
}

#[test]
fn a_ca_file_without_certificates_is_refused() {
    assert!(matches!(ClientCa::from_pem(b""), Err(CertError::File(_))));
    assert!(matches!(
        ClientCa::from_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        Err(CertError::File(_))
    ));
    assert!(ClientCa::from_file(Path::new("/nonexistent/ca.pem")).is_err());
}

fn accepted(trusted: &ClientCa, chain: &[CertificateDer<'static>]) {
    if let Err(e) = trusted.verify(chain, now()) {
        panic!("refused: {e}");
    }
}

fn refused(trusted: &ClientCa, chain: &[CertificateDer<'static>]) {
    assert!(
        matches!(trusted.verify(chain, now()), Err(CertError::Untrusted(_))),
        "accepted"
    );
}

fn user_and_groups(der: &[u8]) -> (String, Vec<String>) {
    let user = user_of(der).unwrap().unwrap();
    (user.name, user.groups)
}

#[test]
fn the_good_chains_are_accepted_with_their_user() {
    let r = ca("root");
    let trusted = trust(&r);
    let masters = |p: &mut CertificateParams| {
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::CommonName, "bob");
        p.distinguished_name
            .push(DnType::OrganizationName, "system:masters");
    };
    // Directly under the root, without EKU.
    let direct = client(&r, masters);
    accepted(&trusted, std::slice::from_ref(&direct));
    assert_eq!(
        user_and_groups(&direct),
        ("bob".into(), vec!["system:masters".into()])
    );
    // Through an intermediate (which lists client auth), with
    // anyExtendedKeyUsage only.
    let i = intermediate(&r, "int", |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]
    });
    let any = client(&i, |p| {
        masters(p);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::Any];
    });
    accepted(&trusted, &[any.clone(), i.der().clone()]);
    assert_eq!(
        user_and_groups(&any),
        ("bob".into(), vec!["system:masters".into()])
    );
    // An intermediate with anyExtendedKeyUsage, a root with client auth
    // among others, two intermediates under a root of path length 2.
    let r2 = root("root2", |p| {
        p.is_ca = IsCa::Ca(BasicConstraints::Constrained(2));
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
    });
    let i1 = intermediate(&r2, "i1", |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::Any]
    });
    let i2 = intermediate(&i1, "i2", |_| {});
    let leaf = client(&i2, |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]
    });
    accepted(&trust(&r2), &[leaf, i2.der().clone(), i1.der().clone()]);
    // A non-critical unknown extension is fine everywhere.
    let r3 = root("root3", |p| {
        p.custom_extensions = vec![unknown_extension(false)]
    });
    let i3 = intermediate(&r3, "i3", |p| {
        p.custom_extensions = vec![unknown_extension(false)]
    });
    let leaf = client(&i3, |p| {
        p.custom_extensions = vec![unknown_extension(false)]
    });
    accepted(&trust(&r3), &[leaf, i3.der().clone()]);
}

#[test]
fn a_roots_path_length_limits_the_intermediates() {
    let r = root("root", |p| {
        p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0))
    });
    let trusted = trust(&r);
    accepted(&trusted, &[client(&r, |_| {})]);
    let i = intermediate(&r, "int", |_| {});
    refused(&trusted, &[client(&i, |_| {}), i.der().clone()]);
    // An intermediate's own limit too.
    let r = ca("root");
    let i1 = intermediate(&r, "i1", |p| {
        p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0))
    });
    let i2 = intermediate(&i1, "i2", |_| {});
    refused(
        &trust(&r),
        &[client(&i2, |_| {}), i2.der().clone(), i1.der().clone()],
    );
}

#[test]
fn usages_nest_along_the_chain() {
    let server_only = |p: &mut CertificateParams| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth]
    };
    // An intermediate for servers only.
    let r = ca("root");
    let i = intermediate(&r, "int", server_only);
    refused(&trust(&r), &[client(&i, |_| {}), i.der().clone()]);
    let leaf = client(&i, |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]
    });
    refused(&trust(&r), &[leaf, i.der().clone()]);
    // A root for servers only.
    let r = root("root", server_only);
    refused(&trust(&r), &[client(&r, |_| {})]);
    // An unknown usage only.
    let r = ca("root");
    let i = intermediate(&r, "int", |p| {
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 4, 1, 99])]
    });
    refused(&trust(&r), &[client(&i, |_| {}), i.der().clone()]);
}

#[test]
fn unknown_critical_extensions_are_refused_on_every_certificate() {
    let critical = |p: &mut CertificateParams| p.custom_extensions = vec![unknown_extension(true)];
    let r = ca("root");
    let trusted = trust(&r);
    refused(&trusted, &[client(&r, critical)]);
    let i = intermediate(&r, "int", critical);
    refused(&trusted, &[client(&i, |_| {}), i.der().clone()]);
    let r = root("root", critical);
    refused(&trust(&r), &[client(&r, |_| {})]);
    // A critical SAN of a directory name only: Go reads no name of it.
    let r = ca("root");
    let name = vec![
        0x30, 0x0c, 0x31, 0x0a, 0x30, 0x08, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x01, b'x',
    ];
    let mut san = vec![0x30, 0x10, 0xa4, 0x0e];
    san.extend(name);
    let mut ext = CustomExtension::from_oid_content(&[2, 5, 29, 17], san);
    ext.set_criticality(true);
    refused(
        &trust(&r),
        &[client(&r, |p| p.custom_extensions = vec![ext])],
    );
}

#[test]
fn intermediates_and_roots_out_of_their_validity_are_refused() {
    let r = ca("root");
    let trusted = trust(&r);
    let expired = intermediate(&r, "int", |p| {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    });
    refused(&trusted, &[client(&expired, |_| {}), expired.der().clone()]);
    let future = intermediate(&r, "int", |p| {
        p.not_before = rcgen::date_time_ymd(2990, 1, 1);
        p.not_after = rcgen::date_time_ymd(2991, 1, 1);
    });
    refused(&trusted, &[client(&future, |_| {}), future.der().clone()]);
    let old_root = root("root", |p| {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    });
    refused(&trust(&old_root), &[client(&old_root, |_| {})]);
}

#[test]
fn a_ca_as_client_certificate_and_over_long_chains_are_refused() {
    let r = ca("root");
    let trusted = trust(&r);
    // A CA as the client's certificate: Go takes it, Herald does not.
    let leaf_ca = intermediate(&r, "alice", |p| {
        p.distinguished_name
            .push(DnType::OrganizationName, "system:masters")
    });
    refused(&trusted, &[leaf_ca.der().clone()]);
    // The CA's own certificate presented as the client's.
    refused(&trusted, &[r.der().clone()]);
    // Six intermediates: fine; seven: refused (webpki's limit; Go has
    // none but its 100 signature checks).
    let mut cas = vec![r];
    for n in 0..7 {
        let next = intermediate(cas.last().unwrap(), &format!("i{n}"), |_| {});
        cas.push(next);
    }
    let chain = |depth: usize| {
        let mut chain = vec![client(&cas[depth], |_| {})];
        chain.extend((1..=depth).rev().map(|i| cas[i].der().clone()));
        chain
    };
    accepted(&trusted, &chain(6));
    refused(&trusted, &chain(7));
}

#[test]
fn the_right_name_under_another_ca_is_refused() {
    let r = ca("clients");
    let trusted = trust(&r);
    // Another CA of the same name.
    let forged = ca("clients");
    let masters = |p: &mut CertificateParams| {
        p.distinguished_name
            .push(DnType::OrganizationName, "system:masters")
    };
    refused(&trusted, &[client(&forged, masters)]);
    // Its certificate sent along as an intermediate.
    refused(&trusted, &[client(&forged, masters), forged.der().clone()]);
    // An intermediate of another CA.
    let other = ca("other");
    let i = intermediate(&other, "int", |_| {});
    refused(&trusted, &[client(&i, masters), i.der().clone()]);
}

#[test]
fn only_a_ca_that_may_sign_certificates_issues_them() {
    // A root without basic constraints, or not a CA: Go's
    // `CheckSignatureFrom` refuses it as a parent.
    for is_ca in [IsCa::NoCa, IsCa::ExplicitNoCa] {
        let r = root("root", |p| p.is_ca = is_ca);
        refused(&trust(&r), &[client(&r, |_| {})]);
    }
    // Key usages without certificate signing, on the root or an
    // intermediate.
    let no_cert_sign =
        |p: &mut CertificateParams| p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let r = root("root", no_cert_sign);
    refused(&trust(&r), &[client(&r, |_| {})]);
    let r = ca("root");
    let i = intermediate(&r, "int", no_cert_sign);
    refused(&trust(&r), &[client(&i, |_| {}), i.der().clone()]);
    let i = intermediate(&r, "int", |p| {
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ]
    });
    accepted(&trust(&r), &[client(&i, |_| {}), i.der().clone()]);
    // The client's own (self-signed, not CA) certificate as the CA file:
    // Go's chain of one, accepted.
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "pinned");
    let pinned = p.self_signed(&KeyPair::generate().unwrap()).unwrap();
    let trusted = ClientCa::from_pem(pinned.pem().as_bytes()).unwrap();
    accepted(&trusted, &[pinned.der().clone()]);
}

#[test]
fn policy_mappings_are_refused() {
    let r = ca("root");
    // Policy mappings (non-critical) on an intermediate: Go's policy
    // check may refuse them; Herald refuses them all.
    let oid = |last: u8| [0x06, 0x03, 0x2a, 0x03, last];
    let mut mapping = vec![0x30, 0x0c, 0x30, 0x0a];
    mapping.extend(oid(4));
    mapping.extend(oid(5));
    let i = intermediate(&r, "int", |p| {
        p.custom_extensions = vec![CustomExtension::from_oid_content(&[2, 5, 29, 33], mapping)]
    });
    refused(&trust(&r), &[client(&i, |_| {}), i.der().clone()]);
}

#[test]
fn a_der_element_is_read_with_its_length() {
    assert_eq!(
        der_element(&[0x30, 0x01, 0x05, 0xff]),
        Some((0x30, &[0x05][..], &[0x30, 0x01, 0x05][..], &[0xff][..]))
    );
    let long: Vec<u8> = [0x04, 0x81, 0x80].into_iter().chain([7; 0x80]).collect();
    assert_eq!(der_element(&long).unwrap().1.len(), 0x80);
    assert_eq!(der_element(&[0x30, 0x02, 0x05]), None);
    assert_eq!(der_element(&[0x30, 0x80]), None);
    assert_eq!(signed_parts(b"not DER"), None);
}

/// Certificates rcgen cannot make (SHA-1 signatures, X.509 v1), made
/// by the `openssl` command.
struct Openssl(std::path::PathBuf);

impl Drop for Openssl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Openssl {
    fn new(tag: &str) -> Openssl {
        let d = std::env::temp_dir().join(format!("herald-x509-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Openssl(d)
    }

    fn run(&self, args: &[&str]) {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(&self.0)
            .output()
            .expect("the openssl command");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A self-signed CA `name` (v3, CA:TRUE).
    fn root(&self, name: &str) {
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        self.run(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &key,
        ]);
        let subj = format!("/CN={name}");
        self.run(&[
            "req", "-x509", "-new", "-key", &key, "-subj", &subj, "-days", "10", "-sha256", "-out",
            &pem,
        ]);
    }

    /// `name`, of subject `subj`, issued by `issuer` with `digest`; v1
    /// without `ext`, else v3 with those extensions.
    fn issue(&self, name: &str, subj: &str, issuer: &str, digest: &str, ext: Option<&str>) {
        self.issue_serial(name, subj, issuer, digest, ext, "7")
    }

    /// As `issue`, of serial number `serial`.
    fn issue_serial(
        &self,
        name: &str,
        subj: &str,
        issuer: &str,
        digest: &str,
        ext: Option<&str>,
        serial: &str,
    ) {
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        self.run(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &key,
        ]);
        self.run(&["req", "-new", "-key", &key, "-subj", subj, "-out", &csr]);
        let (ca, ca_key, ext_file) = (
            format!("{issuer}.pem"),
            format!("{issuer}.key"),
            format!("{name}.ext"),
        );
        let digest = format!("-{digest}");
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-set_serial",
            serial,
            "-days",
            "5",
            &digest,
            "-out",
            &pem,
        ];
        if let Some(ext) = ext {
            std::fs::write(self.0.join(&ext_file), format!("[e]\n{ext}\n")).unwrap();
            args.extend(["-extfile", &ext_file, "-extensions", "e"]);
        }
        self.run(&args);
    }

    fn der(&self, name: &str) -> CertificateDer<'static> {
        let pem = std::fs::read(self.0.join(format!("{name}.pem"))).unwrap();
        CertificateDer::from_pem_slice(&pem).unwrap()
    }

    fn trust(&self, name: &str) -> ClientCa {
        ClientCa::from_file(&self.0.join(format!("{name}.pem"))).unwrap()
    }
}

const CA_EXT: &str = "basicConstraints=critical,CA:TRUE";
const LEAF_EXT: &str = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth";

#[test]
fn sha1_signatures_are_refused_on_the_leaf_and_on_intermediates() {
    let o = Openssl::new("sha1");
    o.root("root");
    let trusted = o.trust("root");
    let subj = "/CN=bob/O=system:masters";
    o.issue("good", subj, "root", "sha256", Some(LEAF_EXT));
    accepted(&trusted, &[o.der("good")]);
    o.issue("leaf1", subj, "root", "sha1", Some(LEAF_EXT));
    refused(&trusted, &[o.der("leaf1")]);
    o.issue("int256", "/CN=int256", "root", "sha256", Some(CA_EXT));
    o.issue("int1", "/CN=int1", "root", "sha1", Some(CA_EXT));
    o.issue("under256", subj, "int256", "sha256", Some(LEAF_EXT));
    o.issue("under1", subj, "int1", "sha256", Some(LEAF_EXT));
    accepted(&trusted, &[o.der("under256"), o.der("int256")]);
    refused(&trusted, &[o.der("under1"), o.der("int1")]);
    o.issue("sha1under", subj, "int256", "sha1", Some(LEAF_EXT));
    refused(&trusted, &[o.der("sha1under"), o.der("int256")]);
}

#[test]
fn a_v1_client_certificate_is_taken_directly_under_the_ca_only() {
    let o = Openssl::new("v1");
    o.root("root");
    let trusted = o.trust("root");
    let subj = "/CN=bob/O=system:masters";
    o.issue("v1", subj, "root", "sha256", None);
    let v1 = o.der("v1");
    assert_eq!(
        parse(&v1).unwrap().version(),
        x509_parser::x509::X509Version::V1
    );
    accepted(&trusted, std::slice::from_ref(&v1));
    assert_eq!(
        user_and_groups(&v1),
        ("bob".into(), vec!["system:masters".into()])
    );
    // Another CA's v1 certificate, a SHA-1 one, one under an
    // intermediate: refused.
    o.root("other");
    o.issue("v1other", subj, "other", "sha256", None);
    refused(&trusted, &[o.der("v1other")]);
    o.issue("v1sha1", subj, "root", "sha1", None);
    refused(&trusted, &[o.der("v1sha1")]);
    o.issue("int", "/CN=int", "root", "sha256", Some(CA_EXT));
    o.issue("v1under", subj, "int", "sha256", None);
    refused(&trusted, &[o.der("v1under"), o.der("int")]);
    // Expired (in 5 days).
    let later = UnixTime::since_unix_epoch(Duration::from_secs(now().as_secs() + 30 * 86400));
    assert!(trusted.verify(std::slice::from_ref(&v1), later).is_err());
}

#[test]
fn a_negative_serial_number_is_refused() {
    // Go (since 1.23) does not parse such a certificate.
    let o = Openssl::new("serial");
    o.root("root");
    let trusted = o.trust("root");
    o.issue_serial("v3", "/CN=bob", "root", "sha256", Some(LEAF_EXT), "-5");
    refused(&trusted, &[o.der("v3")]);
    o.issue_serial("v1", "/CN=bob", "root", "sha256", None, "-5");
    refused(&trusted, &[o.der("v1")]);
    o.issue_serial("v1ok", "/CN=bob", "root", "sha256", None, "5");
    accepted(&trusted, &[o.der("v1ok")]);
}
