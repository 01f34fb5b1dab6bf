//! Sizes: a [`Profile`] says how large each scenario's cases are and how
//! they are run (rounds, sizing, consumer threads).

use serde::Serialize;

/// Sizes.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The profile's name.
    pub name: &'static str,
    /// fanout-all: watcher counts.
    pub fanout_watchers: Vec<usize>,
    /// fanout-all: deliveries per run before sizing (changes = this /
    /// watchers).
    pub fanout_deliveries: usize,
    /// fanout-all: the most changes a sized run may take (each system
    /// keeps every change of a run in its history).
    pub fanout_cap: usize,
    /// fanout-all: the paced check (watchers, changes/s, seconds).
    pub fanout_paced: (usize, f64, f64),
    /// fanout-indexed: node counts (one watcher each).
    pub indexed_nodes: Vec<usize>,
    /// fanout-indexed: changes per run before sizing.
    pub indexed_changes: usize,
    /// fanout-indexed: the most changes a sized run may take.
    pub indexed_cap: usize,
    /// fanout-indexed: watchers in the unindexed field-selector case.
    pub unindexed_watchers: usize,
    /// fanout-indexed: changes in the unindexed case.
    pub unindexed_changes: usize,
    /// slow-watcher-tax: rates (changes/s).
    pub tax_rates: Vec<f64>,
    /// slow-watcher-tax: seconds per run.
    pub tax_seconds: f64,
    /// slow-watcher-tax: healthy watchers in the small and large cases.
    pub tax_watchers: (usize, usize),
    /// catch-up: (watchers, changes back).
    pub catch_up: (usize, usize),
    /// latency: (watchers, changes/s, seconds).
    pub latency: (usize, f64, f64),
    /// memory: idle watchers.
    pub memory_watchers: usize,
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
    /// etcd-fanout: watcher counts.
    pub etcd_watchers: Vec<usize>,
    /// etcd-fanout flat out: deliveries in the sizing run (writes = this /
    /// watchers, at least 64), grown to `min_seconds` per system.
    pub etcd_deliveries: usize,
    /// etcd-fanout flat out: the most writes a sized run may take.
    pub etcd_cap: usize,
    /// etcd-fanout paced: (deliveries per second in total, seconds); the
    /// writer puts deliveries / watchers per second.
    pub etcd_paced: (f64, f64),
    /// etcd-fanout: connections the etcd side spreads its watches over
    /// (one gRPC stream per watch).
    pub etcd_connections: usize,
    /// etcd-fanout flat out: puts the writer keeps in flight.
    pub etcd_in_flight: usize,
    /// http-fanout: connection counts (watchers of everything).
    pub http_watchers: Vec<usize>,
    /// http-fanout: connections in the selector-mix case (one in four
    /// watches everything, the rest one node each).
    pub http_mixed: usize,
    /// http-fanout flat out: deliveries in the sizing run (changes = this
    /// / watchers), grown to `min_seconds` per system.
    pub http_deliveries: usize,
    /// http-fanout flat out: the most changes a sized run may take.
    pub http_cap: usize,
    /// http-fanout paced: (connections, seconds) and the rates, each a
    /// case: deliveries per second in total. The lowest rate leaves a
    /// 2-core machine headroom with 1,000 TLS clients on it; the highest
    /// is issue 36's 50k.
    pub http_paced: (usize, f64),
    /// http-fanout paced rates (deliveries per second in total), a case
    /// each.
    pub http_rates: Vec<f64>,
    /// kubelet: pods, Secrets, namespaces, references per pod, seconds
    /// of churn.
    pub kubelet: KubeletSizes,
    /// pod-memory: pods written to etcd, cached by each server.
    pub pod_memory_pods: usize,
    /// apiserver-fanout: watch connections (each case runs them on the
    /// apiserver and on Herald in front of it).
    pub apiserver_watchers: Vec<usize>,
    /// apiserver-fanout: (writes per second through the apiserver,
    /// seconds), the same at every N.
    pub apiserver_writes: (f64, f64),
    /// fleet-restart: (watchers through the balancer, writes per second
    /// into etcd, seconds of the steady window).
    pub fleet: (usize, f64, f64),
    /// fleet-restart: each replica's seats for watch initialisations
    /// (`--max-inflight-reads`, `--max-queued-reads`), if not
    /// herald-server's defaults: few enough that a restart's herd is
    /// refused in part (429, `Retry-After`) and comes back.
    pub fleet_seats: Option<(usize, usize)>,
    /// Run the heavy scenarios (see
    /// [`Scenario::heavy`](crate::scenario::Scenario::heavy)) when no
    /// scenario is named, and the heavy systems of those that run
    /// (http-fanout's `herald-server-tls`); naming a scenario sets it.
    pub heavy: bool,
}

impl Profile {
    /// The main job's sizes (`scripts/perf.sh` with no arguments): every
    /// scenario at one size, its headline case only, 5 interleaved rounds,
    /// runs of a second or more; under five minutes on 2 cores.
    pub fn quick() -> Profile {
        let default = Profile::default_suite();
        Profile {
            name: "quick",
            fanout_watchers: vec![1_000],
            indexed_nodes: vec![10_000],
            // Sized from a shorter sizing round: the slowest peer takes
            // about a second for it.
            indexed_changes: 10_000,
            tax_rates: vec![1_000.0],
            // 2,000 changes: a round's p99 rests on 20 of them.
            tax_seconds: 2.0,
            latency: (1_000, 10_000.0, 1.0),
            etcd_watchers: vec![1_000],
            http_watchers: vec![1_000],
            // etcd's own fan-out to 1,000 watchers takes seconds for the
            // default's sizing round.
            http_deliveries: 200_000,
            kubelet: KubeletSizes {
                pods: 5_000,
                secrets: 1_000,
                seconds: 1.0,
                ..default.kubelet
            },
            // pod-memory is not run in this profile unless named (an
            // apiserver start per measurement); this is its size then.
            pod_memory_pods: 10_000,
            // fleet-restart runs only when named; at the default's size.
            heavy: false,
            // Flat-out runs of at least a second, aimed at 1.2 s (1.2-2.4
            // s each, the workload doubling); a round under a second
            // grows that system's next rounds.
            min_seconds: 1.0,
            aim: 1.2,
            headline_only: true,
            ..default
        }
    }

    /// Tiny sizes: the harness's own correctness, in seconds.
    pub fn smoke() -> Profile {
        Profile {
            name: "smoke",
            fanout_watchers: vec![10, 100],
            fanout_deliveries: 50_000,
            fanout_cap: 1_000_000,
            fanout_paced: (100, 2_000.0, 0.2),
            indexed_nodes: vec![100, 1_000],
            indexed_changes: 5_000,
            indexed_cap: 100_000,
            unindexed_watchers: 100,
            unindexed_changes: 2_000,
            tax_rates: vec![1_000.0],
            tax_seconds: 0.3,
            tax_watchers: (5, 50),
            catch_up: (100, 100),
            latency: (50, 2_000.0, 0.2),
            memory_watchers: 200,
            threads: 2,
            check_filters: true,
            readiness: true,
            repeat: 2,
            min_seconds: 0.0,
            aim: 1.5,
            herald_source: false,
            headline_only: false,
            etcd_watchers: vec![20],
            etcd_deliveries: 20_000,
            etcd_cap: 4_096,
            etcd_paced: (5_000.0, 0.3),
            etcd_connections: 2,
            etcd_in_flight: 16,
            http_watchers: vec![20],
            http_mixed: 20,
            http_deliveries: 20_000,
            http_cap: 4_096,
            http_paced: (20, 0.3),
            http_rates: vec![5_000.0],
            kubelet: KubeletSizes {
                pods: 200,
                secrets: 100,
                namespaces: 4,
                refs: 5,
                seconds: 0.2,
                pods_per_s: 500.0,
            },
            pod_memory_pods: 500,
            apiserver_watchers: vec![20],
            apiserver_writes: (20.0, 1.0),
            fleet: (200, 10.0, 2.0),
            // A replica's third of 200 reconnecting at once, to 2 seats
            // and 8 places in the queue: the herd is refused in part.
            fleet_seats: Some((2, 8)),
            heavy: false,
        }
    }

    /// The whole suite (`--full`): every scenario at every size, about 35
    /// minutes on 2 cores.
    pub fn default_suite() -> Profile {
        Profile {
            name: "default",
            fanout_watchers: vec![10, 100, 1_000, 10_000],
            fanout_deliveries: 10_000_000,
            fanout_cap: 4_000_000,
            fanout_paced: (1_000, 66_000.0, 1.0),
            indexed_nodes: vec![1_000, 10_000, 100_000],
            indexed_changes: 50_000,
            indexed_cap: 3_200_000,
            unindexed_watchers: 1_000,
            unindexed_changes: 20_000,
            tax_rates: vec![100.0, 1_000.0],
            // At 1,000/s a round's p99 rests on 30 changes; at 100/s on 3
            // (reported, not judged).
            tax_seconds: 3.0,
            tax_watchers: (10, 1_000),
            catch_up: (10_000, 1_000),
            latency: (1_000, 10_000.0, 2.0),
            memory_watchers: 10_000,
            threads: 2,
            check_filters: false,
            readiness: true,
            repeat: 5,
            min_seconds: 1.0,
            aim: 1.5,
            herald_source: false,
            headline_only: false,
            etcd_watchers: vec![100, 1_000],
            etcd_deliveries: 200_000,
            etcd_cap: 65_536,
            etcd_paced: (50_000.0, 2.0),
            etcd_connections: 10,
            etcd_in_flight: 16,
            http_watchers: vec![100, 1_000, 5_000, 10_000],
            http_mixed: 1_000,
            http_deliveries: 2_000_000,
            http_cap: 65_536,
            http_paced: (1_000, 2.0),
            http_rates: vec![10_000.0, 50_000.0],
            kubelet: KubeletSizes {
                pods: 10_000,
                secrets: 2_000,
                namespaces: 10,
                refs: 5,
                seconds: 2.0,
                pods_per_s: 500.0,
            },
            pod_memory_pods: 100_000,
            apiserver_watchers: vec![100, 1_000, 10_000],
            // A rate the apiserver takes at 10,000 watchers on 2 cores (it
            // took 3.2-3.4 writes/s there when offered 10).
            apiserver_writes: (3.0, 10.0),
            // 10,000 watchers of every pod (about 3.7 KB of JSON each) at 2
            // writes/s: 20,000 deliveries/s through HAProxy on 2 cores,
            // beside the replicas, etcd and the clients.
            fleet: (10_000, 2.0, 5.0),
            fleet_seats: None,
            heavy: true,
        }
    }

    /// Larger runs (minutes).
    pub fn full() -> Profile {
        Profile {
            name: "full",
            fanout_deliveries: 50_000_000,
            indexed_changes: 200_000,
            unindexed_changes: 50_000,
            tax_seconds: 5.0,
            latency: (1_000, 10_000.0, 5.0),
            memory_watchers: 100_000,
            ..Profile::default_suite()
        }
    }
}

/// The kubelet scenario's sizes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KubeletSizes {
    /// Pods on the node.
    pub pods: usize,
    /// Secrets in all.
    pub secrets: usize,
    /// Namespaces the pods and Secrets are spread over.
    pub namespaces: usize,
    /// Secrets each pod references.
    pub refs: usize,
    /// Seconds of churn.
    pub seconds: f64,
    /// Pods replaced per second during the churn (each: an unregister, a
    /// register and a get of each of its Secrets).
    pub pods_per_s: f64,
}
