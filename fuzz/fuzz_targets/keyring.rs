//! Fuzz target for [`herald_kube::Keyring`]: the `EncryptionConfiguration`
//! parser and decryption, hostile.
//!
//! Input: the first byte picks a form, the rest is the input:
//!
//! * `0`: the bytes as an encryption configuration (`Keyring::parse`);
//! * `1..`: the bytes as a stored value, decrypted with a configuration
//!   captured from the real kube-apiserver (`aesgcm`, `aescbc`, `secretbox`,
//!   `identity`, wildcards), for one of its resources under one of two etcd
//!   keys; `2` puts `k8s:enc:` and a provider's prefix before the bytes, to
//!   reach the providers' own parsing.
//!
//! Checked: no panic, and every failure a typed `CryptError` whose
//! `Display` works; a value without the `k8s:enc:` prefix comes back as it
//! was (borrowed); a value decrypted under one etcd key is not the same
//! plaintext under another for `aesgcm` (the key is authenticated data).

#![no_main]

use std::borrow::Cow;
use std::sync::OnceLock;

use herald_kube::Keyring;
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = "# Phase 3: secrets written in plain text again (identity first), every older key kept to read.\napiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources:\n      - secrets\n    providers:\n      - identity: {}\n      - aesgcm:\n          keys:\n            - name: key0\n              secret: gpz71VJZ0r/+O6Tb+HIB0g==\n            - name: key1\n              secret: MhqJwhQw7CFOTTVgZLlwGg7qoPevBQY41ETL+A6/KGY=\n  - resources:\n      - configmaps\n    providers:\n      - secretbox:\n          keys:\n            - name: box2\n              secret: U/2kBlFfdR5XAQcT8J0vJYGd7k+24vxxoYtQbu9Iorc=\n      - aescbc:\n          keys:\n            - name: cbc1\n              secret: wQFoNWSf45q8T6BpTSk2LmtfdtKF+N+yi2OSqBlAjjw=\n      - identity: {}\n  - resources:\n      - leases.coordination.k8s.io\n    providers:\n      - aesgcm:\n          keys:\n            - name: gcm24\n              secret: MzsDnVqa1uOSB8YdKivFpfDiF3M5raOT\n      - identity: {}\n  - resources:\n      - \"*.apps\"\n    providers:\n      - secretbox:\n          keys:\n            - name: box1\n              secret: 6OKiG+Ca1XurqbLSXQvMiSBnrkRiPR8iQcbA5b2rJvA=\n      - identity: {}\n  - resources:\n      - \"*.\"\n    providers:\n      - aescbc:\n          keys:\n            - name: cbc16\n              secret: UPRKElxGynG84+OcUu0AXg==\n      - identity: {}\n";

const PREFIXES: [&str; 4] = [
    "k8s:enc:aesgcm:v1:key1:",
    "k8s:enc:aescbc:v1:cbc1:",
    "k8s:enc:secretbox:v1:box2:",
    "k8s:enc:kms:v2:plugin:",
];

const RESOURCES: [&str; 4] = ["secrets", "configmaps", "leases.coordination.k8s.io", "deployments.apps"];

fn keyring() -> &'static Keyring {
    static K: OnceLock<Keyring> = OnceLock::new();
    K.get_or_init(|| Keyring::parse(CONFIG).expect("the captured configuration parses"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else {
        return;
    };
    if form == 0 {
        if let Ok(text) = std::str::from_utf8(rest) {
            if let Err(e) = Keyring::parse(text) {
                let _ = e.to_string();
            }
        }
        return;
    }
    let resource = RESOURCES[usize::from(form) % RESOURCES.len()];
    let value: Vec<u8> = if form % 2 == 0 {
        [PREFIXES[usize::from(form / 2) % PREFIXES.len()].as_bytes(), rest].concat()
    } else {
        rest.to_vec()
    };
    let a = keyring().decrypt(resource, b"/registry/x/ns/a", &value);
    match &a {
        Ok(Cow::Borrowed(b)) => assert_eq!(*b, &value[..], "a borrowed answer is the value itself"),
        Ok(Cow::Owned(_)) => assert!(value.starts_with(b"k8s:enc:"), "only an encrypted value is decrypted"),
        Err(e) => {
            let _ = (e.to_string(), e.provider(), e.lacks_key());
        }
    }
    if !value.starts_with(b"k8s:enc:") {
        assert!(matches!(a, Ok(Cow::Borrowed(_))), "a plain value passes through");
    }
    if value.starts_with(b"k8s:enc:aesgcm:") {
        if let (Ok(Cow::Owned(x)), Ok(Cow::Owned(y))) =
            (&a, &keyring().decrypt(resource, b"/registry/x/ns/b", &value))
        {
            panic!("aesgcm opened the same value under two keys: {x:?} {y:?}");
        }
    }
});
