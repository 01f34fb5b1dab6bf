//! Fuzz target for [`herald::selector::LabelSelector`] parsing, printing and matching.
//!
//! Input: arbitrary bytes; inputs that are not UTF-8 are skipped (the parser
//! takes `&str`). For every UTF-8 input it checks:
//!
//! * **no panic** in `LabelSelector::parse` / `FromStr`, which agree;
//! * **errors are well-formed**: `position() <= input.len()` and on a `char`
//!   boundary (documented on `SelectorError::position`: slicing the input
//!   there never panics), `is_field_selector()` is false, `Display` works;
//! * **emptiness**: the selector is `is_everything()` exactly when the input
//!   is empty or only selector whitespace (`' '`, `\t`, `\r`, `\n`);
//! * **canonical round trip**: the `Display` form re-parses to an *equal*
//!   selector, and printing that again gives the same string (fixpoint);
//!   each requirement's own `Display` parses to a one-requirement selector
//!   holding exactly that requirement;
//! * **structural invariants** of a parsed selector, checked against an
//!   independent re-implementation of the Kubernetes rules written here:
//!   keys are qualified names, values are label values, `>`/`<` bounds are
//!   `i64`s, the value count fits the operator, value sets are strictly
//!   sorted, requirements are ordered by key without adjacent duplicates;
//! * **matching**: against a few fixed label sets and label sets derived
//!   from the selector itself (so that keys and values actually hit),
//!   `matches` on the original, on the re-parsed selector, the conjunction
//!   of `LabelRequirement::matches_value`, and an independent evaluation of
//!   the operator table in the `LabelSelector` docs all agree; `matches`
//!   calls the lookup at most once per requirement;
//! * **`requires_exact`**: returns a value iff some `key=v` / `key in (v)`
//!   requirement exists, the value is one of those, and every matched label
//!   set carries exactly that value.

#![no_main]

use std::cell::Cell;
use std::collections::BTreeMap;

use herald::selector::{LabelOperator, LabelRequirement, LabelSelector};
use libfuzzer_sys::fuzz_target;

type Labels = BTreeMap<String, String>;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    check(input);
});

fn check(input: &str) {
    let parsed = LabelSelector::parse(input);
    assert_eq!(
        parsed,
        input.parse::<LabelSelector>(),
        "parse and FromStr disagree on {input:?}"
    );
    let sel = match parsed {
        Ok(sel) => sel,
        Err(err) => {
            let pos = err.position();
            assert!(
                pos <= input.len() && input.is_char_boundary(pos),
                "error position {pos} is not a char boundary of {input:?} ({err})"
            );
            assert!(!err.is_field_selector(), "{input:?}: {err}");
            let _ = err.to_string();
            return;
        }
    };

    let blank = input
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    assert_eq!(
        sel.is_everything(),
        blank,
        "is_everything() for {input:?} parsed as {sel:?}"
    );
    assert_eq!(sel.is_everything(), sel.requirements().is_empty());

    // Canonical round trip.
    let canonical = sel.to_string();
    let reparsed = match LabelSelector::parse(&canonical) {
        Ok(r) => r,
        Err(e) => panic!("Display form {canonical:?} of {input:?} does not parse: {e}"),
    };
    assert_eq!(
        reparsed, sel,
        "Display form {canonical:?} of {input:?} re-parses to a different selector"
    );
    assert_eq!(reparsed.to_string(), canonical, "Display is not a fixpoint");

    check_structure(input, &sel);

    // Matching.
    for labels in label_sets(&sel) {
        let get = |k: &str| labels.get(k).map(String::as_str);
        let calls = Cell::new(0usize);
        let counted = |k: &str| {
            calls.set(calls.get() + 1);
            get(k)
        };
        let m = sel.matches(counted);
        assert!(
            calls.get() <= sel.requirements().len(),
            "matches called the lookup {} times for {} requirements",
            calls.get(),
            sel.requirements().len()
        );
        assert_eq!(
            m,
            reparsed.matches(get),
            "{input:?}: original and re-parsed selector disagree on {labels:?}"
        );
        assert_eq!(
            m,
            sel.requirements()
                .iter()
                .all(|r| r.matches_value(get(r.key()))),
            "{input:?}: matches() is not the conjunction of matches_value on {labels:?}"
        );
        if let Some(expected) = reference_matches(sel.requirements(), &labels) {
            assert_eq!(
                m, expected,
                "{input:?} (canonical {canonical:?}): matches() = {m} on {labels:?}, reference says {expected}"
            );
        }
        if m {
            for r in sel.requirements() {
                if let Some(v) = sel.requires_exact(r.key()) {
                    assert_eq!(
                        get(r.key()),
                        Some(v),
                        "{input:?} matched {labels:?} but requires_exact({:?}) = {v:?}",
                        r.key()
                    );
                }
            }
        }
    }

    // requires_exact against its definition.
    for r in sel.requirements() {
        let candidates: Vec<&str> = sel
            .requirements()
            .iter()
            .filter(|q| q.key() == r.key())
            .filter(|q| matches!(q.operator(), LabelOperator::Equals | LabelOperator::In))
            .filter(|q| q.values().len() == 1)
            .flat_map(|q| q.values())
            .collect();
        match sel.requires_exact(r.key()) {
            None => assert!(
                candidates.is_empty(),
                "{input:?}: requires_exact({:?}) is None, but {candidates:?} qualify",
                r.key()
            ),
            Some(v) => assert!(
                candidates.contains(&v),
                "{input:?}: requires_exact({:?}) = {v:?} not among {candidates:?}",
                r.key()
            ),
        }
    }
}

/// Structural invariants of a parsed selector, using the independent
/// validators below.
fn check_structure(input: &str, sel: &LabelSelector) {
    let reqs = sel.requirements();
    for pair in reqs.windows(2) {
        assert!(
            pair[0].key() <= pair[1].key(),
            "{input:?}: requirements not sorted by key: {:?}",
            sel.to_string()
        );
        assert_ne!(
            pair[0], pair[1],
            "{input:?}: adjacent duplicate requirement"
        );
    }
    for r in reqs {
        assert!(
            is_qualified_name(r.key()),
            "{input:?}: accepted invalid key {:?}",
            r.key()
        );
        let values: Vec<&str> = r.values().collect();
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "{input:?}: values not strictly sorted: {values:?}"
        );
        for v in &values {
            assert!(is_label_value(v), "{input:?}: accepted invalid value {v:?}");
        }
        let n = values.len();
        match r.operator() {
            LabelOperator::Equals | LabelOperator::NotEquals => assert_eq!(n, 1, "{input:?}"),
            LabelOperator::GreaterThan | LabelOperator::LessThan => {
                assert_eq!(n, 1, "{input:?}");
                assert!(
                    values[0].parse::<i64>().is_ok(),
                    "{input:?}: bound {:?} is not an i64",
                    values[0]
                );
            }
            LabelOperator::In | LabelOperator::NotIn => assert!(n >= 1, "{input:?}"),
            LabelOperator::Exists | LabelOperator::DoesNotExist => assert_eq!(n, 0, "{input:?}"),
            _ => {}
        }
        // A requirement printed on its own is a selector of just itself.
        let alone = r.to_string();
        match LabelSelector::parse(&alone) {
            Ok(one) => assert_eq!(
                one.requirements(),
                std::slice::from_ref(r),
                "{input:?}: requirement Display {alone:?} re-parses differently"
            ),
            Err(e) => panic!("{input:?}: requirement Display {alone:?} does not parse: {e}"),
        }
    }
}

/// `[prefix/]name`: prefix a DNS-1123 subdomain (<= 253 bytes), name a
/// label-value-like token of 1..=63 bytes (Kubernetes `IsQualifiedName`).
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if prefix.is_some_and(|p| !is_dns1123_subdomain(p)) {
        return false;
    }
    !name.is_empty() && is_label_value(name)
}

/// Empty, or `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` of at most 63 bytes.
fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    if b.is_empty() {
        return true;
    }
    b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, at most
/// 253 bytes.
fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// The operator table of the `LabelSelector` docs (Kubernetes semantics),
/// evaluated directly. `None` for an operator this target does not know.
fn reference_matches(reqs: &[LabelRequirement], labels: &Labels) -> Option<bool> {
    let mut all = true;
    for r in reqs {
        let have = labels.get(r.key()).map(String::as_str);
        let values: Vec<&str> = r.values().collect();
        let in_set = have.is_some_and(|h| values.contains(&h));
        // Go's strconv.ParseInt(s, 10, 64): optional sign, digits, in range.
        let int = |s: &str| -> Option<i64> {
            let (neg, digits) = match s.as_bytes().first() {
                Some(b'-') => (true, &s[1..]),
                Some(b'+') => (false, &s[1..]),
                _ => (false, s),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let mut acc: i128 = 0;
            for d in digits.bytes() {
                acc = acc * 10 + i128::from(d - b'0');
                if acc > i128::from(i64::MAX) + 1 {
                    return None;
                }
            }
            let acc = if neg { -acc } else { acc };
            i64::try_from(acc).ok()
        };
        let ok = match r.operator() {
            LabelOperator::Equals | LabelOperator::In => in_set,
            LabelOperator::NotEquals | LabelOperator::NotIn => !in_set,
            LabelOperator::Exists => have.is_some(),
            LabelOperator::DoesNotExist => have.is_none(),
            LabelOperator::GreaterThan => match (have.and_then(int), int(values[0])) {
                (Some(h), Some(b)) => h > b,
                _ => false,
            },
            LabelOperator::LessThan => match (have.and_then(int), int(values[0])) {
                (Some(h), Some(b)) => h < b,
                _ => false,
            },
            _ => return None,
        };
        all &= ok;
    }
    Some(all)
}

/// Fixed label sets plus sets built from the selector's own keys and values,
/// so that random selectors are matched both ways.
fn label_sets(sel: &LabelSelector) -> Vec<Labels> {
    let fixed: &[&[(&str, &str)]] = &[
        &[],
        &[("app", "web")],
        &[("app", "db"), ("tier", "x"), ("env", "")],
        &[("a", "1"), ("b", "-5"), ("c", "")],
        &[
            ("in", "notin"),
            ("notin", "in"),
            ("x", "9223372036854775807"),
        ],
    ];
    let mut sets: Vec<Labels> = fixed
        .iter()
        .map(|s| {
            s.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
        .collect();

    let reqs = sel.requirements();
    let bound = |r: &LabelRequirement| r.values().next().and_then(|v| v.parse::<i64>().ok());
    // The value (or absence) of requirement `i`'s key in a derived set.
    type Derive<'a> = &'a dyn Fn(usize, &LabelRequirement) -> Option<String>;
    let derived: [Derive<'_>; 5] = [
        // Every key with its first value (or "").
        &|_, r| Some(r.values().next().unwrap_or("").to_owned()),
        // Every key with its last value (or "v").
        &|_, r| Some(r.values().next_back().unwrap_or("v").to_owned()),
        // Numeric neighbours of bounds; a value no requirement mentions.
        &|_, r| {
            Some(match bound(r) {
                Some(b) if r.operator() == LabelOperator::GreaterThan => {
                    b.saturating_add(1).to_string()
                }
                Some(b) if r.operator() == LabelOperator::LessThan => {
                    b.saturating_sub(1).to_string()
                }
                _ => "zz-unmentioned".to_owned(),
            })
        },
        // Every other key absent, the rest with their first value.
        &|i, r| (i % 2 == 0).then(|| r.values().next().unwrap_or("").to_owned()),
        // The bound itself (boundary of > and <), else the empty string.
        &|_, r| Some(bound(r).map_or_else(String::new, |b| b.to_string())),
    ];
    for f in derived {
        let mut labels = Labels::new();
        for (i, r) in reqs.iter().enumerate() {
            if let Some(v) = f(i, r) {
                labels.insert(r.key().to_owned(), v);
            }
        }
        sets.push(labels);
    }
    sets
}
