//! What the token checks read of an object a token names (its
//! ServiceAccount, Secret, Pod or Node): the apiserver's getter hands
//! its validators the whole object; these are the parts they read.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The parts of an object the token checks read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Object {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.deletionTimestamp` in Unix seconds: set once the object
    /// is being deleted. A timestamp that is not RFC 3339 (an object the
    /// apiserver could not decode) reads as the earliest time.
    pub deletion: Option<i64>,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// A Secret's `data.token`, base64-decoded (`None`: no such key, or
    /// not base64).
    pub token: Option<Vec<u8>>,
}

impl Object {
    /// The parts of `object`, a Kubernetes object as JSON.
    pub fn from_json(object: &Value) -> Object {
        let meta = &object["metadata"];
        Object {
            uid: meta["uid"].as_str().unwrap_or_default().to_owned(),
            deletion: match &meta["deletionTimestamp"] {
                Value::Null => None,
                Value::String(t) => Some(unix_seconds(t).unwrap_or(i64::MIN)),
                _ => Some(i64::MIN),
            },
            labels: meta["labels"]
                .as_object()
                .map(|l| {
                    l.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            token: object["data"]["token"]
                .as_str()
                .and_then(|t| STANDARD.decode(t).ok()),
        }
    }
}

/// The Unix seconds of an RFC 3339 time (`2026-12-07T02:32:31Z`, with any
/// fraction, `Z` or a `±hh:mm` offset), as `metav1.Time` reads it; the
/// fraction is dropped (a `metav1.Time` holds whole seconds).
pub(crate) fn unix_seconds(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |v, c| {
            c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, c: u8| b.get(at).is_some_and(|x| *x == c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day < 1
        || day > month_days[month as usize - 1]
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut at = 19;
    if sep(at, b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    let offset = match b.get(at)? {
        b'Z' if at + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if at + 6 == b.len() && sep(at + 3, b':') => {
            let (h, m) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let o = h * 3600 + m * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}
