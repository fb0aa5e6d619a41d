//! Pipelines: a list of ops compiled once into a plan, then run per image
//! without allocating.
//!
//! A [`Pipeline`] is the description: an ordered list of [`Op`]s with every
//! parameter explicit. [`Pipeline::compile`] turns it, for one kind of input
//! ([`InputDesc`]), into an immutable [`Plan`] (`Send + Sync`) that knows every
//! intermediate shape and has fused what can be fused:
//!
//! - a crop before a resize becomes the region the resampler reads, and a crop
//!   after it becomes the window the resampler computes: nothing is copied and
//!   no pixel outside the crop is computed;
//! - colour conversion (YUV to RGB, BGRA to RGB, ...) runs inside the first op
//!   that reads the pixels, one row at a time, and only on the rows it reads;
//! - crop + normalize + layout + cast run as one finish pass into the tensor;
//! - with libjpeg-turbo, only the JPEG rows and MCU columns the output needs
//!   are decoded, and an opt-in fast mode decodes at reduced size in the DCT
//!   domain.
//!
//! Each thread keeps a [`PlanState`] holding the scratch buffers; after the
//! first run for an input size, [`Plan::run`] makes no heap allocation.
//!
//! ```
//! use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
//! use tensorprep::{ImageView, PixelFormat, TensorMut};
//!
//! // torchvision's ImageNet eval transform, for 640x480 RGB frames.
//! let plan = Pipeline::imagenet_eval().compile(InputDesc::pixels(PixelFormat::Rgb8, 640, 480))?;
//! assert_eq!(plan.output_shape(), Some([3, 224, 224]));
//!
//! let frame = vec![90u8; 640 * 480 * 3];
//! let mut state = PlanState::new();
//! let mut tensor = vec![0f32; plan.output_len().unwrap()];
//! let view = ImageView::new(PixelFormat::Rgb8, 640, 480, &frame)?;
//! plan.run(&mut state, Input::Pixels(view), TensorMut::F32(&mut tensor))?;
//! assert_eq!(tensor[0], (90.0 / 255.0 - 0.485) / 0.229);
//! # Ok::<(), tensorprep::Error>(())
//! ```

#![forbid(unsafe_code)]

mod arena;
mod execute;
mod mapping;
mod op;
#[cfg(feature = "alloc")]
mod plan;
mod preset;
mod resolve;
#[cfg(feature = "std")]
mod source;

pub use arena::{ArenaPlan, ArenaPlanState};
pub use mapping::{Affine, Geometry};
#[cfg(feature = "graph")]
pub(crate) use op::message as op_message;
pub use op::{CenterCrop, CropRounding, Decode, DecodeScaling, Op, Pad, PadTo, Resize};
#[cfg(feature = "alloc")]
pub use plan::{Input, Plan, PlanState};
#[cfg(feature = "std")]
pub use source::{BytesSource, FileSource, FrameSource, Source};

use crate::{Error, PixelFormat, Result};

/// The most ops a pipeline holds (also the fixed capacity without `alloc`).
pub const MAX_OPS: usize = 32;

#[cfg(feature = "alloc")]
type OpList = alloc::vec::Vec<Op>;
#[cfg(not(feature = "alloc"))]
type OpList = heapless::Vec<Op, MAX_OPS>;

/// An ordered list of ops: the description of a preprocessing pipeline.
///
/// Without the `alloc` feature the list is a fixed-capacity `heapless::Vec`;
/// either way it holds at most [`MAX_OPS`] ops.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pipeline {
    ops: OpList,
}

impl Pipeline {
    /// An empty pipeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// A pipeline of `ops`, in order.
    pub fn from_ops(ops: &[Op]) -> Result<Self> {
        let mut p = Pipeline::new();
        for op in ops {
            p.push(*op)?;
        }
        Ok(p)
    }

    /// Appends an op.
    pub fn push(&mut self, op: Op) -> Result<&mut Self> {
        let full = Error::InvalidParameter {
            name: "pipeline",
            reason: "too many ops (the limit is MAX_OPS)",
        };
        if self.ops.len() >= MAX_OPS {
            return Err(full);
        }
        #[cfg(feature = "alloc")]
        self.ops.push(op);
        #[cfg(not(feature = "alloc"))]
        self.ops.push(op).map_err(|_| full)?;
        Ok(self)
    }

    /// Builder form of [`Pipeline::push`].
    pub fn then(mut self, op: Op) -> Result<Self> {
        self.push(op)?;
        Ok(self)
    }

    /// The ops, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }
}

/// What a plan is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputDesc {
    /// Raw pixels of one format and size (camera frames, decoded images).
    Pixels {
        /// Pixel format, YUV included.
        format: PixelFormat,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// Encoded image files (JPEG, PNG, WebP: the format is found from each
    /// file's bytes); each image's size is known after its header.
    Encoded,
}

impl InputDesc {
    /// Raw pixels of `format`, `width` x `height`.
    pub const fn pixels(format: PixelFormat, width: u32, height: u32) -> InputDesc {
        InputDesc::Pixels {
            format,
            width,
            height,
        }
    }
}
