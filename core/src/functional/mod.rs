//! torchvision v2's functional ops with explicit parameters, on an 8-bit
//! packed image (Gray8, Rgb8, Bgr8, ...) and, for the geometric ones, its
//! target, each as torchvision computes a PIL image and its `tv_tensors`.
//! The pixels come from the kernels the training plans run (Pillow's
//! resize, transpose, crop and `transform`; the [`adjust`](crate::adjust)
//! kernels through [`ImageOp`]), the target from [`Target::apply`]; a
//! geometric op is one [`Geometry`] for both, so they cannot disagree.
//! Photometric ops leave targets alone, as torchvision's do.
//!
//! ```
//! use tensorprep::functional;
//! use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Target};
//! use tensorprep::{Image, PixelFormat};
//!
//! let image = Image::new(PixelFormat::Rgb8, 8, 6)?;
//! let mut target = Target::default();
//! target.boxes = Some(BoundingBoxes::new(vec![[1.0, 1.0, 3.0, 4.0]], BoxFormat::Xyxy, Canvas::new(6, 8)?));
//! let flipped = functional::horizontal_flip(&image.view(), Some(&mut target))?;
//! assert_eq!((flipped.width(), flipped.height()), (8, 6));
//! assert_eq!(target.boxes.unwrap().boxes(), &[[5.0, 1.0, 7.0, 4.0]]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod geometric;
mod image_op;
mod photometric;

pub use geometric::{
    affine, apply, center_crop, crop, horizontal_flip, pad, perspective, resize, resized_crop,
    rotate, vertical_flip,
};
pub use image_op::ImageOp;
pub use photometric::{
    adjust_brightness, adjust_contrast, adjust_hue, adjust_saturation, adjust_sharpness,
    autocontrast, clamp_bounding_boxes, convert_bounding_box_format, equalize, erase,
    gaussian_blur, invert, posterize, rgb_to_grayscale, run, solarize,
};

use crate::PixelFormat;
use crate::resize::Resample;
use crate::warp::Interpolation;

/// How a geometric op makes its pixels: the resampler of a resize, the
/// interpolation and fill of a warp, the fill of a pad.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Pixels {
    /// A resize's resampler (torchvision's default on PIL: Pillow's bilinear).
    pub resample: Resample,
    /// A warp's interpolation (torchvision's default: nearest).
    pub interpolation: Interpolation,
    /// What pads and warps bring in from outside (R, G, B).
    pub fill: [u8; 3],
}

impl Default for Pixels {
    fn default() -> Pixels {
        Pixels {
            resample: Resample::Pillow(crate::resize::Filter::Bilinear),
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }
}

/// `fill` (R, G, B) as the bytes of one pixel of `format`.
pub(crate) fn fill_in(format: PixelFormat, fill: [u8; 3]) -> [u8; 3] {
    match format {
        PixelFormat::Gray8 => [crate::color::luma601(fill[0], fill[1], fill[2]); 3],
        PixelFormat::Bgr8 | PixelFormat::Bgra8 => [fill[2], fill[1], fill[0]],
        _ => fill,
    }
}
