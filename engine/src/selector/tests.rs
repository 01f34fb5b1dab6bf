//! Property tests for label and field selectors: generated selectors parse to
//! what was written and round-trip through `Display`; arbitrary input never
//! panics and errors are well positioned; matching agrees with an independent
//! reference evaluator.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::labels::tests::describe;
use super::*;

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 256 })
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// What a generated requirement says, independent of the implementation.
#[derive(Debug, Clone)]
enum Spec {
    Equals { value: String, double: bool },
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan { bound: u32, zeros: usize },
    LessThan { bound: u32, zeros: usize },
}

#[derive(Debug, Clone)]
struct ReqSpec {
    key: String,
    spec: Spec,
    /// Whitespace to sprinkle between tokens.
    ws: Vec<&'static str>,
    /// Write a set's empty element as a trailing `,` instead of a leading one.
    trailing_empty: bool,
}

fn ws() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(""), Just(" "), Just("\t"), Just(" \r\n ")]
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]([A-Za-z0-9_.-]{0,8}[A-Za-z0-9])?"
}

fn generated_key() -> impl Strategy<Value = String> {
    let prefix = "[a-z0-9]([a-z0-9-]{0,5}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,5}[a-z0-9])?){0,2}";
    prop_oneof![
        3 => name(),
        2 => (prefix, name()).prop_map(|(p, n)| format!("{p}/{n}")),
        1 => prop_oneof![Just("in".to_owned()), Just("notin".to_owned())],
    ]
}

fn generated_value() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just(String::new()),
        4 => name(),
        1 => prop_oneof![Just("in".to_owned()), Just("notin".to_owned())],
    ]
    .boxed()
}

fn spec(value: BoxedStrategy<String>) -> impl Strategy<Value = Spec> {
    let set = prop::collection::vec(value.clone(), 1..5);
    prop_oneof![
        (value.clone(), any::<bool>()).prop_map(|(value, double)| Spec::Equals { value, double }),
        value.prop_map(Spec::NotEquals),
        set.clone().prop_map(Spec::In),
        set.prop_map(Spec::NotIn),
        Just(Spec::Exists),
        Just(Spec::DoesNotExist),
        (0..12u32, 0..3usize).prop_map(|(bound, zeros)| Spec::GreaterThan { bound, zeros }),
        (0..12u32, 0..3usize).prop_map(|(bound, zeros)| Spec::LessThan { bound, zeros }),
    ]
}

fn req_spec(
    key: impl Strategy<Value = String>,
    value: BoxedStrategy<String>,
) -> impl Strategy<Value = ReqSpec> {
    (
        key,
        spec(value),
        prop::collection::vec(ws(), 8),
        any::<bool>(),
    )
        .prop_map(|(key, spec, ws, trailing_empty)| ReqSpec {
            key,
            spec,
            ws,
            trailing_empty,
        })
}

fn bound_text(bound: u32, zeros: usize) -> String {
    format!("{}{bound}", "0".repeat(zeros))
}

impl ReqSpec {
    fn w(&self, i: usize) -> &'static str {
        self.ws.get(i).copied().unwrap_or("")
    }

    /// Whitespace that must not be empty (it separates two identifiers).
    fn sep(&self, i: usize) -> &'static str {
        match self.w(i) {
            "" => " ",
            w => w,
        }
    }

    fn render(&self) -> String {
        let (w0, w1, w2, w3) = (self.w(0), self.w(1), self.w(2), self.w(3));
        let key = &self.key;
        match &self.spec {
            Spec::Exists => format!("{w0}{key}{w1}"),
            Spec::DoesNotExist => format!("{w0}!{w1}{key}{w2}"),
            Spec::Equals { value, double } => {
                let op = if *double { "==" } else { "=" };
                format!("{w0}{key}{w1}{op}{w2}{value}{w3}")
            }
            Spec::NotEquals(value) => format!("{w0}{key}{w1}!={w2}{value}{w3}"),
            Spec::GreaterThan { bound, zeros } => {
                format!("{w0}{key}{w1}>{w2}{}{w3}", bound_text(*bound, *zeros))
            }
            Spec::LessThan { bound, zeros } => {
                format!("{w0}{key}{w1}<{w2}{}{w3}", bound_text(*bound, *zeros))
            }
            Spec::In(values) | Spec::NotIn(values) => {
                let op = if matches!(self.spec, Spec::In(_)) {
                    "in"
                } else {
                    "notin"
                };
                let comma = format!("{},{}", self.w(5), self.w(6));
                let non_empty: Vec<&str> = values
                    .iter()
                    .map(String::as_str)
                    .filter(|v| !v.is_empty())
                    .collect();
                let mut list = non_empty.join(&comma);
                if non_empty.len() < values.len() {
                    if non_empty.is_empty() {
                        list = comma;
                    } else if self.trailing_empty {
                        list = format!("{list}{comma}");
                    } else {
                        list = format!("{comma}{list}");
                    }
                }
                format!(
                    "{w0}{key}{}{op}{w2}({w3}{list}{}){}",
                    self.sep(1),
                    self.w(4),
                    self.w(7)
                )
            }
        }
    }

    /// The `(key, operator, values)` the parser must produce.
    fn expected(&self) -> (String, LabelOperator, Vec<String>) {
        let sorted = |values: &[String]| {
            let mut v = values.to_vec();
            v.sort();
            v.dedup();
            v
        };
        let (op, values) = match &self.spec {
            Spec::Equals { value, .. } => (LabelOperator::Equals, vec![value.clone()]),
            Spec::NotEquals(value) => (LabelOperator::NotEquals, vec![value.clone()]),
            Spec::In(values) => (LabelOperator::In, sorted(values)),
            Spec::NotIn(values) => (LabelOperator::NotIn, sorted(values)),
            Spec::Exists => (LabelOperator::Exists, vec![]),
            Spec::DoesNotExist => (LabelOperator::DoesNotExist, vec![]),
            Spec::GreaterThan { bound, zeros } => {
                (LabelOperator::GreaterThan, vec![bound_text(*bound, *zeros)])
            }
            Spec::LessThan { bound, zeros } => {
                (LabelOperator::LessThan, vec![bound_text(*bound, *zeros)])
            }
        };
        (self.key.clone(), op, values)
    }

    /// Reference semantics, written from the Kubernetes documentation.
    fn eval(&self, labels: &BTreeMap<String, String>) -> bool {
        let actual = labels.get(&self.key).map(String::as_str);
        let in_set = |values: &[String]| actual.is_some_and(|a| values.iter().any(|v| v == a));
        match &self.spec {
            Spec::Equals { value, .. } => actual == Some(value.as_str()),
            Spec::NotEquals(value) => actual != Some(value.as_str()),
            Spec::In(values) => in_set(values),
            Spec::NotIn(values) => !in_set(values),
            Spec::Exists => actual.is_some(),
            Spec::DoesNotExist => actual.is_none(),
            Spec::GreaterThan { bound, .. } => actual
                .and_then(go_parse_int)
                .is_some_and(|n| n > i128::from(*bound)),
            Spec::LessThan { bound, .. } => actual
                .and_then(go_parse_int)
                .is_some_and(|n| n < i128::from(*bound)),
        }
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`, written out by hand.
fn go_parse_int(s: &str) -> Option<i128> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut acc: i128 = 0;
    for b in digits.bytes() {
        acc = acc * 10 + i128::from(b - b'0');
        if acc > i128::from(u64::MAX) {
            return None;
        }
    }
    let value = if negative { -acc } else { acc };
    (i128::from(i64::MIN)..=i128::from(i64::MAX))
        .contains(&value)
        .then_some(value)
}

fn render_selector(reqs: &[ReqSpec], trailing_ws: &str) -> String {
    let parts: Vec<String> = reqs.iter().map(ReqSpec::render).collect();
    format!("{}{trailing_ws}", parts.join(","))
}

/// Sorts and deduplicates a requirement list with a test-local order, so the
/// comparison does not depend on the implementation's canonical order.
fn normalized(
    mut reqs: Vec<(String, LabelOperator, Vec<String>)>,
) -> Vec<(String, LabelOperator, Vec<String>)> {
    reqs.sort_by(|a, b| {
        (&a.0, format!("{:?}", a.1), &a.2).cmp(&(&b.0, format!("{:?}", b.1), &b.2))
    });
    reqs.dedup();
    reqs
}

const MATCH_KEYS: [&str; 4] = ["a", "b", "x.io/c", "in"];

fn match_key() -> impl Strategy<Value = String> {
    prop::sample::select(&MATCH_KEYS[..]).prop_map(str::to_owned)
}

fn match_value() -> BoxedStrategy<String> {
    prop::sample::select(&["", "x", "y", "1", "10", "in"][..])
        .prop_map(str::to_owned)
        .boxed()
}

fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    let value = prop::sample::select(
        &[
            "",
            "x",
            "y",
            "1",
            "5",
            "10",
            "11",
            "007",
            "-1",
            "+5",
            "abc",
            " 5",
            "in",
            "99999999999999999999",
            "-9223372036854775808",
        ][..],
    );
    prop::collection::vec(prop::option::of(value), MATCH_KEYS.len()).prop_map(|values| {
        MATCH_KEYS
            .iter()
            .zip(values)
            .filter_map(|(k, v)| v.map(|v| ((*k).to_owned(), v.to_owned())))
            .collect()
    })
}

/// Checks the invariants every parse result must satisfy.
fn check_any_label_input(input: &str) -> Result<(), TestCaseError> {
    match LabelSelector::parse(input) {
        Ok(sel) => {
            let text = sel.to_string();
            let again = LabelSelector::parse(&text);
            prop_assert_eq!(again.as_ref(), Ok(&sel), "display {:?}", text);
            prop_assert_eq!(again.map(|s| s.to_string()), Ok(text));
        }
        Err(e) => {
            prop_assert!(e.position() <= input.len(), "{:?}: {:?}", input, e);
            prop_assert!(input.is_char_boundary(e.position()), "{:?}: {:?}", input, e);
            prop_assert!(!e.is_field_selector());
            prop_assert!(e.to_string().starts_with("invalid label selector at byte "));
        }
    }
    Ok(())
}

fn check_any_field_input(input: &str) -> Result<(), TestCaseError> {
    match FieldSelector::parse(input) {
        Ok(sel) => {
            let text = sel.to_string();
            let again = FieldSelector::parse(&text);
            prop_assert_eq!(again.as_ref(), Ok(&sel), "display {:?}", text);
            prop_assert_eq!(again.map(|s| s.to_string()), Ok(text));
        }
        Err(e) => {
            prop_assert!(e.position() <= input.len(), "{:?}: {:?}", input, e);
            prop_assert!(input.is_char_boundary(e.position()), "{:?}: {:?}", input, e);
            prop_assert!(e.is_field_selector());
            prop_assert!(e.to_string().starts_with("invalid field selector at byte "));
        }
    }
    Ok(())
}

/// Pieces that make arbitrary input reach deep parser states.
fn token_soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(
        &[
            "a", "b", "x/y", "in", "notin", "=", "==", "!=", "!", "(", ")", ",", " ", ">", "<",
            "1", "-", "\\", "\\,", "\\=", "é", "\t", "A.b", "a/", "/",
        ][..],
    );
    prop::collection::vec(piece, 0..16).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(config())]

    /// Generated selectors parse to exactly what was written, and `Display`
    /// re-parses to an equal selector.
    #[test]
    fn label_generated_parse_and_roundtrip(
        reqs in prop::collection::vec(req_spec(generated_key(), generated_value()), 0..6),
        trailing in ws(),
    ) {
        let input = render_selector(&reqs, trailing);
        let sel = LabelSelector::parse(&input)
            .map_err(|e| TestCaseError::fail(format!("{input:?}: {e}")))?;
        let expected = normalized(reqs.iter().map(ReqSpec::expected).collect());
        prop_assert_eq!(normalized(describe(&sel)), expected);
        prop_assert_eq!(sel.is_everything(), reqs.is_empty());

        let text = sel.to_string();
        let again = LabelSelector::parse(&text);
        prop_assert_eq!(again.as_ref(), Ok(&sel), "display {:?}", text);
        prop_assert_eq!(again.map(|s| s.to_string()), Ok(text));
    }

    /// Matching agrees with the reference evaluation of the generated spec.
    #[test]
    fn label_matching_agrees_with_reference(
        reqs in prop::collection::vec(req_spec(match_key(), match_value()), 0..4),
        labels in label_map(),
    ) {
        let input = render_selector(&reqs, "");
        let sel = LabelSelector::parse(&input)
            .map_err(|e| TestCaseError::fail(format!("{input:?}: {e}")))?;
        let expected = reqs.iter().all(|r| r.eval(&labels));
        prop_assert_eq!(
            sel.matches(|k| labels.get(k).map(String::as_str)),
            expected,
            "{:?} on {:?}", input, labels
        );
        for r in sel.requirements() {
            let spec = reqs.iter().find(|s| s.expected() == (
                r.key().to_owned(), r.operator(), r.values().map(str::to_owned).collect()
            ));
            prop_assert!(spec.is_some());
            if let Some(spec) = spec {
                let actual = labels.get(r.key()).map(String::as_str);
                prop_assert_eq!(r.matches_value(actual), spec.eval(&labels));
            }
        }
        for key in MATCH_KEYS {
            if let Some(v) = sel.requires_exact(key) {
                // Every matching object must have exactly that value.
                prop_assert!(!expected || labels.get(key).map(String::as_str) == Some(v));
            }
        }
    }

    /// Arbitrary input never panics; errors point inside the input at a char
    /// boundary; successes round-trip.
    #[test]
    fn label_arbitrary_input(input in ".{0,40}") {
        check_any_label_input(&input)?;
    }

    #[test]
    fn label_arbitrary_alphabet(input in "[a-z0-9=!,() <>\\\\_./-]{0,30}") {
        check_any_label_input(&input)?;
    }

    #[test]
    fn label_token_soup(input in token_soup()) {
        check_any_label_input(&input)?;
    }
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

const FIELDS: [&str; 7] = ["a", "b", "metadata.name", "x!y", "a\\", "p\\,q", " s p "];

#[derive(Debug, Clone)]
struct TermSpec {
    field: String,
    /// `"="`, `"=="` or `"!="`.
    op: &'static str,
    value: String,
}

fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["", "v", "a,b", "=", "\\", "a b"][..]).prop_map(str::to_owned),
        "[a-z,=\\\\! ]{0,6}",
    ]
}

fn term_spec() -> impl Strategy<Value = TermSpec> {
    (
        prop::sample::select(&FIELDS[..]),
        prop::sample::select(&["=", "==", "!="][..]),
        field_value(),
    )
        .prop_map(|(field, op, value)| TermSpec {
            field: field.to_owned(),
            op,
            value,
        })
}

/// Escapes a value as Kubernetes' `EscapeValue` does.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

impl TermSpec {
    fn operator(&self) -> FieldOperator {
        if self.op == "!=" {
            FieldOperator::NotEquals
        } else {
            FieldOperator::Equals
        }
    }

    fn eval(&self, fields: &BTreeMap<String, String>) -> bool {
        let actual = fields.get(&self.field).map_or("", String::as_str);
        (actual == self.value) == (self.op != "!=")
    }
}

fn field_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    let value = prop::sample::select(&["", "v", "a,b", "=", "\\", "x"][..]);
    prop::collection::vec(prop::option::of(value), FIELDS.len()).prop_map(|values| {
        FIELDS
            .iter()
            .zip(values)
            .filter_map(|(k, v)| v.map(|v| ((*k).to_owned(), v.to_owned())))
            .collect()
    })
}

proptest! {
    #![proptest_config(config())]

    /// Generated field selectors parse to what was written, match like the
    /// reference, and round-trip through `Display`.
    #[test]
    fn field_generated_parse_match_roundtrip(
        terms in prop::collection::vec(term_spec(), 0..5),
        empty_terms in prop::collection::vec(any::<bool>(), 5),
        fields in field_map(),
    ) {
        let mut input = String::new();
        for (i, t) in terms.iter().enumerate() {
            if i > 0 {
                input.push(',');
            }
            if empty_terms.get(i).copied().unwrap_or(false) {
                input.push(',');
            }
            input.push_str(&t.field);
            input.push_str(t.op);
            input.push_str(&escape(&t.value));
        }
        let sel = FieldSelector::parse(&input)
            .map_err(|e| TestCaseError::fail(format!("{input:?}: {e}")))?;

        let sort = |mut v: Vec<(String, String, String)>| {
            v.sort();
            v.dedup();
            v
        };
        let expected = sort(terms
            .iter()
            .map(|t| (t.field.clone(), format!("{:?}", t.operator()), t.value.clone()))
            .collect());
        let actual = sort(sel
            .terms()
            .iter()
            .map(|t| (t.field().to_owned(), format!("{:?}", t.operator()), t.value().to_owned()))
            .collect());
        prop_assert_eq!(actual, expected);

        let want = terms.iter().all(|t| t.eval(&fields));
        prop_assert_eq!(sel.matches(|f| fields.get(f).map(String::as_str)), want);

        for field in FIELDS {
            let exact = |t: &&TermSpec| t.field == field && t.operator() == FieldOperator::Equals;
            let found = sel.requires_exact(field);
            prop_assert_eq!(found.is_some(), terms.iter().any(|t| exact(&t)));
            if let Some(v) = found {
                prop_assert!(terms.iter().filter(exact).any(|t| t.value == v));
            }
        }

        let text = sel.to_string();
        let again = FieldSelector::parse(&text);
        prop_assert_eq!(again.as_ref(), Ok(&sel), "display {:?}", text);
    }

    #[test]
    fn field_arbitrary_input(input in ".{0,40}") {
        check_any_field_input(&input)?;
    }

    #[test]
    fn field_arbitrary_alphabet(input in "[a-z0-9=!,() <>\\\\_./-]{0,30}") {
        check_any_field_input(&input)?;
    }

    #[test]
    fn field_token_soup(input in token_soup()) {
        check_any_field_input(&input)?;
    }
}

#[test]
fn selectors_are_send_sync_and_cheap_to_move() {
    fn assert_traits<T: Send + Sync + Clone + Eq + std::hash::Hash + std::fmt::Debug>() {}
    assert_traits::<LabelSelector>();
    assert_traits::<FieldSelector>();
    assert_traits::<LabelRequirement>();
    assert_traits::<FieldTerm>();
    // A selector is one fat `Arc` pointer.
    assert_eq!(
        std::mem::size_of::<LabelSelector>(),
        2 * std::mem::size_of::<usize>()
    );
    assert_eq!(
        std::mem::size_of::<FieldSelector>(),
        2 * std::mem::size_of::<usize>()
    );
}

/// Label selector errors, with exact positions.
mod label_errors {
    use super::super::error::InvalidLabelReason;
    use super::*;
    use ExpectedToken as Exp;
    use SelectorErrorKind as K;

    fn err(s: &str) -> (usize, SelectorErrorKind) {
        match LabelSelector::parse(s) {
            Ok(sel) => panic!("{s:?} parsed as {sel}"),
            Err(e) => {
                assert!(!e.is_field_selector());
                (e.position(), e.kind().clone())
            }
        }
    }

    #[test]
    fn error_unexpected_end() {
        let end = |expected| K::UnexpectedEnd { expected };
        assert_eq!(err("a in (x"), (7, end(Exp::CommaOrCloseParen)));
        assert_eq!(err("a in ("), (6, end(Exp::Value)));
        assert_eq!(err("a in"), (4, end(Exp::OpenParen)));
        assert_eq!(err("a in (x,"), (8, end(Exp::Value)));
        assert_eq!(err("a,"), (2, end(Exp::Key)));
        assert_eq!(err("a, "), (3, end(Exp::Key)));
        assert_eq!(err("!"), (1, end(Exp::Key)));
    }

    #[test]
    fn error_unexpected_char() {
        let ch = |found, expected| K::UnexpectedChar { found, expected };
        assert_eq!(err("a b"), (2, ch('b', Exp::Operator)));
        assert_eq!(err("app (x)"), (4, ch('(', Exp::Operator)));
        assert_eq!(err("a!b"), (1, ch('!', Exp::Operator)));
        assert_eq!(err("=x"), (0, ch('=', Exp::Key)));
        assert_eq!(err(",a"), (0, ch(',', Exp::Key)));
        assert_eq!(err("a,,b"), (2, ch(',', Exp::Key)));
        assert_eq!(err("!!a"), (1, ch('!', Exp::Key)));
        assert_eq!(err("!=a"), (0, ch('!', Exp::Key)));
        assert_eq!(err("a=(x)"), (2, ch('(', Exp::Value)));
        assert_eq!(err("a>=5"), (2, ch('=', Exp::Value)));
        assert_eq!(err("a in x"), (5, ch('x', Exp::OpenParen)));
        assert_eq!(err("a in (=)"), (6, ch('=', Exp::Value)));
        assert_eq!(err("a in (x,=)"), (8, ch('=', Exp::Value)));
        assert_eq!(err("a in (x y)"), (8, ch('y', Exp::CommaOrCloseParen)));
        assert_eq!(err("a in (x))"), (8, ch(')', Exp::CommaOrEnd)));
        assert_eq!(err("a=b c"), (4, ch('c', Exp::CommaOrEnd)));
        assert_eq!(err("a=b=c"), (3, ch('=', Exp::CommaOrEnd)));
        assert_eq!(err("!a=b"), (2, ch('=', Exp::CommaOrEnd)));
        assert_eq!(err("a in (x) b"), (9, ch('b', Exp::CommaOrEnd)));
        assert_eq!(
            err("é b"),
            (
                0,
                K::InvalidKey {
                    reason: InvalidLabelReason::InvalidChar('é')
                }
            )
        );
        assert_eq!(err("a é"), (2, ch('é', Exp::Operator)));
    }

    #[test]
    fn error_empty_value_set() {
        assert_eq!(err("a in ()"), (6, K::EmptyValueSet));
        assert_eq!(err("a notin ( )"), (10, K::EmptyValueSet));
    }

    #[test]
    fn error_invalid_key() {
        let key = |reason| K::InvalidKey { reason };
        assert_eq!(
            err(&format!("x,{}=v", "n".repeat(64))),
            (2, key(InvalidLabelReason::TooLong { len: 64 }))
        );
        assert_eq!(err("a$b=c"), (1, key(InvalidLabelReason::InvalidChar('$'))));
        assert_eq!(
            err("x, -a"),
            (3, key(InvalidLabelReason::MustStartAlphanumeric))
        );
        assert_eq!(err("Ex.com/a"), (0, key(InvalidLabelReason::InvalidPrefix)));
        assert_eq!(err("a/b/c"), (3, key(InvalidLabelReason::TooManySlashes)));
        assert_eq!(err("!a/"), (3, key(InvalidLabelReason::EmptyName)));
        // Key validation happens before the operator is read.
        assert_eq!(err("a$ b"), (1, key(InvalidLabelReason::InvalidChar('$'))));
    }

    #[test]
    fn error_invalid_value() {
        let value = |reason| K::InvalidValue { reason };
        assert_eq!(
            err("a=b/c"),
            (3, value(InvalidLabelReason::InvalidChar('/')))
        );
        assert_eq!(
            err("a in (x, -y)"),
            (9, value(InvalidLabelReason::MustStartAlphanumeric))
        );
        assert_eq!(
            err("a!=x."),
            (4, value(InvalidLabelReason::MustEndAlphanumeric))
        );
        assert_eq!(
            err(&format!("a={}", "v".repeat(64))),
            (2, value(InvalidLabelReason::TooLong { len: 64 }))
        );
        assert_eq!(
            err("a>-1"),
            (2, value(InvalidLabelReason::MustStartAlphanumeric))
        );
        // Syntax errors of a requirement are reported before invalid values.
        assert_eq!(
            err("a in (-x y)"),
            (
                9,
                K::UnexpectedChar {
                    found: 'y',
                    expected: Exp::CommaOrCloseParen
                }
            )
        );
    }

    #[test]
    fn error_not_an_integer() {
        assert_eq!(err("a>x"), (2, K::NotAnInteger));
        assert_eq!(err("a < 1.5"), (4, K::NotAnInteger));
        assert_eq!(err("a>"), (2, K::NotAnInteger));
        assert_eq!(err("a>,b"), (2, K::NotAnInteger));
        assert_eq!(err("a>99999999999999999999"), (2, K::NotAnInteger));
    }

    #[test]
    fn error_display() {
        let e = LabelSelector::parse("app web").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid label selector at byte 4: expected an operator (`=`, `==`, `!=`, `in`, \
             `notin`, `>` or `<`), found 'w'"
        );
        let e = LabelSelector::parse("a in ()").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid label selector at byte 6: empty value set")
        );
    }
}
