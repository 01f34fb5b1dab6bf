//! What a scenario is: the [`Scenario`] trait every file under
//! `scenarios/` implements, and [`Registered`], the form the registry
//! ([`crate::scenarios::ALL`]) holds it in.
//!
//! A scenario owns everything about itself: its sizes at each profile and
//! its command-line flags, which systems it runs, its cases at those
//! sizes (and any environment they need, such as an etcd server), its
//! table, its targets and its headline. The shared harness below it
//! (profiles, rows, rounds, spreads, the [`Runner`]) knows no scenario,
//! and the command line learns each scenario's flags from it.
//!
//! ## Sizes and flags
//!
//! A scenario's [`Scenario::Sizes`] are its own struct, given for each
//! profile by [`Scenario::sizes`]; its [`Scenario::Flags`] are a
//! `clap::Args` struct, applied to its sizes by [`Scenario::apply`], which
//! refuses a value the scenario cannot run (saying which flag and why).
//! Every scenario's flags are parsed and applied before anything runs,
//! whichever scenarios run: a bad value is refused up front. A flag two
//! scenarios share (`--seconds`: latency's and slow-watcher-tax's) is
//! declared by both, alike (one struct, flattened into both): the command
//! line has it once, under both names, and both get its value.

use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::Serialize;

use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{Headline, Target};
use crate::row::Row;
use crate::runner::Runner;

/// One scenario of the suite.
pub trait Scenario: Sync {
    /// How large its cases are: counts, rates, seconds, caps.
    type Sizes: std::fmt::Debug + Serialize;

    /// Its command-line flags ([`NoFlags`] when it has none).
    type Flags: Args;

    /// The name used on the command line, in tables and in the JSON.
    fn name(&self) -> &'static str;

    /// Whether it needs minutes even at its smallest size (it starts a
    /// kube-apiserver per measurement): the profiles without
    /// [`Profile::heavy`](crate::profile::Profile::heavy) (quick, smoke)
    /// run it only when it is named.
    fn heavy(&self) -> bool {
        false
    }

    /// Its sizes at `profile`, before any flag.
    fn sizes(&self, profile: ProfileName) -> Self::Sizes;

    /// Applies its flags to `sizes`; an error (naming the flag) for a
    /// value it cannot run.
    fn apply(&self, flags: Self::Flags, sizes: &mut Self::Sizes) -> anyhow::Result<()>;

    /// The systems it runs, given the runner's choice (`--systems`), the
    /// side ratios are taken for first.
    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind>;

    /// How many rows it will push at `sizes` (for the progress bar).
    fn planned(&self, runner: &Runner<'_>, sizes: &Self::Sizes) -> usize;

    /// Runs its cases at `sizes`, pushing a row per system and case
    /// through [`Runner::push`].
    fn run(&self, runner: &Runner<'_>, sizes: &Self::Sizes, rows: &mut Vec<Row>);

    /// Its table(s) for its rows (Markdown, a `### name` heading first).
    fn table(&self, rows: &[&Row]) -> String;

    /// Its targets, checked against the suite's rows (a target whose case
    /// did not run says so: `met` is None).
    fn targets(&self, _rows: &[Row]) -> Vec<Target> {
        Vec::new()
    }

    /// Its line in the closing headline table: its headline case (the one
    /// size the quick profile runs) from the suite's rows, with its target
    /// judged; None when that case did not run.
    fn headline(&self, rows: &[Row]) -> Option<Headline>;
}

/// The flags of a scenario that has none.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct NoFlags {}

/// A [`Scenario`] as the registry holds it, its sizes' and flags' types
/// out of sight: every scenario is one.
pub trait Registered: Sync {
    /// [`Scenario::name`].
    fn name(&self) -> &'static str;

    /// [`Scenario::heavy`].
    fn heavy(&self) -> bool;

    /// Its flags, as the command line's arguments.
    fn flags(&self) -> Vec<clap::Arg>;

    /// The scenario at `profile`'s sizes with its flags in `matches`
    /// applied (`matches` from a command line with every flag of
    /// [`Registered::flags`] on it: [`with_flags`]).
    fn configure(
        &self,
        profile: ProfileName,
        matches: &ArgMatches,
    ) -> anyhow::Result<Box<dyn Configured + '_>>;

    /// [`Scenario::table`].
    fn table(&self, rows: &[&Row]) -> String;

    /// [`Scenario::targets`].
    fn targets(&self, rows: &[Row]) -> Vec<Target>;

    /// [`Scenario::headline`].
    fn headline(&self, rows: &[Row]) -> Option<Headline>;
}

/// A scenario at its sizes (its profile's, its flags applied): what the
/// suite runs. Made by [`Registered::configure`].
pub trait Configured {
    /// The scenario.
    fn scenario(&self) -> &dyn Registered;

    /// Its sizes, as the JSON records them.
    fn sizes(&self) -> serde_json::Value;

    /// [`Scenario::planned`] at its sizes.
    fn planned(&self, runner: &Runner<'_>) -> usize;

    /// [`Scenario::run`] at its sizes.
    fn run(&self, runner: &Runner<'_>, rows: &mut Vec<Row>);
}

impl<S: Scenario> Registered for S {
    fn name(&self) -> &'static str {
        Scenario::name(self)
    }

    fn heavy(&self) -> bool {
        Scenario::heavy(self)
    }

    fn flags(&self) -> Vec<clap::Arg> {
        // The arguments alone: the group the derive adds, named after the
        // struct, would clash between scenarios. No display order yet: the
        // command line they join gives them theirs.
        S::Flags::augment_args(Command::new(Scenario::name(self)).next_display_order(None))
            .get_arguments()
            .cloned()
            .collect()
    }

    fn configure(
        &self,
        profile: ProfileName,
        matches: &ArgMatches,
    ) -> anyhow::Result<Box<dyn Configured + '_>> {
        let mut sizes = Scenario::sizes(self, profile);
        let flags = S::Flags::from_arg_matches(matches)
            .map_err(|e| anyhow::anyhow!("{}'s flags: {e}", Scenario::name(self)))?;
        self.apply(flags, &mut sizes)?;
        Ok(Box::new(Bound {
            scenario: self,
            sizes,
        }))
    }

    fn table(&self, rows: &[&Row]) -> String {
        Scenario::table(self, rows)
    }

    fn targets(&self, rows: &[Row]) -> Vec<Target> {
        Scenario::targets(self, rows)
    }

    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        Scenario::headline(self, rows)
    }
}

/// A scenario and its sizes.
#[derive(Debug)]
struct Bound<'a, S: Scenario> {
    scenario: &'a S,
    sizes: S::Sizes,
}

impl<S: Scenario> Configured for Bound<'_, S> {
    fn scenario(&self) -> &dyn Registered {
        self.scenario
    }

    fn sizes(&self) -> serde_json::Value {
        serde_json::to_value(&self.sizes).unwrap_or_else(|e| {
            serde_json::Value::String(format!("sizes not written as JSON: {e}"))
        })
    }

    fn planned(&self, runner: &Runner<'_>) -> usize {
        self.scenario.planned(runner, &self.sizes)
    }

    fn run(&self, runner: &Runner<'_>, rows: &mut Vec<Row>) {
        self.scenario.run(runner, &self.sizes, rows);
    }
}

/// A list flag of counts (`--watchers 100,1000`) applied to `into`:
/// unchanged when the flag was not given, refused (naming `flag`) when a
/// count is 0.
pub fn set_counts(flag: &str, given: Vec<usize>, into: &mut Vec<usize>) -> anyhow::Result<()> {
    if given.is_empty() {
        return Ok(());
    }
    anyhow::ensure!(
        given.iter().all(|&n| n > 0),
        "{flag}: each count must be at least 1"
    );
    *into = given;
    Ok(())
}

/// `cmd` with every flag of `scenarios` added, each under a heading that
/// names the scenarios declaring it; a flag several declare is added once.
///
/// # Panics
///
/// If two scenarios declare one flag differently, or a scenario declares
/// one that `cmd` has already (a shared flag): mistakes in a scenario,
/// which the harness's tests meet first.
pub fn with_flags(mut cmd: Command, scenarios: &[&dyn Registered]) -> Command {
    // Each flag once: its argument, its definition, who declares it.
    let mut flags: Vec<(clap::Arg, String, Vec<&'static str>)> = Vec::new();
    for s in scenarios {
        for arg in s.flags() {
            let id = arg.get_id().clone();
            assert!(
                cmd.get_arguments().all(|a| a.get_id() != &id),
                "{}'s flag {id} is one of the shared flags",
                s.name()
            );
            let definition = format!("{arg:?}");
            match flags.iter_mut().find(|(a, ..)| a.get_id() == &id) {
                Some((_, first, by)) => {
                    assert!(
                        *first == definition,
                        "{} and {} declare the flag {id} differently",
                        by.join(", "),
                        s.name()
                    );
                    by.push(s.name());
                }
                None => flags.push((arg, definition, vec![s.name()])),
            }
        }
    }
    for (arg, _, by) in flags {
        cmd = cmd.arg(arg.help_heading(by.join(", ")));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use clap::Arg;

    use super::*;

    /// A registered scenario that only declares flags.
    struct Declares(&'static str, Vec<Arg>);

    impl Registered for Declares {
        fn name(&self) -> &'static str {
            self.0
        }

        fn heavy(&self) -> bool {
            false
        }

        fn flags(&self) -> Vec<Arg> {
            self.1.clone()
        }

        fn configure(
            &self,
            _profile: ProfileName,
            _matches: &ArgMatches,
        ) -> anyhow::Result<Box<dyn Configured + '_>> {
            anyhow::bail!("{} only declares flags", self.0)
        }

        fn table(&self, _rows: &[&Row]) -> String {
            String::new()
        }

        fn targets(&self, _rows: &[Row]) -> Vec<Target> {
            Vec::new()
        }

        fn headline(&self, _rows: &[Row]) -> Option<Headline> {
            None
        }
    }

    fn seconds(help: &'static str) -> Arg {
        Arg::new("seconds").long("seconds").help(help)
    }

    #[test]
    fn a_flag_declared_alike_twice_is_added_once_under_both_names() {
        let a = Declares("a", vec![seconds("seconds per run")]);
        let b = Declares(
            "b",
            vec![Arg::new("rate").long("rate"), seconds("seconds per run")],
        );
        let cmd = with_flags(Command::new("t"), &[&a, &b]);
        cmd.clone().debug_assert();
        let shared: Vec<&Arg> = cmd
            .get_arguments()
            .filter(|x| x.get_id() == "seconds")
            .collect();
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].get_help_heading(), Some("a, b"));
        let m = cmd
            .try_get_matches_from(["t", "--seconds", "3", "--rate", "2"])
            .unwrap();
        assert_eq!(
            m.get_one::<String>("seconds").map(String::as_str),
            Some("3")
        );
    }

    #[test]
    #[should_panic(expected = "declare the flag seconds differently")]
    fn a_flag_declared_two_ways_is_refused() {
        let a = Declares("a", vec![seconds("seconds per run")]);
        let b = Declares("b", vec![seconds("seconds per case")]);
        with_flags(Command::new("t"), &[&a, &b]);
    }

    #[test]
    #[should_panic(expected = "is one of the shared flags")]
    fn a_scenario_cannot_take_a_shared_flag() {
        let a = Declares("a", vec![Arg::new("repeat").long("repeat")]);
        with_flags(
            Command::new("t").arg(Arg::new("repeat").long("repeat")),
            &[&a],
        );
    }
}
