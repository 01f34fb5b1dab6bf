//! Kubernetes validation of label keys (qualified names) and label values,
//! as in `k8s.io/apimachinery/pkg/util/validation`, reporting the byte offset
//! of the first problem.

use super::error::{
    DNS1123_SUBDOMAIN_MAX_LEN, InvalidLabelReason, QUALIFIED_NAME_MAX_LEN, SelectorError,
    SelectorErrorKind,
};

/// A failed check: where (absolute byte offset) and why.
type Failure = (usize, InvalidLabelReason);

/// Validates a label key (`[prefix/]name`) found at byte `pos` of the input.
pub(crate) fn label_key(key: &str, pos: usize) -> Result<(), SelectorError> {
    qualified_name(key, pos)
        .map_err(|(at, reason)| SelectorError::label(at, SelectorErrorKind::InvalidKey { reason }))
}

/// Validates a label value found at byte `pos` of the input.
pub(crate) fn label_value(value: &str, pos: usize) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    name_part(value, pos).map_err(|(at, reason)| {
        SelectorError::label(at, SelectorErrorKind::InvalidValue { reason })
    })
}

fn qualified_name(key: &str, pos: usize) -> Result<(), Failure> {
    let Some((prefix, name)) = key.split_once('/') else {
        return if key.is_empty() {
            Err((pos, InvalidLabelReason::EmptyName))
        } else {
            name_part(key, pos)
        };
    };
    let name_pos = pos + prefix.len() + 1;
    if let Some(extra) = name.find('/') {
        return Err((name_pos + extra, InvalidLabelReason::TooManySlashes));
    }
    dns1123_subdomain(prefix, pos)?;
    if name.is_empty() {
        return Err((name_pos, InvalidLabelReason::EmptyName));
    }
    name_part(name, name_pos)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 bytes; `s` is
/// non-empty.
fn name_part(s: &str, pos: usize) -> Result<(), Failure> {
    if let Some((i, c)) = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err((pos + i, InvalidLabelReason::InvalidChar(c)));
    }
    // Only ASCII from here on, so every byte offset is a char boundary.
    let bytes = s.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_alphanumeric) {
        return Err((pos, InvalidLabelReason::MustStartAlphanumeric));
    }
    if !bytes.last().is_some_and(u8::is_ascii_alphanumeric) {
        return Err((
            pos + bytes.len().saturating_sub(1),
            InvalidLabelReason::MustEndAlphanumeric,
        ));
    }
    if bytes.len() > QUALIFIED_NAME_MAX_LEN {
        return Err((pos, InvalidLabelReason::TooLong { len: bytes.len() }));
    }
    Ok(())
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, at most
/// 253 bytes.
fn dns1123_subdomain(s: &str, pos: usize) -> Result<(), Failure> {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return Err((pos, InvalidLabelReason::EmptyPrefix));
    }
    for (i, &b) in bytes.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| bytes.get(p)).copied();
        let next = bytes.get(i + 1).copied();
        let ok = match b {
            b'a'..=b'z' | b'0'..=b'9' => true,
            // A DNS label neither starts nor ends with '-'.
            b'-' => !matches!(prev, None | Some(b'.')) && !matches!(next, None | Some(b'.')),
            // No empty DNS label before, between or after dots.
            b'.' => !matches!(prev, None | Some(b'.')) && next.is_some(),
            _ => false,
        };
        if !ok {
            // Every byte before `i` was ASCII, so `i` is a char boundary.
            return Err((pos + i, InvalidLabelReason::InvalidPrefix));
        }
    }
    if bytes.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        return Err((pos, InvalidLabelReason::PrefixTooLong { len: bytes.len() }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use InvalidLabelReason as R;

    fn key(s: &str) -> Result<(), Failure> {
        qualified_name(s, 0)
    }

    #[test]
    fn valid_keys() {
        for k in [
            "a",
            "A",
            "app",
            "app.kubernetes.io/name",
            "k8s.io/x-y_z.W",
            "a/b",
            "1/2",
            "a-b.c-d/Z",
            &"x".repeat(63),
            &format!("{}/{}", "p".repeat(253), "n".repeat(63)),
        ] {
            assert_eq!(key(k), Ok(()), "{k}");
        }
    }

    #[test]
    fn invalid_keys() {
        let cases: &[(&str, usize, InvalidLabelReason)] = &[
            ("", 0, R::EmptyName),
            ("/a", 0, R::EmptyPrefix),
            ("a/", 2, R::EmptyName),
            ("a/b/c", 3, R::TooManySlashes),
            ("A/b", 0, R::InvalidPrefix),
            ("a_b/c", 1, R::InvalidPrefix),
            ("-a/b", 0, R::InvalidPrefix),
            ("a-/b", 1, R::InvalidPrefix),
            ("a.-b/c", 2, R::InvalidPrefix),
            ("a..b/c", 2, R::InvalidPrefix),
            (".a/b", 0, R::InvalidPrefix),
            ("a./b", 1, R::InvalidPrefix),
            ("é/b", 0, R::InvalidPrefix),
            ("a$b", 1, R::InvalidChar('$')),
            ("ab/cé", 4, R::InvalidChar('é')),
            ("-a", 0, R::MustStartAlphanumeric),
            ("a.", 1, R::MustEndAlphanumeric),
            ("x/_a", 2, R::MustStartAlphanumeric),
            (&"x".repeat(64), 0, R::TooLong { len: 64 }),
            (&format!("p/{}", "n".repeat(64)), 2, R::TooLong { len: 64 }),
            (
                &format!("{}/n", "p".repeat(254)),
                0,
                R::PrefixTooLong { len: 254 },
            ),
        ];
        for (k, at, reason) in cases {
            assert_eq!(key(k), Err((*at, *reason)), "{k:?}");
        }
    }

    #[test]
    fn values() {
        assert_eq!(label_value("", 5), Ok(()));
        assert_eq!(label_value("a.b-c_D9", 5), Ok(()));
        let err = label_value("a/b", 5).unwrap_err();
        assert_eq!(err.position(), 6);
        assert_eq!(
            err.kind(),
            &SelectorErrorKind::InvalidValue {
                reason: R::InvalidChar('/')
            }
        );
        let err = label_value(&"v".repeat(64), 2).unwrap_err();
        assert_eq!(err.position(), 2);
        assert_eq!(
            err.kind(),
            &SelectorErrorKind::InvalidValue {
                reason: R::TooLong { len: 64 }
            }
        );
    }

    #[test]
    fn key_errors_are_offset_by_position() {
        let err = label_key("a$", 10).unwrap_err();
        assert_eq!(err.position(), 11);
        assert!(matches!(err.kind(), SelectorErrorKind::InvalidKey { .. }));
    }
}
