//! What a call did: the status codes, the error on its way to C (a code
//! and the calling thread's message), and the guard every entry point
//! runs its body in (errors and panics become codes).

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::AssertUnwindSafe;

use herald::read::ReadError;
use herald::watch::WatchError;
use herald::writer::WriteError;

use crate::handles::Stale;

/// What a call did: [`HERALD_OK`], [`HERALD_PENDING`], or a negative
/// error code (the message in [`herald_last_error`]).
pub type HeraldStatus = i32;

/// Done.
pub const HERALD_OK: HeraldStatus = 0;
/// Nothing yet: a poll found no event (a watch in a set is armed: the
/// set's descriptor becomes readable when it has one), or a wait timed out.
pub const HERALD_PENDING: HeraldStatus = 1;
/// A pointer argument that must not be null was null.
pub const HERALD_E_NULL: HeraldStatus = -1;
/// A handle that is 0, of another kind, never issued, or already freed.
pub const HERALD_E_HANDLE: HeraldStatus = -2;
/// An argument out of its domain: a malformed selector, a string that is
/// not UTF-8, an invalid object name, options Kubernetes refuses, a
/// malformed continue token, a watch in a set passed to
/// [`herald_watch_wait`](crate::herald_watch_wait).
pub const HERALD_E_INVALID: HeraldStatus = -3;
/// The resource version asked for is older than the history kept (HTTP
/// 410 Gone: list again).
pub const HERALD_E_GONE: HeraldStatus = -4;
/// The resource version asked for was not reached in time (HTTP 504 with
/// a retry-after).
pub const HERALD_E_TOO_LARGE_RESOURCE_VERSION: HeraldStatus = -5;
/// A write at or below the engine's resource version (nothing changed).
pub const HERALD_E_OUT_OF_ORDER: HeraldStatus = -6;
/// The engine was stopped.
pub const HERALD_E_STOPPED: HeraldStatus = -7;
/// The engine holds no list yet, or lost its source (HTTP 429: retry).
pub const HERALD_E_NOT_READY: HeraldStatus = -8;
/// A bug in Herald: a panic, caught at the boundary.
pub const HERALD_E_PANIC: HeraldStatus = -9;
/// The operating system refused a resource (an `eventfd`).
pub const HERALD_E_SYSTEM: HeraldStatus = -10;
/// Any other error the engine reports (the message says which).
pub const HERALD_E_OTHER: HeraldStatus = -11;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// An error on its way to C: a code and a message.
#[derive(Debug)]
pub(crate) struct Error {
    code: HeraldStatus,
    message: String,
}

impl Error {
    pub(crate) fn new(code: HeraldStatus, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Error {
        Error::new(HERALD_E_NULL, format!("{what} is a null pointer"))
    }

    pub(crate) fn invalid(message: impl std::fmt::Display) -> Error {
        Error::new(HERALD_E_INVALID, message.to_string())
    }
}

pub(crate) fn stale(kind: &str, handle: u64, why: Stale) -> Error {
    Error::new(
        HERALD_E_HANDLE,
        match why {
            Stale::Null => format!("the {kind} handle is 0"),
            Stale::Unknown => format!(
                "{handle:#x} is not a live {kind} handle (freed, of another kind, or never issued)"
            ),
        },
    )
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Error {
        let code = match &e {
            WriteError::OutOfOrder { .. } => HERALD_E_OUT_OF_ORDER,
            WriteError::Stopped => HERALD_E_STOPPED,
            WriteError::InvalidName { .. } => HERALD_E_INVALID,
            WriteError::NotReady => HERALD_E_NOT_READY,
            _ => HERALD_E_OTHER,
        };
        Error::new(code, e.to_string())
    }
}

impl From<WatchError> for Error {
    fn from(e: WatchError) -> Error {
        let code = match &e {
            WatchError::Gone(_) => HERALD_E_GONE,
            WatchError::EngineStopped => HERALD_E_STOPPED,
            WatchError::InvalidOptions(_) => HERALD_E_INVALID,
            WatchError::Upstream(r) => return Error::from(r.clone()),
            _ => HERALD_E_OTHER,
        };
        Error::new(code, e.to_string())
    }
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Error {
        let code = match &e {
            ReadError::NotReady(_) => HERALD_E_NOT_READY,
            ReadError::EngineStopped => HERALD_E_STOPPED,
            ReadError::Gone(_) => HERALD_E_GONE,
            ReadError::TooLargeResourceVersion(_) => HERALD_E_TOO_LARGE_RESOURCE_VERSION,
            ReadError::InvalidContinue(_)
            | ReadError::ForeignContinue
            | ReadError::InvalidOptions(_) => HERALD_E_INVALID,
            _ => HERALD_E_OTHER,
        };
        Error::new(code, e.to_string())
    }
}

/// Runs an entry point's body: its error or panic becomes a code and the
/// thread's last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<HeraldStatus, Error>) -> HeraldStatus {
    let (code, message) = match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => return status,
        Ok(Err(e)) => (e.code, e.message),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            (
                HERALD_E_PANIC,
                format!("a bug in Herald (please report): {what}"),
            )
        }
    };
    LAST_ERROR.with(|l| *l.borrow_mut() = message);
    code
}

/// Copies the calling thread's last error message, NUL-terminated and
/// cut to fit, into `buf` (`len` bytes; `buf` may be null when `len` is
/// 0). Returns the message's full length in bytes (without the NUL):
/// call again with a larger buffer if it did not fit. The message is that
/// of the last call on this thread that failed; success leaves it.
///
/// # Safety
/// `buf` is null (then `len` must be 0) or points to `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_last_error(buf: *mut c_char, len: usize) -> usize {
    let copied = std::panic::catch_unwind(|| {
        LAST_ERROR.with(|l| {
            let message = l.borrow();
            if !buf.is_null() && len > 0 {
                let n = message.len().min(len - 1);
                // SAFETY: the caller gives `len` writable bytes at `buf`;
                // `n + 1 <= len`, and a String never overlaps C's buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(message.as_ptr(), buf.cast::<u8>(), n);
                    *buf.add(n) = 0;
                }
            }
            message.len()
        })
    });
    copied.unwrap_or(0)
}
