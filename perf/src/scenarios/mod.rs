//! The scenarios, one file each, and the registry: [`ALL`], the one list
//! of them. A new scenario is a file here implementing
//! [`Scenario`](crate::scenario::Scenario) (its sizes at each profile and
//! its flags with it) and a line in [`ALL`] (and its `mod` line): the
//! command line, `--help`, the profiles and the JSON learn of it from
//! there.
//!
//! Each file depends on the shared harness only (profiles, rows, the
//! runner, the report's cells, the systems), and on another scenario's
//! file for what they share (http-fanout's etcd flags are etcd-fanout's;
//! `--seconds` is latency's and slow-watcher-tax's); nothing shared
//! depends on a scenario.

use crate::scenario::Registered;

pub mod apiserver_fanout;
pub mod catch_up;
pub mod etcd_fanout;
pub mod fanout_all;
pub mod fanout_indexed;
pub mod fleet_restart;
pub mod http_fanout;
pub mod kubelet;
pub mod latency;
pub mod memory;
pub mod pod_memory;
pub mod slow_watcher_tax;

/// Every scenario, in suite order.
pub const ALL: [&dyn Registered; 12] = [
    &fanout_all::FanoutAll,
    &fanout_indexed::FanoutIndexed,
    &slow_watcher_tax::SlowWatcherTax,
    &catch_up::CatchUp,
    &latency::Latency,
    &memory::Memory,
    &etcd_fanout::EtcdFanout,
    &http_fanout::HttpFanout,
    &kubelet::Kubelet,
    &pod_memory::PodMemory,
    &apiserver_fanout::ApiserverFanout,
    &fleet_restart::FleetRestart,
];

/// The scenario of a command-line name.
pub fn find(name: &str) -> Option<&'static dyn Registered> {
    ALL.into_iter().find(|s| s.name() == name)
}

/// Every scenario's name, comma-separated (for messages).
pub fn names() -> String {
    ALL.map(|s| s.name()).join(", ")
}
