//! Reads from the cache: [`Engine::get`](crate::Engine::get) and
//! [`Engine::list`](crate::Engine::list), at the present or at an exact
//! resource version inside the history window, in pages.
//!
//! # Snapshots
//!
//! The writer keeps the state in persistent maps (`store.rs`): a clone is
//! O(1) and a change costs O(log n) by path copying. A [`View`] — the
//! state, the ring position and version it reflects — is published through
//! an `ArcSwap`:
//!
//! - **the present**: load the view, then apply the ring's records from the
//!   view's position up to the ring's head to a clone of its state;
//! - **an exact version `R`** inside the window: from the present, undo the
//!   records newer than `R`, newest first; each record carries the previous
//!   object and the version of its entry (`prev_rv`), so an undo restores
//!   the entry exactly. The cost is O(log n) per change between `R` and the
//!   present, and nothing per change while no one reads the past.
//!
//! Publishing is on demand, because it is not free for the writer: once a
//! view shares the writer's map, the writer's next change to each leaf
//! copies it (64 entries, an `Arc` increment each), where an unshared map
//! is changed in place. Publishing after every 32 changes, unasked, halved
//! the writer's rate in the kubelet-shaped perf run. So a reader whose view
//! is more than [`VIEW_EVERY`] records behind raises `view_wanted`, and the
//! writer publishes at its next change (one `Relaxed` load per change
//! otherwise). A view more than [`MAX_LAG`] records behind (a writer that
//! has gone quiet, or has raced ahead) is not replayed: the reader takes
//! the writer's lock for an O(1) clone and publishes that: a critical
//! section of a few reference counts, never a walk, and the view it
//! publishes serves every reader until the writer has moved [`MAX_LAG`]
//! records on. A re-list always publishes.
//!
//! The current version is loaded before the ring's head: every change at
//! or below it is then below the head, so the state read reflects at least
//! that version (a progress notification may have moved it past the last
//! change). A record the reader cannot use — overwritten by the writer
//! meanwhile, or of a newer generation — sends it back to a fresh view; a
//! record it needs to undo that has left the window makes the read `Gone`,
//! exactly when a watch from `R` would be.
//!
//! The version must belong to the generation of the view, since a re-list
//! after a regression ([`Writer::replace_after_regression`]) lowers it: a
//! version of the old history on a state of the new one would claim the
//! new history had reached it. So the reader loads the view's generation
//! before the version and checks that the view it replays has the same
//! one; the writer stores a re-list's version before it publishes the
//! view. A new view seen first then brings its version with it; a new
//! version seen with an old view brings the re-list marker below the head
//! (appended before the version is stored), and the replay starts over.
//! Reads at a version (`NotOlderThan`, `Exact`) that find the present
//! behind it after their wait (the history went back meanwhile) wait
//! again, so an answer never names a version its state has not reached.
//!
//! [`Writer::replace_after_regression`]: crate::Writer::replace_after_regression
//!
//! # Pages
//!
//! A page ends with a [`Continue`] token naming the engine, the
//! generation, the version the first page was read at and the last key
//! served (its [format and rules](Continue#format)). The next
//! page reads the same version exactly, from the key after, so a sequence
//! of pages equals one list at that version however the cache moves in
//! between; once the version leaves the window (or the cache re-lists) the
//! token is [`ReadError::Gone`] (Kubernetes' "continue token too old").

use std::fmt;
use std::ops::Bound;
use std::str::FromStr;
use std::time::Duration;

use crate::echo::Echo;
use crate::engine::Shared;
use crate::event::{ChangeKind, Gone, TooLargeResourceVersion};
use crate::filter::{Filter, KeyScope};
use crate::ring::{RecordKind, RecordRef};
use crate::store::{State, Stored};
use crate::sync::{Arc, Ordering};
use crate::{FieldSelector, LabelSelector, Object, ResourceVersion};

/// A reader asks the writer for a fresh [`View`] when the one it found is
/// more than this many records behind; the writer publishes one once this
/// many changes have passed since its last.
pub(crate) const VIEW_EVERY: u32 = 32;

/// A view more than this many records behind is not replayed: the reader
/// clones the writer's state under its lock instead (see the module docs).
const MAX_LAG: u64 = 256;

/// A state as the writer published it.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub(crate) state: State,
    /// The version of the last change applied to `state` (the list's at a
    /// re-list).
    pub(crate) rv: ResourceVersion,
    /// The ring position after the last record `state` reflects.
    pub(crate) pos: u64,
    pub(crate) generation: u64,
}

/// Which state a read is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadAt {
    /// Whatever the cache has now (Kubernetes' `resourceVersion="0"`).
    #[default]
    Any,
    /// The present, once the cache has reached this version (Kubernetes'
    /// `resourceVersion=R`, match `NotOlderThan`): waits up to
    /// [`Config::too_large_timeout`](crate::Config::too_large_timeout)
    /// (for the first list too), then
    /// [`ReadError::TooLargeResourceVersion`] (or `NotReady`).
    NotOlderThan(ResourceVersion),
    /// The state exactly at this version (match `Exact`), anywhere in the
    /// history window; a future version waits as `NotOlderThan` does.
    Exact(ResourceVersion),
}

/// What to list. Built with chained setters.
///
/// ```
/// use herald::{KeyScope, ListRequest, ReadAt};
/// let req = ListRequest::new()
///     .scope(KeyScope::prefix("team-a"))
///     .fields("spec.nodeName=node-7".parse()?)
///     .at(ReadAt::Exact(42.into()))
///     .limit(500);
/// # Ok::<(), herald::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    scope: KeyScope,
    labels: LabelSelector,
    fields: FieldSelector,
    at: ReadAt,
    limit: usize,
    continue_from: Option<Continue>,
}

impl ListRequest {
    /// Every object, whatever the cache has now, in one page.
    pub fn new() -> Self {
        Self::default()
    }

    crate::filter::selection_setters!(
        "An exact value of a field with a list index \
         ([`Config::list_index`](crate::Config::list_index)) is served from \
         the index."
    );

    /// Which state to read (default [`ReadAt::Any`]). A continued list
    /// reads its token's version and must leave this at the default.
    pub fn at(mut self, at: ReadAt) -> Self {
        self.at = at;
        self
    }

    /// At most this many objects per page (0, the default: no limit).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The next page of an earlier list with the same scope and selectors.
    pub fn continue_from(mut self, token: Continue) -> Self {
        self.continue_from = Some(token);
        self
    }
}

/// One object as the cache holds it, with the version of its last change.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The object.
    pub object: Object,
    /// The resource version of its last change.
    pub resource_version: ResourceVersion,
}

impl Item {
    fn of(e: &Stored) -> Item {
        Item {
            object: e.object.clone(),
            resource_version: e.rv,
        }
    }
}

/// What [`Engine::get`](crate::Engine::get) found.
#[derive(Debug, Clone, PartialEq)]
pub struct GetResponse {
    /// The object, if the key exists in the state read.
    pub item: Option<Item>,
    /// The version of the state read.
    pub resource_version: ResourceVersion,
}

/// One page of [`Engine::list`](crate::Engine::list).
#[derive(Debug, Clone, PartialEq)]
pub struct ListResponse {
    /// The objects, in key order.
    pub items: Vec<Item>,
    /// The version of the state read (for every page of a list, the
    /// first page's).
    pub resource_version: ResourceVersion,
    /// Set when more objects follow: pass it to
    /// [`ListRequest::continue_from`].
    pub continue_token: Option<Continue>,
}

/// A list's continue token: printable (`Display`) and parsed back
/// (`FromStr`), as a server hands it to its client and takes it back.
///
/// # Format
///
/// `h2.<engine>.<generation>.<version>.<key>`, in ASCII:
///
/// - `h2`: the format's version (Herald's first format, `h1`, had no
///   engine and is refused as malformed);
/// - `<engine>`: the issuing engine's id, 16 lowercase hex digits, drawn
///   at random by [`Engine::new`](crate::Engine::new);
/// - `<generation>`: the number of re-lists the engine had made (see
///   [`Engine::generation`](crate::Engine::generation)), decimal;
/// - `<version>`: the version every page of the list is read at, decimal;
/// - `<key>`: the last key served, its UTF-8 bytes in lowercase hex.
///
/// Each part has exactly one spelling (no sign, no leading zero, no
/// capital hex), so a token that parses prints back as the same text.
///
/// # Rules
///
/// A token is served only by the engine that issued it, and only as that
/// engine could have issued it:
///
/// - text that does not parse is [`InvalidContinue::Malformed`];
/// - another engine's token (another process, a replica, an engine since
///   restarted: its generations and key order mean nothing here) is
///   [`ReadError::ForeignContinue`];
/// - a version above the one the engine has reached, or a generation it
///   has not, is [`InvalidContinue::VersionNotReached`] or
///   [`InvalidContinue::GenerationNotReached`]: only a forged or corrupted
///   token names one (the engine's version and generation never go back),
///   and serving it would label the present with a version it is not at;
/// - a version that has left the history window, or a generation before
///   the last re-list, is [`ReadError::Gone`] (Kubernetes' "continue token
///   too old"): list again from the start.
///
/// The key is not checked against anything: a client may skip keys, and
/// the selectors still decide what each page holds.
///
/// ```
/// use herald::*;
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// let obj = |n: &str| Object::builder("ns", n).build();
/// writer.replace([obj("a"), obj("b"), obj("c")], 10.into())?;
/// let page = engine.list(&ListRequest::new().limit(2))?;
/// let token = page.continue_token.unwrap();
/// let text = token.to_string();
/// assert!(text.starts_with("h2.") && text.ends_with(".1.10.6e732f62")); // "ns/b"
/// let token: Continue = text.parse()?;
/// let next = engine.list(&ListRequest::new().limit(2).continue_from(token))?;
/// assert_eq!(next.items[0].object.name(), "c");
/// assert_eq!(next.continue_token, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Continue {
    engine: u64,
    generation: u64,
    rv: ResourceVersion,
    after: Box<str>,
}

impl Continue {
    /// The version every page of the list is read at.
    ///
    /// ```
    /// # use herald::*;
    /// # let (engine, mut writer) = Engine::new(Config::default())?;
    /// # writer.replace([Object::builder("ns", "a").build(), Object::builder("ns", "b").build()], 7.into())?;
    /// let page = engine.list(&ListRequest::new().limit(1))?;
    /// assert_eq!(page.continue_token.unwrap().resource_version().get(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_version(&self) -> ResourceVersion {
        self.rv
    }
}

/// The token's format version.
const TOKEN_PREFIX: &str = "h2";

/// A random id for a new engine, for its continue tokens. Random, not a
/// counter: an engine in another process, or in this one after a restart,
/// must not share it. `RandomState` draws its SipHash keys from the
/// operating system once per thread and steps them for each new state, so
/// two engines hash `0` to different values whatever thread makes them.
pub(crate) fn engine_id() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u64)
}

impl fmt::Display for Continue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TOKEN_PREFIX}.{:016x}.{}.{}.",
            self.engine, self.generation, self.rv
        )?;
        for b in self.after.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A decimal in its one spelling: digits only, no leading zero but `0`.
fn canonical_decimal(s: &str) -> Option<u64> {
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

/// A lowercase hex digit's value.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

impl FromStr for Continue {
    type Err = ReadError;

    /// Parses a token in the [format](Continue#format) above; anything
    /// else is [`InvalidContinue::Malformed`].
    fn from_str(s: &str) -> Result<Self, ReadError> {
        let bad = |why| {
            ReadError::InvalidContinue(InvalidContinue::Malformed(MalformedContinue::new(why, s)))
        };
        let mut parts = s.splitn(5, '.');
        if parts.next() != Some(TOKEN_PREFIX) {
            return Err(bad("not a Herald continue token of this format"));
        }
        let engine = parts
            .next()
            .filter(|p| p.len() == 16 && p.bytes().all(|b| hex_digit(b).is_some()))
            .and_then(|p| u64::from_str_radix(p, 16).ok())
            .ok_or_else(|| bad("malformed engine id"))?;
        let generation = parts
            .next()
            .and_then(canonical_decimal)
            .ok_or_else(|| bad("malformed generation"))?;
        let rv = parts
            .next()
            .and_then(canonical_decimal)
            .map(ResourceVersion::new)
            .ok_or_else(|| bad("malformed resource version"))?;
        let hex = parts.next().ok_or_else(|| bad("no key"))?.as_bytes();
        if hex.len() % 2 != 0 {
            return Err(bad("malformed key"));
        }
        let bytes = hex
            .chunks_exact(2)
            .map(|pair| Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| bad("malformed key"))?;
        let after = String::from_utf8(bytes).map_err(|_| bad("malformed key"))?;
        Ok(Continue {
            engine,
            generation,
            rv,
            after: after.into(),
        })
    }
}

/// A continue token this engine refuses as one it could not have issued
/// ([`ReadError::InvalidContinue`]); see the [rules](Continue#rules).
///
/// ```
/// use herald::*;
/// let err = "h2.nope".parse::<Continue>().unwrap_err();
/// match err {
///     ReadError::InvalidContinue(InvalidContinue::Malformed(m)) => assert_eq!(m.input(), "h2.nope"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidContinue {
    /// The text is not a token in the [format](Continue#format).
    Malformed(MalformedContinue),
    /// The token names a version above the one the engine has reached.
    VersionNotReached {
        /// The token's version.
        token: ResourceVersion,
        /// The engine's version when the token was checked.
        reached: ResourceVersion,
    },
    /// The token names a re-list the engine has not made.
    GenerationNotReached {
        /// The token's generation.
        token: u64,
        /// The engine's generation when the token was checked.
        reached: u64,
    },
}

impl fmt::Display for InvalidContinue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidContinue::Malformed(m) => fmt::Display::fmt(m, f),
            InvalidContinue::VersionNotReached { token, reached } => write!(
                f,
                "it names resource version {token}, which the cache has not reached (it is at {reached})"
            ),
            InvalidContinue::GenerationNotReached { token, reached } => write!(
                f,
                "it names generation {token}, which the cache has not reached (it is at {reached})"
            ),
        }
    }
}

/// Text that is not a continue token: what is wrong with it, and its start.
///
/// ```
/// use herald::*;
/// let long = format!("h1.{}", "7".repeat(1 << 20));
/// let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = long.parse::<Continue>() else {
///     panic!()
/// };
/// assert_eq!(m.input().len(), 64);
/// assert_eq!(m.reason(), "not a Herald continue token of this format");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedContinue {
    reason: &'static str,
    input: Echo,
}

impl MalformedContinue {
    fn new(reason: &'static str, input: &str) -> MalformedContinue {
        MalformedContinue {
            reason,
            input: Echo::new(input),
        }
    }

    /// What is wrong with the text.
    ///
    /// ```
    /// # use herald::*;
    /// # let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = "h2.00000000000000zz.0.0.".parse::<Continue>() else { panic!() };
    /// assert_eq!(m.reason(), "malformed engine id");
    /// ```
    pub fn reason(&self) -> &str {
        self.reason
    }

    /// The rejected text (at most its first 64 bytes).
    ///
    /// ```
    /// # use herald::*;
    /// # let Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) = "abc".parse::<Continue>() else { panic!() };
    /// assert_eq!(m.input(), "abc");
    /// ```
    pub fn input(&self) -> &str {
        self.input.head()
    }
}

impl fmt::Display for MalformedContinue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.input)
    }
}

/// A read that could not be served. Nothing is changed by a failed read.
///
/// ```
/// use herald::*;
/// let (engine, _writer) = Engine::new(Config::default())?;
/// assert_eq!(engine.get("ns/a", ReadAt::Any), Err(ReadError::NotReady));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// The cache has not been listed yet (retry once it is ready).
    NotReady,
    /// The engine has been stopped.
    EngineStopped,
    /// The version asked for (or the continue token's) is older than the
    /// history the cache keeps, or before its last re-list.
    Gone(Gone),
    /// The cache did not reach the version asked for in time.
    TooLargeResourceVersion(TooLargeResourceVersion),
    /// A continue token that does not parse, or that names a state the
    /// engine has never been in (forged or corrupted).
    InvalidContinue(InvalidContinue),
    /// A continue token issued by another engine (a replica, or this
    /// engine's predecessor before a restart): its versions and
    /// generations are not this engine's. List again from the start.
    ///
    /// ```
    /// # use herald::*;
    /// let obj = |n: &str| Object::builder("ns", n).build();
    /// let (a, mut wa) = Engine::new(Config::default())?;
    /// let (b, mut wb) = Engine::new(Config::default())?;
    /// wa.replace([obj("x"), obj("y")], 5.into())?;
    /// wb.replace([obj("x"), obj("y")], 5.into())?;
    /// let token = a.list(&ListRequest::new().limit(1))?.continue_token.unwrap();
    /// let err = b.list(&ListRequest::new().continue_from(token));
    /// assert_eq!(err, Err(ReadError::ForeignContinue));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ForeignContinue,
    /// A continued list names its version in the token: the request must
    /// not name one too.
    ContinueWithResourceVersion,
    /// A consistent read could not learn the source's current revision.
    Source(crate::SourceError),
    /// A consistent read found the source behind the cache: its history
    /// went back (restored from a backup), and the cache had not re-listed
    /// from it in time. What the cache holds is of the old history, so it
    /// is not served; retry once the reflector has re-listed.
    SourceRegressed {
        /// The source's revision.
        source: ResourceVersion,
        /// The cache's version, of the old history.
        cache: ResourceVersion,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotReady => f.write_str("the cache has not been listed yet"),
            ReadError::EngineStopped => f.write_str("the engine is stopped"),
            ReadError::Gone(g) => fmt::Display::fmt(g, f),
            ReadError::TooLargeResourceVersion(t) => fmt::Display::fmt(t, f),
            ReadError::InvalidContinue(why) => write!(f, "invalid continue token: {why}"),
            ReadError::ForeignContinue => f.write_str(
                "the continue token was issued by another engine: list again from the start",
            ),
            ReadError::ContinueWithResourceVersion => {
                f.write_str("a continued list must not name a resource version")
            }
            ReadError::Source(e) => write!(f, "consistent read: {e}"),
            ReadError::SourceRegressed { source, cache } => write!(
                f,
                "consistent read: the source's revision {source} is behind the cache's \
                 {cache} (its history went back, e.g. a restore from a backup); \
                 the cache has not re-listed yet"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// A state read, and the version it reflects.
struct Read {
    state: State,
    rv: ResourceVersion,
    generation: u64,
}

/// Why a replay must start over from a fresh view.
struct Stale;

/// How long one wait for a version sleeps before it looks again (the
/// writer does not wake readers; see [`Shared::wait_for`]).
const WAIT_STEP: Duration = Duration::from_millis(1);

impl Shared {
    /// The state at `at`.
    fn read_state(&self, at: ReadAt) -> Result<Read, ReadError> {
        match at {
            ReadAt::Any => self.present(),
            // Loops only if the history went back during the wait (see
            // Snapshots).
            ReadAt::NotOlderThan(rv) => loop {
                self.wait_for(rv)?;
                let read = self.present()?;
                if read.rv >= rv {
                    return Ok(read);
                }
            },
            ReadAt::Exact(rv) => loop {
                self.wait_for(rv)?;
                if let Some(read) = self.exactly(rv, None)? {
                    return Ok(read);
                }
            },
        }
    }

    /// Waits until the cache has reached `rv`, up to the too-large timeout
    /// on the engine's clock. It looks again every [`WAIT_STEP`] (or when
    /// the clock moves): readers cost the writer nothing.
    fn wait_for(&self, rv: ResourceVersion) -> Result<(), ReadError> {
        let clock = &self.config.clock;
        // A timeout past the clock's range (`Duration::MAX`) waits for ever.
        let deadline = crate::dispatch::later(clock.now(), self.config.too_large_timeout);
        loop {
            // A cache not yet listed is waited for too (it is about to
            // be fresh); it is `NotReady` only if it stays so.
            let pending = match self.check_readable() {
                Err(ReadError::NotReady) => true,
                Err(e) => return Err(e),
                Ok(()) => false,
            };
            let current = ResourceVersion::new(self.current_rv.load(Ordering::Acquire));
            if !pending && current >= rv {
                return Ok(());
            }
            let now = clock.now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(if pending {
                    ReadError::NotReady
                } else {
                    ReadError::TooLargeResourceVersion(TooLargeResourceVersion::new(rv, current))
                });
            }
            let until = deadline.or_else(|| crate::dispatch::later(now, WAIT_STEP));
            clock.park_until(until.unwrap_or(now), WAIT_STEP);
        }
    }

    fn check_readable(&self) -> Result<(), ReadError> {
        use crate::Lifecycle;
        match self.lifecycle() {
            Lifecycle::Pending => Err(ReadError::NotReady),
            Lifecycle::Stopped => Err(ReadError::EngineStopped),
            _ => Ok(()),
        }
    }

    /// The present state (see [Snapshots](self#snapshots)).
    fn present(&self) -> Result<Read, ReadError> {
        loop {
            self.check_readable()?;
            if let Ok((read, _)) = self.replay_present() {
                return Ok(read);
            }
        }
    }

    /// The latest view with the records after it applied; also returns the
    /// ring position the result reflects.
    fn replay_present(&self) -> Result<(Read, u64), Stale> {
        // The view's generation, the version, then the view and the head:
        // see the module docs.
        let generation = self.view.load().generation;
        let current = ResourceVersion::new(self.current_rv.load(Ordering::Acquire));
        let (view, head) = self.view_to_replay();
        if view.generation != generation {
            return Err(Stale);
        }
        let mut state = view.state.clone();
        let mut rv = view.rv;
        let mut cursor = self.ring.cursor();
        for pos in view.pos..head {
            let rec = self.ring.read(&mut cursor, pos).map_err(|_| Stale)?;
            if rec.generation != view.generation || rec.kind == RecordKind::Relist {
                return Err(Stale);
            }
            redo(&mut state, &rec);
            rv = rec.rv;
        }
        Ok((
            Read {
                state,
                rv: rv.max(current),
                generation: view.generation,
            },
            head,
        ))
    }

    /// The view a read starts from and the ring's head, loaded after it
    /// (see [Snapshots](self#snapshots)): the published one if it is close
    /// enough to replay, else a fresh one cloned under the writer's lock.
    fn view_to_replay(&self) -> (Arc<View>, u64) {
        let view = self.view.load_full();
        let head = self.ring.head();
        let lag = head.saturating_sub(view.pos);
        if view.pos >= self.ring.tail() && lag <= MAX_LAG {
            if lag > u64::from(VIEW_EVERY) && !self.view_wanted.load(Ordering::Relaxed) {
                self.view_wanted.store(true, Ordering::Relaxed);
            }
            return (view, head);
        }
        let view = {
            let mut st = self.lock_state();
            self.publish_view(&mut st)
        };
        (view, self.ring.head())
    }

    /// The state exactly at `rv` (already reached). With `generation`,
    /// only in that generation (a continued list). `None` if the present is
    /// behind `rv` after all: the history went back since the wait.
    fn exactly(
        &self,
        rv: ResourceVersion,
        generation: Option<u64>,
    ) -> Result<Option<Read>, ReadError> {
        loop {
            self.check_readable()?;
            let Ok((mut read, head)) = self.replay_present() else {
                continue;
            };
            match generation {
                // Generations only grow: a later one is forged.
                Some(g) if g > read.generation => {
                    return Err(ReadError::InvalidContinue(
                        InvalidContinue::GenerationNotReached {
                            token: g,
                            reached: read.generation,
                        },
                    ));
                }
                Some(g) if g != read.generation => return Err(self.gone(rv)),
                _ => {}
            }
            if read.rv < rv {
                return Ok(None);
            }
            let tail = self.ring.tail();
            let mut cursor = self.ring.cursor();
            let mut pos = head;
            // The version of the last record undone: the state is now the
            // one just before it.
            let mut undone: Option<ResourceVersion> = None;
            while pos > 0 {
                let rec = if pos > tail {
                    self.ring.read(&mut cursor, pos - 1).ok()
                } else {
                    None
                };
                let Some(rec) = rec else {
                    // Left the window. Versions increase with positions, so
                    // the state is exactly at `rv` only if nothing between
                    // the evicted record and the last undone one is missing.
                    match undone {
                        Some(u) if rv.get() + 1 >= u.get() => break,
                        // Nothing to undo: the present is at or before `rv`.
                        None if read.rv <= rv => break,
                        _ => return Err(self.gone(rv)),
                    }
                };
                if rec.rv <= rv {
                    break;
                }
                // Walking back from the present, the re-list marker of its
                // generation comes before any older record: reaching it
                // with `rv` still below means `rv` is before the list.
                if rec.generation != read.generation || rec.kind == RecordKind::Relist {
                    return Err(self.gone(rv));
                }
                undo(&mut read.state, &rec);
                undone = Some(rec.rv);
                pos -= 1;
            }
            read.rv = rv;
            return Ok(Some(read));
        }
    }

    fn gone(&self, rv: ResourceVersion) -> ReadError {
        let oldest = self.lock_state().ring.oldest_minus_one();
        ReadError::Gone(Gone::new(rv, oldest))
    }

    pub(crate) fn get(&self, key: &str, at: ReadAt) -> Result<GetResponse, ReadError> {
        match at {
            ReadAt::Any => self.get_present(key),
            ReadAt::NotOlderThan(rv) => loop {
                self.wait_for(rv)?;
                let got = self.get_present(key)?;
                if got.resource_version >= rv {
                    return Ok(got);
                }
            },
            ReadAt::Exact(_) => {
                let read = self.read_state(at)?;
                Ok(GetResponse {
                    item: read.state.get(key).map(Item::of),
                    resource_version: read.rv,
                })
            }
        }
    }

    /// A get of the present without building it: the records after the
    /// view, newest first, then the view's state.
    fn get_present(&self, key: &str) -> Result<GetResponse, ReadError> {
        loop {
            self.check_readable()?;
            let generation = self.view.load().generation;
            let current = ResourceVersion::new(self.current_rv.load(Ordering::Acquire));
            let (view, head) = self.view_to_replay();
            if view.generation != generation {
                continue;
            }
            let mut cursor = self.ring.cursor();
            let mut newest: Option<(ResourceVersion, Option<Item>)> = None;
            let mut last_rv = view.rv;
            let mut stale = false;
            for pos in view.pos..head {
                let Ok(rec) = self.ring.read(&mut cursor, pos) else {
                    stale = true;
                    break;
                };
                if rec.generation != view.generation || rec.kind == RecordKind::Relist {
                    stale = true;
                    break;
                }
                last_rv = rec.rv;
                if rec.object.as_ref().is_some_and(|o| o.key() == key) {
                    let item = match rec.kind {
                        RecordKind::Change(ChangeKind::Deleted) => None,
                        _ => rec.object.clone().map(|object| Item {
                            object,
                            resource_version: rec.rv,
                        }),
                    };
                    newest = Some((rec.rv, item));
                }
            }
            if stale {
                continue;
            }
            let item = match newest {
                Some((_, item)) => item,
                None => view.state.get(key).map(Item::of),
            };
            return Ok(GetResponse {
                item,
                resource_version: last_rv.max(current),
            });
        }
    }

    /// Refuses a token this engine could not have issued (see the
    /// [rules](Continue#rules)); a generation it has not reached is
    /// caught by [`Shared::exactly`], which knows the generation it read.
    fn check_token(&self, token: &Continue) -> Result<(), ReadError> {
        if token.engine != self.engine_id {
            return Err(ReadError::ForeignContinue);
        }
        // Within a generation the version only grows, and every token
        // this engine issued names one it had reached: a greater one is
        // forged. Without this check the read below finds nothing to undo
        // and labels the present with it. A token of an older generation
        // may name a version above the present one after the source went
        // back (`Writer::replace_after_regression`): its history is gone.
        let reached = ResourceVersion::new(self.current_rv.load(Ordering::Acquire));
        if token.rv > reached {
            if token.generation < self.view.load().generation {
                return Err(self.gone(token.rv));
            }
            return Err(ReadError::InvalidContinue(
                InvalidContinue::VersionNotReached {
                    token: token.rv,
                    reached,
                },
            ));
        }
        Ok(())
    }

    pub(crate) fn list(&self, req: &ListRequest) -> Result<ListResponse, ReadError> {
        let (read, after) = match &req.continue_from {
            Some(token) => {
                if req.at != ReadAt::Any {
                    return Err(ReadError::ContinueWithResourceVersion);
                }
                self.check_readable()?;
                self.check_token(token)?;
                // In its own generation the present is never behind the
                // token; `None` cannot come, and would be a lost version.
                let read = self
                    .exactly(token.rv, Some(token.generation))?
                    .ok_or_else(|| self.gone(token.rv))?;
                (read, Some(&*token.after))
            }
            None => (self.read_state(req.at)?, None),
        };
        let filter = Filter::new(req.scope.clone(), req.labels.clone(), req.fields.clone());
        let limit = if req.limit == 0 {
            usize::MAX
        } else {
            req.limit
        };
        let mut items = Vec::new();
        let mut more = false;
        for e in candidates(&read.state, req, after).filter(|e| filter.admits(&e.object)) {
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(Item::of(e));
        }
        let continue_token = more.then(|| Continue {
            engine: self.engine_id,
            generation: read.generation,
            rv: read.rv,
            after: items
                .last()
                .map_or_else(Box::default, |i: &Item| i.object.key().into()),
        });
        Ok(ListResponse {
            items,
            resource_version: read.rv,
            continue_token,
        })
    }
}

/// The entries a list looks at, in key order, after `after`: those of a
/// list index when the field selector requires an exact value of its
/// field, of the key range when the scope is one key or a prefix, else
/// all. The filter still decides.
fn candidates<'a>(
    state: &'a State,
    req: &'a ListRequest,
    after: Option<&'a str>,
) -> Box<dyn Iterator<Item = &'a Stored> + 'a> {
    let indexed = req.fields.terms().iter().find_map(|t| {
        Some((
            state.index_of(t.field())?,
            req.fields.requires_exact(t.field())?,
        ))
    });
    if let Some((index, value)) = indexed {
        return Box::new(state.iter_indexed(index, value, after));
    }
    let from = after.map_or(Bound::Unbounded, Bound::Excluded);
    match &req.scope {
        KeyScope::All => Box::new(state.range(from)),
        KeyScope::Exact(key) => Box::new(
            state
                .get(key)
                .filter(|e| after.is_none_or(|a| e.object.key() > a))
                .into_iter(),
        ),
        KeyScope::Prefix(prefix) => {
            let start = format!("{prefix}/");
            let from = match after {
                Some(a) if a >= start.as_str() => Bound::Excluded(a),
                _ => Bound::Included(start.as_str()),
            };
            let range = state.range(from);
            Box::new(range.take_while(move |e| e.object.key().starts_with(&start)))
        }
    }
}

/// Applies a change record to `state` (forward).
fn redo(state: &mut State, rec: &RecordRef) {
    let Some(object) = rec.object.as_ref() else {
        return;
    };
    match rec.kind {
        RecordKind::Change(ChangeKind::Deleted) => {
            state.delete(object.key());
        }
        RecordKind::Change(_) => {
            state.put(Stored {
                object: object.clone(),
                rv: rec.rv,
            });
        }
        RecordKind::Relist => {}
    }
}

/// Takes a change record back out of `state` (the state just after it).
fn undo(state: &mut State, rec: &RecordRef) {
    let Some(object) = rec.object.as_ref() else {
        return;
    };
    match (rec.prev_rv, rec.prev.as_ref()) {
        (Some(rv), Some(prev)) => {
            state.put(Stored {
                object: prev.clone(),
                rv,
            });
        }
        _ => {
            state.delete(object.key());
        }
    }
}
