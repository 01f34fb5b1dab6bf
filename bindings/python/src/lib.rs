//! Herald's Python binding: the module `herald` (an abi3 wheel built with
//! maturin; see the README).
//!
//! - `Engine` holds the cache; its one `Writer` is taken once with
//!   `engine.writer()`.
//! - A `Watch` is a blocking iterator that releases the
//!   GIL while it waits, an asyncio async iterator driven by the engine's
//!   readiness wakes (one [`ReadySet`](herald_ready::ReadySet) per event
//!   loop, read by the loop's `add_reader` callback: no thread per watch,
//!   and no wake takes the GIL), and a batch `poll`.
//! - Every Rust error becomes a typed exception under `HeraldError`
//!   (`errors.rs`); no call panics on any input.

mod convert;
mod engine;
mod errors;
mod watch;

use pyo3::prelude::*;

/// The `herald` module.
#[pymodule]
#[pyo3(name = "herald")]
fn herald_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<engine::Engine>()?;
    m.add_class::<engine::Writer>()?;
    m.add_class::<engine::Object>()?;
    m.add_class::<engine::Item>()?;
    m.add_class::<engine::ListPage>()?;
    m.add_class::<watch::Watch>()?;
    m.add_class::<watch::Event>()?;
    m.add("HeraldError", py.get_type::<errors::HeraldError>())?;
    m.add("InvalidArgument", py.get_type::<errors::InvalidArgument>())?;
    m.add("InvalidSelector", py.get_type::<errors::InvalidSelector>())?;
    m.add("Gone", py.get_type::<errors::Gone>())?;
    m.add(
        "TooLargeResourceVersion",
        py.get_type::<errors::TooLargeResourceVersion>(),
    )?;
    m.add("OutOfOrder", py.get_type::<errors::OutOfOrder>())?;
    m.add("NotReady", py.get_type::<errors::NotReady>())?;
    m.add("EngineStopped", py.get_type::<errors::EngineStopped>())?;
    m.add("ClosedError", py.get_type::<errors::ClosedError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
