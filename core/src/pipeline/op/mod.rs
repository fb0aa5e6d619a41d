//! The ops a pipeline is made of, each with every parameter explicit.

use crate::color::YuvRange;
use crate::finish::{ChannelOrder, Normalize};
use crate::geometry::{Flip, Placement, Rotation};
use crate::jpeg::{Backend, Orientation};
use crate::resize::Resample;
use crate::size::SizeRule;
use crate::{DType, Layout, PixelFormat, Quantization, Rect};

/// One step of a [`Pipeline`](super::Pipeline).
///
/// Pixel ops (decode, colour, geometry) come first, then the finish ops
/// ([`Op::Normalize`], [`Op::Layout`], [`Op::Cast`]), which the compiled plan
/// runs as one pass writing the tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Decode an encoded (JPEG) input. Pixel inputs skip it, so one pipeline
    /// serves both files and camera frames.
    Decode(Decode),
    /// Convert to a packed colour format. Runs inside the next op that reads
    /// the pixels, one row at a time, never as a pass of its own.
    ConvertColor {
        /// Packed target format: Gray8, Rgb8, Bgr8, Rgba8 or Bgra8.
        to: PixelFormat,
        /// Range of YUV sources (ignored for others).
        range: YuvRange,
    },
    /// Resize to a size given by a rule, with a given resampler.
    Resize(Resize),
    /// A centred crop of the given size.
    CenterCrop(CenterCrop),
    /// A crop at a fixed rectangle.
    Crop(Rect),
    /// Pad with a constant colour: fixed borders, or out to a canvas size
    /// (the second half of a letterbox).
    Pad(Pad),
    /// Mirror.
    Flip(Flip),
    /// Rotate by a multiple of 90 degrees clockwise.
    Rotate(Rotation),
    /// Per-channel `(v / divisor - mean) / std`.
    Normalize(Normalize),
    /// Output layout and channel order.
    Layout {
        /// CHW (planar) or HWC (interleaved).
        layout: Layout,
        /// RGB, BGR or one gray channel.
        order: ChannelOrder,
    },
    /// Output element type and, for integer types, the quantization.
    Cast {
        /// Element type.
        dtype: DType,
        /// Scale and zero point for [`DType::U8`] / [`DType::I8`];
        /// [`Quantization::IDENTITY`] stores the values as they are, clamped.
        quantization: Quantization,
    },
}

impl Op {
    /// The three finish ops: normalize, then lay out and cast.
    ///
    /// ```
    /// use tensorprep::finish::{ChannelOrder, Normalize};
    /// use tensorprep::pipeline::Op;
    /// use tensorprep::{DType, Layout, Quantization};
    ///
    /// // ToTensor + Normalize(ImageNet), CHW float32: the end of torchvision's eval transform.
    /// let ops = Op::finish(Normalize::IMAGENET, Layout::Chw, ChannelOrder::Rgb, DType::F32, Quantization::IDENTITY);
    /// assert_eq!(ops[0], Op::Normalize(Normalize::IMAGENET));
    /// ```
    pub const fn finish(
        normalize: Normalize,
        layout: Layout,
        order: ChannelOrder,
        dtype: DType,
        quantization: Quantization,
    ) -> [Op; 3] {
        [
            Op::Normalize(normalize),
            Op::Layout { layout, order },
            Op::Cast {
                dtype,
                quantization,
            },
        ]
    }

    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Decode(_) => "Decode",
            Op::ConvertColor { .. } => "ConvertColor",
            Op::Resize(_) => "Resize",
            Op::CenterCrop(_) => "CenterCrop",
            Op::Crop(_) => "Crop",
            Op::Pad(_) => "Pad",
            Op::Flip(_) => "Flip",
            Op::Rotate(_) => "Rotate",
            Op::Normalize(_) => "Normalize",
            Op::Layout { .. } => "Layout",
            Op::Cast { .. } => "Cast",
        }
    }

    /// Whether this op belongs to the finish pass.
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    pub(crate) fn is_finish(&self) -> bool {
        matches!(self, Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. })
    }
}

/// How a JPEG is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decode {
    /// Which decoder.
    pub backend: Backend,
    /// Packed format the decoded pixels are delivered in (Gray8, Rgb8, ...).
    pub format: PixelFormat,
    /// Whether the EXIF orientation is applied.
    pub orientation: Orientation,
    /// Reject truncated or corrupt files (recommended).
    pub strict: bool,
    /// Exact (full-size) decoding, or the faster reduced-size one.
    pub scaling: DecodeScaling,
    /// With libjpeg-turbo, decode only the rows and MCU-aligned columns the
    /// output needs. The pixels are the same as with a full decode; off, or
    /// with `zune-jpeg`, the whole image is decoded.
    pub region_of_interest: bool,
}

impl Decode {
    /// Exact decoding with `backend`, RGB output, orientation as stored, strict,
    /// region-of-interest decoding on (it only changes speed).
    pub const fn exact(backend: Backend) -> Decode {
        Decode {
            backend,
            format: PixelFormat::Rgb8,
            orientation: Orientation::Ignore,
            strict: true,
            scaling: DecodeScaling::Exact,
            region_of_interest: true,
        }
    }
}

/// Full-size or DCT-domain reduced-size decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DecodeScaling {
    /// Decode at full size: the pixels are the decoder's exact output.
    #[default]
    Exact,
    /// When the decode is followed by a resize, decode at 1/2, 1/4 or 1/8 —
    /// the smallest scale that stays at least twice the resize's target on
    /// both sides — and resize from there to the same target. Pillow's
    /// `draft()` mode: much faster on large photos, not bit-exact (see the
    /// README for the measured deviation). Needs libjpeg-turbo.
    Fast,
}

/// A resize step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resize {
    /// How the output size follows from the input size (with its rounding rule).
    pub size: SizeRule,
    /// Which library's resampling to reproduce, and its filter.
    pub resample: Resample,
}

/// How a centred crop's offset is rounded when the leftover is odd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CropRounding {
    /// torchvision: `int(round((size - crop) / 2.0))`, ties to even.
    #[default]
    HalfEven,
    /// Floor, `(size - crop) // 2` (Hugging Face's PIL path, OpenCV code).
    Floor,
}

/// A centred crop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CenterCrop {
    /// Crop width; must not exceed the image width.
    pub width: u32,
    /// Crop height; must not exceed the image height.
    pub height: u32,
    /// Offset rounding.
    pub rounding: CropRounding,
}

impl CenterCrop {
    /// The crop rectangle inside a `width` x `height` image, if it fits.
    pub fn rect(&self, width: u32, height: u32) -> Option<Rect> {
        if self.width > width || self.height > height {
            return None;
        }
        let offset = |d: u32| match self.rounding {
            CropRounding::Floor => d / 2,
            // round(d / 2) with ties to even.
            CropRounding::HalfEven => d / 2 + u32::from(d % 2 == 1 && (d / 2) % 2 == 1),
        };
        Some(Rect::new(
            offset(width - self.width),
            offset(height - self.height),
            self.width,
            self.height,
        ))
    }
}

/// A padding step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pad {
    /// Where the image goes.
    pub to: PadTo,
    /// Fill colour as R, G, B (gray uses its luma; alpha is opaque).
    pub fill: [u8; 3],
}

/// The padded size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PadTo {
    /// Fixed borders on each side.
    Borders {
        /// Columns added on the left.
        left: u32,
        /// Rows added on top.
        top: u32,
        /// Columns added on the right.
        right: u32,
        /// Rows added at the bottom.
        bottom: u32,
    },
    /// A canvas of this size, the image placed inside (it must fit).
    Canvas {
        /// Canvas width.
        width: u32,
        /// Canvas height.
        height: u32,
        /// Where the image goes.
        placement: Placement,
    },
}
