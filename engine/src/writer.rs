//! The facade's other half: [`Writer`], the engine's one writer, and what
//! it is given: a change ([`Writer::apply`]), a batch of them
//! ([`Writer::apply_batch`]), a re-list ([`Writer::replace`] of a
//! [`Relist`], which says whether objects carry their own versions and
//! whether the source went back), progress ([`Writer::progress`]) and the
//! loss of the source ([`Writer::mark_unready`]). Each call validates, then
//! appends under the writer lock through the shared core (`Shared::write`),
//! which waits for the dispatcher only when the ring is full of
//! undispatched changes.

use std::time::Instant;

use crate::dispatch::Slot;
pub use crate::error::WriteError;
use crate::event::{Change, ChangeKind};
use crate::object::{Item, Object};
use crate::ring::{NewRecord, RecordKind, record_bytes};
use crate::rv::ResourceVersion;
use crate::shared::{Attempt, Lifecycle, Shared, VIEW_EVERY, WriterState, Written};
use crate::source::SourceError;
use crate::stats::Counters;
use crate::store::{State, Stored};
use crate::sync::{Arc, Ordering};

/// [`Writer::apply_batch`] refused a change: the changes before it were
/// applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchError {
    /// How many changes were applied (the refused one is the next).
    pub applied: usize,
    /// Why it was refused.
    pub error: WriteError,
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "change {} of the batch: {}", self.applied, self.error)
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A re-list for [`Writer::replace`]: the whole state, at the version the
/// list was taken at, and whether the source's history went back.
///
/// [`Relist::new`] takes objects and gives each the list's version;
/// [`Relist::items`] takes each object with the version of its last
/// change (etcd's `mod_revision`), which watches' initial events, gets
/// and lists then report, as the apiserver does. A list normally moves
/// the engine's version forward (or keeps it); one
/// [`after_regression`](Relist::after_regression) takes it back.
///
/// ```
/// use herald::*;
/// use herald::object::Item;
/// let (engine, mut writer) = Engine::new(Config::default())?;
/// let pod = |name: &str| Object::builder("ns", name).build();
/// writer.replace(Relist::new([pod("a"), pod("b")], 10.into()))?;
/// writer.replace(Relist::items([Item::new(pod("a"), 3.into())], 12.into()))?;
/// writer.replace(Relist::new([pod("a")], 5.into()).after_regression())?;
/// assert_eq!((engine.resource_version().get(), engine.generation()), (5, 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a re-list does nothing until it is given to Writer::replace"]
pub struct Relist<I> {
    items: I,
    rv: ResourceVersion,
    direction: Direction,
}

/// Which way a re-list may move the engine's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Not below the engine's.
    Forward,
    /// Below it ([`Relist::after_regression`]).
    Back,
}

impl<O: Iterator<Item = Object>> Relist<Stamped<O>> {
    /// A list of `objects` at `rv`, each at `rv` too (for a source without
    /// a version per object; [`Relist::items`] keeps each object's own).
    ///
    /// ```
    /// use herald::*;
    /// use herald::read::ReadAt;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 5.into()))?;
    /// let a = engine.get("ns/a", ReadAt::Any)?;
    /// assert_eq!(a.item.unwrap().resource_version.get(), 5);
    /// writer.replace(Relist::new([], 6.into()))?; // empty: nothing left
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(objects: impl IntoIterator<IntoIter = O>, rv: ResourceVersion) -> Self {
        Relist {
            items: Stamped {
                objects: objects.into_iter(),
                rv,
            },
            rv,
            direction: Direction::Forward,
        }
    }
}

impl<I: Iterator<Item = Item>> Relist<I> {
    /// A list of `items` at `rv`, each object at its own version: the
    /// version of its last change (etcd's `mod_revision`), which must be
    /// at most `rv` ([`WriteError::ItemAhead`] refuses the whole list
    /// otherwise). The [`Reflector`](crate::reflector::Reflector) re-lists this way.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::object::Item;
    /// # use herald::read::ReadAt;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// let pod = |name: &str| Object::builder("ns", name).build();
    /// writer.replace(Relist::items([Item::new(pod("a"), 3.into()), Item::new(pod("b"), 9.into())], 12.into()))?;
    /// let a = engine.get("ns/a", ReadAt::Any)?;
    /// assert_eq!((a.resource_version.get(), a.item.unwrap().resource_version.get()), (12, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn items(items: impl IntoIterator<IntoIter = I>, rv: ResourceVersion) -> Self {
        Relist {
            items: items.into_iter(),
            rv,
            direction: Direction::Forward,
        }
    }

    /// This list follows a source whose history went back (an etcd
    /// restored from a backup without `--bump-revision`): its version must
    /// be *older* than the engine's, since the versions after it that the
    /// engine has seen belong to a history that no longer exists. A list
    /// without it refuses to go back ([`WriteError::OutOfOrder`]), to
    /// guard against careless writers; this is the deliberate way
    /// through, as the reference's reflector, which re-lists into the
    /// watch cache whatever the version (seeds/004 `Replace`).
    ///
    /// As any re-list it starts a new generation and ends every watch
    /// with [`EndReason::Relisted`](crate::EndReason::Relisted) (so each
    /// client re-lists too); the history ring restarts empty at the list's
    /// version, so a watch or an exact read from an older version is
    /// `Gone`, a continue token of the old generation is `Gone`, and a
    /// watch or read waiting for a version the old history had reached
    /// waits for the new history to reach it. The engine's version goes
    /// back to the list's.
    ///
    /// Refused, changing nothing: before the first list
    /// ([`WriteError::NotReady`]: there is nothing to go back from), with a
    /// version not older than the engine's ([`WriteError::NotARegression`]:
    /// leave this out), after a stop ([`WriteError::Stopped`]).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::read::ListRequest;
    /// # use herald::writer::WriteError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 20.into()))?;
    /// let mut watch = engine.watch(WatchRequest::new())?;
    /// // The source was restored to a backup taken at version 12.
    /// writer.replace(Relist::new([Object::builder("ns", "b").build()], 12.into()).after_regression())?;
    /// assert_eq!((engine.resource_version().get(), engine.generation()), (12, 2));
    /// assert_eq!(engine.list(&ListRequest::new())?.items[0].object.name(), "b");
    /// // Whatever it had received of the old state, the watch has ended.
    /// let last = std::iter::from_fn(|| watch.recv()).last();
    /// assert_eq!(last, Some(WatchItem::End(EndReason::Relisted)));
    /// assert_eq!(
    ///     writer.replace(Relist::new([], 12.into()).after_regression()),
    ///     Err(WriteError::NotARegression { given: 12.into(), current: 12.into() })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn after_regression(mut self) -> Self {
        self.direction = Direction::Back;
        self
    }
}

/// The objects of a [`Relist::new`], each at the list's version.
#[derive(Debug, Clone)]
pub struct Stamped<O> {
    objects: O,
    rv: ResourceVersion,
}

impl<O: Iterator<Item = Object>> Iterator for Stamped<O> {
    type Item = Item;

    #[inline]
    fn next(&mut self) -> Option<Item> {
        self.objects.next().map(|object| Item::new(object, self.rv))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.objects.size_hint()
    }
}

/// The one writer of an engine: applies changes, re-lists and progress, in
/// resource-version order. Refused calls return a typed error and change
/// nothing.
#[derive(Debug)]
pub struct Writer {
    shared: Arc<Shared>,
    /// The dispatcher's state, to fan changes out on this thread
    /// ([`Config::inline_dispatch`](crate::Config::inline_dispatch)).
    inline: Option<Slot>,
}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>, inline: Option<Slot>) -> Writer {
        Writer { shared, inline }
    }

    /// After a change is in the ring: fans it out here if inline dispatch
    /// is on and the dispatcher's state is free, else (or if something is
    /// left for it) wakes the dispatcher.
    fn dispatch(&self) {
        if !self.inline.as_ref().is_some_and(Slot::dispatch_inline) {
            self.shared.wake_dispatcher();
        }
    }

    /// Applies one change. Its resource version must be greater than the
    /// engine's; the previous state is taken from the engine's store. An
    /// object whose name or namespace is not a valid path segment is
    /// refused ([`WriteError::InvalidName`], see [`Object`'s names](Object#names)).
    ///
    /// A deletion of a key the engine does not hold is delivered to no
    /// watcher and leaves no history: it advances the version as
    /// [`Writer::progress`] does (the reference's behaviour; see the crate
    /// docs' differences).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::writer::WriteError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// let a = Object::builder("ns", "a").build();
    /// assert_eq!(writer.apply(Change::added(a.clone(), 1.into())), Err(WriteError::NotReady));
    /// writer.replace(Relist::new([], 1.into()))?;
    /// writer.apply(Change::added(a.clone(), 2.into()))?;
    /// assert_eq!(
    ///     writer.apply(Change::modified(a, 2.into())),
    ///     Err(WriteError::OutOfOrder { given: 2.into(), current: 2.into() })
    /// );
    /// // A deletion of a key it never held: no event, the version moves.
    /// writer.apply(Change::deleted(Object::builder("ns", "ghost").build(), 3.into()))?;
    /// assert_eq!(engine.resource_version().get(), 3);
    /// assert_eq!(engine.stats().progress_updates, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply(&mut self, change: Change) -> Result<(), WriteError> {
        self.apply_then(change, true)
    }

    /// Applies `changes` in order, as that many [`Writer::apply`] calls
    /// would, but wakes the engine's dispatcher once (or, with
    /// [`Config::inline_dispatch`](crate::Config::inline_dispatch), fans
    /// out once), after the last, not after each (a source that receives
    /// changes in batches, as a reflector does from etcd, saves a wake-up
    /// per change). It also takes the writer's lock, and the clock's
    /// reading each history record carries, once per run of up to 64
    /// changes rather than per change (readers get the lock between runs).
    /// It stops at the first change refused: the changes before it are
    /// applied, and the error says how many.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 1.into()))?;
    /// let a = Object::builder("ns", "a").build();
    /// writer.apply_batch([
    ///     Change::added(a.clone(), 2.into()),
    ///     Change::modified(a.clone(), 3.into()),
    /// ])?;
    /// assert_eq!(engine.resource_version().get(), 3);
    /// let refused = writer.apply_batch([
    ///     Change::modified(a.clone(), 4.into()),
    ///     Change::modified(a, 4.into()),
    /// ]);
    /// assert_eq!(refused.unwrap_err().applied, 1);
    /// assert_eq!(engine.resource_version().get(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply_batch(
        &mut self,
        changes: impl IntoIterator<Item = Change>,
    ) -> Result<(), BatchError> {
        let shared = &*self.shared;
        let (applied, result) = shared.write_many(changes, |st, dispatched, change, at| {
            check_names(change.object())?;
            let (kind, object, rv) = (change.kind(), change.object(), change.resource_version());
            apply_locked(shared, st, dispatched, kind, object, rv, at)
        });
        if applied > 0 {
            self.dispatch();
        }
        result.map_err(|error| BatchError { applied, error })
    }

    fn apply_then(&mut self, change: Change, wake: bool) -> Result<(), WriteError> {
        let (kind, object, rv) = change.into_parts();
        check_names(&object)?;
        let shared = &*self.shared;
        let mut recorded = false;
        shared.write_quiet(|st, dispatched| {
            let at = shared.config.clock.now();
            let written = apply_locked(shared, st, dispatched, kind, &object, rv, at)?;
            recorded = written.recorded;
            Ok(written.resize)
        })?;
        if recorded {
            Counters::add(&shared.counters.changes_received, 1);
        }
        if wake {
            self.dispatch();
        }
        Ok(())
    }

    /// Replaces the whole state with a re-list (see [`Relist`]). Its
    /// version must not be older than the engine's (unless it is
    /// [after a regression](Relist::after_regression), when it must be
    /// older). The first call makes the engine ready; every later call ends
    /// every watch with [`EndReason::Relisted`](crate::EndReason::Relisted)
    /// and starts a new generation. Objects with the same key: the last
    /// wins. One object with an invalid name refuses the whole list
    /// ([`WriteError::InvalidName`]), as does one newer than the list
    /// ([`WriteError::ItemAhead`]).
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::engine::Lifecycle;
    /// # use herald::writer::WriteError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 5.into()))?;
    /// assert_eq!((engine.lifecycle(), engine.generation()), (Lifecycle::Ready, 1));
    /// assert_eq!(engine.resource_version().get(), 5);
    /// assert_eq!(
    ///     writer.replace(Relist::new([], 4.into())),
    ///     Err(WriteError::OutOfOrder { given: 4.into(), current: 5.into() })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace<I: Iterator<Item = Item>>(&mut self, list: Relist<I>) -> Result<(), WriteError> {
        self.relist(list.items, list.rv, list.direction)
    }

    /// Every re-list, forward or back, with or without the objects' own
    /// versions.
    fn relist(
        &mut self,
        items: impl Iterator<Item = Item>,
        rv: ResourceVersion,
        direction: Direction,
    ) -> Result<(), WriteError> {
        let shared = &*self.shared;
        let mut store = State::new(shared.list_fields.clone());
        for Item {
            object,
            resource_version,
        } in items
        {
            check_names(&object)?;
            if resource_version > rv {
                return Err(WriteError::ItemAhead {
                    key: capped(object.key()),
                    item: resource_version,
                    list: rv,
                });
            }
            store.put(Stored::new(object, resource_version));
        }
        shared.write(|st, dispatched| {
            if shared.lifecycle() == Lifecycle::Stopped {
                return Err(WriteError::Stopped.into());
            }
            // Listed before (ready, or fallen back to pending since).
            let listed = st.generation > 0;
            let out_of_order = match direction {
                Direction::Forward if listed && rv < st.rv => WriteError::OutOfOrder {
                    given: rv,
                    current: st.rv,
                },
                Direction::Back if !listed => WriteError::NotReady,
                Direction::Back if rv >= st.rv => WriteError::NotARegression {
                    given: rv,
                    current: st.rv,
                },
                // A clone of a persistent map: O(1), once per attempt.
                _ => return shared.relist_locked(st, store.clone(), rv, dispatched),
            };
            Err(out_of_order.into())
        })
    }

    /// Says the engine lost its source: the lifecycle falls back to
    /// [`Lifecycle::Pending`] until the next re-list (`replace`, which
    /// makes it ready again). Meanwhile reads that need a fresh cache
    /// ([`ReadAt::Any`](crate::read::ReadAt::Any), and waits that time out) fail
    /// with [`ReadError::NotReady`](crate::read::ReadError::NotReady), carrying
    /// a retry-after hint and `cause`; new watches wait for the re-list;
    /// running watches keep running and are told nothing false (no event
    /// is invented; the re-list ends them with `Relisted`); changes and
    /// progress are refused ([`WriteError::NotReady`]). The
    /// [`Reflector`](crate::reflector::Reflector) calls it while it has neither a
    /// list nor a watch (the source down, a re-list failing). Refused only
    /// after a stop.
    ///
    /// ```
    /// # use herald::*;
    /// # use herald::engine::Lifecycle;
    /// # use herald::read::{ReadAt, ReadError};
    /// # use herald::source::SourceError;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 5.into()))?;
    /// writer.mark_unready(SourceError::Unavailable("etcd: connection refused".into()))?;
    /// assert_eq!(engine.lifecycle(), Lifecycle::Pending);
    /// let Err(ReadError::NotReady(why)) = engine.get("ns/a", ReadAt::Any) else { panic!() };
    /// assert_eq!(why.cause(), Some(&SourceError::Unavailable("etcd: connection refused".into())));
    /// writer.replace(Relist::new([Object::builder("ns", "a").build()], 7.into()))?;
    /// assert_eq!(engine.lifecycle(), Lifecycle::Ready);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mark_unready(&mut self, cause: SourceError) -> Result<(), WriteError> {
        self.shared.mark_unready(cause)
    }

    /// Advances the resource version with no change (a progress
    /// notification). A version equal to the engine's is a no-op.
    ///
    /// ```
    /// # use herald::*;
    /// let (engine, mut writer) = Engine::new(Config::default())?;
    /// writer.replace(Relist::new([], 5.into()))?;
    /// writer.progress(9.into())?;
    /// assert_eq!(engine.resource_version().get(), 9);
    /// assert!(writer.progress(8.into()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn progress(&mut self, rv: ResourceVersion) -> Result<(), WriteError> {
        let mut st = self.shared.lock_state();
        self.shared.check_ready()?;
        if rv < st.rv {
            return Err(WriteError::OutOfOrder {
                given: rv,
                current: st.rv,
            });
        }
        if rv > st.rv {
            st.rv = rv;
            self.shared.current_rv.store(rv.get(), Ordering::Release);
            Counters::add(&self.shared.counters.progress_updates, 1);
            drop(st);
            self.shared.wake_dispatcher();
        }
        Ok(())
    }
}

/// One change under the writer lock, at `at` (the clock's reading, which
/// a batch takes once per run): its checks, the history record, the
/// store's update. `recorded`: a record was written (a deletion of a key
/// the cache never held writes none).
#[inline]
fn apply_locked(
    shared: &Shared,
    st: &mut WriterState,
    dispatched: u64,
    kind: ChangeKind,
    object: &Object,
    rv: ResourceVersion,
    at: Instant,
) -> Result<Written, Attempt> {
    shared.check_ready()?;
    if rv <= st.rv {
        return Err(WriteError::OutOfOrder {
            given: rv,
            current: st.rv,
        }
        .into());
    }
    let bytes = record_bytes(Some(object));
    let deleted = kind == ChangeKind::Deleted;
    let (resize, prev, prev_rv) = if deleted {
        let Some(stored) = st.store.get(object.key()) else {
            // A key the cache never held: no watcher can have seen the
            // object, so none is told of its deletion; the version moves
            // as with progress (the reference: a deletion with no previous
            // object passes no filter, seeds/000 convertToWatchEvent).
            st.rv = rv;
            shared.current_rv.store(rv.get(), Ordering::Release);
            Counters::add(&shared.counters.progress_updates, 1);
            return Ok(Written {
                resize: None,
                recorded: false,
            });
        };
        // docs/semantics.md §1.3: a deletion's previous object is its last
        // state.
        let (prev, prev_rv) = (stored.object.clone(), stored.rv);
        let resize = st.ring.prepare(bytes, at, dispatched)?;
        (resize, Some(prev), Some(prev_rv))
    } else {
        // Room first (the one step that may refuse: `Gated`), then the
        // store's update, whose old entry is the previous state (one walk
        // of the store, not a look-up and then an insertion), then the
        // record, which cannot fail.
        let resize = st.ring.prepare(bytes, at, dispatched)?;
        let old = st.store.put(Stored::new(object.clone(), rv));
        let (prev, prev_rv) = old.map(|e| (e.object, e.rv)).unzip();
        (resize, prev, prev_rv)
    };
    let new = NewRecord {
        kind: RecordKind::Change(kind),
        rv,
        object: Some(object.clone()),
        prev,
        prev_rv,
        generation: st.generation,
    };
    st.ring.push(new, at, bytes);
    if deleted {
        st.store.delete(object.key());
    }
    st.rv = rv;
    st.since_view += 1;
    if st.since_view >= VIEW_EVERY && shared.view_wanted.load(Ordering::Relaxed) {
        shared.publish_view(st);
    }
    shared.current_rv.store(rv.get(), Ordering::Release);
    Ok(Written {
        resize,
        recorded: true,
    })
}

/// Refuses an object whose namespace or name fails the path-segment rule
/// (see [Names](Object#names)).
fn check_names(object: &Object) -> Result<(), WriteError> {
    match object.invalid_name() {
        None => Ok(()),
        Some((part, value, rule)) => Err(WriteError::InvalidName {
            part,
            value: capped(value),
            rule,
        }),
    }
}

/// The most of a refused value an error repeats.
const ECHO_MAX: usize = 128;

/// `value`, cut to at most [`ECHO_MAX`] bytes on a character boundary.
fn capped(value: &str) -> String {
    if value.len() <= ECHO_MAX {
        return value.to_owned();
    }
    let mut end = ECHO_MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    value[..end].to_owned()
}
