//! The configuration's checks and each provider's format, on values
//! sealed here with the same ciphers (the real apiserver's values are in
//! `tests/crypt.rs`).

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use base64::Engine;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockEncryptMut, KeyIvInit};

use super::*;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";

/// A configuration of one entry: `resources` and the providers' YAML.
fn config(resources: &str, providers: &str) -> String {
    format!("{HEAD}resources:\n  - resources: {resources}\n    providers:\n{providers}")
}

fn keyed(provider: &str, keys: &[(&str, &[u8])]) -> String {
    let mut s = format!("      - {provider}:\n          keys:\n");
    for (name, secret) in keys {
        s += &format!(
            "            - name: {name}\n              secret: {}\n",
            b64(secret)
        );
    }
    s
}

fn config_err(text: &str) -> String {
    match Keyring::parse(text) {
        Err(CryptError::Config(why)) => why,
        other => panic!("{other:?}\n{text}"),
    }
}

/// What the apiserver's aesgcm transformer writes, with `nonce`.
fn seal_gcm(name: &str, key: &[u8], nonce: [u8; 12], plain: &[u8], etcd_key: &[u8]) -> Vec<u8> {
    let payload = Payload {
        msg: plain,
        aad: etcd_key,
    };
    let n = aes_gcm::Nonce::from_slice(&nonce);
    let sealed = match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .unwrap()
            .encrypt(n, payload),
        24 => providers_gcm192(key).encrypt(n, payload),
        _ => aes_gcm::Aes256Gcm::new_from_slice(key)
            .unwrap()
            .encrypt(n, payload),
    }
    .unwrap();
    [
        format!("k8s:enc:aesgcm:v1:{name}:").as_bytes(),
        &nonce,
        &sealed,
    ]
    .concat()
}

fn providers_gcm192(key: &[u8]) -> aes_gcm::AesGcm<Aes192, aes_gcm::aead::consts::U12> {
    aes_gcm::AesGcm::new_from_slice(key).unwrap()
}

/// AES-CBC over `padded` (already padded, whole blocks), as aescbc
/// writes it.
fn seal_cbc(name: &str, key: &[u8], iv: [u8; 16], padded: &[u8]) -> Vec<u8> {
    let mut buf = padded.to_vec();
    let n = buf.len();
    match key.len() {
        16 => {
            cbc::Encryptor::<Aes128>::new_from_slices(key, &iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut buf, n)
                .unwrap();
        }
        24 => {
            cbc::Encryptor::<Aes192>::new_from_slices(key, &iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut buf, n)
                .unwrap();
        }
        _ => {
            cbc::Encryptor::<Aes256>::new_from_slices(key, &iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut buf, n)
                .unwrap();
        }
    }
    [format!("k8s:enc:aescbc:v1:{name}:").as_bytes(), &iv, &buf].concat()
}

fn pkcs7(plain: &[u8]) -> Vec<u8> {
    let pad = 16 - plain.len() % 16;
    [plain, &vec![pad as u8; pad]].concat()
}

fn seal_box(name: &str, key: &[u8], nonce: [u8; 24], plain: &[u8]) -> Vec<u8> {
    let c = crypto_secretbox::XSalsa20Poly1305::new_from_slice(key).unwrap();
    let sealed = c
        .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), plain)
        .unwrap();
    [
        format!("k8s:enc:secretbox:v1:{name}:").as_bytes(),
        &nonce,
        &sealed,
    ]
    .concat()
}

const KEY: &[u8] = b"/registry/secrets/ns/a";

#[test]
fn every_key_size_of_every_provider_round_trips() {
    let plain = b"k8s\0\x0a\x02v1 the object";
    for len in [16, 24, 32] {
        let secret: Vec<u8> = (0..len as u8).collect();
        let gcm =
            Keyring::parse(&config("[secrets]", &keyed("aesgcm", &[("k", &secret)]))).unwrap();
        let v = seal_gcm("k", &secret, [7; 12], plain, KEY);
        assert_eq!(&*gcm.decrypt("secrets", KEY, &v).unwrap(), plain);
        let cbc =
            Keyring::parse(&config("[secrets]", &keyed("aescbc", &[("k", &secret)]))).unwrap();
        let v = seal_cbc("k", &secret, [9; 16], &pkcs7(plain));
        assert_eq!(&*cbc.decrypt("secrets", KEY, &v).unwrap(), plain);
    }
    let secret = [3u8; 32];
    let sb = Keyring::parse(&config("[secrets]", &keyed("secretbox", &[("k", &secret)]))).unwrap();
    let v = seal_box("k", &secret, [5; 24], plain);
    assert_eq!(&*sb.decrypt("secrets", KEY, &v).unwrap(), plain);
    // An empty plaintext is a valid box and a valid GCM value.
    let v = seal_box("k", &secret, [5; 24], b"");
    assert_eq!(&*sb.decrypt("secrets", KEY, &v).unwrap(), b"");
}

#[test]
fn plain_values_are_returned_as_they_are() {
    let k = Keyring::parse(&config("[secrets]", &keyed("aesgcm", &[("k", &[1; 32])]))).unwrap();
    for v in [&b"k8s\0\x0a"[..], b"{\"kind\":\"Secret\"}", b"", b"k8s:en"] {
        assert!(matches!(k.decrypt("secrets", KEY, v), Ok(Cow::Borrowed(b)) if b == v));
    }
}

#[test]
fn aescbc_padding_is_checked_as_the_apiserver_checks_it() {
    let secret = [4u8; 32];
    let k = Keyring::parse(&config("[secrets]", &keyed("aescbc", &[("k", &secret)]))).unwrap();
    let bad = CryptError::Authentication {
        provider: "aescbc".into(),
        key: "k".into(),
    };
    // A zero pad, a pad longer than the plaintext, pad bytes that differ.
    let mut zero = [1u8; 16];
    zero[15] = 0;
    let mut differ = [2u8; 16];
    differ[14] = 9;
    for padded in [&zero[..], &[17u8; 16], &differ] {
        let v = seal_cbc("k", &secret, [0; 16], padded);
        assert_eq!(k.decrypt("secrets", KEY, &v).unwrap_err(), bad);
    }
    // Go takes a pad longer than a block when every byte agrees.
    let v = seal_cbc("k", &secret, [0; 16], &[32u8; 32]);
    assert_eq!(&*k.decrypt("secrets", KEY, &v).unwrap(), b"");
    let v = seal_cbc("k", &secret, [0; 16], &[b"ab", &[30u8; 30][..]].concat());
    assert_eq!(&*k.decrypt("secrets", KEY, &v).unwrap(), b"ab");
}

#[test]
fn providers_and_keys_are_tried_in_order_past_failures() {
    let (a, b) = ([1u8; 32], [2u8; 32]);
    // Two aesgcm providers with a key of the same name: the second opens
    // what the first cannot.
    let text = config(
        "[secrets]",
        &(keyed("aesgcm", &[("k", &a)])
            + "      - identity: {}\n"
            + &keyed("aesgcm", &[("k", &b)])),
    );
    let k = Keyring::parse(&text).unwrap();
    let v = seal_gcm("k", &b, [1; 12], b"x", KEY);
    assert_eq!(&*k.decrypt("secrets", KEY, &v).unwrap(), b"x");
    // Neither opens a third secret: the first failure is told.
    let v = seal_gcm("k", &[3; 32], [1; 12], b"x", KEY);
    assert_eq!(
        k.decrypt("secrets", KEY, &v).unwrap_err(),
        CryptError::Authentication {
            provider: "aesgcm".into(),
            key: "k".into()
        }
    );
    // Key names that are prefixes of each other (`a:` and `a:b:`).
    let text = config("[secrets]", &keyed("aesgcm", &[("a", &a), ("a:b", &b)]));
    let k = Keyring::parse(&text).unwrap();
    let v = seal_gcm("a:b", &b, [1; 12], b"y", KEY);
    assert_eq!(&*k.decrypt("secrets", KEY, &v).unwrap(), b"y");
    // A resource in two entries has both entries' providers.
    let text = format!(
        "{HEAD}resources:\n  - resources: [secrets]\n    providers:\n{}  - resources: [secrets]\n    providers:\n{}",
        keyed("aesgcm", &[("one", &a)]),
        keyed("secretbox", &[("two", &b)])
    );
    let k = Keyring::parse(&text).unwrap();
    let v = seal_box("two", &b, [0; 24], b"z");
    assert_eq!(&*k.decrypt("secrets", KEY, &v).unwrap(), b"z");
}

#[test]
fn wildcards_apply_as_the_apiserver_applies_them() {
    let (own, group, core, any) = ([1u8; 32], [2u8; 32], [3u8; 32], [4u8; 32]);
    let text = format!(
        "{HEAD}resources:\n\
         \x20 - resources: [deployments.apps, secrets]\n    providers:\n{}\
         \x20 - resources: ['*.apps']\n    providers:\n{}\
         \x20 - resources: ['*.']\n    providers:\n{}\
         \x20 - resources: ['*.*']\n    providers:\n{}",
        keyed("aesgcm", &[("own", &own)]),
        keyed("aesgcm", &[("group", &group)]),
        keyed("aesgcm", &[("core", &core)]),
        keyed("aesgcm", &[("any", &any)]),
    );
    let k = Keyring::parse(&text).unwrap();
    for (resource, name, secret) in [
        ("deployments.apps", "own", own),
        ("secrets", "own", own),
        ("statefulsets.apps", "group", group),
        ("configmaps", "core", core),
        ("leases.coordination.k8s.io", "any", any),
        ("widgets.herald.dev", "any", any),
    ] {
        let v = seal_gcm(name, &secret, [0; 12], b"p", KEY);
        assert_eq!(&*k.decrypt(resource, KEY, &v).unwrap(), b"p", "{resource}");
        // Only that rule's key is the resource's.
        let other = if name == "any" { "own" } else { "any" };
        let v = seal_gcm(other, &any, [0; 12], b"p", KEY);
        assert!(
            matches!(k.decrypt(resource, KEY, &v), Err(CryptError::NoKey { .. })),
            "{resource}"
        );
    }
    let debug = format!("{k:?}");
    assert_eq!(
        debug,
        r#"{"deployments.apps": ["aesgcm[own]"], "secrets": ["aesgcm[own]"], "*.apps": ["aesgcm[group]"], "*.": ["aesgcm[core]"], "*.*": ["aesgcm[any]"]}"#
    );
    assert!(!debug.contains(&b64(&own)));
}

#[test]
fn yaml_json_and_the_legacy_kind_are_read() {
    let key = b64(&[9; 32]);
    let json = format!(
        r#"{{"kind":"EncryptionConfiguration","apiVersion":"apiserver.config.k8s.io/v1","resources":[{{"resources":["secrets"],"providers":[{{"secretbox":{{"keys":[{{"name":"k","secret":"{key}"}}]}}}},{{"identity":{{}}}}]}}],"unknown":1}}"#
    );
    Keyring::parse(&json).unwrap();
    let legacy = format!(
        "kind: EncryptionConfig\napiVersion: v1\nresources:\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n  - secretbox:\n      keys:\n      - name: k\n        secret: {key}\n"
    );
    Keyring::parse(&legacy).unwrap();
    // Go's base64 skips line breaks, and lets stray bits through.
    let folded = config(
        "[secrets]",
        &format!(
            "      - aescbc:\n          keys:\n            - name: k\n              secret: \"{}\\n{}\"\n",
            &key[..20],
            &key[20..]
        ),
    );
    Keyring::parse(&folded).unwrap();
    let stray = config(
        "[secrets]",
        "      - aesgcm:\n          keys:\n            - name: k\n              secret: AAAAAAAAAAAAAAAAAAAAAB==\n",
    );
    Keyring::parse(&stray).unwrap();
}

#[test]
fn the_file_is_checked_as_the_apiserver_checks_it() {
    let k32 = [1u8; 32];
    let gcm = keyed("aesgcm", &[("k", &k32)]);
    for (text, want) in [
        (String::new(), "empty"),
        ("resources: [".into(), "not YAML"),
        ("{\"kind\":".into(), "not JSON"),
        ("- a\n- b\n".into(), "not an object"),
        (
            "kind: EncryptionConfiguration\nresources: []\n".into(),
            "no apiVersion",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nresources: []\n".into(),
            "no kind",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: EncryptionConfiguration\n".into(),
            "is not apiserver.config.k8s.io/v1",
        ),
        (format!("{HEAD}resources: []\n"), "at least one resources"),
        (format!("{HEAD}resources: 3\n"), "invalid type"),
        (config("[]", &gcm), "at least one resources[0].resources"),
        (
            config("[secrets]", ""),
            "at least one resources[0].providers",
        ),
        (config("[secrets, secrets]", &gcm), "multiple times"),
        (config("[secrets, '*.']", &gcm), "overlapping"),
        (config("['*.*', deployments.apps]", &gcm), "overlapping"),
        (config("[Secrets]", &gcm), "capital"),
        (config("['*']", &gcm), "use '*.'"),
        (config("[serviceipallocations]", &gcm), "REST"),
        (config("[events.events.k8s.io]", &gcm), "'events' API group"),
        (config("[deployments.extensions]", &gcm), "'extensions'"),
        (config("['secrets.*']", &gcm), "across groups"),
        (
            config("[secrets]", "      - rot13: {}\n"),
            "expected providers",
        ),
        (
            config("[secrets]", "      - identity: null\n"),
            "expected providers",
        ),
        (
            config(
                "[secrets]",
                "      - identity: {}\n        aesgcm: {keys: []}\n",
            ),
            "more than one",
        ),
        (
            config("[secrets]", "      - aesgcm: {keys: []}\n"),
            "at least one keys",
        ),
        (
            config("[secrets]", "      - aescbc: {keys: null}\n"),
            "at least one keys",
        ),
        (
            config("[secrets]", "      - aesgcm: {keys: [{secret: AAAA}]}\n"),
            "name is a mandatory",
        ),
        (
            config("[secrets]", "      - aesgcm: {keys: [{name: k}]}\n"),
            "secret is a mandatory",
        ),
        (
            config(
                "[secrets]",
                "      - aesgcm: {keys: [{name: k, secret: 'not base64!'}]}\n",
            ),
            "base64",
        ),
        (
            config(
                "[secrets]",
                "      - aesgcm: {keys: [{name: k, secret: AAAA}]}\n        x: 1\n",
            ),
            "length",
        ),
        (
            config(
                "[secrets]",
                "      - aesgcm: {keys: [{name: 1, secret: AAAA}]}\n",
            ),
            "invalid type",
        ),
        (
            config("[secrets]", "      - kms: {apiVersion: v2}\n"),
            "name is a mandatory",
        ),
        (
            config("[secrets]", "      - kms: {apiVersion: v3, name: p}\n"),
            "only v1 and v2",
        ),
        (
            config("[secrets]", "      - kms: {apiVersion: v2, name: 'a:b'}\n"),
            "must not contain ':'",
        ),
        (
            config(
                "[secrets]",
                "      - kms: {apiVersion: v2, name: p}\n      - kms: {apiVersion: v2, name: p}\n",
            ),
            "duplicate KMS provider name p",
        ),
        (
            format!(
                "{HEAD}resources:\n  - resources: ['*.apps']\n    providers:\n{gcm}  - resources: [deployments.apps]\n    providers:\n{gcm}"
            ),
            "resource deployments.apps is masked by earlier rule *.apps",
        ),
        (
            format!(
                "{HEAD}resources:\n  - resources: ['*.*']\n    providers:\n{gcm}  - resources: [secrets]\n    providers:\n{gcm}"
            ),
            "resource secrets is masked by earlier rule *.*",
        ),
    ] {
        if want == "length" {
            // A secret of 3 bytes: a length error, typed.
            assert_eq!(
                Keyring::parse(&text).unwrap_err(),
                CryptError::KeyLength {
                    provider: "aesgcm".into(),
                    key: "k".into(),
                    len: 3
                }
            );
            continue;
        }
        let why = config_err(&text);
        assert!(why.contains(want), "{want:?} not in {why:?}\n{text}");
    }
    // A KMS v1 name may hold ':', and be named twice (no reload here).
    Keyring::parse(&config(
        "[secrets]",
        "      - kms: {name: 'a:b', endpoint: 'unix:///k'}\n      - kms: {name: 'a:b'}\n",
    ))
    .unwrap();
}

#[test]
fn key_lengths_are_typed() {
    for (provider, len) in [
        ("aesgcm", 20),
        ("aescbc", 8),
        ("aesgcm", 64),
        ("secretbox", 16),
        ("secretbox", 24),
    ] {
        let text = config("[secrets]", &keyed(provider, &[("k", &vec![0; len])]));
        assert_eq!(
            Keyring::parse(&text).unwrap_err(),
            CryptError::KeyLength {
                provider: provider.into(),
                key: "k".into(),
                len
            }
        );
    }
}

#[test]
fn a_missing_file_is_a_config_error_naming_it() {
    let e = Keyring::from_file("/nonexistent/herald/encryption.yaml").unwrap_err();
    assert!(
        matches!(&e, CryptError::Config(why) if why.starts_with("/nonexistent/herald/encryption.yaml: ")),
        "{e}"
    );
    assert_eq!(e.provider(), None);
}

#[test]
fn garbage_after_the_prefix_is_a_typed_error_never_a_panic() {
    let secret = [6u8; 32];
    let text = config(
        "[secrets]",
        &(keyed("aesgcm", &[("k", &secret)])
            + &keyed("aescbc", &[("k", &secret)])
            + &keyed("secretbox", &[("k", &secret)])),
    );
    let k = Keyring::parse(&text).unwrap();
    let mut n = 0u32;
    for provider in [
        "aesgcm",
        "aescbc",
        "secretbox",
        "kms",
        "",
        "aesgcm:v2",
        "aesgcm:v1",
    ] {
        for key in ["k", "", "other", "k:k"] {
            for len in [
                0usize, 1, 11, 12, 15, 16, 17, 27, 28, 31, 32, 39, 40, 41, 48, 64,
            ] {
                let body: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
                let v = [format!("k8s:enc:{provider}:v1:{key}:").as_bytes(), &body].concat();
                let e = k.decrypt("secrets", KEY, &v).unwrap_err();
                let _ = (e.to_string(), e.provider(), e.lacks_key());
                n += 1;
            }
        }
    }
    assert_eq!(n, 7 * 4 * 16);
    // Cut anywhere in its prefix, a value is still refused by type.
    let v = seal_gcm("k", &secret, [0; 12], b"x", KEY);
    for end in 8..v.len() {
        assert!(k.decrypt("secrets", KEY, &v[..end]).is_err());
    }
}

#[test]
fn a_keyring_is_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Keyring>();
    shared::<crate::Decoder>();
    shared::<CryptError>();
}
