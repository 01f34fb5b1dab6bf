//! How an [`EtcdSource`](crate::EtcdSource) reaches etcd ([`EtcdConfig`]),
//! what it refuses before it connects, and why a connection fails
//! ([`ConnectError`]).

use std::time::Duration;

use herald_kube::Decoder;

use crate::version::ProgressTrust;

/// How an [`EtcdSource`](crate::EtcdSource) reaches etcd and what it mirrors.
///
/// [`EtcdSource::connect`](crate::EtcdSource::connect) checks it and refuses, with
/// [`ConnectError::Config`], no endpoints, an endpoint that is not a URL,
/// a prefix that is empty or does not end in `/`, a page size below one,
/// and a timeout or keep-alive of zero. A timeout too long for the clock
/// (`Duration::MAX`) waits for ever.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client URLs of the cluster's members (`http://127.0.0.1:2379`; a
    /// bare `host:port` is taken as `http://`).
    pub endpoints: Vec<String>,
    /// The key prefix mirrored: one resource type (`/registry/pods/`).
    /// Keys under it are `namespace/name` or `name`. It must end in `/`:
    /// `/registry/pods` would also mirror `/registry/podtemplates/...`.
    pub prefix: String,
    /// Reads stored values as objects.
    pub decoder: Decoder,
    /// Objects per page of a list (the apiserver's cacher lists 10,000 at
    /// a time); at least one.
    pub page_size: i64,
    /// The longest one unary call (a page, a revision, a status) waits;
    /// not zero.
    pub request_timeout: Duration,
    /// The longest a connection attempt waits; not zero.
    pub connect_timeout: Duration,
    /// HTTP/2 keep-alive: a ping this often, a dead connection after this
    /// long without an answer (the apiserver's 30 s and 10 s would hold a
    /// watch on a killed member for 40 s; loopback clusters want less).
    /// Neither zero nor longer than [`MAX_KEEP_ALIVE`].
    pub keep_alive: (Duration, Duration),
    /// Whether progress notifications are trusted.
    pub progress: ProgressTrust,
}

impl EtcdConfig {
    /// Mirrors `prefix` from the members at `endpoints`, decoding names,
    /// namespaces and labels (add fields to [`EtcdConfig::decoder`]).
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>, prefix: &str) -> EtcdConfig {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: prefix.to_owned(),
            decoder: Decoder::new(),
            page_size: 10_000,
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            keep_alive: (Duration::from_secs(5), Duration::from_secs(3)),
            progress: ProgressTrust::Auto,
        }
    }

    /// The same, with `decoder`.
    pub fn decoder(mut self, decoder: Decoder) -> EtcdConfig {
        self.decoder = decoder;
        self
    }
}

/// Why [`EtcdSource::connect`](crate::EtcdSource::connect) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// The configuration cannot work: what is wrong.
    Config(String),
    /// No endpoint answered a status request: the last error.
    Unreachable(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Config(why) => write!(f, "etcd source configuration: {why}"),
            ConnectError::Unreachable(why) => write!(f, "no etcd endpoint answered: {why}"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// The longest keep-alive interval or timeout accepted: far beyond any
/// use, and short enough that the HTTP/2 client can add it to the clock
/// (it does, unchecked, on every ping).
///
/// ```
/// use std::time::Duration;
/// use herald_etcd::{ConnectError, EtcdConfig, EtcdSource, MAX_KEEP_ALIVE};
/// let config = EtcdConfig {
///     keep_alive: (MAX_KEEP_ALIVE + Duration::from_secs(1), Duration::from_secs(3)),
///     ..EtcdConfig::new(["http://127.0.0.1:2379"], "/registry/pods/")
/// };
/// // Refused before any connection is tried.
/// assert!(matches!(EtcdSource::connect(config), Err(ConnectError::Config(_))));
/// ```
pub const MAX_KEEP_ALIVE: Duration = Duration::from_secs(24 * 3600);

/// What [`EtcdSource::connect`](crate::EtcdSource::connect) refuses before it connects.
pub(crate) fn check(config: &EtcdConfig) -> Result<(), ConnectError> {
    let refuse = |why: String| Err(ConnectError::Config(why));
    if config.endpoints.is_empty() {
        return refuse("no endpoints".into());
    }
    for endpoint in &config.endpoints {
        check_endpoint(endpoint).map_err(|why| {
            ConnectError::Config(format!("endpoint {endpoint:?} is not a URL: {why}"))
        })?;
    }
    if config.prefix.is_empty() {
        return refuse(
            "the key prefix is empty: it would mirror every key in etcd (give one resource \
             type's, such as /registry/pods/)"
                .into(),
        );
    }
    if !config.prefix.ends_with('/') {
        return refuse(format!(
            "the key prefix {:?} does not end in '/': it would also mirror every key that \
             merely begins with it (/registry/pods takes in /registry/podtemplates/)",
            config.prefix
        ));
    }
    if config.page_size <= 0 {
        return refuse(format!("page size {} is not positive", config.page_size));
    }
    for (what, d) in [
        ("request timeout", config.request_timeout),
        ("connect timeout", config.connect_timeout),
    ] {
        if d.is_zero() {
            return refuse(format!("the {what} is zero"));
        }
    }
    for (what, d) in [
        ("keep-alive interval", config.keep_alive.0),
        ("keep-alive timeout", config.keep_alive.1),
    ] {
        if d.is_zero() || d > MAX_KEEP_ALIVE {
            return refuse(format!(
                "the {what} is {d:?}: it must be above zero and at most {MAX_KEEP_ALIVE:?}"
            ));
        }
    }
    Ok(())
}

/// Whether `endpoint` is a URL etcd-client dials as written: it takes
/// `host:port` as `http://host:port`, and would dial a port out of range
/// (`:99999`) as the scheme's default.
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let url = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else {
        format!("http://{endpoint}")
    };
    let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    // `Uri::port` is `None` for a port that does not parse, as for none.
    let authority = uri.authority().map_or("", |a| a.as_str());
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let after_host = host_port.rsplit(']').next().unwrap_or(host_port);
    if let Some((_, port)) = after_host.rsplit_once(':') {
        if port.parse::<u16>().is_err() {
            return Err(format!("port {port:?} is not a number from 0 to 65535"));
        }
    }
    Ok(())
}

/// A failed [`Client::connect`] of `endpoint`: a malformed URL (or an
/// `https://` one, without TLS support built) is the configuration's
/// fault; anything else, the cluster's.
pub(crate) fn connect_error(endpoint: &str, e: etcd_client::Error) -> ConnectError {
    match e {
        etcd_client::Error::InvalidUri(_) | etcd_client::Error::InvalidArgs(_) => {
            ConnectError::Config(format!("endpoint {endpoint:?}: {e}"))
        }
        e => ConnectError::Unreachable(format!("{endpoint}: {e}")),
    }
}
