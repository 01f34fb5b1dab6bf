use rcgen::{CertificateParams, KeyPair};

use super::*;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("herald-auth-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn write_pair(d: &Path, host: &str) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![host.to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (c, k) = (cert.pem(), key.serialize_pem());
    std::fs::write(d.join("tls.crt"), &c).unwrap();
    std::fs::write(d.join("tls.key"), &k).unwrap();
    (c, k)
}

fn files(d: &Path) -> TlsFiles {
    TlsFiles {
        cert: d.join("tls.crt"),
        key: d.join("tls.key"),
        client_ca: None,
    }
}

#[test]
fn a_changed_pair_serves_and_a_broken_one_is_refused_keeping_the_last() {
    let d = dir("reload");
    write_pair(&d.0, "a.example");
    let tls = ServingTls::load(files(&d.0)).unwrap();
    let first = tls.current();
    assert_eq!(first.config.alpn_protocols, [b"http/1.1".to_vec()]);
    assert!(!tls.reload().unwrap(), "unchanged files");
    assert!(Arc::ptr_eq(&first.config, &tls.current().config));
    let (cert_b, _) = write_pair(&d.0, "b.example");
    assert!(tls.reload().unwrap());
    let second = tls.current();
    assert!(!Arc::ptr_eq(&first.config, &second.config));
    // A key that is not the certificate's: refused, the last one kept.
    let other = KeyPair::generate().unwrap();
    std::fs::write(d.0.join("tls.key"), other.serialize_pem()).unwrap();
    assert!(matches!(tls.reload(), Err(TlsError::Key(_))));
    assert!(Arc::ptr_eq(&second.config, &tls.current().config));
    // Half a file: refused too.
    std::fs::write(d.0.join("tls.crt"), &cert_b[..cert_b.len() / 2]).unwrap();
    assert!(tls.reload().is_err());
    assert!(Arc::ptr_eq(&second.config, &tls.current().config));
    std::fs::remove_file(d.0.join("tls.crt")).unwrap();
    assert!(matches!(tls.reload(), Err(TlsError::Io(_))));
}

#[test]
fn bad_files_are_refused_at_load() {
    let d = dir("bad");
    assert!(matches!(
        ServingTls::load(files(&d.0)),
        Err(TlsError::Io(_))
    ));
    std::fs::write(d.0.join("tls.crt"), "").unwrap();
    std::fs::write(d.0.join("tls.key"), "").unwrap();
    assert!(matches!(
        ServingTls::load(files(&d.0)),
        Err(TlsError::Cert(_))
    ));
    write_pair(&d.0, "a");
    std::fs::write(d.0.join("tls.key"), "garbage").unwrap();
    assert!(matches!(
        ServingTls::load(files(&d.0)),
        Err(TlsError::Key(_))
    ));
    write_pair(&d.0, "a");
    std::fs::write(d.0.join("ca.crt"), "nothing").unwrap();
    let with_ca = TlsFiles {
        client_ca: Some(d.0.join("ca.crt")),
        ..files(&d.0)
    };
    assert!(matches!(
        ServingTls::load(with_ca),
        Err(TlsError::ClientCa(_))
    ));
}

#[test]
fn without_a_client_ca_certificates_name_nobody() {
    let d = dir("noca");
    let (cert, _) = write_pair(&d.0, "a");
    let tls = ServingTls::load(files(&d.0)).unwrap();
    let chain: Vec<_> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .map(Result::unwrap)
        .collect();
    assert_eq!(tls.current().identify(&chain).unwrap(), None);
}

/// Completes a handshake between `client` and the server in memory.
fn handshake(server: &mut rustls::ServerConnection, client: &mut rustls::ClientConnection) {
    for _ in 0..20 {
        if !client.is_handshaking() && !server.is_handshaking() {
            return;
        }
        let mut buf = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut buf).unwrap();
        }
        server.read_tls(&mut &buf[..]).unwrap();
        server.process_new_packets().unwrap();
        buf.clear();
        while server.wants_write() {
            server.write_tls(&mut buf).unwrap();
        }
        client.read_tls(&mut &buf[..]).unwrap();
        client.process_new_packets().unwrap();
    }
    panic!("no handshake in 20 rounds");
}

#[test]
fn the_server_chooses_aes_128_gcm_over_a_clients_aes_256_first() {
    let d = dir("suites");
    let (cert, _) = write_pair(&d.0, "127.0.0.1");
    let tls = ServingTls::load(files(&d.0)).unwrap();
    let roots = || {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(cert.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        roots
    };
    // rustls' default client order puts AES-256-GCM first.
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let config = Arc::new(
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots())
            .with_no_client_auth(),
        );
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut client = rustls::ClientConnection::new(config, name).unwrap();
        let mut server = rustls::ServerConnection::new(tls.current().config.clone()).unwrap();
        handshake(&mut server, &mut client);
        let suite = client.negotiated_cipher_suite().unwrap().suite();
        assert!(
            matches!(
                suite,
                rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
                    | rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            ),
            "{suite:?}"
        );
    }
}
