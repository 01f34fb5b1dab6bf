//! A hostile apiserver: answers no real one gives (a 500, a body that is
//! not JSON, an object of another kind, a version that goes back, a
//! stream cut inside an event, a 410 as an answer and as an `ERROR`
//! event, a short watch that owes a bookmark and sends none). Each is a
//! typed error or a counted skip, never a panic or a half-applied
//! change; and an engine fed through a reflector follows the apiserver
//! through all of them to the right state.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use herald::read::ReadAt;
use herald::reflector::{Reflector, ReflectorConfig};
use herald::source::{Source, SourceError, SourceEvent};
use herald::{Config, Engine};
use herald_apiserver::{ApiServer, ApiServerConfig, Bridge, ConnectError};
use herald_kube::{Decoder, ResourceInfo};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};

/// What the fake answers a request with.
#[derive(Clone)]
enum Reply {
    /// A whole body.
    Body(u16, &'static str, String),
    /// Chunks, then the end of the stream.
    Chunks(Vec<String>),
}

type Script = Arc<Mutex<Box<dyn FnMut(&str) -> Reply + Send>>>;

/// The fake apiserver, on loopback; `script` answers each request (its
/// path and query); every request's path and query is recorded.
struct Fake {
    addr: SocketAddr,
    script: Script,
    seen: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Fake {
    fn start() -> Fake {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let script: Script = Arc::new(Mutex::new(Box::new(|_: &str| {
            Reply::Body(404, "text/plain", "no script".into())
        })));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (s, w) = (script.clone(), seen.clone());
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (s, w) = (s.clone(), w.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let uri = req.uri().to_string();
                            w.lock().unwrap().push(uri.clone());
                            let reply = (s.lock().unwrap())(&uri);
                            async move {
                                let (status, ctype, chunks): (u16, &str, Vec<String>) = match reply
                                {
                                    Reply::Body(status, ctype, body) => (status, ctype, vec![body]),
                                    Reply::Chunks(chunks) => (200, "application/json", chunks),
                                };
                                let frames = futures_stream(chunks);
                                let body = StreamBody::new(frames).boxed();
                                Ok::<_, Infallible>(
                                    Response::builder()
                                        .status(status)
                                        .header("content-type", ctype)
                                        .body(body)
                                        .unwrap(),
                                )
                            }
                        });
                    let io = hyper_util::rt::TokioIo::new(tcp);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Fake {
            addr,
            script,
            seen,
            _runtime: runtime,
        }
    }

    fn script(&self, f: impl FnMut(&str) -> Reply + Send + 'static) {
        *self.script.lock().unwrap() = Box::new(f);
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// A kubeconfig naming it, in a file of its own.
    fn kubeconfig(&self) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("herald-hostile-{}.kubeconfig", self.addr.port()));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {{server: \"http://{}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: u}}\ncurrent-context: fake\n",
                self.addr
            ),
        )
        .unwrap();
        path
    }
}

/// Chunks as a body stream, each a frame, a short pause between them.
fn futures_stream(
    chunks: Vec<String>,
) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send {
    let queue: VecDeque<String> = chunks.into();
    futures_util::stream::unfold(queue, |mut queue| async move {
        let chunk = queue.pop_front()?;
        tokio::time::sleep(Duration::from_millis(5)).await;
        Some((Ok(Frame::data(Bytes::from(chunk))), queue))
    })
}

const VERSION: &str = r#"{"major":"1","minor":"37","gitVersion":"v1.37.2-hostile"}"#;

fn pod(name: &str, rv: u64) -> String {
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}"#
    )
}

fn item(name: &str, rv: u64) -> String {
    format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}"#)
}

fn list(rv: u64, items: &[String]) -> String {
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
        items.join(",")
    )
}

fn event(kind: &str, object: &str) -> String {
    format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n")
}

fn status(code: u16, message: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}","reason":"Expired","code":{code}}}"#
    )
}

fn json(body: String) -> Reply {
    Reply::Body(200, "application/json", body)
}

/// Connects to the fake, which answers `/version`, the first list's
/// probe of the watch cache (a watch from version 1: the watch cache's
/// 410, naming its oldest version), and then `script`.
fn connect(fake: &Fake, mut script: impl FnMut(&str) -> Reply + Send + 'static) -> ApiServer {
    fake.script(move |uri| {
        if uri == "/version" {
            json(VERSION.into())
        } else if uri.ends_with("?watch=1&resourceVersion=1&timeoutSeconds=1") {
            Reply::Body(
                410,
                "application/json",
                status(410, "too old resource version: 1 (1)"),
            )
        } else {
            script(uri)
        }
    });
    ApiServer::connect(
        ApiServerConfig::kubeconfig(fake.kubeconfig())
            .protobuf(false)
            .watch_list(false),
    )
    .unwrap()
}

fn pods(api: &ApiServer) -> herald_apiserver::ApiServerSource {
    api.source(&ResourceInfo::pods(), Decoder::new())
}

#[test]
fn a_refused_or_garbled_version_fails_the_connection() {
    let fake = Fake::start();
    fake.script(|_| Reply::Body(500, "application/json", status(500, "etcd is down")));
    let e = ApiServer::connect(ApiServerConfig::kubeconfig(fake.kubeconfig())).unwrap_err();
    assert!(
        matches!(&e, ConnectError::Unreachable(m) if m.contains("500") && m.contains("etcd is down")),
        "{e}"
    );
    fake.script(|_| Reply::Body(200, "application/json", "<html>".into()));
    let e = ApiServer::connect(ApiServerConfig::kubeconfig(fake.kubeconfig())).unwrap_err();
    assert!(
        matches!(&e, ConnectError::Unreachable(m) if m.contains("not JSON")),
        "{e}"
    );
    let missing =
        ApiServer::connect(ApiServerConfig::kubeconfig("/nonexistent/kubeconfig")).unwrap_err();
    assert!(matches!(missing, ConnectError::Config(_)), "{missing}");
}

#[test]
fn bad_lists_are_typed_errors_and_foreign_objects_are_counted_skips() {
    let fake = Fake::start();
    let answers = Arc::new(Mutex::new(VecDeque::from([
        Reply::Body(500, "application/json", status(500, "boom")),
        json("not json".into()),
        json(r#"{"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[]}"#.into()),
        json(list(9, &[item("a", 3), r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n","resourceVersion":"4"}}"#.into(), item("b", 7)])),
    ])));
    let a = answers.clone();
    let api = connect(&fake, move |_| {
        a.lock().unwrap().pop_front().unwrap_or(json(list(9, &[])))
    });
    let source = pods(&api);
    for want in ["500", "a JSON list", "NodeList"] {
        match source.list() {
            Err(SourceError::Unavailable(m)) => assert!(m.contains(want), "{m}"),
            other => panic!("{want}: {other:?}"),
        }
    }
    let listing = source.list().unwrap();
    let keys: Vec<_> = listing
        .items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect();
    assert_eq!(
        (keys, listing.revision.get()),
        (vec![("ns/a".into(), 3), ("ns/b".into(), 7)], 9)
    );
    let report = source.undecodable();
    assert_eq!(
        (report.now, report.by_reason.clone()),
        (1, vec![("shape", 1)])
    );
    assert!(report.last.unwrap().1.contains("Node"));
}

/// The events a watch from `after` gives until it ends, or `n` of them.
fn drain(source: &impl Source, after: u64, n: usize) -> (Vec<SourceEvent>, Option<SourceError>) {
    let mut watch = source.watch(after.into()).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < n && Instant::now() < deadline {
        match watch.next(Duration::from_millis(100)) {
            Ok(Some(e)) => got.push(e),
            Ok(None) => {}
            Err(e) => return (got, Some(e)),
        }
    }
    (got, None)
}

fn versions(events: &[SourceEvent]) -> Vec<u64> {
    events
        .iter()
        .map(|e| match e {
            SourceEvent::Change(c) => c.resource_version().get(),
            SourceEvent::Progress(rv) => rv.get(),
            _ => 0,
        })
        .collect()
}

#[test]
fn hostile_streams_end_the_watch_with_a_typed_error_after_what_was_good() {
    let fake = Fake::start();
    let streams = Arc::new(Mutex::new(VecDeque::from([
        // A version that goes back.
        Reply::Chunks(vec![
            event("ADDED", &pod("a", 11)),
            event("MODIFIED", &pod("a", 12)),
            event("MODIFIED", &pod("a", 12)),
        ]),
        // Cut inside an event.
        Reply::Chunks(vec![
            event("ADDED", &pod("a", 11)),
            r#"{"type":"MODIFIED","object":{"kind":"Po"#.into(),
        ]),
        // A frame that is not JSON.
        Reply::Chunks(vec!["{not json}\n".into()]),
        // An object of another kind: skipped and counted, the stream goes on.
        Reply::Chunks(vec![
            event(
                "ADDED",
                r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n","resourceVersion":"11"}}"#,
            ),
            event("ADDED", &pod("b", 12)),
            event(
                "BOOKMARK",
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}"#,
            ),
            event(
                "BOOKMARK",
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"20"}}"#,
            ),
            event("ERROR", &status(410, "too old resource version: 10 (30)")),
        ]),
        // 410 as the answer.
        Reply::Body(
            410,
            "application/json",
            status(410, "too old resource version: 10 (31)"),
        ),
        // An event type no apiserver sends.
        Reply::Chunks(vec![event("EXPLODED", &pod("a", 11))]),
    ])));
    let s = streams.clone();
    let api = connect(&fake, move |_| {
        s.lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Body(500, "text/plain", "done".into()))
    });
    let source = pods(&api);

    let (got, e) = drain(&source, 10, 10);
    assert_eq!(versions(&got), [11, 12]);
    assert!(
        matches!(&e, Some(SourceError::Unavailable(m)) if m.contains("went back")),
        "{e:?}"
    );

    let (got, e) = drain(&source, 10, 10);
    assert_eq!(versions(&got), [11]);
    assert!(
        matches!(&e, Some(SourceError::Unavailable(m)) if m.contains("inside an event")),
        "{e:?}"
    );

    let (got, e) = drain(&source, 10, 10);
    assert!(got.is_empty());
    assert!(
        matches!(&e, Some(SourceError::Unavailable(m)) if m.contains("JSON watch event")),
        "{e:?}"
    );

    let (got, e) = drain(&source, 10, 10);
    // The Node skipped; the bookmark at 12 (no progress past b) dropped.
    assert_eq!(versions(&got), [12, 20]);
    assert!(matches!(got[1], SourceEvent::Progress(_)));
    assert_eq!(
        e,
        Some(SourceError::Compacted {
            requested: 20.into(),
            compacted: 30.into()
        })
    );
    assert_eq!(source.undecodable().by_reason, vec![("shape", 1)]);

    let (_, e) = drain(&source, 10, 10);
    assert_eq!(
        e,
        Some(SourceError::Compacted {
            requested: 10.into(),
            compacted: 31.into()
        })
    );

    let (_, e) = drain(&source, 10, 10);
    assert!(
        matches!(&e, Some(SourceError::Unavailable(m)) if m.contains("EXPLODED")),
        "{e:?}"
    );
    // Each watch asked for bookmarks, from the version it was given.
    let watches: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|u| u.contains("watch=1"))
        .collect();
    assert_eq!(watches.len(), 6, "{watches:?}");
    assert!(
        watches
            .iter()
            .all(|u| u.contains("allowWatchBookmarks=true") && u.contains("resourceVersion=10"))
    );
}

#[test]
fn a_short_watch_that_owes_a_bookmark_and_sends_none_turns_reads_through() {
    let fake = Fake::start();
    let api = connect(&fake, |uri| {
        if uri.contains("watch=1") {
            // Never a bookmark: the stream ends at once, as a short watch
            // ends at its deadline.
            Reply::Chunks(vec![])
        } else {
            json(list(50, &[item("a", 3)]))
        }
    });
    let source = pods(&api);
    assert!(source.progress_is_reliable());
    // The apiserver is at 50; the watch from 10 asks for progress.
    assert_eq!(source.current_revision().unwrap().get(), 50);
    let mut watch = source.watch(10.into()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while source.progress_is_reliable() && Instant::now() < deadline {
        // As a reflector asks while a read waits; a watch the fake ended at
        // once ends with an error, and is opened again, as the reflector
        // does.
        source.request_progress().unwrap();
        match watch.next(Duration::from_millis(50)) {
            Ok(None) => {}
            Err(SourceError::Unavailable(m)) => {
                assert!(m.contains("at once"), "{m}");
                watch = source.watch(10.into()).unwrap();
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        !source.progress_is_reliable(),
        "a short watch owed a bookmark"
    );
    assert!(
        fake.seen()
            .iter()
            .any(|u| u.contains("watch=1") && u.contains("timeoutSeconds=3"))
    );
    let stats = source.stats();
    assert!(
        stats.progress_watches >= 1 && !stats.progress_reliable,
        "{stats:?}"
    );
}

#[test]
fn an_engine_follows_a_hostile_apiserver_to_the_right_state() {
    let fake = Fake::start();
    // A list that fails, one that works (then the state the watches lead
    // to: what a consistent read finds); watches: one
    // that goes back after a good change, one cut inside an event after a
    // good one, then a good one (then streams that end at once).
    let lists = Arc::new(Mutex::new(VecDeque::from([
        Reply::Body(503, "application/json", status(503, "starting")),
        json(list(10, &[item("a", 3), item("b", 7)])),
    ])));
    let watches = Arc::new(Mutex::new(VecDeque::from([
        Reply::Chunks(vec![
            event("MODIFIED", &pod("a", 11)),
            event("MODIFIED", &pod("a", 10)),
        ]),
        Reply::Chunks(vec![
            event("DELETED", &pod("b", 12)),
            "{\"type\":\"ADD".into(),
        ]),
        Reply::Chunks(vec![
            event("ADDED", &pod("c", 13)),
            event(
                "BOOKMARK",
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"15"}}"#,
            ),
        ]),
    ])));
    let api = connect(&fake, move |uri| {
        if uri.contains("watch=1") {
            watches
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Reply::Chunks(vec![]))
        } else {
            // The apiserver now: where the watches below end.
            let next = lists.lock().unwrap().pop_front();
            next.unwrap_or_else(|| json(list(15, &[item("a", 11), item("c", 13)])))
        }
    });
    let (engine, writer) = Engine::new(Config::default()).unwrap();
    let reflector = Reflector::spawn(
        Arc::new(pods(&api)),
        engine.clone(),
        writer,
        ReflectorConfig::default(),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while engine.resource_version().get() < 15 {
        assert!(
            Instant::now() < deadline,
            "at {}",
            engine.resource_version().get()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let listed = engine
        .list(&herald::read::ListRequest::new().at(ReadAt::Any))
        .unwrap();
    let state: Vec<_> = listed
        .items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect();
    assert_eq!(state, [("ns/a".to_owned(), 11), ("ns/c".to_owned(), 13)]);
    // The watches resumed where the engine was: 10, 11, 12 (the first
    // list's probe from version 1 aside).
    let froms: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|u| u.contains("watch=1") && !u.contains("resourceVersion=1&"))
        .take(3)
        .map(|u| {
            u.split("resourceVersion=")
                .nth(1)
                .unwrap()
                .split('&')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(froms, ["10", "11", "12"]);
    drop(reflector);
}

fn initial_events_end(rv: u64) -> String {
    event(
        "BOOKMARK",
        &format!(
            r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}"#
        ),
    )
}

#[test]
fn watch_lists_list_then_go_on_as_the_watch_and_a_refusal_turns_to_pages() {
    let fake = Fake::start();
    let answers = Arc::new(Mutex::new(VecDeque::from([
        // A watch-list: two objects, a progress bookmark (not the end),
        // the end at 9, then the watch's first change.
        Reply::Chunks(vec![
            event("ADDED", &pod("a", 3)),
            event(
                "BOOKMARK",
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5"}}"#,
            ),
            event("ADDED", &pod("b", 7)),
            initial_events_end(9),
            event("MODIFIED", &pod("a", 10)),
        ]),
        // One that ends before its end bookmark.
        Reply::Chunks(vec![event("ADDED", &pod("a", 3))]),
        // One with a change among its initial events.
        Reply::Chunks(vec![
            event("ADDED", &pod("a", 3)),
            event("DELETED", &pod("a", 4)),
        ]),
        // One whose object is past the list's version.
        Reply::Chunks(vec![event("ADDED", &pod("a", 12)), initial_events_end(9)]),
        // Refused, as an apiserver without watch-lists refuses.
        Reply::Body(
            422,
            "application/json",
            status(422, "sendInitialEvents is forbidden"),
        ),
    ])));
    let a = answers.clone();
    fake.script(move |uri| {
        if uri == "/version" {
            return json(VERSION.into());
        }
        if uri.contains("sendInitialEvents=true") {
            return a.lock().unwrap().pop_front().unwrap();
        }
        if uri.contains("watch=1") {
            return Reply::Chunks(vec![]);
        }
        json(list(20, &[item("p", 20)]))
    });
    let api =
        ApiServer::connect(ApiServerConfig::kubeconfig(fake.kubeconfig()).protobuf(false)).unwrap();
    let source = pods(&api);

    let listing = source.list().unwrap();
    let got: Vec<_> = listing
        .items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect();
    assert_eq!(
        (got, listing.revision.get()),
        (vec![("ns/a".into(), 3), ("ns/b".into(), 7)], 9)
    );
    // The watch from the list's version goes on on the same stream: its
    // first change, with no request of its own (a watch from 9 is never
    // asked for; once the stream ends, it resumes from 10).
    let (events, _) = drain(&source, 9, 1);
    assert_eq!(versions(&events), [10]);
    let from_9 = fake
        .seen()
        .into_iter()
        .filter(|u| u.contains("resourceVersion=9"))
        .count();
    assert_eq!(from_9, 0, "{:?}", fake.seen());
    assert_eq!(source.stats().watch_lists, 1);

    for want in [
        "before its initial-events-end",
        "DELETED event before",
        "after the list's 9",
    ] {
        match source.list() {
            Err(SourceError::Unavailable(m)) => assert!(m.contains(want), "{want}: {m}"),
            other => panic!("{want}: {other:?}"),
        }
    }
    // Refused: a paged list now, and from then on.
    assert_eq!(source.list().unwrap().revision.get(), 20);
    assert_eq!(source.list().unwrap().revision.get(), 20);
    let tried = fake
        .seen()
        .iter()
        .filter(|u| u.contains("sendInitialEvents=true"))
        .count();
    assert_eq!(tried, 5, "no watch-list after the refusal");
}

#[test]
fn a_watch_list_that_never_ends_its_initial_events_is_an_error_in_bounded_time() {
    let fake = Fake::start();
    // Items, then nothing: the stream stays open, as a hostile or stuck
    // apiserver's would (the fake holds it open 3 s, past the 1 s bound).
    let mut chunks = vec![event("ADDED", &pod("a", 3))];
    chunks.extend((0..600).map(|_| String::new()));
    fake.script(move |uri| {
        if uri == "/version" {
            json(VERSION.into())
        } else {
            Reply::Chunks(chunks.clone())
        }
    });
    let mut config = ApiServerConfig::kubeconfig(fake.kubeconfig()).protobuf(false);
    config.request_timeout = Duration::from_secs(1);
    let api = ApiServer::connect(config).unwrap();
    let source = pods(&api);
    let began = Instant::now();
    match source.list() {
        Err(SourceError::Unavailable(m)) => {
            assert!(m.contains("initial-events-end bookmark within"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
}

/// A connection given a runtime (`ApiServer::connect_on`) builds none of
/// its own: its requests and its watches' tasks run on the one given, and
/// dropping the connection leaves that runtime running.
#[test]
fn a_connection_on_a_runtime_it_is_given_runs_there_and_builds_none() {
    let fake = Fake::start();
    let given = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let bridge = Bridge::from_handle(given.handle().clone()).unwrap();
    fake.script(|uri| {
        if uri == "/version" {
            json(VERSION.into())
        } else if uri.contains("watch=1") {
            // An event, then bookmarks for two seconds: the stream stays
            // open while the test looks.
            let bookmark = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"3"}}"#;
            let mut chunks = vec![event("ADDED", &pod("a", 3))];
            chunks.extend((0..400).map(|_| event("BOOKMARK", bookmark)));
            Reply::Chunks(chunks)
        } else {
            json(list(2, &[]))
        }
    });
    let api = ApiServer::connect_on(
        ApiServerConfig::kubeconfig(fake.kubeconfig())
            .protobuf(false)
            .watch_list(false),
        bridge.clone(),
    )
    .unwrap();
    assert!(api.bridge().same(&bridge));
    assert!(!api.bridge().owns_runtime());
    let source = pods(&api);
    assert_eq!(source.list().unwrap().revision.get(), 2);
    let before = given.metrics().num_alive_tasks();
    let mut watch = source.watch(2.into()).unwrap();
    match watch.next(Duration::from_secs(10)) {
        Ok(Some(SourceEvent::Change(c))) => assert_eq!(c.object().key(), "ns/a"),
        other => panic!("{other:?}"),
    }
    // The task reading the stream is the given runtime's.
    let during = given.metrics().num_alive_tasks();
    assert!(during > before, "{during} tasks, {before} before the watch");
    drop(watch);
    drop(source);
    drop(api);
    // Lent, not given away: it still runs.
    assert_eq!(given.block_on(bridge.spawn(async { 7 })).unwrap(), 7);
}
