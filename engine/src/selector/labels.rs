//! Label selectors: parsing, canonical formatting and matching
//! (Kubernetes `k8s.io/apimachinery/pkg/labels`).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::error::{ExpectedToken, SelectorError, SelectorErrorKind};
use super::lexer::{Lexer, Token, TokenKind, write_joined};
use super::validate;

/// A parsed Kubernetes label selector: a conjunction (AND) of
/// [`LabelRequirement`]s.
///
/// Grammar (whitespace allowed around tokens; requirements separated by `,`):
///
/// | syntax              | [`LabelOperator`] | matches an object whose labels…                    |
/// |---------------------|-------------------|----------------------------------------------------|
/// | `key=v`, `key==v`   | `Equals`          | have `key` with value `v`                          |
/// | `key!=v`            | `NotEquals`       | lack `key`, or have it with a value other than `v` |
/// | `key in (v1,v2)`    | `In`              | have `key` with one of the values                  |
/// | `key notin (v1,v2)` | `NotIn`           | lack `key`, or have it with none of the values     |
/// | `key`               | `Exists`          | have `key`                                         |
/// | `!key`              | `DoesNotExist`    | lack `key`                                         |
/// | `key>N`, `key<N`    | `GreaterThan`, `LessThan` | have `key` with a value that parses as an `i64` greater (less) than `N` |
///
/// Keys must be Kubernetes qualified names and values valid label values
/// (see [`InvalidLabelReason`](super::InvalidLabelReason)). A value may be
/// empty: `key=` and `key in (a,)` mention the empty string. The empty (or
/// all-whitespace) selector matches everything.
///
/// Parsing normalizes: `==` becomes `=`, requirements are sorted (by key,
/// then operator, then values) and exact duplicates removed, and value sets
/// are sorted and deduplicated. `Display` prints that canonical form, which
/// parses back to an equal selector, so equal selectors have equal strings.
///
/// Cloning is cheap (one reference count increment), and matching never
/// allocates.
///
/// ```
/// use std::collections::HashMap;
/// use herald::selector::LabelSelector;
///
/// let sel: LabelSelector = "tier in (web, api), env != dev, !canary".parse()?;
/// assert_eq!(sel.to_string(), "!canary,env!=dev,tier in (api,web)");
///
/// let labels = HashMap::from([("tier", "web"), ("env", "prod")]);
/// assert!(sel.matches(|k| labels.get(k).copied()));
///
/// let labels = HashMap::from([("tier", "web"), ("canary", "true")]);
/// assert!(!sel.matches(|k| labels.get(k).copied()));
/// # Ok::<(), herald::selector::SelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    requirements: Arc<[LabelRequirement]>,
}

impl LabelSelector {
    /// Parses a label selector in the Kubernetes `labelSelector` syntax.
    ///
    /// # Errors
    ///
    /// Returns a [`SelectorError`] locating the first problem: a syntax
    /// error, an invalid key or value, an empty `in`/`notin` value set, or a
    /// non-integer bound for `>`/`<`.
    ///
    /// ```
    /// use herald::selector::{LabelSelector, SelectorErrorKind};
    ///
    /// let sel = LabelSelector::parse("app = web, release")?;
    /// assert_eq!(sel.requirements().len(), 2);
    ///
    /// let err = LabelSelector::parse("app web").unwrap_err();
    /// assert_eq!(err.position(), 4);
    /// assert!(matches!(err.kind(), SelectorErrorKind::UnexpectedChar { found: 'w', .. }));
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut requirements = Parser {
            lexer: Lexer::new(input),
        }
        .parse()?;
        requirements.sort_by(LabelRequirement::canonical_cmp);
        requirements.dedup();
        Ok(Self {
            requirements: requirements.into(),
        })
    }

    /// The selector that matches every object (the empty selector).
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// `true` if the selector has no requirement, so it matches everything.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, in canonical order.
    #[must_use]
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// Evaluates the selector against an object's labels, given as a lookup
    /// from label key to value (`None` when the object lacks the label).
    ///
    /// Does not allocate; calls `get` at most once per requirement and stops
    /// at the first requirement that fails.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use herald::selector::LabelSelector;
    ///
    /// let labels: BTreeMap<String, String> =
    ///     [("replicas".to_owned(), "5".to_owned())].into();
    /// let get = |k: &str| labels.get(k).map(String::as_str);
    /// assert!(LabelSelector::parse("replicas>3, app!=web")?.matches(get));
    /// assert!(!LabelSelector::parse("replicas<3")?.matches(get));
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    pub fn matches<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(get(&r.key)))
    }

    /// If every object this selector matches must carry label `key` with one
    /// specific value, returns that value: the selector has `key=v`,
    /// `key==v` or `key in (v)`. Useful to route a watcher through an index
    /// on `key`. (Like Kubernetes' `RequiresExactMatch`, but it finds such a
    /// requirement even when another requirement on `key` sorts first.)
    ///
    /// ```
    /// use herald::selector::LabelSelector;
    ///
    /// let sel = LabelSelector::parse("app notin (db), app in (web), tier")?;
    /// assert_eq!(sel.requires_exact("app"), Some("web"));
    /// assert_eq!(sel.requires_exact("tier"), None);
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    #[must_use]
    pub fn requires_exact(&self, key: &str) -> Option<&str> {
        let start = self.requirements.partition_point(|r| r.key.as_ref() < key);
        self.requirements
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(|r| r.key.as_ref() == key)
            .find_map(|r| match (r.operator, &*r.values) {
                (LabelOperator::Equals | LabelOperator::In, [only]) => Some(only.as_ref()),
                _ => None,
            })
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for LabelSelector {
    /// Writes the canonical form: requirements joined by `,` without spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, &self.requirements)
    }
}

/// The operator of a [`LabelRequirement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LabelOperator {
    /// `key=value` or `key==value`: the label exists with that value.
    Equals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (v1,v2,...)`: the label exists with one of the values.
    In,
    /// `key notin (v1,v2,...)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>N`: the label exists and its value is an integer greater than `N`.
    GreaterThan,
    /// `key<N`: the label exists and its value is an integer less than `N`.
    LessThan,
}

impl LabelOperator {
    /// Position in the canonical requirement order (for equal keys).
    const fn rank(self) -> u8 {
        match self {
            Self::Equals => 0,
            Self::NotEquals => 1,
            Self::In => 2,
            Self::NotIn => 3,
            Self::Exists => 4,
            Self::DoesNotExist => 5,
            Self::GreaterThan => 6,
            Self::LessThan => 7,
        }
    }
}

/// One requirement of a [`LabelSelector`]: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelRequirement {
    key: Box<str>,
    operator: LabelOperator,
    /// Sorted and deduplicated. Exactly one value for `Equals`, `NotEquals`,
    /// `GreaterThan` and `LessThan`; none for `Exists` and `DoesNotExist`; at
    /// least one for `In` and `NotIn`.
    values: Box<[Box<str>]>,
    /// The parsed value of `GreaterThan` / `LessThan`, else 0.
    bound: i64,
}

impl LabelRequirement {
    /// The label key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    #[must_use]
    pub const fn operator(&self) -> LabelOperator {
        self.operator
    }

    /// The values, sorted and without duplicates: one for `=`, `!=`, `>` and
    /// `<` (the bound as written, e.g. `"007"`), at least one for `in` and
    /// `notin`, none for exists and `!`.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone {
        self.values.iter().map(AsRef::as_ref)
    }

    /// Evaluates this requirement against the object's value for
    /// [`key`](Self::key) (`None` if the object lacks the label). Does not
    /// allocate.
    ///
    /// ```
    /// use herald::selector::LabelSelector;
    ///
    /// let sel = LabelSelector::parse("tier notin (db)")?;
    /// let req = &sel.requirements()[0];
    /// assert!(req.matches_value(None));
    /// assert!(req.matches_value(Some("web")));
    /// assert!(!req.matches_value(Some("db")));
    /// # Ok::<(), herald::selector::SelectorError>(())
    /// ```
    #[must_use]
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match self.operator {
            LabelOperator::Equals | LabelOperator::In => value.is_some_and(|v| self.has_value(v)),
            LabelOperator::NotEquals | LabelOperator::NotIn => {
                !value.is_some_and(|v| self.has_value(v))
            }
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
            LabelOperator::GreaterThan => parse_i64(value).is_some_and(|n| n > self.bound),
            LabelOperator::LessThan => parse_i64(value).is_some_and(|n| n < self.bound),
        }
    }

    /// A requirement without values (`Exists` or `DoesNotExist`).
    fn unary(key: &str, operator: LabelOperator) -> Self {
        Self {
            key: key.into(),
            operator,
            values: Box::default(),
            bound: 0,
        }
    }

    fn has_value(&self, value: &str) -> bool {
        match &*self.values {
            [only] => only.as_ref() == value,
            values => values.binary_search_by(|v| v.as_ref().cmp(value)).is_ok(),
        }
    }

    /// The canonical total order: key, operator, values.
    fn canonical_cmp(&self, other: &Self) -> Ordering {
        self.key
            .cmp(&other.key)
            .then_with(|| self.operator.rank().cmp(&other.operator.rank()))
            .then_with(|| self.values.cmp(&other.values))
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, ASCII digits, no
/// whitespace, in range. Rust's `i64::from_str` accepts exactly that.
fn parse_i64(value: Option<&str>) -> Option<i64> {
    value.and_then(|v| v.parse().ok())
}

impl fmt::Display for LabelRequirement {
    /// Writes the canonical form, e.g. `app=web`, `!canary`,
    /// `tier in (api,web)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (before, op, after) = match self.operator {
            LabelOperator::Exists => ("", "", ""),
            LabelOperator::DoesNotExist => ("!", "", ""),
            LabelOperator::Equals => ("", "=", ""),
            LabelOperator::NotEquals => ("", "!=", ""),
            LabelOperator::GreaterThan => ("", ">", ""),
            LabelOperator::LessThan => ("", "<", ""),
            LabelOperator::In => ("", " in (", ")"),
            LabelOperator::NotIn => ("", " notin (", ")"),
        };
        f.write_str(before)?;
        f.write_str(&self.key)?;
        f.write_str(op)?;
        match &*self.values {
            // `()` is rejected by the parser; `(,)` is the set holding "".
            [only] if only.is_empty() && !after.is_empty() => f.write_str(",")?,
            values => {
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(v)?;
                }
            }
        }
        f.write_str(after)
    }
}

/// LL(1) parser mirroring `labels.Parser` in Kubernetes.
struct Parser<'a> {
    lexer: Lexer<'a>,
}

/// The error for finding `tok` where `expected` was required.
fn unexpected(tok: Token<'_>, expected: ExpectedToken) -> SelectorError {
    let kind = match tok.first_char() {
        Some(found) => SelectorErrorKind::UnexpectedChar { found, expected },
        None => SelectorErrorKind::UnexpectedEnd { expected },
    };
    SelectorError::label(tok.pos, kind)
}

impl<'a> Parser<'a> {
    fn parse(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut requirements = Vec::new();
        if self.lexer.peek().kind == TokenKind::End {
            return Ok(requirements);
        }
        loop {
            let tok = self.lexer.peek();
            if !matches!(tok.kind, TokenKind::Ident | TokenKind::Bang) {
                return Err(unexpected(tok, ExpectedToken::Key));
            }
            requirements.push(self.requirement()?);
            let sep = self.lexer.advance();
            match sep.kind {
                TokenKind::End => return Ok(requirements),
                TokenKind::Comma => {}
                _ => return Err(unexpected(sep, ExpectedToken::CommaOrEnd)),
            }
        }
    }

    fn requirement(&mut self) -> Result<LabelRequirement, SelectorError> {
        let mut tok = self.lexer.advance();
        let negated = tok.kind == TokenKind::Bang;
        if negated {
            tok = self.lexer.advance();
        }
        if tok.kind != TokenKind::Ident {
            return Err(unexpected(tok, ExpectedToken::Key));
        }
        let key = tok.text;
        validate::label_key(key, tok.pos)?;
        if negated {
            // As in Kubernetes, whatever follows `!key` must be `,` or the
            // end, which the caller checks.
            return Ok(LabelRequirement::unary(key, LabelOperator::DoesNotExist));
        }
        if matches!(self.lexer.peek().kind, TokenKind::End | TokenKind::Comma) {
            return Ok(LabelRequirement::unary(key, LabelOperator::Exists));
        }

        let op_tok = self.lexer.advance();
        let operator = match (op_tok.kind, op_tok.text) {
            (TokenKind::Eq | TokenKind::DoubleEq, _) => LabelOperator::Equals,
            (TokenKind::NotEq, _) => LabelOperator::NotEquals,
            (TokenKind::Gt, _) => LabelOperator::GreaterThan,
            (TokenKind::Lt, _) => LabelOperator::LessThan,
            (TokenKind::Ident, "in") => LabelOperator::In,
            (TokenKind::Ident, "notin") => LabelOperator::NotIn,
            _ => return Err(unexpected(op_tok, ExpectedToken::Operator)),
        };
        let values = match operator {
            LabelOperator::In | LabelOperator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        // Syntax errors in the requirement win over invalid values, as in
        // Kubernetes (which validates in `NewRequirement`, after parsing).
        for &(value, pos) in &values {
            validate::label_value(value, pos)?;
        }
        // Go's `strconv.ParseInt(v, 10, 64)` is exactly `i64::from_str`.
        let bound = match (operator, values.as_slice()) {
            (LabelOperator::GreaterThan | LabelOperator::LessThan, &[(value, pos)]) => value
                .parse()
                .map_err(|_| SelectorError::label(pos, SelectorErrorKind::NotAnInteger))?,
            _ => 0,
        };
        let mut values: Vec<&str> = values.into_iter().map(|(v, _)| v).collect();
        values.sort_unstable();
        values.dedup();
        Ok(LabelRequirement {
            key: key.into(),
            operator,
            values: values.into_iter().map(Box::from).collect(),
            bound,
        })
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`: an identifier, or the
    /// empty string when the requirement ends right there.
    fn exact_value(&mut self) -> Result<(&'a str, usize), SelectorError> {
        let next = self.lexer.peek();
        if matches!(next.kind, TokenKind::End | TokenKind::Comma) {
            return Ok(("", next.pos));
        }
        let tok = self.lexer.advance();
        if tok.kind == TokenKind::Ident {
            Ok((tok.text, tok.pos))
        } else {
            Err(unexpected(tok, ExpectedToken::Value))
        }
    }

    /// `( values )` after `in` / `notin`, with Kubernetes' handling of empty
    /// elements: `(,x)`, `(x,)` and `(x,,y)` contain `""`; `(x,,)` is an
    /// error. Unlike Kubernetes, `()` is an error rather than `("")`.
    fn value_set(&mut self) -> Result<Vec<(&'a str, usize)>, SelectorError> {
        let open = self.lexer.advance();
        if open.kind != TokenKind::OpenParen {
            return Err(unexpected(open, ExpectedToken::OpenParen));
        }
        let first = self.lexer.peek();
        match first.kind {
            TokenKind::Ident | TokenKind::Comma => {}
            TokenKind::CloseParen => {
                return Err(SelectorError::label(
                    first.pos,
                    SelectorErrorKind::EmptyValueSet,
                ));
            }
            _ => return Err(unexpected(first, ExpectedToken::Value)),
        }
        let mut values = Vec::new();
        loop {
            let tok = self.lexer.advance();
            match tok.kind {
                TokenKind::Ident => {
                    values.push((tok.text, tok.pos));
                    let next = self.lexer.peek();
                    match next.kind {
                        TokenKind::Comma => {}
                        TokenKind::CloseParen => break,
                        _ => return Err(unexpected(next, ExpectedToken::CommaOrCloseParen)),
                    }
                }
                TokenKind::Comma => {
                    if values.is_empty() {
                        values.push(("", tok.pos));
                    }
                    let next = self.lexer.peek();
                    match next.kind {
                        TokenKind::CloseParen => {
                            values.push(("", next.pos));
                            break;
                        }
                        TokenKind::Comma => {
                            self.lexer.advance();
                            values.push(("", next.pos));
                        }
                        _ => {}
                    }
                }
                _ => return Err(unexpected(tok, ExpectedToken::Value)),
            }
        }
        // The loop only breaks with `)` peeked.
        let _close = self.lexer.advance();
        Ok(values)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::*;
    use LabelOperator as Op;
    use SelectorErrorKind as K;

    fn parse(s: &str) -> LabelSelector {
        match LabelSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    /// A selector's requirements as plain values (also for `tests.rs`).
    pub(crate) fn describe(sel: &LabelSelector) -> Vec<(String, LabelOperator, Vec<String>)> {
        sel.requirements()
            .iter()
            .map(|r| {
                (
                    r.key().to_owned(),
                    r.operator(),
                    r.values().map(str::to_owned).collect(),
                )
            })
            .collect()
    }

    fn reqs(s: &str) -> Vec<(String, LabelOperator, Vec<String>)> {
        describe(&parse(s))
    }

    fn one(
        key: &str,
        op: LabelOperator,
        values: &[&str],
    ) -> Vec<(String, LabelOperator, Vec<String>)> {
        vec![(
            key.to_owned(),
            op,
            values.iter().map(|v| (*v).to_owned()).collect(),
        )]
    }

    fn matches(s: &str, labels: &[(&str, &str)]) -> bool {
        let map: HashMap<&str, &str> = labels.iter().copied().collect();
        parse(s).matches(|k| map.get(k).copied())
    }

    #[test]
    fn empty_selects_everything() {
        for s in ["", " ", "\t\r\n "] {
            let sel = parse(s);
            assert!(sel.is_everything());
            assert_eq!(sel, LabelSelector::everything());
            assert_eq!(sel, LabelSelector::default());
            assert_eq!(sel.to_string(), "");
            assert!(sel.matches(|_| None));
            assert!(sel.matches(|_| Some("x")));
        }
        assert!(!parse("a").is_everything());
    }

    #[test]
    fn equals() {
        assert_eq!(reqs("a=b"), one("a", Op::Equals, &["b"]));
        assert!(matches("a=b", &[("a", "b")]));
        assert!(!matches("a=b", &[("a", "c")]));
        assert!(!matches("a=b", &[]));
        assert!(!matches("a=b", &[("b", "b")]));
    }

    #[test]
    fn double_equals_is_equals() {
        assert_eq!(reqs("a==b"), one("a", Op::Equals, &["b"]));
        assert_eq!(parse("a == b"), parse("a=b"));
        assert_eq!(parse("a==b").to_string(), "a=b");
        assert!(matches("a==b", &[("a", "b")]));
        assert!(!matches("a==b", &[("a", "")]));
        assert!(!matches("a==b", &[]));
    }

    #[test]
    fn not_equals_matches_missing_key() {
        assert_eq!(reqs("a!=b"), one("a", Op::NotEquals, &["b"]));
        assert!(matches("a!=b", &[("a", "c")]));
        assert!(!matches("a!=b", &[("a", "b")]));
        assert!(matches("a!=b", &[]));
    }

    #[test]
    fn empty_exact_values() {
        assert_eq!(reqs("a="), one("a", Op::Equals, &[""]));
        assert_eq!(reqs("a==,b"), {
            let mut v = one("a", Op::Equals, &[""]);
            v.extend(one("b", Op::Exists, &[]));
            v
        });
        assert!(matches("a=", &[("a", "")]));
        assert!(!matches("a=", &[]));
        assert!(matches("a!=", &[]));
        assert!(!matches("a!=", &[("a", "")]));
        assert_eq!(parse("a = ").to_string(), "a=");
    }

    #[test]
    fn in_set() {
        assert_eq!(reqs("a in (y,x,y)"), one("a", Op::In, &["x", "y"]));
        assert_eq!(reqs("a in ( x , y )"), one("a", Op::In, &["x", "y"]));
        assert_eq!(reqs("a in(x)"), one("a", Op::In, &["x"]));
        assert!(matches("a in (x,y)", &[("a", "y")]));
        assert!(!matches("a in (x,y)", &[("a", "z")]));
        assert!(!matches("a in (x,y)", &[]));
        assert!(matches("a in (x)", &[("a", "x")]));
        let many = "a in (v0,v1,v2,v3,v4,v5,v6,v7,v8,v9)";
        for i in 0..10 {
            assert!(matches(many, &[("a", &format!("v{i}"))]));
        }
        assert!(!matches(many, &[("a", "v10")]));
    }

    #[test]
    fn notin_matches_missing_key() {
        assert_eq!(reqs("a notin (x,y)"), one("a", Op::NotIn, &["x", "y"]));
        assert!(matches("a notin (x,y)", &[("a", "z")]));
        assert!(!matches("a notin (x,y)", &[("a", "x")]));
        assert!(matches("a notin (x,y)", &[]));
    }

    #[test]
    fn empty_set_elements_follow_kubernetes() {
        assert_eq!(reqs("a in (x,)"), one("a", Op::In, &["", "x"]));
        assert_eq!(reqs("a in (,x)"), one("a", Op::In, &["", "x"]));
        assert_eq!(reqs("a in (,)"), one("a", Op::In, &[""]));
        assert_eq!(reqs("a in (x,,y)"), one("a", Op::In, &["", "x", "y"]));
        assert_eq!(reqs("a in (,,x)"), one("a", Op::In, &["", "x"]));
        assert_eq!(parse("a in (,)").to_string(), "a in (,)");
        assert_eq!(parse("a in (x,)").to_string(), "a in (,x)");
        assert!(matches("a in (x,)", &[("a", "")]));
        assert!(!matches("a notin (,)", &[("a", "")]));
        // Kubernetes quirk: a doubled comma must be followed by a value.
        let e = LabelSelector::parse("a in (x,,)").unwrap_err();
        let expected = ExpectedToken::Value;
        let found = ')';
        assert_eq!(
            (e.position(), e.kind()),
            (9, &K::UnexpectedChar { found, expected })
        );
    }

    #[test]
    fn exists_and_does_not_exist() {
        assert_eq!(reqs("a"), one("a", Op::Exists, &[]));
        assert_eq!(reqs(" ! a "), one("a", Op::DoesNotExist, &[]));
        assert!(matches("a", &[("a", "")]));
        assert!(!matches("a", &[("b", "")]));
        assert!(matches("!a", &[("b", "")]));
        assert!(!matches("!a", &[("a", "x")]));
        assert_eq!(parse(" ! a ").to_string(), "!a");
    }

    #[test]
    fn greater_and_less_than() {
        assert_eq!(reqs("a>5"), one("a", Op::GreaterThan, &["5"]));
        assert_eq!(reqs("a < 007"), one("a", Op::LessThan, &["007"]));
        assert!(matches("a>5", &[("a", "6")]));
        assert!(!matches("a>5", &[("a", "5")]));
        assert!(matches("a>5", &[("a", "+6")]));
        assert!(!matches("a>5", &[("a", "x")]));
        assert!(!matches("a>5", &[("a", "")]));
        assert!(!matches("a>5", &[("a", " 6")]));
        assert!(!matches("a>5", &[("a", "99999999999999999999")]));
        assert!(!matches("a>5", &[]));
        assert!(matches("a<7", &[("a", "-100")]));
        assert!(matches("a<007", &[("a", "6")]));
        assert!(!matches("a<7", &[("a", "7")]));
        assert!(!matches("a<7", &[]));
        assert!(matches(
            "a>9223372036854775806",
            &[("a", "9223372036854775807")]
        ));
        assert_eq!(parse("a < 007").to_string(), "a<007");
    }

    #[test]
    fn keywords_are_keys_and_values_outside_operator_position() {
        assert_eq!(reqs("in in (in)"), one("in", Op::In, &["in"]));
        assert_eq!(
            reqs("notin notin (notin)"),
            one("notin", Op::NotIn, &["notin"])
        );
        assert_eq!(reqs("in=notin"), one("in", Op::Equals, &["notin"]));
        assert_eq!(reqs("!in"), one("in", Op::DoesNotExist, &[]));
        assert_eq!(reqs("notin"), one("notin", Op::Exists, &[]));
        assert_eq!(parse("in in (in)").to_string(), "in in (in)");
    }

    #[test]
    fn qualified_keys() {
        assert_eq!(
            reqs("app.kubernetes.io/name=web"),
            one("app.kubernetes.io/name", Op::Equals, &["web"])
        );
    }

    #[test]
    fn canonical_order_and_dedup() {
        let sel = parse("b, a notin (y), a = x, a = x, a in (z), !c, a>1, a<1, a!=x, a");
        assert_eq!(
            sel.to_string(),
            "a=x,a!=x,a in (z),a notin (y),a,a>1,a<1,b,!c"
        );
        assert_eq!(parse(&sel.to_string()), sel);
        assert_eq!(parse("x=1,y=2"), parse("y=2, x=1"));
    }

    #[test]
    fn all_requirements_must_match() {
        let s = "a=1,b in (2,3),!c";
        assert!(matches(s, &[("a", "1"), ("b", "3")]));
        assert!(!matches(s, &[("a", "1"), ("b", "4")]));
        assert!(!matches(s, &[("a", "1"), ("b", "3"), ("c", "")]));
        assert!(!matches("a=1,a=2", &[("a", "1")]));
    }

    #[test]
    fn matches_calls_lookup_once_per_requirement() {
        let calls = std::cell::Cell::new(0);
        let sel = parse("a,b,c!=x");
        assert!(sel.matches(|_| {
            calls.set(calls.get() + 1);
            Some("v")
        }));
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn requires_exact() {
        let sel = parse("a!=x,a=y,b in (p),c in (p,q),d notin (x),e");
        assert_eq!(sel.requires_exact("a"), Some("y"));
        assert_eq!(sel.requires_exact("b"), Some("p"));
        assert_eq!(sel.requires_exact("c"), None);
        assert_eq!(sel.requires_exact("d"), None);
        assert_eq!(sel.requires_exact("e"), None);
        assert_eq!(sel.requires_exact("zzz"), None);
        assert_eq!(LabelSelector::everything().requires_exact("a"), None);
    }

    #[test]
    fn from_str_and_clone() {
        let sel: LabelSelector = "a=b".parse().unwrap_or_default();
        let clone = sel.clone();
        assert_eq!(sel, clone);
        assert!(Arc::ptr_eq(&sel.requirements, &clone.requirements));
        assert!("a b".parse::<LabelSelector>().is_err());
    }

    #[test]
    fn requirement_display() {
        let sel = parse("x notin (b,a)");
        assert_eq!(sel.requirements()[0].to_string(), "x notin (a,b)");
    }
}
