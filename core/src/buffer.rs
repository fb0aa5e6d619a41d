//! Buffers whose size comes from the input: allocated fallibly (an allocator
//! that cannot satisfy the request gives [`Error::OutOfMemory`], never
//! an abort) and zeroed by the allocator (`calloc`: the operating system
//! hands out zero pages, so memory is committed only where pixels are
//! written; a crafted file that fails early costs address space, not RAM).

use alloc::vec::Vec;

use crate::{Error, Result};

/// `len` zero bytes, or an error if the allocator cannot provide them.
pub(crate) fn zeroed(len: usize) -> Result<Vec<u8>> {
    // Probe fallibly first: `vec![0; len]` would abort where the system
    // refuses (an address-space limit), and a `resize` would write every
    // byte. The probe is freed at once; the zeroed allocation that follows
    // asks for the same size.
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { bytes: len as u64 })?;
    drop(probe);
    Ok(alloc::vec![0u8; len])
}

/// Grows a scratch vector to at least `len` bytes (contents not kept when it
/// must grow: scratch is rewritten before it is read) and returns its first
/// `len` bytes.
pub(crate) fn grow(buf: &mut Vec<u8>, len: usize) -> Result<&mut [u8]> {
    if buf.len() < len {
        *buf = Vec::new(); // the old buffer goes before the new one comes
        *buf = zeroed(len)?;
    }
    Ok(&mut buf[..len])
}

/// Makes room for `len` elements in `v`, fallibly; nothing is allocated
/// when it already has the room. Pushes and resizes up to `len` then never
/// allocate, so they cannot abort.
pub(crate) fn reserve<T>(v: &mut Vec<T>, len: usize) -> Result<()> {
    if v.capacity() >= len {
        return Ok(());
    }
    v.try_reserve_exact(len - v.len())
        .map_err(|_| Error::OutOfMemory {
            bytes: (len as u64).saturating_mul(core::mem::size_of::<T>() as u64),
        })
}

/// Makes `buf` exactly `len` zero bytes (reusing its allocation when large enough).
#[cfg_attr(not(any(feature = "png", feature = "webp")), allow(dead_code))]
pub(crate) fn zero(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.capacity() < len {
        *buf = Vec::new();
        *buf = zeroed(len)?;
    } else {
        buf.clear();
        buf.resize(len, 0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        assert!(matches!(
            zeroed(usize::MAX / 2),
            Err(Error::OutOfMemory { .. })
        ));
        let mut buf = Vec::new();
        assert!(grow(&mut buf, usize::MAX / 2).is_err());
        assert_eq!(grow(&mut buf, 10).unwrap(), &[0; 10]);
        buf[3] = 7;
        assert_eq!(
            grow(&mut buf, 5).unwrap()[3],
            7,
            "a smaller request keeps the buffer"
        );
        zero(&mut buf, 4).unwrap();
        assert_eq!(buf, [0; 4]);
        let mut words: Vec<u32> = Vec::new();
        assert!(matches!(
            reserve(&mut words, usize::MAX / 8),
            Err(Error::OutOfMemory { .. })
        ));
        reserve(&mut words, 100).unwrap();
        let before = words.as_ptr();
        words.resize(100, 7);
        assert_eq!(words.as_ptr(), before, "no allocation within the reserve");
    }
}
