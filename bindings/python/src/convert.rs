//! Small conversions shared by the engine's and the watches' classes:
//! locks through poisoning, seconds from Python, labels as a dict.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

/// Locks a mutex, through poisoning (no panic crosses into Python; a
/// poisoned lock only means another call failed half-way, which the
/// engine's own state never depends on).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seconds from Python as a duration: not negative, not NaN; more than a
/// duration holds (`float("inf")`) saturates, as every engine duration
/// does ("never").
pub(crate) fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    if s.is_nan() || s < 0.0 {
        return Err(errors::invalid(format!(
            "{what} must be seconds >= 0, not {s}"
        )));
    }
    Ok(Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
}

/// An object's labels as a dict.
pub(crate) fn labels_dict<'py>(
    py: Python<'py>,
    o: &herald::Object,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in o.labels() {
        d.set_item(k, v)?;
    }
    Ok(d)
}
