//! The public keys service-account tokens are checked against, read as
//! kube-apiserver reads `--service-account-key-file`: PEM blocks of
//! public keys (`PUBLIC KEY`, `RSA PUBLIC KEY`) or, if a file holds
//! none, of private keys (`PRIVATE KEY`, `RSA PRIVATE KEY`,
//! `EC PRIVATE KEY`) whose public halves are used; RSA, and ECDSA on
//! P-256 and P-384. Each key's id is the apiserver's: the base64url
//! SHA-256 of its `SubjectPublicKeyInfo` DER.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, KeyPair as _};

/// A key's algorithm family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// RSA (tokens signed RS256).
    Rsa,
    /// ECDSA on P-256 (ES256).
    P256,
    /// ECDSA on P-384 (ES384).
    P384,
}

/// One public key.
#[derive(Debug, Clone)]
pub struct PublicKey {
    /// Its id (`kid`).
    pub kid: String,
    /// Its family.
    pub kind: KeyKind,
    /// What ring verifies with: the PKCS#1 `RSAPublicKey`, or the
    /// uncompressed EC point.
    pub(crate) key: Vec<u8>,
}

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

/// A DER element: (tag, content, what follows it).
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn bit_string(bytes: &[u8]) -> Vec<u8> {
    let mut content = vec![0];
    content.extend_from_slice(bytes);
    der(0x03, &content)
}

/// The `SubjectPublicKeyInfo` DER of a key.
fn spki(kind: KeyKind, key: &[u8]) -> Vec<u8> {
    let algorithm = match kind {
        KeyKind::Rsa => [der(0x06, OID_RSA), vec![0x05, 0x00]].concat(),
        KeyKind::P256 => [der(0x06, OID_EC), der(0x06, OID_P256)].concat(),
        KeyKind::P384 => [der(0x06, OID_EC), der(0x06, OID_P384)].concat(),
    };
    der(0x30, &[der(0x30, &algorithm), bit_string(key)].concat())
}

impl PublicKey {
    fn new(kind: KeyKind, key: Vec<u8>) -> PublicKey {
        let digest = ring::digest::digest(&ring::digest::SHA256, &spki(kind, &key));
        PublicKey {
            kid: URL_SAFE_NO_PAD.encode(digest.as_ref()),
            kind,
            key,
        }
    }

    /// A `SubjectPublicKeyInfo`'s key.
    fn from_spki(spki_der: &[u8]) -> Result<PublicKey, String> {
        let (_, body, _) = tlv(spki_der)
            .filter(|t| t.0 == 0x30)
            .ok_or("not a public key")?;
        let (_, algorithm, rest) = tlv(body).filter(|t| t.0 == 0x30).ok_or("no algorithm")?;
        let (_, oid, params) = tlv(algorithm)
            .filter(|t| t.0 == 0x06)
            .ok_or("no algorithm")?;
        let (_, bits, _) = tlv(rest).filter(|t| t.0 == 0x03).ok_or("no key bits")?;
        let key = bits.get(1..).ok_or("no key bits")?.to_vec();
        let kind = if oid == OID_RSA {
            KeyKind::Rsa
        } else if oid == OID_EC {
            match tlv(params) {
                Some((0x06, curve, _)) if curve == OID_P256 => KeyKind::P256,
                Some((0x06, curve, _)) if curve == OID_P384 => KeyKind::P384,
                _ => return Err("an EC key on a curve other than P-256 and P-384".into()),
            }
        } else {
            return Err("a key that is neither RSA nor ECDSA".into());
        };
        Ok(PublicKey::new(kind, key))
    }
}

/// Why a key file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFileError(pub String);

impl std::fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "service-account key file: {}", self.0)
    }
}

impl std::error::Error for KeyFileError {}

/// The PEM blocks of a text: (label, DER).
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(label) = line
            .trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        loop {
            match lines.next() {
                Some(l) if l.trim() == end => break,
                Some(l) if l.contains(':') => {} // PEM headers
                Some(l) => body.push_str(l.trim()),
                None => return Err(format!("{label}: no END line")),
            }
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| format!("{label}: {e}"))?;
        out.push((label.to_owned(), der));
    }
    Ok(out)
}

/// The public keys of a key file's text.
pub fn parse_keys(text: &str) -> Result<Vec<PublicKey>, KeyFileError> {
    let blocks = pem_blocks(text).map_err(KeyFileError)?;
    let mut keys = Vec::new();
    for (label, body) in &blocks {
        match label.as_str() {
            "PUBLIC KEY" => keys.push(PublicKey::from_spki(body).map_err(KeyFileError)?),
            "RSA PUBLIC KEY" => keys.push(PublicKey::new(KeyKind::Rsa, body.clone())),
            _ => {}
        }
    }
    if !keys.is_empty() {
        return Ok(keys);
    }
    for (label, body) in &blocks {
        match label.as_str() {
            "RSA PRIVATE KEY" => {
                let pair = signature::RsaKeyPair::from_der(body)
                    .map_err(|e| KeyFileError(format!("RSA PRIVATE KEY: {e}")))?;
                keys.push(PublicKey::new(
                    KeyKind::Rsa,
                    pair.public_key().as_ref().to_vec(),
                ));
            }
            "PRIVATE KEY" => keys.push(pkcs8_public(body).map_err(KeyFileError)?),
            "EC PRIVATE KEY" => keys.push(sec1_public(body).map_err(KeyFileError)?),
            _ => {}
        }
    }
    if keys.is_empty() {
        return Err(KeyFileError("no public or private key in it".into()));
    }
    Ok(keys)
}

/// The public half of a PKCS#8 private key.
fn pkcs8_public(der: &[u8]) -> Result<PublicKey, String> {
    if let Ok(pair) = signature::RsaKeyPair::from_pkcs8(der) {
        return Ok(PublicKey::new(
            KeyKind::Rsa,
            pair.public_key().as_ref().to_vec(),
        ));
    }
    let rng = ring::rand::SystemRandom::new();
    for (alg, kind) in [
        (&signature::ECDSA_P256_SHA256_FIXED_SIGNING, KeyKind::P256),
        (&signature::ECDSA_P384_SHA384_FIXED_SIGNING, KeyKind::P384),
    ] {
        if let Ok(pair) = signature::EcdsaKeyPair::from_pkcs8(alg, der, &rng) {
            return Ok(PublicKey::new(kind, pair.public_key().as_ref().to_vec()));
        }
    }
    Err("PRIVATE KEY: neither RSA nor ECDSA on P-256 or P-384".into())
}

/// The public half of a SEC1 `ECPrivateKey` (its `[1] publicKey`, on the
/// curve its `[0] parameters` name).
fn sec1_public(der: &[u8]) -> Result<PublicKey, String> {
    let bad = || "EC PRIVATE KEY: malformed".to_owned();
    let (_, mut body, _) = tlv(der).filter(|t| t.0 == 0x30).ok_or_else(bad)?;
    let (mut curve, mut point) = (None, None);
    while let Some((tag, content, rest)) = tlv(body) {
        match tag {
            0xa0 => curve = tlv(content).map(|t| t.1.to_vec()),
            0xa1 => point = tlv(content).and_then(|t| t.1.get(1..)).map(<[u8]>::to_vec),
            _ => {}
        }
        body = rest;
    }
    let kind = match curve.as_deref() {
        Some(c) if c == OID_P256 => KeyKind::P256,
        Some(c) if c == OID_P384 => KeyKind::P384,
        _ => {
            return Err("EC PRIVATE KEY: a curve other than P-256 and P-384, or none named".into());
        }
    };
    Ok(PublicKey::new(
        kind,
        point.ok_or("EC PRIVATE KEY: no public key in it")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths_round_trip() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let content = vec![7u8; len];
            let encoded = der(0x04, &content);
            let (tag, body, rest) = tlv(&encoded).unwrap();
            assert_eq!((tag, body.len(), rest.len()), (0x04, len, 0));
        }
        assert!(tlv(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(tlv(&[0x30, 0x05, 1]).is_none());
    }

    #[test]
    fn files_without_keys_are_refused() {
        assert!(parse_keys("").is_err());
        assert!(parse_keys("-----BEGIN PUBLIC KEY-----\nAAAA\n").is_err());
        assert!(parse_keys("-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----\n").is_err());
        assert!(
            parse_keys("-----BEGIN PUBLIC KEY-----\nMAA=\n-----END PUBLIC KEY-----\n").is_err()
        );
    }
}
