//! Herald's client-certificate verdicts against Go's own: many chains,
//! each property the apiserver's `x509.Verify` checks varied at random
//! (fixed seed), each checked by `ClientCa::verify` and by
//! `testkit/x509-verify` (Go's `crypto/x509`, as the apiserver calls it).
//! They must agree on every chain, except where Herald refuses on purpose
//! what Go accepts (a client certificate that is a CA); there Herald must
//! refuse. Needs `go` (and `openssl`, for what rcgen cannot make) on
//! PATH: without them the tests fail.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use herald_auth::x509::ClientCa;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DnType,
    ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
    SanType,
};
use rustls_pki_types::{CertificateDer, UnixTime};

const CHAINS: usize = 3000;
const SEED: u64 = 0x0049_5eed;

/// xorshift64*: enough randomness for a fixed, reproducible corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize].clone()
    }
}

type Ca = CertifiedIssuer<'static, KeyPair>;

fn key(rng: &mut Rng) -> KeyPair {
    let alg = rng.pick(&[
        &rcgen::PKCS_ECDSA_P256_SHA256,
        &rcgen::PKCS_ECDSA_P256_SHA256,
        &rcgen::PKCS_ECDSA_P384_SHA384,
        &rcgen::PKCS_ED25519,
    ]);
    KeyPair::generate_for(alg).unwrap()
}

/// The properties of one certificate, drawn at random, and what they
/// were (for a failing case's description).
fn vary(rng: &mut Rng, p: &mut CertificateParams, what: &mut Vec<String>, role: &str) {
    use ExtendedKeyUsagePurpose::{Any, ClientAuth, ServerAuth};
    let ekus: Vec<Vec<ExtendedKeyUsagePurpose>> = vec![
        vec![],
        vec![],
        vec![],
        vec![],
        vec![ClientAuth],
        vec![ServerAuth],
        vec![Any],
        vec![ServerAuth, ClientAuth],
        vec![ExtendedKeyUsagePurpose::Other(vec![
            1, 3, 6, 1, 4, 1, 99, 1,
        ])],
    ];
    p.extended_key_usages = rng.pick(&ekus);
    if !p.extended_key_usages.is_empty() {
        what.push(format!("{role} eku {:?}", p.extended_key_usages));
    }
    if rng.chance(5) {
        let mut e = CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 1], vec![5, 0]);
        let critical = rng.chance(60);
        e.set_criticality(critical);
        p.custom_extensions.push(e);
        what.push(format!("{role} unknown extension critical={critical}"));
    }
    if rng.chance(4) {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        what.push(format!("{role} expired"));
    } else if rng.chance(3) {
        p.not_before = rcgen::date_time_ymd(2990, 1, 1);
        p.not_after = rcgen::date_time_ymd(2991, 1, 1);
        what.push(format!("{role} not yet valid"));
    }
}

fn ca_params(rng: &mut Rng, name: &str, what: &mut Vec<String>, role: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = match rng.next() % 100 {
        0..=64 => IsCa::Ca(BasicConstraints::Unconstrained),
        65..=79 => IsCa::Ca(BasicConstraints::Constrained(0)),
        80..=93 => IsCa::Ca(BasicConstraints::Constrained(1)),
        94..=96 => IsCa::NoCa,
        _ => IsCa::ExplicitNoCa,
    };
    if !matches!(p.is_ca, IsCa::Ca(BasicConstraints::Unconstrained)) {
        what.push(format!("{role} {:?}", p.is_ca));
    }
    if rng.chance(6) {
        p.name_constraints = Some(NameConstraints {
            permitted_subtrees: vec![GeneralSubtree::DnsName("example.com".into())],
            excluded_subtrees: vec![],
        });
        what.push(format!("{role} permits example.com only"));
    }
    p.key_usages = match rng.next() % 100 {
        0..=79 => vec![],
        80..=89 => vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ],
        _ => vec![KeyUsagePurpose::DigitalSignature],
    };
    if !p.key_usages.is_empty() {
        what.push(format!("{role} key usage {:?}", p.key_usages));
    }
    vary(rng, &mut p, what, role);
    p
}

/// The client's own self-signed certificate as the CA file (Go's chain
/// of one: the certificate is one of the roots).
fn pinned(rng: &mut Rng) -> Case {
    let mut what = vec!["the client's certificate is the CA file".to_owned()];
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "bob");
    vary(rng, &mut p, &mut what, "leaf");
    let leaf = p.self_signed(&key(rng)).unwrap();
    Case {
        roots: pem(leaf.der()),
        chain: vec![leaf.der().clone()],
        herald_stricter: false,
        what,
    }
}

struct Case {
    roots: String,
    chain: Vec<CertificateDer<'static>>,
    /// Herald refuses on purpose what Go may accept.
    herald_stricter: bool,
    what: Vec<String>,
}

fn pem(der: &[u8]) -> String {
    use std::fmt::Write as _;
    let b64 = base64_encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        writeln!(out, "{}", std::str::from_utf8(line).unwrap()).unwrap();
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

fn base64_encode(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn case(rng: &mut Rng) -> Case {
    if rng.chance(3) {
        return pinned(rng);
    }
    let mut what = Vec::new();
    let root = CertifiedIssuer::self_signed(ca_params(rng, "clients", &mut what, "root"), key(rng))
        .unwrap();
    // Sometimes the chain is built under another CA of the same name.
    let forged = rng.chance(5);
    let forged_root = forged.then(|| {
        what.push("under a forged root of the same name".into());
        let mut p = ca_params(rng, "clients", &mut Vec::new(), "forged");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        CertifiedIssuer::self_signed(p, key(rng)).unwrap()
    });
    let top: &Ca = forged_root.as_ref().unwrap_or(&root);
    let depth = match rng.next() % 100 {
        0..=29 => 0,
        30..=64 => 1,
        65..=89 => 2,
        _ => 3,
    };
    let mut ints: Vec<Ca> = Vec::new();
    for n in 0..depth {
        let role = format!("intermediate {n}");
        let p = ca_params(rng, &format!("int{n}"), &mut what, &role);
        let next = CertifiedIssuer::signed_by(p, key(rng), ints.last().unwrap_or(top)).unwrap();
        ints.push(next);
    }
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "bob");
    p.distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    vary(rng, &mut p, &mut what, "leaf");
    if rng.chance(15) {
        let name = rng.pick(&["a.example.com", "example.com", "evil.org"]);
        p.subject_alt_names = vec![SanType::DnsName(name.try_into().unwrap())];
        what.push(format!("leaf SAN {name}"));
    }
    let mut herald_stricter = false;
    if rng.chance(3) {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        herald_stricter = true;
        what.push("leaf is a CA".into());
    }
    let leaf = p.signed_by(&key(rng), ints.last().unwrap_or(top)).unwrap();
    let mut intermediates: Vec<CertificateDer<'static>> =
        ints.iter().rev().map(|c| c.der().clone()).collect();
    if intermediates.len() > 1 && rng.chance(20) {
        intermediates.reverse();
        what.push("intermediates in reverse order".into());
    }
    if !intermediates.is_empty() && rng.chance(5) {
        intermediates.pop();
        what.push("the top intermediate left out".into());
    }
    if rng.chance(5) {
        intermediates.push(root.der().clone());
        what.push("the root sent along".into());
    }
    let mut chain = vec![leaf.der().clone()];
    chain.extend(intermediates);
    let mut roots = pem(root.der());
    if rng.chance(10) {
        let other = CertifiedIssuer::self_signed(
            {
                let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
                p.distinguished_name.push(DnType::CommonName, "other");
                p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
                p
            },
            key(rng),
        )
        .unwrap();
        roots = pem(other.der()) + &roots;
        what.push("a second, unrelated CA in the file".into());
    }
    Case {
        roots,
        chain,
        herald_stricter,
        what,
    }
}

/// Go's verdict on each case; `tag` names this test's build of the
/// program (the tests run in parallel).
fn go_verdicts(cases: &[Case], now: u64, tag: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testkit/x509-verify");
    let bin = std::env::temp_dir().join(format!("herald-x509-verify-{tag}-{}", std::process::id()));
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(&dir)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .output()
        .expect("`go` must be on PATH to compare Herald's verdicts with Go's");
    assert!(
        built.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mut child = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for c in cases {
        let chain: String = c.chain.iter().map(|d| pem(d)).collect();
        input.push_str(
            &serde_json::json!({"roots": c.roots, "chain": chain, "now": now}).to_string(),
        );
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let _ = std::fs::remove_file(&bin);
    assert!(out.status.success(), "x509-verify failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn herald_and_go_agree_on_every_chain() {
    let started = Instant::now();
    let mut rng = Rng(SEED);
    let cases: Vec<Case> = (0..CHAINS).map(|_| case(&mut rng)).collect();
    let generated = started.elapsed();
    let now = UnixTime::now();
    let go = go_verdicts(&cases, now.as_secs(), "random");
    assert_eq!(go.len(), cases.len(), "one verdict per chain");
    let mut mismatches = Vec::new();
    let (mut accepted, mut stricter) = (0, 0);
    for (i, (c, go)) in cases.iter().zip(&go).enumerate() {
        let ca = ClientCa::from_pem(c.roots.as_bytes()).unwrap();
        let herald = ca.verify(&c.chain, now);
        let go_ok = go == "ok";
        accepted += usize::from(go_ok && herald.is_ok());
        let agrees = if c.herald_stricter {
            stricter += usize::from(go_ok);
            herald.is_err()
        } else {
            herald.is_ok() == go_ok
        };
        if !agrees {
            mismatches.push(format!(
                "chain {i} ({}): Go {go}, Herald {herald:?}",
                c.what.join(", ")
            ));
        }
    }
    eprintln!(
        "{} chains ({accepted} accepted by both, {stricter} refused by Herald only on purpose): \
         generated in {generated:?}, all checked in {:?}",
        cases.len(),
        started.elapsed()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} chains judged otherwise than Go:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}

/// Runs `openssl` in `dir`; panics with its error.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issues `name` (key, certificate) by `issuer` in `dir`, signed with
/// `digest`, of extensions `ext` (openssl config lines; none: X.509 v1).
fn issue(dir: &std::path::Path, name: &str, issuer: &str, digest: &str, ext: &str, serial: &str) {
    let (key, csr, pem, ext_file) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
        format!("{name}.ext"),
    );
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &key,
        ],
    );
    let subj = format!("/CN={name}/O=system:masters");
    openssl(
        dir,
        &["req", "-new", "-key", &key, "-subj", &subj, "-out", &csr],
    );
    let (ca, ca_key, digest) = (
        format!("{issuer}.pem"),
        format!("{issuer}.key"),
        format!("-{digest}"),
    );
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
    if !ext.is_empty() {
        std::fs::write(dir.join(&ext_file), format!("[e]\n{ext}\n")).unwrap();
        args.extend(["-extfile", &ext_file, "-extensions", "e"]);
    }
    openssl(dir, &args);
}

fn read_der(dir: &std::path::Path, name: &str) -> CertificateDer<'static> {
    use rustls_pki_types::pem::PemObject;
    CertificateDer::from_pem_file(dir.join(format!("{name}.pem"))).unwrap()
}

/// What rcgen cannot make, made by openssl: SHA-1 (and SHA-384)
/// signatures on the client's certificate and on an intermediate, X.509
/// v1 client certificates, negative serial numbers. Herald refuses a v1
/// certificate under an intermediate on purpose (Go takes it).
fn openssl_cases() -> Vec<Case> {
    let dir = std::env::temp_dir().join(format!("herald-x509-go-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "root.key",
        ],
    );
    openssl(
        &dir,
        &[
            "req", "-x509", "-new", "-key", "root.key", "-subj", "/CN=root", "-days", "10",
            "-sha256", "-out", "root.pem",
        ],
    );
    let roots = std::fs::read_to_string(dir.join("root.pem")).unwrap();
    let mut cases = Vec::new();
    let ca_ext = "basicConstraints=critical,CA:TRUE";
    let leaf_ext = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth";
    for int_digest in ["", "sha256", "sha1"] {
        let issuer = if int_digest.is_empty() {
            "root".to_owned()
        } else {
            let name = format!("int-{int_digest}");
            issue(&dir, &name, "root", int_digest, ca_ext, "3");
            name
        };
        for digest in ["sha256", "sha384", "sha1"] {
            for v3 in [true, false] {
                for serial in ["7", "-5"] {
                    let name = format!("leaf-{issuer}-{digest}-{v3}-{serial}");
                    issue(
                        &dir,
                        &name,
                        &issuer,
                        digest,
                        if v3 { leaf_ext } else { "" },
                        serial,
                    );
                    let mut chain = vec![read_der(&dir, &name)];
                    if issuer != "root" {
                        chain.push(read_der(&dir, &issuer));
                    }
                    cases.push(Case {
                        roots: roots.clone(),
                        chain,
                        herald_stricter: !v3 && issuer != "root",
                        what: vec![name],
                    });
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    cases
}

#[test]
fn herald_and_go_agree_on_openssl_made_chains() {
    let started = Instant::now();
    let cases = openssl_cases();
    let now = UnixTime::now();
    let go = go_verdicts(&cases, now.as_secs(), "openssl");
    assert_eq!(go.len(), cases.len(), "one verdict per chain");
    let mut mismatches = Vec::new();
    let mut accepted = 0;
    for (c, go) in cases.iter().zip(&go) {
        let herald = ClientCa::from_pem(c.roots.as_bytes())
            .unwrap()
            .verify(&c.chain, now);
        accepted += usize::from(herald.is_ok());
        let agrees = if c.herald_stricter {
            herald.is_err()
        } else {
            herald.is_ok() == (go == "ok")
        };
        if !agrees {
            mismatches.push(format!("{}: Go {go}, Herald {herald:?}", c.what[0]));
        }
    }
    eprintln!(
        "{} openssl-made chains ({accepted} accepted), checked in {:?}",
        cases.len(),
        started.elapsed()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
