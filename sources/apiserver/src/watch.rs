//! One watch on the apiserver, as a [`SourceWatch`]: a task on the
//! connection's runtime reads the stream, resumes it when the apiserver
//! ends it, opens a short one when progress is asked for, and hands
//! events to [`ApiWatch::next`] through a bounded channel (a reflector
//! that does not keep up slows the reading of this stream only).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herald::source::{SourceError, SourceEvent, SourceWatch};
use herald::{Change, ResourceVersion};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::conn::{Failure, status_object};
use crate::frames;
use crate::shared::{BOOKMARKS_NONE, BOOKMARKS_SENT, BOOKMARKS_UNKNOWN, Shared, bump, parse_rv};
use crate::stream::OpenStream;

/// Events buffered between the task and the reflector.
const CHANNEL: usize = 256;

/// A watch the apiserver ends sooner than this with nothing in it ends
/// the watch with an error (no apiserver ends a watch at once: its
/// shortest here lasts 3 s), so that reopening it is paced by the
/// reflector's backoff rather than a loop.
const QUICK_END: Duration = Duration::from_secs(1);

/// A short watch's `timeoutSeconds`: the apiserver sends a bookmark 2 s
/// before a watch's deadline, and none to a watch shorter than that.
const PROGRESS_WATCH_SECONDS: u64 = 3;

type Sent = Result<SourceEvent, SourceError>;

/// An open watch; dropping it ends the task and the stream.
#[derive(Debug)]
pub(crate) struct ApiWatch {
    events: flume::Receiver<Sent>,
    /// Dropped with the watch: the task sees it and ends.
    _stop: oneshot::Sender<()>,
    ended: bool,
}

impl ApiWatch {
    /// Starts a watch of everything after `after`: on `opened` (a
    /// watch-list's stream, past its initial events, at `after`) when
    /// given, else on a stream it opens.
    pub(crate) fn start(
        shared: Arc<Shared>,
        after: ResourceVersion,
        opened: Option<OpenStream>,
    ) -> ApiWatch {
        let (tx, events) = flume::bounded(CHANNEL);
        let (stop_tx, stop) = oneshot::channel();
        let conn = shared.conn.clone();
        conn.spawn(async move {
            tokio::select! {
                _ = stop => {}
                () = run(shared, after, opened, tx) => {}
            }
        });
        ApiWatch {
            events,
            _stop: stop_tx,
            ended: false,
        }
    }
}

impl SourceWatch for ApiWatch {
    fn next(&mut self, timeout: Duration) -> Result<Option<SourceEvent>, SourceError> {
        if self.ended {
            return Err(SourceError::Unavailable("the watch has ended".into()));
        }
        match self.events.recv_timeout(timeout) {
            Ok(Ok(event)) => Ok(Some(event)),
            Ok(Err(e)) => {
                self.ended = true;
                Err(e)
            }
            Err(flume::RecvTimeoutError::Timeout) => Ok(None),
            Err(flume::RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Err(SourceError::Unavailable("the watch task ended".into()))
            }
        }
    }
}

/// Why a stream was left.
enum Leave {
    /// The apiserver ended it (its `timeoutSeconds`), or a short watch
    /// got its bookmark: open the next.
    Resume,
    /// Progress was asked for: open a short one.
    Progress,
    /// The watch ends with this error.
    End(SourceError),
    /// The reader is gone.
    Gone,
}

/// The watch: streams one after another from the last version seen,
/// until an error or the reader goes.
async fn run(
    shared: Arc<Shared>,
    after: ResourceVersion,
    mut opened: Option<OpenStream>,
    tx: flume::Sender<Sent>,
) {
    let mut progress = shared.progress.subscribe();
    // Progress requests made before this watch are not its to answer.
    progress.borrow_and_update();
    let mut last = after.get();
    let mut short = false;
    loop {
        let leave = stream(&shared, &mut last, short, opened.take(), &mut progress, &tx).await;
        match leave {
            // Short next if progress was asked for since the last short
            // watch began (a short watch does not look while it runs).
            Leave::Resume => short = progress.has_changed().unwrap_or(false),
            Leave::Progress => short = true,
            Leave::End(e) => {
                let _ = tx.send_async(Err(e)).await;
                return;
            }
            Leave::Gone => return,
        }
    }
}

/// A watch's `timeoutSeconds`: between `base` and twice it, at random,
/// so that the watches of many sources do not all resume at once.
pub(crate) fn jittered(base: Duration) -> u64 {
    // At most a day: a huge configured length (`Duration::MAX`) neither
    // overflows below nor asks the apiserver for centuries.
    let base = base.as_secs().clamp(1, 86_400);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    base + u64::from(nanos) % base
}

/// One stream, from `last` (`opened`, or one it opens), until it ends or
/// must be left.
async fn stream(
    shared: &Shared,
    last: &mut u64,
    short: bool,
    opened: Option<OpenStream>,
    progress: &mut tokio::sync::watch::Receiver<u64>,
    tx: &flume::Sender<Sent>,
) -> Leave {
    // A short watch from below the apiserver's known current version
    // must get a bookmark, if the apiserver sends them for the resource.
    let owed = short && shared.current.load(std::sync::atomic::Ordering::Relaxed) > *last;
    let mut stream = match opened {
        Some(s) => s,
        None => {
            let seconds = if short {
                // The requests made until now are this one's to answer.
                progress.borrow_and_update();
                PROGRESS_WATCH_SECONDS
            } else {
                jittered(shared.conn.config.watch_timeout)
            };
            let uri = format!(
                "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={seconds}",
                shared.path, last
            );
            bump(&shared.counters.watches_opened);
            if short {
                bump(&shared.counters.progress_watches);
            }
            match OpenStream::open(&shared.conn, uri, shared.accept()).await {
                Ok(s) => s,
                Err((_, Failure::Gone(why))) => return Leave::End(compacted(*last, &why)),
                Err((_, Failure::Other(why))) => return Leave::End(SourceError::Unavailable(why)),
            }
        }
    };
    let opened_at = std::time::Instant::now();
    let mut took = 0u64;
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            changed = progress.changed(), if !short => {
                if changed.is_err() {
                    return Leave::Gone;
                }
                // Asked for progress: leave this stream for a short one
                // from the same version (nothing is lost or repeated).
                return Leave::Progress;
            }
        };
        let event = match event {
            Ok(Some(e)) => e,
            Ok(None) => {
                if owed {
                    // Ended with no bookmark it owed: the apiserver sends
                    // none for this resource (its watch cache is off).
                    shared
                        .bookmarks
                        .store(BOOKMARKS_NONE, std::sync::atomic::Ordering::Relaxed);
                }
                if took == 0 && opened_at.elapsed() < QUICK_END {
                    // Ended at once, empty: opening it again at once would
                    // hammer the apiserver; the reflector's backoff paces it.
                    return Leave::End(SourceError::Unavailable(format!(
                        "GET {}: the apiserver ended the watch at once, sending nothing",
                        stream.uri
                    )));
                }
                return Leave::Resume;
            }
            Err(e) => return Leave::End(SourceError::Unavailable(e)),
        };
        took += 1;
        match take(shared, last, event) {
            Ok(None) => {}
            Ok(Some(sent)) => {
                let bookmark = matches!(sent, SourceEvent::Progress(_));
                if tx.send_async(Ok(sent)).await.is_err() {
                    return Leave::Gone;
                }
                if bookmark && short {
                    // The bookmark a short watch was opened for.
                    return Leave::Resume;
                }
            }
            Err(e) => return Leave::End(e),
        }
    }
}

/// An event read off the stream, checked, as what the reflector gets (or
/// nothing: a bookmark that does not move on, an undecodable object).
fn take(
    shared: &Shared,
    last: &mut u64,
    event: frames::Event,
) -> Result<Option<SourceEvent>, SourceError> {
    let version_of = |object: &serde_json::Map<String, Value>| {
        object
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .and_then(parse_rv)
    };
    match event.kind.as_str() {
        "BOOKMARK" => {
            let rv = version_of(&event.object).ok_or_else(|| {
                SourceError::Unavailable(format!("{}: a bookmark without a version", shared.path))
            })?;
            if rv <= *last {
                return Ok(None);
            }
            *last = rv;
            bump(&shared.counters.bookmarks);
            shared
                .bookmarks
                .store(BOOKMARKS_SENT, std::sync::atomic::Ordering::Relaxed);
            Ok(Some(SourceEvent::Progress(ResourceVersion::new(rv))))
        }
        "ERROR" => {
            let (code, message) = error_status(&event.object);
            Err(if code == Some(410) {
                compacted(*last, &message)
            } else {
                SourceError::Unavailable(format!("{}: the watch failed: {message}", shared.path))
            })
        }
        kind @ ("ADDED" | "MODIFIED" | "DELETED") => {
            let key = Shared::key_of(&event.object);
            let rv = version_of(&event.object);
            let (object, rv) = match shared.decoder.served(event.object, shared.type_meta()) {
                Ok(got) => got,
                Err(e) => {
                    // Skipped, counted and shown; the stream goes on past
                    // it (its version, when it has one, is passed).
                    bump(&shared.counters.undecodable);
                    shared.undecodable.met(key.as_bytes(), &e);
                    if let Some(rv) = rv.filter(|&rv| rv > *last) {
                        *last = rv;
                    }
                    return Ok(None);
                }
            };
            if rv.get() <= *last {
                return Err(SourceError::Unavailable(format!(
                    "{}: a {kind} of {key} at version {} after {}: the apiserver's versions went back",
                    shared.path,
                    rv.get(),
                    last
                )));
            }
            *last = rv.get();
            shared.undecodable.cleared(key.as_bytes());
            Ok(Some(SourceEvent::Change(match kind {
                "ADDED" => Change::added(object, rv),
                "MODIFIED" => Change::modified(object, rv),
                _ => Change::deleted(object, rv),
            })))
        }
        other => Err(SourceError::Unavailable(format!(
            "{}: a watch event of type {other:?}",
            shared.path
        ))),
    }
}

/// A 410: the version is older than the apiserver keeps. Its message
/// says the oldest it has (`too old resource version: 5 (30)`) when it
/// can.
pub(crate) fn compacted(requested: u64, message: &str) -> SourceError {
    let oldest = oldest_in(message).unwrap_or(requested + 1);
    SourceError::Compacted {
        requested: ResourceVersion::new(requested),
        compacted: ResourceVersion::new(oldest),
    }
}

/// An `ERROR` event's `Status`: its code and message.
fn error_status(object: &serde_json::Map<String, Value>) -> (Option<u64>, String) {
    let status = status_object(&serde_json::to_vec(object).unwrap_or_default());
    let code = status
        .as_ref()
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64);
    let message = status
        .as_ref()
        .and_then(|s| s.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("an ERROR event that is not a Status")
        .to_owned();
    (code, message)
}

/// The oldest version a 410's message says a watch may start from
/// (`too old resource version: 5 (30)`: 30), if it says.
fn oldest_in(message: &str) -> Option<u64> {
    message
        .rsplit_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(n, _)| n.trim().parse::<u64>().ok())
}

/// How long the probe of [`oldest_watchable`] waits for its answer.
const PROBE_WAIT: Duration = Duration::from_secs(5);

/// The oldest version a watch of the resource may start from: a watch
/// from version 1 is answered, by an apiserver whose watch cache serves
/// the resource, with a 410 that names it (`too old resource version: 1
/// (M)`, `k8s.io/apiserver`'s `watch_cache_history.go`). `None` when the
/// answer names none (the cache is off: etcd's compaction bounds the
/// watch, and a list there says so) or none comes in time; `Some(1)` when
/// the watch from 1 is served.
///
/// The answer may also say whether the apiserver sends the resource's
/// watches bookmarks, before any read waits for one: its watch cache
/// (whose 410 names its oldest version) does; etcd, serving the watch when
/// the cache is off, does not when its 410 says so (`The resourceVersion
/// for the provided watch is too old.`), and consistent reads then go to
/// the apiserver from the first (no read waits for a bookmark that never
/// comes, then answers 504). A watch from 1 that is served says nothing:
/// a fresh apiserver's watch cache, which listed at revision 1, serves
/// it too; the first short watch decides then.
pub(crate) async fn oldest_watchable(shared: &Shared) -> Result<Option<u64>, SourceError> {
    let oldest = probe_oldest(shared).await?;
    if let Some(sent) = oldest.and_then(|o| o.cached) {
        let known = if sent { BOOKMARKS_SENT } else { BOOKMARKS_NONE };
        // Only a first finding: a short watch's later one stands.
        let _ = shared.bookmarks.compare_exchange(
            BOOKMARKS_UNKNOWN,
            known,
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    Ok(oldest.and_then(|o| o.version))
}

/// What a watch from version 1 says: the oldest version it names, and
/// whether the apiserver's watch cache answered it, if that is known.
#[derive(Debug, Clone, Copy)]
struct Oldest {
    version: Option<u64>,
    cached: Option<bool>,
}

/// etcd's refusal of a compacted revision, as the apiserver passes it on
/// for a resource it keeps no watch cache for (`k8s.io/apiserver`'s
/// `storage/etcd3/errors.go`).
const ETCD_TOO_OLD: &str = "The resourceVersion for the provided watch is too old.";

impl Oldest {
    /// The answer of a 410 with `message`.
    fn gone(message: &str) -> Oldest {
        let version = oldest_in(message);
        let cached = if version.is_some() {
            Some(true)
        } else if message.contains(ETCD_TOO_OLD) {
            Some(false)
        } else {
            None
        };
        Oldest { version, cached }
    }
}

/// [`oldest_watchable`]'s probe; `None` when no answer came in time.
async fn probe_oldest(shared: &Shared) -> Result<Option<Oldest>, SourceError> {
    let uri = format!("{}?watch=1&resourceVersion=1&timeoutSeconds=1", shared.path);
    let probe = async {
        let mut stream = match OpenStream::open(&shared.conn, uri, shared.accept()).await {
            Ok(s) => s,
            Err((_, Failure::Gone(why))) => return Ok(Some(Oldest::gone(&why))),
            Err((_, Failure::Other(why))) => return Err(SourceError::Unavailable(why)),
        };
        match stream.next().await {
            Ok(Some(event)) if event.kind == "ERROR" => match error_status(&event.object) {
                (Some(410), message) => Ok(Some(Oldest::gone(&message))),
                (_, message) => Err(SourceError::Unavailable(format!(
                    "{}: a watch from version 1 failed: {message}",
                    shared.path
                ))),
            },
            // A change, a bookmark or a quiet end: served from 1 (by etcd,
            // or by a watch cache that listed at revision 1).
            Ok(_) => Ok(Some(Oldest {
                version: Some(1),
                cached: None,
            })),
            Err(e) => Err(SourceError::Unavailable(e)),
        }
    };
    tokio::time::timeout(PROBE_WAIT, probe)
        .await
        .unwrap_or(Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_410s_message_gives_the_oldest_version_it_can() {
        // k8s.io/apiserver's watch cache (`watch_cache_history.go`), and
        // etcd's answer through an apiserver whose cache is off.
        assert_eq!(oldest_in("too old resource version: 1 (458)"), Some(458));
        assert_eq!(
            oldest_in("The resourceVersion for the provided watch is too old."),
            None
        );
        assert_eq!(oldest_in("too old resource version: 1 (x)"), None);
        let e = compacted(5, "too old resource version: 5 (30)");
        assert_eq!(
            e,
            SourceError::Compacted {
                requested: 5.into(),
                compacted: 30.into()
            }
        );
        assert_eq!(
            compacted(5, "Expired: gone"),
            SourceError::Compacted {
                requested: 5.into(),
                compacted: 6.into()
            }
        );
        for _ in 0..100 {
            let t = jittered(Duration::from_secs(300));
            assert!((300..600).contains(&t), "{t}");
            assert!((86_400..172_800).contains(&jittered(Duration::MAX)));
            assert!((1..2).contains(&jittered(Duration::ZERO)));
        }
    }
}
