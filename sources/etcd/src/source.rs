//! [`EtcdSource`]: Herald's [`Source`] over etcd v3's gRPC API.

use std::collections::VecDeque;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, ConnectOptions, EventType, GetOptions, KeyValue, WatchOptions, WatchRequestSender,
    WatchResponse, WatchResponseStream,
};
use herald::{
    Change, Item, Listing, ResourceVersion, Source, SourceError, SourceEvent, SourceWatch,
};
use herald_bridge::Bridge;
use herald_kube::DecodeError;
use tokio::sync::Mutex as AsyncMutex;

use crate::config::{ConnectError, EtcdConfig, check, connect_error};
use crate::version::{Distrust, ProgressTrust, ServerVersion, judge};
use herald_kube::{Undecodable, UndecodableReport};

/// What an [`EtcdSource`] has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EtcdStats {
    /// Values skipped because they could not be decoded.
    pub undecodable: u64,
    /// Deletions whose previous value was missing or undecodable, passed
    /// on with an object built from the key.
    pub bare_deletes: u64,
    /// Progress notifications received and not passed on (an untrusted
    /// server, or a revision the watch had already passed).
    pub progress_dropped: u64,
    /// Progress notifications passed on.
    pub progress_passed: u64,
    /// Pages read by lists.
    pub list_pages: u64,
    /// Watches opened.
    pub watches_opened: u64,
}

#[derive(Debug, Default)]
struct Counters {
    undecodable: AtomicU64,
    bare_deletes: AtomicU64,
    progress_dropped: AtomicU64,
    progress_passed: AtomicU64,
    list_pages: AtomicU64,
    watches_opened: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A [`Source`] over etcd v3: lists a key prefix in pages at one revision,
/// watches it with previous values and progress notifications, maps
/// compactions to [`SourceError::Compacted`] and everything else that
/// fails to [`SourceError::Unavailable`] (the reflector backs off and
/// resumes its watch). Clones share one connection.
///
/// The calls block: they wait on the source's runtime (a one-thread
/// tokio runtime of its own, or one given to
/// [`EtcdSource::connect_on`]), and may be made from any thread, inside
/// another runtime too ([`Bridge::block_on`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use herald::{Config, Engine, Reflector, ReflectorConfig};
/// use herald_etcd::{EtcdConfig, EtcdSource};
/// use herald_kube::Decoder;
/// let config = EtcdConfig::new(["http://127.0.0.1:2379"], "/registry/pods/")
///     .decoder(Decoder::new().field("spec.nodeName"));
/// let source = EtcdSource::connect(config)?;
/// let (engine, writer) = Engine::new(Config::default())?;
/// let reflector = Reflector::spawn(Arc::new(source), engine.clone(), writer, ReflectorConfig::default())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct EtcdSource {
    inner: Arc<Inner>,
}

struct Inner {
    bridge: Bridge,
    client: Client,
    config: EtcdConfig,
    prefix_end: Vec<u8>,
    version: Option<ServerVersion>,
    /// Why progress is not trusted (`None`: it is).
    distrust: Option<Distrust>,
    /// `distrust.is_none()`, read on every watch response.
    trusted: bool,
    /// The open watches' request halves, for `request_progress`.
    watches: Mutex<Vec<Weak<AsyncMutex<WatchRequestSender>>>>,
    counters: Counters,
    undecodable: Undecodable,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdSource")
            .field("endpoints", &self.config.endpoints)
            .field("prefix", &self.config.prefix)
            .field("version", &self.version)
            .field("distrust", &self.distrust)
            .finish_non_exhaustive()
    }
}

/// The end of a prefix's key range: the prefix with its last byte below
/// 0xff incremented (etcd's `GetPrefixRangeEnd`); `\0` (to the end of the
/// key space) for an empty or all-0xff prefix.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The message etcd's compaction errors carry (`ErrCompacted`).
const COMPACTED: &str = "required revision has been compacted";

fn unavailable(e: impl std::fmt::Display) -> SourceError {
    SourceError::Unavailable(format!("etcd: {e}"))
}

/// Whether a read failed because its revision was compacted away (the
/// error does not say which revision etcd still holds: see
/// [`Inner::compacted_at`]).
fn is_compacted(e: &etcd_client::Error) -> bool {
    e.to_string().contains(COMPACTED)
}

/// How many times a list starts over when a compaction passes its
/// revision while it pages, before it fails `Compacted`.
const LIST_ATTEMPTS: u32 = 3;

/// How long [`Inner::read`] waits before trying a read again (clientv3's
/// `defaultBackoffWaitBetween`).
const READ_RETRY_BACKOFF: Duration = Duration::from_millis(25);

/// Far enough ahead to stand for never (tokio's own `far_future`: about
/// 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

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

fn rv_of(rev: i64) -> ResourceVersion {
    ResourceVersion::new(rev.max(0) as u64)
}

impl EtcdSource {
    /// Connects to the cluster and asks every endpoint its version. An
    /// endpoint that does not answer is left to the client's balancer;
    /// none answering is [`ConnectError::Unreachable`]. A configuration
    /// that cannot work (see [`EtcdConfig`]) is [`ConnectError::Config`],
    /// found before any connection is tried.
    ///
    /// Progress notifications are trusted only if every endpoint answered
    /// with a release without etcd#15220 (see [`EtcdSource::progress_distrust`]);
    /// otherwise the source says why on standard error once.
    pub fn connect(config: EtcdConfig) -> Result<EtcdSource, ConnectError> {
        check(&config)?;
        let bridge = Bridge::new("herald-etcd", NonZeroUsize::MIN)
            .map_err(|e| ConnectError::Config(format!("a tokio runtime: {e}")))?;
        EtcdSource::connect_on(config, bridge)
    }

    /// [`EtcdSource::connect`], on `bridge`'s runtime (shared with other
    /// sources, or the embedder's own runtime): it builds none. See
    /// [`Bridge`] for what a shared runtime asks of its callers.
    pub fn connect_on(config: EtcdConfig, bridge: Bridge) -> Result<EtcdSource, ConnectError> {
        check(&config)?;
        let options = || {
            ConnectOptions::new()
                .with_connect_timeout(config.connect_timeout)
                .with_keep_alive(config.keep_alive.0, config.keep_alive.1)
                .with_keep_alive_while_idle(true)
                // A member cut off from the leader ends its watches, so
                // the reflector resumes on one that is not (the
                // apiserver's `WithRequireLeader`).
                .with_require_leader(true)
        };
        let timeout = config.request_timeout;
        let (client, answers) = bridge.block_on(async {
            // One client per endpoint first: connecting is lazy, so this
            // only builds each endpoint, and a malformed one is named.
            let mut ones = Vec::new();
            for endpoint in &config.endpoints {
                let one = Client::connect([endpoint], Some(options()))
                    .await
                    .map_err(|e| connect_error(endpoint, e))?;
                ones.push((endpoint, one));
            }
            let client = Client::connect(&config.endpoints, Some(options()))
                .await
                .map_err(|e| connect_error(&config.endpoints.join(","), e))?;
            let mut answers = Vec::new();
            for (endpoint, mut one) in ones {
                let answer = match tokio::time::timeout(timeout, one.status()).await {
                    Ok(Ok(status)) => Ok(status.version().to_owned()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer in {timeout:?}")),
                };
                answers.push((endpoint.clone(), answer));
            }
            Ok::<_, ConnectError>((client, answers))
        })?;
        if answers.iter().all(|(_, a)| a.is_err()) {
            let why = answers
                .iter()
                .filter_map(|(e, a)| a.as_ref().err().map(|why| format!("{e}: {why}")))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ConnectError::Unreachable(why));
        }
        let (version, distrust) = judge(config.progress, &answers);
        if let Some(why) = distrust
            .as_ref()
            .filter(|_| config.progress == ProgressTrust::Auto)
        {
            eprintln!(
                "herald-etcd: {why}: progress notifications are not trusted; consistent reads \
                 fall back to reading etcd"
            );
        }
        Ok(EtcdSource {
            inner: Arc::new(Inner {
                bridge,
                prefix_end: prefix_end(config.prefix.as_bytes()),
                client,
                config,
                version,
                trusted: distrust.is_none(),
                distrust,
                watches: Mutex::new(Vec::new()),
                counters: Counters::default(),
                undecodable: Undecodable::default(),
            }),
        })
    }

    /// The oldest version among the members that answered at connect with
    /// a version that parses (`None`: none did).
    pub fn server_version(&self) -> Option<ServerVersion> {
        self.inner.version
    }

    /// Whether progress notifications are passed on (see [`ProgressTrust`]).
    pub fn progress_trusted(&self) -> bool {
        self.inner.trusted
    }

    /// Why progress notifications are not passed on (`None`: they are): a
    /// member with etcd#15220, one whose version did not parse or that did
    /// not answer at connect, or [`ProgressTrust::Never`].
    pub fn progress_distrust(&self) -> Option<&Distrust> {
        self.inner.distrust.as_ref()
    }

    /// What the source has done so far.
    pub fn stats(&self) -> EtcdStats {
        let c = &self.inner.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EtcdStats {
            undecodable: n(&c.undecodable),
            bare_deletes: n(&c.bare_deletes),
            progress_dropped: n(&c.progress_dropped),
            progress_passed: n(&c.progress_passed),
            list_pages: n(&c.list_pages),
            watches_opened: n(&c.watches_opened),
        }
    }

    /// The stored values met that could not be decoded: how many keys hold
    /// one now, the totals by reason, the last one.
    pub fn undecodable(&self) -> UndecodableReport {
        self.inner.undecodable.report()
    }

    /// The configuration.
    pub fn config(&self) -> &EtcdConfig {
        &self.inner.config
    }

    /// The runtime it runs on.
    pub fn bridge(&self) -> &Bridge {
        &self.inner.bridge
    }
}

impl Inner {
    /// Runs a unary call with the request timeout.
    fn call<T, F>(&self, what: &str, f: F) -> Result<T, (Option<etcd_client::Error>, String)>
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
            Ok(Err(e)) => {
                let text = format!("{what}: {e}");
                Err((Some(e), text))
            }
            Err(_) => Err((None, format!("{what}: no answer in {timeout:?}"))),
        }
    }

    /// Runs a read (a call that changes nothing, so is safe to repeat)
    /// with the request timeout, retrying it while it fails `Unavailable`
    /// (a member down or restarting, no leader yet), as clientv3's retry
    /// interceptor does for immutable calls: the balancer sends the next
    /// try to another endpoint. Waits [`READ_RETRY_BACKOFF`] between
    /// tries; the last failure is returned once the timeout has passed.
    fn read<T, F, Fut>(
        &self,
        what: &str,
        mut f: F,
    ) -> Result<T, (Option<etcd_client::Error>, String)>
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
            Some(e) => {
                let text = format!("{what}: {e}");
                (Some(e), text)
            }
            None => (None, format!("{what}: no answer in {timeout:?}")),
        })
    }

    /// The oldest revision etcd still holds, once a read at `rev` found it
    /// compacted: a range's error does not say it, but a watch from `rev`
    /// is cancelled with it (`compact_revision`). `None` if that fails.
    fn compacted_at(&self, rev: i64) -> Option<i64> {
        let mut client = self.client.watch_client();
        let key = self.config.prefix.clone().into_bytes();
        let options = WatchOptions::new().with_start_revision(rev);
        let found = self.call("compact revision", async move {
            // The request half lives until the answer is read.
            let (_sender, mut responses) = client.watch(key, Some(options)).await?.split();
            // `created` may come first, then the cancellation.
            while let Some(resp) = responses.message().await? {
                if resp.compact_revision() > 0 {
                    return Ok(Some(resp.compact_revision()));
                }
                if resp.canceled() || !resp.events().is_empty() {
                    break;
                }
            }
            Ok(None)
        });
        found.ok().flatten()
    }

    fn key_under(&self, key: &[u8]) -> Option<Vec<u8>> {
        key.strip_prefix(self.config.prefix.as_bytes())
            .map(<[u8]>::to_vec)
    }

    /// An object from a stored key and value, or `None` (counted, logged)
    /// if it cannot be decoded.
    fn decode(&self, kv: &KeyValue, rv: i64) -> Option<herald::Object> {
        let key = self.key_under(kv.key())?;
        match self.config.decoder.decode(&key, kv.value(), rv_of(rv)) {
            Ok(object) => {
                self.undecodable.cleared(kv.key());
                Some(object)
            }
            Err(e) => {
                self.skip(kv.key(), &e);
                None
            }
        }
    }

    fn skip(&self, key: &[u8], e: &DecodeError) {
        self.counters.undecodable.fetch_add(1, Ordering::Relaxed);
        let n = self.undecodable.met(key, e) - 1;
        // The first few in full, then every 1,000th: a stream of garbage
        // must not flood the log.
        if n < 10 || n % 1_000 == 0 {
            eprintln!(
                "herald-etcd: skipped the value under {:?} ({} skipped so far): {e}",
                String::from_utf8_lossy(key),
                n + 1
            );
        }
    }

    /// The change a watch event makes, if any.
    fn change(&self, event: &etcd_client::Event) -> Option<Change> {
        let kv = event.kv()?;
        match event.event_type() {
            EventType::Put => {
                let object = self.decode(kv, kv.mod_revision())?;
                let rv = rv_of(kv.mod_revision());
                Some(if kv.create_revision() == kv.mod_revision() {
                    Change::added(object, rv)
                } else {
                    Change::modified(object, rv)
                })
            }
            EventType::Delete => {
                self.undecodable.cleared(kv.key());
                // The deletion's revision is the tombstone's mod revision;
                // the object is the previous value, at that revision (as
                // the apiserver's watcher sets it).
                let rev = kv.mod_revision();
                let prev = event.prev_kv().and_then(|p| {
                    let key = self.key_under(p.key())?;
                    self.config.decoder.decode(&key, p.value(), rv_of(rev)).ok()
                });
                let object = match prev {
                    Some(o) => o,
                    None => {
                        let key = self.key_under(kv.key())?;
                        match self.config.decoder.bare(&key) {
                            Ok(o) => {
                                bump(&self.counters.bare_deletes);
                                o
                            }
                            Err(e) => {
                                self.skip(kv.key(), &e);
                                return None;
                            }
                        }
                    }
                };
                Some(Change::deleted(object, rv_of(rev)))
            }
        }
    }
}

impl Inner {
    /// The prefix in pages at revision `at`, or (0) at the first page's:
    /// see [`Source::list`]. A compaction past a fixed `at` fails at once
    /// (`Compacted`); past the first page's revision, the list starts
    /// over (three tries in all).
    fn list_pages(&self, at: i64) -> Result<Listing, SourceError> {
        let inner = self;
        let mut attempts = 0;
        'list: loop {
            attempts += 1;
            inner.undecodable.relist();
            let mut items = Vec::new();
            let mut revision = at;
            let mut from = inner.config.prefix.as_bytes().to_vec();
            loop {
                let mut options = GetOptions::new()
                    .with_range(inner.prefix_end.clone())
                    .with_limit(inner.config.page_size);
                if revision > 0 {
                    options = options.with_revision(revision);
                }
                let kv = inner
                    .client
                    .kv_client()
                    .max_decoding_message_size(i32::MAX as usize);
                let page = match inner.read("list", || {
                    let (mut kv, from, options) = (kv.clone(), from.clone(), options.clone());
                    async move { kv.get(from, Some(options)).await }
                }) {
                    Ok(page) => page,
                    Err((Some(e), _)) if revision > 0 && is_compacted(&e) => {
                        if at == 0 && attempts < LIST_ATTEMPTS {
                            continue 'list;
                        }
                        return Err(SourceError::Compacted {
                            requested: rv_of(revision),
                            compacted: rv_of(inner.compacted_at(revision).unwrap_or(revision)),
                        });
                    }
                    Err((_, text)) => return Err(unavailable(text)),
                };
                bump(&inner.counters.list_pages);
                if revision == 0 {
                    revision = page.header().map_or(0, |h| h.revision());
                }
                let more = page.more();
                for kv in page.kvs() {
                    if let Some(object) = inner.decode(kv, kv.mod_revision()) {
                        items.push(Item::new(object, rv_of(kv.mod_revision())));
                    }
                }
                match page.kvs().last() {
                    Some(last) if more => {
                        from = last.key().to_vec();
                        from.push(0);
                    }
                    _ => break,
                }
            }
            return Ok(Listing {
                items,
                revision: rv_of(revision),
            });
        }
    }
}

impl Source for EtcdSource {
    /// The prefix at one revision, in pages of [`EtcdConfig::page_size`]:
    /// the first page at the current revision, the rest at the first's
    /// (the apiserver's `GetList`). A compaction past that revision while
    /// paging starts the list over (three tries in all, then
    /// `Compacted`, with the oldest revision etcd still holds).
    fn list(&self) -> Result<Listing, SourceError> {
        self.inner.list_pages(0)
    }

    /// The prefix at exactly `revision`, paged as [`Source::list`]:
    /// [`SourceError::Compacted`] if etcd no longer holds it, `Ok(None)`
    /// for a revision past etcd's (it cannot say yet).
    fn list_at(&self, revision: ResourceVersion) -> Result<Option<Listing>, SourceError> {
        let Ok(at) = i64::try_from(revision.get()) else {
            return Ok(None);
        };
        if at <= 0 || revision > self.current_revision()? {
            return Ok(None);
        }
        self.inner.list_pages(at).map(Some)
    }

    fn watch(&self, after: ResourceVersion) -> Result<Box<dyn SourceWatch>, SourceError> {
        let inner = &*self.inner;
        let start = i64::try_from(after.get().saturating_add(1)).unwrap_or(i64::MAX);
        let options = WatchOptions::new()
            .with_range(inner.prefix_end.clone())
            .with_start_revision(start)
            .with_prev_key()
            .with_progress_notify();
        let mut client = inner
            .client
            .watch_client()
            .max_decoding_message_size(i32::MAX as usize);
        let key = inner.config.prefix.clone().into_bytes();
        let opened = inner.call("watch", async move {
            let stream = client.watch(key, Some(options)).await?;
            let (sender, mut responses) = stream.split();
            // The first answer says whether the watch was created, or
            // refused at once (its start compacted away).
            let first = responses.message().await?;
            Ok((sender, responses, first))
        });
        let (sender, responses, first) = opened.map_err(|(_, text)| unavailable(text))?;
        bump(&inner.counters.watches_opened);
        let mut watch = EtcdWatch {
            source: self.inner.clone(),
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
        let mut watches = inner.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.retain(|w| w.strong_count() > 0);
        watches.push(Arc::downgrade(&watch.sender));
        Ok(Box::new(watch))
    }

    /// A linearizable count of the prefix: its header's revision.
    fn current_revision(&self) -> Result<ResourceVersion, SourceError> {
        let inner = &*self.inner;
        let kv = inner.client.kv_client();
        let options = GetOptions::new()
            .with_range(inner.prefix_end.clone())
            .with_count_only();
        let resp = inner
            .read("current revision", || {
                let (mut kv, options) = (kv.clone(), options.clone());
                let key = inner.config.prefix.clone();
                async move { kv.get(key, Some(options)).await }
            })
            .map_err(|(_, text)| unavailable(text))?;
        Ok(rv_of(resp.header().map_or(0, |h| h.revision())))
    }

    /// Sends `RequestProgress` on every open watch (none is asked on an
    /// untrusted server: its answers would be dropped).
    fn request_progress(&self) -> Result<(), SourceError> {
        let inner = &*self.inner;
        if !inner.trusted {
            return Ok(());
        }
        let senders: Vec<_> = {
            let mut watches = inner.watches.lock().unwrap_or_else(|e| e.into_inner());
            watches.retain(|w| w.strong_count() > 0);
            watches.iter().filter_map(Weak::upgrade).collect()
        };
        for sender in senders {
            let sent = inner
                .bridge
                .block_on(async { sender.lock().await.request_progress().await });
            sent.map_err(unavailable)?;
        }
        Ok(())
    }

    fn progress_is_reliable(&self) -> bool {
        self.inner.trusted
    }

    /// A linearizable read of the one key.
    fn get(&self, key: &str) -> Result<(Option<Item>, ResourceVersion), SourceError> {
        let inner = &*self.inner;
        let kv = inner
            .client
            .kv_client()
            .max_decoding_message_size(i32::MAX as usize);
        let full = format!("{}{key}", inner.config.prefix);
        let resp = inner
            .read("get", || {
                let (mut kv, full) = (kv.clone(), full.clone());
                async move { kv.get(full, None).await }
            })
            .map_err(|(_, text)| unavailable(text))?;
        let revision = rv_of(resp.header().map_or(0, |h| h.revision()));
        let item = resp.kvs().first().and_then(|kv| {
            let object = inner.decode(kv, kv.mod_revision())?;
            Some(Item::new(object, rv_of(kv.mod_revision())))
        });
        Ok((item, revision))
    }
}

/// One open etcd watch.
#[derive(Debug)]
struct EtcdWatch {
    source: Arc<Inner>,
    sender: Arc<AsyncMutex<WatchRequestSender>>,
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

impl EtcdWatch {
    /// Queues what one response says.
    fn take(&mut self, resp: WatchResponse) {
        let inner = &*self.source;
        if resp.canceled() {
            self.ended = Some(if resp.compact_revision() > 0 {
                SourceError::Compacted {
                    requested: self.after,
                    compacted: rv_of(resp.compact_revision()),
                }
            } else {
                unavailable(format!("the watch was cancelled: {}", resp.cancel_reason()))
            });
            return;
        }
        if resp.created() {
            return;
        }
        if resp.events().is_empty() {
            let rev = resp.header().map_or(0, |h| h.revision()).max(0) as u64;
            if inner.trusted && rev > self.high {
                self.high = rev;
                bump(&inner.counters.progress_passed);
                self.queue
                    .push_back(SourceEvent::Progress(ResourceVersion::new(rev)));
            } else {
                bump(&inner.counters.progress_dropped);
            }
            return;
        }
        for event in resp.events() {
            if let Some(change) = inner.change(event) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_as_etcds() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
        assert_eq!(prefix_end(b""), b"\0");
    }
}
