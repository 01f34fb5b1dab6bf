//! What an error repeats of the input it rejects.
//!
//! An error that quotes its input helps whoever reads it, but a hostile
//! caller controls that input: a 1 MB continue token must not make a 1 MB
//! message (or a 1 MB allocation kept alive in the error). Every error
//! that quotes a caller's text keeps an [`Echo`] of it: at most
//! [`ECHO_MAX`] bytes, cut at a `char` boundary, and the full length, so
//! the message still says how much was cut.

use std::fmt;

/// At most this many bytes of an input are kept and shown.
pub(crate) const ECHO_MAX: usize = 64;

/// The start of a rejected input, and its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Echo {
    head: Box<str>,
    len: usize,
}

impl Echo {
    pub(crate) fn new(input: &str) -> Echo {
        Echo {
            head: head(input).into(),
            len: input.len(),
        }
    }

    /// The input's first bytes (all of it if it is at most [`ECHO_MAX`]).
    pub(crate) fn head(&self) -> &str {
        &self.head
    }
}

/// The first [`ECHO_MAX`] bytes of `input` at most, cut at a `char`
/// boundary.
pub(crate) fn head(input: &str) -> &str {
    let mut end = input.len().min(ECHO_MAX);
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    &input[..end]
}

/// Quoted (`Debug` form); a cut input is followed by `... (N bytes)`.
impl fmt::Display for Echo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.head)?;
        if self.len > self.head.len() {
            write!(f, "... ({} bytes)", self.len)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inputs_are_kept_whole_and_long_ones_cut_at_a_char_boundary() {
        let e = Echo::new("12a");
        assert_eq!((e.head(), e.to_string().as_str()), ("12a", "\"12a\""));
        let long = "x".repeat(1 << 20);
        let e = Echo::new(&long);
        assert_eq!(e.head().len(), ECHO_MAX);
        assert_eq!(
            e.to_string(),
            format!("{:?}... (1048576 bytes)", "x".repeat(ECHO_MAX))
        );
        // A three-byte char straddling the cut is left out whole.
        let s = format!("{}€€", "a".repeat(ECHO_MAX - 2));
        assert_eq!(head(&s), "a".repeat(ECHO_MAX - 2));
        assert_eq!(head(""), "");
    }
}
