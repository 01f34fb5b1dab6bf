//! Paths and encodings: namespace and name segments that are not what
//! they claim (`%2F`, `..`, NUL, 300 characters, uppercase, unicode,
//! invalid UTF-8, overlong percent-encodings), dot segments, `//` runs,
//! trailing slashes; and the content codings and headers of answers.
//!
//! The path is percent-decoded whole before anything reads it, as Go's
//! `URL.Path` (so an encoded slash separates segments, as on the
//! apiserver); a malformed escape, or bytes that are not UTF-8 once
//! decoded, are a `400`. A namespace segment must be a DNS-1123 label and
//! a name a valid path segment name, else `400 BadRequest` (a `Status`),
//! for a watch as for a list: a segment that decodes to `..` must never
//! widen a request to another namespace or to all of them. An empty
//! segment (`namespaces//pods`, or `%2F` decoded into one) is `404`.

use std::time::Duration;

use crate::client;
use crate::harness::{Case, Category, Expect, Guard};

const PATHS: Category = Category::Paths;
const ENC: Category = Category::Encoding;

fn path(name: &str, path: &str, expect: Expect) -> Case {
    Case::get(name, PATHS, path, expect)
}

fn bad_ns(name: &str, path: &str) -> Case {
    Case::get(name, PATHS, path, Expect::status(400, "namespace"))
}

fn bad_name(name: &str, path: &str) -> Case {
    Case::get(name, PATHS, path, Expect::status(400, "name"))
}

/// A path whose decoding leaves an empty segment, or one more: 404.
fn no_route(name: &str, path: &str) -> Case {
    Case::get(name, PATHS, path, Expect::status(404, "NotFound"))
}

/// A path that does not decode: 400, before anything reads it.
fn undecodable(name: &str, path: &str, needle: &str) -> Case {
    Case::get(name, PATHS, path, Expect::status(400, needle))
}

/// Raw bytes in the request target (what no URL type lets a client
/// send).
fn raw_target(name: &str, target: &[u8], expect: Expect) -> Case {
    let mut bytes = b"GET ".to_vec();
    bytes.extend_from_slice(target);
    bytes.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    Case::raw(name, ENC, bytes, Duration::from_secs(10), expect)
}

/// The path and encoding cases (a server of 2,000 demo pods: its full
/// list is well over the 128 KiB that gets gzip).
pub(crate) fn cases() -> Vec<Case> {
    let ns300 = "a".repeat(300);
    let name254 = "a".repeat(254);
    let many = "/a".repeat(1_000);
    vec![
        // Namespaces that decode to something else.
        no_route("namespace %2F", "/api/v1/namespaces/%2F/pods"),
        no_route("namespace demo-3%2F", "/api/v1/namespaces/demo-3%2F/pods"),
        bad_ns("namespace %2e%2e", "/api/v1/namespaces/%2e%2e/pods"),
        bad_ns("namespace %2E", "/api/v1/namespaces/%2E/pods"),
        no_route(
            "watch, namespace %2F",
            "/api/v1/namespaces/%2F/pods?watch=1",
        ),
        no_route(
            "watch, namespace demo-3%2F",
            "/api/v1/namespaces/demo-3%2F/pods?watch=1",
        ),
        bad_ns(
            "watch, namespace %2e%2e",
            "/api/v1/namespaces/%2e%2e/pods?watch=1",
        ),
        no_route(
            "get, namespace %2F",
            "/api/v1/namespaces/%2F/pods/pod-00001",
        ),
        path(
            "empty namespace",
            "/api/v1/namespaces//pods",
            Expect::status(404, "NotFound"),
        ),
        path(
            "watch, empty namespace",
            "/api/v1/namespaces//pods?watch=1",
            Expect::status(404, "NotFound"),
        ),
        bad_ns("namespace %00", "/api/v1/namespaces/demo%00/pods"),
        bad_ns(
            "namespace of 300 characters",
            &format!("/api/v1/namespaces/{ns300}/pods"),
        ),
        bad_ns(
            "namespace of 64 characters",
            &format!("/api/v1/namespaces/{}/pods", "a".repeat(64)),
        ),
        path(
            "namespace of 63 characters",
            &format!("/api/v1/namespaces/{}/pods", "a".repeat(63)),
            Expect::ok("\"items\":[]"),
        ),
        bad_ns("namespace uppercase", "/api/v1/namespaces/DEMO-1/pods"),
        bad_ns("namespace starting with -", "/api/v1/namespaces/-demo/pods"),
        bad_ns("namespace ending with -", "/api/v1/namespaces/demo-/pods"),
        bad_ns("namespace with a dot", "/api/v1/namespaces/demo.1/pods"),
        bad_ns("namespace unicode", "/api/v1/namespaces/d%C3%A9mo/pods"),
        undecodable(
            "namespace a lone %",
            "/api/v1/namespaces/%/pods",
            "invalid URL escape",
        ),
        undecodable(
            "namespace invalid UTF-8 (%ff%fe)",
            "/api/v1/namespaces/%ff%fe/pods",
            "not valid UTF-8",
        ),
        undecodable(
            "namespace overlong encoding of ..",
            "/api/v1/namespaces/%c0%ae%c0%ae/pods",
            "not valid UTF-8",
        ),
        path(
            "namespace %2D spelling of demo-1",
            "/api/v1/namespaces/demo%2D1/pods?limit=1",
            Expect::ok("\"demo-1\""),
        ),
        // Names.
        bad_name("name ..", "/api/v1/namespaces/demo-3/pods/.."),
        bad_name("name .", "/api/v1/namespaces/demo-3/pods/."),
        bad_name("name %2e%2e", "/api/v1/namespaces/demo-3/pods/%2e%2e"),
        bad_name(
            "watch, name ..",
            "/api/v1/namespaces/demo-3/pods/..?watch=1",
        ),
        // `pods/pod/00001`: a subresource, which Herald serves none of.
        no_route(
            "name with %2F",
            "/api/v1/namespaces/demo-1/pods/pod%2F00001",
        ),
        bad_name(
            "name with % after decoding",
            "/api/v1/namespaces/demo-1/pods/pod%2500001",
        ),
        undecodable(
            "name invalid UTF-8",
            "/api/v1/namespaces/demo-1/pods/%ff%fe",
            "not valid UTF-8",
        ),
        path(
            "name of 254 characters",
            &format!("/api/v1/namespaces/demo-3/pods/{name254}"),
            Expect::status(404, "not found"),
        ),
        path(
            "name unicode",
            "/api/v1/namespaces/demo-3/pods/%C3%A9t%C3%A9",
            Expect::status(404, "not found"),
        ),
        path(
            "name of another namespace's pod",
            "/api/v1/namespaces/demo-2/pods/pod-00001",
            Expect::status(404, "not found"),
        ),
        // Dot segments, slashes.
        path(
            ".. segment between namespaces",
            "/api/v1/namespaces/demo-3/../demo-1/pods",
            Expect::status(404, "NotFound"),
        ),
        path(
            ". segment",
            "/api/v1/./pods",
            Expect::status(404, "NotFound"),
        ),
        path(
            "// runs",
            "//api//v1//pods",
            Expect::status(404, "NotFound"),
        ),
        path(
            "// inside",
            "/api/v1//pods",
            Expect::status(404, "NotFound"),
        ),
        path(
            "trailing slash on a collection (the apiserver trims it)",
            "/api/v1/namespaces/demo-1/pods/",
            Expect::ok("PodList"),
        ),
        path(
            "trailing slash on the cluster collection",
            "/api/v1/pods/",
            Expect::ok("PodList"),
        ),
        path(
            "trailing slash on an object",
            "/api/v1/namespaces/demo-1/pods/pod-00001/",
            Expect::ok("pod-00001"),
        ),
        path(
            "a subresource",
            "/api/v1/namespaces/demo-1/pods/pod-00001/status",
            Expect::status(404, "NotFound"),
        ),
        path(
            "an encoded slash in the prefix (decoded, as Go's URL.Path)",
            "/api%2Fv1/pods",
            Expect::ok("PodList"),
        ),
        path(
            "uppercase path",
            "/API/V1/PODS",
            Expect::status(404, "NotFound"),
        ),
        path("1,000 segments", &many, Expect::status(404, "NotFound")),
        path(
            "an unknown resource",
            "/api/v1/namespaces/demo-1/widgets",
            Expect::status(404, "NotFound"),
        ),
        path(
            "an unknown group",
            "/apis/apps/v1/deployments",
            Expect::status(404, "NotFound"),
        ),
        // Bytes no URL type sends.
        raw_target(
            "NUL byte in the path",
            b"/api/v1/namespaces/de\x00mo/pods",
            Expect::codes(&[400]),
        ),
        raw_target(
            "invalid UTF-8 bytes in the path",
            b"/api/v1/namespaces/\xff\xfe/pods",
            Expect::codes(&[400]),
        ),
        raw_target(
            "a space in the path",
            b"/api/v1/name spaces/pods",
            Expect::codes(&[400]),
        ),
        raw_target(
            "a fragment",
            b"/api/v1/pods?limit=1#frag",
            Expect::codes(&[200, 400]),
        ),
        // Content codings and headers of answers.
        Case::new("gzip: a full list of 2,000 pods", ENC, |p| {
            let r = client::get_with(p.addr, "/api/v1/pods", &[("Accept-Encoding", "gzip")]);
            let zipped = r.header("content-encoding") == Some("gzip");
            assert!(zipped, "no Content-Encoding: gzip ({} bytes)", r.body.len());
            assert!(r.body.starts_with(&[0x1f, 0x8b]), "not gzip data");
            let summary = format!("{} gzip {} KiB", r.code, r.body.len() / 1024);
            Guard::answer("GET /api/v1/pods (gzip)", r, Expect::codes(&[200])).summary(summary)
        }),
        Case::new("gzip: a small list stays identity", ENC, |p| {
            let r = client::get_with(
                p.addr,
                "/api/v1/pods?limit=1",
                &[("Accept-Encoding", "gzip")],
            );
            assert_eq!(r.header("content-encoding"), None);
            Guard::answer("GET ?limit=1 (gzip)", r, Expect::ok("PodList"))
        }),
        Case::new("gzip;q=0 is refused gzip", ENC, |p| {
            let r = client::get_with(p.addr, "/api/v1/pods", &[("Accept-Encoding", "gzip;q=0")]);
            assert_eq!(r.header("content-encoding"), None);
            Guard::answer("GET (gzip;q=0)", r, Expect::ok("PodList"))
        }),
        Case::new("Accept-Encoding: br only", ENC, |p| {
            let r = client::get_with(p.addr, "/api/v1/pods", &[("Accept-Encoding", "br")]);
            assert_eq!(r.header("content-encoding"), None);
            Guard::answer("GET (br)", r, Expect::ok("PodList"))
        }),
        Case::new("Accept: protobuf", ENC, |p| {
            let r = client::get_with(
                p.addr,
                "/api/v1/pods?limit=1",
                &[("Accept", "application/vnd.kubernetes.protobuf")],
            );
            Guard::answer("GET (protobuf)", r, Expect::codes(&[200, 406]))
        }),
        Case::new("Accept: a Table of 2,000 pods", ENC, |p| {
            let r = client::get_with(
                p.addr,
                "/api/v1/pods",
                &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
            );
            Guard::answer("GET (Table)", r, Expect::ok("\"kind\":\"Table\""))
        }),
        Case::new("nosniff on every kind of answer", ENC, |p| {
            let mut g = Guard::new();
            for (path, expect) in [
                ("/api/v1/pods?limit=1", Expect::ok("PodList")),
                (crate::harness::PROBE_PATH, Expect::ok("pod-00001")),
                ("/api/v1/nothing", Expect::status(404, "NotFound")),
                ("/api/v1/pods?limit=x", Expect::status(400, "limit")),
                ("/version", Expect::ok("gitVersion")),
                ("/api/v1", Expect::ok("APIResourceList")),
            ] {
                let r = client::get(p.addr, path);
                // Expect::check requires nosniff of every answer with a
                // Content-Type; these have one.
                assert!(r.header("content-type").is_some(), "{path}");
                g = g.with(path, r, expect);
            }
            g
        }),
    ]
}
