//! A flat scan of one protobuf message's fields, without decoding them.
//!
//! Used to count repeated fields before a full decode allocates for them, and
//! to read or rewrite single fields of large foreign messages (an ONNX or
//! MindIR model) without decoding the rest. It never recurses: a nested
//! message is returned as bytes, to be scanned again if needed.

use core::ops::Range;

use prost::encoding::decode_varint;

use super::GraphError;

/// A field's value as it is on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: bytes, a string, a nested message or a packed array.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// One field of a message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    /// The field number.
    pub(crate) number: u32,
    /// The value.
    pub(crate) value: Value<'a>,
    /// Where the whole field (tag included) lies in the scanned buffer.
    pub(crate) range: (usize, usize),
}

impl Field<'_> {
    /// The byte range of the whole field, tag included.
    pub(crate) fn span(&self) -> Range<usize> {
        self.range.0..self.range.1
    }
}

/// The fields of the message in `buf`, in order. Stops at the first
/// malformed field with an error (groups, wire types 3 and 4, are refused:
/// proto3 has none and the formats read here do not use them).
pub(crate) fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0 }
}

/// Iterator returned by [`fields`].
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn truncated() -> GraphError {
    GraphError::Malformed("a field runs past the end of its message".into())
}

impl<'a> Fields<'a> {
    fn next_field(&mut self) -> Result<Field<'a>, GraphError> {
        let start = self.pos;
        let mut rest = &self.buf[start..];
        let before = rest.len();
        let key = decode_varint(&mut rest)?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|&n| n != 0 && n < (1 << 29))
            .ok_or_else(|| GraphError::Malformed(alloc::format!("bad field key {key}")))?;
        let value = match key & 7 {
            0 => Value::Varint(decode_varint(&mut rest)?),
            1 => {
                let (v, tail) = rest.split_first_chunk::<8>().ok_or_else(truncated)?;
                rest = tail;
                Value::Fixed64(u64::from_le_bytes(*v))
            }
            2 => {
                let len = decode_varint(&mut rest)?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= rest.len())
                    .ok_or_else(truncated)?;
                let (v, tail) = rest.split_at(len);
                rest = tail;
                Value::Bytes(v)
            }
            5 => {
                let (v, tail) = rest.split_first_chunk::<4>().ok_or_else(truncated)?;
                rest = tail;
                Value::Fixed32(u32::from_le_bytes(*v))
            }
            t => {
                return Err(GraphError::Malformed(alloc::format!(
                    "field {number} has wire type {t}, which is not supported"
                )));
            }
        };
        self.pos = start + (before - rest.len());
        Ok(Field {
            number,
            value,
            range: (start, self.pos),
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, GraphError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let field = self.next_field();
        if field.is_err() {
            // Stop after the first error.
            self.pos = self.buf.len();
        }
        Some(field)
    }
}

/// How many times field `number` occurs in `buf` (the length of a repeated
/// message or string field).
pub(crate) fn count_fields(buf: &[u8], number: u32) -> Result<usize, GraphError> {
    let mut n = 0usize;
    for field in fields(buf) {
        n += usize::from(field?.number == number);
    }
    Ok(n)
}

/// The number of values of repeated varint field `number` in `buf`,
/// counting packed arrays element by element.
pub(crate) fn count_varints(buf: &[u8], number: u32) -> Result<usize, GraphError> {
    let mut n = 0usize;
    for field in fields(buf) {
        let field = field?;
        if field.number != number {
            continue;
        }
        n += match field.value {
            // A packed array: every varint ends with a byte below 0x80.
            Value::Bytes(b) => b.iter().filter(|&&x| x < 0x80).count(),
            _ => 1,
        };
    }
    Ok(n)
}

/// Appends a length-delimited field `number` holding `payload` to `out`.
pub(crate) fn put_bytes(out: &mut alloc::vec::Vec<u8>, number: u32, payload: &[u8]) {
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn scans_every_wire_type_and_reports_spans() {
        let mut buf = Vec::new();
        prost::encoding::encode_key(1, prost::encoding::WireType::Varint, &mut buf);
        prost::encoding::encode_varint(300, &mut buf);
        put_bytes(&mut buf, 2, b"abc");
        prost::encoding::encode_key(3, prost::encoding::WireType::ThirtyTwoBit, &mut buf);
        buf.extend_from_slice(&7u32.to_le_bytes());
        prost::encoding::encode_key(4, prost::encoding::WireType::SixtyFourBit, &mut buf);
        buf.extend_from_slice(&9u64.to_le_bytes());
        let got: Vec<_> = fields(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].value, Value::Varint(300));
        assert_eq!(got[1].value, Value::Bytes(b"abc"));
        assert_eq!(&buf[got[1].span()], &[0x12, 3, b'a', b'b', b'c']);
        assert_eq!(got[2].value, Value::Fixed32(7));
        assert_eq!(got[3].value, Value::Fixed64(9));
        assert_eq!(got[3].range.1, buf.len());
    }

    #[test]
    fn truncated_and_bad_input_is_an_error_not_a_panic() {
        let mut buf = Vec::new();
        put_bytes(&mut buf, 2, b"abcdef");
        for cut in 0..buf.len() {
            let r: Result<Vec<_>, _> = fields(&buf[..cut]).collect();
            assert!(cut == 0 || r.is_err(), "cut {cut}");
        }
        // Group start, field number 0, overlong varint.
        for bad in [&[0x0b][..], &[0x02, 0x00], &[0xff; 11]] {
            assert!(fields(bad).any(|f| f.is_err()), "{bad:?}");
        }
    }

    #[test]
    fn counts_packed_and_unpacked_repeats() {
        let mut buf = Vec::new();
        put_bytes(&mut buf, 6, &[1, 0x80, 0x01, 5]); // packed: 1, 128, 5
        prost::encoding::encode_key(6, prost::encoding::WireType::Varint, &mut buf);
        prost::encoding::encode_varint(3, &mut buf);
        put_bytes(&mut buf, 7, b"x");
        assert_eq!(count_varints(&buf, 6).unwrap(), 4);
        assert_eq!(count_fields(&buf, 6).unwrap(), 2);
        assert_eq!(count_fields(&buf, 7).unwrap(), 1);
        assert_eq!(count_fields(&buf, 8).unwrap(), 0);
    }
}
