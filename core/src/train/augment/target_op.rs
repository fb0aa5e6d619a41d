//! The box-only transforms (`ClampBoundingBoxes`, `SanitizeBoundingBoxes`,
//! `ConvertBoundingBoxFormat`) as a training pipeline's step: no draw, no
//! pixels; run on the sample's target where they stand.

use super::unit::{At, Augmentation, Nested, Targets};
use super::{Drawing, Drawn, invalid};
use crate::Result;
use crate::targets::TargetOp;

impl Augmentation for TargetOp {
    fn check(&self) -> Result<()> {
        match *self {
            TargetOp::Clamp | TargetOp::ConvertFormat(_) => Ok(()),
            TargetOp::Sanitize { min_size, min_area } => {
                if min_size >= 1.0 && min_area >= 1.0 {
                    Ok(())
                } else {
                    Err(invalid(
                        "SanitizeBoundingBoxes",
                        "min_size and min_area must be at least 1",
                    ))
                }
            }
            TargetOp::ZeroUncentred { .. } | TargetOp::DropEmpty => Err(invalid(
                "training pipeline",
                "RandomIoUCrop and FixedSizeCrop draw their own box filters",
            )),
        }
    }

    fn draw(&self, _: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        ops.push(Drawn::Target(*self))?;
        Ok(size)
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        before
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}
