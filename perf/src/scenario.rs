//! What a scenario is: the [`Scenario`] trait every file under
//! `scenarios/` implements.
//!
//! A scenario owns everything about itself: which systems it runs, its
//! cases at a profile's sizes (and any environment they need, such as an
//! etcd server), its table, its targets and its headline. The shared
//! harness below it (profiles, rows, rounds, spreads, the
//! [`Runner`]) knows no scenario; the registry
//! ([`crate::scenarios::ALL`]) lists them.

use crate::kind::SystemKind;
use crate::report::{Headline, Target};
use crate::row::Row;
use crate::runner::Runner;

/// One scenario of the suite.
pub trait Scenario: Sync {
    /// The name used on the command line, in tables and in the JSON.
    fn name(&self) -> &'static str;

    /// Whether it needs minutes even at its smallest size (it starts a
    /// kube-apiserver per measurement): the profiles without
    /// [`Profile::heavy`](crate::profile::Profile::heavy) (quick, smoke)
    /// run it only when it is named.
    fn heavy(&self) -> bool {
        false
    }

    /// The systems it runs, given the runner's choice (`--systems`), the
    /// side ratios are taken for first.
    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind>;

    /// How many rows it will push at the runner's profile (for the
    /// progress bar).
    fn planned(&self, runner: &Runner<'_>) -> usize;

    /// Runs its cases at the runner's profile, pushing a row per system
    /// and case through [`Runner::push`].
    fn run(&self, runner: &Runner<'_>, rows: &mut Vec<Row>);

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
