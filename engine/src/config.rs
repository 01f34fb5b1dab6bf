//! The engine's settings ([`Config`]) and its slow-watcher policy choice
//! ([`SlowWatchers`]); the defaults are the reference's constants, each
//! named where it is set. A configuration that cannot work is refused
//! with a [`ConfigError`] when the engine starts.

use std::fmt;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::echo::Echo;

/// Engine settings. The defaults are the reference's constants.
///
/// ```
/// use std::time::Duration;
/// use herald::Config;
/// let config = Config::default()
///     .index("spec.nodeName")
///     .history_bounds(100, 102_400)
///     .history_window(Duration::from_secs(75))
///     .too_large_timeout(Duration::from_secs(3));
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) history_lower: usize,
    /// `None`: follows the window ([`Config::history_upper`]).
    pub(crate) history_upper: Option<usize>,
    pub(crate) history_window: Duration,
    pub(crate) history_max_bytes: Option<usize>,
    pub(crate) indexes: Vec<String>,
    pub(crate) list_indexes: Vec<String>,
    pub(crate) too_large_timeout: Duration,
    pub(crate) tick: Duration,
    pub(crate) bookmark_frequency: Duration,
    pub(crate) slow_watchers: SlowWatchers,
    pub(crate) spill_limit: usize,
    pub(crate) spill_budget: u64,
    pub(crate) inline_dispatch: bool,
    pub(crate) clock: std::sync::Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            // seeds: watch_cache.go defaultLowerBoundCapacity, defaultUpperBoundCapacity
            history_lower: 100,
            history_upper: None,
            // seeds: watch_cache.go eventFreshDuration
            history_window: Duration::from_secs(75),
            history_max_bytes: None,
            indexes: Vec::new(),
            list_indexes: Vec::new(),
            // seeds: cacher.go blockTimeout (waitUntilFreshAndBlock)
            too_large_timeout: Duration::from_secs(3),
            // seeds: cacher.go dispatchEvents (bookmark timer, jittered 25%)
            tick: Duration::from_secs(1),
            // seeds: cacher.go defaultBookmarkFrequency
            bookmark_frequency: Duration::from_secs(60),
            slow_watchers: SlowWatchers::default(),
            spill_limit: DEFAULT_SPILL_LIMIT,
            spill_budget: DEFAULT_SPILL_BUDGET,
            inline_dispatch: false,
            clock: std::sync::Arc::new(SystemClock),
        }
    }
}

/// What the dispatcher does with a watcher whose queue is full. See the
/// crate docs, [Slow watchers](crate#slow-watchers), for the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SlowWatchers {
    /// Park the watcher at the first change it missed; it feeds itself from
    /// the history ring and is resumed once it has caught up; it ends with
    /// `Gone` only if that change leaves the ring first. The dispatcher
    /// never waits. The default: one slow reader costs no one else
    /// anything, and a reader that is slow for a moment is not cut off.
    #[default]
    Park,
    /// The reference's rule: wait for full queues out of a shared time
    /// budget (refilled at `refill_per_second` per second of wall time, at
    /// most `cap`, starting empty); a watcher still full when the budget is
    /// spent gets one more try and otherwise ends with `TooSlow` (after
    /// draining, if it holds an undelivered initial-events-end bookmark).
    TimeBudget {
        /// Budget accrued per second (reference 50 ms).
        refill_per_second: Duration,
        /// The most the budget holds (reference 100 ms).
        cap: Duration,
    },
}

impl SlowWatchers {
    /// [`SlowWatchers::TimeBudget`] with the reference's constants: 50 ms
    /// per second, capped at 100 ms.
    pub const fn reference_budget() -> SlowWatchers {
        SlowWatchers::TimeBudget {
            refill_per_second: Duration::from_millis(50),
            cap: Duration::from_millis(100),
        }
    }
}

impl Config {
    /// The largest history bound [`Config::history_bounds`] accepts: 2^30
    /// changes, ten thousand times the reference's upper bound. The ring's
    /// slot array for `lower` is allocated up front (a pointer per 32
    /// changes), and a position must stay far from `u64`'s end; a bound
    /// past this is a mistake, not a wish.
    pub const MAX_HISTORY: usize = 1 << 30;

    /// Adds a trigger index on a field (e.g. `spec.nodeName`). Watches whose
    /// field selector requires an exact value of it are routed by that value.
    pub fn index(mut self, field: &str) -> Self {
        self.indexes.push(field.to_owned());
        self
    }

    /// Adds a list index on a field: [`Engine::list`](crate::Engine::list) with a field
    /// selector that requires an exact value of it is served from the
    /// index, not a scan. Separate from [`Config::index`], as the
    /// reference's `Indexers` are from its trigger: the writer maintains a
    /// list index on every change that moves an object between values,
    /// which costs it (in the kubelet-shaped perf run, 100,000 nodes, one
    /// change in ten a move, about a third of its rate), and a cache whose
    /// watchers need routing may not serve lists by that field at all.
    pub fn list_index(mut self, field: &str) -> Self {
        self.list_indexes.push(field.to_owned());
        self
    }

    /// The history ring's capacity bounds, in changes (reference 100, and
    /// an upper bound that follows the window: see
    /// [`Config::history_upper`]). The ring starts at `lower`. `1 <= lower
    /// <= upper <=` [`Config::MAX_HISTORY`], or
    /// [`Engine::new`](crate::Engine::new) refuses the configuration. Set
    /// here, the upper bound no longer follows the window.
    ///
    /// ```
    /// use herald::{Config, Engine};
    /// use herald::config::ConfigError;
    /// let huge = Config::default().history_bounds(100, usize::MAX);
    /// assert!(matches!(Engine::new(huge), Err(ConfigError::HistoryBounds { .. })));
    /// ```
    pub fn history_bounds(mut self, lower: usize, upper: usize) -> Self {
        self.history_lower = lower;
        self.history_upper = Some(upper);
        self
    }

    /// The ring's upper bound: as set by [`Config::history_bounds`], or
    /// else the reference's rule (`capacityUpperBound`, watch_cache.go):
    /// 102,400 changes for a window up to 75 s, and for a longer window
    /// 102,400 times the ratio of the window to 75 s rounded up to a power
    /// of two (the ring only doubles), at most [`Config::MAX_HISTORY`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use herald::Config;
    /// let secs = |s| Config::default().history_window(Duration::from_secs(s));
    /// assert_eq!(secs(75).history_upper(), 102_400);
    /// assert_eq!(secs(10).history_upper(), 102_400);
    /// assert_eq!(secs(76).history_upper(), 204_800);
    /// assert_eq!(secs(300).history_upper(), 409_600);
    /// assert_eq!(secs(301).history_upper(), 819_200);
    /// assert_eq!(secs(300).history_bounds(100, 1000).history_upper(), 1000);
    /// ```
    pub fn history_upper(&self) -> usize {
        self.history_upper.unwrap_or_else(|| {
            // seeds: watch_cache.go defaultUpperBoundCapacity, DefaultEventFreshDuration
            const BASE: usize = 100 * 1024;
            const BASE_WINDOW: Duration = Duration::from_secs(75);
            if self.history_window <= BASE_WINDOW {
                return BASE;
            }
            let ratio = self.history_window.as_secs_f64() / BASE_WINDOW.as_secs_f64();
            // The reference caps the exponent so the bound fits an int32;
            // this engine caps the bound at MAX_HISTORY, which is lower.
            let max_exponent = (Config::MAX_HISTORY / BASE).ilog2();
            let exponent = (ratio.log2().ceil() as u32).min(max_exponent);
            BASE << exponent
        })
    }

    /// The history window (reference 75 s): the ring doubles while all it
    /// holds is younger, halves when even its newest quarter is older.
    pub fn history_window(mut self, window: Duration) -> Self {
        self.history_window = window;
        self
    }

    /// Bounds the history by the approximate bytes of the objects it holds:
    /// the oldest changes are evicted to stay under it.
    pub fn history_max_bytes(mut self, bytes: usize) -> Self {
        self.history_max_bytes = Some(bytes);
        self
    }

    /// How long a watch from a future resource version waits for the cache
    /// before ending with `TooLargeResourceVersion` (reference 3 s).
    /// `Duration::MAX` waits for ever. Every duration setting saturates
    /// the same way: a time past the clock's range is never.
    pub fn too_large_timeout(mut self, timeout: Duration) -> Self {
        self.too_large_timeout = timeout;
        self
    }

    /// The dispatcher's tick (reference 1 s): bookmarks come due, and the
    /// history shrinks when idle. Each tick is jittered by up to a quarter
    /// (1 s to 1.25 s by default), as in the reference, so that engines
    /// started together do not tick together.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// How often a watcher that allows bookmarks gets one (reference 1
    /// min); one also comes 2 s before its deadline.
    pub fn bookmark_frequency(mut self, every: Duration) -> Self {
        self.bookmark_frequency = every;
        self
    }

    /// Whether [`Writer::apply`](crate::Writer::apply) fans its change out
    /// itself, on the caller's thread, when the dispatcher is idle
    /// (default false: the dispatcher thread does, woken by the write).
    ///
    /// The watchers' wakes then come from the writer's thread, with no
    /// hop through the dispatcher thread: a writer and its consumers on
    /// one event loop (Python's asyncio) wake them without another thread
    /// having to be scheduled, which on a loaded machine is the tail of
    /// the latency. The writer pays the fan-out (a filter per candidate
    /// watcher, a wake per sleeping one); it never waits for it: when the
    /// dispatcher thread is busy, the change is left to it, as without
    /// this. Only under [`SlowWatchers::Park`] (the time budget's rounds
    /// wait for slow watchers, which a writer must not); re-lists and
    /// progress always go through the dispatcher thread.
    pub fn inline_dispatch(mut self, on: bool) -> Self {
        self.inline_dispatch = on;
        self
    }

    /// The slow-watcher policy (default [`SlowWatchers::Park`]).
    pub fn slow_watchers(mut self, policy: SlowWatchers) -> Self {
        self.slow_watchers = policy;
        self
    }

    /// Under [`SlowWatchers::Park`]: how many changes a selective watcher
    /// (one with a key scope or a selector) may have waiting beyond its
    /// full queue before it is parked (default 4,096, at most 32 KiB per
    /// watcher, and only while it is behind; 0 parks at the first full
    /// queue).
    ///
    /// A parked watcher feeds itself from the history ring, which costs it
    /// a filter evaluation per change in the ring, not per change it may
    /// see: cheap for a watcher that admits most changes, costly for one
    /// that admits a few (a kubelet's node watcher under a burst). The
    /// overflow holds only the changes the watcher admits, in order, so a
    /// selective watcher that falls behind for a moment catches up at the
    /// cost of what it is owed. A watcher that admits everything never
    /// overflows: its replay is as cheap as its queue.
    pub fn spill_limit(mut self, changes: usize) -> Self {
        self.spill_limit = changes;
        self
    }

    /// Under [`SlowWatchers::Park`]: how many change handles (8 bytes
    /// each) all the overflows of the engine may hold together (default
    /// 4 Mi handles, 32 MiB; [`Stats::overflow_handles`](crate::stats::Stats::overflow_handles)
    /// says how many they hold). Once they hold that many, a selective
    /// watcher whose queue is full is parked instead of spilling: a parked
    /// watcher holds nothing beyond its queue and feeds itself from the
    /// history ring, so it loses nothing and ends only if the writer laps
    /// it (`Gone`). A stalled consumer therefore costs at most its queue
    /// plus its share of this budget, and ten thousand of them cost this
    /// budget, not ten thousand overflows. Handles come back to the budget
    /// when a consumer takes its overflow, is parked, or ends.
    ///
    /// ```
    /// use herald::Config;
    /// // 1 MiB of overflow for the whole engine.
    /// let config = Config::default().spill_budget(128 * 1024);
    /// ```
    pub fn spill_budget(mut self, handles: u64) -> Self {
        self.spill_budget = handles;
        self
    }

    /// The clock every time rule reads (default [`SystemClock`]); tests use
    /// a [`ManualClock`](crate::clock::ManualClock).
    ///
    /// ```
    /// use herald::Config;
    /// use herald::clock::ManualClock;
    /// let clock = ManualClock::new();
    /// let config = Config::default().clock(clock.clone());
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = std::sync::Arc::new(clock);
        self
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let upper = self.history_upper();
        if self.history_lower == 0 || self.history_lower > upper || upper > Config::MAX_HISTORY {
            return Err(ConfigError::HistoryBounds {
                lower: self.history_lower,
                upper,
            });
        }
        for (d, what) in [
            (self.history_window, "history_window"),
            (self.too_large_timeout, "too_large_timeout"),
            (self.tick, "tick"),
            (self.bookmark_frequency, "bookmark_frequency"),
        ] {
            if d.is_zero() {
                return Err(ConfigError::ZeroDuration(what));
            }
        }
        for indexes in [&self.indexes, &self.list_indexes] {
            for (i, f) in indexes.iter().enumerate() {
                if f.is_empty() || indexes[..i].contains(f) {
                    return Err(ConfigError::BadIndex(f.clone()));
                }
            }
        }
        Ok(())
    }

    /// The reference's watcher queue size (`suggestedWatchChannelSize`,
    /// seeds/004): about one second of history, at least 10, at most 10 for
    /// an indexed watcher, 1000 for an unindexed one when an index exists,
    /// 100 without indexes.
    pub(crate) fn queue_capacity(&self, ring_capacity: usize, indexed: bool) -> usize {
        let per_second = (ring_capacity as f64 / self.history_window.as_secs_f64()).ceil();
        let max = match (self.indexes.is_empty(), indexed) {
            (false, true) => 10,
            (false, false) => 1000,
            (true, _) => 100,
        };
        (per_second as usize).clamp(MIN_QUEUE, max.max(MIN_QUEUE))
    }
}

/// [`Config::spill_limit`]'s default.
const DEFAULT_SPILL_LIMIT: usize = 4096;

/// [`Config::spill_budget`]'s default: 4 Mi handles, 32 MiB.
const DEFAULT_SPILL_BUDGET: u64 = 4 << 20;

/// The smallest watcher queue (the reference's 10). One under loom, so
/// that a model fills a queue with a single change.
const MIN_QUEUE: usize = if cfg!(herald_loom) { 1 } else { 10 };

/// An engine configuration that cannot work, or an engine that could not
/// start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The history bounds are inverted or zero.
    HistoryBounds {
        /// The lower bound given.
        lower: usize,
        /// The upper bound given.
        upper: usize,
    },
    /// A duration setting is zero.
    ZeroDuration(&'static str),
    /// An indexed field name is empty or listed twice. The message shows
    /// at most the name's first 64 bytes.
    BadIndex(String),
    /// The dispatcher thread could not be spawned.
    Spawn(std::io::Error),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::HistoryBounds { lower, upper } => write!(
                f,
                "history capacity bounds must satisfy 1 <= lower <= upper (got {lower}..{upper})"
            ),
            ConfigError::ZeroDuration(what) => write!(f, "{what} must be greater than zero"),
            ConfigError::BadIndex(name) => {
                write!(
                    f,
                    "indexed field {} is empty or listed twice",
                    Echo::new(name)
                )
            }
            ConfigError::Spawn(e) => write!(f, "could not spawn the dispatcher thread: {e}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}
