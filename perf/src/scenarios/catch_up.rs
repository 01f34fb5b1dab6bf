//! catch-up: N watchers register together from a version far back and
//! catch up from history (how far back grown until a run lasts the
//! profile's `min_seconds`, at most 102,400 changes: the reference's ring).

use serde::Serialize;

use crate::kind::SystemKind;
use crate::profile::ProfileName;
use crate::report::{self, Headline, m, spread};
use crate::row::{Metric, Row};
use crate::runner::{Case, Runner, Size, all_match};
use crate::scenario::{NoFlags, Scenario};
use crate::system::Spec;
use crate::workload::Filter;

/// The scenario's name.
pub const NAME: &str = "catch-up";

/// The scenario's sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizes {
    /// Watchers registering together.
    pub watchers: usize,
    /// Changes back they start from, before sizing.
    pub back: usize,
}

/// The scenario.
#[derive(Debug)]
pub struct CatchUp;

impl Scenario for CatchUp {
    type Sizes = Sizes;
    type Flags = NoFlags;

    fn name(&self) -> &'static str {
        NAME
    }

    fn sizes(&self, profile: ProfileName) -> Sizes {
        let (watchers, back) = match profile {
            ProfileName::Quick | ProfileName::Default | ProfileName::Full => (10_000, 1_000),
            ProfileName::Smoke => (100, 100),
        };
        Sizes { watchers, back }
    }

    fn apply(&self, _flags: NoFlags, _sizes: &mut Sizes) -> anyhow::Result<()> {
        Ok(())
    }

    fn systems(&self, runner: &Runner<'_>) -> Vec<SystemKind> {
        runner.systems.clone()
    }

    fn planned(&self, runner: &Runner<'_>, _sizes: &Sizes) -> usize {
        runner.systems.len()
    }

    fn run(&self, runner: &Runner<'_>, sizes: &Sizes, rows: &mut Vec<Row>) {
        let (n, back) = (sizes.watchers, sizes.back);
        // Every change is history when the watchers register; the sizing
        // round grows how far back they start (up to the reference's ring
        // bound), so the catch-up lasts long enough to measure.
        let make = |back: usize| {
            let spec = Spec {
                filters: vec![Filter::All; n],
                indexed: false,
                queue: 100,
                ring: back.max(102_400),
                start: 0,
                preloaded: back,
            };
            (spec, all_match(back))
        };
        let label = format!("{n} watchers from history");
        let opts = runner.opts();
        let size = Size::Grown {
            base: back,
            cap: 102_400,
            make: &make,
        };
        runner.case(rows, Case::new(NAME, &label, &runner.systems, size, &opts));
    }

    fn table(&self, rows: &[&Row]) -> String {
        report::rate_table(NAME, rows)
    }

    /// Its one case (no target).
    fn headline(&self, rows: &[Row]) -> Option<Headline> {
        let case = rows.iter().find(|r| r.scenario == NAME)?.case.clone();
        report::headline_of(
            NAME,
            &report::case_rows(rows, NAME, &case),
            "herald",
            ("M deliveries/s", &|r| spread(r, Metric::DeliveriesPerS, m)),
            ("-".into(), None),
        )
    }
}
