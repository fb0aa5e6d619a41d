//! The photometric ops: one [`ImageOp`] each, run into a new image; and
//! the ops on boxes alone. Targets stay as they are under a photometric op,
//! as in torchvision, so these take none.

use super::ImageOp;
use crate::adjust::Point;
use crate::color::{YuvRange, convert_color_owned};
use crate::image::packed_bpp;
use crate::targets::{BoxFormat, Target, TargetOp};
use crate::{Error, Image, ImageView, PixelFormat, Result};

/// `op` on `image` (Gray8, Rgb8 or Bgr8) into a new image: what every
/// photometric function here does, for a drawn op as the training plans
/// run it.
pub fn run(image: &ImageView<'_>, op: &ImageOp) -> Result<Image> {
    let (w, h) = op.output_size((image.width(), image.height()));
    let mut out = Image::new(image.format(), w, h)?;
    let mut scratch = alloc::vec::Vec::new();
    op.apply(image, &mut out.view_mut(), &mut scratch)?;
    Ok(out)
}

/// `adjust_brightness(image, brightness_factor)`.
pub fn adjust_brightness(image: &ImageView<'_>, factor: f32) -> Result<Image> {
    run(image, &ImageOp::Point(Point::Brightness { factor }))
}

/// `adjust_contrast(image, contrast_factor)`.
pub fn adjust_contrast(image: &ImageView<'_>, factor: f32) -> Result<Image> {
    run(image, &ImageOp::Contrast(factor))
}

/// `adjust_saturation(image, saturation_factor)`.
pub fn adjust_saturation(image: &ImageView<'_>, factor: f32) -> Result<Image> {
    run(image, &ImageOp::Saturation(factor))
}

/// `adjust_hue(image, hue_factor)`, `hue_factor` in `[-0.5, 0.5]`.
pub fn adjust_hue(image: &ImageView<'_>, factor: f32) -> Result<Image> {
    run(image, &ImageOp::Hue(factor))
}

/// `adjust_sharpness(image, sharpness_factor)`.
pub fn adjust_sharpness(image: &ImageView<'_>, factor: f32) -> Result<Image> {
    run(image, &ImageOp::Sharpness(factor))
}

/// `posterize(image, bits)`.
pub fn posterize(image: &ImageView<'_>, bits: u8) -> Result<Image> {
    run(image, &ImageOp::Point(Point::Posterize { bits }))
}

/// `solarize(image, threshold)`: the values at or above `threshold`
/// inverted (a fractional threshold as Pillow compares with it).
pub fn solarize(image: &ImageView<'_>, threshold: f64) -> Result<Image> {
    if !threshold.is_finite() || threshold < 0.0 {
        return Err(Error::InvalidParameter {
            name: "threshold",
            reason: "must be finite and not negative",
        });
    }
    run(image, &ImageOp::Point(Point::solarize_from(threshold)))
}

/// `invert(image)`.
pub fn invert(image: &ImageView<'_>) -> Result<Image> {
    run(image, &ImageOp::Point(Point::Invert))
}

/// `autocontrast(image)`.
pub fn autocontrast(image: &ImageView<'_>) -> Result<Image> {
    run(image, &ImageOp::Autocontrast)
}

/// `equalize(image)`.
pub fn equalize(image: &ImageView<'_>) -> Result<Image> {
    run(image, &ImageOp::Equalize)
}

/// `rgb_to_grayscale(image, num_output_channels)`: Pillow's `convert("L")`,
/// one channel (Gray8) or three equal ones (in the image's format).
pub fn rgb_to_grayscale(image: &ImageView<'_>, num_output_channels: u8) -> Result<Image> {
    match num_output_channels {
        1 => convert_color_owned(image, PixelFormat::Gray8, YuvRange::Full),
        3 => run(image, &ImageOp::Grayscale),
        _ => Err(Error::InvalidParameter {
            name: "num_output_channels",
            reason: "must be 1 or 3",
        }),
    }
}

/// `gaussian_blur(image, kernel_size=[width, height], sigma)`: torchvision
/// blurs a PIL image as a float tensor with reflected edges and rounds
/// back; within one level of it (see [`crate::adjust::gaussian_blur`]).
pub fn gaussian_blur(image: &ImageView<'_>, kernel: (u16, u16), sigma: f32) -> Result<Image> {
    run(image, &ImageOp::GaussianBlur { kernel, sigma })
}

/// `erase(image, i, j, h, w, v)`: rows `i..i + h` and columns `j..j + w`
/// (cut at the image's edges, as a slice is) set to `value`, one byte per
/// channel or one for all.
pub fn erase(
    image: &ImageView<'_>,
    (i, j, h, w): (u32, u32, u32, u32),
    value: &[u8],
) -> Result<Image> {
    let bpp = packed_bpp("erase", image.format())?;
    if value.len() != 1 && value.len() != bpp {
        return Err(Error::TensorSize {
            len: value.len(),
            needed: bpp,
        });
    }
    let mut out = Image::new(image.format(), image.width(), image.height())?;
    let mut view = out.view_mut();
    let x0 = j.min(image.width()) as usize * bpp;
    let x1 = j.saturating_add(w).min(image.width()) as usize * bpp;
    let rows = i.min(image.height())..i.saturating_add(h).min(image.height());
    for y in 0..image.height() {
        let row = view.row_mut(y);
        row.copy_from_slice(image.row(y));
        if rows.contains(&y) {
            for (k, v) in row[x0..x1].iter_mut().enumerate() {
                *v = value[if value.len() == 1 { 0 } else { k % bpp }];
            }
        }
    }
    Ok(out)
}

/// `convert_bounding_box_format(boxes, new_format)` on a target's boxes.
pub fn convert_bounding_box_format(target: &mut Target, format: BoxFormat) -> Result<()> {
    target.run(&TargetOp::ConvertFormat(format))
}

/// `clamp_bounding_boxes(boxes)`: a target's boxes into their canvas.
pub fn clamp_bounding_boxes(target: &mut Target) -> Result<()> {
    target.run(&TargetOp::Clamp)
}
