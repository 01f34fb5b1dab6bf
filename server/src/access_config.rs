//! What `herald-server`'s access flags configure, checked before it
//! serves: TLS, the authenticators, the authorizer, and the refusal to
//! serve plain HTTP beyond loopback unless told so.
//!
//! The authorization mode defaults to `RBAC` as soon as any
//! authenticator is configured (a token file, service-account keys, a
//! client CA) or anonymous requests are allowed, and to `AlwaysAllow`
//! otherwise: a server with no authentication serves every client
//! everything, which it says at start, and which it does only on a
//! loopback address or over TLS unless `--insecure-plain-http` says
//! otherwise.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use herald_apiserver::ApiServer;
use herald_auth::Authenticator;
use herald_auth::audit::Policy;
use herald_auth::jwt::{LEGACY_ISSUER, ServiceAccountTokens};
use herald_auth::keys::parse_keys;
use herald_auth::tls::{ServingTls, TlsFiles};
use herald_auth::token_file::TokenFile;

use crate::access::{Access, Authorization};
use crate::audit_log::AuditLog;
use crate::bound::ServedLookup;
use crate::delegate::{Delegate, DelegateTtls};
use crate::rbac_follow::{RBAC_RESOURCES, RbacFollower};
use crate::server::Server;

/// The access flags.
#[derive(Debug, Clone, Default)]
pub struct AccessConfig {
    /// `--tls-cert-file`.
    pub tls_cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`.
    pub tls_private_key_file: Option<PathBuf>,
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--token-auth-file`.
    pub token_auth_file: Option<PathBuf>,
    /// `--service-account-key-file` (each).
    pub service_account_key_files: Vec<PathBuf>,
    /// `--service-account-issuer` (each).
    pub service_account_issuers: Vec<String>,
    /// `--api-audiences`.
    pub api_audiences: Vec<String>,
    /// `--anonymous-auth`.
    pub anonymous: bool,
    /// `--authorization-mode` (`AlwaysAllow` or `RBAC`).
    pub authorization_mode: Option<String>,
    /// `--insecure-plain-http`.
    pub insecure_plain_http: bool,
    /// `--audit-log-path` (`-`: standard output).
    pub audit_log_path: Option<PathBuf>,
    /// `--audit-policy-file`.
    pub audit_policy_file: Option<PathBuf>,
    /// `--delegate-authentication`: bearer tokens no local
    /// authenticator takes are reviewed by the upstream apiserver.
    pub delegate_authentication: bool,
    /// The TTLs of the delegated answers.
    pub delegate_ttls: DelegateTtls,
}

/// How requests are authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every request (of an authenticated user, or anyone without
    /// authentication) is allowed.
    AlwaysAllow,
    /// RBAC over the cluster's roles and bindings.
    Rbac,
    /// The upstream apiserver's `SubjectAccessReview`s.
    Webhook,
}

impl AccessConfig {
    /// Whether any authenticator is configured.
    fn authenticates(&self) -> bool {
        self.token_auth_file.is_some()
            || !self.service_account_key_files.is_empty()
            || self.client_ca_file.is_some()
            || self.delegate_authentication
    }

    /// The authorization mode.
    pub fn mode(&self) -> Result<Mode, String> {
        match self.authorization_mode.as_deref() {
            Some("RBAC") => Ok(Mode::Rbac),
            Some("AlwaysAllow") => Ok(Mode::AlwaysAllow),
            Some("Webhook") => Ok(Mode::Webhook),
            Some(other) => Err(format!(
                "--authorization-mode {other:?}: one of AlwaysAllow, RBAC, Webhook"
            )),
            None if self.authenticates() || self.anonymous => Ok(Mode::Rbac),
            None => Ok(Mode::AlwaysAllow),
        }
    }

    /// The RBAC resources the server must serve for its mode.
    pub fn needs_resources(&self) -> Result<&'static [&'static str], String> {
        Ok(match self.mode()? {
            Mode::Rbac => &RBAC_RESOURCES,
            Mode::AlwaysAllow | Mode::Webhook => &[],
        })
    }

    /// The serving TLS, if configured (its files loaded now).
    pub fn tls(&self) -> Result<Option<Arc<ServingTls>>, String> {
        let (cert, key) = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(c), Some(k)) => (c.clone(), k.clone()),
            (None, None) if self.client_ca_file.is_some() => {
                return Err(
                    "--client-ca-file needs --tls-cert-file and --tls-private-key-file".into(),
                );
            }
            (None, None) => return Ok(None),
            _ => return Err("--tls-cert-file and --tls-private-key-file go together".into()),
        };
        let tls = ServingTls::load(TlsFiles {
            cert,
            key,
            client_ca: self.client_ca_file.clone(),
        })
        .map_err(|e| format!("TLS: {e}"))?;
        Ok(Some(Arc::new(tls)))
    }

    /// Refuses plain HTTP beyond loopback unless asked for.
    pub fn check_listen(&self, addr: SocketAddr, tls: bool) -> Result<(), String> {
        if tls || addr.ip().is_loopback() || self.insecure_plain_http {
            return Ok(());
        }
        Err(format!(
            "refusing to serve plain HTTP on {addr}, beyond loopback: give --tls-cert-file and \
             --tls-private-key-file, or --insecure-plain-http"
        ))
    }

    /// The access control of `server` (which serves the RBAC resources
    /// in RBAC mode), delegating to `apiserver` where asked, or `None`
    /// when every request is served.
    pub fn build(
        &self,
        server: &Server,
        apiserver: Option<&ApiServer>,
    ) -> Result<Option<Access>, String> {
        let mode = self.mode()?;
        if mode == Mode::AlwaysAllow && !self.authenticates() && !self.anonymous {
            return Ok(None);
        }
        let tokens = match &self.token_auth_file {
            Some(path) => {
                Some(TokenFile::from_file(path).map_err(|e| format!("--token-auth-file: {e}"))?)
            }
            None => None,
        };
        let service_accounts = if self.service_account_key_files.is_empty() {
            None
        } else {
            let mut keys = Vec::new();
            for path in &self.service_account_key_files {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--service-account-key-file {}: {e}", path.display()))?;
                keys.extend(parse_keys(&text).map_err(|e| format!("{}: {e}", path.display()))?);
            }
            if self.service_account_issuers.is_empty() {
                return Err("--service-account-key-file needs --service-account-issuer".into());
            }
            let mut issuers = self.service_account_issuers.clone();
            issuers.push(LEGACY_ISSUER.to_owned());
            let audiences = if self.api_audiences.is_empty() {
                vec![self.service_account_issuers[0].clone()]
            } else {
                self.api_audiences.clone()
            };
            Some(ServiceAccountTokens::new(keys, issuers, audiences))
        };
        let delegate = if self.delegate_authentication || mode == Mode::Webhook {
            let apiserver = apiserver.ok_or(
                "--delegate-authentication and --authorization-mode Webhook ask the upstream \
                 apiserver: they need --kubeconfig",
            )?;
            Some(Arc::new(Delegate::new(
                apiserver.clone(),
                self.api_audiences.clone(),
                self.delegate_ttls,
                server.metrics().clone(),
            )))
        } else {
            None
        };
        if service_accounts.is_some() {
            let served = server.snapshot();
            let unchecked: Vec<&str> = ["serviceaccounts", "secrets", "pods", "nodes"]
                .into_iter()
                .filter(|r| !served.contains_key(*r))
                .collect();
            if !unchecked.is_empty() {
                eprintln!(
                    "herald-server: service-account tokens: {} not served, so the objects a token \
                     names there cannot be checked (the apiserver refuses a token whose Secret, \
                     Pod, Node or ServiceAccount is gone): serve them (--resources all) or \
                     delegate authentication (--delegate-authentication)",
                    unchecked.join(", ")
                );
            }
        }
        let authn = Authenticator::new(
            tokens,
            service_accounts,
            Box::new(ServedLookup(server.clone())),
            self.anonymous,
        );
        let authz = match mode {
            Mode::AlwaysAllow => Authorization::AlwaysAllow,
            Mode::Webhook => Authorization::Webhook(delegate.clone().ok_or("no delegate")?),
            Mode::Rbac => {
                let served = server.snapshot();
                let engine = |name: &str| {
                    served
                        .get(name)
                        .map(|r| r.engine.clone())
                        .ok_or_else(|| format!("RBAC needs {name} served"))
                };
                Authorization::Rbac(RbacFollower::start([
                    engine(RBAC_RESOURCES[0])?,
                    engine(RBAC_RESOURCES[1])?,
                    engine(RBAC_RESOURCES[2])?,
                    engine(RBAC_RESOURCES[3])?,
                ]))
            }
        };
        let token_delegate = delegate.filter(|_| self.delegate_authentication);
        Ok(Some(Access::new(authn, token_delegate, authz)))
    }

    /// The audit log, if configured (its policy read and its file opened
    /// now; a `RequestResponse` rule's downgrade said on standard error).
    pub fn audit(&self) -> Result<Option<AuditLog>, String> {
        let (path, policy) = match (&self.audit_log_path, &self.audit_policy_file) {
            (None, None) => return Ok(None),
            (Some(path), Some(policy)) => (path, policy),
            (Some(_), None) => return Err("--audit-log-path needs --audit-policy-file".into()),
            (None, Some(_)) => return Err("--audit-policy-file needs --audit-log-path".into()),
        };
        let text = std::fs::read_to_string(policy)
            .map_err(|e| format!("--audit-policy-file {}: {e}", policy.display()))?;
        let policy = Policy::parse(&text)
            .map_err(|e| format!("--audit-policy-file {}: {e}", policy.display()))?;
        for i in policy.downgraded() {
            eprintln!(
                "herald-server: audit policy rules[{i}]: level RequestResponse is logged as \
                 Request (Herald writes no response bodies to the audit log)"
            );
        }
        AuditLog::open(path, policy).map(Some)
    }

    /// One line for the log: what serves and who may read.
    pub fn describe(&self) -> String {
        let mut authn = Vec::new();
        if self.client_ca_file.is_some() {
            authn.push("client certificates".to_owned());
        }
        if self.token_auth_file.is_some() {
            authn.push("token file".to_owned());
        }
        if !self.service_account_key_files.is_empty() {
            authn.push("service-account tokens".to_owned());
        }
        if self.delegate_authentication {
            authn.push("TokenReview".to_owned());
        }
        if self.anonymous {
            authn.push("anonymous".to_owned());
        }
        let mode = match self.mode() {
            Ok(Mode::Rbac) => "RBAC",
            Ok(Mode::Webhook) => "Webhook (SubjectAccessReview)",
            Ok(Mode::AlwaysAllow) => "AlwaysAllow",
            Err(_) => "?",
        };
        if authn.is_empty() && mode == "AlwaysAllow" {
            return "no authentication: every client reads everything served".into();
        }
        let authn = if authn.is_empty() {
            "none (every request refused)".to_owned()
        } else {
            authn.join(", ")
        };
        format!("authentication: {authn}; authorization: {mode}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_follows_authentication_unless_named() {
        let open = AccessConfig::default();
        assert_eq!(open.mode(), Ok(Mode::AlwaysAllow));
        let tokens = AccessConfig {
            token_auth_file: Some("t".into()),
            ..AccessConfig::default()
        };
        assert_eq!(tokens.mode(), Ok(Mode::Rbac));
        let named = AccessConfig {
            authorization_mode: Some("AlwaysAllow".into()),
            ..tokens.clone()
        };
        assert_eq!(named.mode(), Ok(Mode::AlwaysAllow));
        let bad = AccessConfig {
            authorization_mode: Some("rbac".into()),
            ..AccessConfig::default()
        };
        assert!(bad.mode().is_err());
    }

    #[test]
    fn plain_http_beyond_loopback_is_refused_unless_asked_for() {
        let c = AccessConfig::default();
        assert!(
            c.check_listen("127.0.0.1:1".parse().unwrap(), false)
                .is_ok()
        );
        assert!(c.check_listen("[::1]:1".parse().unwrap(), false).is_ok());
        assert!(c.check_listen("0.0.0.0:1".parse().unwrap(), false).is_err());
        assert!(c.check_listen("0.0.0.0:1".parse().unwrap(), true).is_ok());
        let insecure = AccessConfig {
            insecure_plain_http: true,
            ..AccessConfig::default()
        };
        assert!(
            insecure
                .check_listen("10.0.0.1:1".parse().unwrap(), false)
                .is_ok()
        );
    }

    #[test]
    fn tls_flags_go_together() {
        let half = AccessConfig {
            tls_cert_file: Some("c".into()),
            ..AccessConfig::default()
        };
        assert!(half.tls().is_err());
        let ca_only = AccessConfig {
            client_ca_file: Some("ca".into()),
            ..AccessConfig::default()
        };
        assert!(ca_only.tls().is_err());
        assert!(AccessConfig::default().tls().unwrap().is_none());
    }
}
