//! `herald-server`: the Kubernetes list/watch API served by Herald.
//!
//! ```text
//! herald-server --listen 127.0.0.1:8080 --demo 1000
//! herald-server --etcd http://127.0.0.1:2379 --prefix /registry/pods/
//! kubectl --server=http://127.0.0.1:8080 get pods -A -w
//! ```

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use herald_http::{
    Demo, POD_FIELDS, ResourceInfo, Server, ServerConfig, etcd_resource, resource_on,
};

#[derive(Debug, Parser)]
#[command(version, about = "The Kubernetes list/watch API, served by Herald")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Serve this many demo pods from the in-memory source, changing at
    /// --demo-rate (without --etcd).
    #[arg(long, default_value_t = 0)]
    demo: usize,
    /// Demo changes per second.
    #[arg(long, default_value_t = 20.0)]
    demo_rate: f64,
    /// etcd endpoints (comma-separated): serve what is stored there instead.
    #[arg(long, value_delimiter = ',')]
    etcd: Vec<String>,
    /// With --etcd: the key prefix of the resource (the apiserver's
    /// `/registry/<resource>/`).
    #[arg(long, default_value = "/registry/pods/")]
    prefix: String,
    /// The resource served (pods, configmaps, secrets, services, ...).
    #[arg(long, default_value = "pods")]
    resource: String,
    /// Fields decoded from etcd values for field selectors (default for
    /// pods: spec.nodeName, status.phase).
    #[arg(long, value_delimiter = ',')]
    field: Vec<String>,
    /// A watch without timeoutSeconds ends after a random time between
    /// this and twice this (seconds).
    #[arg(long, default_value_t = 1800)]
    min_request_timeout: u64,
    /// Close a watch connection whose client has not taken what it was
    /// sent for this long (seconds).
    #[arg(long, default_value_t = 10.0)]
    write_stall_timeout: f64,
}

#[tokio::main]
async fn main() {
    if let Err(e) = run(Args::parse()).await {
        eprintln!("herald-server: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let info = ResourceInfo::known(&args.resource).ok_or_else(|| {
        format!(
            "unknown resource {:?}: pods, configmaps, secrets, services, endpoints, events, serviceaccounts",
            args.resource
        )
    })?;
    let mut _demo = None;
    let resource = if args.etcd.is_empty() {
        if !args.demo_rate.is_finite() || args.demo_rate < 0.0 {
            return Err(format!("--demo-rate {} is not a rate", args.demo_rate).into());
        }
        let demo = Demo::start(args.demo, args.demo_rate)?;
        let r = resource_on(info, Arc::new(demo.source().clone()))?;
        _demo = Some(demo);
        r
    } else {
        let fields = if args.field.is_empty() && info.plural == "pods" {
            POD_FIELDS.iter().map(|s| (*s).to_owned()).collect()
        } else {
            args.field.clone()
        };
        etcd_resource(info, &args.etcd, &args.prefix, &fields)?
    };
    if !args.write_stall_timeout.is_finite() || args.write_stall_timeout <= 0.0 {
        return Err(format!(
            "--write-stall-timeout {} is not a duration",
            args.write_stall_timeout
        )
        .into());
    }
    let config = ServerConfig {
        min_request_timeout: Duration::from_secs(args.min_request_timeout.max(1)),
        write_stall_timeout: Duration::from_secs_f64(args.write_stall_timeout.min(1e9)),
    };
    let server = Server::new([resource], config);
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("listen on {}: {e}", args.listen))?;
    eprintln!(
        "herald-server: serving {} on http://{} (kubectl --server=http://{} get {} -A -w)",
        args.resource,
        listener.local_addr()?,
        listener.local_addr()?,
        args.resource
    );
    // On SIGINT or SIGTERM: stop accepting, stop the engine (its watches
    // end, and their connections with them), let the rest finish.
    let engines: Vec<_> = server.resources().map(|r| r.engine().clone()).collect();
    server
        .serve(listener, async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
            eprintln!("herald-server: shutting down");
            for e in &engines {
                e.stop();
            }
        })
        .await?;
    Ok(())
}
