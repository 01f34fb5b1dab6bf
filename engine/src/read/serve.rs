//! How a read is served: which state it reads (the published view,
//! replayed forward or back through the ring, or the writer's state under
//! its lock), how it waits for a version, and the get and the list
//! themselves. See the module above for the rules.

use std::time::Duration;

use super::error::{InvalidContinue, NotReady, ReadError};
use super::request::{GetResponse, ListRequest, ListResponse, ReadAt, ReadCancel};
use super::token::Continue;
use crate::event::{ChangeKind, Gone, TooLargeResourceVersion};
use crate::filter::Filter;
use crate::object::Item;
use crate::options::OptionsError;
use crate::ring::{RecordKind, RecordRef};
use crate::rv::ResourceVersion;
use crate::shared::{Lifecycle, Shared, VIEW_EVERY, View};
use crate::store::{State, Stored};
use crate::sync::{Arc, Ordering};

/// A view more than this many records behind is not replayed: the reader
/// clones the writer's state under its lock instead (see the module docs).
const MAX_LAG: u64 = 256;

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
    fn read_state(&self, at: ReadAt, cancel: Option<&ReadCancel>) -> Result<Read, ReadError> {
        match at {
            ReadAt::Any => self.present(),
            ReadAt::Latest => match self.most_recent()? {
                Some(rv) => self.read_state(ReadAt::NotOlderThan(rv), cancel),
                None => self.present(),
            },
            // Loops only if the history went back during the wait (see
            // Snapshots).
            ReadAt::NotOlderThan(rv) => loop {
                self.wait_for(rv, cancel)?;
                let read = self.present()?;
                if read.rv >= rv {
                    return Ok(read);
                }
            },
            ReadAt::Exact(rv) => loop {
                self.wait_for(rv, cancel)?;
                if let Some(read) = self.exactly(rv, None)? {
                    return Ok(read);
                }
            },
        }
    }

    /// A consistent list served from the source itself (its progress
    /// cannot be trusted; [`crate::source::Source::progress_is_reliable`]), as a
    /// state at the source's revision in the engine's generation; also a
    /// list not older than a version the cache has not reached (the cache
    /// would wait for progress that does not come), when the source's
    /// revision is at least that version, and a list exactly at such a
    /// version, when the source can read it ([`crate::source::Source::list_at`]).
    fn list_through(
        &self,
        at: ReadAt,
        cancel: Option<&ReadCancel>,
    ) -> Result<Option<Read>, ReadError> {
        let ahead = |rv: ResourceVersion| rv.get() > self.current_rv.load(Ordering::Acquire);
        let (at_least, exact) = match at {
            ReadAt::Latest => (None, None),
            ReadAt::NotOlderThan(rv) if ahead(rv) => (Some(rv), None),
            ReadAt::Exact(rv) if ahead(rv) => (None, Some(rv)),
            _ => return Ok(None),
        };
        let Some(upstream) = self.upstream().filter(|u| u.reads_through()) else {
            return Ok(None);
        };
        // As any consistent read: a cache not yet listed is waited for.
        self.wait_for(ResourceVersion::new(0), cancel)?;
        let listing = match exact {
            None => upstream.list_through()?,
            Some(rv) => match upstream.list_at_through(rv)? {
                Some(listing) if listing.revision == rv => listing,
                // The source cannot read the past: waited for as the
                // cache waits, then too large.
                _ => return Ok(None),
            },
        };
        if at_least.is_some_and(|rv| listing.revision < rv) {
            // A version the source has not reached either: waited for as
            // the cache waits, then too large.
            return Ok(None);
        }
        let mut state = State::new(self.list_fields.clone());
        for item in listing.items {
            state.put(Stored::new(item.object, item.resource_version));
        }
        Ok(Some(Read {
            state,
            rv: listing.revision,
            generation: self.view.load().generation,
        }))
    }

    /// Waits until the cache has reached `rv`, up to the too-large timeout
    /// on the engine's clock, or until `cancel` is cancelled. It looks
    /// again every [`WAIT_STEP`] (or when the clock moves): readers cost
    /// the writer nothing, and a cancel is seen within a step.
    fn wait_for(&self, rv: ResourceVersion, cancel: Option<&ReadCancel>) -> Result<(), ReadError> {
        let clock = &self.config.clock;
        // A timeout past the clock's range (`Duration::MAX`) waits for ever.
        let deadline = crate::clock::later(clock.now(), self.config.too_large_timeout);
        // Counted while it waits: a reflector asks its source for progress.
        let _waiting = self.waiting_read();
        loop {
            if cancel.is_some_and(ReadCancel::is_cancelled) {
                return Err(ReadError::Cancelled);
            }
            // A cache not yet listed is waited for too (it is about to
            // be fresh); it is `NotReady` only if it stays so.
            let pending = match self.check_readable() {
                Err(ReadError::NotReady(_)) => true,
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
                    ReadError::NotReady(self.not_ready())
                } else {
                    ReadError::TooLargeResourceVersion(TooLargeResourceVersion::new(rv, current))
                });
            }
            let until = deadline.or_else(|| crate::clock::later(now, WAIT_STEP));
            clock.park_until(until.unwrap_or(now), WAIT_STEP);
        }
    }

    fn check_readable(&self) -> Result<(), ReadError> {
        match self.lifecycle() {
            Lifecycle::Pending => Err(ReadError::NotReady(self.not_ready())),
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

    pub(crate) fn get(
        &self,
        key: &str,
        at: ReadAt,
        cancel: Option<&ReadCancel>,
    ) -> Result<GetResponse, ReadError> {
        match at {
            ReadAt::Any => self.get_present(key),
            ReadAt::Latest => {
                if let Some(u) = self.upstream().filter(|u| u.reads_through()) {
                    // As any consistent read: a cache not yet listed is
                    // waited for.
                    self.wait_for(ResourceVersion::new(0), cancel)?;
                    let (item, resource_version) = u.get_through(key)?;
                    return Ok(GetResponse {
                        item,
                        resource_version,
                    });
                }
                match self.most_recent()? {
                    Some(rv) => self.get(key, ReadAt::NotOlderThan(rv), cancel),
                    None => self.get_present(key),
                }
            }
            ReadAt::NotOlderThan(rv) => loop {
                self.wait_for(rv, cancel)?;
                let got = self.get_present(key)?;
                if got.resource_version >= rv {
                    return Ok(got);
                }
            },
            ReadAt::Exact(_) => {
                let read = self.read_state(at, cancel)?;
                Ok(GetResponse {
                    item: read.state.get(key).map(item_of),
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
                None => view.state.get(key).map(item_of),
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
        // back (`Relist::after_regression`): its history is gone.
        let mut reached = ResourceVersion::new(self.current_rv.load(Ordering::Acquire));
        if token.rv > reached {
            // The writer publishes a record before it stores its version,
            // and a page served by a replay names the newest record it
            // applied: its token may be ahead of `current_rv` for a moment.
            // What a read of the present reaches now is the bound.
            if let Ok((read, _)) = self.replay_present() {
                reached = reached.max(read.rv);
            }
        }
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
        let mut through = false;
        let (read, after) = match &req.continue_from {
            Some(token) => {
                if !matches!(req.at, ReadAt::Any | ReadAt::Latest) {
                    let rule = OptionsError::ContinueWithResourceVersion;
                    return Err(ReadError::InvalidOptions(rule));
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
            None => match self.list_through(req.at, req.cancel.as_ref())? {
                // Read whole from the source: the limit is not applied
                // (as the reference's cache with `resourceVersion=0`).
                Some(read) => {
                    through = true;
                    (read, None)
                }
                None => (self.read_state(req.at, req.cancel.as_ref())?, None),
            },
        };
        let filter = Filter::new(
            req.scope.clone(),
            req.labels.clone(),
            req.fields.clone(),
            req.shard.clone(),
        );
        let limit = if req.limit == 0 || through {
            usize::MAX
        } else {
            req.limit
        };
        let mut items = Vec::new();
        let mut more = false;
        let mut remaining_item_count = None;
        let mut candidates = read
            .state
            .candidates(&req.scope, &req.fields, after)
            .filter(|e| filter.admits(&e.object));
        for e in candidates.by_ref() {
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(item_of(e));
        }
        if more
            && req.labels.is_everything()
            && req.fields.is_everything()
            && req.shard.is_everything()
        {
            // The one that did not fit, and the rest (the reference's
            // cacher counts the items after the page's start the same
            // way: `len(resp.Items) - limit`).
            remaining_item_count = Some(1 + candidates.count() as u64);
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
            remaining_item_count,
            shard: (!req.shard.is_everything()).then(|| req.shard.clone()),
        })
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
            state.put(Stored::new(object.clone(), rec.rv));
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
            state.put(Stored::new(prev.clone(), rv));
        }
        _ => {
            state.delete(object.key());
        }
    }
}

/// A stored entry as a read returns it.
fn item_of(e: &Stored) -> Item {
    Item::new(e.object.clone(), e.rv)
}

impl Shared {
    /// What a read is told while the engine is `Pending`.
    fn not_ready(&self) -> NotReady {
        NotReady::new(self.unready_cause())
    }
}
