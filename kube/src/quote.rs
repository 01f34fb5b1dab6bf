//! Go's `strconv.Quote` (`%q`), with which the apiserver quotes names in
//! its 403 messages: `"` and `\` escaped, `\a \b \f \n \r \t \v` by
//! letter, other control and non-printable characters as `\x..` (below
//! 0x80) or `\u....`/`\U........`; printable non-ASCII kept as it is.
//! (Rust strings are UTF-8, so Go's `\x..` for invalid bytes never
//! arises.)

use std::fmt::Write;

/// `s` quoted as Go's `%q` quotes it.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint` for what a name can hold: not a control
/// character, not a format, separator (other than the ASCII space) or
/// private-use character. An approximation past the ranges below, which
/// only decides how an unusual character in a refused name is escaped.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || (0xad == u)
        || (0x200b..=0x200f).contains(&u)
        || (0x2028..=0x202e).contains(&u)
        || (0x2060..=0x206f).contains(&u)
        || u == 0xfeff
        || (0xe000..=0xf8ff).contains(&u)
        || (0xfff9..=0xfffb).contains(&u)
        || u >= 0xf0000)
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(go_quote("web-0"), r#""web-0""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\t\x00\x7f"), r#""a\nb\t\x00\x7f""#);
        assert_eq!(go_quote("ünï ✓"), "\"ünï ✓\"");
        assert_eq!(go_quote("\u{200b}\u{feff}"), r#""\u200b\ufeff""#);
        assert_eq!(go_quote(""), r#""""#);
    }
}
