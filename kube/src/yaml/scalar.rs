//! A scalar's analysis (`yaml_emitter_analyze_scalar`) and the style
//! go-yaml writes it in (`encoder.stringv`,
//! `yaml_emitter_select_scalar_style`).

use super::resolve;

/// How a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// The style `encoder.stringv` asks for: literal with a line break,
/// plain when go-yaml reads the plain text back as a string, else
/// double-quoted.
pub(super) fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolve::is_not_a_string(s) {
        Style::Double
    } else {
        Style::Plain
    }
}

/// What `yaml_emitter_analyze_scalar` finds (block context: the flow
/// flags do not matter, JSON's collections are never flow but empty).
#[derive(Debug, Clone, Copy)]
pub(super) struct Analysis {
    pub(super) multiline: bool,
    empty: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    /// Analyzes `value`.
    pub(super) fn of(value: &str) -> Analysis {
        if value.is_empty() {
            return Analysis {
                multiline: false,
                empty: true,
                block_plain_allowed: true,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let b = value.as_bytes();
        let mut block_indicators = b.starts_with(b"---") || b.starts_with(b"...");
        let (mut line_breaks, mut special) = (false, false);
        let (mut leading_space, mut leading_break) = (false, false);
        let (mut trailing_space, mut trailing_break) = (false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        let mut i = 0;
        while i < b.len() {
            let w = width(b[i]);
            let followed_by_whitespace = i + w >= b.len() || is_blank(b, i + w);
            if i == 0 {
                match b[i] {
                    b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                    | b'\'' | b'"' | b'%' | b'@' | b'`' => block_indicators = true,
                    b'?' | b':' | b'-' if followed_by_whitespace => block_indicators = true,
                    _ => {}
                }
            } else {
                match b[i] {
                    b':' if followed_by_whitespace => block_indicators = true,
                    b'#' if preceded_by_whitespace => block_indicators = true,
                    _ => {}
                }
            }
            if !is_printable(b, i) {
                special = true;
            }
            if b[i] == b' ' {
                leading_space |= i == 0;
                trailing_space |= i + w == b.len();
                break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_break(b, i) {
                line_breaks = true;
                leading_break |= i == 0;
                trailing_break |= i + w == b.len();
                space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace = is_blank(b, i) || is_break(b, i) || b[i] == 0;
            i += w;
        }
        let mut a = Analysis {
            multiline: line_breaks,
            empty: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
        if leading_space || leading_break || trailing_space || trailing_break {
            a.block_plain_allowed = false;
        }
        if trailing_space {
            a.block_allowed = false;
        }
        if break_space {
            a.block_plain_allowed = false;
            a.single_quoted_allowed = false;
        }
        if space_break || special {
            a.block_plain_allowed = false;
            a.single_quoted_allowed = false;
            a.block_allowed = false;
        }
        if line_breaks || block_indicators {
            a.block_plain_allowed = false;
        }
        a
    }

    /// `yaml_emitter_select_scalar_style` in block context.
    pub(super) fn select(&self, requested: Style, simple_key: bool) -> Style {
        let mut style = requested;
        if simple_key && self.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!self.block_plain_allowed || (self.empty && simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !self.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!self.block_allowed || simple_key) {
            style = Style::Double;
        }
        style
    }
}

/// The bytes of the UTF-8 sequence that starts with `b`.
pub(super) fn width(b: u8) -> usize {
    match b {
        _ if b & 0x80 == 0 => 1,
        _ if b & 0xe0 == 0xc0 => 2,
        _ if b & 0xf0 == 0xe0 => 3,
        _ if b & 0xf8 == 0xf0 => 4,
        _ => 1,
    }
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// `is_printable`: LF, printable ASCII, and the BMP's printable range
/// but for the BOM, U+FFFE and U+FFFF (not the supplementary planes).
pub(super) fn is_printable(b: &[u8], i: usize) -> bool {
    let (c, n1, n2) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == 0x0a
        || (0x20..=0x7e).contains(&c)
        || (c == 0xc2 && n1 >= 0xa0)
        || (c > 0xc2 && c < 0xed)
        || (c == 0xed && n1 < 0xa0)
        || c == 0xee
        || (c == 0xef && !(n1 == 0xbb && n2 == 0xbf) && !(n1 == 0xbf && (n2 == 0xbe || n2 == 0xbf)))
}

/// A space or a tab.
pub(super) fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

/// CR, LF, NEL, LS or PS.
pub(super) fn is_break(b: &[u8], i: usize) -> bool {
    let (c, n1, n2) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == b'\r'
        || c == b'\n'
        || (c == 0xc2 && n1 == 0x85)
        || (c == 0xe2 && n1 == 0x80 && (n2 == 0xa8 || n2 == 0xa9))
}

/// `is_bom`, which looks at the value's first bytes whatever the index:
/// a value that starts with U+FEFF has every character escaped when
/// double-quoted.
pub(super) fn starts_with_bom(b: &[u8]) -> bool {
    b.starts_with(&[0xef, 0xbb, 0xbf])
}
