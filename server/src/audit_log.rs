//! The audit log (`--audit-log-path`, `--audit-policy-file`): the
//! apiserver's log backend, one `audit.k8s.io/v1` `Event` per line, at
//! the level and stages the policy chooses (see `herald_auth::audit`).
//!
//! Off the request's path: a request hands its event to a bounded queue
//! (of [`QUEUE`] events) and a thread of its own encodes and writes
//! them, flushing whenever the queue runs dry. A full queue (a disk
//! slower than the requests) drops the event rather than slow a request,
//! and counts it (`herald_http_audit_events_dropped_total`); a failed
//! write is counted too (`herald_http_audit_write_failures_total`) and
//! logged once per failure streak. An operator who must lose no event
//! alerts on both.
//!
//! The stages, as the apiserver writes them: `RequestReceived` once the
//! request is authenticated; `ResponseStarted` when a watch has sent its
//! headers; `ResponseComplete` when a response's body is done (a watch's
//! when it ends). A request whose credentials were refused is one
//! `ResponseStarted` event with no user, as `WithFailedAuthenticationAudit`
//! writes it.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::task::{Context, Poll};
use std::time::SystemTime;

use axum::body::Body;
use bytes::Bytes;
use herald_auth::audit::{Event, Policy, Stage};
use http_body::Frame;

/// Events waiting for the writer at most.
pub const QUEUE: usize = 16_384;

/// The audit log: its policy and the writer's queue.
#[derive(Debug)]
pub struct AuditLog {
    policy: Policy,
    tx: SyncSender<(Arc<Event>, Stage, SystemTime)>,
    counts: Arc<AuditCounts>,
}

/// What the audit log wrote, dropped and failed to write: independent
/// counters, each `Relaxed` (read for `/metrics`, never to order
/// anything).
#[derive(Debug, Default)]
pub struct AuditCounts {
    /// Events written.
    pub written: AtomicU64,
    /// Events dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Writes that failed.
    pub write_failures: AtomicU64,
}

/// Where the log goes.
enum Sink {
    Stdout,
    File(PathBuf),
}

impl AuditLog {
    /// Writes the events `policy` chooses to `path` (`-`: standard
    /// output), appending; the file is created, readable by its owner
    /// only, if it does not exist.
    pub fn open(path: &Path, policy: Policy) -> Result<AuditLog, String> {
        let sink = if path == Path::new("-") {
            Sink::Stdout
        } else {
            Sink::File(path.to_owned())
        };
        let out: Box<dyn Write + Send> = match &sink {
            Sink::Stdout => Box::new(std::io::stdout()),
            Sink::File(p) => {
                let mut o = OpenOptions::new();
                o.create(true).append(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
                Box::new(
                    o.open(p)
                        .map_err(|e| format!("--audit-log-path {}: {e}", p.display()))?,
                )
            }
        };
        let (tx, rx) = sync_channel(QUEUE);
        let counts = Arc::new(AuditCounts::default());
        let writer = counts.clone();
        std::thread::Builder::new()
            .name("herald-audit".into())
            .spawn(move || write_all(rx, BufWriter::with_capacity(256 << 10, out), &writer))
            .map_err(|e| format!("the audit writer thread: {e}"))?;
        Ok(AuditLog { policy, tx, counts })
    }

    /// The policy.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Its counts.
    pub(crate) fn counts(&self) -> &AuditCounts {
        &self.counts
    }

    /// Queues `event` at `stage`, now; dropped (and counted) if the
    /// queue is full.
    pub(crate) fn log(&self, event: &Arc<Event>, stage: Stage) {
        match self.tx.try_send((event.clone(), stage, SystemTime::now())) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn write_all(
    rx: Receiver<(Arc<Event>, Stage, SystemTime)>,
    mut out: BufWriter<Box<dyn Write + Send>>,
    counts: &AuditCounts,
) {
    let mut failing = false;
    let mut result = |r: std::io::Result<()>, counts: &AuditCounts| match r {
        Ok(()) => failing = false,
        Err(e) => {
            counts.write_failures.fetch_add(1, Ordering::Relaxed);
            if !failing {
                eprintln!("herald-server: the audit log cannot be written: {e}");
            }
            failing = true;
        }
    };
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some((event, stage, at)) = next {
            let r = out.write_all(&event.line(stage, at));
            if r.is_ok() {
                counts.written.fetch_add(1, Ordering::Relaxed);
            }
            result(r, counts);
            next = rx.try_recv().ok();
        }
        result(out.flush(), counts);
    }
    result(out.flush(), counts);
}

/// A response body that writes the request's `ResponseComplete` event
/// when it is done or dropped (a watch: when it ends, or its client
/// goes).
pub(crate) struct Completes {
    inner: Body,
    done: Option<(Arc<AuditLog>, Arc<Event>)>,
}

impl Completes {
    /// `inner`, writing `event`'s `ResponseComplete` to `log` at its end.
    pub(crate) fn new(inner: Body, log: Arc<AuditLog>, event: Arc<Event>) -> Completes {
        Completes {
            inner,
            done: Some((log, event)),
        }
    }

    fn complete(&mut self) {
        if let Some((log, event)) = self.done.take() {
            log.log(&event, Stage::ResponseComplete);
        }
    }
}

impl Drop for Completes {
    fn drop(&mut self) {
        self.complete();
    }
}

impl http_body::Body for Completes {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.complete();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
