//! A served resource: its names ([`ResourceInfo`]), the engine that
//! holds it, and what the server counts for it.

use std::sync::Arc;

use herald::{Engine, Reflector};
use herald_kube::ResourceInfo;
use herald_kube::encode::Restamps;

use crate::counts::ResourceMetrics;

/// A served resource: its names, the engine serving it, and the reflector
/// keeping the engine in step with its source (if any).
#[derive(Debug, Clone)]
pub struct Resource {
    pub(crate) info: Arc<ResourceInfo>,
    pub(crate) engine: Engine,
    pub(crate) reflector: Option<Arc<Reflector>>,
    pub(crate) metrics: Arc<ResourceMetrics>,
    pub(crate) restamps: Arc<Restamps>,
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
            info,
            engine,
            reflector: reflector.map(Arc::new),
        }
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
