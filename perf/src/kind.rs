//! The systems under test, by name: what the command line, the tables and
//! the JSON call them.

use serde::Serialize;

/// A system under test, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemKind {
    /// Herald (this project).
    Herald,
    /// The Rust port of the reference's dispatch (one lock, per-watcher
    /// bounded channels, time budget, terminate).
    Reference,
    /// `tokio::sync::broadcast`, filters applied by the receiver.
    TokioBroadcast,
    /// Per-watcher `crossbeam-channel` queues of `Arc`s, routed by a
    /// hash-map index.
    Crossbeam,
    /// The `disruptor` crate: one shared ring, a cursor per watcher
    /// (all-match only).
    Disruptor,
    /// Herald in front of a real etcd (etcd-fanout): an etcd source and a
    /// reflector feeding the engine.
    #[serde(rename = "herald+etcd")]
    HeraldEtcd,
    /// The same, the pods stored in etcd as JSON rather than the
    /// apiserver's protobuf (etcd-fanout): Herald reads them without the
    /// protobuf decode.
    #[serde(rename = "herald+etcd-json")]
    HeraldEtcdJson,
    /// etcd's own watch fan-out (etcd-fanout): one etcd watch per watcher,
    /// on `--etcd-connections` connections.
    Etcd,
    /// The same on one connection.
    EtcdOneConnection,
    /// Herald's Kubernetes API front (http-fanout): one HTTP watch
    /// connection per watcher on loopback, the clients asking for JSON.
    HeraldHttp,
    /// The same, the clients asking for protobuf (`Accept:
    /// application/vnd.kubernetes.protobuf`).
    HeraldHttpProtobuf,
    /// The same over TLS, each request authenticated (a bearer token of
    /// the token file) and authorized by RBAC (a ClusterRoleBinding of the
    /// token's group), the clients asking for JSON.
    HeraldHttpTls,
    /// Herald through the in-memory source and a reflector, watched
    /// in-process (http-fanout's baseline).
    #[serde(rename = "herald+source")]
    HeraldSource,
    /// The kubelet's object manager on Herald (the kubelet scenario).
    KubeletManager,
    /// A Rust port of the reference's object cache (seeds/002): a
    /// reflector and a store per object (the kubelet scenario).
    KubeletReference,
    /// `herald-server --etcd ... --resources pods`, the release binary, a
    /// process of its own (the pod-memory scenario).
    HeraldServer,
    /// The real kube-apiserver on the same etcd (pod-memory), or watched
    /// directly (apiserver-fanout).
    KubeApiserver,
    /// `herald-server --kubeconfig ... --resources pods` in front of the
    /// real kube-apiserver, watched instead of it (apiserver-fanout).
    #[serde(rename = "herald+apiserver")]
    HeraldApiserver,
    /// fleet-restart: three herald-server replicas behind HAProxy.
    HeraldFleet,
}

impl SystemKind {
    /// Every system, Herald first.
    pub const ALL: [SystemKind; 5] = [
        SystemKind::Herald,
        SystemKind::Reference,
        SystemKind::TokioBroadcast,
        SystemKind::Crossbeam,
        SystemKind::Disruptor,
    ];

    /// The etcd-fanout scenario's systems (a real etcd behind both): not
    /// among [`SystemKind::ALL`], which the in-memory scenarios run.
    pub const ETCD: [SystemKind; 4] = [
        SystemKind::HeraldEtcd,
        SystemKind::HeraldEtcdJson,
        SystemKind::Etcd,
        SystemKind::EtcdOneConnection,
    ];

    /// The http-fanout scenario's systems (with [`SystemKind::Etcd`] where
    /// an etcd is found).
    pub const HTTP: [SystemKind; 4] = [
        SystemKind::HeraldHttp,
        SystemKind::HeraldHttpProtobuf,
        SystemKind::HeraldHttpTls,
        SystemKind::HeraldSource,
    ];

    /// The kubelet scenario's systems, Herald's first.
    pub const KUBELET: [SystemKind; 2] = [SystemKind::KubeletManager, SystemKind::KubeletReference];

    /// The pod-memory scenario's systems, Herald's first.
    pub const SERVERS: [SystemKind; 2] = [SystemKind::HeraldServer, SystemKind::KubeApiserver];

    /// The apiserver-fanout scenario's systems, Herald's first.
    pub const APISERVER: [SystemKind; 2] = [SystemKind::HeraldApiserver, SystemKind::KubeApiserver];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Herald => "herald",
            SystemKind::HeraldHttp => "herald-server",
            SystemKind::HeraldHttpProtobuf => "herald-server-protobuf",
            SystemKind::HeraldHttpTls => "herald-server-tls",
            SystemKind::HeraldSource => "herald+source",
            SystemKind::Reference => "reference-port",
            SystemKind::TokioBroadcast => "tokio-broadcast",
            SystemKind::Crossbeam => "crossbeam-cacher",
            SystemKind::Disruptor => "disruptor",
            SystemKind::HeraldEtcd => "herald+etcd",
            SystemKind::HeraldEtcdJson => "herald+etcd-json",
            SystemKind::Etcd => "etcd",
            SystemKind::EtcdOneConnection => "etcd-one-connection",
            SystemKind::KubeletManager => "herald-kubelet",
            SystemKind::KubeletReference => "kubelet-reference",
            SystemKind::HeraldServer => "herald-server",
            SystemKind::KubeApiserver => "kube-apiserver",
            SystemKind::HeraldApiserver => "herald+apiserver",
            SystemKind::HeraldFleet => "herald-fleet",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<SystemKind> {
        SystemKind::ALL
            .into_iter()
            .chain(SystemKind::ETCD)
            .chain(SystemKind::HTTP)
            .chain(SystemKind::KUBELET)
            .chain(SystemKind::SERVERS)
            .chain(SystemKind::APISERVER)
            .chain([SystemKind::HeraldFleet])
            .find(|s| s.name() == name)
    }

    /// Whether this is Herald (the side ratios are taken for).
    pub fn is_herald(self) -> bool {
        matches!(
            self,
            SystemKind::Herald
                | SystemKind::HeraldEtcd
                | SystemKind::HeraldEtcdJson
                | SystemKind::HeraldHttp
                | SystemKind::HeraldHttpProtobuf
                | SystemKind::HeraldHttpTls
                | SystemKind::KubeletManager
                | SystemKind::HeraldServer
                | SystemKind::HeraldApiserver
                | SystemKind::HeraldFleet
        )
    }
}
