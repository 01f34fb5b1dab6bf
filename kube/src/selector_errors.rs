//! The messages the apiserver refuses a bad `labelSelector` or
//! `fieldSelector` with: its conversion's parse error, whole, as the 400
//! `Status`'s message (`metainternalversion`'s `ParameterCodec` runs
//! `labels.Parse` and `fields.ParseSelector`, k8s.io/apimachinery
//! v0.37.2 `pkg/labels/selector.go` and `pkg/fields/selector.go`; the
//! handler wraps the error in `errors.NewBadRequest(err.Error())`).
//!
//! Herald's own parsers (the engine's) decide what a selector means;
//! these re-walk a refused one as Go's parsers do, to word the refusal as
//! Go does. The vectors are Go's own messages (`testkit/govectors`).

use crate::quote::go_quote;

/// Go's error for `selector` as a field selector (`fields.ParseSelector`),
/// `None` if Go accepts it. Terms are split at unescaped commas and tried
/// in sorted order; the first that has no operator (`!=`, `==`, `=`) or
/// whose value is not escaped as Go requires is the error.
pub fn field_error(selector: &str) -> Option<String> {
    let mut parts = split_terms(selector);
    parts.sort_unstable();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let Some(rhs) = split_term(part) else {
            return Some(format!(
                "invalid selector: '{selector}'; can't understand '{part}'"
            ));
        };
        if let Err(e) = unescape_value(rhs) {
            return Some(e);
        }
    }
    None
}

/// `splitTerms`: at each comma not escaped by a backslash.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut start, mut slash) = (0, false);
    for (i, c) in s.char_indices() {
        if slash {
            slash = false;
        } else if c == '\\' {
            slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `splitTerm`: the value after the first operator found, trying `!=`,
/// `==`, `=` at each position.
fn split_term(term: &str) -> Option<&str> {
    for (i, _) in term.char_indices() {
        for op in ["!=", "==", "="] {
            if term[i..].starts_with(op) {
                return Some(&term[i + op.len()..]);
            }
        }
    }
    None
}

/// `UnescapeValue`'s error, if any.
fn unescape_value(s: &str) -> Result<(), String> {
    let mut slash = false;
    for c in s.chars() {
        if slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            slash = false;
            continue;
        }
        match c {
            '\\' => slash = true,
            // `%v` of a rune: its number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            _ => {}
        }
    }
    if slash {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(())
}

/// A token of Go's label selector lexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// `Lexer.Lex` over the whole selector (Go's lexer reads bytes; a NUL
/// byte where a token starts ends the input, one that ends a token is
/// read with it).
fn lex(s: &str) -> Vec<(Token, String)> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while blank(at(i)) {
            i += 1;
        }
        let c = at(i);
        if c == 0 {
            out.push((Token::End, String::new()));
            return out;
        }
        if special(c) {
            let start = i;
            let mut last: Option<(Token, usize)> = None;
            while special(at(i)) {
                i += 1;
                match keyword(&b[start..i]) {
                    Some(t) => last = Some((t, i)),
                    None if last.is_some() => break,
                    None => {}
                }
            }
            // A NUL byte right after the symbols is read with them.
            let after_nul = i < b.len() && b[i] == 0 && last.is_some_and(|(_, end)| end == i);
            match last {
                Some((t, end)) => {
                    out.push((t, text(&b[start..end])));
                    i = end + usize::from(after_nul);
                }
                None => out.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", text(&b[start..i])),
                )),
            }
        } else {
            let start = i;
            while at(i) != 0 && !special(at(i)) && !blank(at(i)) {
                i += 1;
            }
            let word = &b[start..i];
            // A NUL byte ends the identifier and is read with it.
            if i < b.len() && b[i] == 0 {
                i += 1;
            }
            out.push((keyword(word).unwrap_or(Token::Identifier), text(word)));
        }
    }
}

/// Go's error for `selector` as a label selector (`labels.Parse`),
/// `None` if Go accepts it.
pub fn label_error(selector: &str) -> Option<String> {
    let mut p = Parser {
        items: lex(selector),
        at: 0,
    };
    p.parse().err()
}

struct Parser {
    items: Vec<(Token, String)>,
    at: usize,
}

impl Parser {
    /// `lookahead(Values)` or `consume(Values)`: `in` and `notin` read as
    /// identifiers.
    fn peek(&self, values: bool) -> (Token, String) {
        let (t, l) = self.items[self.at.min(self.items.len() - 1)].clone();
        (values_token(t, values), l)
    }

    fn next(&mut self, values: bool) -> (Token, String) {
        let item = self.peek(values);
        self.at += 1;
        item
    }

    fn parse(&mut self) -> Result<(), String> {
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    self.requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    let (t, l) = self.next(true);
                    match t {
                        Token::End => return Ok(()),
                        Token::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(()),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<(), String> {
        // parseKeyAndInferOperator
        let (mut t, mut key) = self.next(true);
        let not_exists = t == Token::DoesNotExist;
        if not_exists {
            (t, key) = self.next(true);
        }
        if t != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        if let Some(e) = label_key_error(&key) {
            return Err(invalid("<nil>", &key, &e));
        }
        if not_exists || matches!(self.peek(true).0, Token::End | Token::Comma) {
            return Ok(());
        }
        // parseOperator
        let (op, lit) = self.next(false);
        let values = match op {
            Token::In | Token::NotIn => self.values()?,
            Token::Equals
            | Token::DoubleEquals
            | Token::NotEquals
            | Token::GreaterThan
            | Token::LessThan => self.exact_value()?,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        // NewRequirement, over the sorted set of values.
        let mut errors = Vec::new();
        for (i, v) in values.iter().enumerate() {
            if matches!(op, Token::GreaterThan | Token::LessThan) && v.parse::<i64>().is_err() {
                errors.push(invalid(
                    &format!("values[{i}]"),
                    v,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
        for (i, v) in values.iter().enumerate() {
            if let Some(e) = label_value_error(v) {
                errors.push(invalid(&format!("values[{i}][{key}]"), v, &e));
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// `parseValues`: `(a, b)`, a sorted set.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.next(true);
        if t != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.peek(true);
        let mut set = std::collections::BTreeSet::new();
        match t {
            Token::Identifier | Token::Comma => {
                loop {
                    let (t, lit) = self.next(true);
                    match t {
                        Token::Identifier => {
                            set.insert(lit);
                            let (t2, l2) = self.peek(true);
                            match t2 {
                                Token::Comma => continue,
                                Token::ClosedPar => break,
                                _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                            }
                        }
                        Token::Comma => {
                            if set.is_empty() {
                                set.insert(String::new());
                            }
                            let (t2, _) = self.peek(true);
                            if t2 == Token::ClosedPar {
                                set.insert(String::new());
                                break;
                            }
                            if t2 == Token::Comma {
                                set.insert(String::new());
                            }
                        }
                        _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
                    }
                }
                if self.next(true).0 != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
            }
            Token::ClosedPar => {
                self.next(true);
                set.insert(String::new());
            }
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
        Ok(set.into_iter().collect())
    }

    /// `parseExactValue`.
    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        if matches!(self.peek(true).0, Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (t, lit) = self.next(true);
        if t == Token::Identifier {
            return Ok(vec![lit]);
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

fn values_token(t: Token, values: bool) -> Token {
    match t {
        Token::In | Token::NotIn if values => Token::Identifier,
        t => t,
    }
}

/// `field.Invalid(path, value, detail).Error()`.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const NAME_EXAMPLES: &str = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, whole.
fn name_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
fn subdomain_shape(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// `content.IsLabelKey`'s messages, joined by `; `.
fn label_key_error(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 bytes".to_owned());
                }
                if !subdomain_shape(prefix) {
                    errors.push(format!("prefix part {SUBDOMAIN_MSG}"));
                }
            }
            name
        }
        _ => {
            return Some(format!(
                "a valid label key {NAME_MSG} {NAME_EXAMPLES} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_owned());
    }
    if !name_shape(name) {
        errors.push(format!("name part {NAME_MSG} {NAME_EXAMPLES}"));
    }
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// `content.IsLabelValue`'s messages, joined by `; `.
fn label_value_error(value: &str) -> Option<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_owned());
    }
    if !value.is_empty() && !name_shape(value) {
        errors.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '({NAME_FMT})?')"
        ));
    }
    (!errors.is_empty()).then(|| errors.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_gos() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../testdata/go_selector_errors.json")).unwrap();
        for case in v.as_array().unwrap() {
            let (kind, selector, want) = (
                case[0].as_str().unwrap(),
                case[1].as_str().unwrap(),
                case[2].as_str().unwrap(),
            );
            let got = if kind == "labelSelector" {
                label_error(selector)
            } else {
                field_error(selector)
            };
            assert_eq!(got.as_deref().unwrap_or("OK"), want, "{kind}={selector}");
        }
    }
}
