//! `resource.Quantity` as the apiserver reads it: which strings
//! `resource.ParseQuantity` (k8s.io/apimachinery v0.37.2
//! `pkg/api/resource/quantity.go`) accepts. A stored protobuf quantity is
//! parsed on the way in (`quantity_proto.go` `Quantity.Unmarshal`: an
//! error fails the whole object), and so is a JSON one
//! (`Quantity.UnmarshalJSON`, after `strings.TrimSpace`).

/// Whether `ParseQuantity(s)` succeeds.
///
/// Its grammar (`parseQuantityString`): an optional sign, digits, an
/// optional `.` and digits, then a suffix of the letters `eEinumkKMGTP`,
/// an optional sign and digits, to the end. The suffix must be a decimal
/// one (`n u m "" k M G T P E`), a binary one (`Ki`..`Ei`) or an exponent
/// (`e`/`E` and an `int64`; Go keeps its low 32 bits). No digit at all is
/// zero (`m`, `.`, `-`, `+Ki` are quantities) as long as the fast path
/// takes it: with a decimal exponent below -9 (`e-10`) or a binary suffix
/// above `Ti` the number goes through `inf.Dec.SetString`, which wants a
/// digit.
pub(crate) fn is_quantity(s: &[u8]) -> bool {
    if s.is_empty() {
        return false;
    }
    let digits = |at: usize| s[at..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(matches!(s[0], b'+' | b'-'));
    let int_digits = digits(i);
    i += int_digits;
    let mut frac_digits = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = digits(i);
        i += frac_digits;
    }
    let suffix = &s[i..];
    let mut j = suffix
        .iter()
        .take_while(|c| b"eEinumkKMGTP".contains(c))
        .count();
    if matches!(suffix.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    if !suffix[j..].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let (binary, exponent) = match suffix {
        b"n" => (false, -9),
        b"u" => (false, -6),
        b"m" => (false, -3),
        b"" => (false, 0),
        b"k" => (false, 3),
        b"M" => (false, 6),
        b"G" => (false, 9),
        b"T" => (false, 12),
        b"P" => (false, 15),
        b"E" => (false, 18),
        b"Ki" => (true, 10),
        b"Mi" => (true, 20),
        b"Gi" => (true, 30),
        b"Ti" => (true, 40),
        b"Pi" => (true, 50),
        b"Ei" => (true, 60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            // strconv.ParseInt(rest, 10, 64), then int32(parsed).
            match std::str::from_utf8(rest)
                .ok()
                .and_then(|r| r.parse::<i64>().ok())
            {
                Some(e) => (false, e as i32),
                None => return false,
            }
        }
        _ => return false,
    };
    if int_digits + frac_digits > 0 {
        return true;
    }
    // No digit: the number is "0" (one digit, no fraction). The fast path
    // wants a precision of at least 0 and a scale of at least -9:
    // decimal, 18 - 1 and the exponent; binary, 15 - 1 -
    // int32(float32(exponent)*3/10) - 1 (Ki..Ti: 10, 7, 4, 1; Pi, Ei: -2,
    // -5) and 0.
    if binary {
        exponent <= 40
    } else {
        exponent >= -9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_what_parse_quantity_accepts() {
        for ok in [
            "0",
            "1",
            "10Gi",
            "100m",
            "1.5",
            "-1",
            "+1",
            "0.5",
            "1e3",
            "1E3",
            "1e-3",
            "1E+3",
            "1.",
            ".5",
            "1n",
            "1u",
            "1k",
            "1M",
            "1G",
            "1T",
            "1P",
            "1E",
            "1Ki",
            "1Mi",
            "1Gi",
            "1Ti",
            "1Pi",
            "1Ei",
            "007",
            "-0",
            "1e9223372036854775807",
            // No digits at all: zero, through the fast path.
            "-",
            "+",
            ".",
            "-.",
            "m",
            "n",
            "k",
            "E",
            "e5",
            "e-9",
            "Ki",
            "Ti",
            "+Mi",
        ] {
            assert!(is_quantity(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            "",
            " 1",
            "1 ",
            "1Q",
            "1i",
            "1e",
            "1ee5",
            "1e5.5",
            "1kM",
            "1KI",
            "1mi",
            "1..5",
            "1e9223372036854775808",
            "1-5",
            "1+",
            "1e+",
            "--1",
            "1.5.",
            "١",
            // No digits and the slow path: inf.Dec wants one.
            "Pi",
            "Ei",
            "-Pi",
            "e-10",
            ".e-10",
            "-E-11",
        ] {
            assert!(!is_quantity(bad.as_bytes()), "{bad:?}");
        }
        assert!(!is_quantity(b"6\xff\xfeMi"));
    }
}
