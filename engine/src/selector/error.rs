//! The error type shared by label and field selector parsing.

use std::error::Error;
use std::fmt;

/// The limits the messages state, which `validate.rs` enforces.
///
/// Maximum length of a qualified name's name part and of a label value.
pub(crate) const QUALIFIED_NAME_MAX_LEN: usize = 63;
/// Maximum length of a DNS-1123 subdomain (a qualified name's prefix).
pub(crate) const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

/// Which selector grammar produced a [`SelectorError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Syntax {
    /// `labelSelector` syntax ([`LabelSelector`](super::LabelSelector)).
    Label,
    /// `fieldSelector` syntax ([`FieldSelector`](super::FieldSelector)).
    Field,
}

impl Syntax {
    const fn name(self) -> &'static str {
        match self {
            Self::Label => "label",
            Self::Field => "field",
        }
    }
}

/// A selector string could not be parsed.
///
/// Carries the byte offset into the input where the problem was detected
/// ([`position`](Self::position), always `<=` the input length and on a
/// `char` boundary) and what was wrong ([`kind`](Self::kind)).
///
/// ```
/// use herald::selector::{LabelSelector, SelectorErrorKind};
///
/// let err = LabelSelector::parse("app in (web").unwrap_err();
/// assert_eq!(err.position(), 11);
/// assert!(matches!(err.kind(), SelectorErrorKind::UnexpectedEnd { .. }));
/// assert_eq!(
///     err.to_string(),
///     "invalid label selector at byte 11: unexpected end of input, expected `,` or `)`",
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    position: usize,
    kind: SelectorErrorKind,
    syntax: Syntax,
}

impl SelectorError {
    pub(crate) const fn label(position: usize, kind: SelectorErrorKind) -> Self {
        Self {
            position,
            kind,
            syntax: Syntax::Label,
        }
    }

    pub(crate) const fn field(position: usize, kind: SelectorErrorKind) -> Self {
        Self {
            position,
            kind,
            syntax: Syntax::Field,
        }
    }

    /// Byte offset into the parsed string where the problem is.
    ///
    /// Equal to the input length when the input ended too early. Always on a
    /// `char` boundary, so `&input[err.position()..]` never panics.
    #[must_use]
    pub const fn position(&self) -> usize {
        self.position
    }

    /// What was wrong.
    #[must_use]
    pub const fn kind(&self) -> &SelectorErrorKind {
        &self.kind
    }

    /// `true` if this error came from parsing a field selector, `false` for a
    /// label selector.
    #[must_use]
    pub const fn is_field_selector(&self) -> bool {
        matches!(self.syntax, Syntax::Field)
    }
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} selector at byte {}: {}",
            self.syntax.name(),
            self.position,
            self.kind
        )
    }
}

impl Error for SelectorError {}

/// The specific problem reported by a [`SelectorError`].
///
/// The first group of variants is produced by [`LabelSelector`] parsing, the
/// second by [`FieldSelector`] parsing.
///
/// [`LabelSelector`]: super::LabelSelector
/// [`FieldSelector`]: super::FieldSelector
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SelectorErrorKind {
    /// Label selector: the input ended while `expected` was still required,
    /// e.g. `app in (web` or `app,`.
    UnexpectedEnd {
        /// What the parser needed next.
        expected: ExpectedToken,
    },
    /// Label selector: a token starting with `found` appeared where
    /// `expected` was required, e.g. `=x` (a key was expected) or `app web`
    /// (an operator was expected).
    UnexpectedChar {
        /// The first character of the offending token.
        found: char,
        /// What the parser needed instead.
        expected: ExpectedToken,
    },
    /// Label selector: `in ()` / `notin ()` with no value at all.
    EmptyValueSet,
    /// Label selector: a key is not a valid qualified name
    /// (`[prefix/]name`, see [`InvalidLabelReason`]).
    InvalidKey {
        /// Which rule the key breaks.
        reason: InvalidLabelReason,
    },
    /// Label selector: a value is not a valid label value (at most 63
    /// characters, empty or alphanumeric at both ends with `-`, `_`, `.`
    /// inside).
    InvalidValue {
        /// Which rule the value breaks.
        reason: InvalidLabelReason,
    },
    /// Label selector: the value of a `>` or `<` requirement is not a decimal
    /// integer in the range of `i64`.
    NotAnInteger,

    /// Field selector: a non-empty term contains none of `=`, `==`, `!=`.
    MissingOperator,
    /// Field selector: a term has nothing before its operator, e.g. `=v`.
    EmptyField,
    /// Field selector: a `\` in a value is followed by something other than
    /// `\`, `,` or `=` (`Some(c)`), or ends the value (`None`).
    InvalidEscape(Option<char>),
    /// Field selector: a value contains an unescaped `=` (write `\=`).
    UnescapedChar(char),
}

impl fmt::Display for SelectorErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnexpectedEnd { expected } => {
                write!(f, "unexpected end of input, expected {expected}")
            }
            Self::UnexpectedChar { found, expected } => {
                write!(f, "expected {expected}, found {found:?}")
            }
            Self::EmptyValueSet => f.write_str(
                "empty value set: `in` and `notin` need at least one value (use `(,)` for the empty string)",
            ),
            Self::InvalidKey { reason } => write!(f, "invalid key: {reason}"),
            Self::InvalidValue { reason } => write!(f, "invalid value: {reason}"),
            Self::NotAnInteger => f.write_str(
                "the value of a `>` or `<` requirement must be a decimal integer that fits in 64 bits",
            ),
            Self::MissingOperator => {
                f.write_str("term has no operator, expected `=`, `==` or `!=`")
            }
            Self::EmptyField => f.write_str("term has an empty field name before its operator"),
            Self::InvalidEscape(Some(c)) => write!(
                f,
                "invalid escape sequence `\\{c}`, only `\\\\`, `\\,` and `\\=` are recognized"
            ),
            Self::InvalidEscape(None) => f.write_str("value ends with an unescaped `\\`"),
            Self::UnescapedChar(c) => write!(f, "unescaped {c:?} in value, write it as `\\{c}`"),
        }
    }
}

/// What the label selector parser needed when it found something else
/// (see [`SelectorErrorKind::UnexpectedEnd`] and
/// [`SelectorErrorKind::UnexpectedChar`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExpectedToken {
    /// A label key, optionally preceded by `!`.
    Key,
    /// One of `=`, `==`, `!=`, `in`, `notin`, `>`, `<` after a key.
    Operator,
    /// A value after an operator or inside a value set.
    Value,
    /// The `(` opening the value set of `in` / `notin`.
    OpenParen,
    /// A `,` or the `)` closing a value set, after a value.
    CommaOrCloseParen,
    /// A `,` or the end of the selector, after a requirement.
    CommaOrEnd,
}

impl fmt::Display for ExpectedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Key => "a label key or `!`",
            Self::Operator => "an operator (`=`, `==`, `!=`, `in`, `notin`, `>` or `<`)",
            Self::Value => "a value",
            Self::OpenParen => "`(`",
            Self::CommaOrCloseParen => "`,` or `)`",
            Self::CommaOrEnd => "`,` or the end of the selector",
        })
    }
}

/// Why a label key or value is invalid (see [`SelectorErrorKind::InvalidKey`]
/// and [`SelectorErrorKind::InvalidValue`]).
///
/// Keys are Kubernetes qualified names: an optional prefix (a lowercase
/// DNS-1123 subdomain of at most 253 characters) and `/`, then a name of 1 to
/// 63 characters from `[A-Za-z0-9_.-]` that starts and ends with an
/// alphanumeric character. Values follow the name rules but may be empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidLabelReason {
    /// The key has a `/` with nothing before it.
    EmptyPrefix,
    /// The key's prefix is longer than 253 bytes.
    PrefixTooLong {
        /// The prefix length in bytes.
        len: usize,
    },
    /// The key's prefix is not a lowercase DNS-1123 subdomain; the error
    /// position points at the offending character.
    InvalidPrefix,
    /// The key has more than one `/`.
    TooManySlashes,
    /// The key has a `/` with nothing after it.
    EmptyName,
    /// The name (or value) is longer than 63 bytes.
    TooLong {
        /// The name or value length in bytes.
        len: usize,
    },
    /// A character outside `[A-Za-z0-9_.-]`; the error position points at it.
    InvalidChar(char),
    /// The name (or value) starts with `-`, `_` or `.`.
    MustStartAlphanumeric,
    /// The name (or value) ends with `-`, `_` or `.`.
    MustEndAlphanumeric,
}

impl fmt::Display for InvalidLabelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyPrefix => f.write_str("the prefix before `/` is empty"),
            Self::PrefixTooLong { len } => write!(
                f,
                "the prefix is {len} bytes long, at most {DNS1123_SUBDOMAIN_MAX_LEN} are allowed"
            ),
            Self::InvalidPrefix => f.write_str(
                "the prefix must be a lowercase DNS-1123 subdomain (e.g. `example.com`)",
            ),
            Self::TooManySlashes => f.write_str("at most one `/` is allowed"),
            Self::EmptyName => f.write_str("the name after `/` is empty"),
            Self::TooLong { len } => write!(
                f,
                "{len} bytes long, at most {QUALIFIED_NAME_MAX_LEN} are allowed"
            ),
            Self::InvalidChar(c) => write!(
                f,
                "character {c:?} is not allowed (only alphanumerics, `-`, `_` and `.`)"
            ),
            Self::MustStartAlphanumeric => f.write_str("must start with an alphanumeric character"),
            Self::MustEndAlphanumeric => f.write_str("must end with an alphanumeric character"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_selector_kind_and_position() {
        let e = SelectorError::label(
            7,
            SelectorErrorKind::UnexpectedChar {
                found: 'b',
                expected: ExpectedToken::Operator,
            },
        );
        assert_eq!(
            e.to_string(),
            "invalid label selector at byte 7: expected an operator (`=`, `==`, `!=`, `in`, \
             `notin`, `>` or `<`), found 'b'"
        );
        assert!(!e.is_field_selector());

        let e = SelectorError::field(3, SelectorErrorKind::InvalidEscape(Some('q')));
        assert_eq!(
            e.to_string(),
            "invalid field selector at byte 3: invalid escape sequence `\\q`, only `\\\\`, `\\,` \
             and `\\=` are recognized"
        );
        assert!(e.is_field_selector());
        assert_eq!(e.position(), 3);
        assert_eq!(e.kind(), &SelectorErrorKind::InvalidEscape(Some('q')));
    }

    #[test]
    fn every_kind_displays_something() {
        let kinds = [
            SelectorErrorKind::UnexpectedEnd {
                expected: ExpectedToken::Key,
            },
            SelectorErrorKind::EmptyValueSet,
            SelectorErrorKind::InvalidKey {
                reason: InvalidLabelReason::PrefixTooLong { len: 300 },
            },
            SelectorErrorKind::InvalidValue {
                reason: InvalidLabelReason::InvalidChar('\u{0}'),
            },
            SelectorErrorKind::NotAnInteger,
            SelectorErrorKind::MissingOperator,
            SelectorErrorKind::EmptyField,
            SelectorErrorKind::InvalidEscape(None),
            SelectorErrorKind::UnescapedChar('='),
        ];
        for kind in kinds {
            let msg = SelectorError::label(0, kind).to_string();
            assert!(
                msg.len() > "invalid label selector at byte 0: ".len(),
                "{msg}"
            );
        }
    }

    #[test]
    fn error_is_std_error_and_thread_safe() {
        fn assert_traits<T: Error + Send + Sync + Clone + 'static>() {}
        assert_traits::<SelectorError>();
    }
}
