//! Adjustments that read the image first: `ImageOps.autocontrast` and
//! `ImageOps.equalize` (a table per channel from that channel's histogram)
//! and `ImageEnhance.Contrast` (a blend with the image's mean gray).

use super::{Channels, apply_per_channel, apply_table, blend, channels};
use crate::{Error, ImageView, ImageViewMut, Result};

/// Each channel's histogram (`Image.histogram()`, band by band).
fn histograms(src: &ImageView<'_>, channels: Channels) -> [[u64; 256]; 3] {
    let mut h = [[0u64; 256]; 3];
    for y in 0..src.height() {
        for px in src.row(y).chunks_exact(channels.count) {
            for (c, &v) in px.iter().enumerate() {
                h[c][usize::from(v)] += 1;
            }
        }
    }
    h
}

/// `ImageOps.autocontrast(image)` (torchvision's PIL `autocontrast`): each
/// channel stretched from its lowest to its highest value present,
/// `int(v * scale + offset)` in double precision, clipped.
pub fn autocontrast(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>) -> Result<()> {
    let channels = channels(src, dst, "autocontrast")?;
    let tables = histograms(src, channels).map(|h| {
        let lo = h.iter().position(|&n| n > 0).unwrap_or(0);
        let hi = h.iter().rposition(|&n| n > 0).unwrap_or(0);
        let mut t: [u8; 256] = core::array::from_fn(|v| v as u8);
        if hi > lo {
            let scale = 255.0 / (hi - lo) as f64;
            let offset = -(lo as f64) * scale;
            for (v, o) in t.iter_mut().enumerate() {
                // Python's int() truncates toward zero; then clipped.
                *o = ((v as f64 * scale + offset) as i64).clamp(0, 255) as u8;
            }
        }
        t
    });
    apply_per_channel(src, dst, &tables, channels);
    Ok(())
}

/// `ImageOps.equalize(image)` (torchvision's PIL `equalize`): each
/// channel's cumulative histogram in steps of `(count - last bin) / 255`,
/// in integers as Pillow computes it.
pub fn equalize(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>) -> Result<()> {
    let channels = channels(src, dst, "equalize")?;
    let tables = histograms(src, channels).map(|h| {
        let mut t: [u8; 256] = core::array::from_fn(|v| v as u8);
        let used = h.iter().filter(|&&n| n > 0).count();
        let last = h.iter().rev().copied().find(|&n| n > 0).unwrap_or(0);
        let step = (h.iter().sum::<u64>() - last) / 255;
        if used > 1 && step > 0 {
            let mut n = step / 2;
            for (v, o) in t.iter_mut().enumerate() {
                // Pillow clips a table's entries to 8 bits.
                *o = (n / step).min(255) as u8;
                n += h[v];
            }
        }
        t
    });
    apply_per_channel(src, dst, &tables, channels);
    Ok(())
}

/// `ImageEnhance.Contrast(image).enhance(factor)` (torchvision's PIL
/// `adjust_contrast`): a blend with a flat gray of the image's mean luma,
/// `int(mean + 0.5)` (the mean of Pillow's `convert("L")`), in Pillow's
/// float32 blend, truncated and clipped. 0 gives the flat gray, 1 the image.
///
/// ```
/// use tensorprep::adjust::contrast;
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// let src = [10u8, 20, 30, 40];
/// let mut out = [0u8; 4];
/// let view = ImageView::new(PixelFormat::Gray8, 4, 1, &src)?;
/// contrast(&view, &mut ImageViewMut::new(PixelFormat::Gray8, 4, 1, &mut out)?, 0.0)?;
/// assert_eq!(out, [25; 4]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn contrast(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, factor: f32) -> Result<()> {
    let channels = channels(src, dst, "contrast")?;
    if !factor.is_finite() || factor < 0.0 {
        return Err(Error::InvalidParameter {
            name: "contrast",
            reason: "the factor must be finite and not negative",
        });
    }
    let mut histogram = [0u64; 256];
    for y in 0..src.height() {
        for px in src.row(y).chunks_exact(channels.count) {
            histogram[usize::from(channels.luma(px))] += 1;
        }
    }
    // ImageStat's mean: in double precision, from the histogram.
    let count: u64 = histogram.iter().sum();
    let sum: f64 = histogram
        .iter()
        .enumerate()
        .map(|(v, &n)| v as f64 * n as f64)
        .sum();
    let mean = if count == 0 { 0.0 } else { sum / count as f64 };
    let gray = (mean + 0.5) as u8;
    let table: [u8; 256] = core::array::from_fn(|v| blend(gray, v as u8, factor));
    apply_table(src, dst, &table)
}
