//! The profiles: quick, default, full and smoke. A profile is a scale
//! every scenario sizes its own cases by (its
//! [`Scenario::sizes`](crate::scenario::Scenario::sizes)), and the
//! settings every scenario shares: rounds, sizing, consumer threads,
//! which cases and scenarios run. No scenario's size lives here.

use serde::Serialize;

/// A profile's name: what `--profile` takes and what each scenario's
/// sizes are given by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileName {
    /// The main job (`scripts/perf.sh` with no arguments): every scenario
    /// at one size, its headline case only; under five minutes on 2
    /// cores.
    Quick,
    /// The whole suite (`--full`): every scenario at every size, about 35
    /// minutes on 2 cores.
    Default,
    /// The default with longer runs and larger counts.
    Full,
    /// Tiny sizes: the harness's own correctness, in seconds.
    Smoke,
}

impl ProfileName {
    /// Every profile, in the order `--help` lists them.
    pub const ALL: [ProfileName; 4] = [
        ProfileName::Quick,
        ProfileName::Default,
        ProfileName::Full,
        ProfileName::Smoke,
    ];

    /// The name on the command line and in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Quick => "quick",
            ProfileName::Default => "default",
            ProfileName::Full => "full",
            ProfileName::Smoke => "smoke",
        }
    }

    /// The profile of a command-line name.
    pub fn parse(name: &str) -> Option<ProfileName> {
        ProfileName::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for ProfileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every scenario shares at a profile (each scenario's sizes are its
/// own).
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The profile's name.
    pub name: ProfileName,
    /// Consumer threads.
    pub threads: usize,
    /// Check every delivery against its filter.
    pub check_filters: bool,
    /// Consumers use a system's readiness list when it has one.
    pub readiness: bool,
    /// Interleaved rounds per case (each round runs every system once);
    /// rows report the median round and the range.
    pub repeat: usize,
    /// A flat-out case's workload grows (doubling, up to its cap) until a
    /// system's run lasts at least this long (0: no sizing round).
    pub min_seconds: f64,
    /// The sizing round aims a run at this many times `min_seconds` (a
    /// warm run is often faster than the sizing one); doubling the
    /// workload puts a run between this and twice this.
    pub aim: f64,
    /// Feed Herald from its in-memory source in every scenario.
    pub herald_source: bool,
    /// Run each scenario's headline case only (see
    /// [`Scenario::headline`](crate::scenario::Scenario::headline)): the
    /// quick profile.
    pub headline_only: bool,
    /// Run the heavy scenarios (see
    /// [`Scenario::heavy`](crate::scenario::Scenario::heavy)) when no
    /// scenario is named, and the heavy systems of those that run
    /// (http-fanout's `herald-server-tls`); naming a scenario sets it.
    pub heavy: bool,
}

impl Profile {
    /// The shared settings of the profile `name`.
    pub fn of(name: ProfileName) -> Profile {
        match name {
            ProfileName::Quick => Profile::quick(),
            ProfileName::Default => Profile::default_suite(),
            ProfileName::Full => Profile::full(),
            ProfileName::Smoke => Profile::smoke(),
        }
    }

    /// The main job's settings (`scripts/perf.sh` with no arguments):
    /// each scenario's headline case only, 5 interleaved rounds, runs of
    /// a second or more; under five minutes on 2 cores.
    pub fn quick() -> Profile {
        Profile {
            name: ProfileName::Quick,
            // The heavy scenarios (pod-memory, apiserver-fanout,
            // fleet-restart) run only when named.
            heavy: false,
            // Flat-out runs of at least a second, aimed at 1.2 s (1.2-2.4
            // s each, the workload doubling); a round under a second
            // grows that system's next rounds.
            min_seconds: 1.0,
            aim: 1.2,
            headline_only: true,
            ..Profile::default_suite()
        }
    }

    /// Tiny runs: the harness's own correctness, in seconds.
    pub fn smoke() -> Profile {
        Profile {
            name: ProfileName::Smoke,
            threads: 2,
            check_filters: true,
            readiness: true,
            repeat: 2,
            min_seconds: 0.0,
            aim: 1.5,
            herald_source: false,
            headline_only: false,
            heavy: false,
        }
    }

    /// The whole suite (`--full`): every scenario at every size, about 35
    /// minutes on 2 cores.
    pub fn default_suite() -> Profile {
        Profile {
            name: ProfileName::Default,
            threads: 2,
            check_filters: false,
            readiness: true,
            repeat: 5,
            min_seconds: 1.0,
            aim: 1.5,
            herald_source: false,
            headline_only: false,
            heavy: true,
        }
    }

    /// Larger runs (minutes): the default's settings, each scenario's
    /// full sizes.
    pub fn full() -> Profile {
        Profile {
            name: ProfileName::Full,
            ..Profile::default_suite()
        }
    }
}
