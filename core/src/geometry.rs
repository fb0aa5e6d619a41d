//! Geometric ops: center crop, pad / letterbox placement, flip and rotate by quarter turns.
//!
//! Crops are zero-copy ([`ImageView::crop`]); flips and rotations write into a
//! caller-provided destination and work on every format, plane by plane (the
//! 4:2:0 formats need even width and height so chroma stays aligned).
//!
//! ```
//! use tensorprep::geometry::{center_crop_rect, rotate, Rotation};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat, Rect};
//!
//! // torchvision CenterCrop offsets round half to even: (5 - 2) / 2 = 1.5 -> 2.
//! assert_eq!(center_crop_rect(5, 5, 2, 2)?, Rect::new(2, 2, 2, 2));
//!
//! let src = ImageView::new(PixelFormat::Gray8, 3, 2, &[1, 2, 3, 4, 5, 6])?;
//! let mut out = [0u8; 6];
//! rotate(&src, &mut ImageViewMut::new(PixelFormat::Gray8, 2, 3, &mut out)?, Rotation::Cw90)?;
//! assert_eq!(out, [4, 1, 5, 2, 6, 3]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

use crate::image::packed_bpp;
use crate::{Error, ImageView, ImageViewMut, Rect, Result};

/// torchvision's center-crop rectangle: offsets `int(round((size - crop) / 2.0))`,
/// with Python's round-half-to-even. The crop must fit inside the image.
pub fn center_crop_rect(
    width: u32,
    height: u32,
    crop_width: u32,
    crop_height: u32,
) -> Result<Rect> {
    // The pipeline op's rectangle: one place for the offset rule.
    let crop = crate::pipeline::CenterCrop {
        width: crop_width,
        height: crop_height,
        rounding: crate::pipeline::CropRounding::HalfEven,
    };
    crop.rect(width, height).ok_or(Error::RectOutOfBounds {
        rect: Rect::new(0, 0, crop_width, crop_height),
        width,
        height,
    })
}

/// Zero-copy center crop (torchvision offsets; see [`center_crop_rect`]).
///
/// torchvision pads with zeros when the crop is larger than the image; here that
/// is an error, and [`pad`] does the padding explicitly.
pub fn center_crop<'a>(src: &ImageView<'a>, width: u32, height: u32) -> Result<ImageView<'a>> {
    src.crop(center_crop_rect(src.width(), src.height(), width, height)?)
}

/// Where a smaller image goes inside a larger canvas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    /// Centered; an odd leftover puts the extra pixel right/bottom
    /// (`left = (W - w) / 2` floored, as Ultralytics' `round(dw - 0.1)`).
    #[default]
    Center,
    /// At the top-left corner; all padding right and bottom.
    TopLeft,
}

impl Placement {
    /// The rectangle a `width` x `height` image occupies inside a `canvas_w` x `canvas_h` canvas.
    pub fn rect(self, width: u32, height: u32, canvas_w: u32, canvas_h: u32) -> Result<Rect> {
        if width > canvas_w || height > canvas_h || width == 0 || height == 0 {
            return Err(Error::RectOutOfBounds {
                rect: Rect::new(0, 0, width, height),
                width: canvas_w,
                height: canvas_h,
            });
        }
        Ok(match self {
            Placement::Center => Rect::new(
                (canvas_w - width) / 2,
                (canvas_h - height) / 2,
                width,
                height,
            ),
            Placement::TopLeft => Rect::new(0, 0, width, height),
        })
    }
}

/// Copies `src` into `dst` (same packed format, at least as large) at `placement`,
/// filling the border with `fill` (one value per byte of a pixel). Returns where
/// the image went, for mapping coordinates back.
pub fn pad(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    placement: Placement,
    fill: &[u8],
) -> Result<Rect> {
    let bpp = packed_bpp("pad", src.format())?;
    same_format(src, dst)?;
    let rect = placement.rect(src.width(), src.height(), dst.width(), dst.height())?;
    fill_border(dst, rect, fill)?;
    let x0 = rect.x as usize * bpp;
    for (y, s) in src.plane_rows(0).enumerate() {
        dst.plane_row_mut(0, rect.y as usize + y)[x0..x0 + s.len()].copy_from_slice(s);
    }
    Ok(rect)
}

/// Fills every pixel of packed `dst` outside `inner` with `fill`.
pub fn fill_border(dst: &mut ImageViewMut<'_>, inner: Rect, fill: &[u8]) -> Result<()> {
    let bpp = packed_bpp("fill_border", dst.format())?;
    if fill.len() != bpp {
        return Err(Error::InvalidParameter {
            name: "fill",
            reason: "its length must equal the bytes per pixel",
        });
    }
    if !inner.fits_in(dst.width(), dst.height()) {
        return Err(Error::RectOutOfBounds {
            rect: inner,
            width: dst.width(),
            height: dst.height(),
        });
    }
    let (x0, x1) = (
        inner.x as usize * bpp,
        (inner.x + inner.width) as usize * bpp,
    );
    let (y0, y1) = (inner.y as usize, (inner.y + inner.height) as usize);
    for (y, row) in dst.plane_rows_mut(0).enumerate() {
        let spans: [&mut [u8]; 2] = if (y0..y1).contains(&y) {
            let (left, rest) = row.split_at_mut(x0);
            [left, &mut rest[x1 - x0..]]
        } else {
            [row, &mut []]
        };
        for span in spans {
            for px in span.chunks_exact_mut(bpp) {
                px.copy_from_slice(fill);
            }
        }
    }
    Ok(())
}

/// Allocating form of [`pad`]: a `width` x `height` canvas.
#[cfg(feature = "alloc")]
pub fn pad_owned(
    src: &ImageView<'_>,
    width: u32,
    height: u32,
    placement: Placement,
    fill: &[u8],
) -> Result<(crate::Image, Rect)> {
    let mut img = crate::Image::new(src.format(), width, height)?;
    let rect = pad(src, &mut img.view_mut(), placement, fill)?;
    Ok((img, rect))
}

/// Mirror axis of [`flip`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flip {
    /// Left-right mirror (`Image.FLIP_LEFT_RIGHT`, `cv2.flip(img, 1)`).
    Horizontal,
    /// Top-bottom mirror (`Image.FLIP_TOP_BOTTOM`, `cv2.flip(img, 0)`).
    Vertical,
    /// Both, the same as a 180 degree rotation.
    Both,
}

/// A clockwise rotation by a multiple of 90 degrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rotation {
    /// 90 degrees clockwise (`cv2.ROTATE_90_CLOCKWISE`, Pillow `ROTATE_270`).
    Cw90,
    /// 180 degrees.
    Cw180,
    /// 270 degrees clockwise, i.e. 90 counter-clockwise (Pillow `ROTATE_90`).
    Cw270,
}

fn same_format(src: &ImageView<'_>, dst: &ImageViewMut<'_>) -> Result<()> {
    if src.format() != dst.format() {
        return Err(Error::FormatMismatch {
            expected: src.format(),
            found: dst.format(),
        });
    }
    Ok(())
}

/// A pixel-exact transform of the dihedral group: optional transpose, then mirrors.
///
/// Built from [`Flip`], [`Rotation`] or an EXIF orientation value; applied by [`transform`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Transform {
    /// Swap rows and columns (the output is `height` x `width`).
    pub transpose: bool,
    /// Read source columns right to left.
    pub flip_x: bool,
    /// Read source rows bottom to top.
    pub flip_y: bool,
}

impl Transform {
    /// The identity.
    pub const IDENTITY: Transform = Transform::new(false, false, false);

    const fn new(transpose: bool, flip_x: bool, flip_y: bool) -> Self {
        Transform {
            transpose,
            flip_x,
            flip_y,
        }
    }

    /// The transform for a mirror.
    pub const fn from_flip(axis: Flip) -> Self {
        match axis {
            Flip::Horizontal => Transform::new(false, true, false),
            Flip::Vertical => Transform::new(false, false, true),
            Flip::Both => Transform::new(false, true, true),
        }
    }

    /// The transform for a clockwise rotation.
    pub const fn from_rotation(rotation: Rotation) -> Self {
        match rotation {
            Rotation::Cw90 => Transform::new(true, false, true),
            Rotation::Cw180 => Transform::new(false, true, true),
            Rotation::Cw270 => Transform::new(true, true, false),
        }
    }

    /// The transform that makes an image with EXIF `Orientation` tag `value` upright
    /// (Pillow's `ImageOps.exif_transpose`). Values outside 1..=8 give `None`.
    pub const fn from_exif(value: u16) -> Option<Self> {
        Some(match value {
            1 => Transform::IDENTITY,
            2 => Transform::new(false, true, false),
            3 => Transform::new(false, true, true),
            4 => Transform::new(false, false, true),
            5 => Transform::new(true, false, false),
            6 => Transform::new(true, false, true),
            7 => Transform::new(true, true, true),
            8 => Transform::new(true, true, false),
            _ => return None,
        })
    }

    /// Output size for a `width` x `height` input.
    pub const fn output_size(&self, width: u32, height: u32) -> (u32, u32) {
        if self.transpose {
            (height, width)
        } else {
            (width, height)
        }
    }
}

/// Mirrors `src` into `dst` (same format and size).
pub fn flip(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, axis: Flip) -> Result<()> {
    transform(src, dst, Transform::from_flip(axis))
}

/// Rotates `src` clockwise into `dst` (same format; width and height swapped for 90/270).
pub fn rotate(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, rotation: Rotation) -> Result<()> {
    transform(src, dst, Transform::from_rotation(rotation))
}

/// Applies `t` to `src`, writing `dst` (same format, size [`Transform::output_size`]).
///
/// Works plane by plane for every format; 4:2:0 images need even sides.
pub fn transform(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, t: Transform) -> Result<()> {
    if src.format() != dst.format() {
        return Err(Error::FormatMismatch {
            expected: src.format(),
            found: dst.format(),
        });
    }
    let (w, h) = t.output_size(src.width(), src.height());
    if (dst.width(), dst.height()) != (w, h) {
        return Err(Error::SizeMismatch {
            expected: (w, h),
            found: (dst.width(), dst.height()),
        });
    }
    if src.format().is_yuv420()
        && (!src.width().is_multiple_of(2) || !src.height().is_multiple_of(2))
        && t != Transform::IDENTITY
    {
        return Err(Error::InvalidParameter {
            name: "flip or rotate",
            reason: "a YUV 4:2:0 image needs an even width and height",
        });
    }
    // A YUV 4:2:2 pixel pair shares its chroma: only a vertical flip keeps pairs whole.
    if src.format().chroma_subsampling() == (2, 1) && (t.transpose || t.flip_x) {
        return Err(Error::UnsupportedFormat {
            op: "mirroring or turning a YUV 4:2:2 image (convert it first)",
            format: src.format(),
        });
    }
    for plane in 0..src.format().plane_count() {
        let Some(g) = src
            .format()
            .plane_geometry(plane, src.width(), src.height())
        else {
            continue;
        };
        match (t.transpose, g.bytes_per_element) {
            (false, _) => mirror(src, dst, plane, t, g.bytes_per_element, g.rows),
            (true, 1) => transpose::<1>(src, dst, plane, t, g.elements, g.rows),
            (true, 2) => transpose::<2>(src, dst, plane, t, g.elements, g.rows),
            (true, 3) => transpose::<3>(src, dst, plane, t, g.elements, g.rows),
            (true, _) => transpose::<4>(src, dst, plane, t, g.elements, g.rows),
        }
    }
    Ok(())
}

/// Row-wise copy with optional reversal of rows and of elements within a row.
fn mirror(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    plane: usize,
    t: Transform,
    bpe: usize,
    rows: usize,
) {
    for (y, d) in dst.plane_rows_mut(plane).enumerate() {
        let s = src.plane_row(plane, if t.flip_y { rows - 1 - y } else { y });
        if t.flip_x {
            for (dp, sp) in d.chunks_exact_mut(bpe).zip(s.chunks_exact(bpe).rev()) {
                dp.copy_from_slice(sp);
            }
        } else {
            d.copy_from_slice(s);
        }
    }
}

/// Transposing copy of one plane of `sw` x `sh` elements of `N` bytes, in square tiles
/// so that both sides stay in cache.
fn transpose<const N: usize>(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    plane: usize,
    t: Transform,
    sw: usize,
    sh: usize,
) {
    const TILE: usize = 32;
    // dst is sh wide and sw tall: dst(x, y) = src(y, x), each axis optionally mirrored.
    for ty in (0..sw).step_by(TILE) {
        for tx in (0..sh).step_by(TILE) {
            for y in ty..(ty + TILE).min(sw) {
                let sx = if t.flip_x { sw - 1 - y } else { y };
                let drow = dst.plane_row_mut(plane, y);
                for x in tx..(tx + TILE).min(sh) {
                    let sy = if t.flip_y { sh - 1 - x } else { x };
                    let s = &src.plane_row(plane, sy)[sx * N..sx * N + N];
                    drow[x * N..x * N + N].copy_from_slice(s);
                }
            }
        }
    }
}

/// Allocating form of [`transform`].
#[cfg(feature = "alloc")]
pub fn transform_owned(src: &ImageView<'_>, t: Transform) -> Result<crate::Image> {
    let (w, h) = t.output_size(src.width(), src.height());
    let mut img = crate::Image::new(src.format(), w, h)?;
    transform(src, &mut img.view_mut(), t)?;
    Ok(img)
}

/// Allocating form of [`rotate`].
#[cfg(feature = "alloc")]
pub fn rotate_owned(src: &ImageView<'_>, rotation: Rotation) -> Result<crate::Image> {
    let (w, h) = match rotation {
        Rotation::Cw180 => (src.width(), src.height()),
        _ => (src.height(), src.width()),
    };
    let mut img = crate::Image::new(src.format(), w, h)?;
    rotate(src, &mut img.view_mut(), rotation)?;
    Ok(img)
}

/// Allocating form of [`flip`].
#[cfg(feature = "alloc")]
pub fn flip_owned(src: &ImageView<'_>, axis: Flip) -> Result<crate::Image> {
    let mut img = crate::Image::new(src.format(), src.width(), src.height())?;
    flip(src, &mut img.view_mut(), axis)?;
    Ok(img)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PixelFormat;

    #[test]
    fn center_crop_offsets_round_half_even() {
        // (d / 2) for d = 0..=6: 0, 0 (0.5), 1, 2 (1.5), 2, 2 (2.5), 3
        let offsets: [u32; 7] =
            core::array::from_fn(|d| center_crop_rect(1 + d as u32, 1, 1, 1).unwrap().x);
        assert_eq!(offsets, [0, 0, 1, 2, 2, 2, 3]);
        // torchvision: Resize(256) of 451x300 gives 384x256, CenterCrop(224) -> left 80, top 16.
        assert_eq!(
            center_crop_rect(384, 256, 224, 224).unwrap(),
            Rect::new(80, 16, 224, 224)
        );
        assert!(center_crop_rect(100, 100, 101, 50).is_err());
    }

    #[test]
    fn rotations_compose_to_identity() {
        let px: [u8; 5 * 3 * 3] = core::array::from_fn(|i| i as u8);
        let src = ImageView::new(PixelFormat::Rgb8, 5, 3, &px).unwrap();
        let mut a = [0u8; 45];
        let mut b = [0u8; 45];
        rotate(
            &src,
            &mut ImageViewMut::new(PixelFormat::Rgb8, 3, 5, &mut a).unwrap(),
            Rotation::Cw90,
        )
        .unwrap();
        let av = ImageView::new(PixelFormat::Rgb8, 3, 5, &a).unwrap();
        rotate(
            &av,
            &mut ImageViewMut::new(PixelFormat::Rgb8, 5, 3, &mut b).unwrap(),
            Rotation::Cw270,
        )
        .unwrap();
        assert_eq!(px, b);
        // Top-left of the Cw90 result is the bottom-left source pixel.
        assert_eq!(&a[..3], &px[2 * 15..2 * 15 + 3]);
    }

    #[test]
    fn yuv_flip_moves_chroma_with_luma() {
        // 4x2 NV12: Y 0..8, one UV row of two pairs.
        let px = [0u8, 1, 2, 3, 4, 5, 6, 7, 10, 11, 20, 21];
        let src = ImageView::new(PixelFormat::Nv12, 4, 2, &px).unwrap();
        let mut out = [0u8; 12];
        flip(
            &src,
            &mut ImageViewMut::new(PixelFormat::Nv12, 4, 2, &mut out).unwrap(),
            Flip::Horizontal,
        )
        .unwrap();
        assert_eq!(out, [3, 2, 1, 0, 7, 6, 5, 4, 20, 21, 10, 11]);
        let odd = ImageView::new(PixelFormat::Nv12, 3, 2, &px).unwrap();
        let mut out = [0u8; 10];
        assert!(
            flip(
                &odd,
                &mut ImageViewMut::new(PixelFormat::Nv12, 3, 2, &mut out).unwrap(),
                Flip::Vertical
            )
            .is_err()
        );
    }

    #[test]
    fn exif_orientations_match_their_definitions() {
        // 3x2 image with distinct values; the expected outputs are what Pillow 13's
        // `Image.transpose` gives for the method `ImageOps.exif_transpose` picks per value.
        let px = [1u8, 2, 3, 4, 5, 6];
        let src = ImageView::new(PixelFormat::Gray8, 3, 2, &px).unwrap();
        let want: [&[u8]; 8] = [
            &[1, 2, 3, 4, 5, 6],
            &[3, 2, 1, 6, 5, 4],
            &[6, 5, 4, 3, 2, 1],
            &[4, 5, 6, 1, 2, 3],
            &[1, 4, 2, 5, 3, 6],
            &[4, 1, 5, 2, 6, 3],
            &[6, 3, 5, 2, 4, 1],
            &[3, 6, 2, 5, 1, 4],
        ];
        for (i, w) in want.iter().enumerate() {
            let t = Transform::from_exif(i as u16 + 1).unwrap();
            let out = transform_owned(&src, t).unwrap();
            assert_eq!(out.as_bytes(), *w, "orientation {}", i + 1);
        }
        assert_eq!(Transform::from_exif(0), None);
        assert_eq!(Transform::from_exif(9), None);
    }

    #[test]
    fn pad_centers_and_fills() {
        let px = [9u8; 2];
        let src = ImageView::new(PixelFormat::Gray8, 2, 1, &px).unwrap();
        let mut out = [0u8; 5 * 2];
        let rect = pad(
            &src,
            &mut ImageViewMut::new(PixelFormat::Gray8, 5, 2, &mut out).unwrap(),
            Placement::Center,
            &[114],
        )
        .unwrap();
        assert_eq!(rect, Rect::new(1, 0, 2, 1));
        assert_eq!(out, [114, 9, 9, 114, 114, 114, 114, 114, 114, 114]);
    }
}
