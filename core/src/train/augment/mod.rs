//! The random ops of a training pipeline. Each draws its parameters per
//! sample from its own [`Draws`] and becomes ordinary ops ([`Op`]) that the
//! plan compiler fuses as it fuses any pipeline: a drawn crop is the region
//! the resampler reads (and, with libjpeg-turbo, the region decoded). No
//! second set of pixel kernels.
//!
//! Each op's module holds its parameters, its check, its draw and its
//! description; this module holds the list's shape (positions, nesting).

mod crop;
mod resized_crop;

use alloc::vec::Vec;
use core::fmt;

pub use crop::RandomCrop;
pub use resized_crop::RandomResizedCrop;

use super::{Draws, SampleKey};
use crate::geometry::Flip;
use crate::pipeline::Op;
use crate::{Error, Result};

/// One step of a training pipeline's pixel part: a fixed op, or a random one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Augment {
    /// A fixed pixel op (resize, crop, pad, flip, rotate).
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
}

fn invalid(name: &'static str) -> Error {
    Error::InvalidParameter { name }
}

fn probability(p: f64, name: &'static str) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(invalid(name))
    }
}

impl Augment {
    /// The positions this op takes (itself and everything nested in it):
    /// positions number every op of a pipeline in order, and each op draws
    /// from the generator keyed by its own.
    pub(crate) fn positions(&self) -> u32 {
        1 + match self {
            Augment::RandomApply { ops, .. } | Augment::RandomChoice { ops, .. } => {
                ops.iter().map(Augment::positions).sum()
            }
            _ => 0,
        }
    }

    /// Checks the parameters; pixel ops only (decoding and the finish ops
    /// belong to the training pipeline itself).
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Augment::Op(op) => match op {
                Op::Decode(_) | Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. } => {
                    Err(invalid(
                        "training pipeline: Decode and the finish ops are the pipeline's own, not augment steps",
                    ))
                }
                Op::ConvertColor { .. } => Err(invalid(
                    "training pipeline: choose the pixel format in Decode (ConvertColor is not an augment step)",
                )),
                _ => Ok(()),
            },
            Augment::RandomResizedCrop(r) => r.check(),
            Augment::RandomCrop(c) => c.check(),
            Augment::RandomFlip { p, .. } => probability(*p, "RandomFlip: p must be in 0..=1"),
            Augment::RandomApply { p, ops } => {
                probability(*p, "RandomApply: p must be in 0..=1")?;
                ops.iter().try_for_each(Augment::check)
            }
            Augment::RandomChoice { weights, ops } => {
                if ops.is_empty() {
                    return Err(invalid("RandomChoice: no ops to choose from"));
                }
                let valid = weights.is_empty()
                    || (weights.len() == ops.len()
                        && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
                        && weights.iter().sum::<f64>() > 0.0);
                if !valid {
                    return Err(invalid(
                        "RandomChoice: one finite, non-negative weight per op, not all zero",
                    ));
                }
                ops.iter().try_for_each(Augment::check)
            }
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
        }
    }

    /// Draws this op for the sample `key` at `position`, appending the ops
    /// it becomes to `ops`; returns the size after it.
    fn draw(
        &self,
        key: SampleKey,
        position: u32,
        size: (u32, u32),
        ops: &mut Vec<Op>,
    ) -> Result<(u32, u32)> {
        let d = || Draws::new(key, position as u16);
        match self {
            Augment::Op(op) => {
                ops.push(*op);
                op.output_size(size)
            }
            Augment::RandomResizedCrop(r) => Ok(r.draw(&mut d(), size, ops)),
            Augment::RandomCrop(c) => c.draw(&mut d(), size, ops),
            Augment::RandomFlip { axis, p } => {
                if d().chance(*p) {
                    ops.push(Op::Flip(*axis));
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
    ops: &mut Vec<Op>,
) -> Result<(u32, u32)> {
    for a in list {
        size = a.draw(key, position, size, ops)?;
        position += a.positions();
    }
    Ok(size)
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
