//! Neighbourhood adjustments: `ImageEnhance.Sharpness` (Pillow's 3x3
//! `SMOOTH` filter, then a blend) and torchvision's Gaussian blur.

use super::{blend, channels, copy};
use crate::{Error, ImageView, ImageViewMut, Result};

/// `ImageEnhance.Sharpness(image).enhance(factor)` (torchvision's PIL
/// `adjust_sharpness`): a blend with Pillow's `SMOOTH` filter of the image
/// (3x3 kernel `1 1 1 / 1 5 1 / 1 1 1` over 13 in float32, the outermost
/// rows and columns left as they are). 0 gives the smoothed image, 1 the
/// image, 2 a sharpened one.
///
/// ```
/// use tensorprep::adjust::sharpness;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// // A bright dot in the middle of a 3x3 gray image, smoothed.
/// let src = [0u8, 0, 0, 0, 130, 0, 0, 0, 0];
/// let mut out = [0u8; 9];
/// let view = ImageView::new(PixelFormat::Gray8, 3, 3, &src)?;
/// sharpness(&view, &mut ImageViewMut::new(PixelFormat::Gray8, 3, 3, &mut out)?, 0.0)?;
/// assert_eq!(out[4], 50);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn sharpness(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, factor: f32) -> Result<()> {
    let channels = channels(src, dst, "sharpness")?;
    if !factor.is_finite() || factor < 0.0 {
        return Err(Error::InvalidParameter {
            name: "sharpness",
            reason: "the factor must be finite and not negative",
        });
    }
    // The border (and an image too small to filter) is its own smoothing,
    // and a blend of a value with itself is that value.
    copy(src, dst);
    let (w, h) = (src.width() as usize, src.height() as usize);
    if w < 3 || h < 3 {
        return Ok(());
    }
    let n = channels.count;
    // Pillow divides the kernel by its scale in float32.
    let (side, centre) = (1.0f32 / 13.0, 5.0f32 / 13.0);
    for y in 1..h - 1 {
        let above = src.row(y as u32 - 1);
        let row = src.row(y as u32);
        let below = src.row(y as u32 + 1);
        let out = dst.row_mut(y as u32);
        for x in n..(w - 1) * n {
            // Pillow's ImagingFilter3x3: rounding offset, then the row
            // below, this row and the row above, each left to right.
            let three = |r: &[u8], k: f32| {
                f32::from(r[x - n]) * side + f32::from(r[x]) * k + f32::from(r[x + n]) * side
            };
            let mut ss = 0.5f32;
            ss += three(below, side);
            ss += three(row, centre);
            ss += three(above, side);
            let smooth = ss.clamp(0.0, 255.0) as u8;
            out[x] = blend(smooth, row[x], factor);
        }
    }
    Ok(())
}

/// The longest Gaussian kernel (taps).
pub const MAX_GAUSSIAN_TAPS: usize = 255;

/// torchvision's Gaussian kernel: `size` taps (odd) at `-(size-1)/2 ..=
/// (size-1)/2`, `exp(-0.5 * (x / sigma)^2)` normalized to sum 1, in
/// float32.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianKernel {
    taps: [f32; MAX_GAUSSIAN_TAPS],
    size: usize,
}

impl GaussianKernel {
    /// The kernel of `size` taps (odd, at most [`MAX_GAUSSIAN_TAPS`]) and
    /// standard deviation `sigma` (positive).
    ///
    /// ```
    /// use tensorprep::adjust::GaussianKernel;
    ///
    /// let k = GaussianKernel::new(3, 1.0)?;
    /// assert!((k.taps().iter().sum::<f32>() - 1.0).abs() < 1e-6);
    /// assert_eq!(k.taps()[0], k.taps()[2]);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn new(size: usize, sigma: f32) -> Result<GaussianKernel> {
        if size.is_multiple_of(2) || size > MAX_GAUSSIAN_TAPS {
            return Err(Error::InvalidParameter {
                name: "gaussian blur",
                reason: "the kernel size must be odd and at most 255",
            });
        }
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(Error::InvalidParameter {
                name: "gaussian blur",
                reason: "sigma must be finite and positive",
            });
        }
        let mut taps = [0f32; MAX_GAUSSIAN_TAPS];
        let half = (size - 1) as f32 * 0.5;
        for (i, t) in taps[..size].iter_mut().enumerate() {
            let x = (i as f32 - half) / sigma;
            *t = libm::expf(-0.5 * (x * x));
        }
        let sum: f32 = taps[..size].iter().sum();
        taps[..size].iter_mut().for_each(|t| *t /= sum);
        Ok(GaussianKernel { taps, size })
    }

    /// The taps, first to last.
    pub fn taps(&self) -> &[f32] {
        &self.taps[..self.size]
    }
}

/// Mirrors `i` into `0..n` without repeating the edge (torch's `reflect`
/// padding; `i` is at most `n - 1` outside).
fn reflect(i: isize, n: usize) -> usize {
    let n = n as isize;
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    };
    r as usize
}

/// torchvision's `gaussian_blur(image, kernel_size, sigma)` on 8-bit
/// pixels: `across` along rows, `down` along columns, reflect padding, the
/// kernels in float32, rounded half to even. `scratch` holds one row of
/// float32 values (at least `width * channels`). Each kernel's half must be
/// shorter than its side of the image, as torch's reflect padding requires.
///
/// torch convolves with the 2-D kernel in an order of its backend's
/// choosing; this runs it as two 1-D passes. A sum within a rounding step
/// of a half may round the other way: at most one level from torchvision's
/// (none of the 9,216 bytes of the reference cases differ).
///
/// ```
/// use tensorprep::adjust::{GaussianKernel, gaussian_blur};
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// let src = [0u8, 0, 90, 0, 0];
/// let mut out = [0u8; 5];
/// let mut scratch = [0f32; 5];
/// let view = ImageView::new(PixelFormat::Gray8, 5, 1, &src)?;
/// // A 1-pixel-high image has no room for a vertical kernel.
/// let kernel = GaussianKernel::new(3, 1.0)?;
/// let mut dst = ImageViewMut::new(PixelFormat::Gray8, 5, 1, &mut out)?;
/// assert!(gaussian_blur(&view, &mut dst, &kernel, &kernel, &mut scratch).is_err());
/// // A 3x1 kernel blurs along the row only.
/// let one = GaussianKernel::new(1, 1.0)?;
/// let mut dst = ImageViewMut::new(PixelFormat::Gray8, 5, 1, &mut out)?;
/// gaussian_blur(&view, &mut dst, &kernel, &one, &mut scratch)?;
/// assert_eq!(out, [0, 25, 41, 25, 0]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn gaussian_blur(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    across: &GaussianKernel,
    down: &GaussianKernel,
    scratch: &mut [f32],
) -> Result<()> {
    let channels = channels(src, dst, "gaussian blur")?;
    let (w, h) = (src.width() as usize, src.height() as usize);
    let (half_x, half_y) = (across.size / 2, down.size / 2);
    if half_x >= w || half_y >= h {
        return Err(Error::InvalidParameter {
            name: "gaussian blur",
            reason: "the kernel's half must be shorter than each side of the image",
        });
    }
    let n = channels.count;
    let row_len = w * n;
    let len = scratch.len();
    let column = scratch.get_mut(..row_len).ok_or(Error::BufferTooSmall {
        plane: 0,
        len,
        needed: row_len,
    })?;
    for y in 0..h {
        // Vertical pass into the scratch row.
        column.fill(0.0);
        for (k, &t) in down.taps().iter().enumerate() {
            let sy = reflect(y as isize + k as isize - half_y as isize, h);
            for (c, &v) in column.iter_mut().zip(src.row(sy as u32)) {
                *c += f32::from(v) * t;
            }
        }
        // Horizontal pass into the output row.
        let out = dst.row_mut(y as u32);
        for x in 0..w {
            for ch in 0..n {
                let mut s = 0f32;
                for (k, &t) in across.taps().iter().enumerate() {
                    let sx = reflect(x as isize + k as isize - half_x as isize, w);
                    s += column[sx * n + ch] * t;
                }
                out[x * n + ch] = crate::math::rintf(s).clamp(0.0, 255.0) as u8;
            }
        }
    }
    Ok(())
}
