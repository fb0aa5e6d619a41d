//! The one EXIF field we need, the orientation tag, read with bounds checks.
//!
//! Hand-written on purpose: the maintained EXIF crates need `std`, and reading one
//! tag of IFD0 is a few bounded reads. Everything else in the EXIF block is ignored.

/// Reads the `Orientation` tag (0x0112) of IFD0 from an EXIF block that starts at
/// the TIFF header (an `Exif\0\0` prefix is skipped). `None` if absent or malformed.
pub(crate) fn orientation(exif: &[u8]) -> Option<u16> {
    let tiff = exif.strip_prefix(b"Exif\0\0").unwrap_or(exif);
    let big_endian = match tiff.get(..4)? {
        [b'I', b'I', 42, 0] => false,
        [b'M', b'M', 0, 42] => true,
        _ => return None,
    };
    let u16_at = |off: usize| -> Option<u16> {
        let b: [u8; 2] = tiff.get(off..off.checked_add(2)?)?.try_into().ok()?;
        Some(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |off: usize| -> Option<u32> {
        let b: [u8; 4] = tiff.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let ifd = usize::try_from(u32_at(4)?).ok()?;
    let count = usize::from(u16_at(ifd)?);
    for i in 0..count {
        let entry = ifd.checked_add(2)?.checked_add(i.checked_mul(12)?)?;
        let tag = u16_at(entry)?;
        if tag == 0x0112 {
            let kind = u16_at(entry + 2)?;
            // SHORT (3) is the only type the TIFF spec allows for this tag.
            return if kind == 3 { u16_at(entry + 8) } else { None };
        }
    }
    None
}

/// The payload of the first `APP1` segment that holds EXIF (`Exif\0\0` + TIFF),
/// found by walking the marker segments before the first scan. `None` if there is
/// none or the segments are malformed.
pub(crate) fn find_in_jpeg(jpeg: &[u8]) -> Option<&[u8]> {
    super::markers::segments(jpeg)
        .find(|(marker, payload)| *marker == 0xE1 && payload.starts_with(b"Exif\0\0"))
        .map(|(_, payload)| payload)
}

#[cfg(test)]
mod tests {
    use super::{find_in_jpeg, orientation};

    #[test]
    fn finds_the_exif_segment_and_survives_every_cut() {
        let jpeg = include_bytes!("../../../tests/fixtures/exif_orient6_grace_hopper.jpg");
        assert_eq!(find_in_jpeg(jpeg).and_then(orientation), Some(6));
        let plain = include_bytes!("../../../tests/fixtures/sample.jpg");
        assert_eq!(find_in_jpeg(plain).and_then(orientation), None);
        for n in 0..600 {
            let _ = find_in_jpeg(&jpeg[..n]);
        }
    }

    fn block(big: bool, value: u16) -> [u8; 26] {
        let mut b = [0u8; 26];
        let w16 = |x: u16| {
            if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            }
        };
        let w32 = |x: u32| {
            if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            }
        };
        b[..4].copy_from_slice(if big { b"MM\0*" } else { b"II*\0" });
        b[4..8].copy_from_slice(&w32(8));
        b[8..10].copy_from_slice(&w16(1));
        b[10..12].copy_from_slice(&w16(0x0112));
        b[12..14].copy_from_slice(&w16(3));
        b[14..18].copy_from_slice(&w32(1));
        b[18..20].copy_from_slice(&w16(value));
        b
    }

    #[test]
    fn reads_both_byte_orders_and_rejects_garbage() {
        assert_eq!(orientation(&block(false, 6)), Some(6));
        assert_eq!(orientation(&block(true, 8)), Some(8));
        let mut prefixed = b"Exif\0\0".to_vec();
        prefixed.extend_from_slice(&block(true, 3));
        assert_eq!(orientation(&prefixed), Some(3));
        // Truncated at every length, and an IFD offset pointing far away.
        let full = block(false, 6);
        for n in 0..20 {
            assert_eq!(orientation(&full[..n]), None, "cut at {n}");
        }
        let mut far = full;
        far[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(orientation(&far), None);
    }
}
