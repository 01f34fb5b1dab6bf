//! A protobuf watch stream read as a client must at least read it: each
//! frame is a 4-byte big-endian length, then a `metav1.WatchEvent`
//! (`type` = 1, `object` = 2, a `RawExtension` whose `raw` = 1 is the
//! object's `k8s\0` envelope); of the object, only
//! `metadata.resourceVersion` is read (the Pod's field 1, `ObjectMeta`,
//! its field 6), by walking the wire format: no full decode, as the JSON
//! clients find the version without parsing the whole line.

/// What one frame held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// An event with an object at this resource version.
    Object(u64),
    /// A bookmark: not a delivery.
    Bookmark,
    /// An `ERROR` event, or a frame that could not be read: the watch
    /// ends.
    End,
}

/// A varint at `b[*at..]`, moving `at` past it.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The first length-delimited field `field` of the message `b`.
fn bytes_field(b: &[u8], field: u64) -> Option<&[u8]> {
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        match key & 7 {
            0 => {
                varint(b, &mut at)?;
            }
            1 => at += 8,
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= b.len())?;
                if key >> 3 == field {
                    return Some(&b[at..end]);
                }
                at = end;
            }
            5 => at += 4,
            _ => return None,
        }
    }
    None
}

/// Reads one frame's `WatchEvent` (the bytes after its length).
pub(crate) fn event(frame: &[u8]) -> Event {
    let read = || -> Option<Event> {
        let kind = bytes_field(frame, 1)?;
        match kind {
            b"BOOKMARK" => return Some(Event::Bookmark),
            b"ERROR" => return Some(Event::End),
            _ => {}
        }
        let raw = bytes_field(bytes_field(frame, 2)?, 1)?;
        let envelope = herald_kube::proto::envelope(raw).ok()?;
        let meta = bytes_field(envelope.raw, 1)?;
        let rv = bytes_field(meta, 6)?;
        std::str::from_utf8(rv)
            .ok()?
            .parse()
            .ok()
            .map(Event::Object)
    };
    read().unwrap_or(Event::End)
}

/// Splits whole frames off the front of `body`, handing each event to
/// `on` until it returns false; returns the bytes taken.
pub(crate) fn frames(body: &[u8], mut on: impl FnMut(Event, usize) -> bool) -> usize {
    let mut at = 0;
    while body.len() - at >= 4 {
        let len = u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize;
        if body.len() - at - 4 < len {
            break;
        }
        let frame = &body[at + 4..at + 4 + len];
        at += 4 + len;
        if !on(event(frame), len) {
            break;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_of_a_watch_event() {
        let json = crate::pods::Template::new(&crate::pods::Placement::spread(3, 5, 10), 3)
            .render("node-1", 4242);
        let pb = crate::pods::protobuf(&json).unwrap();
        let mut body = Vec::new();
        herald_kube::proto::watch_event(&mut body, "MODIFIED", &pb);
        herald_kube::proto::watch_event(&mut body, "MODIFIED", &pb);
        let mut seen = Vec::new();
        // The second frame cut short: only the first is taken.
        let taken = frames(&body[..body.len() - 1], |e, _| {
            seen.push(e);
            true
        });
        assert_eq!(seen, [Event::Object(4242)]);
        assert_eq!(taken, body.len() / 2);
        assert_eq!(event(b"garbage"), Event::End);
    }
}
