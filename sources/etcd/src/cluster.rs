//! The connection to one etcd cluster that every resource's source
//! shares: one gRPC client (one HTTP/2 connection a member, chosen by
//! the client's balancer) on one runtime ([`Bridge`]), and what the
//! members said of their versions when it connected, which decides
//! whether progress notifications are trusted (`version.rs`).
//!
//! Each source keeps its own key prefix, decoder, counters and watches;
//! each watch is its own gRPC stream on the shared connection.

use std::num::NonZeroUsize;

use etcd_client::{Client, ConnectOptions};
use herald_bridge::Bridge;

use crate::config::{ClusterConfig, ConnectError, check_cluster, connect_error};
use crate::version::{Distrust, ProgressTrust, ServerVersion, judge};

/// The cluster's client, its runtime, what the members said.
pub(crate) struct Cluster {
    pub(crate) bridge: Bridge,
    pub(crate) client: Client,
    pub(crate) config: ClusterConfig,
    /// The oldest version among the members that answered at connect.
    pub(crate) version: Option<ServerVersion>,
    /// Why progress is not trusted (`None`: it is).
    pub(crate) distrust: Option<Distrust>,
    /// `distrust.is_none()`, read on every watch response.
    pub(crate) trusted: bool,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdCluster")
            .field("endpoints", &self.config.endpoints)
            .field("version", &self.version)
            .field("distrust", &self.distrust)
            .field("bridge", &self.bridge)
            .finish_non_exhaustive()
    }
}

/// A runtime of the cluster's own: one worker drives the connection (the
/// client's tasks); the futures a source waits on are polled on the
/// source's caller ([`Bridge::block_on`]).
pub(crate) fn own_runtime() -> Result<Bridge, ConnectError> {
    Bridge::new("herald-etcd", NonZeroUsize::MIN)
        .map_err(|e| ConnectError::Config(format!("a tokio runtime: {e}")))
}

impl Cluster {
    /// Checks `config`, connects on `bridge`'s runtime and asks every
    /// endpoint its version. An endpoint that does not answer is left to
    /// the client's balancer; none answering is
    /// [`ConnectError::Unreachable`]. Progress is trusted only if every
    /// endpoint answered with a release without etcd#15220; otherwise
    /// why is said on standard error, once for the cluster.
    pub(crate) fn connect(config: ClusterConfig, bridge: Bridge) -> Result<Cluster, ConnectError> {
        check_cluster(&config)?;
        let options = || {
            ConnectOptions::new()
                .with_connect_timeout(config.connect_timeout)
                .with_keep_alive(config.keep_alive.0, config.keep_alive.1)
                .with_keep_alive_while_idle(true)
                // A member cut off from the leader ends its watches, so
                // the reflector resumes on one that is not (the
                // apiserver's `WithRequireLeader`).
                .with_require_leader(true)
        };
        let timeout = config.request_timeout;
        let (client, answers) = bridge.block_on(async {
            // One client per endpoint first: connecting is lazy, so this
            // only builds each endpoint, and a malformed one is named.
            // They ask the versions, and are dropped with their
            // connections once they have.
            let mut ones = Vec::new();
            for endpoint in &config.endpoints {
                let one = Client::connect([endpoint], Some(options()))
                    .await
                    .map_err(|e| connect_error(endpoint, e))?;
                ones.push((endpoint, one));
            }
            let client = Client::connect(&config.endpoints, Some(options()))
                .await
                .map_err(|e| connect_error(&config.endpoints.join(","), e))?;
            let mut answers = Vec::new();
            for (endpoint, mut one) in ones {
                let answer = match tokio::time::timeout(timeout, one.status()).await {
                    Ok(Ok(status)) => Ok(status.version().to_owned()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer in {timeout:?}")),
                };
                answers.push((endpoint.clone(), answer));
            }
            Ok::<_, ConnectError>((client, answers))
        })?;
        if answers.iter().all(|(_, a)| a.is_err()) {
            let why = answers
                .iter()
                .filter_map(|(e, a)| a.as_ref().err().map(|why| format!("{e}: {why}")))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ConnectError::Unreachable(why));
        }
        let (version, distrust) = judge(config.progress, &answers);
        if let Some(why) = distrust
            .as_ref()
            .filter(|_| config.progress == ProgressTrust::Auto)
        {
            eprintln!(
                "herald-etcd: {why}: progress notifications are not trusted; consistent reads \
                 fall back to reading etcd"
            );
        }
        Ok(Cluster {
            bridge,
            client,
            config,
            version,
            trusted: distrust.is_none(),
            distrust,
        })
    }
}
