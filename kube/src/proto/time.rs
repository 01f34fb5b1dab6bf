//! Times and durations as Go prints them in Kubernetes JSON:
//! `metav1.Time` (RFC 3339, seconds, UTC), `metav1.MicroTime` (RFC 3339
//! with six fraction digits) and `metav1.Duration` (`time.Duration`'s
//! `String`: `1h2m3.5s`, `1.5ms`, `0s`); and read back as Go parses them
//! ([`parse_rfc3339`], [`parse_duration`]).

use std::fmt::Write;

use super::error::ProtoError;

/// `2006-01-02T15:04:05Z` of Unix `seconds`; with `micros`, six fraction
/// digits of `nanos` (truncated, as Go's layout does).
pub(crate) fn rfc3339(seconds: i64, nanos: i32, micros: bool) -> Result<String, ProtoError> {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    if !(0..=9999).contains(&y) {
        return Err(ProtoError::Value(format!("a time in year {y}")));
    }
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if micros {
        let _ = write!(out, ".{:06}", nanos.clamp(0, 999_999_999) / 1000);
    }
    out.push('Z');
    Ok(out)
}

/// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a
/// day count from 1970-01-01.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Go's `time.Duration.String` of `nanos`.
pub(crate) fn duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let mut u = nanos.unsigned_abs();
    // Built back to front, as Go does.
    let mut rev: Vec<u8> = Vec::with_capacity(32);
    if u < 1_000_000_000 {
        if u == 0 {
            return "0s".into();
        }
        rev.push(b's');
        let prec = if u < 1_000 {
            rev.push(b'n');
            0
        } else if u < 1_000_000 {
            rev.extend_from_slice(
                "µ".as_bytes()
                    .iter()
                    .rev()
                    .copied()
                    .collect::<Vec<_>>()
                    .as_slice(),
            );
            3
        } else {
            rev.push(b'm');
            6
        };
        u = frac(&mut rev, u, prec);
        int(&mut rev, u);
    } else {
        rev.push(b's');
        u = frac(&mut rev, u, 9);
        int(&mut rev, u % 60);
        u /= 60;
        if u > 0 {
            rev.push(b'm');
            int(&mut rev, u % 60);
            u /= 60;
            if u > 0 {
                rev.push(b'h');
                int(&mut rev, u);
            }
        }
    }
    if neg {
        rev.push(b'-');
    }
    rev.reverse();
    String::from_utf8(rev).unwrap_or_default()
}

fn frac(rev: &mut Vec<u8>, mut v: u64, prec: u32) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            rev.push(b'0' + digit);
        }
        v /= 10;
    }
    if print {
        rev.push(b'.');
    }
    v
}

fn int(rev: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        rev.push(b'0');
        return;
    }
    while v > 0 {
        rev.push(b'0' + (v % 10) as u8);
        v /= 10;
    }
}

/// The Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which
/// `metav1.Time` marshals to no bytes.
pub(crate) const ZERO_TIME: i64 = -62_135_596_800;

/// `(Unix seconds, nanoseconds)` of an RFC 3339 time as the apiserver
/// parses it: `time.Parse(time.RFC3339, s)` for a `metav1.Time` (any
/// number of fraction digits, or none), `time.Parse(RFC3339Micro, s)` for
/// a `metav1.MicroTime` (exactly six). The forms Go accepts only through
/// its lenient fallback (a one-digit hour, a zone hour of 24) are refused.
pub(crate) fn parse_rfc3339(s: &str, micros: bool) -> Result<(i64, i32), ProtoError> {
    let bad = || ProtoError::Value(format!("the time {s:?} is not RFC 3339"));
    let b = s.as_bytes();
    if b.len() < 19 {
        return Err(bad());
    }
    let num = |at: usize, len: usize, lo: u32, hi: u32| -> Result<u32, ProtoError> {
        let mut v = 0u32;
        for &c in &b[at..at + len] {
            if !c.is_ascii_digit() {
                return Err(bad());
            }
            v = v * 10 + u32::from(c - b'0');
        }
        if v < lo || v > hi {
            return Err(bad());
        }
        Ok(v)
    };
    let year = num(0, 4, 0, 9999)?;
    let month = num(5, 2, 1, 12)?;
    let day = num(8, 2, 1, days_in(month, year))?;
    let hour = num(11, 2, 0, 23)?;
    let minute = num(14, 2, 0, 59)?;
    let second = num(17, 2, 0, 59)?;
    if (b[4], b[7], b[10], b[13], b[16]) != (b'-', b'-', b'T', b':', b':') {
        return Err(bad());
    }
    let mut rest = &b[19..];
    let mut nanos = 0i32;
    if rest.len() >= 2 && matches!(rest[0], b'.' | b',') && rest[1].is_ascii_digit() {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if micros && digits != 6 {
            return Err(bad());
        }
        let mut scale = 100_000_000;
        for &c in rest[1..=digits].iter().take(9) {
            nanos += i32::from(c - b'0') * scale;
            scale /= 10;
        }
        rest = &rest[1 + digits..];
    } else if micros {
        return Err(bad());
    }
    let offset = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: &u8| {
                c.is_ascii_digit()
                    .then(|| i64::from(c - b'0'))
                    .ok_or_else(bad)
            };
            let (h, m) = (digit(h1)? * 10 + digit(h2)?, digit(m1)? * 10 + digit(m2)?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let off = (h * 60 + m) * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(i64::from(year), month, day);
    let seconds =
        days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
            - offset;
    Ok((seconds, nanos))
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Howard Hinnant's `days_from_civil`: the day count from 1970-01-01 of a
/// proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`,
/// in nanoseconds; overflow is an error, as in Go.
pub(crate) fn parse_duration(s: &str) -> Result<i64, ProtoError> {
    let bad = || ProtoError::Value(format!("the duration {s:?} is not a Go duration"));
    const LIMIT: u64 = 1 << 63;
    let mut rest = s.as_bytes();
    let mut neg = false;
    if let Some((&c @ (b'-' | b'+'), tail)) = rest.split_first() {
        neg = c == b'-';
        rest = tail;
    }
    if rest == b"0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !(rest[0] == b'.' || rest[0].is_ascii_digit()) {
            return Err(bad());
        }
        // The integer part; overflow is an error.
        let mut v: u64 = 0;
        let int_digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        for &c in &rest[..int_digits] {
            if v > LIMIT / 10 {
                return Err(bad());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > LIMIT {
                return Err(bad());
            }
        }
        rest = &rest[int_digits..];
        // The fraction; precision past 63 bits is dropped, as in Go.
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if rest.first() == Some(&b'.') {
            rest = &rest[1..];
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            post = digits > 0;
            let mut overflow = false;
            for &c in &rest[..digits] {
                if overflow {
                    continue;
                }
                if f > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            rest = &rest[digits..];
        }
        if int_digits == 0 && !post {
            return Err(bad());
        }
        let unit_len = rest
            .iter()
            .take_while(|&&c| !(c == b'.' || c.is_ascii_digit()))
            .count();
        let unit: u64 = match &rest[..unit_len] {
            b"ns" => 1,
            // U+00B5 (micro sign) and U+03BC (Greek mu), as UTF-8.
            b"us" | [0xc2, 0xb5, b's'] | [0xce, 0xbc, b's'] => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        if v > LIMIT / unit {
            return Err(bad());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(bad());
            }
        }
        total += v;
        if total > LIMIT {
            return Err(bad());
        }
    }
    if neg {
        return Ok((total as i64).wrapping_neg());
    }
    i64::try_from(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_go_prints_them() {
        assert_eq!(rfc3339(0, 0, false).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_795_816_632, 0, false).unwrap(),
            "2026-11-27T21:57:12Z"
        );
        assert_eq!(
            rfc3339(951_782_400, 0, false).unwrap(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(rfc3339(-1, 0, false).unwrap(), "1969-12-31T23:59:59Z");
        assert_eq!(
            rfc3339(1_795_816_632, 123_456_789, true).unwrap(),
            "2026-11-27T21:57:12.123456Z"
        );
        assert_eq!(
            rfc3339(1_795_816_632, 0, true).unwrap(),
            "2026-11-27T21:57:12.000000Z"
        );
        assert!(rfc3339(-62_167_219_201, 0, false).is_err());
        assert!(rfc3339(i64::MAX, 0, false).is_err());
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        for (n, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (-5_000_000_000, "-5s"),
            (4_000_000_001, "4.000000001s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ] {
            assert_eq!(duration(n), s, "{n}");
        }
    }

    #[test]
    fn times_parse_as_go_parses_them() {
        let p = |s: &str| parse_rfc3339(s, false);
        assert_eq!(p("1970-01-01T00:00:00Z"), Ok((0, 0)));
        assert_eq!(p("2026-11-27T21:57:12Z"), Ok((1_795_816_632, 0)));
        assert_eq!(p("2026-11-27T22:57:12+01:00"), Ok((1_795_816_632, 0)));
        assert_eq!(p("2026-11-27T21:27:12-00:30"), Ok((1_795_816_632, 0)));
        assert_eq!(p("2000-02-29T00:00:00Z"), Ok((951_782_400, 0)));
        assert_eq!(p("1969-12-31T23:59:59.5Z"), Ok((-1, 500_000_000)));
        assert_eq!(p("0001-01-01T00:00:00Z"), Ok((ZERO_TIME, 0)));
        assert_eq!(
            p("2026-11-27T21:57:12.1234567891Z"),
            Ok((1_795_816_632, 123_456_789))
        );
        for bad in [
            "",
            "2026-11-27",
            "2026-11-27 21:57:12Z",
            "2026-11-27T21:57:12",
            "2026-11-27T21:57:12z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-27T24:00:00Z",
            "2026-11-27T21:60:00Z",
            "2026-11-27T21:57:12+24:00",
            "2026-11-27T21:57:12+0100",
            "2026-11-27T21:57:12.Z",
            "+2026-11-27T21:57:12Z",
            "2026-11-27T21:57:12Zjunk",
            "２０２６-11-27T21:57:12Z",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        let m = |s: &str| parse_rfc3339(s, true);
        assert_eq!(
            m("2026-11-27T21:57:12.123456Z"),
            Ok((1_795_816_632, 123_456_000))
        );
        assert!(m("2026-11-27T21:57:12Z").is_err());
        assert!(m("2026-11-27T21:57:12.1234567Z").is_err());
        assert!(m("2026-11-27T21:57:12.12345Z").is_err());
        for (secs, nanos) in [(0, 0), (1_795_816_632, 123_456_000), (-1, 999_999_000)] {
            let text = rfc3339(secs, nanos, true).unwrap();
            assert_eq!(m(&text), Ok((secs, nanos)), "{text}");
        }
    }

    #[test]
    fn durations_parse_as_go_parses_them() {
        for (s, n) in [
            ("0", 0),
            ("-0", 0),
            ("0s", 0),
            ("1ns", 1),
            ("1.1µs", 1_100),
            ("1.1μs", 1_100),
            ("1.1us", 1_100),
            ("2.2ms", 2_200_000),
            ("3.3s", 3_300_000_000),
            ("+5s", 5_000_000_000),
            ("-5s", -5_000_000_000),
            ("1h0m0s", 3_600_000_000_000),
            ("1.5h", 5_400_000_000_000),
            (".5s", 500_000_000),
            ("5.s", 5_000_000_000),
            ("1h2m3.5s", 3_723_500_000_000),
            ("4.000000001s", 4_000_000_001),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("9223372036854775807ns", i64::MAX),
        ] {
            assert_eq!(parse_duration(s), Ok(n), "{s}");
            if n != 0 || s == "0s" {
                assert_eq!(parse_duration(&duration(n)), Ok(n), "{n}");
            }
        }
        for bad in [
            "",
            "-",
            "s",
            ".s",
            "1",
            "1d",
            "1 s",
            "1s ",
            "2562047h47m16.854775808s",
            "9223372036854775808ns",
            "99999999999999999999s",
            "1e3s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
