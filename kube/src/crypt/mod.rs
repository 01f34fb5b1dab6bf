//! Values encrypted at rest, read as kube-apiserver reads them.
//!
//! The apiserver encrypts what it stores with the providers of its
//! `--encryption-provider-config` file (an `EncryptionConfiguration`):
//! each resource's first provider writes, the others only read, and every
//! encrypted value starts with the prefix of what wrote it,
//! `k8s:enc:<provider>:v1:<key name>:` (`k8s:enc:kms:v2:<plugin>:` for a
//! KMS plugin). A [`Keyring`] is loaded from the same file and reads them
//! back: [`Keyring::decrypt`] finds the resource's providers, tries each
//! whose prefix the value has, in the file's order, and returns the
//! plaintext (the apiserver's protobuf or JSON, for the [`Decoder`]).
//!
//! ```
//! use herald_kube::crypt::{CryptError, Keyring};
//! let keyring = Keyring::parse(r#"
//! apiVersion: apiserver.config.k8s.io/v1
//! kind: EncryptionConfiguration
//! resources:
//!   - resources: [secrets]
//!     providers:
//!       - aesgcm:
//!           keys:
//!             - name: key1
//!               secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
//!       - identity: {}
//! "#)?;
//! // Plain values are read as they are.
//! let plain = keyring.decrypt("secrets", b"/registry/secrets/ns/a", b"k8s\0...")?;
//! assert_eq!(&*plain, b"k8s\0...");
//! // A value written by a key the file does not have is a typed error.
//! let err = keyring
//!     .decrypt("secrets", b"/registry/secrets/ns/a", b"k8s:enc:aesgcm:v1:key2:...")
//!     .unwrap_err();
//! assert!(matches!(err, CryptError::NoKey { .. }));
//! # Ok::<(), CryptError>(())
//! ```
//!
//! What is read exactly as the apiserver reads it (`k8s.io/apiserver`
//! v0.37.2): the file (see `config.rs`); which providers a resource has
//! (`transformerFromOverrides`: the resource's own entry, else its
//! group's `*.group`, else `*.*`); the order providers and keys are tried
//! in (`prefixTransformers.TransformFromStorage`); each provider's format
//! (`providers.rs`); AES-GCM's authenticated data, the whole etcd key
//! (`authenticatedDataString(key)` in `storage/etcd3/store.go`; aescbc
//! and secretbox authenticate nothing). One difference: a value with no
//! `k8s:enc:` prefix is returned as it is, whatever the resource's
//! providers; the apiserver refuses it when the resource has no
//! `identity` provider.
//!
//! [`Decoder`]: crate::Decoder

mod config;
mod error;
mod providers;

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use error::CryptError;

use config::GroupResource;
use providers::Provider;

/// The prefix of every value encrypted at rest.
const ENCRYPTED: &[u8] = b"k8s:enc:";

/// The keys of an `EncryptionConfiguration`, by resource, to decrypt what
/// the apiserver stored with them.
///
/// Its [`Debug`](fmt::Debug) names the resources, providers and keys,
/// never a secret. The ciphers' key schedules are wiped when it is
/// dropped.
pub struct Keyring {
    /// Each resource the file names (`secrets`, `*.apps`, `*.*`) with its
    /// providers in order; a resource in two entries has both lists, the
    /// first entry's first.
    rules: Vec<(GroupResource, Vec<Arc<Provider>>)>,
}

impl Keyring {
    /// Loads the configuration file kube-apiserver reads
    /// (`--encryption-provider-config`).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Keyring, CryptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| CryptError::Config(format!("{}: {e}", path.display())))?;
        Keyring::parse(&text).map_err(|e| match e {
            CryptError::Config(why) => CryptError::Config(format!("{}: {why}", path.display())),
            e => e,
        })
    }

    /// Reads a configuration's text: YAML, or JSON.
    pub fn parse(text: &str) -> Result<Keyring, CryptError> {
        let mut rules: Vec<(GroupResource, Vec<Arc<Provider>>)> = Vec::new();
        for entry in config::parse(text)? {
            let providers = entry
                .providers
                .into_iter()
                .map(|p| Provider::new(p).map(Arc::new))
                .collect::<Result<Vec<_>, _>>()?;
            for gr in entry.resources {
                match rules.iter_mut().find(|(r, _)| *r == gr) {
                    Some((_, list)) => list.extend(providers.iter().cloned()),
                    None => rules.push((gr, providers.clone())),
                }
            }
        }
        Ok(Keyring { rules })
    }

    /// Decrypts `value`, stored under `etcd_key` (the whole key:
    /// `/registry/secrets/default/db`) for `resource`, named as the
    /// configuration names it: `secrets`, `deployments.apps`,
    /// `leases.coordination.k8s.io` (the group is part of the name: a bare
    /// `deployments` is the core group's, which has none).
    ///
    /// A value without the `k8s:enc:` prefix is returned as it is.
    pub fn decrypt<'a>(
        &self,
        resource: &str,
        etcd_key: &[u8],
        value: &'a [u8],
    ) -> Result<Cow<'a, [u8]>, CryptError> {
        if !value.starts_with(ENCRYPTED) {
            return Ok(Cow::Borrowed(value));
        }
        let mut error = None;
        for provider in self.providers(resource) {
            // The identity provider refuses a `k8s:enc:` value, and the
            // apiserver goes on to the next.
            if matches!(**provider, Provider::Identity) {
                continue;
            }
            if let Some(data) = value.strip_prefix(provider.prefix()) {
                match provider.open(data, etcd_key) {
                    Ok(plain) => return Ok(Cow::Owned(plain)),
                    Err(e) => error = Some(providers::better(error, e)),
                }
            }
        }
        Err(error.unwrap_or_else(|| {
            let name = value[ENCRYPTED.len()..]
                .split(|&b| b == b':')
                .next()
                .unwrap_or_default();
            CryptError::UnknownProvider {
                provider: String::from_utf8_lossy(name).into_owned(),
                resource: resource.to_owned(),
            }
        }))
    }

    /// The providers that read `resource`'s values, in order: those of its
    /// own entries, else of its group's `*.group`, else of `*.*`, else none
    /// (the apiserver's identity).
    fn providers(&self, resource: &str) -> &[Arc<Provider>] {
        let (name, group) = resource.split_once('.').unwrap_or((resource, ""));
        let find = |g: &str, r: &str| {
            self.rules
                .iter()
                .find(|(gr, _)| gr.group == g && gr.resource == r)
                .map(|(_, p)| p.as_slice())
        };
        find(group, name)
            .or_else(|| find(group, "*"))
            .or_else(|| find("*", "*"))
            .unwrap_or_default()
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (gr, providers) in &self.rules {
            let list: Vec<String> = providers
                .iter()
                .map(|p| match p.key_names().as_slice() {
                    [] => p.kind().to_owned(),
                    names => format!("{}[{}]", p.kind(), names.join(",")),
                })
                .collect();
            map.entry(&gr.to_string(), &list);
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests;
