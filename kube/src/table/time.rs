//! Times as the printers show them: RFC 3339 timestamps (`metav1.Time`,
//! `metav1.MicroTime`) parsed to nanoseconds since the Unix epoch, and
//! durations as apimachinery's `duration.HumanDuration` writes them
//! (`5s`, `3m20s`, `2h`, `6d5h`, `3y14d`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Nanoseconds since the Unix epoch.
pub(crate) type Nanos = i128;

const SECOND: i128 = 1_000_000_000;

/// The Unix seconds of an RFC 3339 time, as Go's `time.Parse` reads it
/// (the printers' parser), its fraction dropped (floored): a `metav1.Time` holds
/// whole seconds.
pub fn unix_seconds(t: &str) -> Option<i64> {
    parse(t).and_then(|n| i64::try_from(n.div_euclid(SECOND)).ok())
}

/// `now` in nanoseconds since the epoch (negative before it).
pub(crate) fn nanos(now: SystemTime) -> Nanos {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as Nanos,
        Err(e) => -(e.duration().as_nanos() as Nanos),
    }
}

/// Days since the epoch of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of days since the epoch.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Go's zero `time.Time` (`0001-01-01T00:00:00Z`), which the printers show
/// as `<unknown>`.
fn zero() -> Nanos {
    Nanos::from(days_from_civil(1, 1, 1)) * 86_400 * SECOND
}

/// An RFC 3339 time (`2026-01-01T00:00:00Z`, `...00.123456Z`,
/// `...00+01:00`) as Go's `time.Parse(time.RFC3339, ...)` reads it, `None`
/// when it is not one.
pub(crate) fn parse(t: &str) -> Option<Nanos> {
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = b.get(r)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| s.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let month_days = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > month_days || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut i = 19;
    let mut frac: i128 = 0;
    if matches!(b[i], b'.' | b',') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        // Nanoseconds: the first nine digits, the rest truncated.
        let mut scale = SECOND;
        for &c in &b[start..i] {
            scale /= 10;
            frac += i128::from(c - b'0') * scale;
        }
    }
    let offset = match b.get(i..)? {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && b[i + 3] == b':' => {
            let (oh, om) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3_600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3_600 + mi * 60 + s - offset;
    Some(Nanos::from(secs) * SECOND + frac)
}

/// The time at `v` (a JSON string), `None` for a missing, null or
/// unreadable one (Go's zero time, which is also `None`).
pub(crate) fn at(v: &Value) -> Option<Nanos> {
    v.as_str().and_then(parse).filter(|&t| t != zero())
}

/// The time at `v`, Go's zero time for a missing or unreadable one.
pub(crate) fn instant(v: &Value) -> Nanos {
    v.as_str().and_then(parse).unwrap_or_else(zero)
}

/// `now - t` as Go's `time.Time.Sub` gives it: nanoseconds, saturated to
/// `time.Duration`'s range.
pub(crate) fn sub(now: Nanos, t: Nanos) -> i64 {
    (now - t).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// `translateTimestampSince`: the human duration since `t`, `<unknown>`
/// for the zero time.
pub(crate) fn since(t: Option<Nanos>, now: Nanos) -> String {
    match t {
        Some(t) => human_duration(sub(now, t)),
        None => "<unknown>".into(),
    }
}

/// `t` as Go's `t.UTC().Format(time.RFC3339)` writes it (the zero time
/// for `None`).
pub(crate) fn rfc3339(t: Option<Nanos>) -> String {
    utc(t.unwrap_or_else(zero), false)
}

/// `t` as Go's `metav1.MicroTime` marshals it: RFC 3339 in UTC with six
/// fraction digits (an audit event's timestamps).
pub fn micro_time(t: std::time::SystemTime) -> String {
    utc(nanos(t), true)
}

/// `n` nanoseconds since the epoch in RFC 3339, UTC, with microseconds
/// or without a fraction.
fn utc(n: Nanos, micros: bool) -> String {
    let secs = n.div_euclid(SECOND) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let fraction = if micros {
        format!(".{:06}", n.rem_euclid(SECOND) / 1_000)
    } else {
        String::new()
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{fraction}Z",
        s / 3_600,
        s / 60 % 60,
        s % 60
    )
}

/// apimachinery's `duration.HumanDuration` of `d` nanoseconds.
pub(crate) fn human_duration(d: i64) -> String {
    const MIN: i64 = 60_000_000_000;
    const HOUR: i64 = 60 * MIN;
    // Go's `int(d.Seconds())` truncates toward zero.
    let seconds = d / 1_000_000_000;
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d / MIN;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        format!("{hours}h{m}m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        format!("{}d{h}h", hours / 24)
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        let dy = hours / 24 % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        format!("{}y{dy}d", hours / 24 / 365)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn human_durations_are_apimachinerys() {
        // apimachinery's duration_test.go, and its boundaries.
        for (d, want) in [
            (-2 * S, "<invalid>"),
            (-S - 1, "0s"),
            (-S, "0s"),
            (0, "0s"),
            (S, "1s"),
            (119 * S + S / 2, "119s"),
            (120 * S, "2m"),
            (121 * S, "2m1s"),
            (599 * S, "9m59s"),
            (600 * S, "10m"),
            (179 * 60 * S + 59 * S, "179m"),
            (3 * 3_600 * S, "3h"),
            (3 * 3_600 * S + 60 * S, "3h1m"),
            (7 * 3_600 * S + 59 * 60 * S, "7h59m"),
            (8 * 3_600 * S, "8h"),
            (47 * 3_600 * S + 59 * 60 * S, "47h"),
            (48 * 3_600 * S, "2d"),
            (49 * 3_600 * S, "2d1h"),
            (8 * 24 * 3_600 * S - S, "7d23h"),
            (8 * 24 * 3_600 * S, "8d"),
            (2 * 365 * 24 * 3_600 * S - S, "729d"),
            (2 * 365 * 24 * 3_600 * S, "2y"),
            (2 * 365 * 24 * 3_600 * S + 24 * 3_600 * S, "2y1d"),
            (8 * 365 * 24 * 3_600 * S, "8y"),
            (i64::MAX, "292y"),
        ] {
            assert_eq!(human_duration(d), want, "{d}");
        }
    }

    #[test]
    fn micro_times_are_gos() {
        let t = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::new(1_795_000_000, 123_456_789);
        assert_eq!(micro_time(t), "2026-11-18T11:06:40.123456Z");
        assert_eq!(
            micro_time(std::time::SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn rfc3339_times_parse_as_go_parses_them() {
        assert_eq!(parse("1970-01-02T00:00:00Z"), Some(86_400 * 1_000_000_000));
        assert_eq!(
            parse("2000-03-01T00:00:00Z"),
            Some(951_868_800 * 1_000_000_000)
        );
        assert_eq!(
            parse("2026-11-27T10:00:00.123456Z"),
            parse("2026-11-27T10:00:00Z").map(|t| t + 123_456_000)
        );
        assert_eq!(
            parse("2026-11-27T21:00:00+01:00"),
            parse("2026-11-27T20:00:00Z")
        );
        assert_eq!(
            parse("2026-11-27T20:00:00,5-00:30"),
            parse("2026-11-27T20:30:00.5Z")
        );
        for bad in [
            "",
            "garbage",
            "2026-11-27",
            "2026-11-27T10:00:00",
            "2026-02-29T10:00:00Z",
            "2026-11-27T24:00:00Z",
            "2026-11-27T10:00:00.Z",
            "2026-11-27T10:00:00+1:00",
            "2026-11-27 10:00:00Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(at(&Value::from("0001-01-01T00:00:00Z")), None);
        assert_eq!(rfc3339(None), "0001-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(parse("2026-11-27T21:00:00.9+01:00")),
            "2026-11-27T20:00:00Z"
        );
        assert_eq!(
            rfc3339(parse("1969-12-31T23:59:59Z")),
            "1969-12-31T23:59:59Z"
        );
    }
}
