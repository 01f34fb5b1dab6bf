//! Tokenizer for the label selector grammar, equivalent to the lexer in
//! `k8s.io/apimachinery/pkg/labels/selector.go`; and [`write_joined`],
//! which writes either selector's canonical text.
//!
//! Whitespace is `' '`, `'\t'`, `'\r'` and `'\n'`. The special characters
//! `= ! ( ) , > <` form operator tokens with longest match (`==`, `!=`);
//! any other run of bytes is an identifier. `in` and `notin` are lexed as
//! identifiers: the parser gives them operator meaning only right after a
//! key, so they remain usable as keys and values, as in Kubernetes.

/// The kind of a [`Token`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A maximal run of non-special, non-whitespace bytes.
    Ident,
    /// `!`
    Bang,
    /// `=`
    Eq,
    /// `==`
    DoubleEq,
    /// `!=`
    NotEq,
    /// `>`
    Gt,
    /// `<`
    Lt,
    /// `(`
    OpenParen,
    /// `)`
    CloseParen,
    /// `,`
    Comma,
    /// End of input (empty text, positioned at the input length).
    End,
}

/// A token and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub(crate) kind: TokenKind,
    /// The token's text, a sub-slice of the input (empty for `End`).
    pub(crate) text: &'a str,
    /// Byte offset of the token's first byte; always a char boundary.
    pub(crate) pos: usize,
}

impl Token<'_> {
    /// The first character of the token, `None` at the end of input.
    pub(crate) fn first_char(&self) -> Option<char> {
        self.text.chars().next()
    }
}

const fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

const fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// A lexer with one token of lookahead.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    peeked: Option<Token<'a>>,
}

impl<'a> Lexer<'a> {
    pub(crate) const fn new(input: &'a str) -> Self {
        Self {
            input,
            pos: 0,
            peeked: None,
        }
    }

    /// Returns the next token without consuming it.
    pub(crate) fn peek(&mut self) -> Token<'a> {
        match self.peeked {
            Some(tok) => tok,
            None => {
                let tok = self.scan();
                self.peeked = Some(tok);
                tok
            }
        }
    }

    /// Consumes and returns the next token. Returns `End` forever at the end.
    pub(crate) fn advance(&mut self) -> Token<'a> {
        match self.peeked.take() {
            Some(tok) => tok,
            None => self.scan(),
        }
    }

    fn scan(&mut self) -> Token<'a> {
        let bytes = self.input.as_bytes();
        while bytes.get(self.pos).copied().is_some_and(is_whitespace) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&first) = bytes.get(start) else {
            return Token {
                kind: TokenKind::End,
                text: "",
                pos: bytes.len(),
            };
        };
        let second = bytes.get(start + 1).copied();
        let (kind, len) = match (first, second) {
            (b'=', Some(b'=')) => (TokenKind::DoubleEq, 2),
            (b'=', _) => (TokenKind::Eq, 1),
            (b'!', Some(b'=')) => (TokenKind::NotEq, 2),
            (b'!', _) => (TokenKind::Bang, 1),
            (b'>', _) => (TokenKind::Gt, 1),
            (b'<', _) => (TokenKind::Lt, 1),
            (b'(', _) => (TokenKind::OpenParen, 1),
            (b')', _) => (TokenKind::CloseParen, 1),
            (b',', _) => (TokenKind::Comma, 1),
            _ => {
                let rest = bytes.get(start..).unwrap_or_default();
                let len = rest
                    .iter()
                    .position(|&b| is_special(b) || is_whitespace(b))
                    .unwrap_or(rest.len());
                (TokenKind::Ident, len)
            }
        };
        let end = start + len;
        self.pos = end;
        // Token boundaries are next to ASCII bytes or at the ends of the
        // input, hence char boundaries: `get` cannot fail.
        let text = self.input.get(start..end).unwrap_or_default();
        Token {
            kind,
            text,
            pos: start,
        }
    }
}

/// Writes `items` separated by `,` (the canonical form of both selectors).
pub(crate) fn write_joined<T: std::fmt::Display>(
    f: &mut std::fmt::Formatter<'_>,
    items: &[T],
) -> std::fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        std::fmt::Display::fmt(item, f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::TokenKind::*;
    use super::*;

    fn lex(s: &str) -> Vec<(TokenKind, &str, usize)> {
        let mut lexer = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let t = lexer.advance();
            out.push((t.kind, t.text, t.pos));
            if t.kind == End {
                return out;
            }
        }
    }

    #[test]
    fn operators_use_longest_match() {
        assert_eq!(
            lex("a==b!=c=d!e"),
            [
                (Ident, "a", 0),
                (DoubleEq, "==", 1),
                (Ident, "b", 3),
                (NotEq, "!=", 4),
                (Ident, "c", 6),
                (Eq, "=", 7),
                (Ident, "d", 8),
                (Bang, "!", 9),
                (Ident, "e", 10),
                (End, "", 11),
            ]
        );
        assert_eq!(
            lex("===<=>!!"),
            [
                (DoubleEq, "==", 0),
                (Eq, "=", 2),
                (Lt, "<", 3),
                (Eq, "=", 4),
                (Gt, ">", 5),
                (Bang, "!", 6),
                (Bang, "!", 7),
                (End, "", 8),
            ]
        );
    }

    #[test]
    fn whitespace_separates_and_is_skipped() {
        assert_eq!(
            lex(" \tx in\r\n( a ,b )\n"),
            [
                (Ident, "x", 2),
                (Ident, "in", 4),
                (OpenParen, "(", 8),
                (Ident, "a", 10),
                (Comma, ",", 12),
                (Ident, "b", 13),
                (CloseParen, ")", 15),
                (End, "", 17),
            ]
        );
        assert_eq!(lex("   "), [(End, "", 3)]);
        assert_eq!(lex(""), [(End, "", 0)]);
    }

    #[test]
    fn identifiers_keep_non_ascii_and_other_punctuation() {
        assert_eq!(
            lex("é/x.y\u{b}z,"),
            [(Ident, "é/x.y\u{b}z", 0), (Comma, ",", 8), (End, "", 9)]
        );
    }

    #[test]
    fn peek_does_not_consume_and_end_is_sticky() {
        let mut lexer = Lexer::new("a");
        assert_eq!(lexer.peek().text, "a");
        assert_eq!(lexer.peek().text, "a");
        assert_eq!(lexer.advance().text, "a");
        assert_eq!(lexer.advance().kind, End);
        assert_eq!(lexer.peek().kind, End);
        assert_eq!(lexer.advance().pos, 1);
    }

    #[test]
    fn first_char() {
        let mut lexer = Lexer::new("éa ");
        assert_eq!(lexer.advance().first_char(), Some('é'));
        assert_eq!(lexer.advance().first_char(), None);
    }
}
