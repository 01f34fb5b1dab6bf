//! Field selectors: parsing, canonical formatting and matching
//! (Kubernetes `k8s.io/apimachinery/pkg/fields`).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::error::{SelectorError, SelectorErrorKind};
use super::lexer::write_joined;

/// A parsed Kubernetes field selector: a conjunction (AND) of [`FieldTerm`]s.
///
/// Terms are separated by `,` and have the form `field=value`,
/// `field==value` (the same as `=`) or `field!=value`. The field is
/// everything before the first operator, taken verbatim (not trimmed, not
/// unescaped) and must be non-empty. In the value, `\\`, `\,` and `\=` stand
/// for `\`, `,` and `=`; an unescaped `,` ends the term, while an unescaped
/// `=` or any other `\` sequence is an error. Empty terms (`a=b,,c=d`, a
/// trailing `,`) are skipped, and the empty string selects everything, as in
/// Kubernetes.
///
/// Matching follows Kubernetes' `fields.Set`: a field the object lacks reads
/// as the empty string, so `f=` matches objects without `f` and `f!=x`
/// matches them too.
///
/// Parsing normalizes: `==` becomes `=`, terms are sorted (by field, then
/// operator, then value) and exact duplicates removed. `Display` prints that
/// canonical form, with values escaped, and it parses back to an equal
/// selector.
///
/// Cloning is cheap (one reference count increment), and matching never
/// allocates.
///
/// ```
/// use herald::selector::FieldSelector;
///
/// let sel: FieldSelector = r"status.phase!=Failed,metadata.name=a\,b".parse()?;
/// assert_eq!(sel.to_string(), r"metadata.name=a\,b,status.phase!=Failed");
/// assert_eq!(sel.requires_exact("metadata.name"), Some("a,b"));
///
/// let get = |field: &str| match field {
///     "metadata.name" => Some("a,b"),
///     _ => None,
/// };
/// assert!(sel.matches(get));
/// # Ok::<(), herald::selector::SelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    terms: Arc<[FieldTerm]>,
}

impl FieldSelector {
    /// Parses a field selector in the Kubernetes `fieldSelector` syntax.
    ///
    /// # Errors
    ///
    /// Returns a [`SelectorError`] locating the first problem: a term without
    /// operator ([`MissingOperator`], at the term's start), an empty field
    /// name ([`EmptyField`]), a bad escape sequence ([`InvalidEscape`], at the
    /// `\`) or an unescaped `=` in a value ([`UnescapedChar`]).
    ///
    /// [`MissingOperator`]: SelectorErrorKind::MissingOperator
    /// [`EmptyField`]: SelectorErrorKind::EmptyField
    /// [`InvalidEscape`]: SelectorErrorKind::InvalidEscape
    /// [`UnescapedChar`]: SelectorErrorKind::UnescapedChar
    ///
    /// ```
    /// use herald::selector::{FieldSelector, SelectorErrorKind};
    ///
    /// let err = FieldSelector::parse("a=b,spec.nodeName").unwrap_err();
    /// assert_eq!(err.position(), 4);
    /// assert_eq!(err.kind(), &SelectorErrorKind::MissingOperator);
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid field selector at byte 4: term has no operator, expected `=`, `==` or `!=`",
    /// );
    /// ```
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        let mut start = 0;
        let mut escaped = false;
        for (i, &b) in input.as_bytes().iter().enumerate() {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b',' {
                // `start` and `i` sit next to ASCII bytes: char boundaries.
                let term = input.get(start..i).unwrap_or_default();
                terms.extend(FieldTerm::parse(term, start)?);
                start = i + 1;
            }
        }
        let term = input.get(start..).unwrap_or_default();
        terms.extend(FieldTerm::parse(term, start)?);
        terms.sort_by(FieldTerm::canonical_cmp);
        terms.dedup();
        Ok(Self {
            terms: terms.into(),
        })
    }

    /// The selector that matches every object (the empty selector).
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// `true` if the selector has no term, so it matches everything.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in canonical order.
    #[must_use]
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// Evaluates the selector against an object's fields, given as a lookup
    /// from field name to value. `None` (a missing field) compares as the
    /// empty string, as in Kubernetes.
    ///
    /// Does not allocate; calls `get` at most once per term and stops at the
    /// first term that fails.
    ///
    /// ```
    /// use herald::selector::FieldSelector;
    ///
    /// let sel = FieldSelector::parse("spec.nodeName=")?;
    /// assert!(sel.matches(|_| None));
    /// assert!(!sel.matches(|_| Some("node-1")));
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    pub fn matches<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.terms.iter().all(|t| t.matches_value(get(&t.field)))
    }

    /// Returns the value of the first `field=value` (or `==`) term on
    /// `field`, in canonical order, like Kubernetes' `RequiresExactMatch`:
    /// every object the selector matches has that value in `field`. Used to
    /// route watchers through an index on `field`.
    ///
    /// ```
    /// use herald::selector::FieldSelector;
    ///
    /// let sel = FieldSelector::parse("spec.nodeName==n1,metadata.name!=x")?;
    /// assert_eq!(sel.requires_exact("spec.nodeName"), Some("n1"));
    /// assert_eq!(sel.requires_exact("metadata.name"), None);
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    #[must_use]
    pub fn requires_exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.operator == FieldOperator::Equals && t.field.as_ref() == field)
            .map(|t| t.value.as_ref())
    }

    /// The selector `field=value`, built without parsing (the bench
    /// internals register watchers of any value under an index).
    #[cfg(feature = "internals")]
    pub(crate) fn exact(field: &str, value: &str) -> Self {
        Self {
            terms: Arc::from([FieldTerm {
                field: field.into(),
                operator: FieldOperator::Equals,
                value: value.into(),
            }]),
        }
    }

    /// The first term that requires an exact value: `(field, value)`.
    pub(crate) fn first_exact(&self) -> Option<(&str, &str)> {
        self.terms
            .iter()
            .find(|t| t.operator == FieldOperator::Equals)
            .map(|t| (t.field.as_ref(), t.value.as_ref()))
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for FieldSelector {
    /// Writes the canonical form: terms joined by `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, &self.terms)
    }
}

/// The operator of a [`FieldTerm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

impl FieldOperator {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Equals => "=",
            Self::NotEquals => "!=",
        }
    }
}

/// One term of a [`FieldSelector`]: a field, an operator and an (unescaped)
/// value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldTerm {
    field: Box<str>,
    operator: FieldOperator,
    value: Box<str>,
}

impl FieldTerm {
    /// The field name, verbatim from the input.
    #[must_use]
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The operator.
    #[must_use]
    pub const fn operator(&self) -> FieldOperator {
        self.operator
    }

    /// The value, with escapes resolved.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Evaluates this term against the object's value for
    /// [`field`](Self::field); `None` (a missing field) compares as `""`.
    #[must_use]
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let equal = value.unwrap_or_default() == self.value.as_ref();
        match self.operator {
            FieldOperator::Equals => equal,
            FieldOperator::NotEquals => !equal,
        }
    }

    /// The canonical total order: field, operator, value.
    fn canonical_cmp(&self, other: &Self) -> Ordering {
        self.field
            .cmp(&other.field)
            .then_with(|| {
                (self.operator == FieldOperator::NotEquals)
                    .cmp(&(other.operator == FieldOperator::NotEquals))
            })
            .then_with(|| self.value.cmp(&other.value))
    }

    /// Parses one comma-free term starting at byte `base` of the input;
    /// `Ok(None)` for an empty term.
    fn parse(term: &str, base: usize) -> Result<Option<Self>, SelectorError> {
        if term.is_empty() {
            return Ok(None);
        }
        let Some((at, operator, op_len)) = find_operator(term.as_bytes()) else {
            return Err(SelectorError::field(
                base,
                SelectorErrorKind::MissingOperator,
            ));
        };
        if at == 0 {
            return Err(SelectorError::field(base, SelectorErrorKind::EmptyField));
        }
        // `at` and `at + op_len` are next to ASCII operator bytes.
        let field = term.get(..at).unwrap_or_default();
        let raw = term.get(at + op_len..).unwrap_or_default();
        let value = unescape(raw, base + at + op_len)?;
        Ok(Some(Self {
            field: field.into(),
            operator,
            value: value.into(),
        }))
    }
}

impl fmt::Display for FieldTerm {
    /// Writes `field=value` or `field!=value`, escaping `\`, `,` and `=` in
    /// the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.field)?;
        f.write_str(self.operator.as_str())?;
        let mut rest: &str = &self.value;
        while let Some(i) = rest.find(['\\', ',', '=']) {
            let (plain, special) = rest.split_at(i);
            f.write_str(plain)?;
            f.write_str("\\")?;
            let (ch, tail) = special.split_at(1);
            f.write_str(ch)?;
            rest = tail;
        }
        f.write_str(rest)
    }
}

/// The first operator in `term`, as Kubernetes' `splitTerm`: at each
/// position try `!=`, then `==`, then `=`. Returns (offset, operator, length).
fn find_operator(term: &[u8]) -> Option<(usize, FieldOperator, usize)> {
    term.iter()
        .enumerate()
        .find_map(|(i, &b)| match (b, term.get(i + 1)) {
            (b'!', Some(b'=')) => Some((i, FieldOperator::NotEquals, 2)),
            (b'=', Some(b'=')) => Some((i, FieldOperator::Equals, 2)),
            (b'=', _) => Some((i, FieldOperator::Equals, 1)),
            _ => None,
        })
}

/// Kubernetes' `UnescapeValue`, for a raw value starting at byte `base`.
fn unescape(raw: &str, base: usize) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped @ ('\\' | ',' | '='))) => out.push(escaped),
                other => {
                    return Err(SelectorError::field(
                        base + i,
                        SelectorErrorKind::InvalidEscape(other.map(|(_, c)| c)),
                    ));
                }
            },
            ',' | '=' => {
                return Err(SelectorError::field(
                    base + i,
                    SelectorErrorKind::UnescapedChar(c),
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use FieldOperator as Op;
    use SelectorErrorKind as K;

    fn parse(s: &str) -> FieldSelector {
        match FieldSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn err(s: &str) -> (usize, SelectorErrorKind) {
        match FieldSelector::parse(s) {
            Ok(sel) => panic!("{s:?} parsed as {sel}"),
            Err(e) => {
                assert!(e.is_field_selector());
                (e.position(), e.kind().clone())
            }
        }
    }

    fn terms(s: &str) -> Vec<(String, FieldOperator, String)> {
        parse(s)
            .terms()
            .iter()
            .map(|t| (t.field().to_owned(), t.operator(), t.value().to_owned()))
            .collect()
    }

    fn t(field: &str, op: FieldOperator, value: &str) -> (String, FieldOperator, String) {
        (field.to_owned(), op, value.to_owned())
    }

    fn matches(s: &str, fields: &[(&str, &str)]) -> bool {
        parse(s).matches(|f| fields.iter().find(|(k, _)| *k == f).map(|(_, v)| *v))
    }

    #[test]
    fn empty_selects_everything() {
        for s in ["", ",", ",,,"] {
            let sel = parse(s);
            assert!(sel.is_everything(), "{s:?}");
            assert_eq!(sel, FieldSelector::everything());
            assert_eq!(sel, FieldSelector::default());
            assert_eq!(sel.to_string(), "");
            assert!(sel.matches(|_| None));
        }
        assert!(!parse("a=").is_everything());
    }

    #[test]
    fn equals() {
        assert_eq!(terms("f=v"), [t("f", Op::Equals, "v")]);
        assert!(matches("f=v", &[("f", "v")]));
        assert!(!matches("f=v", &[("f", "w")]));
        assert!(!matches("f=v", &[]));
    }

    #[test]
    fn double_equals_is_equals() {
        assert_eq!(terms("f==v"), [t("f", Op::Equals, "v")]);
        assert_eq!(parse("f==v"), parse("f=v"));
        assert_eq!(parse("f==v").to_string(), "f=v");
        assert!(matches("f==v", &[("f", "v")]));
        assert!(!matches("f==v", &[]));
    }

    #[test]
    fn not_equals() {
        assert_eq!(terms("f!=v"), [t("f", Op::NotEquals, "v")]);
        assert!(matches("f!=v", &[("f", "w")]));
        assert!(!matches("f!=v", &[("f", "v")]));
        assert!(matches("f!=v", &[]));
    }

    #[test]
    fn missing_field_reads_as_empty() {
        assert!(matches("f=", &[]));
        assert!(matches("f=", &[("f", "")]));
        assert!(!matches("f=", &[("f", "x")]));
        assert!(!matches("f!=", &[]));
        assert!(matches("f!=", &[("f", "x")]));
    }

    #[test]
    fn all_terms_must_match() {
        let s = "a=1,b!=2";
        assert!(matches(s, &[("a", "1")]));
        assert!(!matches(s, &[("a", "1"), ("b", "2")]));
        assert!(!matches(s, &[("b", "3")]));
    }

    #[test]
    fn escapes() {
        assert_eq!(terms(r"f=a\,b\=c\\d"), [t("f", Op::Equals, r"a,b=c\d")]);
        assert_eq!(parse(r"f=a\,b\=c\\d").to_string(), r"f=a\,b\=c\\d");
        assert_eq!(
            terms(r"f=a\\,g=b"),
            [t("f", Op::Equals, r"a\"), t("g", Op::Equals, "b")]
        );
        // `!` needs no escape.
        assert_eq!(terms("f=!x!"), [t("f", Op::Equals, "!x!")]);
        assert_eq!(terms("f=é"), [t("f", Op::Equals, "é")]);
    }

    #[test]
    fn fields_are_verbatim() {
        assert_eq!(terms(" f = v "), [t(" f ", Op::Equals, " v ")]);
        assert!(matches(" f = v ", &[(" f ", " v ")]));
        assert!(!matches(" f = v ", &[("f", "v")]));
        // The first operator splits: `!` not followed by `=` is part of the field.
        assert_eq!(terms("a!b=c"), [t("a!b", Op::Equals, "c")]);
        assert_eq!(terms("a!!=c"), [t("a!", Op::NotEquals, "c")]);
        assert_eq!(parse("a!!=c").to_string(), "a!!=c");
        // A backslash before the operator stays in the field.
        assert_eq!(terms(r"a\=b"), [t(r"a\", Op::Equals, "b")]);
        assert_eq!(terms(r"a\,b=c"), [t(r"a\,b", Op::Equals, "c")]);
        assert_eq!(parse(r"a\,b=c").to_string(), r"a\,b=c");
    }

    #[test]
    fn operator_precedence_at_a_position() {
        // At one position `!=` beats `==` beats `=`; the leftmost position wins.
        assert_eq!(terms("f==x"), [t("f", Op::Equals, "x")]);
        assert_eq!(terms("f=!x"), [t("f", Op::Equals, "!x")]);
        assert_eq!(terms("f!=x"), [t("f", Op::NotEquals, "x")]);
        assert_eq!(terms(r"f=\=\="), [t("f", Op::Equals, "==")]);
    }

    #[test]
    fn canonical_order_and_dedup() {
        let sel = parse("b=1,a!=2,a=3,a=1,,a=1,");
        assert_eq!(sel.to_string(), "a=1,a=3,a!=2,b=1");
        assert_eq!(parse(&sel.to_string()), sel);
        assert_eq!(parse("x=1,y=2"), parse("y=2,x=1"));
    }

    #[test]
    fn requires_exact() {
        let sel = parse("a!=x,a=z,a==y,b!=q");
        assert_eq!(sel.requires_exact("a"), Some("y"));
        assert_eq!(sel.requires_exact("b"), None);
        assert_eq!(sel.requires_exact("c"), None);
        assert_eq!(parse("a=").requires_exact("a"), Some(""));
        assert_eq!(FieldSelector::everything().requires_exact("a"), None);
    }

    #[test]
    fn from_str_and_clone() {
        let sel: FieldSelector = "a=b".parse().unwrap_or_default();
        let clone = sel.clone();
        assert!(Arc::ptr_eq(&sel.terms, &clone.terms));
        assert_eq!(sel.terms()[0].to_string(), "a=b");
        assert!("a".parse::<FieldSelector>().is_err());
    }

    // ---- errors, with exact positions ----

    #[test]
    fn error_missing_operator() {
        assert_eq!(err("f"), (0, K::MissingOperator));
        assert_eq!(err("a=b,spec"), (4, K::MissingOperator));
        assert_eq!(err(" "), (0, K::MissingOperator));
        assert_eq!(err("a!b"), (0, K::MissingOperator));
        assert_eq!(err(r"a=b\,,c"), (6, K::MissingOperator));
    }

    #[test]
    fn error_empty_field() {
        assert_eq!(err("=v"), (0, K::EmptyField));
        assert_eq!(err("a=b,!=v"), (4, K::EmptyField));
        assert_eq!(err("a=b,==v"), (4, K::EmptyField));
    }

    #[test]
    fn error_invalid_escape() {
        assert_eq!(err(r"f=a\q"), (3, K::InvalidEscape(Some('q'))));
        assert_eq!(err(r"f=a\"), (3, K::InvalidEscape(None)));
        assert_eq!(err(r"x=1,f!=\é"), (7, K::InvalidEscape(Some('é'))));
        // Kubernetes does not recognize `\!`.
        assert_eq!(err(r"f=\!"), (2, K::InvalidEscape(Some('!'))));
    }

    #[test]
    fn error_unescaped_char() {
        assert_eq!(err("f=a=b"), (3, K::UnescapedChar('=')));
        assert_eq!(err("f===x"), (3, K::UnescapedChar('=')));
        assert_eq!(err("f!==x"), (3, K::UnescapedChar('=')));
    }

    #[test]
    fn error_display() {
        let e = FieldSelector::parse("=v").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid field selector at byte 0: term has an empty field name before its operator"
        );
    }
}
