//! Fuzz target for [`herald::selector::FieldSelector`] parsing, printing and matching.
//!
//! Input: arbitrary bytes; inputs that are not UTF-8 are skipped (the parser
//! takes `&str`). For every UTF-8 input it checks:
//!
//! * **no panic** in `FieldSelector::parse` / `FromStr`, which agree;
//! * **differential parse**: the engine accepts exactly the inputs that an
//!   independent re-implementation of Kubernetes' `fields.ParseSelector`
//!   (`splitTerms`, `splitTerm`, `UnescapeValue`, plus the documented
//!   empty-field rule) written here accepts, yields the same set of
//!   (field, operator, unescaped value) terms, and on rejection reports the
//!   same byte position (the first bad term, or the offending `\` / `,` /
//!   `=` in its value);
//! * **errors are well-formed**: `position() <= input.len()`, on a `char`
//!   boundary, `is_field_selector()` is true, `Display` works;
//! * **emptiness**: `is_everything()` exactly when the input is only commas
//!   (empty terms are skipped);
//! * **canonical round trip**: the `Display` form re-parses to an *equal*
//!   selector and is a fixpoint; each term's `Display` parses to a
//!   one-term selector holding exactly that term;
//! * **invariants**: terms ordered by field without adjacent duplicates, no
//!   empty field, no `=` in a field;
//! * **matching**: against fixed field sets and sets derived from the
//!   selector (each field set to each term's value, or absent), `matches`
//!   on the original, on the re-parsed selector, the conjunction of
//!   `FieldTerm::matches_value`, and the documented rule ("a missing field
//!   reads as the empty string") all agree; the lookup is called at most
//!   once per term;
//! * **`requires_exact`**: a value iff some `field=v` term exists, one of
//!   those values, and every matched field set has it.

#![no_main]

use std::cell::Cell;
use std::collections::BTreeMap;

use herald::selector::{FieldOperator, FieldSelector, FieldTerm};
use libfuzzer_sys::fuzz_target;

type Fields = BTreeMap<String, String>;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    check(input);
});

/// A term as the reference parser sees it: (field, is `!=`, value).
type RefTerm = (String, bool, String);

fn check(input: &str) {
    let parsed = FieldSelector::parse(input);
    assert_eq!(
        parsed,
        input.parse::<FieldSelector>(),
        "parse and FromStr disagree on {input:?}"
    );
    let reference = reference_parse(input);
    let sel = match (parsed, reference) {
        (Err(err), Err(ref_pos)) => {
            let pos = err.position();
            assert!(
                pos <= input.len() && input.is_char_boundary(pos),
                "error position {pos} is not a char boundary of {input:?} ({err})"
            );
            assert!(err.is_field_selector(), "{input:?}: {err}");
            let _ = err.to_string();
            assert_eq!(
                pos, ref_pos,
                "{input:?}: engine reports {err}, the reference expects byte {ref_pos}"
            );
            return;
        }
        (Err(err), Ok(terms)) => {
            panic!("{input:?}: engine rejects ({err}), the reference accepts {terms:?}")
        }
        (Ok(sel), Err(pos)) => {
            panic!("{input:?}: engine accepts ({sel}), the reference rejects at byte {pos}")
        }
        (Ok(sel), Ok(mut expected)) => {
            expected.sort();
            expected.dedup();
            let mut got: Vec<RefTerm> = sel.terms().iter().map(ref_term).collect();
            got.sort();
            assert_eq!(
                got, expected,
                "{input:?}: engine and reference terms differ"
            );
            sel
        }
    };

    assert_eq!(
        sel.is_everything(),
        input.bytes().all(|b| b == b','),
        "is_everything() for {input:?} parsed as {sel:?}"
    );
    assert_eq!(sel.is_everything(), sel.terms().is_empty());

    // Canonical round trip.
    let canonical = sel.to_string();
    let reparsed = match FieldSelector::parse(&canonical) {
        Ok(r) => r,
        Err(e) => panic!("Display form {canonical:?} of {input:?} does not parse: {e}"),
    };
    assert_eq!(
        reparsed, sel,
        "Display form {canonical:?} of {input:?} re-parses to a different selector"
    );
    assert_eq!(reparsed.to_string(), canonical, "Display is not a fixpoint");

    // Invariants.
    for pair in sel.terms().windows(2) {
        assert!(
            pair[0].field() <= pair[1].field(),
            "{input:?}: terms not sorted by field: {canonical:?}"
        );
        assert_ne!(pair[0], pair[1], "{input:?}: adjacent duplicate term");
    }
    for t in sel.terms() {
        assert!(!t.field().is_empty(), "{input:?}: empty field");
        assert!(
            !t.field().contains('='),
            "{input:?}: '=' in field {:?}",
            t.field()
        );
        let alone = t.to_string();
        match FieldSelector::parse(&alone) {
            Ok(one) => assert_eq!(
                one.terms(),
                std::slice::from_ref(t),
                "{input:?}: term Display {alone:?} re-parses differently"
            ),
            Err(e) => panic!("{input:?}: term Display {alone:?} does not parse: {e}"),
        }
    }

    // Matching.
    for fields in field_sets(&sel) {
        let get = |k: &str| fields.get(k).map(String::as_str);
        let calls = Cell::new(0usize);
        let counted = |k: &str| {
            calls.set(calls.get() + 1);
            get(k)
        };
        let m = sel.matches(counted);
        assert!(
            calls.get() <= sel.terms().len(),
            "matches called the lookup {} times for {} terms",
            calls.get(),
            sel.terms().len()
        );
        assert_eq!(
            m,
            reparsed.matches(get),
            "{input:?}: original and re-parsed selector disagree on {fields:?}"
        );
        assert_eq!(
            m,
            sel.terms().iter().all(|t| t.matches_value(get(t.field()))),
            "{input:?}: matches() is not the conjunction of matches_value on {fields:?}"
        );
        let expected = sel.terms().iter().all(|t| {
            let (_, ne, v) = ref_term(t);
            let equal = get(t.field()).unwrap_or("") == v;
            equal != ne
        });
        assert_eq!(m, expected, "{input:?}: matches() = {m} on {fields:?}");
        if m {
            for t in sel.terms() {
                if let Some(v) = sel.requires_exact(t.field()) {
                    assert_eq!(
                        get(t.field()).unwrap_or(""),
                        v,
                        "{input:?} matched {fields:?} but requires_exact({:?}) = {v:?}",
                        t.field()
                    );
                }
            }
        }
    }

    // requires_exact against its definition.
    for t in sel.terms() {
        let candidates: Vec<&str> = sel
            .terms()
            .iter()
            .filter(|q| q.field() == t.field() && q.operator() == FieldOperator::Equals)
            .map(FieldTerm::value)
            .collect();
        match sel.requires_exact(t.field()) {
            None => assert!(candidates.is_empty(), "{input:?}: requires_exact is None"),
            Some(v) => assert!(
                candidates.contains(&v),
                "{input:?}: requires_exact({:?}) = {v:?} not among {candidates:?}",
                t.field()
            ),
        }
    }
}

fn ref_term(t: &FieldTerm) -> RefTerm {
    let ne = match t.operator() {
        FieldOperator::Equals => false,
        FieldOperator::NotEquals => true,
        other => panic!("unknown field operator {other:?}"),
    };
    (t.field().to_owned(), ne, t.value().to_owned())
}

/// Kubernetes' `fields.ParseSelector`, written independently from the
/// engine: terms split on `,` not preceded by an escaping `\`; empty terms
/// skipped; each term split at the first position holding `!=`, `==` or `=`
/// (tried in that order); the field must be non-empty (the engine's
/// documented rule); the value unescaped (`\\`, `\,`, `\=`; any other `\`
/// sequence, a trailing `\`, or a bare `,` / `=` is an error).
///
/// On error, the byte offset the engine documents: the term's start for a
/// missing operator or empty field, else the offending `\` or character.
fn reference_parse(input: &str) -> Result<Vec<RefTerm>, usize> {
    // splitTerms (iterating chars, as Go iterates runes).
    let mut terms: Vec<(usize, &str)> = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in input.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push((start, &input[start..i]));
            start = i + 1;
        }
    }
    terms.push((start, &input[start..]));

    let mut out = Vec::new();
    for (base, term) in terms {
        if term.is_empty() {
            continue;
        }
        // splitTerm.
        let mut split = None;
        'outer: for (i, _) in term.char_indices() {
            for (op, ne) in [("!=", true), ("==", false), ("=", false)] {
                if term[i..].starts_with(op) {
                    split = Some((i, ne, op.len()));
                    break 'outer;
                }
            }
        }
        let Some((at, ne, len)) = split else {
            return Err(base);
        };
        if at == 0 {
            return Err(base);
        }
        let field = &term[..at];
        let raw = &term[at + len..];
        let raw_base = base + at + len;
        // UnescapeValue.
        let mut value = String::new();
        let mut slash_at = None;
        for (i, c) in raw.char_indices() {
            if let Some(s) = slash_at.take() {
                match c {
                    '\\' | ',' | '=' => value.push(c),
                    _ => return Err(raw_base + s),
                }
                continue;
            }
            match c {
                '\\' => slash_at = Some(i),
                ',' | '=' => return Err(raw_base + i),
                _ => value.push(c),
            }
        }
        if let Some(s) = slash_at {
            return Err(raw_base + s);
        }
        out.push((field.to_owned(), ne, value));
    }
    Ok(out)
}

/// Fixed field sets plus sets built from the selector's own terms.
fn field_sets(sel: &FieldSelector) -> Vec<Fields> {
    let fixed: &[&[(&str, &str)]] = &[
        &[],
        &[("metadata.name", "a,b"), ("spec.nodeName", "node-1")],
        &[("status.phase", "Running"), ("a", ""), ("f", "v")],
    ];
    let mut sets: Vec<Fields> = fixed
        .iter()
        .map(|s| {
            s.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
        .collect();
    let terms = sel.terms();
    // Every field set to the value of its first / last term.
    sets.push(
        terms
            .iter()
            .rev()
            .map(|t| (t.field().to_owned(), t.value().to_owned()))
            .collect(),
    );
    sets.push(
        terms
            .iter()
            .map(|t| (t.field().to_owned(), t.value().to_owned()))
            .collect(),
    );
    // Every field present with a value no term mentions.
    sets.push(
        terms
            .iter()
            .map(|t| (t.field().to_owned(), format!("{}~", t.value())))
            .collect(),
    );
    // Every field present and empty (vs. absent, which reads as empty too).
    sets.push(
        terms
            .iter()
            .map(|t| (t.field().to_owned(), String::new()))
            .collect(),
    );
    // Every other term's field set to its value.
    sets.push(
        terms
            .iter()
            .step_by(2)
            .map(|t| (t.field().to_owned(), t.value().to_owned()))
            .collect(),
    );
    sets
}
