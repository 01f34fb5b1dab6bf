//! Fuzz target for [`herald_kube::wire::negotiate`]: a client's
//! `Accept` header, hostile.
//!
//! Checked: no panic; the answer does not depend on repeating a header
//! that is not empty (`a` and `a, a` choose the same; an empty or blank
//! header is JSON, as the apiserver's `NegotiateMediaTypeOptions` gives
//! `len(header) == 0` its first type, while `, ` is a list of no media
//! range: 406, as goautoneg's `ParseAccept` yields no clause for it);
//! protobuf is chosen only when offered, YAML never for a watch; a
//! refusal is a `406 NotAcceptable`; a client that names plain
//! `application/json` is never refused.

#![no_main]

use herald_kube::wire::{Offer, negotiate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(accept) = std::str::from_utf8(data) else {
        return;
    };
    for (protobuf, watch) in [(false, false), (true, false), (false, true), (true, true)] {
        let offer = Offer { protobuf, watch };
        let got = negotiate(Some(accept), offer).map(|f| f.name());
        match &got {
            Ok("protobuf") => assert!(protobuf, "{accept:?}: protobuf not offered"),
            Ok("yaml") => assert!(!watch, "{accept:?}: YAML for a watch"),
            Ok(_) => {}
            Err(e) => {
                assert_eq!((e.code, e.reason), (406, "NotAcceptable"), "{accept:?}");
            }
        }
        if accept.trim().is_empty() {
            assert_eq!(
                got.as_ref().ok(),
                Some(&"json"),
                "{accept:?}: no header"
            );
            continue;
        }
        let twice = format!("{accept}, {accept}");
        assert_eq!(
            negotiate(Some(&twice), offer).ok().map(|f| f.name()),
            got.as_ref().ok().copied(),
            "{accept:?} repeated"
        );
    }
    // A client that names JSON is never refused, whatever is offered.
    if accept.split(',').any(|r| r.trim() == "application/json") {
        for (protobuf, watch) in [(false, false), (true, false), (false, true), (true, true)] {
            assert!(negotiate(Some(accept), Offer { protobuf, watch }).is_ok(), "{accept:?}");
        }
    }
});
