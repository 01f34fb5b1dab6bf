//! The protobuf wire format, read: varints, fixed words and
//! length-delimited fields, each read checked against the bytes left.

use super::error::ProtoError;

/// One field's value as it lies on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a string, bytes, a message or a packed run.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// Reads `(field number, value)` pairs off a message's bytes.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), ProtoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let item = self.read();
        if item.is_err() {
            self.buf = &[];
        }
        Some(item)
    }
}

impl<'a> Fields<'a> {
    fn read(&mut self) -> Result<(u32, Wire<'a>), ProtoError> {
        let key = varint(&mut self.buf)?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(ProtoError::Wire(format!("field number {number}")));
        }
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut self.buf)?),
            1 => Wire::Fixed64(u64::from_le_bytes(
                take(&mut self.buf, 8)?.try_into().unwrap_or_default(),
            )),
            2 => {
                let len = varint(&mut self.buf)?;
                let len = usize::try_from(len).map_err(|_| ProtoError::Truncated)?;
                Wire::Bytes(take(&mut self.buf, len)?)
            }
            5 => Wire::Fixed32(u32::from_le_bytes(
                take(&mut self.buf, 4)?.try_into().unwrap_or_default(),
            )),
            t => {
                return Err(ProtoError::Wire(format!(
                    "wire type {t} (groups are not used by Kubernetes)"
                )));
            }
        };
        Ok((number as u32, value))
    }
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], ProtoError> {
    if buf.len() < n {
        return Err(ProtoError::Truncated);
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

/// A base-128 varint of at most 10 bytes.
pub(crate) fn varint(buf: &mut &[u8]) -> Result<u64, ProtoError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(ProtoError::Truncated);
        };
        *buf = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(ProtoError::Wire("a varint longer than 10 bytes".into()))
}

/// Appends `value` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a field's key: its number and wire type.
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends the key of a length-delimited field and one byte for its
/// length; returns where that byte is, for [`close_len`] once the
/// field's bytes are written after it.
pub(crate) fn open_len(out: &mut Vec<u8>, number: u32) -> usize {
    put_key(out, number, 2);
    out.push(0);
    out.len() - 1
}

/// Sets the length of the field [`open_len`] opened at `at` to the bytes
/// written since, moving them when the length needs more than one byte.
pub(crate) fn close_len(out: &mut Vec<u8>, at: usize) {
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
        return;
    }
    let (mut prefix, mut n, mut v) = ([0u8; 10], 0, len as u64);
    while v >= 0x80 {
        prefix[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    prefix[n] = v as u8;
    n += 1;
    let end = out.len();
    out.resize(end + n - 1, 0);
    out.copy_within(at + 1..end, at + n);
    out[at..at + n].copy_from_slice(&prefix[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_truncation_and_overlength() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint(&mut out.as_slice()), Ok(v));
            assert_eq!(
                varint(&mut &out[..out.len() - 1]),
                Err(ProtoError::Truncated)
            );
        }
        assert!(matches!(
            varint(&mut &[0xff; 11][..]),
            Err(ProtoError::Wire(_))
        ));
    }

    #[test]
    fn fields_read_every_wire_type_and_stop_at_the_first_error() {
        let mut m = Vec::new();
        put_varint(&mut m, 1 << 3);
        put_varint(&mut m, 150);
        put_bytes(&mut m, 2, b"hi");
        m.extend_from_slice(&[(3 << 3) | 1, 1, 0, 0, 0, 0, 0, 0, 0]);
        m.extend_from_slice(&[(4 << 3) | 5, 2, 0, 0, 0]);
        let got: Vec<_> = Fields::new(&m).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                (1, Wire::Varint(150)),
                (2, Wire::Bytes(b"hi")),
                (3, Wire::Fixed64(1)),
                (4, Wire::Fixed32(2))
            ]
        );
        let mut bad = Vec::new();
        put_bytes(&mut bad, 2, b"hello");
        bad.truncate(4);
        let got: Vec<_> = Fields::new(&bad).collect();
        assert_eq!(got, vec![Err(ProtoError::Truncated)]);
        assert!(matches!(
            Fields::new(&[3 << 3 | 3]).next(),
            Some(Err(ProtoError::Wire(_)))
        ));
        assert!(matches!(
            Fields::new(&[0]).next(),
            Some(Err(ProtoError::Wire(_)))
        ));
    }
}
