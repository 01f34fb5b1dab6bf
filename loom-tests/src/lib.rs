//! Loom models of Herald's concurrent protocols.
//!
//! The models live in `tests/` and compile only with `--cfg herald_loom`,
//! which also switches the engine's `sync` shim to loom (see
//! `engine/src/sync.rs`). Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg herald_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     CARGO_TARGET_DIR=target/loom cargo test -p herald-loom-tests --release
//! ```
//!
//! Each model has two or three threads and exercises the engine's own code:
//! the ring and the queue through `herald::model`, everything else through
//! the public API on a `FrozenClock` (a clock that never moves).

#[cfg(herald_loom)]
mod harness {
    use std::time::{Duration, Instant};

    /// Runs `f` under loom, every interleaving with at most
    /// `LOOM_MAX_PREEMPTIONS` (default 2) preemptions.
    pub fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(2);
        }
        builder.check(f);
    }

    /// A clock that never moves: time rules (ticks, bookmarks, deadlines)
    /// stay out of the models, which are about ordering. Parking on it is a
    /// plain loom park, so only an explicit unpark wakes the dispatcher.
    #[derive(Debug, Clone, Copy)]
    pub struct FrozenClock(pub Instant);

    impl FrozenClock {
        /// A clock frozen at the present.
        pub fn new() -> FrozenClock {
            FrozenClock(Instant::now())
        }
    }

    impl Default for FrozenClock {
        fn default() -> Self {
            Self::new()
        }
    }

    impl herald::clock::Clock for FrozenClock {
        fn now(&self) -> Instant {
            self.0
        }

        fn park_until(&self, _deadline: Instant, _at_most: Duration) {
            loom::thread::park();
        }
    }
}

#[cfg(herald_loom)]
pub use harness::*;
