//! One adjustment with a probability: `RandomInvert(p)`,
//! `RandomPosterize(bits, p)`, `RandomSolarize(threshold, p)`,
//! `RandomAdjustSharpness(factor, p)`, `RandomAutocontrast(p)`,
//! `RandomEqualize(p)`, `RandomGrayscale(p)`; with `p` 1, the plain
//! transform (`Grayscale(3)`, ...).

use core::fmt;

use super::Drawing;
use super::unit::{At, SizeKeeping, Targets};
use super::{Augment, Drawn, invalid, probability};
use crate::Result;
use crate::adjust::Point;
use crate::functional::ImageOp;

/// An adjustment (not a warp: those have their random ops) applied with
/// probability `p`; made by [`Augment::random_invert`] and its neighbours.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomAdjustment {
    /// The adjustment.
    pub op: ImageOp,
    /// Its probability.
    pub p: f64,
}

impl RandomAdjustment {
    /// `op` with probability `p`.
    pub const fn new(op: ImageOp, p: f64) -> RandomAdjustment {
        RandomAdjustment { op, p }
    }
}

impl Augment {
    /// `RandomInvert(p)`.
    pub const fn random_invert(p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(ImageOp::Point(Point::Invert), p))
    }

    /// `RandomPosterize(bits, p)`.
    pub const fn random_posterize(bits: u8, p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(
            ImageOp::Point(Point::Posterize { bits }),
            p,
        ))
    }

    /// `RandomSolarize(threshold, p)`: values at or above `threshold`
    /// inverted (a fractional threshold counts from the next integer).
    pub fn random_solarize(threshold: f64, p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(
            ImageOp::Point(Point::solarize_from(threshold)),
            p,
        ))
    }

    /// `RandomAdjustSharpness(factor, p)`.
    pub const fn random_adjust_sharpness(factor: f32, p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(ImageOp::Sharpness(factor), p))
    }

    /// `RandomAutocontrast(p)`.
    pub const fn random_autocontrast(p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(ImageOp::Autocontrast, p))
    }

    /// `RandomEqualize(p)`.
    pub const fn random_equalize(p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(ImageOp::Equalize, p))
    }

    /// `RandomGrayscale(p)` (three channels kept).
    pub const fn random_grayscale(p: f64) -> Augment {
        Augment::RandomAdjustment(RandomAdjustment::new(ImageOp::Grayscale, p))
    }
}

impl SizeKeeping for RandomAdjustment {
    fn check(&self) -> Result<()> {
        if matches!(self.op, ImageOp::Warp { .. }) {
            return Err(invalid(
                "training pipeline",
                "a warp is drawn by RandomRotation, RandomAffine or RandomPerspective",
            ));
        }
        probability(self.p, "Random adjustment", "p must be in 0..=1")
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        if at.draws().chance(self.p) {
            ops.push(Drawn::Image(self.op))?;
        }
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Unchanged
    }
}

impl fmt::Display for RandomAdjustment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Random {:?} p {}", self.op, self.p)
    }
}
