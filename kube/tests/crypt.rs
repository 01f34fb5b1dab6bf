//! Values encrypted at rest by the real kube-apiserver v1.37.2
//! (`tests/crypt/capture.py`), each with the `EncryptionConfiguration` the
//! apiserver read (YAML, and the same as JSON, which it read too) and the
//! JSON it served: the keyring must decrypt every value and the decoder
//! produce that JSON. Then hostile values, each a typed error.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use herald_kube::crypt::{CryptError, Keyring};
use herald_kube::{DecodeError, Decoder};
use serde_json::Value;

struct Vector {
    file: String,
    key: String,
    prefix: String,
    resource: String,
    rv: u64,
    value: Vec<u8>,
    stored_as: String,
    served: Value,
    config: String,
    config_json: String,
}

impl Vector {
    /// The key under the prefix, as the decoder is given it.
    fn rest(&self) -> &[u8] {
        &self.key.as_bytes()[self.prefix.len()..]
    }
}

fn vectors() -> Vec<Vector> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crypt");
    let mut out: Vec<Vector> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_owned();
            Vector {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                key: s("key"),
                prefix: s("prefix"),
                resource: s("resource"),
                rv: v["mod_revision"].as_u64().unwrap(),
                value: base64::engine::general_purpose::STANDARD
                    .decode(s("value"))
                    .unwrap(),
                stored_as: s("stored_as"),
                served: v["served"].clone(),
                config: s("config"),
                config_json: s("config_json"),
            }
        })
        .collect();
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

fn vector(file: &str) -> Vector {
    vectors()
        .into_iter()
        .find(|v| v.file == file)
        .unwrap_or_else(|| panic!("no vector {file}"))
}

fn keyring(text: &str) -> Arc<Keyring> {
    Arc::new(Keyring::parse(text).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn every_stored_value_decrypts_and_decodes_to_what_the_apiserver_served() {
    let vectors = vectors();
    let mut seen: Vec<&str> = Vec::new();
    for v in &vectors {
        for config in [&v.config, &v.config_json] {
            let keys = keyring(config);
            let plain = keys
                .decrypt(&v.resource, v.key.as_bytes(), &v.value)
                .unwrap_or_else(|e| panic!("{}: {e}", v.file));
            assert!(
                plain.starts_with(herald_kube::proto::MAGIC),
                "{}: the plaintext is the apiserver's protobuf",
                v.file
            );
            let object = Decoder::new()
                .keyring(&v.resource, &v.prefix, keys)
                .decode(v.rest(), &v.value, v.rv.into())
                .unwrap_or_else(|e| panic!("{}: {e}", v.file));
            let got: Value = serde_json::from_slice(object.payload()).unwrap();
            assert_eq!(got, v.served, "{}", v.file);
            assert_eq!(
                got["metadata"]["resourceVersion"],
                v.rv.to_string(),
                "{}",
                v.file
            );
        }
        // Without a keyring, an encrypted value is refused by name.
        let bare = Decoder::new().decode(v.rest(), &v.value, v.rv.into());
        if v.stored_as == "identity" {
            assert!(bare.is_ok(), "{}", v.file);
        } else {
            let provider = v.stored_as.split(':').next().unwrap();
            assert_eq!(bare.unwrap_err(), DecodeError::Encrypted(provider.into()));
        }
        seen.push(&v.stored_as);
    }
    seen.sort_unstable();
    seen.dedup();
    // Every provider, every AES key size (key0 and cbc16: 16 bytes, gcm24:
    // 24, key1 and cbc1: 32), a plain value beside encrypted ones, and a
    // resource no rule names.
    assert_eq!(
        seen,
        [
            "aescbc:cbc1",
            "aescbc:cbc16",
            "aesgcm:gcm24",
            "aesgcm:key0",
            "aesgcm:key1",
            "identity",
            "secretbox:box1",
            "secretbox:box2"
        ]
    );
    assert!(vectors.len() >= 12, "{} vectors", vectors.len());
}

/// The vectors' configuration with one key's secret replaced.
fn with_secret(config: &str, name: &str, secret: &str) -> String {
    let mut out = String::new();
    let mut replace = false;
    for line in config.lines() {
        if replace && line.trim_start().starts_with("secret:") {
            let indent = &line[..line.len() - line.trim_start().len()];
            out += &format!("{indent}secret: {secret}\n");
            replace = false;
            continue;
        }
        replace = line.trim() == format!("- name: {name}");
        out += line;
        out.push('\n');
    }
    assert_ne!(out.trim_end(), config.trim_end(), "no key {name}");
    out
}

/// Where the ciphertext starts: after `k8s:enc:<provider>:v1:<key>:`.
fn body(value: &[u8]) -> usize {
    value
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b':')
        .nth(4)
        .unwrap()
        .0
        + 1
}

fn decrypt_err(keys: &Keyring, v: &Vector, etcd_key: &str, value: &[u8]) -> CryptError {
    match keys.decrypt(&v.resource, etcd_key.as_bytes(), value) {
        Ok(_) => panic!("{}: decrypted", v.file),
        Err(e) => e,
    }
}

const ZERO_32: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
const ZERO_16: &str = "AAAAAAAAAAAAAAAAAAAAAA==";

#[test]
fn a_wrong_secret_under_the_same_name_does_not_open() {
    for (file, key, secret) in [
        ("secrets-crypt-s-gcm32.json", "key1", ZERO_32),
        ("secrets-crypt-s-gcm16.json", "key0", ZERO_16),
        ("configmaps-crypt-cm-cbc32.json", "cbc1", ZERO_32),
        ("configmaps-crypt-cm-box.json", "box2", ZERO_32),
        ("deployments-crypt-web.json", "box1", ZERO_32),
    ] {
        let v = vector(file);
        let keys = keyring(&with_secret(&v.config, key, secret));
        let e = decrypt_err(&keys, &v, &v.key, &v.value);
        let provider = v.stored_as.split(':').next().unwrap();
        assert_eq!(
            e,
            CryptError::Authentication {
                provider: provider.into(),
                key: key.into()
            },
            "{file}"
        );
        let d = Decoder::new()
            .keyring(&v.resource, &v.prefix, keys)
            .decode(v.rest(), &v.value, v.rv.into())
            .unwrap_err();
        assert_eq!(d, DecodeError::Crypt(e));
        assert_eq!(d.reason(), "decrypt");
    }
}

#[test]
fn truncated_values_are_typed() {
    for (file, prefix_len, keep, want_truncated) in [
        // aesgcm: under a nonce and a tag; then a tag cut short.
        (
            "secrets-crypt-s-gcm32.json",
            "k8s:enc:aesgcm:v1:key1:".len(),
            27,
            true,
        ),
        (
            "secrets-crypt-s-gcm32.json",
            "k8s:enc:aesgcm:v1:key1:".len(),
            0,
            true,
        ),
        (
            "secrets-crypt-s-gcm32.json",
            "k8s:enc:aesgcm:v1:key1:".len(),
            usize::MAX,
            false,
        ),
        // aescbc: under an IV; not whole blocks; the IV alone.
        (
            "configmaps-crypt-cm-cbc32.json",
            "k8s:enc:aescbc:v1:cbc1:".len(),
            15,
            true,
        ),
        (
            "configmaps-crypt-cm-cbc32.json",
            "k8s:enc:aescbc:v1:cbc1:".len(),
            usize::MAX,
            true,
        ),
        (
            "configmaps-crypt-cm-cbc32.json",
            "k8s:enc:aescbc:v1:cbc1:".len(),
            16,
            true,
        ),
        // secretbox: under a nonce and a tag; then the box cut short.
        (
            "configmaps-crypt-cm-box.json",
            "k8s:enc:secretbox:v1:box2:".len(),
            39,
            true,
        ),
        (
            "configmaps-crypt-cm-box.json",
            "k8s:enc:secretbox:v1:box2:".len(),
            usize::MAX,
            false,
        ),
    ] {
        let v = vector(file);
        let keys = keyring(&v.config);
        // usize::MAX: all but the last byte.
        let end = if keep == usize::MAX {
            v.value.len() - 1
        } else {
            prefix_len + keep
        };
        let e = decrypt_err(&keys, &v, &v.key, &v.value[..end]);
        if want_truncated {
            assert!(
                matches!(&e, CryptError::Truncated { len, .. } if *len == end - prefix_len),
                "{file} {keep}: {e:?}"
            );
        } else {
            assert!(
                matches!(e, CryptError::Authentication { .. }),
                "{file} {keep}: {e:?}"
            );
        }
        assert!(!e.lacks_key());
    }
}

#[test]
fn a_changed_byte_does_not_open() {
    for file in [
        "secrets-crypt-s-gcm32.json",
        "leases-crypt-leader.json",
        "configmaps-crypt-cm-box.json",
        "deployments-crypt-web.json",
    ] {
        let v = vector(file);
        let keys = keyring(&v.config);
        // The nonce's first byte, one in the middle, the last (the tag's
        // or the box's).
        for at in [body(&v.value), v.value.len() / 2 + 20, v.value.len() - 1] {
            let mut value = v.value.clone();
            value[at] ^= 0x01;
            let e = decrypt_err(&keys, &v, &v.key, &value);
            assert!(
                matches!(e, CryptError::Authentication { .. }),
                "{file} byte {at}: {e:?}"
            );
        }
    }
    // AES-CBC authenticates nothing: a change to the last block spoils its
    // padding; a change further in decrypts to garbage that does not
    // decode.
    let v = vector("configmaps-crypt-cm-cbc32.json");
    let keys = keyring(&v.config);
    let mut value = v.value.clone();
    *value.last_mut().unwrap() ^= 0x01;
    assert_eq!(
        decrypt_err(&keys, &v, &v.key, &value),
        CryptError::Authentication {
            provider: "aescbc".into(),
            key: "cbc1".into()
        }
    );
    let mut value = v.value.clone();
    value["k8s:enc:aescbc:v1:cbc1:".len() + 40] ^= 0x01;
    let d =
        Decoder::new()
            .keyring(&v.resource, &v.prefix, keys)
            .decode(v.rest(), &value, v.rv.into());
    assert!(
        matches!(d, Err(DecodeError::Proto(_) | DecodeError::Shape(_))),
        "{d:?}"
    );
}

#[test]
fn an_unknown_key_name_is_no_key() {
    let v = vector("secrets-crypt-s-gcm32.json");
    let keys = keyring(&v.config);
    let value = [
        b"k8s:enc:aesgcm:v1:key9:",
        &v.value["k8s:enc:aesgcm:v1:key1:".len()..],
    ]
    .concat();
    let e = decrypt_err(&keys, &v, &v.key, &value);
    assert_eq!(
        e,
        CryptError::NoKey {
            provider: "aesgcm".into(),
            key: "key9".into()
        }
    );
    assert!(e.lacks_key());
    let d = Decoder::new()
        .keyring(&v.resource, &v.prefix, keys)
        .decode(v.rest(), &value, v.rv.into())
        .unwrap_err();
    assert_eq!(d.reason(), "encrypted");
}

#[test]
fn an_unknown_provider_or_one_the_resource_has_not_is_refused() {
    let v = vector("secrets-crypt-s-gcm32.json");
    let keys = keyring(&v.config);
    let unknown = [
        b"k8s:enc:rot13:v1:key1:",
        &v.value["k8s:enc:aesgcm:v1:key1:".len()..],
    ]
    .concat();
    assert_eq!(
        decrypt_err(&keys, &v, &v.key, &unknown),
        CryptError::UnknownProvider {
            provider: "rot13".into(),
            resource: "secrets".into()
        }
    );
    // A secretbox value read as a secret: secrets have no secretbox.
    let boxed = vector("configmaps-crypt-cm-box.json");
    assert_eq!(
        decrypt_err(&keys, &v, &boxed.key, &boxed.value),
        CryptError::UnknownProvider {
            provider: "secretbox".into(),
            resource: "secrets".into()
        }
    );
    // A resource no rule names reads plain values only.
    let e = keys
        .decrypt("pods", b"/registry/pods/a/b", &v.value)
        .unwrap_err();
    assert!(matches!(e, CryptError::UnknownProvider { .. }), "{e:?}");
    // The group is part of the resource's name: `deployments` alone is
    // the core group's, which `*.` covers with aescbc, not `*.apps`.
    let web = vector("deployments-crypt-web.json");
    assert!(
        keys.decrypt("deployments.apps", web.key.as_bytes(), &web.value)
            .is_ok()
    );
    assert_eq!(
        keys.decrypt("deployments", web.key.as_bytes(), &web.value)
            .unwrap_err(),
        CryptError::UnknownProvider {
            provider: "secretbox".into(),
            resource: "deployments".into()
        }
    );
}

#[test]
fn a_kms_value_is_typed_as_kms() {
    let v = vector("secrets-crypt-s-gcm32.json");
    let config = v.config.replacen(
        "      - identity: {}\n      - aesgcm:",
        "      - kms:\n          apiVersion: v2\n          name: vault\n          \
         endpoint: unix:///run/kms.sock\n      - kms:\n          name: legacy\n          \
         endpoint: unix:///run/kms1.sock\n      - identity: {}\n      - aesgcm:",
        1,
    );
    assert_ne!(config, v.config);
    let keys = keyring(&config);
    // The AES-GCM value still opens, after the plugins.
    assert!(keys.decrypt("secrets", v.key.as_bytes(), &v.value).is_ok());
    for (value, name, api) in [
        (&b"k8s:enc:kms:v2:vault:\x0a\x10sealed"[..], "vault", "v2"),
        (&b"k8s:enc:kms:v1:legacy:\x00\x20sealed"[..], "legacy", "v1"),
    ] {
        let e = decrypt_err(&keys, &v, &v.key, value);
        assert_eq!(
            e,
            CryptError::Kms {
                name: name.into(),
                api_version: api.into()
            }
        );
        assert!(e.lacks_key());
        assert_eq!(e.provider(), Some("kms"));
    }
    // A plugin the file does not name is an unknown prefix, as for the
    // apiserver.
    assert!(matches!(
        decrypt_err(&keys, &v, &v.key, b"k8s:enc:kms:v2:other:xx"),
        CryptError::UnknownProvider { .. }
    ));
}

#[test]
fn a_value_moved_to_another_key_does_not_open_under_aes_gcm() {
    let v = vector("secrets-crypt-s-gcm32.json");
    let keys = keyring(&v.config);
    let e = decrypt_err(&keys, &v, "/registry/secrets/crypt/s-gcm16", &v.value);
    assert_eq!(
        e,
        CryptError::Authentication {
            provider: "aesgcm".into(),
            key: "key1".into()
        }
    );
    // The decoder authenticates prefix and key together.
    let decoder = Decoder::new().keyring(&v.resource, &v.prefix, keys.clone());
    assert_eq!(
        decoder.decode(b"crypt/s-gcm16", &v.value, v.rv.into()),
        Err(DecodeError::Crypt(e))
    );
    let wrong_prefix = Decoder::new().keyring(&v.resource, "/kubernetes/secrets/", keys);
    assert!(matches!(
        wrong_prefix.decode(v.rest(), &v.value, v.rv.into()),
        Err(DecodeError::Crypt(CryptError::Authentication { .. }))
    ));
    // aescbc and secretbox authenticate no key, as in the apiserver: a
    // moved value opens, and the decoder then finds the names differ.
    for file in [
        "configmaps-crypt-cm-cbc32.json",
        "configmaps-crypt-cm-box.json",
    ] {
        let v = vector(file);
        let keys = keyring(&v.config);
        assert!(
            keys.decrypt(&v.resource, b"/registry/configmaps/crypt/other", &v.value)
                .is_ok()
        );
        let d = Decoder::new().keyring(&v.resource, &v.prefix, keys).decode(
            b"crypt/other",
            &v.value,
            v.rv.into(),
        );
        assert!(matches!(d, Err(DecodeError::Shape(_))), "{file}: {d:?}");
    }
}
