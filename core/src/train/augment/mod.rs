//! The random ops of a training pipeline. Each draws its parameters per
//! sample from its own [`Draws`](super::Draws) and becomes ordinary ops ([`Op`]) that the
//! plan compiler fuses as it fuses any pipeline: a drawn crop is the region
//! the resampler reads (and, with libjpeg-turbo, the region decoded). No
//! second set of pixel kernels.
//!
//! Each op's module holds its parameters and its [`Augmentation`]: check,
//! draw, what it does to the size and to the plan, its nesting, what it
//! does to targets, and its description. [`Augment`] lists them and
//! dispatches in one exhaustive match ([`Augment::unit`]); this module
//! holds the list's generic walks (positions, draws, custom ops, sizes).
//! A new op is one module, one variant and the arm the compiler asks for.

#![forbid(unsafe_code)]

mod adjustment;
mod augmix;
mod auto;
mod color;
mod compose;
mod crop;
mod custom;
mod detection;
mod fixed;
mod flip;
mod follow;
mod geometric;

mod policy;
mod resized_crop;
mod target_op;
mod unit;

use alloc::vec::Vec;
use core::fmt;

pub use crate::functional::ImageOp;
pub use adjustment::RandomAdjustment;
pub(crate) use augmix::Mixing;
pub use augmix::{AugMix, AugMixStep};
pub use auto::{AutoAugment, RandAugment, TrivialAugmentWide};
pub use color::{ColorJitter, GaussianBlur, RandomPhotometricDistort};
pub use compose::{RandomApply, RandomChoice, RandomOrder, RandomSelectSubpolicy};
pub use crop::RandomCrop;
pub use custom::{BoxError, CustomFn, CustomOp, CustomOpError, CustomSize, NotSaveable};
pub use detection::{FixedSizeCrop, RandomIoUCrop, RandomShortestSize, RandomZoomOut, ScaleJitter};
pub use flip::RandomFlip;
pub use follow::move_target;
pub(crate) use follow::{Drawing, check_targets};
pub use geometric::{RandomAffine, RandomPerspective, RandomRotation};
pub use policy::{AutoAugmentPolicy, PolicyOp, SPACE_OPS, Space, Subpolicy};
pub use resized_crop::RandomResizedCrop;

use super::SampleKey;
use crate::pipeline::Op;
use crate::targets::TargetOp;
use crate::{Error, Result};
use unit::{At, Augmentation};

/// What one op of a training pipeline becomes for one sample: an op the
/// plan compiler fuses (crop, resize, flip, pad), or a colour adjustment or
/// warp run on the 8-bit image between fused passes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Drawn {
    /// A plan op.
    Op(Op),
    /// An op on the 8-bit image (an adjustment or a warp) with its drawn
    /// parameters.
    Image(ImageOp),
    /// A step of AugMix's mixing.
    AugMix(AugMixStep),
    /// An op on the sample's target alone (the box-only transforms, the
    /// box filters of `RandomIoUCrop` and `FixedSizeCrop`): no pixel work.
    Target(TargetOp),
    /// The [`CustomOp`] at `position` of the pipeline, with its key for this
    /// sample.
    Custom {
        /// The op's position (ops numbered in order, nested ones counted).
        position: u32,
        /// Its key: from the sample's key and `position`.
        key: u64,
    },
}

/// One step of a training pipeline's image ops: a fixed op, or a random
/// one. Each variant's type holds its parameters and its behaviour.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Augment {
    /// A fixed image op (resize, crop, pad, flip, rotate).
    Op(Op),
    /// A box-only transform: `ClampBoundingBoxes`,
    /// `SanitizeBoundingBoxes(min_size, min_area)`,
    /// `ConvertBoundingBoxFormat(format)`.
    Target(TargetOp),
    /// torchvision's `RandomResizedCrop`.
    RandomResizedCrop(RandomResizedCrop),
    /// torchvision's `RandomCrop` (constant padding).
    RandomCrop(RandomCrop),
    /// `RandomHorizontalFlip(p)` / `RandomVerticalFlip(p)`.
    RandomFlip(RandomFlip),
    /// `RandomApply(ops, p)`.
    RandomApply(RandomApply),
    /// `RandomChoice(ops, p)`.
    RandomChoice(RandomChoice),
    /// `RandomOrder(ops)`.
    RandomOrder(RandomOrder),
    /// MindSpore's `RandomSelectSubpolicy(policy)`.
    RandomSelectSubpolicy(RandomSelectSubpolicy),
    /// One adjustment with a probability (`RandomInvert(p)`, ...: see
    /// [`Augment::random_invert`] and its neighbours).
    RandomAdjustment(RandomAdjustment),
    /// `ColorJitter`.
    ColorJitter(ColorJitter),
    /// `GaussianBlur` (always applied; wrap it in `RandomApply` for a
    /// probability, as SimCLR's recipe does).
    GaussianBlur(GaussianBlur),
    /// `RandomRotation`.
    RandomRotation(RandomRotation),
    /// `RandomAffine`.
    RandomAffine(RandomAffine),
    /// `RandomPerspective`.
    RandomPerspective(RandomPerspective),
    /// `AutoAugment(policy, interpolation, fill)`.
    AutoAugment(AutoAugment),
    /// `RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill)`.
    RandAugment(RandAugment),
    /// `AugMix`.
    AugMix(AugMix),
    /// `TrivialAugmentWide(num_magnitude_bins, interpolation, fill)`.
    TrivialAugmentWide(TrivialAugmentWide),
    /// `RandomPhotometricDistort` (SSD's colour distortion).
    RandomPhotometricDistort(RandomPhotometricDistort),
    /// `RandomIoUCrop` (SSD's crop; needs the sample's boxes).
    RandomIoUCrop(RandomIoUCrop),
    /// `RandomZoomOut`.
    RandomZoomOut(RandomZoomOut),
    /// `ScaleJitter` (large-scale jitter).
    ScaleJitter(ScaleJitter),
    /// `RandomShortestSize` (multi-scale training).
    RandomShortestSize(RandomShortestSize),
    /// `FixedSizeCrop`.
    FixedSizeCrop(FixedSizeCrop),
    /// The caller's own function on the 8-bit image (Python's
    /// `train.Lambda`): run, not fused; a pipeline holding one cannot be
    /// saved.
    Custom(CustomOp),
}

fn invalid(name: &'static str, reason: &'static str) -> Error {
    Error::InvalidParameter { name, reason }
}

fn probability(p: f64, name: &'static str, reason: &'static str) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(invalid(name, reason))
    }
}

impl Augment {
    /// The op itself: the one place that lists every kind.
    fn unit(&self) -> &dyn Augmentation {
        match self {
            Augment::Op(a) => a,
            Augment::Target(a) => a,
            Augment::RandomResizedCrop(a) => a,
            Augment::RandomCrop(a) => a,
            Augment::RandomFlip(a) => a,
            Augment::RandomApply(a) => a,
            Augment::RandomChoice(a) => a,
            Augment::RandomOrder(a) => a,
            Augment::RandomSelectSubpolicy(a) => a,
            Augment::RandomAdjustment(a) => a,
            Augment::ColorJitter(a) => a,
            Augment::GaussianBlur(a) => a,
            Augment::RandomRotation(a) => a,
            Augment::RandomAffine(a) => a,
            Augment::RandomPerspective(a) => a,
            Augment::AutoAugment(a) => a,
            Augment::RandAugment(a) => a,
            Augment::AugMix(a) => a,
            Augment::TrivialAugmentWide(a) => a,
            Augment::RandomPhotometricDistort(a) => a,
            Augment::RandomIoUCrop(a) => a,
            Augment::RandomZoomOut(a) => a,
            Augment::ScaleJitter(a) => a,
            Augment::RandomShortestSize(a) => a,
            Augment::FixedSizeCrop(a) => a,
            Augment::Custom(a) => a,
        }
    }

    /// The positions this op takes (itself and everything nested in it):
    /// positions number every op of a pipeline in order, and each op draws
    /// from the generator keyed by its own.
    pub(crate) fn positions(&self) -> u32 {
        1 + self
            .unit()
            .nested()
            .iter()
            .map(Augment::positions)
            .sum::<u32>()
    }

    /// Checks the parameters; image ops only (decoding and the finish ops
    /// belong to the training pipeline itself).
    pub(crate) fn check(&self) -> Result<()> {
        self.unit().check()
    }

    /// Whether this op (or one nested in it) may draw an adjustment, a warp
    /// or a custom op: the plan then keeps the 8-bit image between passes.
    pub(crate) fn draws_image_ops(&self) -> bool {
        self.unit().draws_image_ops()
    }

    /// Whether, as the first op, it crops or resizes first (a reduced-size
    /// decode can then follow its draw).
    pub(crate) fn sizes_first(&self) -> bool {
        self.unit().sizes_first()
    }

    /// The output size after this op when it is the same for every draw,
    /// given the size before it (if that is fixed).
    pub(crate) fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        self.unit().fixed_size(before)
    }
}

/// Draws `list` (its first op at `position`) for the sample `key` on an
/// image of `size`, appending the ops drawn to `ops`; returns the size after.
pub(crate) fn draw(
    list: &[Augment],
    key: SampleKey,
    mut position: u32,
    mut size: (u32, u32),
    ops: &mut Drawing<'_>,
) -> Result<(u32, u32)> {
    for a in list {
        size = a.unit().draw(At { key, position }, size, ops)?;
        position += a.positions();
    }
    Ok(size)
}

/// The custom op at `position` of `list` (its first op at `start`).
pub(crate) fn custom_at(list: &[Augment], mut start: u32, position: u32) -> Option<&CustomOp> {
    for a in list {
        let next = start + a.positions();
        if position < next {
            if let (Augment::Custom(c), true) = (a, start == position) {
                return Some(c);
            }
            let mut at = start + 1;
            return a.unit().nested().iter().find_map(|op| {
                let found = custom_at(core::slice::from_ref(op), at, position);
                at += op.positions();
                found
            });
        }
        start = next;
    }
    None
}

/// The custom ops of `list`, nested ones too, in order.
pub(crate) fn customs<'a>(list: &'a [Augment], found: &mut Vec<&'a CustomOp>) {
    for a in list {
        if let Augment::Custom(c) = a {
            found.push(c);
        }
        for op in a.unit().nested().iter() {
            customs(core::slice::from_ref(op), found);
        }
    }
}

/// The size after `list` when it is the same for every draw.
pub(crate) fn fixed_size(list: &[Augment], mut size: Option<(u32, u32)>) -> Option<(u32, u32)> {
    for a in list {
        size = a.fixed_size(size);
    }
    size
}

impl fmt::Display for Augment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.unit(), f)
    }
}
