//! Fuzz target for [`herald_kube::negotiate::negotiate`]: a client's
//! `Accept` header, hostile.
//!
//! Checked: no panic; the answer does not depend on repeating a header
//! that is not empty (`a` and `a, a` choose the same; an empty or blank
//! header is JSON, as the apiserver's `NegotiateMediaTypeOptions` gives
//! `len(header) == 0` its first type, while `, ` is a list of no media
//! range: 406, as goautoneg's `ParseAccept` yields no clause for it);
//! protobuf is chosen only when offered;
//! a refusal is a `406 NotAcceptable`; whatever is chosen for a resource
//! without protobuf is also acceptable for one with it (offering more
//! never makes a request fail).

#![no_main]

use herald_kube::negotiate::{Media, negotiate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(accept) = std::str::from_utf8(data) else {
        return;
    };
    for protobuf in [false, true] {
        let got = negotiate(Some(accept), protobuf);
        match &got {
            Ok(Media::Protobuf) => assert!(protobuf, "{accept:?}: protobuf not offered"),
            Ok(_) => {}
            Err(e) => {
                assert_eq!((e.code, e.reason), (406, "NotAcceptable"), "{accept:?}");
            }
        }
        if accept.trim().is_empty() {
            assert_eq!(
                got.as_ref().ok(),
                Some(&Media::Json),
                "{accept:?}: no header"
            );
            continue;
        }
        let twice = format!("{accept}, {accept}");
        assert_eq!(
            negotiate(Some(&twice), protobuf).ok(),
            got.as_ref().ok().copied(),
            "{accept:?} repeated"
        );
    }
    if negotiate(Some(accept), false).is_ok() {
        assert!(negotiate(Some(accept), true).is_ok(), "{accept:?}");
    }
});
