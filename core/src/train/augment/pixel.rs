//! The drawn form of the colour and warp augmentations: one adjustment or
//! warp with every parameter fixed, run on an 8-bit image between the
//! plan's fused passes. The kernels are [`crate::adjust`] and
//! [`crate::warp`]; this is where a drawn op meets them.

use alloc::vec::Vec;

use crate::adjust::{self, GaussianKernel, Point};
use crate::warp::{self, Interpolation, Warp};
use crate::{ImageView, ImageViewMut, PixelFormat, Result};

/// One colour adjustment or warp with its drawn parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PixelOp {
    /// A point table: invert, posterize, solarize, brightness.
    Point(Point),
    /// `adjust_contrast(factor)`.
    Contrast(f32),
    /// `adjust_saturation(factor)`.
    Saturation(f32),
    /// `adjust_hue(factor)`.
    Hue(f32),
    /// `adjust_sharpness(factor)`.
    Sharpness(f32),
    /// `rgb_to_grayscale(num_output_channels=3)`.
    Grayscale,
    /// `autocontrast`.
    Autocontrast,
    /// `equalize`.
    Equalize,
    /// `gaussian_blur([width, height], [sigma, sigma])`.
    GaussianBlur {
        /// Taps along rows and along columns (odd).
        kernel: (u16, u16),
        /// The drawn standard deviation.
        sigma: f32,
    },
    /// A warp into an image of `size`.
    Warp {
        /// The inverse mapping.
        matrix: Warp,
        /// The output size.
        size: (u32, u32),
        /// Nearest or bilinear.
        interpolation: Interpolation,
        /// Fill outside the source, R, G, B.
        fill: [u8; 3],
    },
}

impl PixelOp {
    /// The size of the image this op leaves, given the size before.
    pub fn output_size(&self, before: (u32, u32)) -> (u32, u32) {
        match self {
            PixelOp::Warp { size, .. } => *size,
            _ => before,
        }
    }

    /// Runs the op from `src` into `dst` (same format, `dst` of
    /// [`PixelOp::output_size`]); `scratch` is a blur's row, grown once.
    pub fn apply(
        &self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        scratch: &mut Vec<f32>,
    ) -> Result<()> {
        match *self {
            PixelOp::Point(p) => adjust::point(src, dst, p),
            PixelOp::Contrast(f) => adjust::contrast(src, dst, f),
            PixelOp::Saturation(f) => adjust::saturation(src, dst, f),
            PixelOp::Hue(f) => adjust::hue(src, dst, f),
            PixelOp::Sharpness(f) => adjust::sharpness(src, dst, f),
            PixelOp::Grayscale => adjust::grayscale(src, dst),
            PixelOp::Autocontrast => adjust::autocontrast(src, dst),
            PixelOp::Equalize => adjust::equalize(src, dst),
            PixelOp::GaussianBlur { kernel, sigma } => {
                let across = GaussianKernel::new(usize::from(kernel.0), sigma)?;
                let down = GaussianKernel::new(usize::from(kernel.1), sigma)?;
                let len = src.width() as usize * 3;
                if scratch.len() < len {
                    scratch.resize(len, 0.0);
                }
                adjust::gaussian_blur(src, dst, &across, &down, scratch)
            }
            PixelOp::Warp {
                matrix,
                interpolation,
                fill,
                ..
            } => {
                let fill = match src.format() {
                    PixelFormat::Gray8 => [crate::color::luma601(fill[0], fill[1], fill[2]); 3],
                    PixelFormat::Bgr8 => [fill[2], fill[1], fill[0]],
                    _ => fill,
                };
                warp::warp(src, dst, &matrix, interpolation, fill)
            }
        }
    }
}
