//! The reflector: drives an engine's [`Writer`] from a [`Source`]
//! (seeds/004 `startCaching`, client-go's reflector, kube-rs' watcher).
//!
//! List, replace the engine's state with it, watch from the list's
//! revision, apply each change and progress notification; on any error,
//! list again. A compaction (the revision to watch from is gone) re-lists
//! at once; other errors wait a [`Backoff`] first (800 ms doubling to 30 s,
//! with jitter, reset after 2 minutes without an error, as client-go's
//! `BackoffManager` and kube-rs' default backoff). Every re-list ends the
//! engine's watches with [`EndReason::Relisted`](crate::EndReason::Relisted),
//! so no watcher ever sees a gap.
//!
//! Consistent reads ([`Reflector::consistent_list`],
//! [`Reflector::consistent_get`]) ask the source for its current revision
//! and wait until the engine has reached it. While anyone waits, the
//! reflector asks the source for progress about every
//! [`ReflectorConfig::progress_every`]: one request serves every waiter,
//! however many there are (a quiet store sends no change that would move
//! the engine on otherwise).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::source::{Source, SourceError, SourceEvent, SourceWatch};
use crate::{
    Clock, Engine, GetResponse, ListRequest, ListResponse, ReadAt, ReadError, SystemClock,
    WriteError, Writer,
};

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
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            backoff: BackoffConfig::default(),
            progress_every: Duration::from_millis(100),
            poll: Duration::from_millis(50),
            clock: Arc::new(SystemClock),
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
/// use herald::{Backoff, BackoffConfig};
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
}

#[derive(Debug, Default)]
struct Counters {
    lists: AtomicU64,
    compactions: AtomicU64,
    backoffs: AtomicU64,
    progress_requests: AtomicU64,
}

/// State the reflector thread shares with its handle.
struct Shared {
    source: Arc<dyn Source>,
    engine: Engine,
    config: ReflectorConfig,
    /// Asked to stop. `Relaxed`: it publishes no data (the join does), and
    /// the thread looks at it at least once per `poll`.
    stop: AtomicBool,
    /// Consistent reads waiting for the engine to reach a revision.
    /// `Relaxed`: only a count; the thread reads it once per `poll`, so a
    /// late read delays a progress request by at most that.
    waiters: AtomicUsize,
    counters: Counters,
    /// The last error, for diagnostics.
    last_error: Mutex<Option<String>>,
}

/// A running reflector: a thread that keeps an engine in step with a
/// source. Stop it with [`Reflector::stop`] (dropping it stops it too).
///
/// ```
/// use herald::*;
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
            waiters: AtomicUsize::new(0),
            counters: Counters::default(),
            last_error: Mutex::new(None),
        });
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
    /// at the default.
    pub fn consistent_list(&self, req: &ListRequest) -> Result<ListResponse, ReadError> {
        let rv = self.current_revision()?;
        self.waiting(|| {
            self.shared
                .engine
                .list(&req.clone().at(ReadAt::NotOlderThan(rv)))
        })
    }

    /// A get as of the source's current revision.
    pub fn consistent_get(&self, key: &str) -> Result<GetResponse, ReadError> {
        let rv = self.current_revision()?;
        self.waiting(|| self.shared.engine.get(key, ReadAt::NotOlderThan(rv)))
    }

    fn current_revision(&self) -> Result<crate::ResourceVersion, ReadError> {
        self.shared
            .source
            .current_revision()
            .map_err(ReadError::Source)
    }

    /// Runs `read` counted as a waiter, so progress is requested meanwhile.
    fn waiting<T>(&self, read: impl FnOnce() -> T) -> T {
        self.shared.waiters.fetch_add(1, Ordering::Relaxed);
        let out = read();
        self.shared.waiters.fetch_sub(1, Ordering::Relaxed);
        out
    }

    /// Stops the thread and returns the writer (the engine keeps what it
    /// has; nothing more is applied).
    pub fn stop(mut self) -> Option<Writer> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> Option<Writer> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn note(&self, e: impl ToString) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
    }

    /// Sleeps `delay` on the reflector's clock, or until asked to stop.
    fn sleep(&self, delay: Duration) {
        let clock = &self.config.clock;
        let until = clock.now() + delay;
        while !self.stopping() && clock.now() < until {
            clock.park_until(until, self.config.poll);
        }
    }
}

/// Why one list-and-watch round ended.
enum Round {
    /// Asked to stop.
    Stop,
    /// The watch's revision was compacted: list again at once.
    Compacted,
    /// Anything else: wait a backoff, then list again.
    Failed,
}

/// The reflector thread.
fn run(shared: &Shared, mut writer: Writer) -> Writer {
    let mut backoff = Backoff::new(shared.config.backoff.clone());
    loop {
        match round(shared, &mut writer) {
            Round::Stop => return writer,
            Round::Compacted => {
                shared.counters.compactions.fetch_add(1, Ordering::Relaxed);
            }
            Round::Failed => {
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

/// One list, then the watch from its revision until it fails.
fn round(shared: &Shared, writer: &mut Writer) -> Round {
    let listing = match shared.source.list() {
        Ok(l) => l,
        Err(e) => {
            shared.note(e);
            return Round::Failed;
        }
    };
    if let Err(e) = writer.replace(listing.objects, listing.revision) {
        if e == WriteError::Stopped {
            return Round::Stop;
        }
        shared.note(e);
        return Round::Failed;
    }
    shared.counters.lists.fetch_add(1, Ordering::Relaxed);
    let watch = match shared.source.watch(listing.revision) {
        Ok(w) => w,
        Err(e) => return failed(shared, e),
    };
    follow(shared, writer, watch)
}

fn failed(shared: &Shared, e: SourceError) -> Round {
    let compacted = matches!(e, SourceError::Compacted { .. });
    shared.note(e);
    if compacted {
        Round::Compacted
    } else {
        Round::Failed
    }
}

/// Applies a source watch's events until it fails or the reflector stops.
fn follow(shared: &Shared, writer: &mut Writer, mut watch: Box<dyn SourceWatch>) -> Round {
    let clock = &shared.config.clock;
    let mut last_request: Option<Instant> = None;
    loop {
        if shared.stopping() {
            return Round::Stop;
        }
        if shared.waiters.load(Ordering::Relaxed) > 0 {
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
        let wait = if shared.waiters.load(Ordering::Relaxed) > 0 {
            shared.config.poll.min(shared.config.progress_every)
        } else {
            shared.config.poll
        };
        let applied = match watch.next(wait) {
            Ok(None) => Ok(()),
            Ok(Some(SourceEvent::Change(c))) => writer.apply(c),
            Ok(Some(SourceEvent::Progress(rv))) => writer.progress(rv),
            Err(e) => return failed(shared, e),
        };
        if let Err(e) = applied {
            if e == WriteError::Stopped {
                return Round::Stop;
            }
            // The source broke its own order: start over from a list.
            shared.note(e);
            return Round::Failed;
        }
    }
}
