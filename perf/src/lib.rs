//! Herald's load harness as a library: workloads, the shared consumer
//! arrangement, the systems under test (Herald and its peers), the
//! scenarios and their reports. The `herald-perf` binary is its command
//! line.

pub mod alloc;
pub mod consume;
pub mod machine;
pub mod peers;
pub mod report;
pub mod scenarios;
pub mod system;
pub mod workload;
