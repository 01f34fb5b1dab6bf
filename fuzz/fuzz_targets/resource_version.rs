//! Fuzz target for [`herald::ResourceVersion::parse_param`], the parser of
//! the `resourceVersion` request parameter, and its `FromStr` / `Display`.
//!
//! Input: arbitrary bytes; inputs that are not UTF-8 are skipped for the
//! string checks (the parser takes `&str`). It checks:
//!
//! * **no panic** in `parse_param` or `FromStr`;
//! * **exact grammar**, against an independent reference written here from
//!   the documented rule (`rv.rs`: `""` is unset, `"0"` is "any", "a
//!   decimal number gives that version; anything else (signs, spaces,
//!   non-digits, overflow) is an error"; `InvalidResourceVersion`: "not
//!   `""`, `"0"` or an unsigned decimal that fits in 64 bits"):
//!   `""` -> `Ok(None)`; a non-empty run of ASCII digits whose value fits in
//!   a `u64` -> `Ok(Some(value))`; everything else -> `Err`. Leading zeros
//!   are accepted (`"007"` is 7, `"00"` is `ZERO`): the documentation does
//!   not exclude them and the engine parses them, as Kubernetes'
//!   `strconv.ParseUint(rv, 10, 64)` does. See [`LEADING_ZEROS_ACCEPTED`];
//! * **round trip**: on `Ok(Some(rv))`, `rv.to_string()` is the canonical
//!   decimal (the input without leading zeros; byte-identical to the input
//!   when it had none) and parses back, through both `parse_param` and
//!   `FromStr`, to `rv`;
//! * **`FromStr` agrees** with `parse_param` except that it rejects `""`;
//! * **errors**: `input()` is the input's longest prefix of at most 64 bytes
//!   ending on a `char` boundary, and `Display` is
//!   `invalid resource version: {input:?}`, followed by `... (N bytes)`
//!   when the input was cut;
//! * and, independent of UTF-8, for the `u64` read from the first 8 input
//!   bytes: `Display` round-trips through `parse_param`.

#![no_main]

use herald::ResourceVersion;
use libfuzzer_sys::fuzz_target;

/// The engine's rule on leading zeros, as documented (implicitly: "a decimal
/// number") and implemented. Kubernetes' `ParseResourceVersion` also
/// accepts them. Set to `false` to fuzz for the stricter canonical grammar
/// (`0 | [1-9][0-9]*`): the target then fails on `"00"` at once.
const LEADING_ZEROS_ACCEPTED: bool = true;

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.get(..8) {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(head);
        let v = u64::from_le_bytes(raw);
        let rv = ResourceVersion::new(v);
        let text = rv.to_string();
        assert_eq!(text, v.to_string());
        assert_eq!(ResourceVersion::parse_param(&text), Ok(Some(rv)));
        assert_eq!(text.parse::<ResourceVersion>(), Ok(rv));
    }
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    check(input);
});

/// The documented grammar, computed without `str::parse`.
fn reference(s: &str) -> Result<Option<u64>, ()> {
    if s.is_empty() {
        return Ok(None);
    }
    let digits = s.as_bytes();
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(());
    }
    if !LEADING_ZEROS_ACCEPTED && digits.len() > 1 && digits[0] == b'0' {
        return Err(());
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(())?;
    }
    Ok(Some(v))
}

fn check(input: &str) {
    let got = ResourceVersion::parse_param(input);
    let expected = reference(input);
    match (&got, expected) {
        (Ok(None), Ok(None)) => {}
        (Ok(Some(rv)), Ok(Some(v))) => {
            assert_eq!(rv.get(), v, "{input:?} parsed to {rv}, expected {v}");
            let text = rv.to_string();
            let canonical = match input.trim_start_matches('0') {
                "" => "0",
                rest => rest,
            };
            assert_eq!(text, canonical, "Display of {input:?}");
            assert_eq!(ResourceVersion::parse_param(&text), Ok(Some(*rv)));
            assert_eq!(text.parse::<ResourceVersion>(), Ok(*rv));
            assert_eq!(ResourceVersion::new(rv.get()), *rv);
            assert_eq!(*rv == ResourceVersion::ZERO, v == 0);
        }
        (Err(e), Err(())) => {
            let mut end = input.len().min(64);
            while !input.is_char_boundary(end) {
                end -= 1;
            }
            assert_eq!(e.input(), &input[..end], "error input() for {input:?}");
            // A cut input says how long it was (`echo.rs`).
            let cut = if end < input.len() {
                format!("... ({} bytes)", input.len())
            } else {
                String::new()
            };
            assert_eq!(
                e.to_string(),
                format!("invalid resource version: {:?}{cut}", &input[..end])
            );
        }
        (got, expected) => panic!(
            "parse_param({input:?}) = {got:?}, but the documented grammar gives {expected:?}"
        ),
    }

    // FromStr: the same, except that a value is required.
    let from_str = input.parse::<ResourceVersion>();
    if input.is_empty() {
        assert!(
            from_str.is_err(),
            "\"\".parse::<ResourceVersion>() succeeded"
        );
    } else {
        assert_eq!(
            from_str.map(Some),
            got,
            "FromStr and parse_param disagree on {input:?}"
        );
    }
}
