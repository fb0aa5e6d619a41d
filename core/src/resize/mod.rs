//! Resizing, bit-identical to Pillow's `Image.resize` and OpenCV's `cv2.resize`.
//!
//! [`Resample::Pillow`] reproduces Pillow's separable fixed-point convolution
//! (antialiased when downscaling) for every filter, on Gray, RGB/BGR and
//! RGBA/BGRA (premultiplied, as Pillow does), with or without a fractional
//! source box ([`SourceBox`], Pillow's `box=`). [`Resample::OpenCvLinear`] and
//! [`Resample::OpenCvArea`] reproduce `INTER_LINEAR` and `INTER_AREA`.
//!
//! Work is split the way a pipeline needs it: a [`ResizePlan`] holds the
//! coefficient tables for one (source size, box, destination size, method) and
//! is immutable; a [`ResizeState`] holds the scratch rows. After the first run
//! neither allocates again. [`Resizer`] bundles both for eager use and rebuilds
//! the plan only when the sizes change.
//!
//! To resize a region as if it had been cropped first (torchvision's
//! `resized_crop`), pass a cropped view ([`ImageView::crop`]): nothing is copied.
//! To let the filter see pixels outside the region (Pillow's `box=`), pass the
//! whole image and a [`SourceBox`].
//!
//! ```
//! use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! let src_px = vec![200u8; 64 * 48 * 3];
//! let src = ImageView::new(PixelFormat::Rgb8, 64, 48, &src_px)?;
//! let mut out = vec![0u8; 16 * 12 * 3];
//! // Once per input size: the coefficient tables.
//! let plan = ResizePlan::new((64, 48), (16, 12), Resample::Pillow(Filter::Bilinear))?;
//! // Once per thread: the scratch rows.
//! let mut state = ResizeState::new();
//! // Per image: no allocation after the first.
//! plan.run(&mut state, &src, &mut ImageViewMut::new(PixelFormat::Rgb8, 16, 12, &mut out)?)?;
//! assert!(out.iter().all(|&v| v == 200));
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod coeffs;
mod kernels;
mod opencv;
mod pillow;

pub use kernels::Simd;

use crate::geometry::{Placement, fill_border};
use crate::image::packed_bpp;
use crate::size::SizeRule;
use crate::{Error, ImageView, ImageViewMut, Limits, Rect, Result};

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
    /// OpenCV's `cv2.resize(..., interpolation=cv2.INTER_AREA)`: pixel-area
    /// averaging when shrinking, a linear variant when enlarging.
    OpenCvArea,
}

impl Filter {
    /// Every filter, in Pillow's order of increasing support.
    pub const ALL: [Filter; 6] = [
        Filter::Nearest,
        Filter::Box,
        Filter::Bilinear,
        Filter::Hamming,
        Filter::Bicubic,
        Filter::Lanczos3,
    ];
}

impl Resample {
    /// Every method: the six Pillow filters, then the two OpenCV modes.
    pub const ALL: [Resample; 8] = [
        Resample::Pillow(Filter::Nearest),
        Resample::Pillow(Filter::Box),
        Resample::Pillow(Filter::Bilinear),
        Resample::Pillow(Filter::Hamming),
        Resample::Pillow(Filter::Bicubic),
        Resample::Pillow(Filter::Lanczos3),
        Resample::OpenCvLinear,
        Resample::OpenCvArea,
    ];
}

impl Default for Resample {
    fn default() -> Self {
        Resample::Pillow(Filter::Bilinear)
    }
}

/// A source region in source pixel coordinates, Pillow's `box=(x0, y0, x1, y1)`.
///
/// Coordinates may be fractional. Unlike a cropped view, the filter still reads
/// pixels just outside the box (clamped only at the image border), as Pillow does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourceBox {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge (exclusive).
    pub x1: f32,
    /// Bottom edge (exclusive).
    pub y1: f32,
}

impl SourceBox {
    /// The whole `width` x `height` image.
    pub const fn full(width: u32, height: u32) -> SourceBox {
        SourceBox {
            x0: 0.0,
            y0: 0.0,
            x1: width as f32,
            y1: height as f32,
        }
    }

    /// Checks that the box is finite, ordered and inside `width` x `height`.
    fn check(&self, width: u32, height: u32) -> Result<()> {
        let ok = [self.x0, self.y0, self.x1, self.y1]
            .iter()
            .all(|v| v.is_finite())
            && 0.0 <= self.x0
            && self.x0 <= self.x1
            && self.x1 <= width as f32
            && 0.0 <= self.y0
            && self.y0 <= self.y1
            && self.y1 <= height as f32;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "resize: source box must be finite, ordered and inside the image",
            })
        }
    }
}

impl From<Rect> for SourceBox {
    fn from(r: Rect) -> SourceBox {
        SourceBox {
            x0: r.x as f32,
            y0: r.y as f32,
            x1: (r.x as u64 + r.width as u64) as f32,
            y1: (r.y as u64 + r.height as u64) as f32,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Method {
    Pillow(pillow::PillowPlan),
    OpenCv(opencv::OpenCvPlan),
}

/// Everything a resize of one source size to one destination size needs that
/// does not depend on the pixels: the coefficient tables, computed once.
///
/// Immutable and `Send + Sync`: share one plan between threads, give each
/// thread its own [`ResizeState`].
#[derive(Clone, Debug, PartialEq)]
pub struct ResizePlan {
    src: (u32, u32),
    dst: (u32, u32),
    source_box: SourceBox,
    resample: Resample,
    simd: Simd,
    method: Method,
}

impl ResizePlan {
    /// A plan resizing whole `src` (width, height) images to `dst` (width, height).
    pub fn new(src: (u32, u32), dst: (u32, u32), resample: Resample) -> Result<ResizePlan> {
        Self::with_source_box(
            src,
            SourceBox::full(src.0, src.1),
            dst,
            resample,
            &Limits::DEFAULT,
        )
    }

    /// A plan resizing the region `source_box` of `src`-sized images to `dst`,
    /// with tables capped by `limits`.
    ///
    /// OpenCV methods take no fractional box (`cv2.resize` has none): for them
    /// the box must be integral, and it acts as a crop.
    pub fn with_source_box(
        src: (u32, u32),
        source_box: SourceBox,
        dst: (u32, u32),
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlan> {
        crate::image::check_dimensions(u64::from(src.0), u64::from(src.1))?;
        crate::image::check_dimensions(u64::from(dst.0), u64::from(dst.1))?;
        limits.check_pixels(u64::from(dst.0), u64::from(dst.1))?;
        source_box.check(src.0, src.1)?;
        let method = match resample {
            Resample::Pillow(filter) => {
                let plan = pillow::PillowPlan::new(src, source_box, dst, filter, limits)?;
                // The scratch a run will grow to, refused now rather than when running.
                limits.check_alloc(plan.scratch_bytes(src, dst))?;
                Method::Pillow(plan)
            }
            Resample::OpenCvLinear | Resample::OpenCvArea => {
                let b = source_box;
                let integral = [b.x0, b.y0, b.x1, b.y1]
                    .iter()
                    .all(|v| *v == libm::truncf(*v));
                if !integral || b.x1 == b.x0 || b.y1 == b.y0 {
                    return Err(Error::InvalidParameter {
                        name: "resize: OpenCV methods take only a non-empty integral source box",
                    });
                }
                let region = ((b.x1 - b.x0) as u32, (b.y1 - b.y0) as u32);
                let mode = if resample == Resample::OpenCvLinear {
                    opencv::Mode::Linear
                } else {
                    opencv::Mode::Area
                };
                Method::OpenCv(opencv::OpenCvPlan::new(mode, region, dst))
            }
        };
        Ok(ResizePlan {
            src,
            dst,
            source_box,
            resample,
            simd: Simd::detect(),
            method,
        })
    }

    /// The same plan running its inner loops on `simd` instead of the detected
    /// best path (to compare paths; results are identical by design).
    pub fn with_simd(mut self, simd: Simd) -> Result<ResizePlan> {
        if !simd.is_available() {
            return Err(Error::InvalidParameter {
                name: "resize: this CPU does not support the requested SIMD path",
            });
        }
        self.simd = simd;
        Ok(self)
    }

    /// The instruction set the inner loops use.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Source size (width, height) the plan accepts.
    pub fn src_size(&self) -> (u32, u32) {
        self.src
    }

    /// Destination size (width, height) the plan writes.
    pub fn dst_size(&self) -> (u32, u32) {
        self.dst
    }

    /// The method reproduced.
    pub fn resample(&self) -> Resample {
        self.resample
    }

    /// The source region read.
    pub fn source_box(&self) -> SourceBox {
        self.source_box
    }

    /// Resizes `src` into `dst` (same packed format: Gray8, RGB, BGR, RGBA, BGRA).
    ///
    /// Sizes must be the plan's. RGBA/BGRA are resampled premultiplied, as Pillow does
    /// (except with `NEAREST`, which Pillow applies to the raw values).
    pub fn run(
        &self,
        state: &mut ResizeState,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<()> {
        let bpp = packed_bpp("resize (convert YUV to RGB first)", src.format())?;
        if src.format() != dst.format() {
            return Err(Error::FormatMismatch {
                expected: src.format(),
                found: dst.format(),
            });
        }
        for (expected, found) in [
            (self.src, (src.width(), src.height())),
            (self.dst, (dst.width(), dst.height())),
        ] {
            if expected != found {
                return Err(Error::SizeMismatch { expected, found });
            }
        }
        match &self.method {
            Method::Pillow(p) => {
                let alpha = src.format().alpha_offset().is_some()
                    && self.resample != Resample::Pillow(Filter::Nearest);
                p.run(self.simd, state, src, dst, bpp, alpha)
            }
            Method::OpenCv(p) => {
                let b = self.source_box;
                let region = Rect::new(
                    b.x0 as u32,
                    b.y0 as u32,
                    (b.x1 - b.x0) as u32,
                    (b.y1 - b.y0) as u32,
                );
                p.run(&mut state.opencv, &src.crop(region)?, dst, bpp);
                Ok(())
            }
        }
    }
}

/// Scratch rows of a resize, reused between runs (one per thread).
#[derive(Clone, Debug, Default)]
pub struct ResizeState {
    /// Output of the first pass.
    between: alloc::vec::Vec<u8>,
    /// Premultiplied source rows (RGBA when the vertical pass reads the source).
    premultiplied: alloc::vec::Vec<u8>,
    /// Interleaved rows of the eight-row horizontal kernel.
    block: alloc::vec::Vec<u8>,
    opencv: opencv::OpenCvState,
}

impl ResizeState {
    /// Empty scratch; it grows on the first run and is reused afterwards.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A plan and its state for eager use: the plan is rebuilt only when the sizes,
/// box or method change, so repeated calls on same-sized images do not allocate.
#[derive(Clone, Debug, Default)]
pub struct Resizer {
    plan: Option<ResizePlan>,
    state: ResizeState,
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
        let full = SourceBox::full(src.width(), src.height());
        self.resize_box(src, full, dst, resample)
    }

    /// Resizes the region `source_box` of `src` to the size of `dst` (Pillow's `box=`).
    pub fn resize_box(
        &mut self,
        src: &ImageView<'_>,
        source_box: SourceBox,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        let (s, d) = ((src.width(), src.height()), (dst.width(), dst.height()));
        let plan = match self.plan.take() {
            Some(p)
                if p.src == s
                    && p.dst == d
                    && p.resample == resample
                    && p.source_box == source_box =>
            {
                p
            }
            // A different job: the old tables are dropped before the new ones are built.
            _ => ResizePlan::with_source_box(s, source_box, d, resample, &Limits::DEFAULT)?,
        };
        self.plan.insert(plan).run(&mut self.state, src, dst)
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
            for r in Resample::ALL {
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
