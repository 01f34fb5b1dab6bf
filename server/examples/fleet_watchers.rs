//! kube-rs watchers for the fleet test (`testkit/client-go/fleet_test.go`):
//! N `kube::runtime::watcher`s of the `fleet` namespace's pods at a URL
//! (a fifth of all pods, the rest of one node's, as the informers there),
//! each recording every event it is given and every (re-)list it starts.
//!
//! ```text
//! fleet_watchers URL N
//! ```
//!
//! Prints `synced` once every watcher has its initial list, then records
//! until its standard input closes, and prints one JSON line: per watcher
//! its name, node, the lists it started (`inits`: 1 means it never
//! re-listed) and its events after the initial list as
//! `[namespace/name, resourceVersion, deleted]`.

use std::io::BufRead;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Config, ResourceExt};
use serde_json::json;

/// What one watcher saw.
#[derive(Default)]
struct Seen {
    inits: u64,
    synced: bool,
    events: Vec<(String, u64, bool)>,
}

fn key_rv(p: &Pod) -> (String, u64) {
    let rv = p
        .resource_version()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (
        format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()),
        rv,
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: fleet_watchers URL N");
        std::process::exit(2);
    };
    let config = Config::new(url.parse().expect("a URL"));
    let client = Client::try_from(config).expect("a client");
    let pods: Api<Pod> = Api::namespaced(client, "fleet");
    let (synced_tx, mut synced_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut all = Vec::new();
    for i in 0..n {
        let node = if i % 5 == 0 {
            String::new()
        } else {
            format!("node-{}", i % 10)
        };
        let mut cfg = watcher::Config::default();
        if !node.is_empty() {
            cfg = cfg.fields(&format!("spec.nodeName={node}"));
        }
        let seen = Arc::new(Mutex::new(Seen::default()));
        all.push((format!("kube-rs-{i}"), node, seen.clone()));
        let (stream, synced_tx) = (watcher::watcher(pods.clone(), cfg), synced_tx.clone());
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                let mut s = seen.lock().unwrap();
                match ev {
                    Ok(Event::Init) => s.inits += 1,
                    Ok(Event::InitDone) if !s.synced => {
                        s.synced = true;
                        let _ = synced_tx.send(());
                    }
                    Ok(Event::Apply(p)) => {
                        let (k, rv) = key_rv(&p);
                        s.events.push((k, rv, false));
                    }
                    Ok(Event::Delete(p)) => {
                        let (k, rv) = key_rv(&p);
                        s.events.push((k, rv, true));
                    }
                    // Errors are retried by the watcher (with backoff).
                    _ => {}
                }
            }
        });
    }
    drop(synced_tx);
    for _ in 0..n {
        synced_rx.recv().await.expect("every watcher syncs");
    }
    println!("synced");
    tokio::task::spawn_blocking(|| for _ in std::io::stdin().lock().lines() {})
        .await
        .expect("stdin");
    let out: Vec<_> = all
        .iter()
        .map(|(name, node, seen)| {
            let s = seen.lock().unwrap();
            json!({"name": name, "node": node, "inits": s.inits, "events": s.events})
        })
        .collect();
    println!("{}", serde_json::to_string(&out).expect("JSON"));
}
