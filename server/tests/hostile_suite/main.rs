//! The hostile-client suite: attacks on the real `herald-server` binary,
//! one table of cases per surface, grown with every surface the server
//! gets.
//!
//! ```text
//! cargo test -p herald-server --test hostile_suite -- --nocapture
//! ```
//!
//! Every case runs the same way (see `harness`): the server's memory and
//! a bystander's probe latency before, during (the attack's sockets and
//! threads held) and after (the attack gone, the server given a bounded
//! time to settle); the answers the attack got, each against the answer
//! the server owes; and the server's correctness afterwards: an exact
//! list and a live watch. One line per case goes to stderr.
//!
//! The cases, by file: `cases_params` (list options, selectors, continue
//! tokens, watch options), `cases_paths` (namespace and name segments,
//! dot segments and slashes, encodings, content codings), `cases_protocol`
//! (HTTP/1.1 framing, methods, versions, pipelining, slow and half-closed
//! clients), `cases_exhaustion` (never-read watches and lists, huge
//! selectors, idle watches and connections, deadlines), `cases_admission`
//! (waiting reads by the thousand, watch limits), `cases_access`
//! (credentials, per-user shares, audit, the open-watch listing). Cases
//! that do not interfere share a server process; each group below starts
//! its own (nine in all, the flags each needs), and the groups run one at
//! a time: about a minute and a half on 2 cores.
//!
//! Adding a case: a line in the table of its file. Adding a surface: a
//! file of cases and a group here.

#[path = "../support/proc.rs"]
mod proc;

mod cases_access;
mod cases_admission;
mod cases_exhaustion;
mod cases_params;
mod cases_paths;
mod cases_protocol;
mod client;
mod harness;

use harness::{Category, Server, run};

fn server(group: &'static str, pods: usize, rate: u32, flags: &[&'static str]) -> Server {
    Server {
        group,
        pods,
        rate,
        flags: flags.to_vec(),
    }
}

#[test]
fn parameters() {
    run(server("params", 200, 50, &[]), cases_params::cases());
}

#[test]
fn paths_and_encodings() {
    run(server("paths", 2_000, 50, &[]), cases_paths::cases());
}

#[test]
fn protocol_abuse() {
    run(server("protocol", 200, 50, &[]), cases_protocol::cases());
}

#[test]
fn exhaustion_by_connections_and_watches() {
    run(
        server("watches", 2_000, 50, &[]),
        cases_exhaustion::watch_cases(),
    );
}

#[test]
fn exhaustion_by_never_read_watches() {
    run(
        server("storm", 2_000, 5_000, &[]),
        cases_exhaustion::storm_cases(),
    );
}

#[test]
fn exhaustion_by_deadlines() {
    run(
        server(
            "deadlines",
            2_000,
            2_000,
            &["--request-timeout", "2", "--write-stall-timeout", "2"],
        ),
        cases_exhaustion::deadline_cases(),
    );
}

#[test]
fn exhaustion_by_waiting_reads() {
    run(
        server("admission", 2_000, 20, &[]),
        cases_admission::admission_cases(),
    );
}

#[test]
fn exhaustion_by_watch_limits() {
    run(
        server(
            "limits",
            200,
            50,
            &["--max-watches", "100", "--max-watches-per-client", "40"],
        ),
        cases_admission::limit_cases(),
    );
}

#[test]
fn access_control() {
    // The group's files, for the life of the test process.
    let dir = std::env::temp_dir().join(format!("herald-hostile-access-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| -> &'static str {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        Box::leak(path.display().to_string().into_boxed_str())
    };
    let tokens = file("tokens.csv", cases_access::TOKENS);
    let policy = file("policy.yaml", cases_access::POLICY);
    let log = Box::leak(dir.join("audit.log").display().to_string().into_boxed_str());
    run(
        server(
            "access",
            200,
            50,
            &[
                "--token-auth-file",
                tokens,
                "--anonymous-auth",
                "--authorization-mode",
                "AlwaysAllow",
                "--audit-policy-file",
                policy,
                "--audit-log-path",
                log,
                "--max-watches-per-client",
                "40",
            ],
        ),
        cases_access::cases(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The suite covers every surface, with at least 60 cases in all.
#[test]
fn the_suite_covers_every_surface() {
    let all: Vec<_> = [
        cases_params::cases(),
        cases_paths::cases(),
        cases_protocol::cases(),
        cases_exhaustion::watch_cases(),
        cases_exhaustion::storm_cases(),
        cases_exhaustion::deadline_cases(),
        cases_admission::admission_cases(),
        cases_admission::limit_cases(),
        cases_access::cases(),
    ]
    .into_iter()
    .flatten()
    .map(|c| c.category())
    .collect();
    assert!(all.len() >= 60, "{} cases", all.len());
    for category in [
        Category::Params,
        Category::Paths,
        Category::Encoding,
        Category::Protocol,
        Category::Exhaustion,
        Category::Access,
    ] {
        let n = all.iter().filter(|&&c| c == category).count();
        eprintln!("{category}: {n} cases");
        assert!(n >= 5, "{category}: {n} cases");
    }
    eprintln!("{} cases in all", all.len());
}
