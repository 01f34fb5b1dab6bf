//! go-yaml v2's emitter state and the writers of its text
//! (`emitterc.go`: `put`, `write_indent`, `write_indicator`, and the
//! plain, single-quoted, double-quoted and literal scalar writers), with
//! columns counted in characters as go-yaml counts them.

use super::scalar::{is_break, is_printable, starts_with_bom};

/// go-yaml's `best_indent`.
pub(super) const INDENT: isize = 2;
/// go-yaml's `best_width`: plain and quoted text folds at a space past it.
const WIDTH: usize = 80;

/// go-yaml's emitter state, as much of it as JSON's values reach.
#[derive(Debug)]
pub(super) struct Emitter {
    pub(super) out: String,
    /// Characters on the current line.
    column: usize,
    /// The last character written is a blank (or nothing yet is).
    whitespace: bool,
    /// Only indentation is on the current line so far.
    pub(super) indention: bool,
    indent: isize,
    indents: Vec<isize>,
    /// A scalar that a reader could take to go on was written last.
    pub(super) open_ended: bool,
}

impl Emitter {
    /// At the start of a stream.
    pub(super) fn new() -> Emitter {
        Emitter {
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
            indent: -1,
            indents: Vec::new(),
            open_ended: false,
        }
    }

    pub(super) fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { INDENT } else { 0 };
        } else if !indentless {
            self.indent += INDENT;
        }
    }

    pub(super) fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// `write_break`: a line break character of the value.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    pub(super) fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    pub(super) fn indicator(
        &mut self,
        text: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in text.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    /// `yaml_emitter_write_plain_scalar`.
    pub(super) fn plain(&mut self, value: &str, allow_breaks: bool, root: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let b = value.as_bytes();
        let (mut spaces, mut breaks) = (false, false);
        for (i, c) in value.char_indices() {
            if c == ' ' {
                if allow_breaks && !spaces && self.column > WIDTH && b.get(i + 1) != Some(&b' ') {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        if root {
            self.open_ended = true;
        }
    }

    /// `yaml_emitter_write_single_quoted_scalar`.
    pub(super) fn single(&mut self, value: &str, allow_breaks: bool) {
        self.indicator("'", true, false, false);
        let b = value.as_bytes();
        let (mut spaces, mut breaks) = (false, false);
        for (i, c) in value.char_indices() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > WIDTH
                    && i > 0
                    && i < b.len() - 1
                    && b.get(i + 1) != Some(&b' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_double_quoted_scalar`.
    pub(super) fn double(&mut self, value: &str, allow_breaks: bool) {
        self.indicator("\"", true, false, false);
        let b = value.as_bytes();
        let bom = starts_with_bom(b);
        let mut spaces = false;
        for (i, c) in value.char_indices() {
            if !is_printable(b, i) || bom || is_break(b, i) || c == '"' || c == '\\' {
                self.put('\\');
                let escape = match c {
                    '\0' => Some('0'),
                    '\u{7}' => Some('a'),
                    '\u{8}' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\u{b}' => Some('v'),
                    '\u{c}' => Some('f'),
                    '\r' => Some('r'),
                    '\u{1b}' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                match escape {
                    Some(e) => self.put(e),
                    None => {
                        let v = u32::from(c);
                        let (letter, digits) = match v {
                            0..=0xff => ('x', 2),
                            0x100..=0xffff => ('u', 4),
                            _ => ('U', 8),
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let d = (v >> (k * 4)) & 0xf;
                            self.put(char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > WIDTH && i > 0 && i < b.len() - 1 {
                    self.write_indent();
                    if b.get(i + 1) == Some(&b' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_literal_scalar` with its block scalar hints.
    pub(super) fn literal(&mut self, value: &str) {
        self.indicator("|", true, false, false);
        let b = value.as_bytes();
        if b.first() == Some(&b' ') || is_break(b, 0) {
            let hint = char::from(b'0' + INDENT as u8);
            self.indicator(&hint.to_string(), false, false, false);
        }
        self.open_ended = false;
        let chomp = match value.char_indices().next_back() {
            None => Some('-'),
            Some((last, _)) if !is_break(b, last) => Some('-'),
            Some((0, _)) => {
                self.open_ended = true;
                Some('+')
            }
            Some((last, _)) => {
                let before = value[..last]
                    .char_indices()
                    .next_back()
                    .map_or(0, |(i, _)| i);
                if is_break(b, before) {
                    self.open_ended = true;
                    Some('+')
                } else {
                    None
                }
            }
        };
        if let Some(chomp) = chomp {
            // The indicator ends the open end `+` set (as go-yaml's does).
            self.indicator(&chomp.to_string(), false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for (i, c) in value.char_indices() {
            if is_break(b, i) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}
