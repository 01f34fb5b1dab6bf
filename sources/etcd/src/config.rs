//! How a cluster is reached ([`ClusterConfig`]: its members, timeouts,
//! keep-alive, progress trust, page size), what one resource mirrors of it
//! ([`EtcdConfig`]: a cluster's configuration, a key prefix, a decoder),
//! what is refused before anything connects, and why a connection fails
//! ([`ConnectError`]).

use std::time::Duration;

use herald_kube::Decoder;

use crate::version::ProgressTrust;

/// How an [`EtcdCluster`](crate::EtcdCluster) reaches etcd: one
/// connection (one client, one HTTP/2 connection a member) that every
/// resource's [`EtcdSource`](crate::EtcdSource) shares.
///
/// [`EtcdCluster::connect`](crate::EtcdCluster::connect) checks it and
/// refuses, with [`ConnectError::Config`], no endpoints, an endpoint that
/// is not a URL, a page size below one, and a timeout or keep-alive of
/// zero. A timeout too long for the clock (`Duration::MAX`) waits for
/// ever.
///
/// ```
/// use std::time::Duration;
/// use herald_etcd::ClusterConfig;
/// let config = ClusterConfig {
///     request_timeout: Duration::from_secs(5),
///     ..ClusterConfig::new(["http://10.0.0.1:2379", "http://10.0.0.2:2379"])
/// };
/// assert_eq!(config.endpoints.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Client URLs of the cluster's members (`http://127.0.0.1:2379`; a
    /// bare `host:port` is taken as `http://`).
    pub endpoints: Vec<String>,
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

impl ClusterConfig {
    /// The members at `endpoints`, with the defaults: pages of 10,000, a
    /// 10 s request and 3 s connect timeout, a 5 s / 3 s keep-alive,
    /// progress trusted when every member can be ([`ProgressTrust::Auto`]).
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> ClusterConfig {
        ClusterConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            page_size: 10_000,
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            keep_alive: (Duration::from_secs(5), Duration::from_secs(3)),
            progress: ProgressTrust::Auto,
        }
    }
}

/// One resource of a cluster: how to reach the cluster
/// ([`EtcdConfig::cluster`]) and what to mirror of it, for
/// [`EtcdSource::connect`](crate::EtcdSource::connect), which connects a
/// cluster for the one source. Several resources of one cluster share one
/// [`EtcdCluster`](crate::EtcdCluster) instead
/// ([`EtcdCluster::source`](crate::EtcdCluster::source)).
///
/// Besides what [`ClusterConfig`] refuses, the prefix must not be empty
/// and must end in `/`.
///
/// ```
/// use std::time::Duration;
/// use herald_etcd::EtcdConfig;
/// use herald_kube::Decoder;
/// let mut config = EtcdConfig::new(["http://127.0.0.1:2379"], "/registry/pods/")
///     .decoder(Decoder::new().field("spec.nodeName"));
/// config.cluster.request_timeout = Duration::from_secs(5);
/// ```
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// How the cluster is reached.
    pub cluster: ClusterConfig,
    /// The key prefix mirrored: one resource type (`/registry/pods/`).
    /// Keys under it are `namespace/name` or `name`. It must end in `/`:
    /// `/registry/pods` would also mirror `/registry/podtemplates/...`.
    pub prefix: String,
    /// Reads stored values as objects.
    pub decoder: Decoder,
}

impl EtcdConfig {
    /// Mirrors `prefix` from the members at `endpoints`
    /// ([`ClusterConfig::new`]'s defaults), decoding names, namespaces and
    /// labels (add fields to [`EtcdConfig::decoder`]).
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>, prefix: &str) -> EtcdConfig {
        EtcdConfig {
            cluster: ClusterConfig::new(endpoints),
            prefix: prefix.to_owned(),
            decoder: Decoder::new(),
        }
    }

    /// The same, with `decoder`.
    pub fn decoder(mut self, decoder: Decoder) -> EtcdConfig {
        self.decoder = decoder;
        self
    }
}

/// Why [`EtcdCluster::connect`](crate::EtcdCluster::connect) (or
/// [`EtcdSource::connect`](crate::EtcdSource::connect)) failed, or why
/// [`EtcdCluster::source`](crate::EtcdCluster::source) refused a prefix.
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
/// use herald_etcd::{ClusterConfig, ConnectError, EtcdCluster, MAX_KEEP_ALIVE};
/// let config = ClusterConfig {
///     keep_alive: (MAX_KEEP_ALIVE + Duration::from_secs(1), Duration::from_secs(3)),
///     ..ClusterConfig::new(["http://127.0.0.1:2379"])
/// };
/// // Refused before any connection is tried.
/// assert!(matches!(EtcdCluster::connect(config), Err(ConnectError::Config(_))));
/// ```
pub const MAX_KEEP_ALIVE: Duration = Duration::from_secs(24 * 3600);

/// What [`EtcdCluster::connect`](crate::EtcdCluster::connect) refuses
/// before it connects.
pub(crate) fn check_cluster(config: &ClusterConfig) -> Result<(), ConnectError> {
    let refuse = |why: String| Err(ConnectError::Config(why));
    if config.endpoints.is_empty() {
        return refuse("no endpoints".into());
    }
    for endpoint in &config.endpoints {
        check_endpoint(endpoint).map_err(|why| {
            ConnectError::Config(format!("endpoint {endpoint:?} is not a URL: {why}"))
        })?;
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

/// What [`EtcdCluster::source`](crate::EtcdCluster::source) refuses: a
/// key prefix that would mirror more than one resource type.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), ConnectError> {
    if prefix.is_empty() {
        return Err(ConnectError::Config(
            "the key prefix is empty: it would mirror every key in etcd (give one resource \
             type's, such as /registry/pods/)"
                .into(),
        ));
    }
    if !prefix.ends_with('/') {
        return Err(ConnectError::Config(format!(
            "the key prefix {prefix:?} does not end in '/': it would also mirror every key that \
             merely begins with it (/registry/pods takes in /registry/podtemplates/)"
        )));
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
