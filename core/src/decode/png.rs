//! PNG: the chunk walk that sizes the image before anything is allocated, and
//! zune-png for the pixels, delivered as Pillow's `Image.open(f)` has them.
//!
//! Pillow's modes, reproduced here: 1-, 2- and 4-bit gray scale to 0-255; a
//! palette expands to RGB (RGBA when a `tRNS` chunk gives alpha); 16-bit RGB,
//! RGBA and gray + alpha keep the high byte of each sample; **16-bit gray opens
//! as `I;16`, whose conversions clip every value above 255 to 255** (they do
//! not scale). A `tRNS` colour makes matching pixels transparent in RGBA output.

use alloc::vec::Vec;

use zune_core::bit_depth::ByteEndian;
use zune_core::bytestream::ZCursor;
use zune_core::options::DecoderOptions;
use zune_png::PngDecoder;
use zune_png::error::PngDecodeErrors;

use super::{ImageFormat, Opened};
use crate::{DecodeErrorKind, Error, Limits, Result};

const SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// The most bytes deflate can expand one compressed byte into: a 258-byte
/// match coded in two bits.
const DEFLATE_MAX_RATIO: u64 = 1032;

/// What the chunks before the pixels say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Bits per sample: 1, 2, 4, 8 or 16.
    depth: u8,
    /// 0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA.
    color_type: u8,
    /// The `eXIf` chunk's payload, as a range of the file.
    pub(crate) exif: Option<(usize, usize)>,
    /// Whether the image has an alpha channel or a `tRNS` chunk.
    pub(crate) has_alpha: bool,
    /// Whether every chunk up to `IEND` is whole (a failure in a file that is
    /// not is reported as truncation).
    complete: bool,
}

fn corrupt() -> Error {
    Error::Png {
        kind: DecodeErrorKind::Corrupt,
    }
}

fn truncated() -> Error {
    Error::Png {
        kind: DecodeErrorKind::Truncated,
    }
}

/// Walks the chunks (lengths only, no CRC, no inflation) up to `IEND`:
/// checks the size against `limits` and against what the `IDAT` data can
/// inflate to.
pub(crate) fn read_header(bytes: &[u8], limits: &Limits) -> Result<Header> {
    if !bytes.starts_with(SIGNATURE) {
        return Err(if SIGNATURE.starts_with(bytes) {
            truncated()
        } else {
            corrupt()
        });
    }
    let mut at = SIGNATURE.len();
    let mut header = None;
    let mut idat = 0u64;
    let mut complete = false;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = [head[4], head[5], head[6], head[7]];
        let start = at + 8;
        // A chunk may be cut short only at the end of a truncated file.
        let end = start.saturating_add(len).min(bytes.len());
        let data = &bytes[start..end];
        match &kind {
            b"IHDR" => {
                if data.len() < 13 || header.is_some() {
                    let cut = start.saturating_add(len) > bytes.len();
                    return Err(if cut { truncated() } else { corrupt() });
                }
                let u32_at =
                    |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                let (depth, color_type) = (data[8], data[9]);
                let valid = match color_type {
                    0 => matches!(depth, 1 | 2 | 4 | 8 | 16),
                    3 => matches!(depth, 1 | 2 | 4 | 8),
                    2 | 4 | 6 => matches!(depth, 8 | 16),
                    _ => false,
                };
                if !valid {
                    return Err(corrupt());
                }
                header = Some(Header {
                    width: u32_at(0),
                    height: u32_at(4),
                    depth,
                    color_type,
                    exif: None,
                    has_alpha: matches!(color_type, 4 | 6),
                    complete: false,
                });
            }
            _ if header.is_none() => return Err(corrupt()), // IHDR must come first
            b"IDAT" => idat += data.len() as u64,
            b"tRNS" => {
                if let Some(h) = header.as_mut() {
                    h.has_alpha = true;
                }
            }
            b"eXIf" => {
                if let Some(h) = header.as_mut() {
                    h.exif = Some((start, end));
                }
            }
            b"IEND" => {
                complete = start.saturating_add(len).saturating_add(4) <= bytes.len();
                break;
            }
            _ => {}
        }
        at = start.saturating_add(len).saturating_add(4);
    }
    let mut header = header.ok_or_else(truncated)?;
    header.complete = complete;
    let (w, h) = (u64::from(header.width), u64::from(header.height));
    limits.check_pixels(w, h)?;
    // The filtered rows the IDAT data must inflate to; one filter byte per row
    // (Adam7 adds a few rows per pass, which only loosens the bound).
    let bits = u64::from(header.depth) * u64::from(channels(header.color_type));
    let raw = h * (1 + (w * bits).div_ceil(8));
    let max_raw = idat.saturating_mul(DEFLATE_MAX_RATIO);
    if raw > max_raw {
        if !complete {
            return Err(truncated());
        }
        let max_pixels = max_raw.saturating_mul(8) / bits.max(1);
        return Err(Error::ImplausibleSize {
            format: ImageFormat::Png,
            width: header.width,
            height: header.height,
            data_bytes: idat,
            max_pixels,
        });
    }
    Ok(header)
}

/// Samples per pixel of a PNG colour type.
fn channels(color_type: u8) -> u8 {
    match color_type {
        0 | 3 => 1,
        4 => 2,
        2 => 3,
        _ => 4,
    }
}

/// A decoder failure: truncation when the file ends before `IEND`, whatever
/// the decoder tripped on first.
fn map_error(e: &PngDecodeErrors, header: &Header) -> Error {
    let kind = match e {
        _ if !header.complete => DecodeErrorKind::Truncated,
        PngDecodeErrors::UnsupportedAPNGImage => DecodeErrorKind::Unsupported,
        _ => DecodeErrorKind::Corrupt,
    };
    Error::Png { kind }
}

/// Decodes the image into `out` as Pillow opens it, 8 bits per sample: the
/// returned [`Opened`] says which channels (L, LA, RGB or RGBA) it holds.
/// `wide` is scratch for 16-bit gray.
pub(crate) fn decode(
    bytes: &[u8],
    header: &Header,
    strict: bool,
    limits: &Limits,
    out: &mut Vec<u8>,
    wide: &mut Vec<u8>,
) -> Result<Opened> {
    // 16-bit gray is clipped (Pillow's I;16), so its samples are needed whole;
    // every other 16-bit type keeps the high byte, which zune-png strips to.
    let gray16 = header.depth == 16 && header.color_type == 0;
    let options = DecoderOptions::new_safe()
        .set_strict_mode(strict)
        .png_set_confirm_crc(strict)
        .png_set_strip_to_8bit(!gray16)
        .set_byte_endian(ByteEndian::BE)
        .set_max_width(crate::Limits::MAX_DIMENSION as usize)
        .set_max_height(crate::Limits::MAX_DIMENSION as usize);
    let mut d = PngDecoder::new_with_options(ZCursor::new(bytes), options);
    d.decode_headers().map_err(|e| map_error(&e, header))?;
    let n = d.colorspace().ok_or_else(corrupt)?.num_components();
    let opened = match n {
        1 => Opened::L,
        2 => Opened::La,
        3 => Opened::Rgb,
        4 => Opened::Rgba,
        _ => return Err(corrupt()),
    };
    let pixels = u64::from(header.width) * u64::from(header.height);
    let len = limits.check_alloc(pixels * n as u64)?;
    let target: &mut Vec<u8> = if gray16 { wide } else { out };
    let bytes_per_sample = if gray16 { 2 } else { 1 };
    let len_decoded = limits.check_alloc(len as u64 * bytes_per_sample)?;
    crate::buffer::zero(target, len_decoded)?;
    d.decode_into(target).map_err(|e| map_error(&e, header))?;
    if gray16 {
        // Pillow's I;16 -> L: values above 255 become 255; alpha from a tRNS
        // match is 0 or 65535 and keeps its high byte.
        crate::buffer::zero(out, len)?;
        for (i, (s, d)) in wide.chunks_exact(2).zip(out.iter_mut()).enumerate() {
            let v = u16::from_be_bytes([s[0], s[1]]);
            *d = if n == 2 && i % 2 == 1 {
                s[0]
            } else {
                v.min(255) as u8
            };
        }
    }
    Ok(opened)
}
