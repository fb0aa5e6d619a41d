//! A row's two halves: its scalar columns (a MessagePack map in a raw
//! page) and its blob (bytes and array columns in a blob page: one field
//! as is, several each after its 8-byte big-endian length, in name order;
//! int32/int64 arrays compressed).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rmp::Marker;

use super::header::{Column, Kind};

/// A column's value in one row.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// An `int32` or `int64` scalar.
    Int(i64),
    /// A `float32` scalar.
    Float32(f32),
    /// A `float64` scalar.
    Float64(f64),
    /// A `string`.
    String(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// An `int32` array, flattened, and its shape.
    Int32s(Vec<i32>, Vec<usize>),
    /// An `int64` array, flattened, and its shape.
    Int64s(Vec<i64>, Vec<usize>),
    /// A `float32` array, flattened, and its shape.
    Float32s(Vec<f32>, Vec<usize>),
    /// A `float64` array, flattened, and its shape.
    Float64s(Vec<f64>, Vec<usize>),
}

/// A scalar as MessagePack stores it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scalar<'a> {
    Int(i128),
    Float(f64),
    Str(&'a str),
    Other,
}

/// A cursor over a MessagePack map of scalars; every length is checked
/// against the bytes left, nothing allocated.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                alloc::format!("a value of {n} bytes runs past the row at {}", self.at)
            })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> Result<u64, String> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &b| a << 8 | u64::from(b)))
    }

    fn marker(&mut self) -> Result<Marker, String> {
        Ok(Marker::from_u8(self.take(1)?[0]))
    }

    /// Skips `n` values (nested maps and arrays included).
    fn skip(&mut self, n: u64, depth: u32) -> Result<(), String> {
        for _ in 0..n {
            self.value(depth)?;
        }
        Ok(())
    }

    /// The next value; containers and extensions are skipped as `Other`.
    fn value(&mut self, depth: u32) -> Result<Scalar<'a>, String> {
        if depth > 32 {
            return Err("values nested more than 32 deep".into());
        }
        let m = self.marker()?;
        Ok(match m {
            Marker::FixPos(v) => Scalar::Int(v.into()),
            Marker::FixNeg(v) => Scalar::Int(v.into()),
            Marker::U8 => Scalar::Int(self.be(1)?.into()),
            Marker::U16 => Scalar::Int(self.be(2)?.into()),
            Marker::U32 => Scalar::Int(self.be(4)?.into()),
            Marker::U64 => Scalar::Int(self.be(8)?.into()),
            Marker::I8 => Scalar::Int((self.be(1)? as u8 as i8).into()),
            Marker::I16 => Scalar::Int((self.be(2)? as u16 as i16).into()),
            Marker::I32 => Scalar::Int((self.be(4)? as u32 as i32).into()),
            Marker::I64 => Scalar::Int((self.be(8)? as i64).into()),
            Marker::F32 => Scalar::Float(f32::from_bits(self.be(4)? as u32).into()),
            Marker::F64 => Scalar::Float(f64::from_bits(self.be(8)?)),
            Marker::FixStr(n) => self.str(n.into())?,
            Marker::Str8 => {
                let n = self.be(1)?;
                self.str(n)?
            }
            Marker::Str16 => {
                let n = self.be(2)?;
                self.str(n)?
            }
            Marker::Str32 => {
                let n = self.be(4)?;
                self.str(n)?
            }
            Marker::Null | Marker::True | Marker::False => Scalar::Other,
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let w = match m {
                    Marker::Bin8 => 1,
                    Marker::Bin16 => 2,
                    _ => 4,
                };
                let n = self.be(w)?;
                self.take(n as usize)?;
                Scalar::Other
            }
            Marker::FixArray(n) => {
                self.skip(n.into(), depth + 1)?;
                Scalar::Other
            }
            Marker::Array16 | Marker::Array32 => {
                let n = self.be(if m == Marker::Array16 { 2 } else { 4 })?;
                self.skip(n, depth + 1)?;
                Scalar::Other
            }
            Marker::FixMap(n) => {
                self.skip(2 * u64::from(n), depth + 1)?;
                Scalar::Other
            }
            Marker::Map16 | Marker::Map32 => {
                let n = self.be(if m == Marker::Map16 { 2 } else { 4 })?;
                self.skip(2 * n, depth + 1)?;
                Scalar::Other
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16 => {
                let n = match m {
                    Marker::FixExt1 => 1,
                    Marker::FixExt2 => 2,
                    Marker::FixExt4 => 4,
                    Marker::FixExt8 => 8,
                    _ => 16,
                };
                self.take(1 + n)?;
                Scalar::Other
            }
            Marker::Ext8 | Marker::Ext16 | Marker::Ext32 => {
                let w = match m {
                    Marker::Ext8 => 1,
                    Marker::Ext16 => 2,
                    _ => 4,
                };
                let n = self.be(w)?;
                self.take(1)?;
                self.take(n as usize)?;
                Scalar::Other
            }
            Marker::Reserved => {
                return Err(alloc::format!("the reserved byte 0xc1 at {}", self.at - 1));
            }
        })
    }

    fn str(&mut self, n: u64) -> Result<Scalar<'a>, String> {
        let at = self.at;
        let b = self.take(usize::try_from(n).map_err(|_| "a string too long".to_string())?)?;
        core::str::from_utf8(b)
            .map(Scalar::Str)
            .map_err(|_| alloc::format!("a string that is not UTF-8 at {at}"))
    }
}

/// Calls `each(name, value)` for every entry of the row's map.
pub(super) fn scalars<'a>(
    row: &'a [u8],
    mut each: impl FnMut(&'a str, Scalar<'a>) -> Result<(), String>,
) -> Result<(), String> {
    let mut c = Cursor { bytes: row, at: 0 };
    let n = match c.marker()? {
        Marker::FixMap(n) => u64::from(n),
        Marker::Map16 => c.be(2)?,
        Marker::Map32 => c.be(4)?,
        _ => return Err("a row that is not a MessagePack map".into()),
    };
    for _ in 0..n {
        let Scalar::Str(key) = c.value(0)? else {
            return Err("a row's key that is not a string".into());
        };
        let v = c.value(0)?;
        each(key, v)?;
    }
    if c.at != row.len() {
        return Err(alloc::format!(
            "{} bytes after the row's map",
            row.len() - c.at
        ));
    }
    Ok(())
}

/// A number of a row: a numeric scalar, or one value of a numeric array,
/// as its column stores it (read without allocating).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Number {
    /// An `int32` or `int64`.
    Int(i64),
    /// A `float32`.
    Float32(f32),
    /// A `float64`.
    Float64(f64),
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        match n {
            Number::Int(i) => Value::Int(i),
            Number::Float32(x) => Value::Float32(x),
            Number::Float64(x) => Value::Float64(x),
        }
    }
}

/// A scalar column's value from its MessagePack scalar, checked against
/// the column's type (an int32 column holds an int32, ...).
pub(super) fn scalar_value(column: &Column, v: Scalar<'_>) -> Result<Value, String> {
    match (column.kind, v) {
        (Kind::String, Scalar::Str(s)) => Ok(Value::String(s.to_string())),
        _ => scalar_number(column, v).map(Value::from),
    }
}

/// A numeric scalar column's value from its MessagePack scalar, checked
/// against the column's type; a string (or any other scalar) is an error.
pub(super) fn scalar_number(column: &Column, v: Scalar<'_>) -> Result<Number, String> {
    let wrong = || {
        alloc::format!(
            "column `{}` ({}) holds {v:?}",
            column.name,
            column.kind.name()
        )
    };
    Ok(match (column.kind, v) {
        (Kind::Int32, Scalar::Int(i)) => Number::Int(i32::try_from(i).map_err(|_| wrong())?.into()),
        (Kind::Int64, Scalar::Int(i)) => Number::Int(i64::try_from(i).map_err(|_| wrong())?),
        // MessagePack writers store a float64 that float32 holds exactly as
        // a float32, and whole numbers as integers.
        (Kind::Float32, Scalar::Float(x)) => Number::Float32(x as f32),
        // A whole number the float column cannot hold exactly is refused,
        // not rounded into another.
        (Kind::Float32, Scalar::Int(i)) => {
            let x = i as f32;
            if x as f64 as i128 != i {
                return Err(wrong());
            }
            Number::Float32(x)
        }
        (Kind::Float64, Scalar::Float(x)) => Number::Float64(x),
        (Kind::Float64, Scalar::Int(i)) => {
            let x = i as f64;
            if x as i128 != i {
                return Err(wrong());
            }
            Number::Float64(x)
        }
        _ => return Err(wrong()),
    })
}

/// The byte range of blob field `k` (of `n`) in `blob`.
pub(super) fn blob_field(
    blob: &[u8],
    k: usize,
    n: usize,
) -> Result<core::ops::Range<usize>, String> {
    if n == 1 {
        return Ok(0..blob.len());
    }
    let mut at = 0usize;
    for i in 0..=k {
        let len = blob
            .get(at..at + 8)
            .ok_or_else(|| alloc::format!("blob field {i}'s length runs past the blob at {at}"))?;
        let len = u64::from_be_bytes(len.try_into().expect("8 bytes"));
        let start = at + 8;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e <= blob.len())
            .ok_or_else(|| {
                alloc::format!("blob field {i} of {len} bytes runs past the blob at {at}")
            })?;
        if i == k {
            return Ok(start..end);
        }
        at = end;
    }
    unreachable!("the loop returns at k")
}

/// Decodes a compressed integer array: a 4-byte big-endian count, 2-bit
/// width codes (most significant first; 0 to 3 for 1, 2, 4, 8 bytes), then
/// each value little-endian in its width, sign-extended. Calls `each` per
/// value; the count is checked against the bytes before anything else.
pub(super) fn compressed_ints(field: &[u8], mut each: impl FnMut(i64)) -> Result<usize, String> {
    let count = field
        .get(..4)
        .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")) as usize)
        .ok_or("a compressed array shorter than its count")?;
    let codes = count.div_ceil(4);
    if 4 + codes + count > field.len() {
        return Err(alloc::format!(
            "a compressed array of {count} values in {} bytes",
            field.len()
        ));
    }
    let mut at = 4 + codes;
    for i in 0..count {
        let code = field[4 + i / 4] >> (2 * (3 - i % 4)) & 3;
        let w = 1usize << code;
        let b = field
            .get(at..at + w)
            .ok_or_else(|| alloc::format!("compressed value {i} runs past the array"))?;
        let mut le = [0u8; 8];
        le[..w].copy_from_slice(b);
        let shift = 64 - 8 * w as u32;
        each((i64::from_le_bytes(le) << shift) >> shift);
        at += w;
    }
    if at != field.len() {
        return Err(alloc::format!(
            "{} bytes after a compressed array",
            field.len() - at
        ));
    }
    Ok(count)
}

/// Checks that `count` elements have the schema's `shape` (one `-1` at
/// most, inferred; without one the sizes must multiply to `count`);
/// returns the inferred size (0 when none is free).
fn fit(schema: &[i64], count: usize) -> Result<usize, String> {
    let known: usize = schema
        .iter()
        .filter(|&&d| d > 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d as usize))
        .ok_or("a shape too large")?;
    let free = schema.iter().filter(|&&d| d < 0).count();
    match free {
        0 if known == count => Ok(0),
        1 if known != 0 && count.is_multiple_of(known) => Ok(count / known),
        _ => Err(alloc::format!(
            "{count} values do not have the shape {schema:?}"
        )),
    }
}

/// The shape of an array of `count` elements under the schema's `shape`
/// ([`fit`]'s rule).
pub(super) fn shape_of(schema: &[i64], count: usize) -> Result<Vec<usize>, String> {
    let inferred = fit(schema, count)?;
    Ok(schema
        .iter()
        .map(|&d| if d < 0 { inferred } else { d as usize })
        .collect())
}

/// Calls `each` with every value of a numeric array column's blob field,
/// in order, allocating nothing (but an error's message); returns their
/// count, checked against the column's schema shape. A `bytes` or `string`
/// column is an error.
pub(super) fn array_numbers(
    column: &Column,
    compressed: bool,
    field: &[u8],
    mut each: impl FnMut(Number),
) -> Result<usize, String> {
    let schema = column.shape.as_deref().unwrap_or(&[-1]);
    let count = match column.kind {
        Kind::Int32 | Kind::Int64 if compressed => {
            let mut outside = None;
            let count = compressed_ints(field, |x| {
                if column.kind == Kind::Int32 && i32::try_from(x).is_err() {
                    outside.get_or_insert(x);
                } else {
                    each(Number::Int(x));
                }
            })?;
            if let Some(x) = outside {
                return Err(alloc::format!("column `{}` holds {x}", column.name));
            }
            count
        }
        Kind::String | Kind::Bytes => {
            return Err(alloc::format!(
                "column `{}` ({}) is not numbers",
                column.name,
                column.kind.name()
            ));
        }
        kind => {
            if !field.len().is_multiple_of(kind.width()) {
                return Err(alloc::format!(
                    "column `{}`: {} bytes are not whole {} values",
                    column.name,
                    field.len(),
                    kind.name()
                ));
            }
            let number: fn(&[u8]) -> Number = match kind {
                Kind::Int32 => |b| Number::Int(i32::from_le_bytes(b.try_into().expect("4")).into()),
                Kind::Int64 => |b| Number::Int(i64::from_le_bytes(b.try_into().expect("8"))),
                Kind::Float32 => |b| Number::Float32(f32::from_le_bytes(b.try_into().expect("4"))),
                _ => |b| Number::Float64(f64::from_le_bytes(b.try_into().expect("8"))),
            };
            for b in field.chunks_exact(kind.width()) {
                each(number(b));
            }
            field.len() / kind.width()
        }
    };
    fit(schema, count).map_err(|e| alloc::format!("column `{}`: {e}", column.name))?;
    Ok(count)
}

/// An array column's value from its blob field.
pub(super) fn array_value(
    column: &Column,
    compressed: bool,
    field: &[u8],
) -> Result<Value, String> {
    if matches!(column.kind, Kind::String | Kind::Bytes) {
        return Ok(Value::Bytes(field.to_vec()));
    }
    let (mut ints, mut f32s, mut f64s) = (Vec::new(), Vec::new(), Vec::new());
    let count = array_numbers(column, compressed, field, |n| match n {
        Number::Int(i) => ints.push(i),
        Number::Float32(x) => f32s.push(x),
        Number::Float64(x) => f64s.push(x),
    })?;
    let shape = shape_of(column.shape.as_deref().unwrap_or(&[-1]), count)
        .map_err(|e| alloc::format!("column `{}`: {e}", column.name))?;
    Ok(match column.kind {
        // array_numbers refused an int32 column's value outside i32.
        Kind::Int32 => Value::Int32s(ints.into_iter().map(|i| i as i32).collect(), shape),
        Kind::Int64 => Value::Int64s(ints, shape),
        Kind::Float32 => Value::Float32s(f32s, shape),
        _ => Value::Float64s(f64s, shape),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_ints_sign_extend_each_width() {
        // MindSpore's encoding of [1 << 40, -3] (int64): count 2, codes 11 00.
        let field = [0, 0, 0, 2, 0xc0, 0, 0, 0, 0, 0, 1, 0, 0, 0xfd];
        let mut v = Vec::new();
        assert_eq!(compressed_ints(&field, |x| v.push(x)), Ok(2));
        assert_eq!(v, [1 << 40, -3]);
        // A count larger than the bytes is refused before any value.
        assert!(compressed_ints(&[0xff, 0xff, 0xff, 0xff, 0], |_| panic!()).is_err());
        assert!(compressed_ints(&field[..13], |_| {}).is_err());
    }

    #[test]
    fn whole_numbers_in_float_columns_are_exact_or_refused() {
        let col = |kind| Column {
            name: "label".into(),
            kind,
            shape: None,
            blob: false,
        };
        let (f32c, f64c) = (col(Kind::Float32), col(Kind::Float64));
        let got = |c: &Column, i: i128| scalar_value(c, Scalar::Int(i));
        assert!(matches!(got(&f32c, 1 << 24), Ok(Value::Float32(x)) if x == 16_777_216.0));
        // Before: 2^24 + 1 became 2^24, 2^53 + 1 became 2^53.
        assert!(got(&f32c, (1 << 24) + 1).is_err());
        assert!(matches!(got(&f64c, 1 << 53), Ok(Value::Float64(x)) if x == 2f64.powi(53)));
        assert!(got(&f64c, (1 << 53) + 1).is_err());
    }

    #[test]
    fn shapes_infer_one_free_size() {
        assert_eq!(shape_of(&[-1, 4], 8), Ok(alloc::vec![2, 4]));
        assert_eq!(shape_of(&[2, 3], 6), Ok(alloc::vec![2, 3]));
        assert!(shape_of(&[-1, 4], 7).is_err());
        assert!(shape_of(&[2, 3], 5).is_err());
        assert!(shape_of(&[-1, -1], 4).is_err());
    }

    #[test]
    fn blob_fields_are_length_prefixed_big_endian() {
        let blob = [0, 0, 0, 0, 0, 0, 0, 2, 7, 8, 0, 0, 0, 0, 0, 0, 0, 1, 9];
        assert_eq!(blob_field(&blob, 0, 2), Ok(8..10));
        assert_eq!(blob_field(&blob, 1, 2), Ok(18..19));
        assert!(blob_field(&blob[..18], 1, 2).is_err());
        assert_eq!(blob_field(&blob, 0, 1), Ok(0..19));
    }

    #[test]
    fn maps_are_read_without_trusting_lengths() {
        // {"a": 1, "s": "xy"}
        let row = [0x82, 0xa1, b'a', 1, 0xa1, b's', 0xa2, b'x', b'y'];
        let mut seen = Vec::new();
        scalars(&row, |k, v| {
            seen.push((k, v));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [("a", Scalar::Int(1)), ("s", Scalar::Str("xy"))]);
        // A map32 claiming 2^32 - 1 entries in 5 bytes; an array32 likewise.
        assert!(scalars(&[0xdf, 0xff, 0xff, 0xff, 0xff], |_, _| Ok(())).is_err());
        assert!(
            scalars(
                &[0x81, 0xa1, b'a', 0xdd, 0xff, 0xff, 0xff, 0xff],
                |_, _| Ok(())
            )
            .is_err()
        );
        assert!(scalars(&row[..8], |_, _| Ok(())).is_err());
    }
}
