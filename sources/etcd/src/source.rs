//! The public handles: [`EtcdCluster`] (one connection to a cluster) and
//! [`EtcdSource`] (one key prefix through it), and the [`Source`] the
//! reflector calls, each call made of the files below: a list in pages
//! (`list.rs`), a watch (`watch.rs`), progress requests (`progress.rs`),
//! and two linearizable reads, the current revision and one key, made
//! here through the cluster's retrying read (`calls.rs`).

use std::sync::Arc;

use etcd_client::GetOptions;
use herald::ResourceVersion;
use herald::object::Item;
use herald::source::{Listing, Source, SourceError, SourceWatch};
use herald_bridge::Bridge;
use herald_kube::{Decoder, Undecodable, UndecodableReport};

use crate::calls::{Failed, unavailable};
use crate::cluster::{Cluster, own_runtime};
use crate::config::{ClusterConfig, ConnectError, EtcdConfig, check_cluster, check_prefix};
use crate::decode::{prefix_end, rv_of};
use crate::shared::{EtcdStats, Shared};
use crate::version::{Distrust, ServerVersion};
use crate::watch;

/// A connection to one etcd cluster, shared by every resource's
/// [`EtcdSource`] made from it ([`EtcdCluster::source`]): one gRPC client
/// (one HTTP/2 connection a member), one runtime, one version check.
/// Each source keeps its own prefix, decoder and counters, and each of
/// its watches is its own gRPC stream on the connection. Cheap to clone.
///
/// ```no_run
/// use herald_etcd::{ClusterConfig, EtcdCluster};
/// use herald_kube::Decoder;
/// let cluster = EtcdCluster::connect(ClusterConfig::new(["http://127.0.0.1:2379"]))?;
/// let pods = cluster.source("/registry/pods/", Decoder::new().field("spec.nodeName"))?;
/// let nodes = cluster.source("/registry/minions/", Decoder::new())?;
/// # Ok::<(), herald_etcd::ConnectError>(())
/// ```
#[derive(Debug, Clone)]
pub struct EtcdCluster {
    cluster: Arc<Cluster>,
}

impl EtcdCluster {
    /// Connects to the cluster on a runtime of its own (one worker
    /// thread, `herald-etcd`), and asks every endpoint its version. An
    /// endpoint that does not answer is left to the client's balancer;
    /// none answering is [`ConnectError::Unreachable`]. A configuration
    /// that cannot work (see [`ClusterConfig`]) is
    /// [`ConnectError::Config`], found before any connection is tried.
    ///
    /// Progress notifications are trusted only if every endpoint answered
    /// with a release without etcd#15220 (see
    /// [`EtcdCluster::progress_distrust`]); otherwise the cluster says why
    /// on standard error once.
    pub fn connect(config: ClusterConfig) -> Result<EtcdCluster, ConnectError> {
        check_cluster(&config)?;
        EtcdCluster::connect_on(config, own_runtime()?)
    }

    /// [`EtcdCluster::connect`], on `bridge`'s runtime (shared with other
    /// clusters, an apiserver connection, or the embedder's own runtime):
    /// it builds none. See [`Bridge`] for what a shared runtime asks of
    /// its callers.
    ///
    /// ```no_run
    /// use std::num::NonZeroUsize;
    /// use herald_etcd::{Bridge, ClusterConfig, EtcdCluster};
    /// let upstreams = Bridge::new("upstreams", NonZeroUsize::new(2).unwrap())?;
    /// let a = EtcdCluster::connect_on(ClusterConfig::new(["http://10.0.0.1:2379"]), upstreams.clone())?;
    /// let b = EtcdCluster::connect_on(ClusterConfig::new(["http://10.0.1.1:2379"]), upstreams)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect_on(config: ClusterConfig, bridge: Bridge) -> Result<EtcdCluster, ConnectError> {
        Ok(EtcdCluster {
            cluster: Arc::new(Cluster::connect(config, bridge)?),
        })
    }

    /// A source of the keys under `prefix` (one resource type, such as
    /// `/registry/pods/`), read with `decoder`, on this connection. A
    /// prefix that is empty, or does not end in `/`, is
    /// [`ConnectError::Config`].
    pub fn source(&self, prefix: &str, decoder: Decoder) -> Result<EtcdSource, ConnectError> {
        check_prefix(prefix)?;
        Ok(EtcdSource {
            shared: Arc::new(Shared {
                cluster: self.cluster.clone(),
                prefix: prefix.to_owned(),
                prefix_end: prefix_end(prefix.as_bytes()),
                decoder,
                watches: Default::default(),
                counters: Default::default(),
                undecodable: Undecodable::default(),
            }),
        })
    }

    /// The oldest version among the members that answered at connect with
    /// a version that parses (`None`: none did).
    pub fn server_version(&self) -> Option<ServerVersion> {
        self.cluster.version
    }

    /// Whether progress notifications are passed on (see
    /// [`ProgressTrust`](crate::ProgressTrust)).
    pub fn progress_trusted(&self) -> bool {
        self.cluster.trusted
    }

    /// Why progress notifications are not passed on (`None`: they are): a
    /// member with etcd#15220, one whose version did not parse or that did
    /// not answer at connect, or
    /// [`ProgressTrust::Never`](crate::ProgressTrust::Never).
    pub fn progress_distrust(&self) -> Option<&Distrust> {
        self.cluster.distrust.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &ClusterConfig {
        &self.cluster.config
    }

    /// The runtime the connection runs on.
    pub fn bridge(&self) -> &Bridge {
        &self.cluster.bridge
    }
}

/// A [`Source`] over etcd v3: lists a key prefix in pages at one revision,
/// watches it with previous values and progress notifications, maps
/// compactions to [`SourceError::Compacted`] and everything else that
/// fails to [`SourceError::Unavailable`] (the reflector backs off and
/// resumes its watch). Made from an [`EtcdCluster`], whose connection it
/// shares with the cluster's other sources; clones share everything.
///
/// The calls block: they wait on the cluster's runtime, and may be made
/// from any thread, inside another runtime too ([`Bridge::block_on`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use herald::{Config, Engine};
/// use herald::reflector::{Reflector, ReflectorConfig};
/// use herald_etcd::{EtcdConfig, EtcdSource};
/// use herald_kube::Decoder;
/// let config = EtcdConfig::new(["http://127.0.0.1:2379"], "/registry/pods/")
///     .decoder(Decoder::new().field("spec.nodeName"));
/// let source = EtcdSource::connect(config)?;
/// let (engine, writer) = Engine::new(Config::default())?;
/// let reflector = Reflector::spawn(Arc::new(source), engine.clone(), writer, ReflectorConfig::default())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct EtcdSource {
    shared: Arc<Shared>,
}

impl EtcdSource {
    /// One resource on a cluster of its own: checks the whole
    /// configuration (the prefix too) before anything connects, then
    /// [`EtcdCluster::connect`] and [`EtcdCluster::source`]. Several
    /// resources of one cluster share one [`EtcdCluster`] instead.
    pub fn connect(config: EtcdConfig) -> Result<EtcdSource, ConnectError> {
        check_prefix(&config.prefix)?;
        EtcdCluster::connect(config.cluster)?.source(&config.prefix, config.decoder)
    }

    /// The cluster connection it reads through.
    pub fn cluster(&self) -> EtcdCluster {
        EtcdCluster {
            cluster: self.shared.cluster.clone(),
        }
    }

    /// The key prefix it mirrors.
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// The cluster's [`EtcdCluster::server_version`].
    pub fn server_version(&self) -> Option<ServerVersion> {
        self.shared.cluster.version
    }

    /// The cluster's [`EtcdCluster::progress_trusted`].
    pub fn progress_trusted(&self) -> bool {
        self.shared.cluster.trusted
    }

    /// The cluster's [`EtcdCluster::progress_distrust`].
    pub fn progress_distrust(&self) -> Option<&Distrust> {
        self.shared.cluster.distrust.as_ref()
    }

    /// What the source has done so far.
    pub fn stats(&self) -> EtcdStats {
        self.shared.counters.stats()
    }

    /// The stored values met that could not be decoded: how many keys hold
    /// one now, the totals by reason, the last one.
    pub fn undecodable(&self) -> UndecodableReport {
        self.shared.undecodable.report()
    }
}

impl Source for EtcdSource {
    /// The prefix at one revision, in pages of [`ClusterConfig::page_size`]:
    /// the first page at the current revision, the rest at the first's
    /// (the apiserver's `GetList`). A compaction past that revision while
    /// paging starts the list over (three tries in all, then
    /// `Compacted`, with the oldest revision etcd still holds).
    fn list(&self) -> Result<Listing, SourceError> {
        self.shared.list_pages(0)
    }

    /// The prefix at exactly `revision`, paged as [`Source::list`]:
    /// [`SourceError::Compacted`] if etcd no longer holds it, `Ok(None)`
    /// for a revision past etcd's (it cannot say yet).
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        let Ok(at) = i64::try_from(revision.get()) else {
            return Ok(None);
        };
        if at <= 0 || revision > self.current_revision()? {
            return Ok(None);
        }
        self.shared.list_pages(at).map(Some)
    }

    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        Ok(Box::new(watch::open(&self.shared, after)?))
    }

    /// A linearizable count of the prefix: its header's revision.
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        let shared = &*self.shared;
        let kv = shared.cluster.client.kv_client();
        let options = GetOptions::new()
            .with_range(shared.prefix_end.clone())
            .with_count_only();
        let resp = shared
            .cluster
            .read("current revision", || {
                let (mut kv, options) = (kv.clone(), options.clone());
                let key = shared.prefix.clone();
                async move { kv.get(key, Some(options)).await }
            })
            .map_err(|Failed { text, .. }| unavailable(text))?;
        Ok(rv_of(resp.header().map_or(0, |h| h.revision())))
    }

    /// Sends `RequestProgress` on every open watch (none is asked on an
    /// untrusted server: its answers would be dropped).
    fn request_progress(&self) -> Result<(), SourceError> {
        let shared = &*self.shared;
        if !shared.cluster.trusted {
            return Ok(());
        }
        shared.watches.request_progress(&shared.cluster.bridge)
    }

    fn progress_is_reliable(&self) -> bool {
        self.shared.cluster.trusted
    }

    /// A linearizable read of the one key.
    fn get(&self, key: &str) -> Result<(Option<Item>, ResourceVersion), SourceError> {
        let shared = &*self.shared;
        let kv = shared
            .cluster
            .client
            .kv_client()
            .max_decoding_message_size(i32::MAX as usize);
        let full = format!("{}{key}", shared.prefix);
        let resp = shared
            .cluster
            .read("get", || {
                let (mut kv, full) = (kv.clone(), full.clone());
                async move { kv.get(full, None).await }
            })
            .map_err(|Failed { text, .. }| unavailable(text))?;
        let revision = rv_of(resp.header().map_or(0, |h| h.revision()));
        let item = resp.kvs().first().and_then(|kv| {
            let object = shared.decode(kv, kv.mod_revision())?;
            Some(Item::new(object, rv_of(kv.mod_revision())))
        });
        Ok((item, revision))
    }
}
