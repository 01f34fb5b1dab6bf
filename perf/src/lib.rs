//! Herald's load harness as a library: workloads, the shared consumer
//! arrangement, the systems under test (Herald and its peers; Herald in
//! front of a real etcd and etcd's own watch fan-out; Herald's HTTP front
//! to N connections; the kubelet's object manager against a port of the
//! reference's), the scenarios (one file each under `scenarios/`, behind
//! the [`scenario::Scenario`] trait) and their reports. The `herald-perf`
//! binary is its command line.
//!
//! The layers, each depending only on those above it:
//!
//! - `alloc`, `machine`, `workload`, `system`, `consume`: the counting
//!   allocator, `/proc` readings, workloads, the system interface, the
//!   consumer pool and run driver;
//! - `pods`: realistic pods, as JSON and as the apiserver's protobuf;
//! - `peers/`, `etcd`, `http`, `servers`, `fleet`: the systems;
//! - `kind`, `profile`, `row`, `runner`, `report`, `scenario`: the
//!   shared harness (system names, the profiles' shared settings, rows
//!   and rounds, the interleaved runner, tables and targets, the trait);
//! - `scenarios/`: one file per scenario (its sizes and flags with it),
//!   and the registry.

pub mod alloc;
pub mod apiserver;
pub mod consume;
pub mod etcd;
pub mod fleet;
pub mod http;
pub mod kind;
pub mod machine;
pub mod peers;
pub mod pods;
pub mod profile;
pub mod report;
pub mod row;
pub mod runner;
pub mod scenario;
pub mod scenarios;
pub mod servers;
pub mod system;
pub mod workload;
