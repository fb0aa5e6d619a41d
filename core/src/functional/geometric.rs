//! The geometric ops: each one [`Geometry`], applied to the pixels and the
//! target alike.

use super::{Pixels, fill_in};
use crate::geometry::{Flip, Transform, transform_owned};
use crate::image::packed_bpp;
use crate::pipeline::CropRounding;
use crate::resize::Resample;
use crate::size::SizeRule;
use crate::targets::{Affine, Canvas, Geometry, Padding, Target};
use crate::warp::Interpolation;
use crate::{Error, Image, ImageView, Result};

/// The image moved by `geometry` (and `target` with it).
pub fn apply(
    image: &ImageView<'_>,
    geometry: &Geometry,
    pixels: &Pixels,
    target: Option<&mut Target>,
) -> Result<Image> {
    let (w, h) = (image.width(), image.height());
    let out = match *geometry {
        Geometry::Flip(f) => transform_owned(image, Transform::from_flip(f))?,
        Geometry::Resize(c) => {
            let mut out = Image::new(image.format(), c.width, c.height)?;
            crate::resize::resize(image, &mut out.view_mut(), pixels.resample)?;
            out
        }
        Geometry::Crop {
            top,
            left,
            height,
            width,
        } => window(image, top, left, Canvas::new(height, width)?, [0; 3])?,
        Geometry::Pad(p) => {
            let c = p.canvas(Canvas::new(h, w)?)?;
            let neg = |v: i64| {
                v.checked_neg().ok_or(Error::InvalidParameter {
                    name: "padding",
                    reason: "the padded canvas is out of range",
                })
            };
            window(image, neg(p.top)?, neg(p.left)?, c, pixels.fill)?
        }
        Geometry::Affine(_) | Geometry::Rotate { .. } | Geometry::Perspective(_) => {
            let (matrix, (ow, oh)) = geometry.warp((w, h))?.ok_or(Error::InvalidParameter {
                name: "warp",
                reason: "not a warp",
            })?;
            let mut out = Image::new(image.format(), ow, oh)?;
            let fill = fill_in(image.format(), pixels.fill);
            crate::warp::warp(
                image,
                &mut out.view_mut(),
                &matrix,
                pixels.interpolation,
                fill,
            )?;
            out
        }
    };
    if let Some(t) = target {
        t.apply(geometry)?;
    }
    Ok(out)
}

/// The window at (`top`, `left`) of `size` (as Pillow's `crop` takes it,
/// reaching outside), `fill` where it lies outside the image.
fn window(
    image: &ImageView<'_>,
    top: i64,
    left: i64,
    size: Canvas,
    fill: [u8; 3],
) -> Result<Image> {
    let bpp = packed_bpp("crop", image.format())?;
    let mut out = Image::new(image.format(), size.width, size.height)?;
    let fill = fill_in(image.format(), fill);
    let mut px = [0u8; 8];
    for (i, v) in px.iter_mut().take(bpp).enumerate() {
        // Alpha (a fourth byte) opaque, as Pillow's fill of an RGBA image.
        *v = if i < 3 { fill[i.min(2)] } else { 255 };
    }
    let (iw, ih) = (i64::from(image.width()), i64::from(image.height()));
    let x0 = left.clamp(0, iw);
    let x1 = left.saturating_add(i64::from(size.width)).clamp(0, iw);
    let mut view = out.view_mut();
    for oy in 0..size.height {
        let row = view.row_mut(oy);
        for p in row.chunks_exact_mut(bpp) {
            p.copy_from_slice(&px[..bpp]);
        }
        let y = top.saturating_add(i64::from(oy));
        if x1 > x0 && (0..ih).contains(&y) {
            let src = image.row(y as u32);
            let (from, to) = (x0 as usize * bpp, x1 as usize * bpp);
            let at = (x0 - left) as usize * bpp;
            row[at..at + (to - from)].copy_from_slice(&src[from..to]);
        }
    }
    Ok(out)
}

/// `horizontal_flip(image)`.
pub fn horizontal_flip(image: &ImageView<'_>, target: Option<&mut Target>) -> Result<Image> {
    apply(
        image,
        &Geometry::Flip(Flip::Horizontal),
        &Pixels::default(),
        target,
    )
}

/// `vertical_flip(image)`.
pub fn vertical_flip(image: &ImageView<'_>, target: Option<&mut Target>) -> Result<Image> {
    apply(
        image,
        &Geometry::Flip(Flip::Vertical),
        &Pixels::default(),
        target,
    )
}

/// `resize(image, size, max_size=...)` with `resample`: `size` is
/// torchvision's size argument as a [`SizeRule`] (`[h, w]` is
/// [`SizeRule::Exact`], an int [`SizeRule::ShorterSide`] with
/// [`Rounding::Truncate`](crate::size::Rounding::Truncate), `size=None,
/// max_size=m` [`SizeRule::LongerSide`]).
pub fn resize(
    image: &ImageView<'_>,
    size: SizeRule,
    resample: Resample,
    target: Option<&mut Target>,
) -> Result<Image> {
    let (width, height) = size.output_size(image.width(), image.height())?;
    let pixels = Pixels {
        resample,
        ..Pixels::default()
    };
    apply(
        image,
        &Geometry::Resize(Canvas::new(height, width)?),
        &pixels,
        target,
    )
}

/// `crop(image, top, left, height, width)`: zeros where the window lies
/// outside the image, as Pillow's `crop`.
pub fn crop(
    image: &ImageView<'_>,
    top: i64,
    left: i64,
    height: u32,
    width: u32,
    target: Option<&mut Target>,
) -> Result<Image> {
    let g = Geometry::Crop {
        top,
        left,
        height,
        width,
    };
    apply(image, &g, &Pixels::default(), target)
}

/// `center_crop(image, output_size=[height, width])`. A crop larger than
/// the image pads it with zeros first, as torchvision does: its pixels
/// (and masks) sit at `-((crop - side) // 2)`, while its boxes and key points
/// take the anchor `round((side - crop) / 2)` on the unpadded canvas. The
/// two differ by one when `crop - side` is 3 modulo 4; each follows
/// torchvision.
pub fn center_crop(
    image: &ImageView<'_>,
    height: u32,
    width: u32,
    target: Option<&mut Target>,
) -> Result<Image> {
    let anchor = |side: u32, crop: u32| {
        let leftover = i64::from(side) - i64::from(crop);
        let boxes = CropRounding::HalfEven.offset(leftover);
        // Padded by `(crop - side) // 2` first, then centred exactly.
        let pixels = if leftover < 0 {
            -(-leftover).div_euclid(2)
        } else {
            boxes
        };
        (pixels, boxes)
    };
    let (top, top_boxes) = anchor(image.height(), height);
    let (left, left_boxes) = anchor(image.width(), width);
    let pixels = Geometry::Crop {
        top,
        left,
        height,
        width,
    };
    let out = apply(image, &pixels, &Pixels::default(), None)?;
    if let Some(t) = target {
        let boxes = Geometry::Crop {
            top: top_boxes,
            left: left_boxes,
            height,
            width,
        };
        if boxes == pixels {
            t.apply(&pixels)?;
        } else {
            t.apply_split(&boxes, &pixels)?;
        }
    }
    Ok(out)
}

/// `resized_crop(image, top, left, height, width, size)`: the crop, then
/// the resize to `size` (as [`resize`] takes it) with `resample`.
#[allow(clippy::too_many_arguments)]
pub fn resized_crop(
    image: &ImageView<'_>,
    top: i64,
    left: i64,
    height: u32,
    width: u32,
    size: SizeRule,
    resample: Resample,
    mut target: Option<&mut Target>,
) -> Result<Image> {
    let cropped = crop(image, top, left, height, width, target.as_deref_mut())?;
    resize(&cropped.view(), size, resample, target)
}

/// `pad(image, padding, fill)` (constant).
pub fn pad(
    image: &ImageView<'_>,
    padding: Padding,
    fill: [u8; 3],
    target: Option<&mut Target>,
) -> Result<Image> {
    let pixels = Pixels {
        fill,
        ..Pixels::default()
    };
    apply(image, &Geometry::Pad(padding), &pixels, target)
}

/// A warp's pixels: `interpolation`, `fill` from outside.
fn warped(interpolation: Interpolation, fill: [u8; 3]) -> Pixels {
    Pixels {
        interpolation,
        fill,
        ..Pixels::default()
    }
}

/// `affine(image, angle, translate, scale, shear, interpolation, fill,
/// center)`.
pub fn affine(
    image: &ImageView<'_>,
    affine: Affine,
    interpolation: Interpolation,
    fill: [u8; 3],
    target: Option<&mut Target>,
) -> Result<Image> {
    apply(
        image,
        &Geometry::Affine(affine),
        &warped(interpolation, fill),
        target,
    )
}

/// `rotate(image, angle, interpolation, expand, center, fill)`
/// (counter-clockwise, in degrees).
pub fn rotate(
    image: &ImageView<'_>,
    angle: f64,
    expand: bool,
    center: Option<(f64, f64)>,
    interpolation: Interpolation,
    fill: [u8; 3],
    target: Option<&mut Target>,
) -> Result<Image> {
    let g = Geometry::Rotate {
        angle,
        expand,
        center,
    };
    apply(image, &g, &warped(interpolation, fill), target)
}

/// `perspective(image, startpoints=None, endpoints=None, interpolation,
/// fill, coefficients)`: the 8 coefficients mapping output points to input
/// points.
pub fn perspective(
    image: &ImageView<'_>,
    coefficients: [f64; 8],
    interpolation: Interpolation,
    fill: [u8; 3],
    target: Option<&mut Target>,
) -> Result<Image> {
    let g = Geometry::Perspective(coefficients);
    apply(image, &g, &warped(interpolation, fill), target)
}
