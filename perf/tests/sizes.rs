//! Every scenario's sizes at every profile, and the profiles' shared
//! settings, pinned: the headline table and the figures under
//! `docs/perf/` stay comparable only while these hold. Changing a size is
//! a decision to make here, in the open, with the figures it moves.

use herald_perf::profile::{Profile, ProfileName};
use herald_perf::scenario::Scenario;
use herald_perf::scenarios::*;

/// The profiles, by name.
const PROFILES: [&str; 4] = ["quick", "default", "full", "smoke"];

fn profile(name: &str) -> Profile {
    Profile::of(at(name))
}

fn at(name: &str) -> ProfileName {
    ProfileName::parse(name).unwrap_or_else(|| panic!("no profile {name}"))
}

/// Pairs each profile with its row of a table (in [`PROFILES`] order).
fn each<T>(rows: [T; 4]) -> impl Iterator<Item = (&'static str, T)> {
    PROFILES.into_iter().zip(rows)
}

#[test]
fn shared_settings() {
    // (threads, check_filters, readiness, repeat, min_seconds, aim,
    // herald_source, headline_only, heavy)
    for (name, want) in each([
        (2, false, true, 5, 1.0, 1.2, false, true, false),
        (2, false, true, 5, 1.0, 1.5, false, false, true),
        (2, false, true, 5, 1.0, 1.5, false, false, true),
        (2, true, true, 2, 0.0, 1.5, false, false, false),
    ]) {
        let p = profile(name);
        let got = (
            p.threads,
            p.check_filters,
            p.readiness,
            p.repeat,
            p.min_seconds,
            p.aim,
            p.herald_source,
            p.headline_only,
            p.heavy,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn fanout_all() {
    // (watchers, deliveries, cap, paced: (watchers, changes/s, seconds))
    for (name, want) in each([
        (vec![1_000], 10_000_000, 4_000_000, (1_000, 66_000.0, 1.0)),
        (
            vec![10, 100, 1_000, 10_000],
            10_000_000,
            4_000_000,
            (1_000, 66_000.0, 1.0),
        ),
        (
            vec![10, 100, 1_000, 10_000],
            50_000_000,
            4_000_000,
            (1_000, 66_000.0, 1.0),
        ),
        (vec![10, 100], 50_000, 1_000_000, (100, 2_000.0, 0.2)),
    ]) {
        let s = fanout_all::FanoutAll.sizes(at(name));
        let got = (
            s.watchers,
            s.deliveries,
            s.cap,
            (s.paced_watchers, s.paced_rate, s.paced_seconds),
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn fanout_indexed() {
    // (nodes, changes, cap, unindexed watchers, unindexed changes)
    for (name, want) in each([
        (vec![10_000], 10_000, 3_200_000, 1_000, 20_000),
        (
            vec![1_000, 10_000, 100_000],
            50_000,
            3_200_000,
            1_000,
            20_000,
        ),
        (
            vec![1_000, 10_000, 100_000],
            200_000,
            3_200_000,
            1_000,
            50_000,
        ),
        (vec![100, 1_000], 5_000, 100_000, 100, 2_000),
    ]) {
        let s = fanout_indexed::FanoutIndexed.sizes(at(name));
        let got = (
            s.nodes,
            s.changes,
            s.cap,
            s.unindexed_watchers,
            s.unindexed_changes,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn slow_watcher_tax() {
    // (rates, seconds, healthy watchers: (few, many))
    for (name, want) in each([
        (vec![1_000.0], 2.0, (10, 1_000)),
        (vec![100.0, 1_000.0], 3.0, (10, 1_000)),
        (vec![100.0, 1_000.0], 5.0, (10, 1_000)),
        (vec![1_000.0], 0.3, (5, 50)),
    ]) {
        let s = slow_watcher_tax::SlowWatcherTax.sizes(at(name));
        let got = (s.rates, s.seconds, (s.few, s.many));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn catch_up() {
    // (watchers, changes back)
    for (name, want) in each([
        (10_000, 1_000),
        (10_000, 1_000),
        (10_000, 1_000),
        (100, 100),
    ]) {
        let s = catch_up::CatchUp.sizes(at(name));
        assert_eq!((s.watchers, s.back), want, "{name}");
    }
}

#[test]
fn latency() {
    // (watchers, changes/s, seconds)
    for (name, want) in each([
        (1_000, 10_000.0, 1.0),
        (1_000, 10_000.0, 2.0),
        (1_000, 10_000.0, 5.0),
        (50, 2_000.0, 0.2),
    ]) {
        let s = latency::Latency.sizes(at(name));
        assert_eq!((s.watchers, s.rate, s.seconds), want, "{name}");
    }
}

#[test]
fn memory() {
    // idle watchers
    for (name, want) in each([10_000, 10_000, 100_000, 200]) {
        let s = memory::Memory.sizes(at(name));
        assert_eq!(s.watchers, want, "{name}");
    }
}

#[test]
fn etcd_fanout() {
    // (watchers, deliveries, cap, paced: (deliveries/s, seconds),
    // connections, in flight)
    for (name, want) in each([
        (vec![1_000], 200_000, 65_536, (50_000.0, 2.0), 10, 16),
        (vec![100, 1_000], 200_000, 65_536, (50_000.0, 2.0), 10, 16),
        (vec![100, 1_000], 200_000, 65_536, (50_000.0, 2.0), 10, 16),
        (vec![20], 20_000, 4_096, (5_000.0, 0.3), 2, 16),
    ]) {
        let s = etcd_fanout::EtcdFanout.sizes(at(name));
        let got = (
            s.watchers,
            s.deliveries,
            s.cap,
            (s.paced_rate, s.paced_seconds),
            s.etcd.connections,
            s.etcd.in_flight,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn http_fanout() {
    // (watchers, selector-mix connections, deliveries, cap, paced:
    // (connections, seconds), rates, its etcd's (connections, in flight))
    for (name, want) in each([
        (
            vec![1_000],
            1_000,
            200_000,
            65_536,
            (1_000, 2.0),
            vec![10_000.0, 50_000.0],
            (10, 16),
        ),
        (
            vec![100, 1_000, 5_000, 10_000],
            1_000,
            2_000_000,
            65_536,
            (1_000, 2.0),
            vec![10_000.0, 50_000.0],
            (10, 16),
        ),
        (
            vec![100, 1_000, 5_000, 10_000],
            1_000,
            2_000_000,
            65_536,
            (1_000, 2.0),
            vec![10_000.0, 50_000.0],
            (10, 16),
        ),
        (
            vec![20],
            20,
            20_000,
            4_096,
            (20, 0.3),
            vec![5_000.0],
            (2, 16),
        ),
    ]) {
        let s = http_fanout::HttpFanout.sizes(at(name));
        let got = (
            s.watchers,
            s.mixed,
            s.deliveries,
            s.cap,
            (s.paced_watchers, s.paced_seconds),
            s.rates,
            (s.etcd.connections, s.etcd.in_flight),
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn kubelet() {
    // (pods, secrets, namespaces, refs, seconds, pods/s)
    for (name, want) in each([
        (5_000, 1_000, 10, 5, 1.0, 500.0),
        (10_000, 2_000, 10, 5, 2.0, 500.0),
        (10_000, 2_000, 10, 5, 2.0, 500.0),
        (200, 100, 4, 5, 0.2, 500.0),
    ]) {
        let k = kubelet::Kubelet.sizes(at(name));
        let got = (
            k.pods,
            k.secrets,
            k.namespaces,
            k.refs,
            k.seconds,
            k.pods_per_s,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn pod_memory() {
    // pods
    for (name, want) in each([10_000, 100_000, 100_000, 500]) {
        let s = pod_memory::PodMemory.sizes(at(name));
        assert_eq!(s.pods, want, "{name}");
    }
}

#[test]
fn apiserver_fanout() {
    // (watchers, (writes/s, seconds))
    for (name, want) in each([
        (vec![100, 1_000, 10_000], (3.0, 10.0)),
        (vec![100, 1_000, 10_000], (3.0, 10.0)),
        (vec![100, 1_000, 10_000], (3.0, 10.0)),
        (vec![20], (20.0, 1.0)),
    ]) {
        let s = apiserver_fanout::ApiserverFanout.sizes(at(name));
        let got = (s.watchers, (s.rate, s.seconds));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn fleet_restart() {
    // ((watchers, writes/s, steady seconds), seats)
    for (name, want) in each([
        ((10_000, 2.0, 5.0), None),
        ((10_000, 2.0, 5.0), None),
        ((10_000, 2.0, 5.0), None),
        ((200, 10.0, 2.0), Some((2, 8))),
    ]) {
        let s = fleet_restart::FleetRestart.sizes(at(name));
        let got = ((s.watchers, s.rate, s.steady_seconds), s.seats);
        assert_eq!(got, want, "{name}");
    }
}
