//! Herald's load harness as a library: workloads, the shared consumer
//! arrangement, the systems under test (Herald and its peers; Herald in
//! front of a real etcd and etcd's own watch fan-out; Herald's HTTP front
//! to N connections; the kubelet's object manager against a port of the
//! reference's), the scenarios and
//! their reports. The `herald-perf` binary is its command line.

pub mod alloc;
pub mod consume;
pub mod etcd;
pub mod http;
pub mod kubelet;
pub mod machine;
pub mod peers;
pub mod report;
pub mod scenarios;
pub mod system;
pub mod workload;
