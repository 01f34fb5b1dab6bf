//! How one call to etcd is made from a blocking caller: a unary call
//! bounded by the request timeout ([`Cluster::call`]); a read (a call that
//! changes nothing) tried again while it fails `Unavailable`
//! ([`Cluster::read`], clientv3's retry interceptor); and what a failure
//! becomes for the reflector ([`unavailable`]).

use std::future::Future;
use std::time::Duration;

use herald::source::SourceError;

use crate::cluster::Cluster;

/// How long [`Cluster::read`] waits before trying a read again (clientv3's
/// `defaultBackoffWaitBetween`).
const READ_RETRY_BACKOFF: Duration = Duration::from_millis(25);

/// Far enough ahead to stand for never (tokio's own `far_future`: about
/// 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A call that failed: etcd's error, if it answered (`None`: no answer
/// within the request timeout), and the text to report, naming the call.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) error: Option<etcd_client::Error>,
    pub(crate) text: String,
}

/// Any failure but a compaction, for the reflector: it backs off and
/// resumes its watch.
pub(crate) fn unavailable(e: impl std::fmt::Display) -> SourceError {
    SourceError::Unavailable(format!("etcd: {e}"))
}

/// `now + timeout`, or [`FAR_FUTURE`] from now if that is past the clock's
/// range (`Duration::MAX`: wait for ever).
fn deadline_after(now: tokio::time::Instant, timeout: Duration) -> tokio::time::Instant {
    now.checked_add(timeout)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// Whether a failed call may succeed if tried again: the connection or the
/// member is unavailable (gRPC `Unavailable`, or the transport failed).
fn is_transient(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => status.code() == tonic::Code::Unavailable,
        etcd_client::Error::TransportError(_) => true,
        _ => false,
    }
}

impl Cluster {
    /// Runs a unary call with the request timeout.
    pub(crate) fn call<T, F>(&self, what: &str, f: F) -> Result<T, Failed>
    where
        F: Future<Output = Result<T, etcd_client::Error>> + Send,
        T: Send,
    {
        let timeout = self.config.request_timeout;
        match self
            .bridge
            .block_on(async { tokio::time::timeout(timeout, f).await })
        {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Failed {
                text: format!("{what}: {e}"),
                error: Some(e),
            }),
            Err(_) => Err(Failed {
                error: None,
                text: format!("{what}: no answer in {timeout:?}"),
            }),
        }
    }

    /// Runs a read (a call that changes nothing, so is safe to repeat)
    /// with the request timeout, retrying it while it fails `Unavailable`
    /// (a member down or restarting, no leader yet), as clientv3's retry
    /// interceptor does for immutable calls: the balancer sends the next
    /// try to another endpoint. Waits [`READ_RETRY_BACKOFF`] between
    /// tries; the last failure is returned once the timeout has passed.
    pub(crate) fn read<T, F, Fut>(&self, what: &str, mut f: F) -> Result<T, Failed>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send,
        T: Send,
    {
        let timeout = self.config.request_timeout;
        let outcome = self.bridge.block_on(async {
            let deadline = deadline_after(tokio::time::Instant::now(), timeout);
            loop {
                match tokio::time::timeout_at(deadline, f()).await {
                    Err(_) => return Err(None),
                    Ok(Ok(v)) => return Ok(v),
                    Ok(Err(e)) if is_transient(&e) => {
                        let next = deadline_after(tokio::time::Instant::now(), READ_RETRY_BACKOFF);
                        if next >= deadline {
                            return Err(Some(e));
                        }
                        tokio::time::sleep_until(next).await;
                    }
                    Ok(Err(e)) => return Err(Some(e)),
                }
            }
        });
        outcome.map_err(|e| match e {
            Some(e) => Failed {
                text: format!("{what}: {e}"),
                error: Some(e),
            },
            None => Failed {
                error: None,
                text: format!("{what}: no answer in {timeout:?}"),
            },
        })
    }
}
