//! The authenticator chain, as kube-apiserver builds it
//! (`pkg/kubeapiserver/authenticator/config.go`): the client certificate,
//! then the bearer token (the static token file, then service-account
//! tokens); the first that names a user wins, and `system:authenticated`
//! is added to its groups. Credentials that were presented and not
//! accepted refuse the request (401) even where anonymous requests are
//! allowed (the apiserver's `FailOnError` union): a bad token is never
//! served as `system:anonymous`. A request with no credentials is
//! anonymous where the operator allows it, and refused otherwise.

use crate::jwt::{Lookup, ServiceAccountTokens};
use crate::token_file::TokenFile;
use crate::user::User;
use crate::x509::CertError;

/// What a request presented.
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// Its client certificate's user, as [`crate::tls::Serving::identify`]
    /// read it: `None` without a certificate, `Some(Ok(None))` for one
    /// that names no user, `Some(Err(_))` for one the client CA refuses.
    pub certificate: Option<&'a Result<Option<User>, CertError>>,
    /// Its `Authorization` header.
    pub authorization: Option<&'a [u8]>,
}

/// Why a request was refused a user (a 401; each a bounded label value
/// of the server's metrics, [`Refused::label`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Its certificate does not chain to the client CA (or its subject
    /// is malformed), and no token named a user.
    Certificate(String),
    /// Its bearer token is none of ours, or one of ours that failed its
    /// checks.
    Token(String),
    /// It presented nothing, and anonymous requests are refused.
    Anonymous,
}

impl Refused {
    /// The label value (`certificate`, `token`, `anonymous`).
    pub fn label(&self) -> &'static str {
        match self {
            Refused::Certificate(_) => "certificate",
            Refused::Token(_) => "token",
            Refused::Anonymous => "anonymous",
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Certificate(e) => write!(f, "client certificate refused: {e}"),
            Refused::Token(e) => write!(f, "bearer token refused: {e}"),
            Refused::Anonymous => f.write_str("no credentials, and anonymous requests are refused"),
        }
    }
}

impl std::error::Error for Refused {}

/// The authenticators a server runs.
pub struct Authenticator {
    tokens: Option<TokenFile>,
    service_accounts: Option<ServiceAccountTokens>,
    lookup: Box<dyn Lookup>,
    anonymous: bool,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens.as_ref().map(TokenFile::len))
            .field("service_accounts", &self.service_accounts.is_some())
            .field("anonymous", &self.anonymous)
            .finish()
    }
}

impl Authenticator {
    /// A chain of the given token authenticators (client certificates are
    /// read by the TLS layer); `anonymous`: whether a request without
    /// credentials is served as `system:anonymous`.
    pub fn new(
        tokens: Option<TokenFile>,
        service_accounts: Option<ServiceAccountTokens>,
        lookup: Box<dyn Lookup>,
        anonymous: bool,
    ) -> Authenticator {
        Authenticator {
            tokens,
            service_accounts,
            lookup,
            anonymous,
        }
    }

    /// The user of a request that presented `credentials`.
    pub fn authenticate(&self, credentials: Credentials<'_>) -> Result<User, Refused> {
        let mut refused = None;
        match credentials.certificate {
            Some(Ok(Some(user))) => return Ok(user.clone().authenticated()),
            Some(Err(e)) => refused = Some(Refused::Certificate(e.to_string())),
            Some(Ok(None)) | None => {}
        }
        match credentials.authorization.and_then(bearer) {
            Some(Ok(token)) => {
                return match self.token(token) {
                    Ok(user) => Ok(user.authenticated()),
                    Err(e) => Err(Refused::Token(e)),
                };
            }
            // Bytes no token of any authenticator can be: presented, so
            // refused (the apiserver's 401), never anonymous.
            Some(Err(_)) => return Err(Refused::Token("a bearer token that is not UTF-8".into())),
            None => {}
        }
        match refused {
            Some(r) => Err(r),
            None if self.anonymous => Ok(User::anonymous()),
            None => Err(Refused::Anonymous),
        }
    }

    /// The user of a bearer token, or why none.
    fn token(&self, token: &str) -> Result<User, String> {
        if let Some(user) = self.tokens.as_ref().and_then(|t| t.user(token)) {
            return Ok(user.clone());
        }
        if let Some(sa) = &self.service_accounts {
            match sa.authenticate(token, self.lookup.as_ref()) {
                Ok(Some(user)) => return Ok(user),
                Ok(None) => {}
                Err(e) => return Err(e.0),
            }
        }
        Err("invalid bearer token".into())
    }
}

/// The token of an `Authorization: Bearer <token>` header, as the
/// apiserver reads it (`bearertoken.go`, on the header's bytes): the
/// value trimmed, split at the first two spaces, the scheme
/// case-insensitive; not a bearer header, or an empty token, is none. A
/// token whose bytes are not UTF-8 is `Some(Err)`: presented, and no
/// authenticator's.
pub fn bearer(header: &[u8]) -> Option<Result<&str, std::str::Utf8Error>> {
    let header = header.trim_ascii();
    let mut parts = header.splitn(3, |b| *b == b' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty())
        .then(|| std::str::from_utf8(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::NoLookup;
    use crate::user::{ANONYMOUS, AUTHENTICATED};

    fn chain(anonymous: bool) -> Authenticator {
        let tokens = TokenFile::parse("t1,alice,uid-1,devs\n").unwrap();
        Authenticator::new(Some(tokens), None, Box::new(NoLookup), anonymous)
    }

    fn with(auth: &str) -> Credentials<'_> {
        Credentials {
            certificate: None,
            authorization: Some(auth.as_bytes()),
        }
    }

    #[test]
    fn tokens_name_users_and_bad_ones_are_never_anonymous() {
        let a = chain(true);
        let alice = a.authenticate(with("Bearer t1")).unwrap();
        assert_eq!(
            (alice.name.as_str(), alice.groups.as_slice()),
            ("alice", &["devs".to_owned(), AUTHENTICATED.to_owned()][..])
        );
        // Two spaces: an empty token, so no credentials (the apiserver
        // warns of the extra space and ignores the header).
        assert_eq!(a.authenticate(with("bearer  t1")).unwrap().name, ANONYMOUS);
        assert_eq!(a.authenticate(with("  BEARER t1  ")).unwrap().name, "alice");
        assert!(matches!(
            a.authenticate(with("Bearer nope")),
            Err(Refused::Token(_))
        ));
        // Not a bearer header, or an empty token: no credentials.
        assert_eq!(a.authenticate(with("Basic dTpw")).unwrap().name, ANONYMOUS);
        assert_eq!(a.authenticate(with("Bearer")).unwrap().name, ANONYMOUS);
        assert_eq!(
            a.authenticate(Credentials::default()).unwrap().name,
            ANONYMOUS
        );
        assert_eq!(
            chain(false).authenticate(Credentials::default()),
            Err(Refused::Anonymous)
        );
    }

    #[test]
    fn a_bearer_token_that_is_not_utf8_is_refused_not_anonymous() {
        let a = chain(true);
        let header: &[u8] = b"Bearer \xff\xfe";
        let refused = a.authenticate(Credentials {
            certificate: None,
            authorization: Some(header),
        });
        assert!(matches!(refused, Err(Refused::Token(_))), "{refused:?}");
        // A scheme that is not UTF-8 is no bearer header: no credentials.
        let other: &[u8] = b"\xffearer t1";
        let got = a.authenticate(Credentials {
            certificate: None,
            authorization: Some(other),
        });
        assert_eq!(got.unwrap().name, ANONYMOUS);
    }

    #[test]
    fn a_certificate_names_its_user_and_a_refused_one_is_a_401() {
        let a = chain(true);
        let bob = Ok(Some(User {
            name: "bob".into(),
            ..User::default()
        }));
        let got = a
            .authenticate(Credentials {
                certificate: Some(&bob),
                authorization: None,
            })
            .unwrap();
        assert_eq!(got.groups, [AUTHENTICATED]);
        let bad = Err(CertError::Untrusted("UnknownIssuer".into()));
        let refused = a.authenticate(Credentials {
            certificate: Some(&bad),
            authorization: None,
        });
        assert!(matches!(refused, Err(Refused::Certificate(_))));
        // A refused certificate with a good token: the token's user, as
        // the apiserver's union tries the next authenticator.
        let both = a.authenticate(Credentials {
            certificate: Some(&bad),
            authorization: Some(b"Bearer t1"),
        });
        assert_eq!(both.unwrap().name, "alice");
        // A certificate without a CN: the token decides.
        let nameless = Ok(None);
        let got = a.authenticate(Credentials {
            certificate: Some(&nameless),
            authorization: None,
        });
        assert_eq!(got.unwrap().name, ANONYMOUS);
    }
}
