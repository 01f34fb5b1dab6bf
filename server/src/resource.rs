//! A served resource: its names ([`ResourceInfo`]), the engine that
//! holds it, and what the server counts for it.

use std::sync::Arc;

use herald::{Engine, Reflector};
use herald_kube::ResourceInfo;
use herald_kube::encode::Restamps;

use crate::counts::ResourceMetrics;
use crate::media::Encodings;
use herald_kube::table::Printer;

/// The served resources, by group-qualified plural name.
pub(crate) type ResourceMap = std::collections::BTreeMap<String, Resource>;

/// A served resource: its names, the engine serving it, and the reflector
/// keeping the engine in step with its source (if any).
#[derive(Debug, Clone)]
pub struct Resource {
    pub(crate) info: Arc<ResourceInfo>,
    pub(crate) engine: Engine,
    pub(crate) reflector: Option<Arc<Reflector>>,
    pub(crate) metrics: Arc<ResourceMetrics>,
    pub(crate) restamps: Arc<Restamps>,
    pub(crate) encodings: Arc<Encodings>,
    /// How `kubectl get` sees its objects (its kind's columns).
    pub(crate) printer: Arc<Printer>,
    pub(crate) health: Option<Arc<dyn SourceHealth>>,
}

/// What a resource's source says of the stored values it could not
/// decode: objects stored and not served. `/metrics` shows them, and
/// `/readyz` fails while more keys hold one than the server tolerates
/// ([`ServerConfig::max_undecodable`](crate::ServerConfig)).
pub trait SourceHealth: Send + Sync + std::fmt::Debug {
    /// Keys whose current value could not be decoded.
    fn undecodable_now(&self) -> u64;
    /// Every undecodable value met, by reason.
    fn undecodable_by_reason(&self) -> Vec<(&'static str, u64)>;
    /// The last one met: its key and why.
    fn last_undecodable(&self) -> Option<(String, String)>;
}

impl Resource {
    /// Serves `engine` as the resource `info`. With a `reflector`, reads
    /// of the most recent state are consistent with its source (they wait
    /// for the source's current revision); without one, they are served
    /// from what the engine holds.
    pub fn new(info: ResourceInfo, engine: Engine, reflector: Option<Reflector>) -> Resource {
        let info = Arc::new(info);
        Resource {
            metrics: Arc::new(ResourceMetrics::default()),
            restamps: Arc::default(),
            encodings: Arc::default(),
            printer: Arc::new(Printer::for_kind(&info.kind)),
            info,
            engine,
            reflector: reflector.map(Arc::new),
            health: None,
        }
    }

    /// The same, with its tables printed by `printer` (a custom
    /// resource's CRD columns).
    pub fn with_printer(mut self, printer: Printer) -> Resource {
        self.printer = Arc::new(printer);
        self
    }

    /// The same, with its source's report of undecodable values.
    pub fn with_health(mut self, health: Arc<dyn SourceHealth>) -> Resource {
        self.health = Some(health);
        self
    }

    /// The resource's names.
    pub fn info(&self) -> &ResourceInfo {
        &self.info
    }

    /// The engine serving it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The reflector keeping the engine in step with its source, if any.
    pub fn reflector(&self) -> Option<&Reflector> {
        self.reflector.as_deref()
    }
}
