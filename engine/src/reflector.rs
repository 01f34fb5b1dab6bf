//! The reflector: drives an engine's [`Writer`] from a [`Source`]
//! (seeds/004 `startCaching`, client-go's reflector, kube-rs' watcher).
//!
//! List, replace the engine's state with it, watch from the list's
//! revision, apply each change and progress notification. A watch that
//! breaks (the connection lost, a member restarted, a leader change) is
//! resumed from the engine's version after a [`Backoff`] (800 ms doubling
//! to 30 s, with jitter, reset after 2 minutes without an error, as
//! client-go's `BackoffManager` and kube-rs' default backoff): no re-list
//! while the source still holds that revision, and the engine stays ready
//! meanwhile, for up to [`ReflectorConfig::resume_for`]. A compaction (the
//! revision to watch from is gone) re-lists at once; a failed list, or a
//! watch that stays lost past `resume_for`, marks the engine unready and
//! lists again after a backoff. Every re-list ends the engine's watches
//! with [`EndReason::Relisted`](crate::EndReason::Relisted), so no watcher
//! ever sees a gap.
//!
//! Consistent reads ([`Reflector::consistent_list`],
//! [`Reflector::consistent_get`]) ask the source for its current revision
//! and wait until the engine has reached it. While anyone waits for a
//! version the engine has not reached (a consistent read, an engine read
//! at `NotOlderThan` or `Exact`, a watch from a future version), the
//! reflector asks the source for progress about every
//! [`ReflectorConfig::progress_every`]: one request serves every waiter,
//! however many there are (a quiet store, or one whose revision moves
//! through other resources, sends no change that would move the engine on
//! otherwise). A source whose progress cannot be trusted
//! ([`Source::progress_is_reliable`]: an etcd with etcd#15220) is asked for
//! none, and consistent lists and gets are read from the source itself.

//!
//! A source that goes back (restored from a backup): see
//! [`Reflector`](crate::reflector::Reflector#a-source-that-goes-back).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::{Clock, SystemClock};
use crate::engine::Engine;
use crate::error::WriteError;
use crate::read::{GetResponse, ListRequest, ListResponse, ReadAt, ReadError};
use crate::rv::ResourceVersion;
use crate::source::{Source, SourceError, SourceEvent, SourceWatch, Upstream, UpstreamError};
use crate::writer::{Relist, Writer};

/// How a [`Reflector`] retries and polls.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// The backoff between failed attempts.
    pub backoff: BackoffConfig,
    /// While a consistent read waits, progress is requested this often
    /// (about 100 ms, as the reference's `progressRequester`).
    pub progress_every: Duration,
    /// The longest a watch call blocks before the reflector looks at its
    /// stop flag and its waiters again.
    pub poll: Duration,
    /// The clock the backoff and the progress timer read.
    pub clock: Arc<dyn Clock>,
    /// How long a consistent read that found the source behind the cache
    /// (its history went back) waits for the reflector's re-list before it
    /// fails with [`ReadError::SourceRegressed`] (3 s, the reference's
    /// wait for a fresh cache).
    pub regression_wait: Duration,
    /// How long a lost watch is resumed, with the engine kept ready,
    /// before the reflector marks it unready and lists again (30 s: an
    /// etcd member's restart or a leader election; zero lists at once).
    pub resume_for: Duration,
    /// How far back, in the source's revisions, the first list reaches
    /// (0, the default: not at all). The reflector then lists at the
    /// current revision minus this ([`Source::list_at`]) and watches from
    /// there, so that the history window holds the changes since, as it
    /// would had the cache been running: a watch resumed from a recent
    /// version on a replica that has just started resumes rather than
    /// finding its version too old (410) and re-listing. It reaches back
    /// no further than the source can watch from
    /// ([`Source::oldest_watchable`]: a kube-apiserver's watch cache
    /// window). A source that cannot read that revision (compacted away,
    /// or no past reads) is listed at its current revision, as without
    /// it.
    pub backfill: u64,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            backoff: BackoffConfig::default(),
            progress_every: Duration::from_millis(100),
            poll: Duration::from_millis(50),
            clock: Arc::new(SystemClock),
            regression_wait: Duration::from_secs(3),
            resume_for: Duration::from_secs(30),
            backfill: 0,
        }
    }
}

/// An exponential backoff with jitter and reset.
#[derive(Debug, Clone)]
pub struct BackoffConfig {
    /// The first delay (client-go 800 ms).
    pub initial: Duration,
    /// The largest delay before jitter (30 s).
    pub max: Duration,
    /// A failure this long after the previous one starts again from
    /// `initial` (2 minutes of health).
    pub reset_after: Duration,
    /// Each delay is lengthened by a random fraction of itself up to this
    /// (client-go's jitter 1.0: up to double).
    pub jitter: f64,
    /// Seeds the jitter (fixed seeds make schedules reproducible).
    pub seed: u64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            jitter: 1.0,
            seed: 0x5EED_u64 ^ std::process::id() as u64,
        }
    }
}

/// The delays between failed attempts: `initial`, doubling to `max`, each
/// with jitter, back to `initial` after `reset_after` without a failure.
///
/// ```
/// use std::time::{Duration, Instant};
/// use herald::reflector::{Backoff, BackoffConfig};
/// let mut b = Backoff::new(BackoffConfig { jitter: 0.0, ..BackoffConfig::default() });
/// let t = Instant::now();
/// let delays: Vec<u128> = (0..7).map(|_| b.next_delay(t).as_millis()).collect();
/// assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000]);
/// // Two minutes without a failure: from the start again.
/// assert_eq!(b.next_delay(t + Duration::from_secs(120)).as_millis(), 800);
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    step: Duration,
    last: Option<Instant>,
    rng: u64,
}

impl Backoff {
    /// A backoff that has seen no failure.
    pub fn new(config: BackoffConfig) -> Backoff {
        Backoff {
            step: config.initial,
            last: None,
            rng: config.seed | 1,
            config,
        }
    }

    /// The delay before the next attempt, for a failure at `now`.
    pub fn next_delay(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) >= self.config.reset_after)
        {
            self.step = self.config.initial;
        }
        self.last = Some(now);
        let base = self.step.min(self.config.max);
        self.step = base.saturating_mul(2).min(self.config.max);
        base + base.mul_f64(self.config.jitter.max(0.0) * self.unit())
    }

    /// A uniform draw from [0, 1) (xorshift64*).
    fn unit(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What a reflector has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReflectorStats {
    /// Lists applied (`replace`), the first included.
    pub lists: u64,
    /// Re-lists caused by a compaction.
    pub compactions: u64,
    /// Failed attempts that waited a backoff.
    pub backoffs: u64,
    /// Progress requests sent to the source.
    pub progress_requests: u64,
    /// Re-lists at a revision below the engine's: the source's history
    /// went back (restored from a backup).
    pub regressions: u64,
    /// Lost watches resumed from the engine's version, with no re-list.
    pub resumes: u64,
    /// First lists that reached back
    /// ([`ReflectorConfig::backfill`]): 0 or 1.
    pub backfills: u64,
}

#[derive(Debug, Default)]
struct Counters {
    lists: AtomicU64,
    compactions: AtomicU64,
    backoffs: AtomicU64,
    progress_requests: AtomicU64,
    regressions: AtomicU64,
    resumes: AtomicU64,
    backfills: AtomicU64,
}

/// State the reflector thread shares with its handle.
struct Shared {
    source: Arc<dyn Source>,
    engine: Engine,
    config: ReflectorConfig,
    /// Asked to stop. `Relaxed`: it publishes no data (the join does), and
    /// the thread looks at it at least once per `poll`.
    stop: AtomicBool,
    counters: Counters,
    /// The last error, for diagnostics.
    last_error: Mutex<Option<String>>,
    /// The last error as the engine is told it while it waits for the next
    /// list (`Writer::mark_unready`).
    last_cause: Mutex<Option<SourceError>>,
    /// A consistent read proved the source went back: re-list at once.
    /// `Relaxed`: a request, no data; the thread looks once per `poll`.
    relist_wanted: AtomicBool,
}

/// A running reflector: a thread that keeps an engine in step with a
/// source. Stop it with [`Reflector::stop`] (dropping it stops it too).
///
/// ```
/// use herald::*;
/// use herald::read::ListRequest;
/// use herald::reflector::{Reflector, ReflectorConfig};
/// use herald::source::MemorySource;
/// use std::sync::Arc;
/// let source = MemorySource::new();
/// source.put(Object::builder("ns", "a").build());
/// let (engine, writer) = Engine::new(Config::default())?;
/// let reflector = Reflector::spawn(Arc::new(source.clone()), engine.clone(), writer, ReflectorConfig::default())?;
/// source.put(Object::builder("ns", "b").build());
/// // A consistent read waits until the cache has what the source has.
/// let list = reflector.consistent_list(&ListRequest::new())?;
/// assert_eq!(list.items.len(), 2);
/// reflector.stop();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # A source that goes back
///
/// An etcd restored from a backup without `--bump-revision` serves
/// revisions lower than those the cache has seen, and reuses them for a
/// different history. The reflector notices when a list's revision is
/// below the engine's (and, at once, when its watch delivers a change or a
/// progress notification below it while the source's current revision is
/// too, or when a lost watch is opened again and the source's revision is
/// below the engine's: a restored store that restarted and is quiet would
/// otherwise hold the resumed watch silent): it re-lists
/// [after a regression](crate::Relist::after_regression),
/// which ends every watch with `Relisted` and starts a new generation at
/// the lower version, and says so in [`Reflector::last_error`] and
/// [`ReflectorStats::regressions`].
///
/// A consistent read never serves the old history as current: it loads
/// the engine's version before it asks the source for its revision, and a
/// source behind that version (which a source that did not go back cannot
/// be: the cache only holds what the source had) proves the cache is of the
/// old history. The read then asks the reflector to re-list at once,
/// waits for the next list to be applied and looks again (a list begun
/// before the source went back leaves the engine ahead, and the read asks
/// again); if the engine is still ahead after
/// [`ReflectorConfig::regression_wait`], it fails with
/// [`ReadError::SourceRegressed`] rather than answer from the old history.
/// Waiting is the usual outcome (a re-list takes one list); the error
/// bounds it when the source cannot be listed.
///
/// What numbers cannot tell: a restored source whose new history has
/// already passed the engine's version when a read asks looks like one
/// that moved on. The read then waits for that revision, which the engine
/// reaches only through the reflector's re-list (the restore ends or
/// outruns its watch), unless the old watch still delivers old changes at
/// those revisions, or progress, after the restore: a source must end its
/// watches when it is restored (etcd does: a restore is a new cluster).
/// The reference has the same limit, and etcd's advice is the real cure:
/// restore with `--bump-revision` and `--mark-compacted`, so revisions
/// never go back and every watch re-lists.
pub struct Reflector {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Writer>>,
}

impl std::fmt::Debug for Reflector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Reflector {
    /// Starts a reflector thread that lists `source` into `writer`'s
    /// engine (`engine`, the same one) and keeps it in step.
    pub fn spawn(
        source: Arc<dyn Source>,
        engine: Engine,
        writer: Writer,
        config: ReflectorConfig,
    ) -> std::io::Result<Reflector> {
        let shared = Arc::new(Shared {
            source,
            engine,
            config,
            stop: AtomicBool::new(false),
            counters: Counters::default(),
            last_error: Mutex::new(None),
            last_cause: Mutex::new(None),
            relist_wanted: AtomicBool::new(false),
        });
        // The engine's consistent reads and watches ask the source through
        // this reflector from now on (`ReadAt::Latest`).
        let upstream: Arc<dyn Upstream> = shared.clone();
        shared
            .engine
            .shared()
            .set_upstream(Some(Arc::downgrade(&upstream)));
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("herald-reflector".into())
            .spawn(move || run(&for_thread, writer))?;
        Ok(Reflector {
            shared,
            thread: Some(thread),
        })
    }

    /// What the reflector has done so far.
    pub fn stats(&self) -> ReflectorStats {
        let c = &self.shared.counters;
        ReflectorStats {
            lists: c.lists.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            backoffs: c.backoffs.load(Ordering::Relaxed),
            progress_requests: c.progress_requests.load(Ordering::Relaxed),
            regressions: c.regressions.load(Ordering::Relaxed),
            resumes: c.resumes.load(Ordering::Relaxed),
            backfills: c.backfills.load(Ordering::Relaxed),
        }
    }

    /// The last error the reflector met, if any.
    pub fn last_error(&self) -> Option<String> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A list as of the source's current revision (Kubernetes' list with
    /// the resource version unset): asks the source for its revision, then
    /// reads once the engine has reached it. `req` must leave its version
    /// at the default. A source whose history went back is never answered
    /// from the old one (see [A source that goes back](Reflector#a-source-that-goes-back)):
    /// the read waits for the re-list, or fails with
    /// [`ReadError::SourceRegressed`].
    ///
    /// ```
    /// use herald::*;
    /// use herald::read::ListRequest;
    /// use herald::reflector::{Reflector, ReflectorConfig};
    /// use herald::source::MemorySource;
    /// use std::sync::Arc;
    /// let source = MemorySource::new();
    /// for name in ["a", "b", "c"] {
    ///     source.put(Object::builder("ns", name).build());
    /// }
    /// let (engine, writer) = Engine::new(Config::default())?;
    /// let reflector = Reflector::spawn(Arc::new(source.clone()), engine, writer, ReflectorConfig::default())?;
    /// assert_eq!(reflector.consistent_list(&ListRequest::new())?.items.len(), 3);
    /// // Restored from a backup taken at revision 1: the cache is ahead.
    /// source.restore([Object::builder("ns", "a").build()], 1.into());
    /// let list = reflector.consistent_list(&ListRequest::new())?;
    /// assert_eq!((list.items.len(), list.resource_version.get()), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consistent_list(&self, req: &ListRequest) -> Result<ListResponse, ReadError> {
        self.shared.engine.list(&req.clone().at(ReadAt::Latest))
    }

    /// A get as of the source's current revision (as
    /// [`Reflector::consistent_list`]).
    ///
    /// ```
    /// use herald::*;
    /// use herald::reflector::{Reflector, ReflectorConfig};
    /// use herald::source::MemorySource;
    /// use std::sync::Arc;
    /// let source = MemorySource::new();
    /// source.put(Object::builder("ns", "a").build());
    /// let (engine, writer) = Engine::new(Config::default())?;
    /// let reflector = Reflector::spawn(Arc::new(source.clone()), engine, writer, ReflectorConfig::default())?;
    /// assert!(reflector.consistent_get("ns/a")?.item.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consistent_get(&self, key: &str) -> Result<GetResponse, ReadError> {
        self.shared.engine.get(key, ReadAt::Latest)
    }

    /// Stops the thread and returns the writer (the engine keeps what it
    /// has; nothing more is applied).
    pub fn stop(mut self) -> Option<Writer> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> Option<Writer> {
        self.shared.engine.shared().set_upstream(None);
        self.shared.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

impl Upstream for Shared {
    /// The source's current revision, once the engine is of the source's
    /// present history: a consistent read's target (see the type's docs,
    /// A source that goes back).
    fn most_recent(&self) -> Result<ResourceVersion, UpstreamError> {
        let clock = &self.config.clock;
        let deadline = crate::clock::deadline_after(clock.now(), self.config.regression_wait);
        loop {
            // Before the versions: a list applied after them is seen.
            let lists = self.counters.lists.load(Ordering::Acquire);
            // The engine's version before the source's revision: a source
            // behind it then went back (see the type's docs).
            let cache = self.engine.resource_version();
            let rv = self
                .source
                .current_revision()
                .map_err(UpstreamError::Source)?;
            if rv >= cache {
                return Ok(rv);
            }
            // Ask for a re-list, wait for any list to be applied, and look
            // again: a list begun before the source went back would leave
            // the engine ahead, and the check above asks again.
            self.relist_wanted.store(true, Ordering::Relaxed);
            while self.counters.lists.load(Ordering::Acquire) == lists {
                if self.stopping() || clock.now() >= deadline {
                    return Err(UpstreamError::Regressed { source: rv, cache });
                }
                clock.park_until(deadline, RELIST_WAIT_STEP);
            }
        }
    }

    fn reads_through(&self) -> bool {
        !self.source.progress_is_reliable()
    }

    fn list_through(&self) -> Result<crate::source::Listing, UpstreamError> {
        self.source.list().map_err(UpstreamError::Source)
    }

    fn list_at_through(
        &self,
        rv: ResourceVersion,
    ) -> Result<Option<crate::source::Listing>, UpstreamError> {
        self.source.list_at(rv).map_err(UpstreamError::Source)
    }

    fn get_through(
        &self,
        key: &str,
    ) -> Result<(Option<crate::object::Item>, ResourceVersion), UpstreamError> {
        self.source.get(key).map_err(UpstreamError::Source)
    }
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn note(&self, e: impl ToString) {
        let e = e.to_string();
        *self.last_cause.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(SourceError::Unavailable(e.clone()));
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }

    /// Notes a source's error, keeping it whole for the engine.
    fn note_source(&self, e: SourceError) {
        self.note(&e);
        *self.last_cause.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }

    /// The cause the engine is told while it waits for the next list.
    fn cause(&self) -> SourceError {
        self.last_cause
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| SourceError::Unavailable("the source's watch ended".into()))
    }

    /// Whether the source's current revision is behind the engine's (its
    /// history went back). An unreachable source says nothing.
    fn source_went_back(&self) -> bool {
        self.source
            .current_revision()
            .is_ok_and(|rev| rev < self.engine.resource_version())
    }

    /// Sleeps `delay` on the reflector's clock, or until asked to stop.
    fn sleep(&self, delay: Duration) {
        let clock = &self.config.clock;
        let until = crate::clock::deadline_after(clock.now(), delay);
        while !self.stopping() && clock.now() < until {
            clock.park_until(until, self.config.poll);
        }
    }
}

/// How often a consistent read waiting for a re-list looks again (or
/// when the reflector's clock moves).
const RELIST_WAIT_STEP: Duration = Duration::from_millis(1);

/// The most changes the reflector applies in one `Writer::apply_batch`:
/// what its source holds ready, up to one writer run.
const APPLY_BATCH: usize = crate::shared::WRITE_RUN;

/// Why one list-and-watch round ended.
enum Round {
    /// Asked to stop.
    Stop,
    /// The watch's revision was compacted: list again at once.
    Compacted,
    /// A consistent read proved the source went back: list again at once.
    Relist,
    /// The watch delivered a revision behind the engine's: list again at
    /// once if the source's revision is behind too (it went back), else
    /// (the source broke its own order) after a backoff.
    Behind,
    /// The watch broke (not a compaction) while the engine holds a
    /// list: resume it from the engine's version after a backoff.
    Lost,
    /// Anything else: wait a backoff, then list again.
    Failed,
}

/// The reflector thread.
fn run(shared: &Shared, mut writer: Writer) -> Writer {
    let clock = &shared.config.clock;
    let mut backoff = Backoff::new(shared.config.backoff.clone());
    // Since when the watch has been lost (`None`: the next round lists).
    let mut lost: Option<Instant> = None;
    loop {
        let ended = match lost {
            None => round(shared, &mut writer, &mut lost),
            Some(_) => resume(shared, &mut writer, &mut lost),
        };
        if let Round::Lost = ended {
            let now = clock.now();
            let since = *lost.get_or_insert(now);
            if now.saturating_duration_since(since) < shared.config.resume_for {
                // The engine keeps its list and stays ready; the watch is
                // resumed after the backoff.
                shared.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                shared.sleep(backoff.next_delay(now));
                if shared.stopping() {
                    return writer;
                }
                continue;
            }
            // Lost past `resume_for`: unready (the source's error, noted
            // when the watch failed, is the cause) and list again.
            lost = None;
        }
        if !matches!(ended, Round::Stop) {
            // Neither a list nor a watch until the next round's list: the
            // engine says so (reads at any version fail with `NotReady`,
            // new watches wait), and the list makes it ready again.
            if writer.mark_unready(shared.cause()) == Err(WriteError::Stopped) {
                return writer;
            }
        }
        match ended {
            Round::Stop => return writer,
            Round::Compacted => {
                shared.counters.compactions.fetch_add(1, Ordering::Relaxed);
            }
            Round::Relist => {}
            Round::Behind if shared.source_went_back() => {}
            Round::Behind | Round::Failed | Round::Lost => {
                shared.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                let delay = backoff.next_delay(shared.config.clock.now());
                shared.sleep(delay);
            }
        }
        if shared.stopping() {
            return writer;
        }
    }
}

/// A lost watch opened again from the engine's version, and followed.
fn resume(shared: &Shared, writer: &mut Writer, lost: &mut Option<Instant>) -> Round {
    let from = shared.engine.resource_version();
    match shared.source.watch(from) {
        // Looked at after the watch is open: a source that went back
        // before it (restored from a backup and restarted, which is what
        // ended the watch) would keep it open on a revision it may take
        // long to reach, and quiet. One that goes back later is caught by
        // the watch itself (a revision behind the engine's), by this check
        // at the next resume, or by a consistent read.
        Ok(_) if shared.source_went_back() => {
            *lost = None;
            shared.note(format!(
                "the source's revision is behind the cache's {from} (restored from a \
                 backup?): re-listing instead of resuming the watch"
            ));
            Round::Behind
        }
        Ok(watch) => {
            *lost = None;
            shared.counters.resumes.fetch_add(1, Ordering::Relaxed);
            follow(shared, writer, watch)
        }
        Err(e) => {
            let ended = failed(shared, e);
            if let Round::Compacted = ended {
                *lost = None;
            }
            ended
        }
    }
}

/// One list, then the watch from its revision until it fails.
fn round(shared: &Shared, writer: &mut Writer, lost: &mut Option<Instant>) -> Round {
    // This list answers every request made so far.
    shared.relist_wanted.store(false, Ordering::Relaxed);
    let listing = match backfilled(shared).map_or_else(|| shared.source.list(), Ok) {
        Ok(l) => l,
        Err(e) => {
            shared.note_source(e);
            return Round::Failed;
        }
    };
    // Only this thread writes: the engine's version is the writer's.
    let cache = shared.engine.resource_version();
    let regressed = listing.revision < cache;
    let replaced = if regressed {
        shared.note(format!(
            "the source's revision went back from {cache} to {} (restored from a \
             backup?): re-listed into a new generation, every watch ended",
            listing.revision
        ));
        writer.replace(Relist::items(listing.items, listing.revision).after_regression())
    } else {
        writer.replace(Relist::items(listing.items, listing.revision))
    };
    if let Err(e) = replaced {
        if e == WriteError::Stopped {
            return Round::Stop;
        }
        shared.note(e);
        return Round::Failed;
    }
    if regressed {
        shared.counters.regressions.fetch_add(1, Ordering::Relaxed);
    }
    // Release: a consistent read that loads the count with Acquire then
    // reads the engine at least at this list.
    shared.counters.lists.fetch_add(1, Ordering::Release);
    let watch = match shared.source.watch(listing.revision) {
        Ok(w) => w,
        Err(e) => return failed(shared, e),
    };
    *lost = None;
    follow(shared, writer, watch)
}

/// The first list, reaching back [`ReflectorConfig::backfill`]
/// revisions, if asked for and if the source can read there; `None`: list
/// as usual.
fn backfilled(shared: &Shared) -> Option<crate::source::Listing> {
    let back = shared.config.backfill;
    // Only the first: a later list is a re-list, whose window is new.
    if back == 0 || shared.engine.resource_version() != ResourceVersion::ZERO {
        return None;
    }
    let current = shared.source.current_revision().ok()?.get();
    let floor = match shared.source.oldest_watchable() {
        Ok(floor) => floor.map_or(1, ResourceVersion::get),
        Err(e) => {
            shared.note(format!(
                "the first list could not learn how far back the source can watch ({e}): listed at the current revision"
            ));
            return None;
        }
    };
    let at = current.saturating_sub(back).max(floor).max(1);
    if at >= current {
        return None;
    }
    match shared.source.list_at(ResourceVersion::new(at)) {
        Ok(Some(listing)) if listing.revision.get() == at => {
            shared.counters.backfills.fetch_add(1, Ordering::Relaxed);
            Some(listing)
        }
        Ok(_) => None,
        Err(e) => {
            shared.note(format!(
                "the first list could not reach back to revision {at} ({e}): listed at the current revision"
            ));
            None
        }
    }
}

/// A watch (or its opening) failed with `e`.
fn failed(shared: &Shared, e: SourceError) -> Round {
    let compacted = matches!(e, SourceError::Compacted { .. });
    shared.note_source(e);
    if compacted {
        Round::Compacted
    } else {
        Round::Lost
    }
}

/// Applies a source watch's events until it fails or the reflector stops.
fn follow(shared: &Shared, writer: &mut Writer, mut watch: Box<dyn SourceWatch>) -> Round {
    let clock = &shared.config.clock;
    let mut last_request: Option<Instant> = None;
    let mut batch = Vec::with_capacity(APPLY_BATCH);
    loop {
        if shared.stopping() {
            return Round::Stop;
        }
        if shared.relist_wanted.load(Ordering::Relaxed) {
            shared.note("a consistent read found the source behind the cache: re-listing");
            return Round::Relist;
        }
        // Reads and watches waiting for a version the engine has not
        // reached (consistent reads among them).
        let waiting =
            shared.engine.shared().wants_progress() && shared.source.progress_is_reliable();
        if waiting {
            let now = clock.now();
            let due = last_request
                .is_none_or(|t| now.saturating_duration_since(t) >= shared.config.progress_every);
            if due {
                last_request = Some(now);
                shared
                    .counters
                    .progress_requests
                    .fetch_add(1, Ordering::Relaxed);
                if let Err(e) = shared.source.request_progress() {
                    return failed(shared, e);
                }
            }
        }
        let wait = if waiting {
            shared.config.poll.min(shared.config.progress_every)
        } else {
            shared.config.poll
        };
        let applied = match watch.next(wait) {
            Ok(None) => Ok(()),
            Ok(Some(SourceEvent::Change(c))) => {
                // The changes the source already holds (an etcd watch
                // response carries many) go in with this one, as one
                // batch: one writer lock per run and one dispatcher wake,
                // not one per change. What ends the batch (a progress
                // notice, an error) is handled after it, in order.
                batch.push(c);
                let mut after = None;
                while batch.len() < APPLY_BATCH {
                    match watch.next(Duration::ZERO) {
                        Ok(Some(SourceEvent::Change(c))) => batch.push(c),
                        Ok(None) => break,
                        other => {
                            after = Some(other);
                            break;
                        }
                    }
                }
                let result = writer.apply_batch(batch.drain(..)).map_err(|e| e.error);
                match (result, after) {
                    (Ok(()), Some(Ok(Some(SourceEvent::Progress(rv))))) => writer.progress(rv),
                    (Ok(()), Some(Err(e))) => return failed(shared, e),
                    (result, _) => result,
                }
            }
            Ok(Some(SourceEvent::Progress(rv))) => writer.progress(rv),
            Err(e) => return failed(shared, e),
        };
        match applied {
            Ok(()) => {}
            Err(WriteError::Stopped) => return Round::Stop,
            // Behind the engine: the source went back, or broke its own
            // order; `run` tells which. Either way, a list.
            Err(e @ WriteError::OutOfOrder { .. }) => {
                shared.note(format!("the source's watch: {e}"));
                return Round::Behind;
            }
            Err(e) => {
                shared.note(e);
                return Round::Failed;
            }
        }
    }
}
