//! A kubelet-shaped process: pods come and go, each referencing Secrets,
//! and the object manager keeps exactly those watched.
//!
//! ```sh
//! cargo run -p herald-kubelet --example node      # an engine in this process
//! # Over the Kubernetes API: any resource a herald-server serves (its demo
//! # serves pods; the manager is made for Secrets and ConfigMaps, but the
//! # rules are the same), in one namespace:
//! cargo run --release -p herald-server --bin herald-server -- --listen 127.0.0.1:8080 --demo 100 &
//! cargo run -p herald-kubelet --example node -- http://127.0.0.1:8080 pods demo-3 pod-00003 pod-00013 nope
//! ```
//!
//! The names asked for need not exist: not found is an answer.

use std::time::{Duration, Instant};

use herald::{Change, Config, Engine, Object};
use herald_kube::Decoder;
use herald_kubelet::{
    EngineUpstream, ManagerConfig, ObjectManager, PodRefs, RemoteUpstream, Upstream,
};

fn secret(name: &str, value: &str) -> Object {
    let payload = format!(
        r#"{{"kind":"Secret","metadata":{{"name":"{name}","namespace":"default"}},"data":{{"v":"{value}"}}}}"#
    );
    Object::builder("default", name).payload(payload).build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next();
    let resource = args.next().unwrap_or_else(|| "secrets".into());
    let namespace = args.next().unwrap_or_else(|| "default".into());
    let names: Vec<String> = args.collect();
    // In process: an engine holding three Secrets, one changing below.
    let mut local = None;
    let upstream: Box<dyn FnOnce() -> Result<ObjectManager, Box<dyn std::error::Error>>> =
        match server {
            Some(url) => Box::new(move || {
                let remote = RemoteUpstream::new(&url, &resource, Decoder::new())?;
                Ok(manager(remote)?)
            }),
            None => {
                let (engine, mut writer) = Engine::new(Config::default())?;
                writer.replace(["db", "tls", "token"].map(|n| secret(n, "v1")), 1.into())?;
                local = Some(writer);
                Box::new(move || Ok(manager(EngineUpstream::new(engine))?))
            }
        };
    let manager = upstream()?;

    let pod = |name: &str, uid: &str, objects: &[&str]| PodRefs {
        namespace: namespace.clone(),
        name: name.into(),
        uid: uid.into(),
        objects: objects.iter().map(|s| s.to_string()).collect(),
    };
    let (web, job) = if names.is_empty() {
        (
            pod("web", "uid-web", &["db", "tls"]),
            pod("job", "uid-job", &["db", "token", "missing"]),
        )
    } else {
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        (
            pod("web", "uid-web", &all),
            pod("job", "uid-job", &all[..1]),
        )
    };
    manager.register_pod(&web)?;
    manager.register_pod(&job)?;
    let asked: Vec<&String> = web.objects.union(&job.objects).collect();
    for name in asked {
        let t = Instant::now();
        let got = manager.get(&namespace, name)?;
        println!(
            "get {namespace}/{name}: {} in {:?}",
            got.map_or("not found".to_string(), |o| format!(
                "{} bytes",
                o.payload().len()
            )),
            t.elapsed()
        );
    }
    if let Some(writer) = local.as_mut() {
        writer.apply(Change::modified(secret("db", "v2"), 2.into()))?;
        std::thread::sleep(Duration::from_millis(50));
        let db = manager.get(&namespace, "db")?.expect("db exists");
        println!(
            "db after a change: {}",
            String::from_utf8_lossy(db.payload())
        );
    }
    manager.unregister_pod(&job);
    println!("after the job left: {:?}", manager.stats());
    manager.unregister_pod(&web);
    println!(
        "after the web pod left: {} watches open",
        manager.stats().watches_open
    );
    Ok(())
}

fn manager(upstream: impl Upstream) -> std::io::Result<ObjectManager> {
    ObjectManager::new(upstream, ManagerConfig::default())
}
