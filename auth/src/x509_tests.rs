use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};

use super::*;

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
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
