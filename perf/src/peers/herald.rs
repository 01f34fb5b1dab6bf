//! Herald itself: an [`Engine`] with an index on `spec.nodeName` when the
//! spec asks for one, its [`Writer`] as the publisher, each [`Watch`]
//! drained with [`Watch::visit_batch`] (borrowed events, no reference
//! count traffic) or [`Watch::recv_batch`] (owned events).
//!
//! With `source`, the publisher writes to a [`MemorySource`] instead, and a
//! [`Reflector`] thread applies its watch to the engine: the embedded
//! setup end to end (one more hop, and one more thread on the cores).

use std::sync::Arc;
use std::task::{Context, Poll};

use herald::config::SlowWatchers;
use herald::reflector::{Reflector, ReflectorConfig};
use herald::source::MemorySource;
use herald::{Change, Config, Engine, Object, Relist, Watch, WatchItem, WatchRequest, Writer};

use crate::system::{Drained, Publisher, Spec, Subscriber, System};
use crate::workload::{Filter, Workload, node_name, pod_name};

/// The field the kubelet-shaped watchers select on.
pub const NODE_FIELD: &str = "spec.nodeName";

/// Herald, configured.
#[derive(Debug, Clone, Copy)]
pub struct Herald {
    /// Drain with `recv_batch` (owned events) instead of `visit_batch`.
    pub owned: bool,
    /// The slow-watcher policy.
    pub policy: SlowWatchers,
    /// Feed the engine from an in-memory source through a reflector.
    pub source: bool,
}

impl Default for Herald {
    fn default() -> Self {
        Herald {
            owned: false,
            policy: SlowWatchers::Park,
            source: false,
        }
    }
}

/// Herald's publisher: the writer (or the source) and the pre-built
/// changes.
pub struct HeraldPub {
    engine: Engine,
    feed: Feed,
    objects: Vec<Object>,
    workload: Arc<Workload>,
}

/// Where the publisher writes.
enum Feed {
    Writer(Writer),
    /// The source, and the reflector applying it (stopped on drop).
    Source(MemorySource, Option<Reflector>),
}

impl std::fmt::Debug for HeraldPub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeraldPub").finish_non_exhaustive()
    }
}

impl Publisher for HeraldPub {
    #[inline]
    fn publish(&mut self, i: usize) {
        let rv = self.workload.changes[i].rv;
        match &mut self.feed {
            Feed::Writer(writer) => writer
                .apply(Change::modified(self.objects[i].clone(), rv.into()))
                .expect("the workload's versions increase"),
            Feed::Source(source, _) => {
                let at = source.put(self.objects[i].clone());
                debug_assert_eq!(at.get(), rv, "the source's revisions follow the workload's");
            }
        }
    }
}

impl Drop for HeraldPub {
    fn drop(&mut self) {
        if std::env::var_os("HERALD_PERF_STATS").is_some() {
            let s = self.engine.stats();
            eprintln!(
                "stats: changes {} deliveries {} spilled {} parks {} resumes {} gated {} ring {} grows {}",
                s.changes_dispatched,
                s.deliveries,
                s.spilled,
                s.parks,
                s.resumes,
                s.writer_gated_waits,
                s.ring_capacity,
                s.ring_grows
            );
        }
        if let Feed::Source(_, reflector) = &mut self.feed {
            // Before the engine: its thread holds the writer.
            reflector.take().map(Reflector::stop);
        }
        self.engine.stop();
    }
}

/// One Herald watch: what an application holds per watcher (the handle,
/// and how it drains it). The owned drain's buffer is per consumer thread
/// (`OWNED_BUF`), as a server draining many watches from a pool of
/// threads would keep it, not one per watch.
#[derive(Debug)]
pub struct HeraldSub {
    watch: Watch,
    owned: bool,
}

impl HeraldSub {
    /// A watch drained with `poll_visit_batch` (borrowed events, with
    /// readiness), as the harness drains Herald everywhere by default.
    pub(crate) fn new(watch: Watch) -> HeraldSub {
        HeraldSub {
            watch,
            owned: false,
        }
    }
}

std::thread_local! {
    /// The owned drain's buffer, one per consumer thread: empty between
    /// drains, and grown once to the batch size.
    static OWNED_BUF: std::cell::RefCell<Vec<WatchItem>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

impl Subscriber for HeraldSub {
    fn has_readiness(&self) -> bool {
        !self.owned
    }

    #[inline]
    fn poll_drain<F: FnMut(u64, usize)>(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut F,
    ) -> Poll<Drained> {
        if self.owned {
            return Poll::Ready(self.drain(max, f));
        }
        self.watch
            .poll_visit_batch(cx, max, |ev| {
                f(
                    ev.resource_version().get(),
                    ev.object().map_or(0, |o| o.payload().len()),
                )
            })
            .map(|v| Drained {
                delivered: v.events,
                ended: v.end.is_some() || self.watch.is_finished(),
            })
    }

    #[inline]
    fn drain<F: FnMut(u64, usize)>(&mut self, max: usize, f: &mut F) -> Drained {
        if self.watch.is_finished() {
            return Drained {
                delivered: 0,
                ended: true,
            };
        }
        if self.owned {
            OWNED_BUF.with_borrow_mut(|buf| {
                buf.clear();
                self.watch.recv_batch(buf, max);
                let mut out = Drained::default();
                for item in buf.drain(..) {
                    match item {
                        WatchItem::Event(ev) => {
                            out.delivered += 1;
                            f(
                                ev.resource_version().get(),
                                ev.object().map_or(0, |o| o.payload().len()),
                            );
                        }
                        WatchItem::End(_) => out.ended = true,
                    }
                }
                out
            })
        } else {
            let v = self.watch.visit_batch(max, |ev| {
                f(
                    ev.resource_version().get(),
                    ev.object().map_or(0, |o| o.payload().len()),
                )
            });
            Drained {
                delivered: v.events,
                ended: v.end.is_some(),
            }
        }
    }
}

/// The object a pod is after change `c` (or in the initial list).
fn pod(key: u32, node: u32, workload: &Workload) -> Object {
    Object::builder("default", &pod_name(key))
        .label("app", "web")
        .field(NODE_FIELD, &node_name(node))
        .payload(workload.payload.clone())
        .build()
}

impl System for Herald {
    type Pub = HeraldPub;
    type Sub = HeraldSub;

    fn build(
        &self,
        spec: &Spec,
        workload: &Arc<Workload>,
    ) -> anyhow::Result<(HeraldPub, Vec<HeraldSub>)> {
        let mut config = Config::default()
            .history_bounds(spec.ring.min(100), spec.ring.max(100))
            .slow_watchers(self.policy);
        if spec.indexed {
            config = config.index(NODE_FIELD);
        }
        let (engine, mut writer) = Engine::new(config)?;
        let initial = workload
            .initial
            .iter()
            .enumerate()
            .map(|(k, &n)| pod(k as u32, n, workload));
        // Pre-build, so the timed loop only clones a handle per change.
        let objects: Vec<Object> = workload
            .changes
            .iter()
            .map(|c| pod(c.key, c.node, workload))
            .collect();
        let preloaded = &workload.changes[..spec.preloaded];
        let feed = if self.source {
            // The source starts at the list's revision, so its revisions
            // are the workload's.
            let source = MemorySource::seeded(initial, Workload::LIST_RV.into());
            let reflector = Reflector::spawn(
                Arc::new(source.clone()),
                engine.clone(),
                writer,
                ReflectorConfig::default(),
            )?;
            let reached = |rv: u64| {
                while engine.resource_version().get() < rv {
                    std::thread::yield_now();
                }
            };
            // Listed first, so the preloaded changes reach the engine as
            // changes (its history), not as part of the list.
            reached(Workload::LIST_RV);
            for object in &objects[..preloaded.len()] {
                source.put(object.clone());
            }
            reached(preloaded.last().map_or(Workload::LIST_RV, |c| c.rv));
            Feed::Source(source, Some(reflector))
        } else {
            writer.replace(Relist::new(initial, Workload::LIST_RV.into()))?;
            for (i, c) in preloaded.iter().enumerate() {
                writer.apply(Change::modified(objects[i].clone(), c.rv.into()))?;
            }
            Feed::Writer(writer)
        };
        let from = spec.start_rv(workload);
        let mut subs = Vec::with_capacity(spec.filters.len());
        for filter in &spec.filters {
            let mut req = WatchRequest::new().resource_version(Some(from.into()));
            if let Filter::Node(_) = filter {
                let sel = filter.field_selector().expect("node filter");
                req = req.fields(sel.parse()?);
            }
            subs.push(HeraldSub {
                watch: engine.watch(req)?,
                owned: self.owned,
            });
        }
        while engine.stats().watchers_active < spec.filters.len() as u64 {
            std::thread::yield_now();
        }
        Ok((
            HeraldPub {
                engine,
                feed,
                objects,
                workload: workload.clone(),
            },
            subs,
        ))
    }
}
