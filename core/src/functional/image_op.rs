//! The drawn form of the colour and warp augmentations: one adjustment or
//! warp with every parameter fixed, run on an 8-bit image between the
//! plan's fused passes. The kernels are [`crate::adjust`] and
//! [`crate::warp`]; this is where a drawn op meets them.

use alloc::vec::Vec;

use crate::adjust::{self, GaussianKernel, Point};
use crate::targets::Geometry;
use crate::warp::{self, Interpolation, Warp};
use crate::{Error, ImageView, ImageViewMut, Result};

/// One op on the decoded 8-bit image, with its drawn parameters: a colour
/// adjustment or a warp, which the plan compiler cannot fuse into its
/// passes (a plan [`Op`](crate::pipeline::Op) it can). The training plan's
/// image pass runs it between them.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ImageOp {
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
    /// `permute_channels(permutation)`: output channel `i` (R, G, B) is
    /// input channel `permutation[i]`.
    PermuteChannels([u8; 3]),
    /// `gaussian_blur([width, height], [sigma, sigma])`.
    GaussianBlur {
        /// Taps along rows and along columns (odd).
        kernel: (u16, u16),
        /// The drawn standard deviation.
        sigma: f32,
    },
    /// A warp into an image of `size`.
    Warp {
        /// What it is: an affine map, a rotation or a perspective, with the
        /// parameters torchvision's functional op takes (what targets move
        /// by).
        geometry: Geometry,
        /// The inverse mapping the pixels take, computed from `geometry`.
        matrix: Warp,
        /// The output size.
        size: (u32, u32),
        /// Nearest or bilinear.
        interpolation: Interpolation,
        /// Fill outside the source, R, G, B.
        fill: [u8; 3],
    },
}

impl ImageOp {
    /// The warp `geometry` is on an image of `size` (before), as
    /// torchvision's functional op warps a PIL image: Pillow's `rotate` for
    /// [`Geometry::Rotate`], its `transform` with torchvision's matrix for
    /// [`Geometry::Affine`] and [`Geometry::Perspective`]. Other geometry is
    /// not a warp (the plan's ops do it) and is an error.
    pub fn warp(
        geometry: Geometry,
        size: (u32, u32),
        interpolation: Interpolation,
        fill: [u8; 3],
    ) -> Result<ImageOp> {
        let (matrix, size) = geometry.warp(size)?.ok_or(Error::InvalidParameter {
            name: "warp",
            reason: "flips, resizes, crops and pads are plan ops, not warps",
        })?;
        Ok(ImageOp::Warp {
            geometry,
            matrix,
            size,
            interpolation,
            fill,
        })
    }

    /// The size of the image this op leaves, given the size before.
    pub fn output_size(&self, before: (u32, u32)) -> (u32, u32) {
        match self {
            ImageOp::Warp { size, .. } => *size,
            _ => before,
        }
    }

    /// Runs the op from `src` into `dst` (same format, `dst` of
    /// [`ImageOp::output_size`]); `scratch` is a blur's row, grown once.
    pub fn apply(
        &self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        scratch: &mut Vec<f32>,
    ) -> Result<()> {
        match *self {
            ImageOp::Point(p) => adjust::point(src, dst, p),
            ImageOp::Contrast(f) => adjust::contrast(src, dst, f),
            ImageOp::Saturation(f) => adjust::saturation(src, dst, f),
            ImageOp::Hue(f) => adjust::hue(src, dst, f),
            ImageOp::Sharpness(f) => adjust::sharpness(src, dst, f),
            ImageOp::Grayscale => adjust::grayscale(src, dst),
            ImageOp::Autocontrast => adjust::autocontrast(src, dst),
            ImageOp::Equalize => adjust::equalize(src, dst),
            ImageOp::PermuteChannels(p) => adjust::permute_channels(src, dst, p),
            ImageOp::GaussianBlur { kernel, sigma } => {
                let across = GaussianKernel::new(usize::from(kernel.0), sigma)?;
                let down = GaussianKernel::new(usize::from(kernel.1), sigma)?;
                let len = src.width() as usize * 3;
                if scratch.len() < len {
                    scratch.resize(len, 0.0);
                }
                adjust::gaussian_blur(src, dst, &across, &down, scratch)
            }
            ImageOp::Warp {
                matrix,
                interpolation,
                fill,
                ..
            } => {
                let fill = crate::functional::fill_in(src.format(), fill);
                warp::warp(src, dst, &matrix, interpolation, fill)
            }
        }
    }
}
