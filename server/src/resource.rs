//! A served resource: its names ([`ResourceInfo`]), the engine that
//! holds it, and what the server counts for it; for a custom resource,
//! every version it is served at (one engine, its objects converted on
//! the way out by its [`Converter`]).

use std::sync::Arc;

use herald::Engine;
use herald::reflector::Reflector;
use herald_kube::ResourceInfo;
use herald_kube::encode::Restamps;

use crate::counts::ResourceMetrics;
use crate::crds::Converter;
use herald_kube::table::Printer;
use herald_kube::wire::Encodings;

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
    /// Every version it is served at, when more than its engine's
    /// (a custom resource's); `None`: its engine's alone.
    pub(crate) views: Option<Arc<Vec<View>>>,
    /// How its objects convert to the version asked (a custom
    /// resource's).
    pub(crate) converter: Option<Arc<Converter>>,
}

/// One served version of a resource: its names, its `kubectl get`
/// columns.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub(crate) info: Arc<ResourceInfo>,
    pub(crate) printer: Arc<Printer>,
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
            views: None,
            converter: None,
        }
    }

    /// The same engine served at each of `versions` (names and
    /// printer; the engine's own version served only if listed), its
    /// objects converted to the version asked by `converter`: a custom
    /// resource. Also how a CRD's change that keeps what is stored
    /// updates what is served without a new engine: its open watches go
    /// on.
    pub fn with_versions(
        mut self,
        versions: Vec<(ResourceInfo, Printer)>,
        converter: Converter,
    ) -> Resource {
        let views = versions
            .into_iter()
            .map(|(info, printer)| View {
                info: Arc::new(info),
                printer: Arc::new(printer),
            })
            .collect();
        self.views = Some(Arc::new(views));
        self.converter = Some(Arc::new(converter));
        self
    }

    /// The resource as served at `version`, if it is.
    pub(crate) fn at(&self, version: &str) -> Option<Resource> {
        let Some(views) = &self.views else {
            return (self.info.version == version).then(|| self.clone());
        };
        let view = views.iter().find(|v| v.info.version == version)?;
        let mut r = self.clone();
        r.info = view.info.clone();
        r.printer = view.printer.clone();
        Some(r)
    }

    /// Its names at every version it is served at.
    pub fn served(&self) -> Vec<&ResourceInfo> {
        match &self.views {
            Some(views) => views.iter().map(|v| &*v.info).collect(),
            None => vec![&*self.info],
        }
    }

    /// How its objects convert between versions, if they do.
    pub fn converter(&self) -> Option<&Converter> {
        self.converter.as_deref()
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
