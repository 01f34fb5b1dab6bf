//! `herald-server`: the Kubernetes list/watch API served by Herald.
//!
//! ```text
//! herald-server --listen 127.0.0.1:8080 --demo 1000
//! herald-server --etcd http://127.0.0.1:2379 --prefix /registry/pods/
//! herald-server --etcd http://127.0.0.1:2379 --resources pods,nodes,deployments.apps
//! herald-server --etcd http://127.0.0.1:2379 --resources all
//! herald-server --kubeconfig ~/.kube/config --resources all
//! kubectl --server=http://127.0.0.1:8080 get pods -A -w
//! ```
//!
//! `--etcd` needs a build with the `etcd` feature (the default); a build
//! without it refuses the flag, saying so, rather than serve something
//! else.

use std::sync::Arc;
use std::time::Duration;

/// mimalloc: freed pages go back to the system (glibc's arenas kept
/// them: after a hostile burst of never-read watches an idle server
/// stayed at 2 GB), once the thread that owns them collects, which an
/// idle worker does when it parks ([`collect_when_idle`]).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Run as a worker thread parks (it has nothing to do): at most once a
/// second per thread, lets mimalloc free what other threads freed of
/// this thread's pages and give back the pages empty long enough. A busy
/// server parks little and pays nothing; an idle one returns to its
/// resting size within seconds.
fn collect_when_idle() {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    let due = LAST.with(|last| {
        let due = last
            .get()
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        // SAFETY: `mi_collect` takes no pointer and has no precondition;
        // it only walks the calling thread's own heap (mimalloc is the
        // global allocator, so that heap exists once the thread has run).
        unsafe { libmimalloc_sys::mi_collect(false) };
    }
}

/// Turns transparent huge pages off for this process, as mimalloc's own
/// `MIMALLOC_ALLOW_THP=0` does (which it reads before `main`, so it
/// cannot be set from here), unless the operator set that variable.
///
/// mimalloc advises huge pages on every region it maps, and gives freed
/// pages back (its purge, and [`collect_when_idle`]); a server whose
/// deliveries come in bursts (each write fanned out to every watcher,
/// then idle until the next) re-faults those pages on every burst, and
/// each fault in a huge-page region zeroes 2 MiB. Measured in perf's
/// apiserver-fanout (10,000 watch connections, 10 writes/s, 2 cores):
/// with huge pages, 77% of the workers' CPU was `clear_page_erms` under
/// mimalloc's page faults, 17-18 µs of CPU per delivery, and the server
/// fell behind (p99 4.6-5.6 s); without, 10.5 µs per delivery and p99
/// 362 ms, keeping up. The cost: more TLB misses on a large heap, which
/// no measurement here shows.
fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes no
        // pointer; it sets a flag on this process's memory map (kept by
        // children and across `exec`), and fails harmlessly on a kernel
        // without it.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}

use clap::Parser;
use herald_kube::ResourceInfo;
use herald_kube::builtin::{Builtin, builtin, builtins};
use herald_kube::table::Printer;
use herald_server::crds::{Converter, Custom, ServiceIps};
use herald_server::{AccessConfig, Demo, Server, ServerConfig, resource_on};

#[derive(Debug, Clone, Parser)]
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
    /// etcd endpoints (comma-separated): serve what is stored there instead
    /// (in a build with the `etcd` feature, the default).
    #[arg(long, value_delimiter = ',')]
    etcd: Vec<String>,
    /// Read through a kube-apiserver instead of etcd, as kubectl does: this
    /// kubeconfig's current context (or --context's): its cluster, CA and
    /// credentials (client certificates, tokens, token files that rotate,
    /// exec plugins).
    #[arg(long, conflicts_with_all = ["etcd", "in_cluster"])]
    kubeconfig: Option<std::path::PathBuf>,
    /// With --kubeconfig (or KUBECONFIG): the context to use.
    #[arg(long)]
    context: Option<String>,
    /// Read through the kube-apiserver found as kubectl finds it:
    /// KUBECONFIG, ~/.kube/config, then the pod's service account.
    #[arg(long, conflicts_with = "etcd")]
    in_cluster: bool,
    /// With --kubeconfig or --in-cluster: ask for JSON only, never
    /// protobuf.
    #[arg(long)]
    upstream_json: bool,
    /// The apiserver connected to, once, at start.
    #[arg(skip)]
    apiserver: Option<herald_apiserver::ApiServer>,
    /// The etcd cluster --etcd names, connected to once, when the first
    /// resource is read from it, and shared by every resource (one
    /// client, one connection a member).
    #[cfg(feature = "etcd")]
    #[arg(skip)]
    etcd_cluster: Arc<std::sync::Mutex<Option<herald_etcd::EtcdCluster>>>,
    /// With --etcd: the key prefix of the one resource --resource names
    /// (the apiserver's `/registry/<resource>/`).
    #[arg(long, default_value = "/registry/pods/", conflicts_with = "resources")]
    prefix: String,
    /// The one resource served (pods, configmaps, secrets, services, ...).
    #[arg(long, default_value = "pods", conflicts_with = "resources")]
    resource: String,
    /// With --etcd or --kubeconfig: the built-in resources served (`pods`,
    /// `nodes`, `deployments.apps`, short names too; from etcd, each read
    /// from where the apiserver stores it under --etcd-prefix), or `all`
    /// for every built-in resource Herald knows (`herald-server
    /// --list-resources`; through an apiserver, those it serves) and the
    /// custom resources of the CRDs, followed as they come and go.
    #[arg(long, value_delimiter = ',')]
    resources: Vec<String>,
    /// The apiserver's `--etcd-prefix`: the root of its keys.
    #[arg(long, default_value = herald_kube::builtin::REGISTRY)]
    etcd_prefix: String,
    /// How many of the upstream's revisions back the first list reaches,
    /// so that the history window holds the changes since and a watcher
    /// moving here from a replica that went away resumes instead of
    /// re-listing (0: list at the current revision; a revision etcd has
    /// compacted away falls back to that; through an apiserver, no
    /// further back than its watch cache holds).
    #[arg(long, default_value_t = herald_server::HISTORY_BACKFILL)]
    history_backfill: u64,
    /// With --etcd: the apiserver's `--encryption-provider-config` file
    /// (an `EncryptionConfiguration`, YAML or JSON): values it encrypted
    /// at rest with `aescbc`, `aesgcm` or `secretbox` are decrypted with
    /// its keys (`kms` cannot be: those values count as undecodable).
    #[arg(long)]
    encryption_provider_config: Option<std::path::PathBuf>,
    /// The keys read from --encryption-provider-config, once, at start.
    #[arg(skip)]
    keyring: Option<Arc<herald_kube::Keyring>>,
    /// Stored values that could not be decoded, per resource, that
    /// /readyz tolerates (past it the resource is not ready: it serves
    /// fewer objects than are stored).
    #[arg(long, default_value_t = 0)]
    max_undecodable: u64,
    /// Print the built-in resources --resources knows, with their etcd
    /// keys, and exit.
    #[arg(long)]
    list_resources: bool,
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
    /// Close a connection whose response (other than a watch) is not
    /// written in full within this (seconds; the apiserver's request
    /// timeout).
    #[arg(long, default_value_t = 60.0)]
    request_timeout: f64,
    /// Lists, gets and watch initialisations doing engine work at once.
    #[arg(long, default_value_t = 64)]
    max_inflight_reads: usize,
    /// Reads of a version the cache has not reached yet, waiting at once.
    #[arg(long, default_value_t = 64)]
    max_waiting_reads: usize,
    /// Requests queued for a seat, in all; beyond: 429.
    #[arg(long, default_value_t = 256)]
    max_queued_reads: usize,
    /// How long a request may wait for a seat (seconds); beyond: 429.
    #[arg(long, default_value_t = 5.0)]
    queue_wait: f64,
    /// Watches open at once, in all; beyond: 429.
    #[arg(long, default_value_t = 100_000)]
    max_watches: usize,
    /// Watches open at once per client (its user once authenticated, else
    /// its address); beyond: 429.
    #[arg(long, default_value_t = 10_000)]
    max_watches_per_client: usize,
    /// Selector text held by open watches, in all (bytes); beyond: 429.
    #[arg(long, default_value_t = 16 << 20)]
    max_selector_bytes: usize,
    /// Response bytes not yet taken by clients, in all; beyond, lists and
    /// gets get 429.
    #[arg(long, default_value_t = 512 << 20)]
    max_unwritten_bytes: usize,
    /// The most a watch connection holds written to it and not yet taken
    /// by its client (bytes).
    #[arg(long, default_value_t = 64 * 1024)]
    watch_in_flight_bytes: usize,
    /// On SIGTERM, keep serving this long with /readyz failing, for a load
    /// balancer to take the replica out (seconds; the apiserver's
    /// --shutdown-delay-duration), then drain every watch.
    #[arg(long, default_value_t = 0.0)]
    shutdown_delay: f64,
    /// After the drain, how long connections may take to finish before
    /// they are closed (seconds).
    #[arg(long, default_value_t = 30.0)]
    shutdown_grace: f64,
    /// Serve TLS with this certificate chain (PEM, the server's first;
    /// read again every 10 s, a change served to new connections).
    #[arg(long)]
    tls_cert_file: Option<std::path::PathBuf>,
    /// The private key of --tls-cert-file (PEM).
    #[arg(long)]
    tls_private_key_file: Option<std::path::PathBuf>,
    /// Ask clients for certificates signed by this CA (PEM): the user is
    /// the certificate's CN, its groups the O values (kube-apiserver's
    /// --client-ca-file).
    #[arg(long)]
    client_ca_file: Option<std::path::PathBuf>,
    /// Static bearer tokens, in kube-apiserver's --token-auth-file format
    /// (CSV: token,user,uid,"group1,group2").
    #[arg(long)]
    token_auth_file: Option<std::path::PathBuf>,
    /// The public keys (or private keys, whose public halves are used)
    /// service-account tokens are signed with: the apiserver's
    /// --service-account-key-file (repeatable).
    #[arg(long)]
    service_account_key_file: Vec<std::path::PathBuf>,
    /// The issuers of the service-account tokens taken (the apiserver's
    /// --service-account-issuer; repeatable).
    #[arg(long)]
    service_account_issuer: Vec<String>,
    /// The audiences a service-account token must name one of (default:
    /// the first issuer, as the apiserver's --api-audiences).
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// Serve requests without credentials as system:anonymous (then
    /// authorized like any user); without it they are refused (401).
    #[arg(long)]
    anonymous_auth: bool,
    /// AlwaysAllow, RBAC (the cluster's roles and bindings, which are
    /// then served too) or Webhook (the upstream apiserver's
    /// SubjectAccessReviews; needs --kubeconfig). Default: RBAC when any
    /// authentication is configured, AlwaysAllow otherwise.
    #[arg(long)]
    authorization_mode: Option<String>,
    /// Serve plain HTTP on an address beyond loopback (every client on
    /// the network reads what is served, unencrypted).
    #[arg(long)]
    insecure_plain_http: bool,
    /// Write the audit log here (`-`: standard output), one
    /// audit.k8s.io/v1 Event per line; needs --audit-policy-file.
    #[arg(long)]
    audit_log_path: Option<std::path::PathBuf>,
    /// The audit policy (kube-apiserver's --audit-policy-file: an
    /// audit.k8s.io/v1 Policy, YAML or JSON).
    #[arg(long)]
    audit_policy_file: Option<std::path::PathBuf>,
    /// Review bearer tokens that no local authenticator takes with the
    /// upstream apiserver (TokenReview; needs --kubeconfig).
    #[arg(long)]
    delegate_authentication: bool,
    /// How long a TokenReview's answer is kept (seconds).
    #[arg(long, default_value_t = 10.0)]
    authentication_token_webhook_cache_ttl: f64,
    /// How long an allowing SubjectAccessReview is kept (seconds).
    #[arg(long, default_value_t = 10.0)]
    authorization_webhook_cache_authorized_ttl: f64,
    /// How long a refusing SubjectAccessReview is kept (seconds).
    #[arg(long, default_value_t = 10.0)]
    authorization_webhook_cache_unauthorized_ttl: f64,
}

/// A flag's seconds as a duration, or why they are not one.
fn seconds(flag: &str, secs: f64) -> Result<Duration, String> {
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("--{flag} {secs} is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs.min(1e9)))
}

impl Args {
    fn access(&self) -> Result<AccessConfig, String> {
        let ttl = |flag: &str, secs: f64| {
            if secs == 0.0 {
                Ok(Duration::ZERO)
            } else {
                seconds(flag, secs)
            }
        };
        Ok(AccessConfig {
            tls_cert_file: self.tls_cert_file.clone(),
            tls_private_key_file: self.tls_private_key_file.clone(),
            client_ca_file: self.client_ca_file.clone(),
            token_auth_file: self.token_auth_file.clone(),
            service_account_key_files: self.service_account_key_file.clone(),
            service_account_issuers: self.service_account_issuer.clone(),
            api_audiences: self.api_audiences.clone(),
            anonymous: self.anonymous_auth,
            authorization_mode: self.authorization_mode.clone(),
            insecure_plain_http: self.insecure_plain_http,
            audit_log_path: self.audit_log_path.clone(),
            audit_policy_file: self.audit_policy_file.clone(),
            delegate_authentication: self.delegate_authentication,
            delegate_ttls: herald_server::delegate::DelegateTtls {
                token: ttl(
                    "authentication-token-webhook-cache-ttl",
                    self.authentication_token_webhook_cache_ttl,
                )?,
                allowed: ttl(
                    "authorization-webhook-cache-authorized-ttl",
                    self.authorization_webhook_cache_authorized_ttl,
                )?,
                refused: ttl(
                    "authorization-webhook-cache-unauthorized-ttl",
                    self.authorization_webhook_cache_unauthorized_ttl,
                )?,
            },
        })
    }

    /// `--shutdown-delay`: 0 (the default) or a duration.
    fn shutdown_delay(&self) -> Result<Duration, String> {
        match self.shutdown_delay {
            0.0 => Ok(Duration::ZERO),
            secs => seconds("shutdown-delay", secs),
        }
    }

    fn config(&self) -> Result<ServerConfig, String> {
        // Not the server's, but refused here with the others: before
        // anything is served.
        self.shutdown_delay()?;
        Ok(ServerConfig {
            min_request_timeout: Duration::from_secs(self.min_request_timeout.max(1)),
            write_stall_timeout: seconds("write-stall-timeout", self.write_stall_timeout)?,
            request_timeout: seconds("request-timeout", self.request_timeout)?,
            queue_wait: seconds("queue-wait", self.queue_wait)?,
            max_inflight_reads: self.max_inflight_reads.max(1),
            max_waiting_reads: self.max_waiting_reads.max(1),
            max_queued_reads: self.max_queued_reads,
            max_watches: self.max_watches,
            max_watches_per_client: self.max_watches_per_client,
            max_selector_bytes: self.max_selector_bytes,
            max_unwritten_bytes: self.max_unwritten_bytes,
            watch_in_flight_bytes: self.watch_in_flight_bytes.max(1),
            max_undecodable: self.max_undecodable,
            shutdown_grace: seconds("shutdown-grace", self.shutdown_grace)?,
        })
    }
}

fn main() {
    no_transparent_huge_pages();
    let args = Args::parse();
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("herald-server: {e}");
            std::process::exit(2);
        }
    };
    // The blocking pool holds the engine calls admission lets through:
    // sized to its seats, not tokio's default 512.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(config.blocking_threads())
        .on_thread_park(collect_when_idle)
        // A blocking thread that built a list holds its pages until it
        // collects; one idle for a second exits, and mimalloc reclaims
        // them (tokio's default keeps it ten seconds).
        .thread_keep_alive(Duration::from_secs(1))
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(run(args, config)),
        Err(e) => Err(e.into()),
    };
    if let Err(e) = result {
        eprintln!("herald-server: {e}");
        std::process::exit(1);
    }
}

/// The resource read from etcd under `prefix`.
#[cfg(feature = "etcd")]
fn etcd(
    info: ResourceInfo,
    prefix: &str,
    args: &Args,
) -> Result<herald_server::Resource, Box<dyn std::error::Error + Send + Sync>> {
    let fields = if args.field.is_empty() || !args.resources.is_empty() {
        info.fields.clone()
    } else {
        args.field.clone()
    };
    herald_server::etcd_resource_with(
        info,
        &etcd_cluster(args)?,
        prefix,
        &fields,
        args.keyring.clone(),
        args.history_backfill,
    )
}

/// The cluster --etcd names: connected on the first call (after the flags
/// and resources are checked, so that a mistake is named before an
/// unreachable cluster), then shared. A failed connection is tried again
/// at the next call.
#[cfg(feature = "etcd")]
fn etcd_cluster(
    args: &Args,
) -> Result<herald_etcd::EtcdCluster, Box<dyn std::error::Error + Send + Sync>> {
    let mut slot = args.etcd_cluster.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cluster) = &*slot {
        return Ok(cluster.clone());
    }
    let config = herald_etcd::ClusterConfig::new(args.etcd.clone());
    let cluster = herald_etcd::EtcdCluster::connect(config)?;
    eprintln!(
        "herald-server: upstream etcd {} at {}",
        cluster
            .server_version()
            .map_or_else(|| "(version unknown)".to_owned(), |v| v.to_string()),
        args.etcd.join(",")
    );
    *slot = Some(cluster.clone());
    Ok(cluster)
}

/// The resource from the upstream the flags name: the apiserver
/// (`--kubeconfig`, `--in-cluster`) or etcd under `prefix`.
fn upstream(
    info: ResourceInfo,
    prefix: &str,
    args: &Args,
) -> Result<herald_server::Resource, Box<dyn std::error::Error + Send + Sync>> {
    match &args.apiserver {
        Some(apiserver) => {
            let fields = if args.field.is_empty() || !args.resources.is_empty() {
                info.fields.clone()
            } else {
                args.field.clone()
            };
            herald_server::apiserver_resource(info, apiserver, &fields, args.history_backfill)
        }
        None => etcd(info, prefix, args),
    }
}

/// A build without etcd: `--etcd` is refused.
#[cfg(not(feature = "etcd"))]
fn etcd(
    _info: ResourceInfo,
    _prefix: &str,
    _args: &Args,
) -> Result<herald_server::Resource, Box<dyn std::error::Error + Send + Sync>> {
    Err(
        "--etcd: this herald-server was built without etcd (cargo feature `etcd`, \
         on by default; rebuild without --no-default-features)"
            .into(),
    )
}

/// The built-in resources `--resources` names, with their etcd prefixes.
fn named(args: &Args) -> Result<Vec<Builtin>, String> {
    let known = || {
        builtins(&args.etcd_prefix)
            .iter()
            .map(|b| b.info.qualified())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if args.resources.iter().any(|r| r == "all") {
        let Some(apiserver) = &args.apiserver else {
            return Ok(builtins(&args.etcd_prefix));
        };
        // Those the apiserver serves, at the version it serves them.
        let served = apiserver
            .discover()
            .map_err(|e| format!("--resources all: discovery: {e}"))?;
        return Ok(builtins(&args.etcd_prefix)
            .into_iter()
            .filter(|b| {
                served.iter().any(|d| {
                    (
                        d.info.group.as_str(),
                        d.info.version.as_str(),
                        d.info.plural.as_str(),
                    ) == (
                        b.info.group.as_str(),
                        b.info.version.as_str(),
                        b.info.plural.as_str(),
                    )
                })
            })
            .collect());
    }
    let mut out: Vec<Builtin> = Vec::new();
    for name in &args.resources {
        let b = builtin(name.trim(), &args.etcd_prefix).ok_or_else(|| {
            format!(
                "--resources: unknown or ambiguous resource {name:?}; known: {}",
                known()
            )
        })?;
        if !out.iter().any(|o| o.info == b.info) {
            out.push(b);
        }
    }
    Ok(out)
}

/// With `--resources all`: the custom resources of the CRDs stored when
/// the server starts (read once the CRDs' own cache is ready), each with
/// the CRD's reading it is served by.
async fn custom_resources(
    served: &[herald_server::Resource],
    args: &Args,
    ips: &ServiceIps,
) -> Result<Vec<(herald_server::Resource, Custom)>, Box<dyn std::error::Error + Send + Sync>> {
    let Some(crds) = served
        .iter()
        .find(|r| r.info().qualified() == "customresourcedefinitions.apiextensions.k8s.io")
    else {
        return Ok(Vec::new());
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while crds.engine().lifecycle() != herald::engine::Lifecycle::Ready {
        if std::time::Instant::now() > deadline {
            return Err("--resources all: the CRDs were not listed within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (engine, registry) = (crds.engine().clone(), args.etcd_prefix.clone());
    let found = tokio::task::spawn_blocking(move || {
        herald_server::crds::customs(&engine, &registry, herald::read::ReadAt::Latest)
    })
    .await?;
    let mut out = Vec::new();
    for c in found {
        if served
            .iter()
            .any(|r| r.info().qualified() == c.info.qualified())
        {
            continue;
        }
        let engine = upstream(c.info.clone(), &c.prefix, args)?;
        match serving(engine, &c, ips) {
            Ok(r) => out.push((r, c)),
            Err(e) => eprintln!("herald-server: not serving {}: {e}", c.info.qualified()),
        }
    }
    Ok(out)
}

/// `resource` (an engine of `c`'s stored objects) served at every
/// version `c` serves, converted as its CRD says.
fn serving(
    resource: herald_server::Resource,
    c: &Custom,
    ips: &ServiceIps,
) -> Result<herald_server::Resource, String> {
    let converter = Converter::new(c, Some(ips.clone()))?;
    let versions = c
        .versions
        .iter()
        .map(|(info, columns)| (info.clone(), Printer::custom(columns.clone())))
        .collect();
    Ok(resource
        .with_printer(Printer::custom(c.columns.clone()))
        .with_versions(versions, converter))
}

/// A service's ClusterIP, from the services the server serves (for a
/// conversion webhook's `service` reference); `None` before the server
/// is set or when it serves no services.
fn service_ips(server: Arc<std::sync::OnceLock<Server>>) -> ServiceIps {
    Arc::new(move |ns: &str, name: &str| {
        let services = server
            .get()?
            .resources()
            .into_iter()
            .find(|r| r.info().qualified() == "services")?;
        let got = services
            .engine()
            .get(&format!("{ns}/{name}"), herald::read::ReadAt::Any)
            .ok()?;
        let item = got.item?;
        let service: serde_json::Value = serde_json::from_slice(item.object.payload()).ok()?;
        service["spec"]["clusterIP"].as_str()?.parse().ok()
    })
}

/// With `--resources all`: follows the CRDs (stored in etcd, or served by
/// the apiserver) as they come and go (each second). A new CRD's custom
/// resource is served; a CRD whose change keeps what is stored (the same
/// group, plural, scope and key prefix: a new category, name, column,
/// served version, storage version, conversion) is served anew on the
/// same engine, its open watches going on; one whose stored resource
/// changed gets a new engine, and one whose CRD went is stopped (its
/// watches end, as the apiserver ends them; its clients re-list and get
/// 404). `applied`: the CRDs served now, by resource.
async fn follow_crds(
    server: Server,
    args: Args,
    ips: ServiceIps,
    mut applied: std::collections::HashMap<String, Custom>,
) {
    let crds = "customresourcedefinitions.apiextensions.k8s.io";
    // On the apiserver, an engine reads one version: it must stay served.
    let version_matters = args.apiserver.is_some();
    // The CRDs' version last looked at: nothing to do until it moves.
    let mut seen = None;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let served = server.resources();
        let Some(crd_engine) = served
            .iter()
            .find(|r| r.info().qualified() == crds)
            .map(|r| r.engine().clone())
        else {
            return;
        };
        let at = crd_engine.resource_version();
        if crd_engine.lifecycle() != herald::engine::Lifecycle::Ready || seen == Some(at) {
            continue;
        }
        seen = Some(at);
        let wanted =
            herald_server::crds::customs(&crd_engine, &args.etcd_prefix, herald::read::ReadAt::Any);
        for c in &wanted {
            let name = c.info.qualified();
            if builtin(&name, &args.etcd_prefix).is_some() || applied.get(&name) == Some(c) {
                continue;
            }
            let current = served.iter().find(|r| r.info().qualified() == name);
            let kept = match (applied.get(&name), current) {
                (Some(old), Some(r)) if old.same_storage(c, version_matters) => Some(r.clone()),
                _ => None,
            };
            let engine = match kept.clone() {
                Some(r) => Ok(r),
                None => {
                    let (info, prefix, a) = (c.info.clone(), c.prefix.clone(), args.clone());
                    tokio::task::spawn_blocking(move || upstream(info, &prefix, &a))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map_err(|e| e.to_string()))
                }
            };
            match engine.and_then(|r| serving(r, c, &ips)) {
                Ok(r) => {
                    let how = if kept.is_some() {
                        "its CRD changed"
                    } else {
                        "its CRD appeared"
                    };
                    eprintln!("herald-server: serving {name} ({how})");
                    if let Some(old) = server.add(r)
                        && kept.is_none()
                    {
                        old.engine().stop();
                    }
                    applied.insert(name, c.clone());
                }
                // Tried again next second.
                Err(e) => {
                    eprintln!("herald-server: cannot serve {name}: {e}");
                    seen = None;
                }
            }
        }
        let gone: Vec<String> = applied
            .keys()
            .filter(|name| !wanted.iter().any(|c| c.info.qualified() == **name))
            .cloned()
            .collect();
        for name in gone {
            eprintln!("herald-server: no longer serving {name} (its CRD went)");
            applied.remove(&name);
            if let Some(old) = server.remove(&name) {
                old.engine().stop();
            }
        }
    }
}

async fn run(
    mut args: Args,
    config: ServerConfig,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if let Some(path) = &args.encryption_provider_config {
        let keyring = herald_kube::Keyring::from_file(path)
            .map_err(|e| format!("--encryption-provider-config {}: {e}", path.display()))?;
        args.keyring = Some(Arc::new(keyring));
    }
    if args.list_resources {
        for b in builtins(&args.etcd_prefix) {
            println!(
                "{}\t{}\t{}",
                b.info.qualified(),
                b.info.api_version(),
                b.prefix
            );
        }
        // What the apiserver lists too and Herald does not serve, and why.
        for (s, why) in herald_kube::builtin::unserved() {
            let name = match s.group.as_str() {
                "" => s.resource.clone(),
                g => format!("{}.{g}", s.resource),
            };
            println!("# not served: {name}	{}	{why}", s.api_version());
        }
        return Ok(());
    }
    if args.kubeconfig.is_some() || args.in_cluster || args.context.is_some() {
        let mut config = herald_apiserver::ApiServerConfig::default();
        config.kubeconfig = args.kubeconfig.clone();
        config.context = args.context.clone();
        let config = config.protobuf(!args.upstream_json);
        let apiserver =
            tokio::task::spawn_blocking(move || herald_apiserver::ApiServer::connect(config))
                .await??;
        eprintln!(
            "herald-server: upstream kube-apiserver {} at {}",
            apiserver.version(),
            apiserver.url()
        );
        args.apiserver = Some(apiserver);
    }
    let mut _demo = None;
    // The server, once made: conversion webhooks' services are found
    // among its services.
    let made = Arc::new(std::sync::OnceLock::new());
    let ips = service_ips(made.clone());
    let mut customs = std::collections::HashMap::new();
    let resources = if args.etcd.is_empty() && args.apiserver.is_none() {
        if !args.resources.is_empty() {
            return Err("--resources needs --etcd or --kubeconfig (the demo serves pods)".into());
        }
        let info = ResourceInfo::known(&args.resource)
            .ok_or_else(|| format!("unknown resource {:?}: the demo serves pods", args.resource))?;
        if !args.demo_rate.is_finite() || args.demo_rate < 0.0 {
            return Err(format!("--demo-rate {} is not a rate", args.demo_rate).into());
        }
        let demo = Demo::start(args.demo, args.demo_rate)?;
        let r = resource_on(info, Arc::new(demo.source().clone()))?;
        _demo = Some(demo);
        vec![r]
    } else if args.resources.is_empty() {
        let info = builtin(&args.resource, &args.etcd_prefix)
            .map(|b| b.info)
            .or_else(|| ResourceInfo::known(&args.resource))
            .ok_or_else(|| {
                format!(
                    "unknown resource {:?} (herald-server --list-resources)",
                    args.resource
                )
            })?;
        vec![upstream(info, &args.prefix, &args)?]
    } else {
        let mut out = Vec::new();
        for b in named(&args)? {
            out.push(upstream(b.info, &b.prefix, &args)?);
        }
        if args.resources.iter().any(|r| r == "all") {
            for (r, c) in custom_resources(&out, &args, &ips).await? {
                customs.insert(r.info().qualified(), c);
                out.push(r);
            }
        }
        out
    };
    let access = args.access()?;
    let tls = access.tls()?;
    let mut resources = resources;
    for needed in access.needs_resources()? {
        if resources.iter().any(|r| r.info().qualified() == *needed) {
            continue;
        }
        if args.etcd.is_empty() && args.apiserver.is_none() {
            return Err("RBAC reads the cluster's roles and bindings: it needs --etcd or --kubeconfig (or --authorization-mode AlwaysAllow)".into());
        }
        let b = builtin(needed, &args.etcd_prefix)
            .ok_or_else(|| format!("{needed}: not a known resource"))?;
        resources.push(upstream(b.info, &b.prefix, &args)?);
    }
    let served: Vec<String> = resources.iter().map(|r| r.info().qualified()).collect();
    let server = Server::new(resources, config);
    let _ = made.set(server.clone());
    if let Some(a) = access.build(&server, args.apiserver.as_ref())? {
        server.set_access(a);
    }
    if let Some(log) = access.audit()? {
        server.set_audit(log);
    }
    if args.resources.iter().any(|r| r == "all") {
        tokio::spawn(follow_crds(server.clone(), args.clone(), ips, customs));
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("listen on {}: {e}", args.listen))?;
    access.check_listen(listener.local_addr()?, tls.is_some())?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!(
        "herald-server: serving {} on {scheme}://{} (kubectl --server={scheme}://{} get {} -A -w); {}",
        served.join(","),
        listener.local_addr()?,
        listener.local_addr()?,
        served[0],
        access.describe()
    );
    // On SIGINT or SIGTERM: not ready, serving for --shutdown-delay; then
    // `serve` stops accepting and drains every watch (see the module
    // `shutdown`); then the engines stop.
    let stopping = server.clone();
    let delay = args.shutdown_delay()?;
    let shutdown = async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        stopping.terminate();
        eprintln!(
            "herald-server: shutting down: serving {:.1} s more, then draining",
            delay.as_secs_f64()
        );
        tokio::time::sleep(delay).await;
    };
    // The engines served when the server returns (CRDs come and go).
    let serving = server.clone();
    match tls {
        Some(tls) => server.serve_tls(listener, tls, shutdown).await?,
        None => server.serve(listener, shutdown).await?,
    }
    for r in serving.resources() {
        r.engine().stop();
    }
    Ok(())
}
