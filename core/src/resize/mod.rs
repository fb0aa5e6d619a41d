//! Resizing, bit-identical to Pillow's `Image.resize` and OpenCV's `cv2.resize`.
//!
//! [`Resample::Pillow`] reproduces Pillow's separable fixed-point convolution
//! (antialiased when downscaling) for every filter, on Gray, RGB/BGR and
//! RGBA/BGRA (premultiplied, as Pillow does), with or without a fractional
//! source box ([`SourceBox`], Pillow's `box=`). [`Resample::OpenCvLinear`] and
//! [`Resample::OpenCvArea`] reproduce `INTER_LINEAR` and `INTER_AREA`;
//! [`Resample::Torch`] and [`Resample::TorchFloat`] reproduce PyTorch's
//! antialiased resize (torchvision's `Resize` on tensors) and
//! [`Resample::LibyuvBilinear`] libyuv's bilinear `ARGBScale` and
//! `ScalePlane` (the TFLite Task Library's). Float32 images (depth maps, HDR) resize with Pillow's `F`
//! mode or PyTorch's float arithmetic through [`FloatResizer`].
//!
//! Work is split the way a pipeline needs it: a [`ResizePlan`] holds the
//! coefficient tables for one (source size, box, destination size, method) and
//! is immutable; a [`ResizeState`] holds the scratch rows. After the first run
//! neither allocates again. [`Resizer`] bundles both for eager use and rebuilds
//! the plan only when the sizes change.
//!
//! To resize a region as if it had been cropped first (torchvision's
//! `resized_crop`), pass a cropped view ([`crate::ImageView::crop`]): nothing is copied.
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
#[cfg(feature = "resize-float")]
mod float;
mod kernels;
#[cfg(feature = "resize-libyuv")]
mod libyuv;
mod opencv;
mod pillow;
mod plan;
#[cfg(any(feature = "resize-torch", feature = "resize-float"))]
#[cfg_attr(not(feature = "resize-torch"), allow(dead_code))]
mod torch_float;

#[cfg(feature = "resize-float")]
pub use float::{
    FloatImage, FloatPixels, FloatResizer, FloatView, FloatViewMut, MAX_FLOAT_CHANNELS, resize_f32,
    resize_f32_by_rule,
};
pub use kernels::Simd;
pub(crate) use plan::ResizeScratch;
#[cfg(feature = "alloc")]
pub(crate) use plan::Spares;
pub use plan::{ArenaResizePlan, ArenaResizeState, ResizePlanIn, ResizeStateIn, resize_in};
#[cfg(feature = "alloc")]
pub use plan::{ResizePlan, ResizeState, Resizer, resize, resize_by_rule, resize_owned};

use crate::{Error, Rect, Result};

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
#[non_exhaustive]
pub enum Resample {
    /// Pillow's `Image.resize` with this filter (antialiased on downscale).
    Pillow(Filter),
    /// PyTorch's `interpolate(mode=..., antialias=True)` on `uint8` tensors,
    /// with [`Filter::Bilinear`] or [`Filter::Bicubic`] (or, with
    /// [`Filter::Nearest`], `mode="nearest"`: source index
    /// `min(floor(i * (in / out)), in - 1)` in float32, `i >> 1` when the size
    /// doubles): what torchvision's
    /// `Resize` does to `uint8` tensors (`transforms.v2`, `read_image`/`decode_jpeg`
    /// pipelines) and what the Hugging Face image processors' torchvision
    /// backend does. Pillow's filter and weights, rounded to 16-bit integers with
    /// a precision chosen per axis; alpha is resampled as a plain channel.
    ///
    /// A source box must be integral and acts as a crop (tensors are sliced,
    /// not boxed). torchvision resizes bilinear `uint8` tensors this way only on
    /// CPUs PyTorch reports as `AVX2`; elsewhere it goes through float32
    /// ([`Resample::TorchFloat`]).
    Torch(Filter),
    /// PyTorch's `interpolate(mode=..., antialias=True)` on the float32 of
    /// 8-bit pixels, clamped to 0-255 and rounded half to even: what
    /// torchvision's `Resize` does to a `uint8` tensor with BILINEAR on CPUs
    /// PyTorch does not report as `AVX2` (AVX-512 x86, ARM). [`Filter::Bilinear`]
    /// or [`Filter::Bicubic`]; float32 weights and sums with the fused
    /// multiply-adds of PyTorch's x86 and aarch64 builds. Boxes as for
    /// [`Resample::Torch`].
    TorchFloat(Filter),
    /// PyTorch's `interpolate(mode="nearest-exact")` on `uint8` tensors: source
    /// index `min(floor((i + 0.5) * (in / out)), in - 1)`. What the Hugging
    /// Face processors' torchvision backend runs for `resample: NEAREST`.
    /// Boxes as for [`Resample::Torch`].
    TorchNearestExact,
    /// libyuv's bilinear scaling: `ARGBScale(..., kFilterBilinear)` for
    /// pixels of 2 to 4 bytes, `ScalePlane(..., kFilterBilinear)` for gray;
    /// the TFLite Task Library's and MediaPipe's resize on Android. 16.16
    /// fixed-point positions, rows interpolated with an 8-bit fraction,
    /// columns with a 7-bit one (ARGB) or a 16-bit one (planes, as libyuv's
    /// ARM build blends them), and libyuv's shortcuts for integer factors
    /// and, on planes, for 3/4, 3/8 and 2x (with the NEON rounding Android
    /// runs). Boxes as for [`Resample::Torch`].
    LibyuvBilinear,
    /// OpenCV's `cv2.resize(..., interpolation=cv2.INTER_LINEAR)` (no antialiasing).
    OpenCvLinear,
    /// OpenCV's `cv2.resize(..., interpolation=cv2.INTER_AREA)`: pixel-area
    /// averaging when shrinking, a linear variant when enlarging.
    OpenCvArea,
    /// The arithmetic of the `fast_image_resize` crate (6.x) with its default
    /// options, for users who choose speed over matching Pillow: its
    /// `ResizeAlg::Convolution` with this filter ([`Filter::Bicubic`] is its
    /// `CatmullRom`), or `ResizeAlg::Nearest` for [`Filter::Nearest`]. **Not
    /// exact to any Python library**: like Pillow it antialiases when
    /// shrinking, but it trims zero taps, rounds its weights to 16 bits with a
    /// precision chosen per axis and filters columns before rows, so it
    /// differs from Pillow by a level or two on some pixels (measured in
    /// docs/parity.md, "Resize"). Bit-identical to `fast_image_resize` itself, with the
    /// coefficient tables computed once per plan (the crate recomputes them,
    /// with hundreds of allocations, on every call). A [`SourceBox`] may be
    /// fractional (its `SrcCropping::Crop`); 4-byte pixels are resampled with
    /// their alpha multiplied in and divided back as the crate does.
    FastImageResize(Filter),
}

impl Filter {
    /// A filter by the name timm, torchvision (`InterpolationMode`'s values)
    /// and Pillow give it: `nearest`, `bilinear` (or `linear`), `bicubic` (or
    /// `cubic`), `box`, `hamming`, `lanczos`; any case.
    ///
    /// ```
    /// use tensorprep::resize::Filter;
    /// assert_eq!(Filter::from_name("BICUBIC"), Some(Filter::Bicubic));
    /// assert_eq!(Filter::from_name("area"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Filter> {
        const NAMES: [(&str, Filter); 8] = [
            ("nearest", Filter::Nearest),
            ("bilinear", Filter::Bilinear),
            ("linear", Filter::Bilinear),
            ("bicubic", Filter::Bicubic),
            ("cubic", Filter::Bicubic),
            ("box", Filter::Box),
            ("hamming", Filter::Hamming),
            ("lanczos", Filter::Lanczos3),
        ];
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, f)| f)
    }

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
    /// Every method: the six Pillow filters, the two OpenCV modes,
    /// PyTorch's on `uint8` and on float32, libyuv's bilinear,
    /// PyTorch's nearest and nearest-exact, then `fast_image_resize`'s six.
    pub const ALL: [Resample; 21] = [
        Resample::Pillow(Filter::Nearest),
        Resample::Pillow(Filter::Box),
        Resample::Pillow(Filter::Bilinear),
        Resample::Pillow(Filter::Hamming),
        Resample::Pillow(Filter::Bicubic),
        Resample::Pillow(Filter::Lanczos3),
        Resample::OpenCvLinear,
        Resample::OpenCvArea,
        Resample::Torch(Filter::Bilinear),
        Resample::Torch(Filter::Bicubic),
        Resample::TorchFloat(Filter::Bilinear),
        Resample::TorchFloat(Filter::Bicubic),
        Resample::LibyuvBilinear,
        Resample::Torch(Filter::Nearest),
        Resample::TorchNearestExact,
        Resample::FastImageResize(Filter::Nearest),
        Resample::FastImageResize(Filter::Box),
        Resample::FastImageResize(Filter::Bilinear),
        Resample::FastImageResize(Filter::Hamming),
        Resample::FastImageResize(Filter::Bicubic),
        Resample::FastImageResize(Filter::Lanczos3),
    ];

    /// Whether the method reproduces a reference library bit for bit
    /// (every one but [`Resample::FastImageResize`], which trades that for speed).
    ///
    /// ```
    /// use tensorprep::resize::{Filter, Resample};
    /// assert!(Resample::Pillow(Filter::Bilinear).is_exact());
    /// assert!(!Resample::FastImageResize(Filter::Bilinear).is_exact());
    /// ```
    pub const fn is_exact(self) -> bool {
        !matches!(self, Resample::FastImageResize(_))
    }

    /// The Cargo feature that builds the method's arithmetic (`None` for
    /// Pillow's and OpenCV's, which are always built).
    ///
    /// ```
    /// use tensorprep::resize::{Filter, Resample};
    /// assert_eq!(Resample::Pillow(Filter::Bilinear).feature(), None);
    /// assert_eq!(Resample::LibyuvBilinear.feature(), Some("resize-libyuv"));
    /// ```
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            Resample::Torch(_) | Resample::TorchFloat(_) | Resample::TorchNearestExact => {
                Some("resize-torch")
            }
            Resample::LibyuvBilinear => Some("resize-libyuv"),
            Resample::FastImageResize(_) => Some("resize-fir"),
            Resample::Pillow(_) | Resample::OpenCvLinear | Resample::OpenCvArea => None,
        }
    }

    /// Whether this build has the method ([`Resample::feature`] enabled).
    pub const fn is_built(self) -> bool {
        match self {
            Resample::Torch(_) | Resample::TorchFloat(_) | Resample::TorchNearestExact => {
                cfg!(feature = "resize-torch")
            }
            Resample::LibyuvBilinear => cfg!(feature = "resize-libyuv"),
            Resample::FastImageResize(_) => cfg!(feature = "resize-fir"),
            Resample::Pillow(_) | Resample::OpenCvLinear | Resample::OpenCvArea => true,
        }
    }

    /// [`Error::NotBuilt`] naming the feature if this build lacks the method.
    pub(crate) fn check_built(self) -> Result<()> {
        match self.feature() {
            Some(feature) if !self.is_built() => Err(Error::NotBuilt {
                what: match self {
                    Resample::LibyuvBilinear => "libyuv's bilinear resize",
                    Resample::FastImageResize(_) => "fast_image_resize's resize",
                    _ => "PyTorch's resize",
                },
                feature,
            }),
            _ => Ok(()),
        }
    }
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
    pub(crate) fn check(&self, width: u32, height: u32) -> Result<()> {
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
                name: "resize",
                reason: "source box must be finite, ordered and inside the image",
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
