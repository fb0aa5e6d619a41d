//! Warps as Pillow's `Image.transform` computes them: each output pixel's
//! centre mapped through an inverse affine or perspective matrix to a
//! source position, read with nearest or bilinear interpolation, a fill
//! colour where it falls outside. Pillow's arithmetic step for step (its
//! scale-only and 16.16 fixed-point nearest paths, its `COORD` and `FLOOR`,
//! its bilinear edge rules), so torchvision's PIL `rotate`, `affine` and
//! `perspective` give the same bytes for the same drawn parameters. The
//! matrices torchvision and Pillow build are in [`Warp::rotate`],
//! [`Warp::affine`] and [`Warp::perspective`].
//!
//! ```
//! use tensorprep::warp::{Interpolation, Warp, warp};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! // Rotate a 2x2 gray image by 90 degrees counter-clockwise, as Pillow.
//! let src = ImageView::new(PixelFormat::Gray8, 2, 2, &[1, 2, 3, 4])?;
//! let (matrix, size) = Warp::rotate(90.0, None, false, (2, 2))?;
//! assert_eq!(size, (2, 2));
//! let mut out = [0u8; 4];
//! let mut dst = ImageViewMut::new(PixelFormat::Gray8, 2, 2, &mut out)?;
//! warp(&src, &mut dst, &matrix, Interpolation::Nearest, [0; 3])?;
//! assert_eq!(out, [2, 4, 1, 3]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod matrix;

#[cfg(feature = "alloc")]
pub(crate) use matrix::{py_mod, torchvision_affine, torchvision_perspective_inverse};

use crate::adjust::channels_of;
use crate::{Error, ImageView, ImageViewMut, Result};

/// How a warp reads the source between pixel centres.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Interpolation {
    /// The pixel the position falls in (`Image.NEAREST`).
    Nearest,
    /// Pillow's 2x2 linear interpolation (`Image.BILINEAR`).
    Bilinear,
}

/// An inverse mapping from output to source coordinates, Pillow's `data`
/// of `Image.transform`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Warp {
    /// `(a, b, c, d, e, f)`: the source of `(x, y)` is
    /// `(a x + b y + c, d x + e y + f)` (`Transform.AFFINE`).
    Affine([f64; 6]),
    /// `(a, b, c, d, e, f, g, h)`: `((a x + b y + c) / (g x + h y + 1),
    /// (d x + e y + f) / (g x + h y + 1))` (`Transform.PERSPECTIVE`).
    Perspective([f64; 8]),
}

impl Warp {
    /// Refuses a matrix with a NaN or an infinity.
    fn check(&self) -> Result<()> {
        let finite = match self {
            Warp::Affine(a) => a.iter().all(|v| v.is_finite()),
            Warp::Perspective(a) => a.iter().all(|v| v.is_finite()),
        };
        if finite {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "warp",
                reason: "the matrix holds a NaN or an infinity",
            })
        }
    }
}

/// Pillow's `COORD`: -1 below zero, else truncated.
#[inline(always)]
fn coord(v: f64) -> i64 {
    if v < 0.0 { -1 } else { v as i64 }
}

/// Pillow's `FLOOR` (as an integer).
#[inline(always)]
fn floor(v: f64) -> i64 {
    if v < 0.0 {
        crate::math::floor(v) as i64
    } else {
        v as i64
    }
}

/// Warps `src` into `dst` (same format: Gray8, Rgb8 or Bgr8; any size)
/// through `matrix`, reading with `interpolation`; positions outside the
/// source get `fill` (in the format's channel order; gray takes `fill[0]`).
pub fn warp(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    matrix: &Warp,
    interpolation: Interpolation,
    fill: [u8; 3],
) -> Result<()> {
    let n = channels_of(src.format(), "warp")?.count;
    if dst.format() != src.format() {
        return Err(Error::FormatMismatch {
            expected: src.format(),
            found: dst.format(),
        });
    }
    matrix.check()?;
    let fill = &fill[..n];
    match (matrix, interpolation) {
        (Warp::Affine(a), Interpolation::Nearest) => affine_nearest(src, dst, a, fill, n),
        (Warp::Affine(a), Interpolation::Bilinear) => {
            generic(src, dst, fill, n, bilinear, |x, y| affine_point(a, x, y))
        }
        (Warp::Perspective(a), Interpolation::Nearest) => {
            generic(src, dst, fill, n, nearest, |x, y| {
                perspective_point(a, x, y)
            })
        }
        (Warp::Perspective(a), Interpolation::Bilinear) => {
            generic(src, dst, fill, n, bilinear, |x, y| {
                perspective_point(a, x, y)
            })
        }
    }
    Ok(())
}

/// Pillow's `affine_transform`: the source of output pixel `(x, y)`'s centre.
#[inline(always)]
fn affine_point(a: &[f64; 6], x: usize, y: usize) -> (f64, f64) {
    let (xin, yin) = (x as f64 + 0.5, y as f64 + 0.5);
    (
        a[0] * xin + a[1] * yin + a[2],
        a[3] * xin + a[4] * yin + a[5],
    )
}

/// Pillow's `perspective_transform`.
#[inline(always)]
fn perspective_point(a: &[f64; 8], x: usize, y: usize) -> (f64, f64) {
    let (xin, yin) = (x as f64 + 0.5, y as f64 + 0.5);
    let w = a[6] * xin + a[7] * yin + 1.0;
    (
        (a[0] * xin + a[1] * yin + a[2]) / w,
        (a[3] * xin + a[4] * yin + a[5]) / w,
    )
}

/// The source's pixels, addressed directly (no per-pixel row lookup).
struct Source<'a> {
    data: &'a [u8],
    stride: usize,
    w: i64,
    h: i64,
    n: usize,
}

impl<'a> Source<'a> {
    fn new(src: &ImageView<'a>, n: usize) -> Source<'a> {
        let plane = src.plane(0);
        Source {
            data: plane.data,
            stride: plane.stride,
            w: i64::from(src.width()),
            h: i64::from(src.height()),
            n,
        }
    }

    /// The pixel at `(x, y)`, inside the image.
    #[inline(always)]
    fn at(&self, x: i64, y: i64) -> &'a [u8] {
        let start = y as usize * self.stride + x as usize * self.n;
        &self.data[start..start + self.n]
    }

    #[inline(always)]
    fn inside(&self, x: i64, y: i64) -> bool {
        x >= 0 && y >= 0 && x < self.w && y < self.h
    }
}

/// Copies one pixel (1 or 3 bytes; fixed-size copies, not a `memcpy`).
#[inline(always)]
fn copy_px(out: &mut [u8], px: &[u8]) {
    match (out, px) {
        ([o0, o1, o2], [p0, p1, p2]) => (*o0, *o1, *o2) = (*p0, *p1, *p2),
        ([o0], [p0]) => *o0 = *p0,
        (out, px) => out.copy_from_slice(px),
    }
}

/// A filter of Pillow's generic transform: writes the pixel read at
/// `(x, y)` into `out`, or returns false when it falls outside.
type Filter = fn(&Source<'_>, f64, f64, &mut [u8]) -> bool;

/// Pillow's `nearest_filter8` / `nearest_filter32`.
fn nearest(src: &Source<'_>, x: f64, y: f64, out: &mut [u8]) -> bool {
    let (x, y) = (coord(x), coord(y));
    if !src.inside(x, y) {
        return false;
    }
    copy_px(out, src.at(x, y));
    true
}

/// Pillow's `bilinear_filter8` / `bilinear_filter32RGB`: the position's
/// 2x2 neighbourhood in double precision, edges clamped, truncated.
fn bilinear(src: &Source<'_>, x: f64, y: f64, out: &mut [u8]) -> bool {
    let (w, h) = (src.w, src.h);
    // Pillow compares the unshifted position against the size.
    if !(x >= 0.0 && y >= 0.0 && x < w as f64 && y < h as f64) {
        return false;
    }
    let (x, y) = (x - 0.5, y - 0.5);
    let (xi, yi) = (floor(x), floor(y));
    let (dx, dy) = (x - xi as f64, y - yi as f64);
    let (x0, x1) = (xi.clamp(0, w - 1), (xi + 1).clamp(0, w - 1));
    let y0 = yi.clamp(0, h - 1);
    let (a, b) = (src.at(x0, y0), src.at(x1, y0));
    let below = (yi + 1 >= 0 && yi + 1 < h).then(|| (src.at(x0, yi + 1), src.at(x1, yi + 1)));
    let lerp = |a: f64, b: f64, d: f64| a + (b - a) * d;
    for (c, o) in out.iter_mut().enumerate() {
        let v1 = lerp(f64::from(a[c]), f64::from(b[c]), dx);
        let v2 = match below {
            Some((c0, c1)) => lerp(f64::from(c0[c]), f64::from(c1[c]), dx),
            None => v1,
        };
        *o = lerp(v1, v2, dy) as u8;
    }
    true
}

/// Pillow's `ImagingGenericTransform`: every output pixel mapped by
/// `point`, read by `filter`, filled where it falls outside.
fn generic(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    fill: &[u8],
    n: usize,
    filter: Filter,
    point: impl Fn(usize, usize) -> (f64, f64),
) {
    let source = Source::new(src, n);
    for y in 0..dst.height() as usize {
        let row = dst.row_mut(y as u32);
        for (x, out) in row.chunks_exact_mut(n).enumerate() {
            let (sx, sy) = point(x, y);
            if !filter(&source, sx, sy, out) {
                copy_px(out, fill);
            }
        }
    }
}

/// Pillow's `ImagingTransformAffine` with the nearest filter: the
/// scale-only path, the 16.16 fixed-point path, or the accumulating float
/// path, chosen as Pillow chooses.
fn affine_nearest(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    a: &[f64; 6],
    fill: &[u8],
    n: usize,
) {
    let source = Source::new(src, n);
    let (w, h) = (dst.width() as usize, dst.height() as usize);
    let put = |out: &mut [u8], sx: i64, sy: i64| {
        if source.inside(sx, sy) {
            copy_px(out, source.at(sx, sy));
        } else {
            copy_px(out, fill);
        }
    };
    if a[1] == 0.0 && a[3] == 0.0 {
        // ImagingScaleAffine: positions accumulated in doubles.
        let mut yo = a[5] + a[4] * 0.5;
        for y in 0..h {
            let sy = coord(yo);
            let mut xo = a[2] + a[0] * 0.5;
            for out in dst.row_mut(y as u32).chunks_exact_mut(n) {
                put(out, coord(xo), sy);
                xo += a[0];
            }
            yo += a[4];
        }
        return;
    }
    let fits = |x: f64, y: f64| {
        libm::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0
            && libm::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0
    };
    let (fw, fh) = (w as f64, h as f64);
    if fits(0.0, 0.0) && fits(fw, fh) && fits(0.0, fh) && fits(fw, 0.0) {
        // affine_fixed: 16.16 fixed point.
        let fix = |v: f64| floor(v * 65536.0 + 0.5) as i32;
        let (a0, a1, a3, a4) = (fix(a[0]), fix(a[1]), fix(a[3]), fix(a[4]));
        let mut a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
        let mut a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
        for y in 0..h {
            let (mut xx, mut yy) = (a2, a5);
            for out in dst.row_mut(y as u32).chunks_exact_mut(n) {
                put(out, i64::from(xx >> 16), i64::from(yy >> 16));
                xx = xx.wrapping_add(a0);
                yy = yy.wrapping_add(a3);
            }
            a2 = a2.wrapping_add(a1);
            a5 = a5.wrapping_add(a4);
        }
        return;
    }
    // The float path for positions beyond fixed point's range.
    let mut xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
    let mut yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
    for y in 0..h {
        let (mut xx, mut yy) = (xo, yo);
        for out in dst.row_mut(y as u32).chunks_exact_mut(n) {
            put(out, coord(xx), coord(yy));
            xx += a[0];
            yy += a[3];
        }
        xo += a[1];
        yo += a[4];
    }
}
