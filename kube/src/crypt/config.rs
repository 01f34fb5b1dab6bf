//! The `EncryptionConfiguration` file, read and checked as kube-apiserver
//! reads and checks it (`--encryption-provider-config`):
//!
//! - the text is JSON (it starts with `{`) or YAML, turned into JSON
//!   first (the apiserver's universal decoder: `sigs.k8s.io/yaml`);
//! - `apiVersion: apiserver.config.k8s.io/v1` with `kind:
//!   EncryptionConfiguration`, or the legacy `apiVersion: v1` with `kind:
//!   EncryptionConfig` (`apis/apiserver/v1/register.go`); field names are
//!   case-sensitive and unknown fields are ignored;
//! - what `validation.ValidateEncryptionConfiguration` refuses is refused
//!   (`apis/apiserver/validation/validation_encryption.go`): no entries,
//!   an entry with no resources or no providers, overlapping or duplicate
//!   resources, resource names it forbids, a provider item with none or
//!   more than one provider, keys with no name, no secret, a secret that
//!   is not base64 or of a length the provider does not take;
//! - and what `getTransformerOverridesAndKMSPluginProbes` refuses
//!   (`server/options/encryptionconfig/config.go`): a resource masked by
//!   an earlier `*.group` or `*.*` entry.
//!
//! A `kms` provider is checked for what Herald needs of it (a name, an
//! API version `v1` or `v2`, no `:` in a v2 name, v2 names unique); its
//! endpoint, timeout and cache size are not read: Herald never calls the
//! plugin.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use zeroize::Zeroizing;

use super::error::CryptError;

/// A resource as the configuration and the apiserver's
/// `schema.ParseGroupResource` spell it: `secrets` (the core group),
/// `deployments.apps`, `*.apps`, `*.` (every core resource), `*.*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct GroupResource {
    pub(crate) group: String,
    pub(crate) resource: String,
}

impl GroupResource {
    /// Split at the first dot, as `schema.ParseGroupResource`.
    pub(crate) fn parse(s: &str) -> GroupResource {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource {
                group: group.into(),
                resource: resource.into(),
            },
            None => GroupResource {
                group: String::new(),
                resource: s.into(),
            },
        }
    }

    pub(crate) fn new(group: &str, resource: &str) -> GroupResource {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    /// As the apiserver's messages (`grYAMLString`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => f.write_str("*."),
            ("", r) => f.write_str(r),
            (g, r) => write!(f, "{r}.{g}"),
        }
    }
}

/// One provider of an entry, checked; its secrets decoded.
pub(crate) enum ProviderConfig {
    AesGcm(Vec<NamedKey>),
    AesCbc(Vec<NamedKey>),
    Secretbox(Vec<NamedKey>),
    Identity,
    Kms { name: String, api_version: String },
}

/// A key's name and its secret's bytes (wiped when dropped; the parse's
/// other transient copies, in the text and the parsed document, are not).
pub(crate) struct NamedKey {
    pub(crate) name: String,
    pub(crate) secret: Zeroizing<Vec<u8>>,
}

/// One item of `resources:`: the resources and their providers in order.
pub(crate) struct Entry {
    pub(crate) resources: Vec<GroupResource>,
    pub(crate) providers: Vec<ProviderConfig>,
}

#[derive(Deserialize)]
struct File {
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<RawEntry>,
}

#[derive(Deserialize)]
struct RawEntry {
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    providers: Vec<RawProvider>,
}

#[derive(Deserialize)]
struct RawProvider {
    #[serde(default)]
    aesgcm: Option<RawKeys>,
    #[serde(default)]
    aescbc: Option<RawKeys>,
    #[serde(default)]
    secretbox: Option<RawKeys>,
    #[serde(default)]
    identity: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    kms: Option<RawKms>,
}

#[derive(Deserialize)]
struct RawKeys {
    #[serde(default, deserialize_with = "nullable")]
    keys: Vec<RawKey>,
}

#[derive(Deserialize)]
struct RawKey {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    secret: String,
}

#[derive(Deserialize)]
struct RawKms {
    #[serde(default, rename = "apiVersion", deserialize_with = "nullable")]
    api_version: String,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
}

/// `null` read as the default, as Go reads it into a slice or a string.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The key sizes each provider takes (`aesKeySizes`, `secretBoxKeySizes`).
pub(crate) const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
/// The one key size secretbox takes.
pub(crate) const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// Reads and checks a configuration's text.
pub(crate) fn parse(text: &str) -> Result<Vec<Entry>, CryptError> {
    let bad = |why: String| CryptError::Config(why);
    if text.is_empty() {
        return Err(bad("the encryption provider configuration is empty".into()));
    }
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?
    } else {
        serde_yaml::from_str(text).map_err(|e| bad(format!("not YAML: {e}")))?
    };
    let (api_version, kind) = match &doc {
        Value::Object(map) => (
            map.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
            map.get("kind").and_then(Value::as_str).unwrap_or(""),
        ),
        _ => return Err(bad("not an object".into())),
    };
    match (api_version, kind) {
        ("apiserver.config.k8s.io/v1", "EncryptionConfiguration") | ("v1", "EncryptionConfig") => {}
        ("", _) => return Err(bad("no apiVersion".into())),
        (_, "") => return Err(bad("no kind".into())),
        (v, k) => {
            return Err(bad(format!(
                "apiVersion {v:?} kind {k:?} is not apiserver.config.k8s.io/v1 \
                 EncryptionConfiguration"
            )));
        }
    }
    let file: File = serde_json::from_value(doc).map_err(|e| bad(e.to_string()))?;
    if file.resources.is_empty() {
        return Err(bad("resources: at least one resources is required".into()));
    }
    let mut entries = Vec::with_capacity(file.resources.len());
    let mut kms_names: Vec<String> = Vec::new();
    for (i, raw) in file.resources.into_iter().enumerate() {
        let at = format!("resources[{i}]");
        if raw.resources.is_empty() {
            return Err(bad(format!(
                "{at}.resources: at least one {at}.resources is required"
            )));
        }
        check_resource_overlap(&raw.resources, &at)?;
        check_resource_names(&raw.resources, &at)?;
        if raw.providers.is_empty() {
            return Err(bad(format!(
                "{at}.providers: at least one {at}.providers is required"
            )));
        }
        let mut providers = Vec::with_capacity(raw.providers.len());
        for (j, p) in raw.providers.into_iter().enumerate() {
            providers.push(provider(
                p,
                &format!("{at}.providers[{j}]"),
                &mut kms_names,
            )?);
        }
        entries.push(Entry {
            resources: raw
                .resources
                .iter()
                .map(|r| GroupResource::parse(r))
                .collect(),
            providers,
        });
    }
    check_masking(&entries)?;
    Ok(entries)
}

/// `validateResourceOverlap`: the same resource twice, or a wildcard with
/// a resource it covers, in one entry.
fn check_resource_overlap(resources: &[String], at: &str) -> Result<(), CryptError> {
    let grs: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let any = GroupResource::new("*", "*");
    for (i, a) in grs.iter().enumerate() {
        for (j, b) in grs.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b {
                return Err(CryptError::Config(format!(
                    "{at}.resources: {resources:?}: the same resource cannot be specified \
                     multiple times"
                )));
            }
            if *a == any || (a.group == b.group && (a.resource == "*" || b.resource == "*")) {
                return Err(CryptError::Config(format!(
                    "{at}.resources: {resources:?}: using overlapping resources such as \
                     'secrets' and '*.' in the same resource list is not allowed as they \
                     will be masked"
                )));
            }
        }
    }
    Ok(())
}

/// `validateResourceNames`.
fn check_resource_names(resources: &[String], at: &str) -> Result<(), CryptError> {
    for (j, r) in resources.iter().enumerate() {
        let gr = GroupResource::parse(r);
        let why = if r.chars().any(|c| c.is_uppercase()) {
            "resource name should not contain capital letters"
        } else if r == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all \
             resources"
        } else if matches!(
            r.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use \
             'events' instead in the config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        return Err(CryptError::Config(format!(
            "{at}.resources[{j}]: {r:?}: {why}"
        )));
    }
    Ok(())
}

/// `getTransformerOverridesAndKMSPluginProbes`: an entry's resource after
/// an earlier entry's `*.group` or `*.*` would never be used.
fn check_masking(entries: &[Entry]) -> Result<(), CryptError> {
    let mut seen: Vec<&GroupResource> = Vec::new();
    let any = GroupResource::new("*", "*");
    for entry in entries {
        for gr in &entry.resources {
            let group_any = GroupResource::new(&gr.group, "*");
            for mask in [&group_any, &any] {
                if seen.contains(&mask) {
                    return Err(CryptError::Config(format!(
                        "resource {gr} is masked by earlier rule {mask}"
                    )));
                }
            }
        }
        seen.extend(&entry.resources);
    }
    Ok(())
}

fn provider(
    p: RawProvider,
    at: &str,
    kms_names: &mut Vec<String>,
) -> Result<ProviderConfig, CryptError> {
    let found = usize::from(p.aesgcm.is_some())
        + usize::from(p.aescbc.is_some())
        + usize::from(p.secretbox.is_some())
        + usize::from(p.identity.is_some())
        + usize::from(p.kms.is_some());
    if found == 0 {
        return Err(CryptError::Config(format!(
            "{at}: provider does not contain any of the expected providers: KMS, AESGCM, \
             AESCBC, Secretbox, Identity"
        )));
    }
    if found > 1 {
        return Err(CryptError::Config(format!(
            "{at}: more than one provider specified in a single element, should split into \
             different list elements"
        )));
    }
    Ok(if let Some(k) = p.aesgcm {
        ProviderConfig::AesGcm(keys(k, "aesgcm", &format!("{at}.aesgcm"), AES_KEY_SIZES)?)
    } else if let Some(k) = p.aescbc {
        ProviderConfig::AesCbc(keys(k, "aescbc", &format!("{at}.aescbc"), AES_KEY_SIZES)?)
    } else if let Some(k) = p.secretbox {
        ProviderConfig::Secretbox(keys(
            k,
            "secretbox",
            &format!("{at}.secretbox"),
            SECRETBOX_KEY_SIZES,
        )?)
    } else if let Some(kms) = p.kms {
        let at = format!("{at}.kms");
        // `SetDefaults_KMSConfiguration`.
        let api_version = if kms.api_version.is_empty() {
            "v1".to_owned()
        } else {
            kms.api_version
        };
        if kms.name.is_empty() {
            return Err(CryptError::Config(format!(
                "{at}.name: name is a mandatory field for a provider"
            )));
        }
        if api_version != "v1" && api_version != "v2" {
            return Err(CryptError::Config(format!(
                "{at}.apiVersion: {api_version:?}: unsupported apiVersion apiVersion for KMS \
                 provider, only v1 and v2 are supported"
            )));
        }
        if api_version == "v2" && kms.name.contains(':') {
            return Err(CryptError::Config(format!(
                "{at}.name: invalid KMS provider name {}, must not contain ':'",
                kms.name
            )));
        }
        if api_version == "v2" && kms_names.contains(&kms.name) {
            return Err(CryptError::Config(format!(
                "{at}.name: duplicate KMS provider name {}, names must be unique",
                kms.name
            )));
        }
        kms_names.push(kms.name.clone());
        ProviderConfig::Kms {
            name: kms.name,
            api_version,
        }
    } else {
        ProviderConfig::Identity
    })
}

/// `validateKeys`, and the secrets decoded as the apiserver decodes them
/// (`base64.StdEncoding`: padded, line breaks skipped, stray bits in the
/// last character allowed).
fn keys(
    raw: RawKeys,
    provider: &'static str,
    at: &str,
    sizes: &[usize],
) -> Result<Vec<NamedKey>, CryptError> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );
    if raw.keys.is_empty() {
        return Err(CryptError::Config(format!(
            "{at}.keys: at least one keys is required"
        )));
    }
    let mut out = Vec::with_capacity(raw.keys.len());
    for (i, key) in raw.keys.into_iter().enumerate() {
        let at = format!("{at}.keys[{i}]");
        if key.name.is_empty() {
            return Err(CryptError::Config(format!(
                "{at}.name: name is a mandatory field for a key"
            )));
        }
        if key.secret.is_empty() {
            return Err(CryptError::Config(format!(
                "{at}.secret: secret is a mandatory field for a key"
            )));
        }
        let text: Vec<u8> = key
            .secret
            .bytes()
            .filter(|&b| b != b'\r' && b != b'\n')
            .collect();
        let secret = Zeroizing::new(STD.decode(&text).map_err(|_| {
            CryptError::Config(format!("{at}.secret: secrets must be base64 encoded"))
        })?);
        if !sizes.contains(&secret.len()) {
            return Err(CryptError::KeyLength {
                provider: provider.into(),
                key: key.name,
                len: secret.len(),
            });
        }
        out.push(NamedKey {
            name: key.name,
            secret,
        });
    }
    Ok(out)
}
