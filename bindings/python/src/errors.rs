//! The exceptions, one per kind of Rust error (as the C ABI's status
//! codes), and the conversions from the engine's errors.
#![allow(unreachable_pub)] // `create_exception!` declares `pub` types.

use herald::read::ReadError;
use herald::selector::SelectorError;
use herald::watch::WatchError;
use herald::writer::WriteError;
use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    herald,
    HeraldError,
    PyException,
    "The base of every error Herald raises."
);
create_exception!(
    herald,
    InvalidArgument,
    HeraldError,
    "An argument out of its domain: an invalid name, options Kubernetes \
     refuses, a malformed continue token, a second writer."
);
create_exception!(
    herald,
    InvalidSelector,
    InvalidArgument,
    "A label or field selector that does not parse."
);
create_exception!(
    herald,
    Gone,
    HeraldError,
    "The resource version asked for is older than the history kept (HTTP \
     410 Gone): list again."
);
create_exception!(
    herald,
    TooLargeResourceVersion,
    HeraldError,
    "The resource version asked for was not reached in time (HTTP 504 with \
     a retry-after)."
);
create_exception!(
    herald,
    OutOfOrder,
    HeraldError,
    "A write at or below the engine's resource version (nothing changed)."
);
create_exception!(
    herald,
    NotReady,
    HeraldError,
    "The engine holds no list yet, or lost its source (HTTP 429: retry)."
);
create_exception!(
    herald,
    EngineStopped,
    HeraldError,
    "The engine was stopped."
);
create_exception!(
    herald,
    ClosedError,
    HeraldError,
    "A call on a writer or a watch after its close()."
);

/// An invalid argument.
pub(crate) fn invalid(message: impl std::fmt::Display) -> PyErr {
    InvalidArgument::new_err(message.to_string())
}

/// A selector that does not parse (`what`: "label" or "field").
pub(crate) fn selector(what: &str, input: &str, e: SelectorError) -> PyErr {
    InvalidSelector::new_err(format!("{what} selector {input:?}: {e}"))
}

/// A write's error.
pub(crate) fn write(e: WriteError) -> PyErr {
    let message = e.to_string();
    match e {
        WriteError::OutOfOrder { .. } | WriteError::NotARegression { .. } => {
            OutOfOrder::new_err(message)
        }
        WriteError::Stopped => EngineStopped::new_err(message),
        WriteError::InvalidName { .. } | WriteError::ItemAhead { .. } => {
            InvalidArgument::new_err(message)
        }
        WriteError::NotReady => NotReady::new_err(message),
        _ => HeraldError::new_err(message),
    }
}

/// A watch's error.
pub(crate) fn watch(e: WatchError) -> PyErr {
    let message = e.to_string();
    match e {
        WatchError::Gone(_) => Gone::new_err(message),
        WatchError::EngineStopped => EngineStopped::new_err(message),
        WatchError::InvalidOptions(_) => InvalidArgument::new_err(message),
        WatchError::Upstream(r) => read(r),
        _ => HeraldError::new_err(message),
    }
}

/// A read's error.
pub(crate) fn read(e: ReadError) -> PyErr {
    let message = e.to_string();
    match e {
        ReadError::NotReady(_) => NotReady::new_err(message),
        ReadError::EngineStopped => EngineStopped::new_err(message),
        ReadError::Gone(_) => Gone::new_err(message),
        ReadError::TooLargeResourceVersion(_) => TooLargeResourceVersion::new_err(message),
        ReadError::InvalidContinue(_)
        | ReadError::ForeignContinue
        | ReadError::InvalidOptions(_) => InvalidArgument::new_err(message),
        _ => HeraldError::new_err(message),
    }
}
