//! Resizing: Pillow-style antialiased convolution and OpenCV-compatible linear interpolation.
//!
//! [`Resample::Pillow`] filters are antialiased when downscaling (the filter
//! support widens with the scale), as Pillow's `Image.resize` and therefore
//! torchvision's PIL path do. They run on `fast_image_resize`'s convolution,
//! which matches Pillow to within a few levels (see the README's parity table);
//! a later exact resampler replaces the u8 path. [`Resample::OpenCvLinear`]
//! reproduces OpenCV's `INTER_LINEAR` (no antialiasing).
//!
//! To resize a region only, pass a cropped view ([`ImageView::crop`]): the crop
//! is the resize's source box and nothing is copied.
//!
//! ```
//! use tensorprep::resize::{Filter, Resample, Resizer};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! let src_px = vec![200u8; 64 * 48 * 3];
//! let src = ImageView::new(PixelFormat::Rgb8, 64, 48, &src_px)?;
//! let mut out = vec![0u8; 16 * 12 * 3];
//! let mut resizer = Resizer::new(); // keep it: it owns the scratch buffers
//! resizer.resize(&src, &mut ImageViewMut::new(PixelFormat::Rgb8, 16, 12, &mut out)?,
//!                Resample::Pillow(Filter::Bilinear))?;
//! assert!(out.iter().all(|&v| v == 200));
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod fir_view;
mod opencv;

use fast_image_resize::pixels::{U8, U8x3, U8x4};
use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions};

use crate::geometry::{Placement, fill_border};
use crate::image::packed_bpp;
use crate::size::SizeRule;
use crate::{Error, ImageView, ImageViewMut, Rect, Result};

/// A Pillow resampling filter (`PIL.Image.Resampling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// `NEAREST`: the source pixel whose centre is nearest.
    Nearest,
    /// `BOX`: each output pixel averages the source pixels it covers.
    Box,
    /// `BILINEAR`: triangle filter; torchvision's default.
    Bilinear,
    /// `HAMMING`: Hamming-windowed sinc, support 1.
    Hamming,
    /// `BICUBIC`: cubic convolution with a = -0.5 (Catmull-Rom).
    Bicubic,
    /// `LANCZOS`: Lanczos-windowed sinc, support 3.
    Lanczos3,
}

/// Which library's resampling arithmetic to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resample {
    /// Pillow's `Image.resize` with this filter (antialiased on downscale).
    Pillow(Filter),
    /// OpenCV's `cv2.resize(..., interpolation=cv2.INTER_LINEAR)` (no antialiasing).
    OpenCvLinear,
}

impl Default for Resample {
    fn default() -> Self {
        Resample::Pillow(Filter::Bilinear)
    }
}

/// A reusable resizer that owns its scratch buffers.
#[derive(Clone, Debug, Default)]
pub struct Resizer {
    fir: fast_image_resize::Resizer,
    linear: opencv::LinearScratch,
    /// Horizontal-pass output (destination width x source height), see [`Resizer::resize`].
    between: alloc::vec::Vec<u8>,
}

impl Resizer {
    /// A resizer with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Resizes `src` to the size of `dst` (same packed format: Gray8, RGB, BGR, RGBA, BGRA).
    ///
    /// RGBA/BGRA are resized with premultiplied alpha, as Pillow does.
    pub fn resize(
        &mut self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        let bpp = packed_bpp("resize (convert YUV to RGB first)", src.format())?;
        if src.format() != dst.format() {
            return Err(Error::FormatMismatch {
                expected: src.format(),
                found: dst.format(),
            });
        }
        match resample {
            Resample::OpenCvLinear => {
                self.linear.resize(src, dst, bpp);
                Ok(())
            }
            Resample::Pillow(filter) => {
                let alg = match filter {
                    Filter::Nearest => ResizeAlg::Nearest,
                    Filter::Box => ResizeAlg::Convolution(FilterType::Box),
                    Filter::Bilinear => ResizeAlg::Convolution(FilterType::Bilinear),
                    Filter::Hamming => ResizeAlg::Convolution(FilterType::Hamming),
                    Filter::Bicubic => ResizeAlg::Convolution(FilterType::CatmullRom),
                    Filter::Lanczos3 => ResizeAlg::Convolution(FilterType::Lanczos3),
                };
                let options = ResizeOptions::new()
                    .resize_alg(alg)
                    .use_alpha(src.format().alpha_offset().is_some());
                let two_pass = filter != Filter::Nearest
                    && src.format().alpha_offset().is_none()
                    && src.width() != dst.width()
                    && src.height() != dst.height();
                if !two_pass {
                    return self.fir_pass(src, dst, bpp, &options);
                }
                // Pillow resamples horizontally first and rounds the intermediate rows to
                // u8; fast_image_resize goes vertical first for u8. Running it as two
                // one-dimensional passes in Pillow's order takes the mean difference from
                // 0.15-0.22 level to 0.01 or less (tests/parity.rs).
                let (w, h) = (dst.width(), src.height());
                let mut between = core::mem::take(&mut self.between);
                between.resize(w as usize * h as usize * bpp, 0);
                let result =
                    ImageViewMut::new(src.format(), w, h, &mut between).and_then(|mut mid| {
                        self.fir_pass(src, &mut mid, bpp, &options)?;
                        self.fir_pass(&mid.as_view(), dst, bpp, &options)
                    });
                self.between = between;
                result
            }
        }
    }

    fn fir_pass(
        &mut self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        bpp: usize,
        options: &ResizeOptions,
    ) -> Result<()> {
        let (w, h) = (dst.width(), dst.height());
        let stride = dst.stride(0);
        let data = dst.plane_data_mut(0);
        let result = match bpp {
            1 => self.fir.resize_typed(
                &fir_view::Src::<U8>::new(src),
                &mut fir_view::Dst::<U8>::new(data, stride, w, h),
                options,
            ),
            3 => self.fir.resize_typed(
                &fir_view::Src::<U8x3>::new(src),
                &mut fir_view::Dst::<U8x3>::new(data, stride, w, h),
                options,
            ),
            _ => self.fir.resize_typed(
                &fir_view::Src::<U8x4>::new(src),
                &mut fir_view::Dst::<U8x4>::new(data, stride, w, h),
                options,
            ),
        };
        result.map_err(|_| Error::InvalidParameter {
            name: "resize: source and destination rejected by the resampler",
        })
    }

    /// Resizes `src` to fit inside `dst` keeping its aspect ratio ([`SizeRule::Fit`]),
    /// places it at `placement` and fills the rest with `fill` (Ultralytics uses 114).
    ///
    /// Returns where the resized image lies in `dst`; map model coordinates back with
    /// `x_src = (x - rect.x) * src_w / rect.width`.
    pub fn letterbox(
        &mut self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
        placement: Placement,
        fill: &[u8],
    ) -> Result<Rect> {
        let (w, h) = SizeRule::Fit {
            width: dst.width(),
            height: dst.height(),
            upscale: true,
        }
        .output_size(src.width(), src.height())?;
        let rect = placement.rect(w, h, dst.width(), dst.height())?;
        fill_border(dst, rect, fill)?;
        self.resize(src, &mut dst.sub_view_mut(rect)?, resample)?;
        Ok(rect)
    }
}

/// One-shot [`Resizer::resize`] (allocates scratch; keep a [`Resizer`] for repeated calls).
pub fn resize(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, resample: Resample) -> Result<()> {
    Resizer::new().resize(src, dst, resample)
}

/// Allocating form: a new `width` x `height` image.
pub fn resize_owned(
    src: &ImageView<'_>,
    width: u32,
    height: u32,
    resample: Resample,
) -> Result<crate::Image> {
    let mut img = crate::Image::new(src.format(), width, height)?;
    resize(src, &mut img.view_mut(), resample)?;
    Ok(img)
}

/// Allocating form with the size given by a [`SizeRule`].
pub fn resize_by_rule(
    src: &ImageView<'_>,
    rule: SizeRule,
    resample: Resample,
) -> Result<crate::Image> {
    let (w, h) = rule.output_size(src.width(), src.height())?;
    resize_owned(src, w, h, resample)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PixelFormat;

    #[test]
    fn constant_images_stay_constant_for_every_filter() {
        // Opaque alpha, so premultiplication (as Pillow does for RGBA) is exact.
        let opaque: [u8; 13 * 9 * 4] = core::array::from_fn(|i| if i % 4 == 3 { 255 } else { 77 });
        let px = [77u8; 13 * 9 * 4];
        for format in [PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Bgra8] {
            let bpp = format.bytes_per_pixel().unwrap();
            let data = if bpp == 4 {
                &opaque[..]
            } else {
                &px[..13 * 9 * bpp]
            };
            let src = ImageView::new(format, 13, 9, data).unwrap();
            for r in [
                Resample::Pillow(Filter::Nearest),
                Resample::Pillow(Filter::Box),
                Resample::Pillow(Filter::Bilinear),
                Resample::Pillow(Filter::Hamming),
                Resample::Pillow(Filter::Bicubic),
                Resample::Pillow(Filter::Lanczos3),
                Resample::OpenCvLinear,
            ] {
                for (w, h) in [(5, 4), (26, 18), (13, 9), (1, 1)] {
                    let out = resize_owned(&src, w, h, r).unwrap();
                    let ok = out.as_bytes().chunks(bpp).all(|p| {
                        p.iter()
                            .enumerate()
                            .all(|(i, &v)| v == if i == 3 { 255 } else { 77 })
                    });
                    assert!(ok, "{format:?} {r:?} {w}x{h}");
                }
            }
        }
    }

    #[test]
    fn writes_into_a_strided_sub_view_only() {
        let src_px: [u8; 8 * 8] = core::array::from_fn(|i| i as u8);
        let src = ImageView::new(PixelFormat::Gray8, 8, 8, &src_px).unwrap();
        let mut canvas = [200u8; 10 * 10];
        let mut dst = ImageViewMut::new(PixelFormat::Gray8, 10, 10, &mut canvas).unwrap();
        let rect = Resizer::new()
            .letterbox(
                &src.crop(Rect::new(0, 0, 8, 4)).unwrap(),
                &mut dst,
                Resample::default(),
                Placement::Center,
                &[114],
            )
            .unwrap();
        // 8x4 fits 10x10 at scale 1.25 as 10x5, centred at top (10 - 5) / 2 = 2.
        assert_eq!(rect, Rect::new(0, 2, 10, 5));
        assert!(canvas[..20].iter().all(|&v| v == 114));
        assert!(canvas[70..].iter().all(|&v| v == 114));
        // The source crop holds values 0..32, so every pixel inside was written.
        assert!(canvas[20..70].iter().all(|&v| v < 32));
    }

    #[test]
    fn yuv_and_mismatched_formats_are_errors() {
        let px = [0u8; 6];
        let yuv = ImageView::new(PixelFormat::Nv12, 2, 2, &px).unwrap();
        let mut out = [0u8; 6];
        let mut dst = ImageViewMut::new(PixelFormat::Nv12, 2, 2, &mut out).unwrap();
        assert!(resize(&yuv, &mut dst, Resample::default()).is_err());
        let g = ImageView::new(PixelFormat::Gray8, 2, 2, &px[..4]).unwrap();
        let mut out = [0u8; 12];
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 2, 2, &mut out).unwrap();
        assert!(matches!(
            resize(&g, &mut dst, Resample::default()),
            Err(Error::FormatMismatch { .. })
        ));
    }
}
