//! WebP: a walk of the RIFF chunks that sizes the image before anything is
//! allocated, and image-webp for the pixels (RGB, or RGBA when the file has
//! alpha, as Pillow opens it; the first frame of an animation).
//!
//! Lossless files decode exactly as libwebp does. Lossy ones go through
//! image-webp's own VP8 decoder with libwebp's default ("fancy") chroma
//! upsampling; docs/ops.md ("Inputs") and docs/parity.md give the measured
//! difference from Pillow's libwebp.

use alloc::vec::Vec;
use std::io::Cursor;

use image_webp::{DecodingError, WebPDecoder};

use super::{ImageFormat, Opened};
use crate::{DecodeErrorKind, Error, Limits, Result};

/// Most pixels per byte of VP8 (lossy) data: every 16x16 macroblock codes its
/// luma and chroma prediction modes with fixed probabilities (at least 1.6
/// bits together, so at most 1280 pixels per byte); libwebp's smallest flat
/// image reaches 562. A 1.6x margin above the bound.
const VP8_MAX_PIXELS_PER_BYTE: u64 = 2048;

/// What the RIFF chunks say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) has_alpha: bool,
    /// The `EXIF` chunk's payload, as a range of the file.
    pub(crate) exif: Option<(usize, usize)>,
    /// Whether the RIFF size fits in the bytes given (a failure in a file that
    /// does not is reported as truncation).
    complete: bool,
}

fn error(kind: DecodeErrorKind) -> Error {
    Error::WebP { kind }
}

fn le24(b: &[u8]) -> u32 {
    u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16
}

/// Walks the chunks (no decoding): size, alpha, EXIF; checks the size against
/// `limits` and, for lossy files, against what the VP8 data can describe.
pub(crate) fn read_header(bytes: &[u8], limits: &Limits) -> Result<Header> {
    let head = bytes
        .get(..12)
        .ok_or_else(|| error(DecodeErrorKind::Truncated))?;
    if &head[..4] != b"RIFF" || &head[8..12] != b"WEBP" {
        return Err(error(DecodeErrorKind::Corrupt));
    }
    let riff = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
    let complete = riff + 8 <= bytes.len() as u64;
    let mut at = 12usize;
    let mut size = None;
    let mut has_alpha = false;
    let mut animated = false;
    let mut lossy_bytes = None;
    let mut exif = None;
    while let Some(c) = bytes.get(at..at + 8) {
        let len = u32::from_le_bytes([c[4], c[5], c[6], c[7]]) as usize;
        let start = at + 8;
        let end = start.saturating_add(len).min(bytes.len());
        let data = &bytes[start..end];
        match &c[..4] {
            b"VP8 " => {
                // Frame tag (3 bytes), start code, 14-bit width and height.
                if size.is_none() {
                    let d = data
                        .get(..10)
                        .ok_or_else(|| error(DecodeErrorKind::Truncated))?;
                    if d[3..6] != [0x9d, 0x01, 0x2a] {
                        return Err(error(DecodeErrorKind::Corrupt));
                    }
                    let w = u32::from(u16::from_le_bytes([d[6], d[7]]) & 0x3fff);
                    let h = u32::from(u16::from_le_bytes([d[8], d[9]]) & 0x3fff);
                    size = Some((w, h));
                }
                lossy_bytes = Some(len as u64);
            }
            b"VP8L" if size.is_none() => {
                let d = data
                    .get(..5)
                    .ok_or_else(|| error(DecodeErrorKind::Truncated))?;
                if d[0] != 0x2f {
                    return Err(error(DecodeErrorKind::Corrupt));
                }
                let bits = u32::from_le_bytes([d[1], d[2], d[3], d[4]]);
                size = Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1));
                has_alpha = bits >> 28 & 1 == 1;
            }
            b"VP8X" => {
                let d = data
                    .get(..10)
                    .ok_or_else(|| error(DecodeErrorKind::Truncated))?;
                has_alpha = d[0] & 0x10 != 0;
                animated = d[0] & 0x02 != 0;
                size = Some((le24(&d[4..7]) + 1, le24(&d[7..10]) + 1));
            }
            b"EXIF" => exif = Some((start, end)),
            _ => {}
        }
        at = start.saturating_add(len).saturating_add(len & 1);
    }
    let (width, height) = size.ok_or_else(|| {
        error(if complete {
            DecodeErrorKind::Corrupt
        } else {
            DecodeErrorKind::Truncated
        })
    })?;
    limits.check_pixels(u64::from(width), u64::from(height))?;
    if let Some(data_bytes) = lossy_bytes.filter(|_| !animated) {
        let max_pixels = data_bytes.saturating_mul(VP8_MAX_PIXELS_PER_BYTE);
        if u64::from(width) * u64::from(height) > max_pixels {
            if !complete {
                return Err(error(DecodeErrorKind::Truncated));
            }
            return Err(Error::ImplausibleSize {
                format: ImageFormat::WebP,
                width,
                height,
                data_bytes,
                max_pixels,
            });
        }
    }
    Ok(Header {
        width,
        height,
        has_alpha,
        exif,
        complete,
    })
}

fn map_error(e: &DecodingError, header: &Header) -> Error {
    error(match e {
        _ if !header.complete => DecodeErrorKind::Truncated,
        DecodingError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            DecodeErrorKind::Truncated
        }
        DecodingError::UnsupportedFeature(_) => DecodeErrorKind::Unsupported,
        _ => DecodeErrorKind::Corrupt,
    })
}

/// Decodes the image (the first frame of an animation) into `out`: RGB, or
/// RGBA when the file has alpha.
pub(crate) fn decode(
    bytes: &[u8],
    header: &Header,
    limits: &Limits,
    out: &mut Vec<u8>,
) -> Result<Opened> {
    let mut d = WebPDecoder::new(Cursor::new(bytes)).map_err(|e| map_error(&e, header))?;
    if d.dimensions() != (header.width, header.height) {
        return Err(error(DecodeErrorKind::Corrupt));
    }
    let (opened, n) = if d.has_alpha() {
        (Opened::Rgba, 4)
    } else {
        (Opened::Rgb, 3)
    };
    let pixels = u64::from(header.width) * u64::from(header.height);
    let len = limits.check_alloc(pixels * n)?;
    // The lossless decoder works in 4 bytes per pixel whatever the output.
    limits.check_alloc(pixels * 4)?;
    d.set_memory_limit(limits.max_alloc_bytes.try_into().unwrap_or(usize::MAX));
    crate::buffer::zero(out, len)?;
    d.read_image(out).map_err(|e| map_error(&e, header))?;
    Ok(opened)
}
