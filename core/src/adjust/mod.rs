//! Adjustments of 8-bit gray, RGB and BGR images as Pillow computes them:
//! the PIL path of torchvision's colour transforms, so a drawn parameter
//! gives torchvision's bytes. Caller-provided destinations, no allocation.
//!
//! - point tables ([`Point`]): `invert`, `posterize`, `solarize`,
//!   `adjust_brightness`;
//! - from the image's histogram: [`autocontrast`], [`equalize`],
//!   [`contrast`];
//! - per pixel colour: [`saturation`], [`hue`], [`grayscale`];
//! - neighbourhoods: [`sharpness`], [`gaussian_blur`] (within one level).
//!
//! ```
//! use tensorprep::adjust::{Point, point};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! let src = [0u8, 100, 200, 255];
//! let mut out = [0u8; 4];
//! let view = ImageView::new(PixelFormat::Gray8, 4, 1, &src)?;
//! let mut dst = ImageViewMut::new(PixelFormat::Gray8, 4, 1, &mut out)?;
//! point(&view, &mut dst, Point::Solarize { threshold: 128 })?;
//! assert_eq!(out, [0, 100, 55, 0]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod color;
mod filter;
mod histogram;

pub use color::{grayscale, hue, permute_channels, saturation};
pub use filter::{GaussianKernel, MAX_GAUSSIAN_TAPS, gaussian_blur, sharpness};
pub use histogram::{autocontrast, contrast, equalize};

use crate::{Error, ImageView, ImageViewMut, PixelFormat, Result};

/// A point adjustment.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Point {
    /// `255 - v` (`ImageOps.invert`).
    Invert,
    /// Keeps the top `bits` bits, 0 to 8 (`ImageOps.posterize`; 0 gives
    /// black, as AugMix's lowest bins ask).
    Posterize {
        /// Bits kept.
        bits: u8,
    },
    /// `255 - v` for `v >= threshold` (`ImageOps.solarize`).
    Solarize {
        /// The first value inverted.
        threshold: u8,
    },
    /// `ImageEnhance.Brightness(img).enhance(factor)`: Pillow's blend with
    /// black, `v * factor` in float32, truncated, clipped to 0..=255.
    Brightness {
        /// 0 gives black, 1 the image; finite and not negative.
        factor: f32,
    },
}

impl Point {
    /// `ImageOps.solarize` with a fractional threshold (as torchvision's
    /// policies pass it): `i < threshold` holds for the bytes below its
    /// ceiling, so the first inverted value is the ceiling (255 at most).
    ///
    /// ```
    /// use tensorprep::adjust::Point;
    ///
    /// assert_eq!(Point::solarize_from(127.5), Point::Solarize { threshold: 128 });
    /// ```
    pub fn solarize_from(threshold: f64) -> Point {
        Point::Solarize {
            threshold: libm::ceil(threshold).clamp(0.0, 255.0) as u8,
        }
    }

    /// The table: output byte for each input byte.
    pub fn table(self) -> Result<[u8; 256]> {
        let mut t = [0u8; 256];
        match self {
            Point::Invert => t
                .iter_mut()
                .enumerate()
                .for_each(|(v, o)| *o = 255 - v as u8),
            Point::Posterize { bits } => {
                if bits > 8 {
                    return Err(Error::InvalidParameter {
                        name: "posterize",
                        reason: "bits must be 0 to 8",
                    });
                }
                let mask = (0xff00u16 >> bits) as u8;
                t.iter_mut()
                    .enumerate()
                    .for_each(|(v, o)| *o = v as u8 & mask);
            }
            Point::Solarize { threshold } => t.iter_mut().enumerate().for_each(|(v, o)| {
                let v = v as u8;
                *o = if v < threshold { v } else { 255 - v };
            }),
            Point::Brightness { factor } => {
                if !factor.is_finite() || factor < 0.0 {
                    return Err(Error::InvalidParameter {
                        name: "brightness",
                        reason: "the factor must be finite and not negative",
                    });
                }
                t.iter_mut()
                    .enumerate()
                    .for_each(|(v, o)| *o = blend(0, v as u8, factor));
            }
        }
        Ok(t)
    }
}

/// Pillow's `ImagingBlend` for one byte: `a + alpha * (b - a)` in float32,
/// truncated toward zero; outside `[0, 1]` clipped to 0..=255 first.
#[inline(always)]
pub(crate) fn blend(a: u8, b: u8, alpha: f32) -> u8 {
    let v = f32::from(a) + alpha * (f32::from(b) - f32::from(a));
    let v = if v > 255.0 { 255.0 } else { v };
    let v = if v < 0.0 { 0.0 } else { v };
    // SAFETY: `alpha` is finite (every caller checks its factor), so `v` is
    // a finite value clipped to 0..=255 and fits an i32; the unchecked cast
    // truncates as Pillow's (UINT8) does, without the saturating cast's
    // branches (augment_speed: saturation 0.70x -> 1.60x of torchvision).
    unsafe { v.to_int_unchecked::<i32>() as u8 }
}

/// Applies `adjustment` to `src`, writing `dst` (same format and size;
/// Gray8, Rgb8 or Bgr8).
pub fn point(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, adjustment: Point) -> Result<()> {
    let table = adjustment.table()?;
    apply_table(src, dst, &table)
}

/// Maps every byte of `src` through `table` into `dst` (same format and
/// size; Gray8, Rgb8 or Bgr8).
pub fn apply_table(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    table: &[u8; 256],
) -> Result<()> {
    channels(src, &*dst, "point adjustment")?;
    for y in 0..src.height() {
        for (o, &v) in dst.row_mut(y).iter_mut().zip(src.row(y)) {
            *o = table[usize::from(v)];
        }
    }
    Ok(())
}

/// How a format the adjustments take lays out its channels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Channels {
    /// Bytes per pixel: 1 or 3.
    pub(crate) count: usize,
    /// Where red, green and blue sit (all 0 for gray).
    pub(crate) rgb: [usize; 3],
}

impl Channels {
    /// Pillow's `convert("L")` of one pixel.
    #[inline(always)]
    pub(crate) fn luma(self, px: &[u8]) -> u8 {
        if self.count == 1 {
            px[0]
        } else {
            crate::color::luma601(px[self.rgb[0]], px[self.rgb[1]], px[self.rgb[2]])
        }
    }
}

/// The channels of `format` (Gray8, Rgb8 or Bgr8) for the op `op`.
pub(crate) fn channels_of(format: PixelFormat, op: &'static str) -> Result<Channels> {
    match format {
        PixelFormat::Gray8 => Ok(Channels {
            count: 1,
            rgb: [0; 3],
        }),
        PixelFormat::Rgb8 => Ok(Channels {
            count: 3,
            rgb: [0, 1, 2],
        }),
        PixelFormat::Bgr8 => Ok(Channels {
            count: 3,
            rgb: [2, 1, 0],
        }),
        _ => Err(Error::UnsupportedFormat { op, format }),
    }
}

/// The channels of `src`'s format (Gray8, Rgb8 or Bgr8) for the adjustment
/// `op`, once `dst` is checked to have the same format and size.
pub(crate) fn channels(
    src: &ImageView<'_>,
    dst: &ImageViewMut<'_>,
    op: &'static str,
) -> Result<Channels> {
    let format = src.format();
    let channels = channels_of(format, op)?;
    if dst.format() != format {
        return Err(Error::FormatMismatch {
            expected: format,
            found: dst.format(),
        });
    }
    if (dst.width(), dst.height()) != (src.width(), src.height()) {
        return Err(Error::SizeMismatch {
            expected: (src.width(), src.height()),
            found: (dst.width(), dst.height()),
        });
    }
    Ok(channels)
}

/// Maps channel `c` of every pixel through `tables[c]`.
pub(crate) fn apply_per_channel(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    tables: &[[u8; 256]; 3],
    channels: Channels,
) {
    let n = channels.count;
    for y in 0..src.height() {
        let out = dst.row_mut(y);
        for (o, i) in out.chunks_exact_mut(n).zip(src.row(y).chunks_exact(n)) {
            for c in 0..n {
                o[c] = tables[c][usize::from(i[c])];
            }
        }
    }
}

/// Copies `src` into `dst` (checked to match).
pub(crate) fn copy(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>) {
    for y in 0..src.height() {
        dst.row_mut(y).copy_from_slice(src.row(y));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables at their edges: posterize 8 and brightness 1 are the
    /// identity, posterize 1 keeps the top bit, solarize 0 inverts all.
    #[test]
    fn tables_at_their_edges() {
        let id: [u8; 256] = core::array::from_fn(|v| v as u8);
        assert_eq!(Point::Posterize { bits: 8 }.table().unwrap(), id);
        assert_eq!(Point::Brightness { factor: 1.0 }.table().unwrap(), id);
        let top = Point::Posterize { bits: 1 }.table().unwrap();
        assert_eq!((top[127], top[128], top[255]), (0, 128, 128));
        assert_eq!(
            Point::Solarize { threshold: 0 }.table().unwrap(),
            Point::Invert.table().unwrap()
        );
        assert!(Point::Posterize { bits: 9 }.table().is_err());
        assert_eq!(Point::Posterize { bits: 0 }.table().unwrap(), [0; 256]);
        assert!(Point::Brightness { factor: f32::NAN }.table().is_err());
        // Extrapolation clips: 200 * 2 is 255, 100 * 1.5 is 150.
        let b = Point::Brightness { factor: 1.5 }.table().unwrap();
        assert_eq!((b[100], b[200]), (150, 255));
    }
}
