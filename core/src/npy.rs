//! Writing tensors as NumPy `.npy` files (format version 1.0), to compare with
//! Python or feed Python tools.
//!
//! ```
//! use tensorprep::{npy, Tensor};
//!
//! let t = Tensor::F32(vec![0.5; 3 * 2 * 2]);
//! let mut bytes = Vec::new();
//! npy::write(&mut bytes, &[3, 2, 2], &t)?;
//! assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
//! assert_eq!(bytes.len() % 16, (3 * 2 * 2 * 4) % 16); // the header is padded to 64 bytes
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};
use std::string::String;
use std::vec::Vec;

use crate::{DType, Tensor};

/// NumPy's dtype string for the elements (little-endian).
fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
    }
}

/// Writes `tensor` with `shape` (whose product must be the tensor's length) as a `.npy` file.
pub fn write(mut w: impl Write, shape: &[usize], tensor: &Tensor) -> io::Result<()> {
    let len = tensor.len();
    if shape.iter().product::<usize>() != len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "npy: the shape does not match the tensor's length",
        ));
    }
    w.write_all(&header(shape, tensor.dtype(), 0)?)?;
    write_values(w, tensor)
}

/// The header of a `.npy` file of `shape` and `dtype` (magic, version,
/// length, the dict), padded with spaces to a multiple of 64 bytes and to at
/// least `min_len` bytes: a writer that learns the first dimension only at
/// the end writes the header of the largest it can be first, then overwrites
/// it with the real one padded to the same length.
///
/// ```
/// use tensorprep::{npy, DType};
/// let most = npy::header(&[1000, 3, 224, 224], DType::F32, 0)?;
/// let real = npy::header(&[7, 3, 224, 224], DType::F32, most.len())?;
/// assert_eq!(real.len(), most.len());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn header(shape: &[usize], dtype: DType, min_len: usize) -> io::Result<Vec<u8>> {
    // A Python tuple: `(3, 224, 224)`, `(4,)`.
    let mut dims: String = shape.iter().map(|d| std::format!("{d}, ")).collect();
    dims.truncate(
        dims.len()
            .saturating_sub(if shape.len() == 1 { 1 } else { 2 }),
    );
    let mut header = std::format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({dims}), }}",
        descr(dtype)
    );
    // Magic (6) + version (2) + header length (2) + header, padded to 64 with a final newline.
    while (10 + header.len() + 1) % 64 != 0 || 10 + header.len() + 1 < min_len {
        header.push(' ');
    }
    header.push('\n');
    let header_len = u16::try_from(header.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "npy: shape too long"))?;
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    Ok(out)
}

/// Writes the tensor's elements, little-endian, as a `.npy` file holds them
/// after its [`header`].
pub fn write_values(mut w: impl Write, tensor: &Tensor) -> io::Result<()> {
    match tensor {
        Tensor::F32(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes())),
        Tensor::F16(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes())),
        Tensor::U8(v) => w.write_all(v),
        Tensor::I8(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_padded_and_shape_is_a_python_tuple() {
        let mut out = std::vec::Vec::new();
        write(&mut out, &[2, 3], &Tensor::U8(std::vec![7; 6])).unwrap();
        let header_len = u16::from_le_bytes([out[8], out[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = core::str::from_utf8(&out[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }"));
        assert_eq!(&out[10 + header_len..], &[7; 6]);
        let mut one = std::vec::Vec::new();
        write(&mut one, &[4], &Tensor::I8(std::vec![-1; 4])).unwrap();
        assert!(
            core::str::from_utf8(&one[10..74])
                .unwrap()
                .contains("'shape': (4,), }")
        );
        assert!(write(&mut one, &[5], &Tensor::I8(std::vec![0; 4])).is_err());
    }
}
