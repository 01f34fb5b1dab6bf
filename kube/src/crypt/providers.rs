//! The providers, each reading what the apiserver's transformer of the
//! same name writes (`k8s.io/apiserver/pkg/storage/value/encrypt/...`):
//!
//! - `aesgcm` (`aes.gcm.TransformFromStorage`): a 12-byte nonce, then
//!   AES-GCM's ciphertext and 16-byte tag; the authenticated data is the
//!   etcd key (`storage/etcd3/store.go`: `authenticatedDataString(key)`);
//! - `aescbc` (`aes.cbc.TransformFromStorage`): a 16-byte IV, then whole
//!   AES-CBC blocks with PKCS#7 padding; nothing authenticated;
//! - `secretbox` (`secretbox.TransformFromStorage`): a 24-byte nonce,
//!   then NaCl's secretbox (a 16-byte Poly1305 tag, then XSalsa20's
//!   ciphertext); the etcd key is not used;
//! - `identity`: reads no `k8s:enc:` value (`identity.go`);
//! - `kms`: recognised by its prefix; its data key is sealed by a plugin
//!   Herald cannot reach.
//!
//! Each key of a provider is tried under its own prefix, `<name>:`, after
//! the provider's (`k8s:enc:aesgcm:v1:`): `aesPrefixTransformer`,
//! `secretboxPrefixTransformer` in `encryptionconfig/config.go`.

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockCipher, BlockDecryptMut, InnerIvInit};
use crypto_secretbox::XSalsa20Poly1305;

use super::config::{NamedKey, ProviderConfig};
use super::error::CryptError;

/// AES-GCM with a 192-bit key (the aes-gcm crate names only 128 and 256).
type Aes192Gcm = AesGcm<Aes192, U12>;

/// A provider ready to decrypt.
pub(crate) enum Provider {
    AesGcm(Vec<Key<Gcm>>),
    AesCbc(Vec<Key<Cbc>>),
    Secretbox(Vec<Key<XSalsa20Poly1305>>),
    Identity,
    Kms {
        name: String,
        api_version: String,
        prefix: Vec<u8>,
    },
}

/// A named key's cipher, under its prefix `<name>:`.
pub(crate) struct Key<C> {
    name: String,
    prefix: Vec<u8>,
    cipher: C,
}

/// AES-GCM's cipher for each key size.
pub(crate) enum Gcm {
    A128(Box<Aes128Gcm>),
    A192(Box<Aes192Gcm>),
    A256(Box<Aes256Gcm>),
}

/// AES's block cipher for each key size, for CBC.
pub(crate) enum Cbc {
    A128(Box<Aes128>),
    A192(Box<Aes192>),
    A256(Box<Aes256>),
}

const GCM_NONCE: usize = 12;
const GCM_TAG: usize = 16;
const AES_BLOCK: usize = 16;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;

impl Provider {
    /// The provider's ciphers; the key sizes were checked with the
    /// configuration, and are checked again here.
    pub(crate) fn new(config: ProviderConfig) -> Result<Provider, CryptError> {
        fn keys<C>(
            keys: Vec<NamedKey>,
            provider: &str,
            make: impl Fn(&[u8]) -> Option<C>,
        ) -> Result<Vec<Key<C>>, CryptError> {
            keys.into_iter()
                .map(|k| match make(&k.secret) {
                    Some(cipher) => Ok(Key {
                        prefix: format!("{}:", k.name).into_bytes(),
                        name: k.name,
                        cipher,
                    }),
                    None => Err(CryptError::KeyLength {
                        provider: provider.into(),
                        key: k.name,
                        len: k.secret.len(),
                    }),
                })
                .collect()
        }
        Ok(match config {
            ProviderConfig::AesGcm(k) => Provider::AesGcm(keys(k, "aesgcm", |s| {
                Some(match s.len() {
                    16 => Gcm::A128(Box::new(Aes128Gcm::new_from_slice(s).ok()?)),
                    24 => Gcm::A192(Box::new(Aes192Gcm::new_from_slice(s).ok()?)),
                    32 => Gcm::A256(Box::new(Aes256Gcm::new_from_slice(s).ok()?)),
                    _ => return None,
                })
            })?),
            ProviderConfig::AesCbc(k) => Provider::AesCbc(keys(k, "aescbc", |s| {
                Some(match s.len() {
                    16 => Cbc::A128(Box::new(Aes128::new_from_slice(s).ok()?)),
                    24 => Cbc::A192(Box::new(Aes192::new_from_slice(s).ok()?)),
                    32 => Cbc::A256(Box::new(Aes256::new_from_slice(s).ok()?)),
                    _ => return None,
                })
            })?),
            ProviderConfig::Secretbox(k) => Provider::Secretbox(keys(k, "secretbox", |s| {
                XSalsa20Poly1305::new_from_slice(s).ok()
            })?),
            ProviderConfig::Identity => Provider::Identity,
            ProviderConfig::Kms { name, api_version } => Provider::Kms {
                prefix: format!("k8s:enc:kms:{api_version}:{name}:").into_bytes(),
                name,
                api_version,
            },
        })
    }

    /// The provider's name in the configuration and in its prefix.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Provider::AesGcm(_) => "aesgcm",
            Provider::AesCbc(_) => "aescbc",
            Provider::Secretbox(_) => "secretbox",
            Provider::Identity => "identity",
            Provider::Kms { .. } => "kms",
        }
    }

    /// The prefix of the values it writes (empty for identity).
    pub(crate) fn prefix(&self) -> &[u8] {
        match self {
            Provider::AesGcm(_) => b"k8s:enc:aesgcm:v1:",
            Provider::AesCbc(_) => b"k8s:enc:aescbc:v1:",
            Provider::Secretbox(_) => b"k8s:enc:secretbox:v1:",
            Provider::Identity => b"",
            Provider::Kms { prefix, .. } => prefix,
        }
    }

    /// The names of its keys, in order (a KMS plugin's name).
    pub(crate) fn key_names(&self) -> Vec<&str> {
        fn names<C>(keys: &[Key<C>]) -> Vec<&str> {
            keys.iter().map(|k| k.name.as_str()).collect()
        }
        match self {
            Provider::AesGcm(k) => names(k),
            Provider::AesCbc(k) => names(k),
            Provider::Secretbox(k) => names(k),
            Provider::Identity => Vec::new(),
            Provider::Kms { name, .. } => vec![name],
        }
    }

    /// Opens `data`, the value after [`Provider::prefix`], stored under
    /// `etcd_key`. Every key whose prefix matches is tried in order, the
    /// first that opens the value wins (the apiserver's
    /// `prefixTransformers.TransformFromStorage`, which does not stop at a
    /// failing match: two keys may share a prefix while one is rotated
    /// out).
    pub(crate) fn open(&self, data: &[u8], etcd_key: &[u8]) -> Result<Vec<u8>, CryptError> {
        match self {
            Provider::AesGcm(keys) => try_keys(keys, "aesgcm", data, |k, d| gcm(k, d, etcd_key)),
            Provider::AesCbc(keys) => try_keys(keys, "aescbc", data, cbc),
            Provider::Secretbox(keys) => try_keys(keys, "secretbox", data, secretbox),
            // Unreachable through the keyring, which skips identity for a
            // `k8s:enc:` value (identity refuses to read one).
            Provider::Identity => Err(CryptError::UnknownProvider {
                provider: "identity".into(),
                resource: String::new(),
            }),
            Provider::Kms {
                name, api_version, ..
            } => Err(CryptError::Kms {
                name: name.clone(),
                api_version: api_version.clone(),
            }),
        }
    }
}

/// The failures of one value, by how much they tell: a key that was
/// tried and failed says more than a key that was not there.
pub(crate) fn better(a: Option<CryptError>, b: CryptError) -> CryptError {
    let no_key = |e: &CryptError| matches!(e, CryptError::NoKey { .. });
    match a {
        Some(a) if !no_key(&a) || no_key(&b) => a,
        _ => b,
    }
}

fn try_keys<C>(
    keys: &[Key<C>],
    provider: &str,
    data: &[u8],
    open: impl Fn(&Key<C>, &[u8]) -> Result<Vec<u8>, Failure>,
) -> Result<Vec<u8>, CryptError> {
    let mut error = None;
    for key in keys {
        if let Some(rest) = data.strip_prefix(key.prefix.as_slice()) {
            match open(key, rest) {
                Ok(plain) => return Ok(plain),
                Err(f) => {
                    let e = f.into_error(provider, &key.name, rest.len());
                    error = Some(better(error, e));
                }
            }
        }
    }
    Err(error.unwrap_or_else(|| CryptError::NoKey {
        provider: provider.into(),
        key: String::from_utf8_lossy(data.split(|&b| b == b':').next().unwrap_or_default())
            .into_owned(),
    }))
}

/// How one key failed to open a value.
enum Failure {
    /// Shorter than its nonce or IV and tag, or not whole blocks.
    Truncated(&'static str),
    /// The tag or the padding does not check.
    Authentication,
}

impl Failure {
    fn into_error(self, provider: &str, key: &str, len: usize) -> CryptError {
        match self {
            Failure::Truncated(why) => CryptError::Truncated {
                provider: provider.into(),
                key: key.into(),
                len,
                why,
            },
            Failure::Authentication => CryptError::Authentication {
                provider: provider.into(),
                key: key.into(),
            },
        }
    }
}

/// `aes.gcm.TransformFromStorage`: nonce, ciphertext and tag, the etcd
/// key authenticated.
fn gcm(key: &Key<Gcm>, data: &[u8], etcd_key: &[u8]) -> Result<Vec<u8>, Failure> {
    // Go's `Open` calls a value shorter than a tag unauthentic; it is
    // truncated, and said so.
    if data.len() < GCM_NONCE + GCM_TAG {
        return Err(Failure::Truncated(
            "shorter than AES-GCM's 12-byte nonce and 16-byte tag",
        ));
    }
    let (nonce, sealed) = data.split_at(GCM_NONCE);
    let nonce = aes_gcm::Nonce::from_slice(nonce);
    let payload = Payload {
        msg: sealed,
        aad: etcd_key,
    };
    match &key.cipher {
        Gcm::A128(c) => c.decrypt(nonce, payload),
        Gcm::A192(c) => c.decrypt(nonce, payload),
        Gcm::A256(c) => c.decrypt(nonce, payload),
    }
    .map_err(|_| Failure::Authentication)
}

/// `aes.cbc.TransformFromStorage`: IV and blocks, the PKCS#7 padding
/// checked as the apiserver checks it (any length from 1 to the whole
/// plaintext, every byte equal to it).
fn cbc(key: &Key<Cbc>, data: &[u8]) -> Result<Vec<u8>, Failure> {
    if data.len() < AES_BLOCK {
        return Err(Failure::Truncated("shorter than AES-CBC's 16-byte IV"));
    }
    let (iv, blocks) = data.split_at(AES_BLOCK);
    if blocks.len() % AES_BLOCK != 0 {
        return Err(Failure::Truncated(
            "the stored data is not a multiple of the block size",
        ));
    }
    // Go's reader takes the last byte of the empty plaintext (and
    // panics); there is nothing to decrypt.
    if blocks.is_empty() {
        return Err(Failure::Truncated("no block after the IV"));
    }
    let mut plain = blocks.to_vec();
    let whole = match &key.cipher {
        Cbc::A128(c) => cbc_blocks(&**c, iv, &mut plain),
        Cbc::A192(c) => cbc_blocks(&**c, iv, &mut plain),
        Cbc::A256(c) => cbc_blocks(&**c, iv, &mut plain),
    };
    if !whole {
        return Err(Failure::Truncated(
            "the stored data is not a multiple of the block size",
        ));
    }
    let last = plain.last().copied().unwrap_or(0);
    let pad = usize::from(last);
    if pad == 0 || pad > plain.len() || plain[plain.len() - pad..].iter().any(|&b| b != last) {
        return Err(Failure::Authentication);
    }
    plain.truncate(plain.len() - pad);
    Ok(plain)
}

/// Decrypts whole blocks in place, chained from `iv` (no padding
/// removed); false when they are not whole blocks.
fn cbc_blocks<C>(cipher: &C, iv: &[u8], buf: &mut [u8]) -> bool
where
    C: BlockCipher + BlockDecryptMut + Clone,
    cbc::Decryptor<C>: InnerIvInit<Inner = C> + BlockDecryptMut,
{
    match cbc::Decryptor::<C>::inner_iv_slice_init(cipher.clone(), iv) {
        Ok(d) => d.decrypt_padded_mut::<NoPadding>(buf).is_ok(),
        Err(_) => false,
    }
}

/// `secretbox.TransformFromStorage`: nonce, then NaCl's box (tag first).
fn secretbox(key: &Key<XSalsa20Poly1305>, data: &[u8]) -> Result<Vec<u8>, Failure> {
    if data.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
        return Err(Failure::Truncated(
            "shorter than secretbox's 24-byte nonce and 16-byte tag",
        ));
    }
    let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
    key.cipher
        .decrypt(crypto_secretbox::Nonce::from_slice(nonce), sealed)
        .map_err(|_| Failure::Authentication)
}
