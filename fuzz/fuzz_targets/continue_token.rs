//! Fuzz target for [`herald::read::Continue`], the list continue token a client
//! hands back: its parser, its printed form, and [`herald::Engine::list`]
//! serving it (`engine/src/read/`).
//!
//! One small engine is built once (a list index on `spec.nodeName`, a
//! re-list, then changes; a 16-change ring, so older versions are gone)
//! and never written again, so every answer can be checked against the
//! engine's own list at the token's version. For every input:
//!
//! * **parse**: the bytes as UTF-8 (lossy) never panic the parser; an
//!   error is `InvalidContinue::Malformed`, whose `input()` is the text's
//!   longest prefix of at most 64 bytes ending on a `char` boundary and
//!   whose message is bounded whatever the input's length;
//! * **one spelling**: a token that parses prints back as the same text,
//!   which parses to an equal token;
//! * **served only as issued**: the parsed token is listed as is (it is
//!   another engine's: `ForeignContinue`), and again with its engine id
//!   replaced by this engine's, and a token built from the input's bytes
//!   (generation, version, key, selector, limit) is listed too. An older
//!   generation is `Gone` whatever its version (after a regression its
//!   versions may be above the present's); otherwise a version above the
//!   engine's is `InvalidContinue::VersionNotReached`, a later generation
//!   `GenerationNotReached`, and nothing else fails;
//! * **a served page never exceeds the state**: it is at the token's
//!   version, holds at most `limit` items, and equals the engine's own
//!   list at that version with the same selectors, after the token's key,
//!   cut at `limit`; following its continue tokens (each printed and
//!   parsed back, as a client would) gives the rest of that list exactly.

#![no_main]

use std::sync::OnceLock;

use herald::object::Item;
use herald::read::{Continue, InvalidContinue, ListRequest, ReadAt, ReadError};
use herald::selector::KeyScope;
use herald::{Change, Config, Engine, Object, Relist, ResourceVersion};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

const INDEX: &str = "spec.nodeName";

/// The engine, its id as printed in its tokens, its version and generation.
struct Fixture {
    engine: Engine,
    id: String,
    reached: ResourceVersion,
    generation: u64,
}

fn pod(i: u64, rv: u64) -> Object {
    let b = Object::builder(&format!("ns-{}", i % 3), &format!("pod-{i}"))
        .label("app", ["web", "db"][(i % 2) as usize]);
    match (i + rv) % 4 {
        0 => b,
        1 => b.field(INDEX, ""),
        n => b.field(INDEX, &format!("node-{n}")),
    }
    .build()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let config = Config::default().list_index(INDEX).history_bounds(16, 16);
        let (engine, mut writer) = Engine::new(config).expect("config");
        writer
            .replace(Relist::new((0..12).map(|i| pod(i, 0)), 100.into()))
            .expect("list");
        writer
            .replace(Relist::new((0..20).map(|i| pod(i, 1)), 200.into()))
            .expect("re-list");
        for rv in 201..=240 {
            let i = rv % 24;
            let change = if rv % 7 == 0 {
                Change::deleted(pod(i % 20, 1), rv.into())
            } else if i < 20 {
                Change::modified(pod(i, rv), rv.into())
            } else {
                Change::added(pod(i, rv), rv.into())
            };
            // A delete of an object already deleted is refused or a no-op:
            // either way the engine stays consistent.
            let _ = writer.apply(change);
        }
        writer.progress(245.into()).expect("progress");
        let token = engine
            .list(&ListRequest::new().limit(1))
            .expect("list")
            .continue_token
            .expect("a token");
        let id = token
            .to_string()
            .split('.')
            .nth(1)
            .expect("an id")
            .to_owned();
        Fixture {
            reached: engine.resource_version(),
            generation: engine.generation(),
            engine,
            id,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    let text = String::from_utf8_lossy(data);
    if let Some(token) = parse(&text) {
        let req = ListRequest::new().limit(3);
        let got = fx.engine.list(&req.clone().continue_from(token.clone()));
        if !text.split('.').nth(1).is_some_and(|id| id == fx.id) {
            assert_eq!(got, Err(ReadError::ForeignContinue), "{text:?}");
        }
        // The same token, as if this engine had issued it.
        let mut parts: Vec<&str> = text.split('.').collect();
        parts[1] = &fx.id;
        let ours = parse(&parts.join(".")).expect("an id swapped in still parses");
        check_list(fx, &req, 3, &ours, &text);
    }
    let mut u = Unstructured::new(data);
    if let Ok((req, limit, token)) = structured(fx, &mut u) {
        check_list(fx, &req, limit, &token, &token.to_string());
    }
});

/// Parses `text`; checks the error, or that the token has one spelling.
fn parse(text: &str) -> Option<Continue> {
    match text.parse::<Continue>() {
        Ok(token) => {
            let printed = token.to_string();
            assert_eq!(printed, text, "a token prints as another text");
            assert_eq!(printed.parse::<Continue>().as_ref(), Ok(&token));
            Some(token)
        }
        Err(ReadError::InvalidContinue(InvalidContinue::Malformed(m))) => {
            let mut end = text.len().min(64);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            assert_eq!(m.input(), &text[..end]);
            let msg = ReadError::InvalidContinue(InvalidContinue::Malformed(m)).to_string();
            // 64 bytes, each escaped to at most 10 (`\u{10ffff}`), and words.
            assert!(msg.len() <= 64 * 10 + 200, "{} bytes", msg.len());
            None
        }
        Err(other) => panic!("{text:?} failed to parse with {other:?}"),
    }
}

/// A request and a token of this engine from the input's bytes.
fn structured(
    fx: &Fixture,
    u: &mut Unstructured<'_>,
) -> libfuzzer_sys::arbitrary::Result<(ListRequest, usize, Continue)> {
    let generation = match u.int_in_range(0..=3u8)? {
        0 => fx.generation,
        1 => fx.generation - 1,
        2 => fx.generation + 1,
        _ => u.arbitrary()?,
    };
    let rv: u64 = match u.int_in_range(0..=3u8)? {
        0 => u.int_in_range(195..=250)?,
        1 => fx.reached.get() + u.int_in_range(0..=2)?,
        2 => u.arbitrary()?,
        _ => u.int_in_range(0..=300)?,
    };
    let key = match u.int_in_range(0..=2u8)? {
        0 => String::new(),
        1 => {
            let i = u.int_in_range(0..=25u64)?;
            format!("ns-{}/pod-{i}", i % 3)
        }
        _ => u.arbitrary::<String>()?,
    };
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    let text = format!("h2.{}.{generation}.{rv}.{hex}", fx.id);
    let token = parse(&text).expect("a token built in the format parses");
    let limit = u.int_in_range(0..=6)?;
    let mut req = ListRequest::new().limit(limit);
    req = match u.int_in_range(0..=2u8)? {
        0 => req,
        1 => req.scope(KeyScope::prefix(&format!("ns-{}", u.int_in_range(0..=3)?))),
        _ => req.scope(KeyScope::exact(&key)),
    };
    let fields = [
        "",
        "spec.nodeName=",
        "spec.nodeName=node-2",
        "spec.nodeName!=node-3",
    ];
    let labels = ["", "app=web", "app!=web"];
    req = req
        .fields(u.choose(&fields)?.parse().expect("fields"))
        .labels(u.choose(&labels)?.parse().expect("labels"));
    Ok((req, limit, token))
}

fn keys(items: &[Item]) -> Vec<(String, u64)> {
    items
        .iter()
        .map(|i| (i.object.key().to_owned(), i.resource_version.get()))
        .collect()
}

/// Lists from `token` and checks the answer (see the module docs).
fn check_list(fx: &Fixture, req: &ListRequest, limit: usize, token: &Continue, what: &str) {
    let limit = if limit == 0 { usize::MAX } else { limit };
    let rv = token.resource_version();
    let got = fx.engine.list(&req.clone().continue_from(token.clone()));
    let mut page = match got {
        Ok(page) => page,
        Err(ReadError::InvalidContinue(InvalidContinue::VersionNotReached { token, reached })) => {
            assert_eq!((token, reached), (rv, fx.reached), "{what:?}");
            assert!(rv > fx.reached, "{what:?}");
            return;
        }
        Err(ReadError::InvalidContinue(InvalidContinue::GenerationNotReached {
            token,
            reached,
        })) => {
            assert!(token > reached && reached == fx.generation, "{what:?}");
            assert!(rv <= fx.reached, "{what:?}");
            return;
        }
        Err(ReadError::Gone(_)) => {
            // Gone names a version the engine reached, or a generation
            // before the present one (after a regression its versions may
            // be above the present's: that history is gone, whatever the
            // version says). The generation is the token's third field
            // (see `Continue`'s format).
            let generation: Option<u64> = token
                .to_string()
                .split('.')
                .nth(2)
                .and_then(|g| g.parse().ok());
            assert!(
                rv <= fx.reached || generation.is_some_and(|g| g < fx.generation),
                "{what:?}"
            );
            return;
        }
        Err(other) => panic!("{what:?}: {other:?}"),
    };
    assert!(
        rv <= fx.reached,
        "{what:?} served above the engine's version"
    );
    // The whole list at the token's version, with the same selectors.
    let whole = fx
        .engine
        .list(&req.clone().limit(0).at(ReadAt::Exact(rv)))
        .expect("the version a page was served at is listable");
    let after = after_key(token);
    let rest: Vec<(String, u64)> = keys(&whole.items)
        .into_iter()
        .filter(|(k, _)| k.as_str() > after.as_str())
        .collect();
    let mut served = Vec::new();
    for _ in 0..64 {
        assert_eq!(page.resource_version, rv, "{what:?}");
        assert!(page.items.len() <= limit, "{what:?}: a page over its limit");
        served.extend(keys(&page.items));
        let Some(next) = page.continue_token.take() else {
            break;
        };
        assert_eq!(next.resource_version(), rv);
        let next = parse(&next.to_string()).expect("a token the engine issued parses");
        page = fx
            .engine
            .list(&req.clone().continue_from(next))
            .expect("the next page of a served page");
    }
    assert!(
        served.len() <= rest.len(),
        "{what:?}: pages exceed the state"
    );
    assert_eq!(served, rest[..served.len()], "{what:?}");
    if page.continue_token.is_none() {
        assert_eq!(served, rest, "{what:?}");
    }
}

/// The key a token continues after (its last part, hex-decoded).
fn after_key(token: &Continue) -> String {
    let text = token.to_string();
    let hex = text.rsplit('.').next().unwrap_or("");
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    String::from_utf8(bytes).expect("utf-8")
}
