//! Engines: new, stop, free, their version and stats; the engine and
//! writer registries.

use std::sync::{Arc, Mutex};

use herald::{Config, Engine, Writer};

use crate::args::*;
use crate::data::*;
use crate::handles::{Kind, Registry};
use crate::status::*;

pub(crate) static ENGINES: Registry<Engine> = Registry::new(Kind::Engine);
pub(crate) static WRITERS: Registry<Mutex<Writer>> = Registry::new(Kind::Writer);

pub(crate) fn engine(h: HeraldEngine) -> Result<Arc<Engine>, Error> {
    ENGINES.get(h).map_err(|w| stale("engine", h, w))
}

/// The history's lower bound by default (`Config`'s, the reference's
/// `defaultLowerBoundCapacity`).
const DEFAULT_HISTORY_LOWER: usize = 100;

/// Creates an engine and its one writer. `config` may be null (the
/// defaults). As [`herald_engine_new_flags`] with no flags.
///
/// # Safety
/// `config` is null or points to a readable [`HeraldConfig`] whose
/// `indexed_fields` are valid as [`HeraldStr`] requires; `engine_out` and
/// `writer_out` are null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_new(
    config: *const HeraldConfig,
    engine_out: *mut HeraldEngine,
    writer_out: *mut HeraldWriter,
) -> HeraldStatus {
    // SAFETY: the same contract.
    unsafe { herald_engine_new_flags(config, 0, engine_out, writer_out) }
}

/// The flags [`herald_engine_new_flags`] knows.
const KNOWN_ENGINE_FLAGS: u32 = HERALD_ENGINE_INLINE_DISPATCH;

/// Creates an engine and its one writer, as [`herald_engine_new`], with
/// `HERALD_ENGINE_*` flags ([`HERALD_ENGINE_INLINE_DISPATCH`]); 0 is
/// [`herald_engine_new`]. An unknown flag is [`HERALD_E_INVALID`].
/// (A function of its own, not a field of [`HeraldConfig`]: that struct
/// is not versioned, and a caller built against a header without the
/// field would pass a shorter one.)
///
/// # Safety
/// As [`herald_engine_new`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_new_flags(
    config: *const HeraldConfig,
    flags: u32,
    engine_out: *mut HeraldEngine,
    writer_out: *mut HeraldWriter,
) -> HeraldStatus {
    guard(|| {
        if engine_out.is_null() || writer_out.is_null() {
            return Err(Error::null("engine_out or writer_out"));
        }
        if flags & !KNOWN_ENGINE_FLAGS != 0 {
            return Err(Error::invalid(format!(
                "unknown engine flags {:#x}",
                flags & !KNOWN_ENGINE_FLAGS
            )));
        }
        let mut c = Config::default().inline_dispatch(flags & HERALD_ENGINE_INLINE_DISPATCH != 0);
        // SAFETY: `config` is null or a HeraldConfig (the docs).
        if let Some(cfg) = unsafe { config.as_ref() } {
            // SAFETY: its array holds `indexed_fields_len` strings.
            for f in unsafe { items(cfg.indexed_fields, cfg.indexed_fields_len, "indexed_fields")? }
            {
                // SAFETY: each a HeraldStr (the docs).
                c = c.index(unsafe { text(*f, "an indexed field") }?);
            }
            if cfg.history_lower > 0 || cfg.history_upper > 0 {
                // The engine's defaults (Config's docs): lower 100, upper
                // from the window. Engine::new checks the bounds.
                let lower = match cfg.history_lower {
                    0 => DEFAULT_HISTORY_LOWER.min(cfg.history_upper.max(1)),
                    n => n,
                };
                let upper = match cfg.history_upper {
                    0 => c.history_upper().max(lower),
                    n => n,
                };
                c = c.history_bounds(lower, upper);
            }
        }
        let (e, w) = Engine::new(c).map_err(Error::invalid)?;
        let (e, w) = (ENGINES.insert(e), WRITERS.insert(Mutex::new(w)));
        // SAFETY: both checked non-null above; C gives writable slots.
        unsafe {
            engine_out.write(e);
            writer_out.write(w);
        }
        Ok(HERALD_OK)
    })
}

/// Stops the engine: watches end with [`HERALD_END_ENGINE_STOPPED`],
/// writes fail with [`HERALD_E_STOPPED`]. The handle stays valid.
#[unsafe(no_mangle)]
pub extern "C" fn herald_engine_stop(engine_h: HeraldEngine) -> HeraldStatus {
    guard(|| {
        engine(engine_h)?.stop();
        Ok(HERALD_OK)
    })
}

/// Frees the engine's handle (the engine runs on while its writer or
/// watches hold it; stop it first to end them).
#[unsafe(no_mangle)]
pub extern "C" fn herald_engine_free(engine_h: HeraldEngine) -> HeraldStatus {
    guard(|| {
        ENGINES
            .remove(engine_h)
            .map_err(|w| stale("engine", engine_h, w))?;
        Ok(HERALD_OK)
    })
}

/// The engine's resource version: the last it applied.
///
/// # Safety
/// `out` is null or points to a writable `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_resource_version(
    engine_h: HeraldEngine,
    out: *mut u64,
) -> HeraldStatus {
    guard(|| {
        let rv = engine(engine_h)?.resource_version().get();
        // SAFETY: `out` is null or writable (the docs).
        unsafe { put(out, rv, "out") }?;
        Ok(HERALD_OK)
    })
}

/// The engine's counters.
///
/// # Safety
/// `out` is null or points to a writable [`HeraldStats`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_stats(
    engine_h: HeraldEngine,
    out: *mut HeraldStats,
) -> HeraldStatus {
    guard(|| {
        let s = engine(engine_h)?.stats();
        let stats = HeraldStats {
            changes_received: s.changes_received,
            deliveries: s.deliveries,
            watches_started: s.watches_started,
            watchers_active: s.watchers_active,
            relists: s.relists,
        };
        // SAFETY: `out` is null or writable (the docs).
        unsafe { put(out, stats, "out") }?;
        Ok(HERALD_OK)
    })
}
