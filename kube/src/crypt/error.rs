//! [`CryptError`]: why an encryption configuration or a value encrypted
//! at rest could not be read.

use std::fmt;

/// Why a configuration could not be loaded or a value decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptError {
    /// The configuration cannot be read, is not an
    /// `EncryptionConfiguration`, or is one the apiserver refuses: why.
    Config(String),
    /// A key's secret is not of a length its provider takes (16, 24 or 32
    /// bytes for `aesgcm` and `aescbc`, 32 for `secretbox`).
    KeyLength {
        /// `aesgcm`, `aescbc` or `secretbox`.
        provider: String,
        /// The key's name.
        key: String,
        /// The secret's length, in bytes.
        len: usize,
    },
    /// The value's `k8s:enc:<provider>:` names no provider the resource
    /// has (or none Herald knows): the apiserver's "no matching prefix
    /// found".
    UnknownProvider {
        /// The name after `k8s:enc:`.
        provider: String,
        /// The resource it was read for.
        resource: String,
    },
    /// The value names a key (`k8s:enc:<provider>:v1:<key>:`) that none of
    /// the resource's providers of that kind has.
    NoKey {
        /// The provider.
        provider: String,
        /// The key's name in the value.
        key: String,
    },
    /// The key does not open the value: a different secret under the same
    /// name, a changed byte, or (AES-GCM, which authenticates the etcd
    /// key) a value moved from another key. For `aescbc`, which
    /// authenticates nothing, the padding did not check.
    Authentication {
        /// The provider.
        provider: String,
        /// The key's name.
        key: String,
    },
    /// The value is shorter than its nonce (or IV) and tag, or is not
    /// whole blocks.
    Truncated {
        /// The provider.
        provider: String,
        /// The key's name.
        key: String,
        /// The length after the prefix, in bytes.
        len: usize,
        /// What it is too short for.
        why: &'static str,
    },
    /// The value is sealed by a KMS plugin (envelope encryption): its data
    /// key only the plugin can open, and Herald does not call it.
    Kms {
        /// The plugin's name in the configuration.
        name: String,
        /// `v1` or `v2`.
        api_version: String,
    },
}

impl CryptError {
    /// The provider the error is about (`aesgcm`, `kms`), where there is
    /// one.
    pub fn provider(&self) -> Option<&str> {
        match self {
            CryptError::Config(_) => None,
            CryptError::KeyLength { provider, .. }
            | CryptError::UnknownProvider { provider, .. }
            | CryptError::NoKey { provider, .. }
            | CryptError::Authentication { provider, .. }
            | CryptError::Truncated { provider, .. } => Some(provider),
            CryptError::Kms { .. } => Some("kms"),
        }
    }

    /// Whether the value is sealed with a key Herald does not have (an
    /// unknown provider or key name, or a KMS plugin), rather than one
    /// that failed to open it.
    pub fn lacks_key(&self) -> bool {
        matches!(
            self,
            CryptError::UnknownProvider { .. } | CryptError::NoKey { .. } | CryptError::Kms { .. }
        )
    }
}

impl fmt::Display for CryptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptError::Config(why) => write!(f, "encryption provider configuration: {why}"),
            CryptError::KeyLength { provider, key, len } => write!(
                f,
                "{provider} key {key:?}: a secret of {len} bytes (aesgcm and aescbc take 16, 24 \
                 or 32, secretbox 32)"
            ),
            CryptError::UnknownProvider { provider, resource } => write!(
                f,
                "encrypted by provider {provider:?}, which is not one of {resource:?}'s"
            ),
            CryptError::NoKey { provider, key } => {
                write!(
                    f,
                    "encrypted with {provider} key {key:?}, which is not configured"
                )
            }
            CryptError::Authentication { provider, key } => write!(
                f,
                "{provider} key {key:?} does not open the value (another secret, a changed \
                 byte, or a value moved from another etcd key)"
            ),
            CryptError::Truncated {
                provider,
                key,
                len,
                why,
            } => write!(f, "{provider} key {key:?}: {len} bytes: {why}"),
            CryptError::Kms { name, api_version } => write!(
                f,
                "encrypted by KMS {api_version} plugin {name:?}, which Herald cannot call"
            ),
        }
    }
}

impl std::error::Error for CryptError {}
