//! `RandomHorizontalFlip(p)` / `RandomVerticalFlip(p)`.

use core::fmt;

use super::Drawing;
use super::unit::{At, Augmentation, Nested, Targets};
use super::{Drawn, probability};
use crate::Result;
use crate::geometry::Flip;
use crate::pipeline::Op;

/// `RandomHorizontalFlip(p)` / `RandomVerticalFlip(p)`: the flip, with
/// probability `p`.
///
/// ```
/// use tensorprep::geometry::Flip;
/// use tensorprep::train::{Augment, RandomFlip};
///
/// let flip = Augment::RandomFlip(RandomFlip::new(Flip::Horizontal, 0.5));
/// assert_eq!(flip.to_string(), "RandomFlip Horizontal p 0.5");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomFlip {
    /// Which flip.
    pub axis: Flip,
    /// Its probability.
    pub p: f64,
}

impl RandomFlip {
    /// The flip `axis` with probability `p`.
    pub const fn new(axis: Flip, p: f64) -> RandomFlip {
        RandomFlip { axis, p }
    }
}

impl Augmentation for RandomFlip {
    fn check(&self) -> Result<()> {
        probability(self.p, "RandomFlip", "p must be in 0..=1")
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        if at.draws().chance(self.p) {
            ops.push(Drawn::Op(Op::Flip(self.axis)))?;
        }
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

impl fmt::Display for RandomFlip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RandomFlip {:?} p {}", self.axis, self.p)
    }
}
