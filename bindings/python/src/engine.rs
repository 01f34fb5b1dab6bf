//! Engines, writers, objects and reads.

use std::collections::BTreeMap;
use std::sync::Mutex;

use herald::config::SlowWatchers;
use herald::event::ChangeKind;
use herald::read::{Continue, ListRequest, ReadAt};
use herald::rv::ResourceVersionMatch;
use herald::selector::{FieldSelector, KeyScope, LabelSelector};
use herald::{Change, Config, Relist, ResourceVersion, WatchRequest};
use pyo3::PyClassInitializer;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList};

use crate::convert::{labels_dict, lock, seconds};
use crate::errors;
use crate::watch::Watch;

/// The payload's bytes: `bytes` or `bytearray` (copied once, into the
/// engine's `Bytes`).
fn payload_bytes(payload: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    let Some(p) = payload else {
        return Ok(Vec::new());
    };
    if let Ok(b) = p.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = p.downcast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if p.is_none() {
        return Ok(Vec::new());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "payload must be bytes or bytearray, not {}",
        p.get_type().name()?
    )))
}

/// Builds an engine object.
fn build(
    namespace: &str,
    name: &str,
    labels: Option<BTreeMap<String, String>>,
    fields: Option<BTreeMap<String, String>>,
    payload: Vec<u8>,
) -> herald::Object {
    let mut b = herald::Object::builder(namespace, name);
    for (k, v) in labels.iter().flatten() {
        b = b.label(k, v);
    }
    for (k, v) in fields.iter().flatten() {
        b = b.field(k, v);
    }
    b.payload(payload).build()
}

/// The scope of a watch or a list: a namespace (prefix) or one key.
fn scope(namespace: Option<&str>, key: Option<&str>) -> PyResult<KeyScope> {
    match (namespace, key) {
        (Some(_), Some(_)) => Err(errors::invalid("pass namespace or key, not both")),
        (Some(ns), None) => Ok(KeyScope::prefix(ns)),
        (None, Some(k)) => Ok(KeyScope::exact(k)),
        (None, None) => Ok(KeyScope::All),
    }
}

fn selectors(labels: &str, fields: &str) -> PyResult<(LabelSelector, FieldSelector)> {
    let l = LabelSelector::parse(labels).map_err(|e| errors::selector("label", labels, e))?;
    let f = FieldSelector::parse(fields).map_err(|e| errors::selector("field", fields, e))?;
    Ok((l, f))
}

fn version_match(m: Option<&str>) -> PyResult<Option<ResourceVersionMatch>> {
    match m {
        None | Some("") => Ok(None),
        Some("NotOlderThan") => Ok(Some(ResourceVersionMatch::NotOlderThan)),
        Some("Exact") => Ok(Some(ResourceVersionMatch::Exact)),
        Some(other) => Err(errors::invalid(format!(
            "resource_version_match {other:?}: not \"NotOlderThan\" or \"Exact\""
        ))),
    }
}

/// An object to write (for [`Writer::replace`]; `Writer.apply` takes the
/// same arguments directly). Immutable.
#[pyclass(module = "herald", frozen, subclass)]
#[derive(Debug)]
pub(crate) struct Object {
    pub(crate) inner: herald::Object,
}

#[pymethods]
impl Object {
    /// `Object(namespace, name, labels=None, fields=None, payload=b"")`:
    /// the key is `namespace/name`, or `name` when the namespace is "".
    #[new]
    #[pyo3(signature = (namespace, name, labels=None, fields=None, payload=None))]
    fn new(
        namespace: &str,
        name: &str,
        labels: Option<BTreeMap<String, String>>,
        fields: Option<BTreeMap<String, String>>,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Object> {
        let payload = payload_bytes(payload)?;
        Ok(Object {
            inner: build(namespace, name, labels, fields, payload),
        })
    }

    /// `namespace/name`, or `name` when cluster-scoped.
    #[getter]
    fn key(&self) -> &str {
        self.inner.key()
    }

    /// The namespace ("" when cluster-scoped).
    #[getter]
    fn namespace(&self) -> &str {
        self.inner.namespace()
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The labels (a new dict).
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        labels_dict(py, &self.inner)
    }

    /// The payload (a copy, as `bytes`).
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.payload())
    }

    /// The value of a selectable field, or None.
    fn field(&self, name: &str) -> Option<String> {
        self.inner.field(name).map(str::to_owned)
    }

    fn __repr__(&self) -> String {
        format!("Object({:?})", self.inner.key())
    }
}

/// One object of a list or a get, with the version of its last change:
/// an [`Object`] (its getters are Object's) plus `resource_version`.
#[pyclass(module = "herald", frozen, extends = Object)]
#[derive(Debug)]
pub(crate) struct Item {
    /// The version of the object's last change.
    #[pyo3(get)]
    resource_version: u64,
}

impl Item {
    /// A Python `Item` for one read item.
    fn new(py: Python<'_>, item: herald::object::Item) -> PyResult<Bound<'_, Item>> {
        let init = PyClassInitializer::from(Object { inner: item.object }).add_subclass(Item {
            resource_version: item.resource_version.get(),
        });
        Bound::new(py, init)
    }
}

#[pymethods]
impl Item {
    fn __repr__(slf: PyRef<'_, Self>) -> String {
        format!(
            "Item({:?}, resource_version={})",
            slf.as_super().inner.key(),
            slf.resource_version
        )
    }
}

/// One page of a list.
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
pub(crate) struct ListPage {
    /// The objects (`Item`s), in key order.
    #[pyo3(get)]
    items: Py<PyList>,
    /// The version of the state read.
    #[pyo3(get)]
    resource_version: u64,
    /// Pass it as `continue_token` for the next page; None on the last.
    #[pyo3(get)]
    continue_token: Option<String>,
}

#[pymethods]
impl ListPage {
    fn __len__(&self, py: Python<'_>) -> usize {
        self.items.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ListPage({} items, resource_version={}, continue_token={:?})",
            self.items.bind(py).len(),
            self.resource_version,
            self.continue_token
        )
    }
}

/// A watch cache for one resource type. Create it with
/// `Engine(indexed_fields=None, history=None, too_large_timeout=None,
/// slow_watchers="park", inline_dispatch=True)`,
/// take its one writer with `writer()`. Thread-safe: every method may be
/// called from any thread at once; reads release the GIL while they wait.
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
pub(crate) struct Engine {
    engine: herald::Engine,
    /// Until `writer()` takes it.
    writer: Mutex<Option<herald::Writer>>,
}

#[pymethods]
impl Engine {
    /// `indexed_fields`: field paths to route watches by (`spec.nodeName`);
    /// `history`: `(lower, upper)` bounds of the changes kept for watches
    /// and reads from a past version; `too_large_timeout`: seconds a watch
    /// or read waits for a version the cache has not reached (default 3);
    /// `slow_watchers`: "park" (the default: a slow watcher is parked and
    /// resumed from history) or "time_budget" (the reference's: it ends
    /// with "too_slow"); `inline_dispatch` (default True, under "park"):
    /// `Writer.apply` fans its change out on the caller's thread when the
    /// engine's dispatcher is idle, so a writer on an event loop wakes
    /// that loop's watches without a hop through the dispatcher thread.
    #[new]
    #[pyo3(signature = (indexed_fields=None, history=None, too_large_timeout=None, slow_watchers="park", inline_dispatch=true))]
    fn new(
        indexed_fields: Option<Vec<String>>,
        history: Option<(usize, usize)>,
        too_large_timeout: Option<f64>,
        slow_watchers: &str,
        inline_dispatch: bool,
    ) -> PyResult<Engine> {
        let mut c = Config::default().slow_watchers(match slow_watchers {
            "park" => SlowWatchers::Park,
            "time_budget" => SlowWatchers::reference_budget(),
            other => {
                return Err(errors::invalid(format!(
                    "slow_watchers {other:?}: not \"park\" or \"time_budget\""
                )));
            }
        });
        c = c.inline_dispatch(inline_dispatch);
        for f in indexed_fields.iter().flatten() {
            c = c.index(f);
        }
        if let Some((lower, upper)) = history {
            c = c.history_bounds(lower, upper);
        }
        if let Some(t) = too_large_timeout {
            c = c.too_large_timeout(seconds("too_large_timeout", t)?);
        }
        let (engine, writer) = herald::Engine::new(c).map_err(errors::invalid)?;
        Ok(Engine {
            engine,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// The engine's one writer; a second call raises `InvalidArgument`.
    fn writer(&self) -> PyResult<Writer> {
        let w = lock(&self.writer)
            .take()
            .ok_or_else(|| errors::invalid("the engine's writer was taken already"))?;
        Ok(Writer {
            writer: Mutex::new(Some(w)),
        })
    }

    /// Stops the engine, for good: every watch ends with
    /// `"engine_stopped"`, writes and reads raise `EngineStopped`.
    fn stop(&self) {
        self.engine.stop();
    }

    /// The last version the engine applied.
    #[getter]
    fn resource_version(&self) -> u64 {
        self.engine.resource_version().get()
    }

    /// "pending" (no list yet), "ready" or "stopped".
    #[getter]
    fn lifecycle(&self) -> &'static str {
        match self.engine.lifecycle() {
            herald::engine::Lifecycle::Pending => "pending",
            herald::engine::Lifecycle::Ready => "ready",
            _ => "stopped",
        }
    }

    /// Counters: changes received, deliveries, watches started and active,
    /// re-lists.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.engine.stats();
        let d = PyDict::new(py);
        d.set_item("changes_received", s.changes_received)?;
        d.set_item("deliveries", s.deliveries)?;
        d.set_item("watches_started", s.watches_started)?;
        d.set_item("watchers_active", s.watchers_active)?;
        d.set_item("relists", s.relists)?;
        Ok(d)
    }

    /// Opens a watch (Kubernetes' WATCH): see the stubs for each option.
    #[pyo3(signature = (
        resource_version=None, label_selector="", field_selector="", namespace=None, key=None,
        allow_bookmarks=false, send_initial_events=None, resource_version_match=None, timeout=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn watch(
        &self,
        py: Python<'_>,
        resource_version: Option<u64>,
        label_selector: &str,
        field_selector: &str,
        namespace: Option<&str>,
        key: Option<&str>,
        allow_bookmarks: bool,
        send_initial_events: Option<bool>,
        resource_version_match: Option<&str>,
        timeout: Option<f64>,
    ) -> PyResult<Watch> {
        let (labels, fields) = selectors(label_selector, field_selector)?;
        let mut req = WatchRequest::new()
            .scope(scope(namespace, key)?)
            .labels(labels)
            .fields(fields)
            .resource_version(resource_version.map(ResourceVersion::new))
            .allow_bookmarks(allow_bookmarks);
        let mut rvm = version_match(resource_version_match)?;
        if let Some(send) = send_initial_events {
            // Kubernetes requires NotOlderThan with sendInitialEvents.
            rvm = rvm.or(Some(ResourceVersionMatch::NotOlderThan));
            req = req.send_initial_events(send);
        }
        if let Some(rvm) = rvm {
            req = req.resource_version_match(rvm);
        }
        if let Some(t) = timeout {
            req = req.timeout(seconds("timeout", t)?);
        }
        let engine = &self.engine;
        let w = py
            .allow_threads(|| engine.watch(req))
            .map_err(errors::watch)?;
        Ok(Watch::new(w))
    }

    /// Lists one page (Kubernetes' LIST with its version rules: unset, the
    /// latest; 0, any; `resource_version_match="Exact"`, that version).
    #[pyo3(signature = (
        resource_version=None, label_selector="", field_selector="", namespace=None, key=None,
        limit=0, continue_token=None, resource_version_match=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn list(
        &self,
        py: Python<'_>,
        resource_version: Option<u64>,
        label_selector: &str,
        field_selector: &str,
        namespace: Option<&str>,
        key: Option<&str>,
        limit: usize,
        continue_token: Option<&str>,
        resource_version_match: Option<&str>,
    ) -> PyResult<ListPage> {
        let (labels, fields) = selectors(label_selector, field_selector)?;
        let token = continue_token.filter(|t| !t.is_empty());
        let at = ReadAt::for_list(
            resource_version.map(ResourceVersion::new),
            version_match(resource_version_match)?,
            limit > 0,
            token.is_some(),
        )
        .map_err(errors::invalid)?;
        let mut req = ListRequest::new()
            .scope(scope(namespace, key)?)
            .labels(labels)
            .fields(fields)
            .at(at)
            .limit(limit);
        if let Some(t) = token {
            let t: Continue = t
                .parse()
                .map_err(|e| errors::invalid(format!("continue token: {e}")))?;
            req = req.continue_from(t);
        }
        let engine = &self.engine;
        let page = py
            .allow_threads(|| engine.list(&req))
            .map_err(errors::read)?;
        let list = PyList::empty(py);
        for item in page.items {
            list.append(Item::new(py, item)?)?;
        }
        Ok(ListPage {
            items: list.unbind(),
            resource_version: page.resource_version.get(),
            continue_token: page.continue_token.map(|t| t.to_string()),
        })
    }

    /// The object at `key` (`namespace/name`), or None; version rules as
    /// `list`'s, without paging.
    #[pyo3(signature = (key, resource_version=None, resource_version_match=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        resource_version: Option<u64>,
        resource_version_match: Option<&str>,
    ) -> PyResult<Option<Bound<'py, Item>>> {
        let at = ReadAt::for_get(
            resource_version.map(ResourceVersion::new),
            version_match(resource_version_match)?,
        )
        .map_err(errors::invalid)?;
        let engine = &self.engine;
        let got = py
            .allow_threads(|| engine.get(key, at))
            .map_err(errors::read)?;
        got.item.map(|i| Item::new(py, i)).transpose()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Stops the engine.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.engine.stop();
    }

    fn __repr__(&self) -> String {
        format!(
            "Engine(resource_version={}, lifecycle={:?})",
            self.engine.resource_version().get(),
            self.lifecycle()
        )
    }
}

/// The engine's one writer. Thread-safe: calls from many threads are
/// serialised (and release the GIL while they wait for each other).
#[pyclass(module = "herald", frozen)]
#[derive(Debug)]
pub(crate) struct Writer {
    /// None after `close()`.
    writer: Mutex<Option<herald::Writer>>,
}

impl Writer {
    fn with(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut herald::Writer) -> Result<(), herald::writer::WriteError> + Send,
    ) -> PyResult<()> {
        py.allow_threads(|| match lock(&self.writer).as_mut() {
            Some(w) => f(w).map_err(errors::write),
            None => Err(errors::ClosedError::new_err("the writer is closed")),
        })
    }
}

#[pymethods]
impl Writer {
    /// Applies one change at `resource_version` (above the engine's).
    /// `kind` is "ADDED", "MODIFIED" or "DELETED" (a deletion's object is
    /// its last state).
    #[pyo3(signature = (kind, resource_version, namespace, name, labels=None, fields=None, payload=None))]
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        py: Python<'_>,
        kind: &str,
        resource_version: u64,
        namespace: &str,
        name: &str,
        labels: Option<BTreeMap<String, String>>,
        fields: Option<BTreeMap<String, String>>,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let kind = match kind {
            "ADDED" => ChangeKind::Added,
            "MODIFIED" => ChangeKind::Modified,
            "DELETED" => ChangeKind::Deleted,
            other => {
                return Err(errors::invalid(format!(
                    "kind {other:?}: not \"ADDED\", \"MODIFIED\" or \"DELETED\""
                )));
            }
        };
        let object = build(namespace, name, labels, fields, payload_bytes(payload)?);
        let change = Change::new(kind, object, ResourceVersion::new(resource_version));
        self.with(py, |w| w.apply(change))
    }

    /// Replaces the whole state with `objects` (`Object`s) at
    /// `resource_version` (a list from the source; the first makes the
    /// engine ready). Running watches end with "relisted" if the version
    /// moved.
    fn replace(
        &self,
        py: Python<'_>,
        objects: Vec<PyRef<'_, Object>>,
        resource_version: u64,
    ) -> PyResult<()> {
        let objects: Vec<herald::Object> = objects.iter().map(|o| o.inner.clone()).collect();
        self.with(py, |w| {
            w.replace(Relist::new(objects, ResourceVersion::new(resource_version)))
        })
    }

    /// The source is at `resource_version` with nothing more (a progress
    /// notification): waiting reads and watches move on.
    fn progress(&self, py: Python<'_>, resource_version: u64) -> PyResult<()> {
        self.with(py, |w| w.progress(ResourceVersion::new(resource_version)))
    }

    /// Drops the writer: later calls raise `ClosedError` (the engine keeps
    /// what it has and serves on).
    fn close(&self, py: Python<'_>) {
        let w = py.allow_threads(|| lock(&self.writer).take());
        drop(w);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the writer.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }
}
