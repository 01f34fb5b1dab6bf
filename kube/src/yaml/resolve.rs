//! What a plain YAML scalar would read back as (go-yaml v2's
//! `resolve.go`), which decides whether a string may be written plain,
//! and how go-yaml writes a number.

/// Whether go-yaml v2 would read the plain scalar `s` as anything but a
/// string (`resolve("", s)` not `!!str`, or `isBase60Float`): then
/// `encoder.stringv` quotes it.
pub(super) fn is_not_a_string(s: &str) -> bool {
    base60_float(s) || resolves(s)
}

/// `resolve`: the first byte's hint, then the table of words, floats,
/// timestamps and integers.
fn resolves(s: &str) -> bool {
    let hint = match s.bytes().next() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => return false,
    };
    const WORDS: [&str; 37] = [
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
    ];
    if WORDS.contains(&s) || matches!(s, "-.Inf" | "-.INF") {
        return true;
    }
    match hint {
        b'.' => go_float(s).is_some(),
        b'D' | b'S' => {
            if timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            go_int(&plain) || (float_style(&plain) && go_float(&plain).is_some())
        }
        _ => false,
    }
}

/// `strconv.ParseFloat(s, 64)` succeeds (a finite value; the spellings
/// `resolve` reaches it with: decimal, with `.` or an exponent).
fn go_float(s: &str) -> Option<f64> {
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    ok.then(|| s.parse::<f64>().ok())
        .flatten()
        .filter(|f| f.is_finite())
}

/// `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn float_style(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.ParseInt(s, 0, 64)` or `strconv.ParseUint(s, 0, 64)`
/// succeeds: a sign (`ParseInt` only), then `0x`, `0o`, `0b` or a
/// leading `0` (octal) or decimal digits, in range.
fn go_int(s: &str) -> bool {
    let (negative, signed, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let lower = rest.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let Ok(magnitude) = u128::from_str_radix(digits, radix) else {
        return false;
    };
    if digits.is_empty() || digits.starts_with('+') {
        return false;
    }
    match (signed, negative) {
        (_, true) => magnitude <= 1 << 63,
        (true, false) => magnitude < 1 << 63,
        (false, false) => magnitude <= u128::from(u64::MAX),
    }
}

/// `isBase60Float`:
/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) && i - start < 2 {
            i += 1;
        }
        let group = &b[start..i];
        let ok = match group {
            [d] => d.is_ascii_digit(),
            [a, d] => (b'0'..=b'5').contains(a) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// `parseTimestamp`: four digits and `-`, then one of go-yaml's layouts
/// (`2006-1-2T15:4:5.999999999Z07:00`, the same with `t`,
/// `2006-1-2 15:4:5.999999999`, `2006-1-2`) as `time.Parse` reads them.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let Some(month) = number(b, &mut i) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = number(b, &mut i) else {
        return false;
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    if !(1..=12).contains(&month) || day < 1 || day > days_in(year, month) {
        return false;
    }
    let zoned = match b.get(i) {
        None => return true,
        Some(b'T' | b't') => true,
        Some(b' ') => false,
        Some(_) => return false,
    };
    i += 1;
    for (max, sep) in [(23, Some(b':')), (59, Some(b':')), (59, None)] {
        match number(b, &mut i) {
            Some(v) if v <= max => {}
            _ => return false,
        }
        if let Some(sep) = sep {
            if b.get(i) != Some(&sep) {
                return false;
            }
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match &b[i..] {
        [b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-')
                && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
                && (h1 - b'0') * 10 + (h2 - b'0') <= 24
                && (m1 - b'0') * 10 + (m2 - b'0') <= 60
        }
        _ => false,
    }
}

/// One or two digits (`time.Parse`'s `getnum` of a non-fixed field).
fn number(b: &[u8], i: &mut usize) -> Option<u32> {
    let first = *b.get(*i).filter(|c| c.is_ascii_digit())?;
    *i += 1;
    let mut v = u32::from(first - b'0');
    if let Some(&d) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *i += 1;
        v = v * 10 + u32::from(d - b'0');
    }
    Some(v)
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A `float64` as go-yaml writes it: `strconv.FormatFloat(f, 'g', -1,
/// 64)` (`%e` with at least two exponent digits when the exponent is
/// below -4 or at least 6, else `%f`), `.inf`, `-.inf`, `.nan`.
pub(super) fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs());
    }
    // `%f` with as many decimals as the digits need.
    let dp = exp + 1;
    let text = if dp <= 0 {
        format!("0.{}{digits}", "0".repeat(dp.unsigned_abs() as usize))
    } else {
        let dp = dp as usize;
        if digits.len() <= dp {
            format!("{digits}{}", "0".repeat(dp - digits.len()))
        } else {
            format!("{}.{}", &digits[..dp], &digits[dp..])
        }
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_that_are_not_strings() {
        for s in [
            "",
            "~",
            "null",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "1.5",
            "42",
            "0755",
            "0x1F",
            "1e3",
            "+1",
            "1_000",
            "0b101",
            "-0b1",
            ".5",
            ".nan",
            "-.inf",
            "1:20",
            "2026-11-27",
            "2026-11-27T21:05:21Z",
            "2026-1-2 3:04:05.5",
            "2026-11-27T21:05:21+01:00",
            "08",
        ] {
            assert!(is_not_a_string(s), "{s}");
        }
        for s in [
            "x",
            "nope",
            "1.2.3",
            "0x",
            "2026-13-01",
            "2026-02-30",
            "1e",
            "-",
            "a1",
            "<<",
            "1:60",
            "0xFFFFFFFFFFFFFFFFFF",
            "1e999",
            ".",
            "true1",
        ] {
            assert!(!is_not_a_string(s), "{s}");
        }
    }

    #[test]
    fn floats_as_go_yaml_writes_them() {
        for (f, want) in [
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e-7, "1e-07"),
            (1e20, "1e+20"),
            (123456789.125, "1.23456789125e+08"),
            (123456.789, "123456.789"),
            (1e-6, "1e-06"),
            (0.0001, "0.0001"),
            (-1.5, "-1.5"),
            (1.8446744073709552e19, "1.8446744073709552e+19"),
            (5e-324, "5e-324"),
            (1e6, "1e+06"),
        ] {
            assert_eq!(float(f), want, "{f:e}");
        }
    }
}
