//! Query parameters: every list option with bad, empty, repeated and huge
//! values, selectors with every operator malformed, forged continue
//! tokens, and the watch options.
//!
//! Parse errors are `400 BadRequest`, options that parse but break a rule
//! of the apiserver's `ValidateListOptions` are `422 Invalid`; a watch
//! refused for its options is refused before it starts (never a `200`).
//! The first of a repeated parameter counts (Go's `url.Values.Get`);
//! unknown parameters are ignored.

use std::time::{Duration, Instant};

use crate::client::{self, WatchStream};
use crate::harness::{Case, Category, Expect, Guard};
use crate::proc::Proc;

const P: Category = Category::Params;

fn list(name: &str, query: &str, expect: Expect) -> Case {
    Case::get(name, P, format!("/api/v1/pods?{query}"), expect)
}

fn watch(name: &str, query: &str, expect: Expect) -> Case {
    Case::get(name, P, format!("/api/v1/pods?watch=1&{query}"), expect)
}

fn label(name: &str, selector: &str) -> Case {
    label_says(name, selector, "unable to parse requirement")
}

/// A bad label selector refused with Go's parser's words (`labels.Parse`:
/// an error after a whole requirement is not "unable to parse
/// requirement").
fn label_says(name: &str, selector: &str, needle: &str) -> Case {
    list(
        &format!("labelSelector: {name}"),
        &format!("labelSelector={selector}"),
        Expect::status(400, needle),
    )
}

fn field(name: &str, selector: &str, needle: &str) -> Case {
    list(
        &format!("fieldSelector: {name}"),
        &format!("fieldSelector={selector}"),
        Expect::status(400, needle),
    )
}

/// A continue token of the server's and the version it was issued at.
fn token(p: &Proc) -> (String, String) {
    let r = client::get(p.addr, "/api/v1/pods?limit=2");
    let v = r.json().expect("a page");
    let token = v["metadata"]["continue"].as_str().expect("a token");
    let rv = v["metadata"]["resourceVersion"]
        .as_str()
        .expect("a version");
    (token.to_owned(), rv.to_owned())
}

/// `token` with its `part`-th dot-separated field replaced (Herald's
/// tokens are `h2.<engine>.<generation>.<version>.<key>`); a token of
/// another shape gets a character changed instead.
fn forge(token: &str, part: usize, with: &str) -> String {
    let mut parts: Vec<&str> = token.split('.').collect();
    if parts.len() == 5 {
        parts[part] = with;
        return parts.join(".");
    }
    format!("{}x", &token[..token.len() - 1])
}

/// A continue case: `query(token, rv)` answered as `expect`.
fn with_token(name: &str, query: impl Fn(&str, &str) -> String + 'static, expect: Expect) -> Case {
    Case::new(name, P, move |p| {
        let (token, rv) = token(p);
        let q = query(&token, &rv);
        let path = format!("/api/v1/pods?{q}");
        Guard::answer(format!("GET {path}"), client::get(p.addr, &path), expect)
    })
}

/// A watch that must stay open for `open` (its stream neither ends nor
/// fails); held until the case ends.
fn watch_stays_open(name: &str, query: &'static str, open: Duration) -> Case {
    Case::new(name, P, move |p| {
        let path = format!("/api/v1/pods?watch=1&{query}");
        let mut w = WatchStream::open(p.addr, &path, None).expect("a connection");
        if w.head.code == 200 {
            let (lines, ended) = w.read_until_end(Instant::now() + open);
            assert!(
                !ended,
                "the watch ended at once ({} lines): {lines:?}",
                lines.len()
            );
        }
        let head = w.head.clone();
        Guard::answer(format!("GET {path}"), head, Expect::codes(&[200])).hold(w)
    })
}

/// A `labelSelector` of `values` values in one set.
pub(crate) fn big_set(values: usize) -> String {
    let list: Vec<String> = (0..values).map(|i| format!("v{i}")).collect();
    format!("app+in+({})", list.join(","))
}

/// The parameter cases (a server of 200 demo pods).
pub(crate) fn cases() -> Vec<Case> {
    let long = "a".repeat(64);
    vec![
        // Label selectors: each operator malformed.
        label("unclosed set", "app+in+(web"),
        label("notin, trailing comma", "app+notin+(x,"),
        label("empty set", "app+in+()"),
        label("set without parentheses", "app+in+a"),
        label_says(
            "no key",
            "%3Dx",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        label_says(
            "!= without key",
            "!%3Dx",
            "found '!=', expected: !, identifier, or 'end of string'",
        ),
        label_says(
            "two =",
            "app%3Dx%3Dy",
            "found '=', expected: ',' or 'end of string'",
        ),
        label("===", "app%3D%3D%3Dx"),
        label("!==", "app!%3D%3Dx"),
        label_says(
            "!key=value",
            "!app%3Dx",
            "found '=', expected: ',' or 'end of string'",
        ),
        label("> of a fraction", "app%3E1.5"),
        label_says(
            "a ) too many",
            "app+in+(a))",
            "found ')', expected: ',' or 'end of string'",
        ),
        label("lone !", "!"),
        label("!!key", "!!app"),
        label("> without value", "app%3E"),
        label("< of a non-integer", "app%3Cx"),
        label("unknown operator", "app+gt+5"),
        label_says(
            "empty requirement",
            "app,,b",
            "found ',', expected: identifier after ','",
        ),
        label_says(
            "trailing comma",
            "app%3Dx,",
            "found '', expected: identifier after ','",
        ),
        label("key starting with -", "-app%3Dx"),
        label("value starting with -", "app%3D-bad-"),
        label("64-character key", &format!("{long}%3Dx")),
        label("64-character value", &format!("app%3D{long}")),
        label("two prefixes", "ex/am/ple%3Dx"),
        label("NUL in a value", "app%3Dapp-1%00"),
        // Bytes that are not UTF-8: a 400 (see SECURITY.md); a malformed
        // escape drops its pair, as Go's `url.ParseQuery`: every pod.
        list(
            "labelSelector: invalid UTF-8 in a value",
            "labelSelector=app%3D%ff",
            Expect::status(400, "not valid UTF-8"),
        ),
        list(
            "labelSelector: malformed percent-encoding",
            "labelSelector=%zz%",
            Expect::ok("PodList"),
        ),
        // Field selectors.
        field(
            "no operator",
            "spec.nodeName",
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
        ),
        field("no field", "%3Dx", "invalid fieldSelector"),
        field(
            "set operator",
            "spec.nodeName+in+(a)",
            "can't understand 'spec.nodeName in (a)'",
        ),
        field(
            "> operator",
            "spec.nodeName%3E1",
            "can't understand 'spec.nodeName",
        ),
        field(
            "!field",
            "!spec.nodeName",
            "can't understand '!spec.nodeName'",
        ),
        field(
            "===",
            "spec.nodeName%3D%3D%3Dx",
            "invalid field selector: unescaped character in value: 61",
        ),
        field(
            "!==",
            "spec.nodeName!%3D%3Dx",
            "invalid field selector: unescaped character in value: 61",
        ),
        field(
            "dangling escape",
            "spec.nodeName%3Dx%5C",
            "invalid field selector: invalid escape sequence: ",
        ),
        field(
            "unsupported field",
            "spec.fooBar%3Dx",
            "field label not supported",
        ),
        field(
            "metadata.uid (not a pod field label)",
            "metadata.uid%3Dx",
            "field label not supported",
        ),
        field(
            "unsupported second requirement",
            "spec.nodeName%3Dnode-1,spec.fooBar%3Dy",
            "field label not supported",
        ),
        watch(
            "watch with an unsupported field",
            "fieldSelector=spec.fooBar%3Dx",
            Expect::status(400, "field label not supported"),
        ),
        list(
            "fieldSelector: metadata.name",
            "fieldSelector=metadata.name%3Dpod-00001",
            Expect::ok("\"pod-00001\""),
        ),
        list(
            "fieldSelector: status.phase!=",
            "fieldSelector=status.phase!%3DRunning",
            Expect::ok("PodList"),
        ),
        Case::get(
            "fieldSelector: another namespace",
            P,
            "/api/v1/namespaces/demo-2/pods?fieldSelector=metadata.namespace%3Ddemo-1",
            Expect::ok("\"items\":[]"),
        ),
        // resourceVersion.
        list(
            "resourceVersion non-numeric",
            "resourceVersion=abc",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion negative",
            "resourceVersion=-3",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion past u64",
            "resourceVersion=99999999999999999999999",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion with a space",
            "resourceVersion=%205",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion in exponent form",
            "resourceVersion=1e9",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion empty (unset)",
            "resourceVersion=",
            Expect::ok("PodList"),
        ),
        watch(
            "watch with a non-numeric resourceVersion",
            "resourceVersion=abc",
            Expect::status(
                400,
                "invalid resource version: resourceVersion: Invalid value",
            ),
        ),
        list(
            "resourceVersion the cache never reaches",
            "resourceVersion=999999999&limit=1",
            Expect::status(504, "ResourceVersionTooLarge"),
        ),
        // resourceVersionMatch and the rules between options (422).
        list(
            "resourceVersionMatch unknown",
            "resourceVersionMatch=Bogus",
            Expect::status_in(&[400, 422], "resourceVersionMatch"),
        ),
        list(
            "resourceVersionMatch=NotOlderThan, no resourceVersion",
            "resourceVersionMatch=NotOlderThan",
            Expect::status(422, "Invalid"),
        ),
        list(
            "resourceVersionMatch=Exact with resourceVersion=0",
            "resourceVersionMatch=Exact&resourceVersion=0",
            Expect::status(422, "Invalid"),
        ),
        list(
            "resourceVersionMatch=Exact without resourceVersion",
            "resourceVersionMatch=Exact",
            Expect::status(422, "Invalid"),
        ),
        list(
            "resourceVersionMatch empty (unset)",
            "resourceVersionMatch=",
            Expect::ok("PodList"),
        ),
        list(
            "sendInitialEvents on a list",
            "sendInitialEvents=true",
            Expect::status(422, "sendInitialEvents"),
        ),
        // Anything but `0` and `false` is true (the apiserver's
        // conversion): on a list, forbidden.
        list(
            "sendInitialEvents not a boolean",
            "sendInitialEvents=maybe",
            Expect::status(422, "Invalid"),
        ),
        watch(
            "watch, sendInitialEvents without resourceVersionMatch",
            "sendInitialEvents=true",
            Expect::status(422, "Invalid"),
        ),
        watch(
            "watch, resourceVersionMatch without sendInitialEvents",
            "resourceVersionMatch=NotOlderThan&resourceVersion=1",
            Expect::status(422, "Invalid"),
        ),
        watch(
            "watch, sendInitialEvents with Exact",
            "sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
            Expect::status(422, "Invalid"),
        ),
        // limit.
        list("limit negative (none)", "limit=-5", Expect::ok("PodList")),
        list(
            "limit non-numeric",
            "limit=ten",
            Expect::status(400, "limit"),
        ),
        list(
            "limit past i64",
            "limit=99999999999999999999999",
            Expect::status(400, "limit"),
        ),
        list(
            "limit i64::MAX",
            "limit=9223372036854775807",
            Expect::ok("PodList"),
        ),
        // An empty integer does not convert (the apiserver's 400).
        list("limit empty", "limit=", Expect::status(400, "limit")),
        list(
            "limit repeated, the first counts (1)",
            "limit=1&limit=abc",
            Expect::ok("continue"),
        ),
        list(
            "limit repeated, the first counts (bad)",
            "limit=abc&limit=1",
            Expect::status(400, "limit"),
        ),
        // continue.
        list(
            "continue not a token",
            "limit=2&continue=not-a-token",
            Expect::status(400, "continue"),
        ),
        list(
            "continue base64 garbage",
            "limit=2&continue=eyJydiI6MSwic3RhcnQiOiJkZW1vLTEvIn0%3D",
            Expect::status(400, "continue"),
        ),
        list(
            "continue 10 KB of garbage",
            &format!("limit=2&continue={}", "A".repeat(10_000)),
            Expect::status(400, "continue"),
        ),
        with_token(
            "continue forged: another engine's",
            |t, _| format!("limit=2&continue={}", forge(t, 1, "0000000000000000")),
            Expect::status_in(&[400, 410], ""),
        ),
        with_token(
            "continue forged: a malformed key",
            |t, _| format!("limit=2&continue={}", forge(t, 4, "zz")),
            Expect::status(400, "continue"),
        ),
        with_token(
            "continue from a compacted version",
            |t, _| format!("limit=2&continue={}", forge(t, 3, "1")),
            Expect::status_in(&[400, 410], ""),
        ),
        with_token(
            "continue from a future version",
            |t, _| format!("limit=2&continue={}", forge(t, 3, "99999999")),
            Expect::status_in(&[400, 410], ""),
        ),
        with_token(
            "continue with a resourceVersion",
            |t, _| format!("limit=2&resourceVersion=5&continue={t}"),
            Expect::status(422, "Invalid"),
        ),
        Case::new("continue reused after changes", P, |p| {
            let (token, rv) = token(p);
            // The demo changes 50 times a second: the next page is still
            // read at the first page's version.
            std::thread::sleep(Duration::from_millis(300));
            let path = format!("/api/v1/pods?limit=2&continue={token}");
            let needle = format!("\"resourceVersion\":\"{rv}\"");
            Guard::answer(
                path.clone(),
                client::get(p.addr, &path),
                Expect::ok(&needle),
            )
        }),
        // watch, booleans, timeouts.
        list(
            "watch not a boolean: a watch, as the apiserver converts it",
            "watch=sure&timeoutSeconds=1",
            Expect::ok("ADDED"),
        ),
        list("watch empty", "watch=&limit=1", Expect::codes(&[200, 400])),
        list(
            "watch repeated, the first counts",
            "watch=true&watch=garbage&timeoutSeconds=1&labelSelector=app%3Dnone",
            Expect::ok(""),
        ),
        watch(
            "allowWatchBookmarks=maybe: true, as the apiserver converts it",
            "allowWatchBookmarks=maybe&timeoutSeconds=1",
            Expect::ok("ADDED"),
        ),
        watch(
            "timeoutSeconds negative",
            "timeoutSeconds=-1",
            Expect::status(400, "timeoutSeconds"),
        ),
        watch(
            "timeoutSeconds past u64",
            "timeoutSeconds=99999999999999999999",
            Expect::status(400, "timeoutSeconds"),
        ),
        list(
            "timeoutSeconds non-numeric on a list",
            "timeoutSeconds=abc",
            Expect::status(400, "timeoutSeconds"),
        ),
        watch_stays_open(
            "timeoutSeconds=0: the default timeout",
            "timeoutSeconds=0&resourceVersion=0&labelSelector=app%3Dnone",
            Duration::from_millis(1500),
        ),
        watch_stays_open(
            "timeoutSeconds u64::MAX",
            "timeoutSeconds=18446744073709551615&resourceVersion=0&labelSelector=app%3Dnone",
            Duration::from_millis(1000),
        ),
        Case::new("timeoutSeconds=1 ends the watch", P, |p| {
            let path = "/api/v1/pods?watch=1&timeoutSeconds=1&labelSelector=app%3Dapp-1";
            let mut w = WatchStream::open(p.addr, path, None).expect("a connection");
            let (_, ended) = w.read_until_end(Instant::now() + Duration::from_secs(5));
            assert!(ended, "the watch was still open after 5 s");
            Guard::answer(path, w.head.clone(), Expect::codes(&[200]))
        }),
        // Unknown, empty, repeated and many parameters.
        list(
            "unknown parameters ignored",
            "pretty=1&foo=bar&limit=1",
            Expect::ok("continue"),
        ),
        list(
            "every option empty",
            "resourceVersion=&resourceVersionMatch=&limit=&continue=&labelSelector=&fieldSelector=&timeoutSeconds=",
            Expect::status(400, "limit"),
        ),
        list(
            "labelSelector repeated, the first counts",
            "labelSelector=app%3Dapp-1&labelSelector=(((",
            Expect::ok("PodList"),
        ),
        Case::new("16,000 distinct parameters", P, |p| {
            // As many distinct names as fit hyper's 64 KiB URI limit (four
            // bytes each): read in one pass, answered at once.
            let alphabet: Vec<char> = ('a'..='z').chain('0'..='9').collect();
            let mut path = String::from("/api/v1/pods?limit=1");
            for i in 0..16_000 {
                let n = alphabet.len();
                let name: String = [i / (n * n), (i / n) % n, i % n]
                    .iter()
                    .map(|&k| alphabet[k % n])
                    .collect();
                path.push('&');
                path.push_str(&name);
            }
            let start = Instant::now();
            let r = client::get(p.addr, &path);
            let took = start.elapsed();
            assert!(took < Duration::from_secs(2), "answered in {took:?}");
            Guard::answer("16,000 names", r, Expect::codes(&[200, 400]))
                .summary(format!("in {} ms", took.as_millis()))
        }),
        list(
            "labelSelector over 16 KiB",
            &format!("labelSelector=app%3D{}", "x".repeat(17_000)),
            Expect::status(400, "bytes"),
        ),
        watch(
            "watch with a fieldSelector over 16 KiB",
            &format!("fieldSelector=spec.nodeName%3D{}", "x".repeat(17_000)),
            Expect::status(400, "bytes"),
        ),
        list(
            "labelSelector of 2,600 values (15 KiB)",
            &format!("labelSelector={}", big_set(2_600)),
            Expect::codes(&[200, 400]),
        ),
    ]
}
