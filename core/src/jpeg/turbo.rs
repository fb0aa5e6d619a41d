//! The libjpeg-turbo backend: a small safe wrapper over the TurboJPEG 3 API
//! (`turbojpeg-sys`, which builds the bundled libjpeg-turbo).
//!
//! Written over the raw API rather than the `turbojpeg` crate because we need
//! what that crate does not expose: the error code (warning or fatal) for the
//! lenient mode, the scan and pixel limits, and no panics on bad sizes.
//!
//! libjpeg-turbo is the decoder inside Pillow's wheels, run here with Pillow's
//! settings (accurate integer IDCT, smooth chroma upsampling), so the pixels are
//! Pillow's. CMYK files are inverted and converted with Pillow's `cmyk2rgb`, as
//! `Image.open(...).convert("RGB")` does.

use alloc::vec::Vec;
use core::ffi::{CStr, c_int};

use turbojpeg_sys as tj;

use super::Scale;
use crate::{Error, JpegErrorKind, Limits, PixelFormat, Rect, Result};

/// Most progressive scans accepted (a real file has about 10; crafted files with
/// thousands make decoding quadratic).
const MAX_SCANS: c_int = super::MAX_SCANS as c_int;

/// One TurboJPEG decompressor instance, created on first use.
#[derive(Debug, Default)]
pub(super) struct Turbo {
    handle: Option<Handle>,
}

impl Clone for Turbo {
    /// A clone starts without an instance (it makes its own on first use).
    fn clone(&self) -> Self {
        Turbo::default()
    }
}

#[derive(Debug)]
struct Handle(tj::tjhandle);

// SAFETY: a TurboJPEG instance has no thread affinity; it is only used through
// `&mut Turbo`, so by one thread at a time.
unsafe impl Send for Handle {}
// SAFETY: no method takes `&Handle` to touch the instance; shared references
// give no access to it.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `tj3Init` and is destroyed exactly once.
        unsafe { tj::tj3Destroy(self.0) }
    }
}

fn error_kind(message: &str) -> JpegErrorKind {
    // "Premature end of JPEG file" (the data stops), "premature end of data
    // segment" (a scan stops at a marker before the image is complete).
    if message.contains("Premature end") || message.contains("premature end") {
        JpegErrorKind::Truncated
    } else if message.contains("Unsupported") || message.contains("not supported") {
        JpegErrorKind::Unsupported
    } else {
        JpegErrorKind::Corrupt
    }
}

impl Turbo {
    fn handle(&mut self) -> Result<tj::tjhandle> {
        if self.handle.is_none() {
            // SAFETY: plain constructor call; a null result is checked below.
            let h = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
            if h.is_null() {
                return Err(Error::Jpeg {
                    kind: JpegErrorKind::Unsupported,
                });
            }
            self.handle = Some(Handle(h));
        }
        Ok(self.handle.as_ref().map_or(core::ptr::null_mut(), |h| h.0))
    }

    fn set(h: tj::tjhandle, param: tj::TJPARAM, value: c_int) -> Result<()> {
        // SAFETY: `h` is a live instance; tj3Set validates `param` and `value`.
        if unsafe { tj::tj3Set(h, param as c_int, value) } != 0 {
            return Err(Error::InvalidParameter {
                name: "JPEG decoder settings",
                reason: "libjpeg-turbo rejected one",
            });
        }
        Ok(())
    }

    /// The error of the last call on `h`, or `None` for a warning when `strict` is off.
    fn failure(h: tj::tjhandle, strict: bool) -> Option<Error> {
        // SAFETY: `h` is a live instance; the message is a NUL-terminated string
        // owned by it, copied out before any further call.
        let (code, kind) = unsafe {
            let code = tj::tj3GetErrorCode(h);
            let msg = CStr::from_ptr(tj::tj3GetErrorStr(h));
            (code, error_kind(&msg.to_string_lossy()))
        };
        if !strict && code == tj::TJERR_TJERR_WARNING as c_int {
            return None;
        }
        Some(Error::Jpeg { kind })
    }

    /// Parses the headers: stored width, height, number of components and the
    /// MCU width in pixels (0 when the subsampling is unusual).
    pub(super) fn header(&mut self, bytes: &[u8]) -> Result<(u32, u32, u8, u32)> {
        let h = self.handle()?;
        let len = jpeg_len(bytes)?;
        // SAFETY: `bytes` is a valid slice of `len` bytes; `h` is live.
        if unsafe { tj::tj3DecompressHeader(h, bytes.as_ptr(), len as _) } != 0 {
            let error = Self::failure(h, true).unwrap_or(Error::Jpeg {
                kind: JpegErrorKind::Corrupt,
            });
            // A header that failed part way leaves the instance unable to read
            // the next one: it is destroyed, and the next image makes a new one
            // (good files keep reusing theirs).
            self.handle = None;
            return Err(error);
        }
        // SAFETY: `h` is live and has just parsed a header.
        let (w, ht, cs, subsamp) = unsafe {
            (
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_JPEGWIDTH as c_int),
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_JPEGHEIGHT as c_int),
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_COLORSPACE as c_int),
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_SUBSAMP as c_int),
            )
        };
        // TurboJPEG's `tjMCUWidth` table, indexed by `TJSAMP`.
        let mcu = match subsamp {
            x if x == tj::TJSAMP_TJSAMP_444 as c_int
                || x == tj::TJSAMP_TJSAMP_GRAY as c_int
                || x == tj::TJSAMP_TJSAMP_440 as c_int
                || x == tj::TJSAMP_TJSAMP_441 as c_int =>
            {
                8
            }
            x if x == tj::TJSAMP_TJSAMP_422 as c_int || x == tj::TJSAMP_TJSAMP_420 as c_int => 16,
            x if x == tj::TJSAMP_TJSAMP_411 as c_int => 32,
            _ => 0,
        };
        let components = match cs {
            x if x == tj::TJCS_TJCS_GRAY as c_int => 1,
            x if x == tj::TJCS_TJCS_CMYK as c_int || x == tj::TJCS_TJCS_YCCK as c_int => 4,
            _ => 3,
        };
        match (u32::try_from(w), u32::try_from(ht)) {
            (Ok(w), Ok(ht)) if w > 0 && ht > 0 => Ok((w, ht, components, mcu)),
            _ => Err(Error::Jpeg {
                kind: JpegErrorKind::Corrupt,
            }),
        }
    }

    /// Decodes `region` of the image scaled by `scale` into `out` (`stride`
    /// bytes per row) as `format`: Gray8 for gray files; RGB/BGR/RGBA/BGRA for
    /// colour and CMYK files. `region.x` must be a multiple of the scaled MCU
    /// width unless the region is the whole scaled image.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decode(
        &mut self,
        bytes: &[u8],
        format: PixelFormat,
        scale: Scale,
        strict: bool,
        limits: &Limits,
        region: Rect,
        out: &mut [u8],
        stride: usize,
        cmyk: &mut Vec<u8>,
    ) -> Result<()> {
        let (width, height) = (region.width, region.height);
        let h = self.handle()?;
        Self::set(h, tj::TJPARAM_TJPARAM_STOPONWARNING, c_int::from(strict))?;
        Self::set(h, tj::TJPARAM_TJPARAM_SCANLIMIT, MAX_SCANS)?;
        let max_pixels = c_int::try_from(limits.max_pixels).unwrap_or(c_int::MAX);
        Self::set(h, tj::TJPARAM_TJPARAM_MAXPIXELS, max_pixels)?;
        let (jw, jh, components, _) = self.header(bytes)?;
        let factor = tj::tjscalingfactor {
            num: 1,
            denom: scale.denominator() as c_int,
        };
        // SAFETY: `h` is live; the factor is one TurboJPEG supports (1/1 to 1/8).
        if unsafe { tj::tj3SetScalingFactor(h, factor) } != 0 {
            return Err(Error::InvalidParameter {
                name: "JPEG scale",
                reason: "libjpeg-turbo cannot decode this file at the requested scale",
            });
        }
        let (w, rows) = (width as usize, height as usize);
        let (pf, bpp, target) = match (components, format) {
            (1, _) => (tj::TJPF_TJPF_GRAY, 1, None),
            (4, f) => (tj::TJPF_TJPF_CMYK, 4, Some(f)),
            (_, PixelFormat::Bgr8) => (tj::TJPF_TJPF_BGR, 3, None),
            (_, PixelFormat::Rgba8) => (tj::TJPF_TJPF_RGBA, 4, None),
            (_, PixelFormat::Bgra8) => (tj::TJPF_TJPF_BGRA, 4, None),
            _ => (tj::TJPF_TJPF_RGB, 3, None),
        };
        let out_bpp = format.bytes_per_pixel().unwrap_or(3);
        if target.is_none() && bpp != out_bpp {
            return Err(Error::FormatMismatch {
                expected: format,
                found: if bpp == 1 {
                    PixelFormat::Gray8
                } else {
                    PixelFormat::Rgb8
                },
            });
        }
        // Where TurboJPEG writes: the caller's buffer, or CMYK scratch we convert from.
        let (buf, pitch) = match target {
            None => (&mut *out, stride),
            Some(_) => {
                let n = limits.check_alloc(w as u64 * rows as u64 * 4)?;
                (crate::buffer::grow(cmyk, n)?, w * 4)
            }
        };
        let needed = if rows == 0 {
            0
        } else {
            (rows - 1) * pitch + w * bpp
        };
        if pitch < w * bpp || buf.len() < needed {
            return Err(Error::BufferTooSmall {
                plane: 0,
                len: buf.len(),
                needed,
            });
        }
        // TurboJPEG writes the region of the TJSCALED(w) x TJSCALED(h) image.
        let scaled = (scale.apply(jw), scale.apply(jh));
        if !region.fits_in(scaled.0, scaled.1) || width == 0 || height == 0 {
            return Err(Error::RectOutOfBounds {
                rect: region,
                width: scaled.0,
                height: scaled.1,
            });
        }
        let whole = (region.x, region.y) == (0, 0) && (width, height) == scaled;
        let crop = if whole {
            tj::tjregion {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            } // TJUNCROPPED
        } else {
            tj::tjregion {
                x: region.x as c_int,
                y: region.y as c_int,
                w: width as c_int,
                h: height as c_int,
            }
        };
        // SAFETY: `h` is live and has read the header (above); TurboJPEG checks
        // the region against the scaled size and the MCU alignment.
        if unsafe { tj::tj3SetCroppingRegion(h, crop) } != 0 {
            return Err(Error::InvalidParameter {
                name: "libjpeg-turbo",
                reason: "the region's left edge is not on an MCU boundary",
            });
        }
        let len = jpeg_len(bytes)?;
        let pitch_c = c_int::try_from(pitch).map_err(|_| Error::StrideTooSmall {
            plane: 0,
            stride: pitch,
            min: w * bpp,
        })?;
        // SAFETY: `buf` holds `needed` bytes: `rows` rows of `w * bpp` bytes,
        // `pitch` apart, exactly what TurboJPEG writes for this header and scale
        // (checked above); `bytes` is valid for `len` bytes.
        let rc = unsafe {
            tj::tj3Decompress8(
                h,
                bytes.as_ptr(),
                len as _,
                buf.as_mut_ptr(),
                pitch_c,
                pf as c_int,
            )
        };
        if rc != 0
            && let Some(e) = Self::failure(h, strict)
        {
            return Err(e);
        }
        if let Some(f) = target {
            cmyk_to_rgb(&cmyk[..w * rows * 4], out, stride, w, f);
        }
        Ok(())
    }
}

/// The length of `bytes` as TurboJPEG takes it.
fn jpeg_len(bytes: &[u8]) -> Result<c_int> {
    c_int::try_from(bytes.len()).map_err(|_| Error::AllocationTooLarge {
        bytes: bytes.len() as u64,
        limit: c_int::MAX as u64,
    })
}

/// Pillow's `CMYK;I` unpacking (the Adobe convention: stored values inverted)
/// followed by its `cmyk2rgb`, into RGB, BGR, RGBA or BGRA rows.
fn cmyk_to_rgb(cmyk: &[u8], out: &mut [u8], stride: usize, width: usize, format: PixelFormat) {
    let bpp = format.bytes_per_pixel().unwrap_or(3);
    let bgr = matches!(format, PixelFormat::Bgr8 | PixelFormat::Bgra8);
    for (src, dst) in cmyk.chunks_exact(width * 4).zip(out.chunks_mut(stride)) {
        for (p, o) in src.chunks_exact(4).zip(dst.chunks_exact_mut(bpp)) {
            let nk = i32::from(p[3]);
            let channel = |raw: u8| {
                let v = 255 - i32::from(raw);
                let t = v * nk + 128;
                (nk - (((t >> 8) + t) >> 8)).clamp(0, 255) as u8
            };
            let (r, g, b) = (channel(p[0]), channel(p[1]), channel(p[2]));
            let rgb = if bgr { [b, g, r] } else { [r, g, b] };
            o[..3].copy_from_slice(&rgb);
            if bpp == 4 {
                o[3] = 255;
            }
        }
    }
}
