//! A fixed image op of the inference pipeline (resize, crop, pad, flip,
//! rotate) as a training pipeline's step: no draw, fused by the plan.

use super::Drawing;
use super::unit::{At, Augmentation, Nested, Targets};
use super::{Drawn, invalid};
use crate::Result;
use crate::pipeline::Op;

impl Augmentation for Op {
    fn check(&self) -> Result<()> {
        match self {
            Op::Decode(_) | Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. } => Err(invalid(
                "training pipeline",
                "Decode and the finish ops are the pipeline's own, not augment steps",
            )),
            Op::ConvertColor { .. } => Err(invalid(
                "training pipeline",
                "choose the pixel format in Decode (ConvertColor is not an augment step)",
            )),
            _ => Ok(()),
        }
    }

    fn draw(&self, _: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        ops.push(Drawn::Op(*self))?;
        self.output_size(size)
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        Op::fixed_size(self, before).ok().flatten()
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        matches!(self, Op::Resize(_) | Op::Crop(_) | Op::CenterCrop(_))
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}
