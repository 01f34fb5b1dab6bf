//! The manager's settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use herald::Object;
use herald::clock::{Clock, SystemClock};
use herald::reflector::BackoffConfig;

/// The reference's floor on the idle time (seeds/002 `minIdleTime`).
pub const MIN_IDLE_TIME: Duration = Duration::from_secs(60);

/// How often idle watches are looked for (seeds/002: `wait.Until(...,
/// time.Minute)`).
pub const RECYCLE_PERIOD: Duration = Duration::from_secs(60);

/// Decides whether an object is immutable (its watch can stop).
pub type ImmutableFn = Arc<dyn Fn(&Object) -> bool + Send + Sync>;

/// How an [`ObjectManager`](crate::ObjectManager) behaves.
#[derive(Clone)]
pub struct ManagerConfig {
    pub(crate) resync_interval: Duration,
    pub(crate) sync_timeout: Duration,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) backoff: BackoffConfig,
    pub(crate) immutable: ImmutableFn,
}

impl fmt::Debug for ManagerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerConfig")
            .field("resync_interval", &self.resync_interval)
            .field("sync_timeout", &self.sync_timeout)
            .field("clock", &self.clock)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl Default for ManagerConfig {
    /// The kubelet's: a resync interval of 1 min (its `syncFrequency`), so
    /// watches idle for 5 min stop; a `get` waits up to 1 s for a sync;
    /// client-go's backoff; the system clock; [`is_immutable`].
    fn default() -> Self {
        ManagerConfig {
            resync_interval: Duration::from_secs(60),
            sync_timeout: Duration::from_secs(1),
            clock: Arc::new(SystemClock),
            backoff: BackoffConfig::default(),
            immutable: Arc::new(is_immutable),
        }
    }
}

impl ManagerConfig {
    /// The interval at which the kubelet re-reads its pods' volumes; a
    /// watch not read through [`get`](crate::ObjectManager::get) for
    /// [`max_idle_time`](Self::max_idle_time) (5 of these, at least
    /// [`MIN_IDLE_TIME`]) stops until the next `get`.
    #[must_use]
    pub fn resync_interval(mut self, interval: Duration) -> Self {
        self.resync_interval = interval;
        self
    }

    /// How long a [`get`](crate::ObjectManager::get) waits for an object's
    /// first sync before it fails (the reference: 1 s).
    #[must_use]
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// The clock every time rule reads (idle times, the sync wait, the
    /// backoff, the recycling period): tests pass a
    /// [`ManualClock`](herald::clock::ManualClock).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The backoff between a watch's end and the next attempt.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// What makes an object immutable (default: [`is_immutable`]).
    #[must_use]
    pub fn immutable(mut self, f: impl Fn(&Object) -> bool + Send + Sync + 'static) -> Self {
        self.immutable = Arc::new(f);
        self
    }

    /// `5 x` the resync interval, never less than [`MIN_IDLE_TIME`]
    /// (seeds/002 `NewWatchBasedManager`, `NewObjectCache`).
    pub fn max_idle_time(&self) -> Duration {
        self.resync_interval.saturating_mul(5).max(MIN_IDLE_TIME)
    }
}

/// The default test of immutability: the object's field `immutable` is
/// `true` (an engine or decoder configured with that field, as
/// [`RemoteUpstream`](crate::RemoteUpstream)'s is), or else its JSON
/// payload has `"immutable": true` at the top level, as Secrets and
/// ConfigMaps carry it.
pub fn is_immutable(object: &Object) -> bool {
    if let Some(v) = object.field("immutable") {
        return v == "true";
    }
    let payload = object.payload();
    // Most objects are mutable: a substring search (SIMD, with a finder
    // built once) spares them the parse.
    static KEY: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| memchr::memmem::Finder::new(b"\"immutable\""));
    if key.find(payload).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(default)]
        immutable: Option<bool>,
    }
    serde_json::from_slice::<Top>(payload).is_ok_and(|t| t.immutable == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_follows_the_reference() {
        let c = ManagerConfig::default();
        assert_eq!(c.max_idle_time(), Duration::from_secs(300));
        let c = c.resync_interval(Duration::from_secs(1));
        assert_eq!(c.max_idle_time(), MIN_IDLE_TIME);
        let c = c.resync_interval(Duration::MAX);
        assert_eq!(c.max_idle_time(), Duration::MAX);
    }

    #[test]
    fn immutability() {
        let o = |p: &str| Object::builder("ns", "a").payload(p.to_owned()).build();
        assert!(is_immutable(&o(r#"{"immutable":true,"data":{}}"#)));
        assert!(is_immutable(&o(
            r#"{"data":{"x":"y"}, "immutable" : true}"#
        )));
        assert!(!is_immutable(&o(r#"{"immutable":false}"#)));
        assert!(!is_immutable(&o(r#"{"data":{"immutable":true}}"#)));
        assert!(!is_immutable(&o(r#"not json "immutable""#)));
        assert!(!is_immutable(&o("")));
        let f = |v: &str| Object::builder("ns", "a").field("immutable", v).build();
        assert!(is_immutable(&f("true")));
        assert!(!is_immutable(&f("false")));
    }
}
