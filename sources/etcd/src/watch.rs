//! One etcd watch of a source's prefix, as a [`SourceWatch`]: its own
//! gRPC stream on the cluster's connection, from a revision on, with
//! previous values and progress notifications. Each response is read on
//! the caller of [`SourceWatch::next`] and queued as events: changes (by
//! `decode.rs`), progress (passed on when the cluster is trusted and it is
//! ahead of what the watch delivered; dropped otherwise), or the watch's
//! end (cancelled: `compaction.rs` says how; the stream closed or failed:
//! `Unavailable`, and the reflector resumes).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{WatchOptions, WatchResponse, WatchResponseStream};
use herald::ResourceVersion;
use herald::source::{SourceError, SourceEvent, SourceWatch};
use tokio::sync::Mutex as AsyncMutex;

use crate::calls::{Failed, unavailable};
use crate::compaction::cancelled;
use crate::progress::Requests;
use crate::shared::{Shared, bump};

/// One open etcd watch.
#[derive(Debug)]
pub(crate) struct EtcdWatch {
    source: Arc<Shared>,
    /// Its request half: kept open while the watch is (dropping it ends
    /// the stream), and borrowed by progress requests.
    sender: Requests,
    responses: WatchResponseStream,
    queue: VecDeque<SourceEvent>,
    /// The revision the watch started after.
    after: ResourceVersion,
    /// The highest revision delivered (or started after): a progress
    /// notification at or below it says nothing new.
    high: u64,
    /// The watch has ended: returned once the queue is drained.
    ended: Option<SourceError>,
}

/// Opens a watch of `source`'s prefix after `after`, and waits for etcd's
/// first answer: created, or refused at once (its start compacted away:
/// `Compacted`). Registered for progress requests once open.
pub(crate) fn open(source: &Arc<Shared>, after: ResourceVersion) -> Result<EtcdWatch, SourceError> {
    let cluster = &*source.cluster;
    let start = i64::try_from(after.get().saturating_add(1)).unwrap_or(i64::MAX);
    let options = WatchOptions::new()
        .with_range(source.prefix_end.clone())
        .with_start_revision(start)
        .with_prev_key()
        .with_progress_notify();
    let mut client = cluster
        .client
        .watch_client()
        .max_decoding_message_size(i32::MAX as usize);
    let key = source.prefix.clone().into_bytes();
    let opened = cluster.call("watch", async move {
        let stream = client.watch(key, Some(options)).await?;
        let (sender, mut responses) = stream.split();
        // The first answer says whether the watch was created, or
        // refused at once (its start compacted away).
        let first = responses.message().await?;
        Ok((sender, responses, first))
    });
    let (sender, responses, first) = opened.map_err(|Failed { text, .. }| unavailable(text))?;
    bump(&source.counters.watches_opened);
    let mut watch = EtcdWatch {
        source: source.clone(),
        sender: Arc::new(AsyncMutex::new(sender)),
        responses,
        queue: VecDeque::new(),
        after,
        high: after.get(),
        ended: None,
    };
    match first {
        None => return Err(unavailable("the watch stream closed before it was created")),
        Some(resp) => watch.take(resp),
    }
    if let Some(e) = watch.ended.take() {
        return Err(e);
    }
    source.watches.add(&watch.sender);
    Ok(watch)
}

impl EtcdWatch {
    /// Queues what one response says.
    fn take(&mut self, resp: WatchResponse) {
        let source = &*self.source;
        if resp.canceled() {
            self.ended = Some(cancelled(&resp, self.after));
            return;
        }
        if resp.created() {
            return;
        }
        if resp.events().is_empty() {
            let rev = resp.header().map_or(0, |h| h.revision()).max(0) as u64;
            if source.cluster.trusted && rev > self.high {
                self.high = rev;
                bump(&source.counters.progress_passed);
                self.queue
                    .push_back(SourceEvent::Progress(ResourceVersion::new(rev)));
            } else {
                bump(&source.counters.progress_dropped);
            }
            return;
        }
        for event in resp.events() {
            if let Some(change) = source.change(event) {
                self.high = self.high.max(change.resource_version().get());
                self.queue.push_back(SourceEvent::Change(change));
            }
        }
    }
}

impl SourceWatch for EtcdWatch {
    fn next(&mut self, timeout: Duration) -> Result<Option<SourceEvent>, SourceError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(Some(event));
            }
            if let Some(e) = &self.ended {
                return Err(e.clone());
            }
            let left = deadline.map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Ok(None);
            }
            let responses = &mut self.responses;
            let got = self
                .source
                .cluster
                .bridge
                .block_on(async { tokio::time::timeout(left, responses.message()).await });
            match got {
                Err(_) => return Ok(None),
                Ok(Ok(Some(resp))) => self.take(resp),
                Ok(Ok(None)) => {
                    self.ended = Some(unavailable("the server closed the watch stream"));
                }
                Ok(Err(e)) => self.ended = Some(unavailable(e)),
            }
        }
    }
}
