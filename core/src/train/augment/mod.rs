//! The random ops of a training pipeline. Each draws its parameters per
//! sample from its own [`Draws`] and becomes ordinary ops ([`Op`]) that the
//! plan compiler fuses as it fuses any pipeline: a drawn crop is the region
//! the resampler reads (and, with libjpeg-turbo, the region decoded). No
//! second set of pixel kernels.
//!
//! Each op's module holds its parameters, its check, its draw and its
//! description; this module holds the list's shape (positions, nesting).

#![forbid(unsafe_code)]

mod augmix;
mod color;
mod crop;
mod custom;
mod geometric;
mod image_op;
mod policy;
mod resized_crop;

use alloc::vec::Vec;
use core::fmt;

pub(crate) use augmix::Mixing;
pub use augmix::{AugMix, AugMixStep};
pub use color::{ColorJitter, GaussianBlur};
pub use crop::RandomCrop;
pub use custom::{BoxError, CustomFn, CustomOp, CustomOpError, CustomSize, NotSaveable};
pub use geometric::{RandomAffine, RandomPerspective, RandomRotation};
pub use image_op::ImageOp;
pub use policy::{AutoAugmentPolicy, PolicyOp, SPACE_OPS, Space, Subpolicy};
pub use resized_crop::RandomResizedCrop;

use super::{Draws, SampleKey};
use crate::adjust::Point;
use crate::geometry::Flip;
use crate::pipeline::Op;
use crate::warp::Interpolation;
use crate::{Error, Result};

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
    /// The [`CustomOp`] at `position` of the pipeline, with its key for this
    /// sample.
    Custom {
        /// The op's position (ops numbered in order, nested ones counted).
        position: u32,
        /// Its key: from the sample's key and `position`.
        key: u64,
    },
}

/// One step of a training pipeline's image ops: a fixed op, or a random one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Augment {
    /// A fixed image op (resize, crop, pad, flip, rotate).
    Op(Op),
    /// torchvision's `RandomResizedCrop`.
    RandomResizedCrop(RandomResizedCrop),
    /// torchvision's `RandomCrop` (constant padding).
    RandomCrop(RandomCrop),
    /// `RandomHorizontalFlip(p)` / `RandomVerticalFlip(p)`: the flip, with
    /// probability `p`.
    RandomFlip {
        /// Which flip.
        axis: Flip,
        /// Its probability.
        p: f64,
    },
    /// `RandomApply(ops, p)`: all of `ops` with probability `p`, else none.
    RandomApply {
        /// Probability of applying them.
        p: f64,
        /// The ops, in order.
        ops: Vec<Augment>,
    },
    /// `RandomChoice(ops, p)`: one of `ops`, drawn with probability
    /// proportional to its weight (equal weights when `weights` is empty).
    RandomChoice {
        /// One weight per op, or none for equal ones.
        weights: Vec<f64>,
        /// The choices.
        ops: Vec<Augment>,
    },
    /// `RandomOrder(ops)`: all of `ops`, in a random order.
    RandomOrder(Vec<Augment>),
    /// MindSpore's `RandomSelectSubpolicy(policy)`: one sub-policy drawn
    /// uniformly, then each of its ops with its own probability.
    RandomSelectSubpolicy(Vec<Vec<(Augment, f64)>>),
    /// One adjustment with probability `p`: `RandomInvert(p)`,
    /// `RandomPosterize(bits, p)`, `RandomSolarize(threshold, p)`,
    /// `RandomAdjustSharpness(factor, p)`, `RandomAutocontrast(p)`,
    /// `RandomEqualize(p)`, `RandomGrayscale(p)` (see the constructors
    /// [`Augment::random_invert`] and its neighbours); with `p` 1, the
    /// plain transform (`Grayscale(3)`, ...).
    RandomAdjustment {
        /// The adjustment (not a warp: those have their random ops).
        op: ImageOp,
        /// Its probability.
        p: f64,
    },
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
    /// `AutoAugment(policy, interpolation, fill)`: one of the policy's 25
    /// sub-policies, each of its two ops with its probability.
    AutoAugment {
        /// ImageNet, CIFAR-10 or SVHN.
        policy: AutoAugmentPolicy,
        /// For the geometric ops (torchvision's default: nearest).
        interpolation: Interpolation,
        /// Fill for the geometric ops (R, G, B).
        fill: [u8; 3],
    },
    /// `RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation,
    /// fill)`: `num_ops` ops drawn from the space, each at bin `magnitude`.
    RandAugment {
        /// Ops per sample (torchvision: 2).
        num_ops: u32,
        /// The bin used (torchvision: 9).
        magnitude: u32,
        /// Bins in each op's range (torchvision: 31).
        num_magnitude_bins: u32,
        /// For the geometric ops.
        interpolation: Interpolation,
        /// Fill for the geometric ops (R, G, B).
        fill: [u8; 3],
    },
    /// `AugMix`.
    AugMix(AugMix),
    /// `TrivialAugmentWide(num_magnitude_bins, interpolation, fill)`: one
    /// op, at a bin drawn uniformly.
    TrivialAugmentWide {
        /// Bins in each op's range (torchvision: 31).
        num_magnitude_bins: u32,
        /// For the geometric ops.
        interpolation: Interpolation,
        /// Fill for the geometric ops (R, G, B).
        fill: [u8; 3],
    },
    /// The caller's own function on the 8-bit image (Python's
    /// `train.Lambda`): run, not fused; a pipeline holding one cannot be
    /// saved.
    Custom(CustomOp),
}

impl Augment {
    /// `RandomInvert(p)`.
    pub const fn random_invert(p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Point(Point::Invert),
            p,
        }
    }

    /// `RandomPosterize(bits, p)`.
    pub const fn random_posterize(bits: u8, p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Point(Point::Posterize { bits }),
            p,
        }
    }

    /// `RandomSolarize(threshold, p)`: values at or above `threshold`
    /// inverted (a fractional threshold counts from the next integer).
    pub fn random_solarize(threshold: f64, p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Point(Point::solarize_from(threshold)),
            p,
        }
    }

    /// `RandomAdjustSharpness(factor, p)`.
    pub const fn random_adjust_sharpness(factor: f32, p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Sharpness(factor),
            p,
        }
    }

    /// `RandomAutocontrast(p)`.
    pub const fn random_autocontrast(p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Autocontrast,
            p,
        }
    }

    /// `RandomEqualize(p)`.
    pub const fn random_equalize(p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Equalize,
            p,
        }
    }

    /// `RandomGrayscale(p)` (three channels kept).
    pub const fn random_grayscale(p: f64) -> Augment {
        Augment::RandomAdjustment {
            op: ImageOp::Grayscale,
            p,
        }
    }

    /// torchvision's `AutoAugment(policy)`: nearest, black fill.
    pub const fn auto_augment(policy: AutoAugmentPolicy) -> Augment {
        Augment::AutoAugment {
            policy,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }

    /// torchvision's `RandAugment(num_ops, magnitude)`: 31 bins, nearest,
    /// black fill.
    pub const fn rand_augment(num_ops: u32, magnitude: u32) -> Augment {
        Augment::RandAugment {
            num_ops,
            magnitude,
            num_magnitude_bins: 31,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }

    /// torchvision's `TrivialAugmentWide()`: 31 bins, nearest, black fill.
    pub const fn trivial_augment_wide() -> Augment {
        Augment::TrivialAugmentWide {
            num_magnitude_bins: 31,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }
}

/// Appends the policy op `op` at `magnitude` to `ops`, negated when the op
/// is signed and `negate` was drawn.
fn push_policy_op(
    op: PolicyOp,
    magnitude: f64,
    negate: bool,
    size: (u32, u32),
    interpolation: Interpolation,
    fill: [u8; 3],
    ops: &mut Vec<Drawn>,
) -> Result<()> {
    let magnitude = if op.signed() && negate {
        -magnitude
    } else {
        magnitude
    };
    if let Some(p) = op.image_op(magnitude, size, interpolation, fill)? {
        ops.push(Drawn::Image(p));
    }
    Ok(())
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
    /// The positions this op takes (itself and everything nested in it):
    /// positions number every op of a pipeline in order, and each op draws
    /// from the generator keyed by its own.
    pub(crate) fn positions(&self) -> u32 {
        1 + match self {
            Augment::RandomApply { ops, .. }
            | Augment::RandomChoice { ops, .. }
            | Augment::RandomOrder(ops) => ops.iter().map(Augment::positions).sum(),
            Augment::RandomSelectSubpolicy(policy) => {
                policy.iter().flatten().map(|(op, _)| op.positions()).sum()
            }
            _ => 0,
        }
    }

    /// Checks the parameters; image ops only (decoding and the finish ops
    /// belong to the training pipeline itself).
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Augment::Op(op) => match op {
                Op::Decode(_) | Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. } => {
                    Err(invalid(
                        "training pipeline",
                        "Decode and the finish ops are the pipeline's own, not augment steps",
                    ))
                }
                Op::ConvertColor { .. } => Err(invalid(
                    "training pipeline",
                    "choose the pixel format in Decode (ConvertColor is not an augment step)",
                )),
                _ => Ok(()),
            },
            Augment::RandomResizedCrop(r) => r.check(),
            Augment::RandomCrop(c) => c.check(),
            Augment::RandomFlip { p, .. } => probability(*p, "RandomFlip", "p must be in 0..=1"),
            Augment::RandomApply { p, ops } => {
                probability(*p, "RandomApply", "p must be in 0..=1")?;
                ops.iter().try_for_each(Augment::check)
            }
            Augment::RandomChoice { weights, ops } => {
                if ops.is_empty() {
                    return Err(invalid("RandomChoice", "no ops to choose from"));
                }
                let valid = weights.is_empty()
                    || (weights.len() == ops.len()
                        && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
                        && weights.iter().sum::<f64>() > 0.0);
                if !valid {
                    return Err(invalid(
                        "RandomChoice",
                        "one finite, non-negative weight per op, not all zero",
                    ));
                }
                ops.iter().try_for_each(Augment::check)
            }
            Augment::RandomSelectSubpolicy(policy) => {
                if policy.is_empty() {
                    return Err(invalid("RandomSelectSubpolicy", "no sub-policies"));
                }
                policy.iter().flatten().try_for_each(|(op, p)| {
                    probability(
                        *p,
                        "RandomSelectSubpolicy",
                        "each probability must be in 0..=1",
                    )?;
                    op.check()
                })
            }
            Augment::RandomOrder(ops) => {
                if ops.len() > 64 {
                    return Err(invalid("RandomOrder", "at most 64 ops"));
                }
                ops.iter().try_for_each(Augment::check)
            }
            Augment::RandomAdjustment { op, p } => {
                if matches!(op, ImageOp::Warp { .. }) {
                    return Err(invalid(
                        "training pipeline",
                        "a warp is drawn by RandomRotation, RandomAffine or RandomPerspective",
                    ));
                }
                probability(*p, "Random adjustment", "p must be in 0..=1")
            }
            Augment::ColorJitter(j) => j.check(),
            Augment::AugMix(a) => a.check(),
            Augment::GaussianBlur(b) => b.check(),
            Augment::RandomRotation(r) => r.check(),
            Augment::RandomAffine(a) => a.check(),
            Augment::RandomPerspective(p) => p.check(),
            Augment::AutoAugment { .. } => Ok(()),
            Augment::Custom(c) => match c.size() {
                CustomSize::Fixed { width, height } if width == 0 || height == 0 => {
                    Err(invalid("Lambda", "a declared size must be at least 1 x 1"))
                }
                _ => Ok(()),
            },
            Augment::RandAugment {
                magnitude,
                num_magnitude_bins,
                num_ops,
                ..
            } => {
                if *num_magnitude_bins < 2 || magnitude >= num_magnitude_bins || *num_ops > 64 {
                    return Err(invalid(
                        "RandAugment",
                        "magnitude must be below num_magnitude_bins (at least 2), num_ops at most 64",
                    ));
                }
                Ok(())
            }
            Augment::TrivialAugmentWide {
                num_magnitude_bins, ..
            } => {
                if *num_magnitude_bins < 2 {
                    return Err(invalid(
                        "TrivialAugmentWide",
                        "num_magnitude_bins must be at least 2",
                    ));
                }
                Ok(())
            }
        }
    }

    /// Whether this op (or one nested in it) may draw an adjustment or a
    /// warp: the plan then keeps the 8-bit image between passes.
    pub(crate) fn draws_image_ops(&self) -> bool {
        match self {
            Augment::Op(_)
            | Augment::RandomResizedCrop(_)
            | Augment::RandomCrop(_)
            | Augment::RandomFlip { .. } => false,
            Augment::RandomApply { ops, .. }
            | Augment::RandomChoice { ops, .. }
            | Augment::RandomOrder(ops) => ops.iter().any(Augment::draws_image_ops),
            Augment::RandomSelectSubpolicy(policy) => {
                policy.iter().flatten().any(|(op, _)| op.draws_image_ops())
            }
            _ => true,
        }
    }

    /// The output size after this op when it is the same for every draw,
    /// given the size before it (if that is fixed).
    pub(crate) fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        match self {
            Augment::Op(op) => op.fixed_size(before).ok().flatten(),
            Augment::RandomResizedCrop(r) => Some((r.width, r.height)),
            Augment::RandomCrop(c) => Some((c.width, c.height)),
            Augment::RandomFlip { .. } => before,
            Augment::RandomApply { ops, .. } => {
                let applied = fixed_size(ops, before);
                (applied == before).then_some(before).flatten()
            }
            Augment::RandomChoice { ops, .. } => {
                let first = ops.first()?.fixed_size(before);
                ops.iter()
                    .all(|op| op.fixed_size(before) == first)
                    .then_some(first)
                    .flatten()
            }
            // In any order, each op must keep the size.
            Augment::RandomOrder(ops) => ops
                .iter()
                .all(|op| op.fixed_size(before) == before)
                .then_some(before)
                .flatten(),
            Augment::RandomSelectSubpolicy(policy) => policy
                .iter()
                .flatten()
                .all(|(op, _)| op.fixed_size(before) == before)
                .then_some(before)
                .flatten(),
            Augment::RandomRotation(r) if r.expand => None,
            Augment::Custom(c) => match c.size() {
                CustomSize::Same => before,
                CustomSize::Fixed { width, height } => Some((width, height)),
            },
            _ => before,
        }
    }

    /// Draws this op for the sample `key` at `position`, appending the ops
    /// it becomes to `ops`; returns the size after it.
    fn draw(
        &self,
        key: SampleKey,
        position: u32,
        size: (u32, u32),
        ops: &mut Vec<Drawn>,
    ) -> Result<(u32, u32)> {
        let d = || Draws::new(key, position as u16);
        match self {
            Augment::Op(op) => {
                ops.push(Drawn::Op(*op));
                op.output_size(size)
            }
            Augment::RandomResizedCrop(r) => Ok(r.draw(&mut d(), size, ops)),
            Augment::RandomCrop(c) => c.draw(&mut d(), size, ops),
            Augment::RandomFlip { axis, p } => {
                if d().chance(*p) {
                    ops.push(Drawn::Op(Op::Flip(*axis)));
                }
                Ok(size)
            }
            Augment::RandomApply { p, ops: inner } => {
                if d().chance(*p) {
                    draw(inner, key, position + 1, size, ops)
                } else {
                    Ok(size)
                }
            }
            Augment::RandomChoice {
                weights,
                ops: inner,
            } => {
                let i = if weights.is_empty() {
                    d().below(inner.len() as u32) as usize
                } else {
                    d().weighted(weights)
                };
                let skipped: u32 = inner[..i].iter().map(Augment::positions).sum();
                draw(
                    core::slice::from_ref(&inner[i]),
                    key,
                    position + 1 + skipped,
                    size,
                    ops,
                )
            }
            Augment::RandomOrder(inner) => {
                // torch.randperm's distribution by Fisher-Yates; each op
                // keeps its own position, whatever its turn.
                let mut d = d();
                let mut starts = [0u32; 64];
                let n = inner.len().min(64);
                let mut order: [usize; 64] = core::array::from_fn(|i| i);
                let mut at = position + 1;
                for (i, op) in inner[..n].iter().enumerate() {
                    starts[i] = at;
                    at += op.positions();
                }
                for i in (1..n).rev() {
                    order.swap(i, d.below(i as u32 + 1) as usize);
                }
                let mut size = size;
                for &i in &order[..n] {
                    size = inner[i].draw(key, starts[i], size, ops)?;
                }
                Ok(size)
            }
            Augment::RandomSelectSubpolicy(policy) => {
                let mut d = d();
                let chosen = d.below(policy.len() as u32) as usize;
                let mut at = position + 1;
                for sub in &policy[..chosen] {
                    at += sub.iter().map(|(op, _)| op.positions()).sum::<u32>();
                }
                let mut size = size;
                for (op, p) in &policy[chosen] {
                    if d.chance(*p) {
                        size = op.draw(key, at, size, ops)?;
                    }
                    at += op.positions();
                }
                Ok(size)
            }
            Augment::RandomAdjustment { op, p } => {
                if d().chance(*p) {
                    ops.push(Drawn::Image(*op));
                }
                Ok(size)
            }
            Augment::ColorJitter(j) => {
                j.draw(&mut d(), ops);
                Ok(size)
            }
            Augment::AugMix(a) => {
                a.draw(&mut d(), size, ops)?;
                Ok(size)
            }
            Augment::GaussianBlur(b) => {
                b.draw(&mut d(), ops);
                Ok(size)
            }
            Augment::RandomRotation(r) => r.draw(&mut d(), size, ops),
            Augment::RandomAffine(a) => a.draw(&mut d(), size, ops),
            Augment::RandomPerspective(p) => p.draw(&mut d(), size, ops),
            Augment::AutoAugment {
                policy,
                interpolation,
                fill,
            } => {
                let mut d = d();
                let sub = &policy.subpolicies()[d.below(25) as usize];
                let probs = [d.unit_f32(), d.unit_f32()];
                let signs = [d.below(2), d.below(2)];
                for (i, &(op, p, bin)) in sub.iter().enumerate() {
                    if f64::from(probs[i]) <= p {
                        let m = bin.map_or(0.0, |b| Space::Standard.magnitude(op, b, 10, size));
                        push_policy_op(op, m, signs[i] == 0, size, *interpolation, *fill, ops)?;
                    }
                }
                Ok(size)
            }
            Augment::RandAugment {
                num_ops,
                magnitude,
                num_magnitude_bins,
                interpolation,
                fill,
            } => {
                let mut d = d();
                for _ in 0..*num_ops {
                    let op = SPACE_OPS[d.below(SPACE_OPS.len() as u32) as usize];
                    let m = Space::Standard.magnitude(op, *magnitude, *num_magnitude_bins, size);
                    let negate = op.signed() && d.below(2) == 1;
                    push_policy_op(op, m, negate, size, *interpolation, *fill, ops)?;
                }
                Ok(size)
            }
            Augment::Custom(c) => {
                let mut d = d();
                let key = u64::from(d.next_u32()) << 32 | u64::from(d.next_u32());
                ops.push(Drawn::Custom { position, key });
                Ok(c.size().after(size))
            }
            Augment::TrivialAugmentWide {
                num_magnitude_bins,
                interpolation,
                fill,
            } => {
                let mut d = d();
                let op = SPACE_OPS[d.below(SPACE_OPS.len() as u32) as usize];
                let bin = d.below(*num_magnitude_bins);
                let m = Space::Wide.magnitude(op, bin, *num_magnitude_bins, size);
                let negate = op.signed() && d.below(2) == 1;
                push_policy_op(op, m, negate, size, *interpolation, *fill, ops)?;
                Ok(size)
            }
        }
    }
}

/// Draws `list` (its first op at `position`) for the sample `key` on an
/// image of `size`, appending the ops drawn to `ops`; returns the size after.
pub(crate) fn draw(
    list: &[Augment],
    key: SampleKey,
    mut position: u32,
    mut size: (u32, u32),
    ops: &mut Vec<Drawn>,
) -> Result<(u32, u32)> {
    for a in list {
        size = a.draw(key, position, size, ops)?;
        position += a.positions();
    }
    Ok(size)
}

/// The custom op at `position` of `list` (its first op at `start`).
pub(crate) fn custom_at(list: &[Augment], mut start: u32, position: u32) -> Option<&CustomOp> {
    for a in list {
        let next = start + a.positions();
        if position < next {
            return match a {
                Augment::Custom(c) if start == position => Some(c),
                Augment::RandomApply { ops, .. }
                | Augment::RandomChoice { ops, .. }
                | Augment::RandomOrder(ops) => custom_at(ops, start + 1, position),
                Augment::RandomSelectSubpolicy(policy) => {
                    let mut at = start + 1;
                    policy.iter().flatten().find_map(|(op, _)| {
                        let found = custom_at(core::slice::from_ref(op), at, position);
                        at += op.positions();
                        found
                    })
                }
                _ => None,
            };
        }
        start = next;
    }
    None
}

/// The custom ops of `list`, nested ones too, in order.
pub(crate) fn customs<'a>(list: &'a [Augment], found: &mut Vec<&'a CustomOp>) {
    for a in list {
        match a {
            Augment::Custom(c) => found.push(c),
            Augment::RandomApply { ops, .. }
            | Augment::RandomChoice { ops, .. }
            | Augment::RandomOrder(ops) => customs(ops, found),
            Augment::RandomSelectSubpolicy(policy) => {
                for (op, _) in policy.iter().flatten() {
                    customs(core::slice::from_ref(op), found);
                }
            }
            _ => {}
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
        match self {
            Augment::Op(op) => op.fmt(f),
            Augment::RandomResizedCrop(r) => r.fmt(f),
            Augment::RandomCrop(c) => c.fmt(f),
            Augment::RandomFlip { axis, p } => write!(f, "RandomFlip {axis:?} p {p}"),
            Augment::RandomApply { p, ops } => {
                write!(f, "RandomApply p {p} [")?;
                list(f, ops)?;
                f.write_str("]")
            }
            Augment::RandomChoice { weights, ops } => {
                write!(f, "RandomChoice weights {weights:?} [")?;
                list(f, ops)?;
                f.write_str("]")
            }
            Augment::RandomOrder(ops) => {
                f.write_str("RandomOrder [")?;
                list(f, ops)?;
                f.write_str("]")
            }
            Augment::RandomSelectSubpolicy(policy) => {
                f.write_str("RandomSelectSubpolicy [")?;
                for (i, sub) in policy.iter().enumerate() {
                    f.write_str(if i > 0 { "; [" } else { "[" })?;
                    for (k, (op, p)) in sub.iter().enumerate() {
                        if k > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{op} p {p}")?;
                    }
                    f.write_str("]")?;
                }
                f.write_str("]")
            }
            Augment::RandomAdjustment { op, p } => write!(f, "Random {op:?} p {p}"),
            Augment::ColorJitter(j) => j.fmt(f),
            Augment::AugMix(a) => a.fmt(f),
            Augment::GaussianBlur(b) => b.fmt(f),
            Augment::RandomRotation(r) => r.fmt(f),
            Augment::RandomAffine(a) => a.fmt(f),
            Augment::RandomPerspective(p) => p.fmt(f),
            Augment::AutoAugment {
                policy,
                interpolation,
                fill,
            } => write!(f, "AutoAugment {policy:?} {interpolation:?} fill {fill:?}"),
            Augment::RandAugment {
                num_ops,
                magnitude,
                num_magnitude_bins,
                interpolation,
                fill,
            } => write!(
                f,
                "RandAugment ops {num_ops} magnitude {magnitude}/{num_magnitude_bins} {interpolation:?} fill {fill:?}"
            ),
            Augment::TrivialAugmentWide {
                num_magnitude_bins,
                interpolation,
                fill,
            } => write!(
                f,
                "TrivialAugmentWide bins {num_magnitude_bins} {interpolation:?} fill {fill:?}"
            ),
            Augment::Custom(c) => c.fmt(f),
        }
    }
}

fn list(f: &mut fmt::Formatter<'_>, ops: &[Augment]) -> fmt::Result {
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        fmt::Display::fmt(op, f)?;
    }
    Ok(())
}
