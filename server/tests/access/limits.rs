//! Fair limits with access control on: a request counts against its
//! user, not its address.

use std::time::{Duration, Instant};

use herald_server::{AccessConfig, ServerConfig};

use crate::fixture::{dir, start_with, status};
use crate::proc;

#[test]
fn watches_are_bounded_per_user_not_per_address() {
    let d = dir("per-user");
    let c = start_with(
        &d,
        None,
        ServerConfig {
            max_watches_per_client: 2,
            ..ServerConfig::default()
        },
        AccessConfig::default(),
    );
    let path = "/api/v1/pods?watch=1";
    let open = |token: &str| {
        proc::open_stream(c.addr, path, &format!("Authorization: Bearer {token}\r\n"))
    };
    // bob's two watches fill his share; his third is refused.
    let first = open("bob-token");
    let _second = open("bob-token");
    let (code, body) = c.get(path, Some("bob-token"));
    assert_eq!(code, 429, "{body}");
    assert_eq!(status(&body)["reason"], "TooManyRequests");
    // root, from the same address, still watches (and lists).
    let _root = open("root-token");
    assert_eq!(c.get("/api/v1/pods", Some("root-token")).0, 200);
    // bob's closed watch gives him his share back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, _) = c.get("/api/v1/pods?watch=1&timeoutSeconds=1", Some("bob-token"));
        if code == 200 {
            break;
        }
        assert_eq!(code, 429);
        assert!(
            Instant::now() < deadline,
            "bob's closed watch still counted after 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
