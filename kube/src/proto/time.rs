//! Times and durations as Go prints them in Kubernetes JSON:
//! `metav1.Time` (RFC 3339, seconds, UTC), `metav1.MicroTime` (RFC 3339
//! with six fraction digits) and `metav1.Duration` (`time.Duration`'s
//! `String`: `1h2m3.5s`, `1.5ms`, `0s`).

use std::fmt::Write;

use super::ProtoError;

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
}
