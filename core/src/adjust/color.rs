//! Colour adjustments of RGB pixels as Pillow computes them: saturation
//! (`ImageEnhance.Color`), torchvision's hue shift through Pillow's HSV, and
//! the gray conversion. Gray images come back unchanged, as torchvision's
//! PIL path leaves them.

use super::{blend, channels, copy};
use crate::{Error, ImageView, ImageViewMut, Result};

/// `ImageEnhance.Color(image).enhance(factor)` (torchvision's PIL
/// `adjust_saturation`): each pixel blended with its own luma (Pillow's
/// `convert("L")`), in Pillow's float32 blend. 0 gives gray, 1 the image;
/// a gray image is returned as it is.
///
/// ```
/// use tensorprep::adjust::saturation;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// let src = [200u8, 100, 50];
/// let mut out = [0u8; 3];
/// let view = ImageView::new(PixelFormat::Rgb8, 1, 1, &src)?;
/// saturation(&view, &mut ImageViewMut::new(PixelFormat::Rgb8, 1, 1, &mut out)?, 0.0)?;
/// assert_eq!(out, [124; 3]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn saturation(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, factor: f32) -> Result<()> {
    let channels = channels(src, dst, "saturation")?;
    if !factor.is_finite() || factor < 0.0 {
        return Err(Error::InvalidParameter {
            name: "saturation",
            reason: "the factor must be finite and not negative",
        });
    }
    if channels.count == 1 {
        copy(src, dst);
        return Ok(());
    }
    let [r, g, b] = channels.rgb;
    // Blocks of 64 pixels: their lumas, tripled, then one flat blend the
    // compiler vectorizes.
    let mut gray = [0u8; 192];
    for y in 0..src.height() {
        for (o, i) in dst.row_mut(y).chunks_mut(192).zip(src.row(y).chunks(192)) {
            for (l, px) in gray.chunks_exact_mut(3).zip(i.chunks_exact(3)) {
                let v = crate::color::luma601(px[r], px[g], px[b]);
                (l[0], l[1], l[2]) = (v, v, v);
            }
            for ((o, &v), &l) in o.iter_mut().zip(i).zip(&gray) {
                *o = blend(l, v, factor);
            }
        }
    }
    Ok(())
}

/// torchvision's PIL `adjust_hue(image, factor)`: the image converted to
/// Pillow's 8-bit HSV, `uint8(factor * 255)` added to the hue modulo 256,
/// converted back. `factor` is in `-0.5..=0.5`; a gray image is returned
/// as it is.
///
/// ```
/// use tensorprep::adjust::hue;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// // Half a turn of Pillow's 8-bit hue: red becomes (nearly) cyan.
/// let src = [255u8, 0, 0];
/// let mut out = [0u8; 3];
/// let view = ImageView::new(PixelFormat::Rgb8, 1, 1, &src)?;
/// hue(&view, &mut ImageViewMut::new(PixelFormat::Rgb8, 1, 1, &mut out)?, 0.5)?;
/// assert_eq!(out, [0, 255, 252]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn hue(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, factor: f32) -> Result<()> {
    let channels = channels(src, dst, "hue")?;
    if !(-0.5..=0.5).contains(&factor) {
        return Err(Error::InvalidParameter {
            name: "hue",
            reason: "the factor must be in -0.5..=0.5",
        });
    }
    if channels.count == 1 {
        copy(src, dst);
        return Ok(());
    }
    let shift = hue_shift(factor);
    per_rgb_pixel(src, dst, channels.rgb, |r, g, b| {
        let (h, s, v) = rgb_to_hsv(r, g, b);
        hsv_to_rgb(h.wrapping_add(shift), s, v)
    });
    Ok(())
}

/// numpy's `np.array(factor * 255).astype(np.uint8)`: the double truncated
/// toward zero and wrapped to 8 bits (what a negative factor gives on the
/// platforms torchvision runs on).
fn hue_shift(factor: f32) -> u8 {
    // Python's float is the double the caller drew; the f32 factor of a
    // draw in -0.5..=0.5 truncates to the same integer.
    (f64::from(factor) * 255.0) as i32 as u8
}

/// Pillow's `rgb2hsv`: hue, saturation and value as bytes.
fn rgb_to_hsv(r: u8, g: u8, b: u8) -> (u8, u8, u8) {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max == min {
        return (0, 0, max);
    }
    // Pillow's floats and doubles, step for step.
    let cr = f32::from(max - min);
    let s = cr / f32::from(max);
    let rc = f32::from(max - r) / cr;
    let gc = f32::from(max - g) / cr;
    let bc = f32::from(max - b) / cr;
    let h: f32 = if r == max {
        bc - gc
    } else if g == max {
        (2.0 + f64::from(rc) - f64::from(bc)) as f32
    } else {
        (4.0 + f64::from(gc) - f64::from(rc)) as f32
    };
    // fmod(y, 1) of a y in [0, 2): y - 1 is exact there (Sterbenz).
    let y = f64::from(h) / 6.0 + 1.0;
    let h = (if y >= 1.0 { y - 1.0 } else { y }) as f32;
    let byte = |v: f32| ((f64::from(v) * 255.0) as i32).clamp(0, 255) as u8;
    (byte(h), byte(s), max)
}

/// Pillow's `hsv2rgb`.
fn hsv_to_rgb(h: u8, s: u8, v: u8) -> (u8, u8, u8) {
    if s == 0 {
        return (v, v, v);
    }
    let h6 = f64::from(h) * 6.0 / 255.0;
    // h6 >= 0: truncation is the floor.
    let i = h6 as i32;
    let f = (h6 - f64::from(i as f32)) as f32;
    let fs = (f64::from(s) / 255.0) as f32;
    let v64 = f64::from(v);
    let byte = |x: f64| (round_half_away(x) as i32).clamp(0, 255) as u8;
    let p = byte(v64 * (1.0 - f64::from(fs)));
    let q = byte(v64 * (1.0 - f64::from(fs * f)));
    let t = byte(v64 * (1.0 - f64::from(fs) * (1.0 - f64::from(f))));
    match i % 6 {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    }
}

/// C's `round`: half away from zero.
fn round_half_away(x: f64) -> f64 {
    crate::math::round(x)
}

/// `convert("L")` kept in the image's format (torchvision's PIL
/// `rgb_to_grayscale(image, num_output_channels=3)`, what `Grayscale(3)`
/// and `RandomGrayscale` do): each pixel's luma in all three channels.
///
/// ```
/// use tensorprep::adjust::grayscale;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// let src = [200u8, 100, 50];
/// let mut out = [0u8; 3];
/// let view = ImageView::new(PixelFormat::Rgb8, 1, 1, &src)?;
/// grayscale(&view, &mut ImageViewMut::new(PixelFormat::Rgb8, 1, 1, &mut out)?)?;
/// assert_eq!(out, [124; 3]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn grayscale(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>) -> Result<()> {
    let channels = channels(src, dst, "grayscale")?;
    if channels.count == 1 {
        copy(src, dst);
        return Ok(());
    }
    per_rgb_pixel(src, dst, channels.rgb, |r, g, b| {
        let l = crate::color::luma601(r, g, b);
        (l, l, l)
    });
    Ok(())
}

/// Maps each pixel of a 3-channel `src` (red, green and blue at `rgb`)
/// through `f` into `dst`.
#[inline(always)]
fn per_rgb_pixel(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    [r, g, b]: [usize; 3],
    f: impl Fn(u8, u8, u8) -> (u8, u8, u8),
) {
    for y in 0..src.height() {
        for (o, i) in dst
            .row_mut(y)
            .chunks_exact_mut(3)
            .zip(src.row(y).chunks_exact(3))
        {
            (o[r], o[g], o[b]) = f(i[r], i[g], i[b]);
        }
    }
}

/// torchvision's `permute_channels(image, permutation)` of an RGB image:
/// output channel `i` (red, green, blue) is input channel `permutation[i]`
/// (a permutation of 0, 1, 2); a gray image is returned as it is (its one
/// channel permuted with itself).
///
/// ```
/// use tensorprep::adjust::permute_channels;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// let src = [1u8, 2, 3];
/// let mut out = [0u8; 3];
/// let view = ImageView::new(PixelFormat::Rgb8, 1, 1, &src)?;
/// permute_channels(&view, &mut ImageViewMut::new(PixelFormat::Rgb8, 1, 1, &mut out)?, [2, 0, 1])?;
/// assert_eq!(out, [3, 1, 2]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn permute_channels(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    permutation: [u8; 3],
) -> Result<()> {
    let channels = channels(src, dst, "permute_channels")?;
    let mut seen = [false; 3];
    for &p in &permutation {
        match seen.get_mut(usize::from(p)) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(Error::InvalidParameter {
                    name: "permute_channels",
                    reason: "a permutation of 0, 1 and 2",
                });
            }
        }
    }
    if channels.count == 1 {
        copy(src, dst);
        return Ok(());
    }
    // Where each output byte of a pixel reads from, in the format's order.
    let rgb = channels.rgb;
    let mut from = [0usize; 3];
    for (i, &p) in permutation.iter().enumerate() {
        from[rgb[i]] = rgb[usize::from(p)];
    }
    for y in 0..src.height() {
        for (o, i) in dst
            .row_mut(y)
            .chunks_exact_mut(3)
            .zip(src.row(y).chunks_exact(3))
        {
            (o[0], o[1], o[2]) = (i[from[0]], i[from[1]], i[from[2]]);
        }
    }
    Ok(())
}
