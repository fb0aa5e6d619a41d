//! What every augmentation is: the [`Augmentation`] trait each op's module
//! implements, and the two small values it speaks in ([`At`], [`Nested`]).
//! [`Augment`] dispatches to it in one exhaustive match
//! ([`Augment::unit`]); everything else (check, draw, positions, sizes,
//! descriptions) is written once, generically.

use alloc::vec::Vec;
use core::fmt;

use super::Augment;
use super::Drawing;
use crate::Result;
use crate::train::{Draws, SampleKey};

/// Where an op draws: the sample's key and the op's position in the
/// pipeline (ops numbered in order, nested ones counted).
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    /// The sample's key.
    pub(crate) key: SampleKey,
    /// The op's position.
    pub(crate) position: u32,
}

impl At {
    /// The op's own generator, keyed by (sample, position).
    pub(crate) fn draws(self) -> Draws {
        Draws::new(self.key, self.position as u16)
    }
}

/// Sub-policies: lists of (op, probability).
type Subpolicies<'a> = &'a [Vec<(Augment, f64)>];

/// The ops nested in an op, in position order.
#[derive(Clone, Copy)]
pub(crate) enum Nested<'a> {
    /// None: a leaf.
    None,
    /// A list (`RandomApply`, `RandomChoice`, `RandomOrder`).
    List(&'a [Augment]),
    /// Sub-policies of (op, probability) pairs.
    Subpolicies(Subpolicies<'a>),
}

impl<'a> Nested<'a> {
    /// The nested ops, in position order.
    pub(crate) fn iter(self) -> impl Iterator<Item = &'a Augment> {
        let (list, subs): (&[Augment], Subpolicies<'a>) = match self {
            Nested::None => (&[], &[]),
            Nested::List(list) => (list, &[]),
            Nested::Subpolicies(subs) => (&[], subs),
        };
        list.iter().chain(subs.iter().flatten().map(|(op, _)| op))
    }
}

/// What an op does to a sample's targets (boxes, masks, key points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Targets {
    /// Leaves them as they are: the op only changes pixel values.
    Unchanged,
    /// Moves them: each op it draws states its [`Geometry`](crate::targets::Geometry).
    Moved,
    /// Cannot carry them, for this reason.
    Refused(&'static str),
}

impl Targets {
    /// What a composite does: the first refusal among `nested`, else
    /// [`Targets::Moved`] when one of them moves targets.
    pub(crate) fn of(nested: Nested<'_>) -> Targets {
        let mut all = Targets::Unchanged;
        for op in nested.iter() {
            match op.unit().targets() {
                Targets::Refused(why) => return Targets::Refused(why),
                Targets::Moved => all = Targets::Moved,
                Targets::Unchanged => {}
            }
        }
        all
    }
}

/// One augmentation: its parameters are the implementing type; the trait
/// is its validation, its draw, what the draw does to the image's size and
/// to the plan, its nesting and (through [`fmt::Display`]) its description.
///
/// Every method is required, so that a new op states each property
/// instead of inheriting a guess.
pub(crate) trait Augmentation: fmt::Display + fmt::Debug {
    /// Checks the parameters (nested ops included).
    fn check(&self) -> Result<()>;

    /// Draws this op for the sample at `at` on an image of `size`,
    /// appending the ops it becomes to `ops`; returns the size after it.
    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)>;

    /// The size after this op when it is the same for every draw, given the
    /// size before it (if that is fixed).
    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)>;

    /// Whether this op (or one nested in it) may draw an adjustment, a warp
    /// or a run of the caller's code: the plan then keeps the 8-bit image
    /// between passes.
    fn draws_image_ops(&self) -> bool;

    /// Whether, as a pipeline's first op, it crops or resizes first, so
    /// that a reduced-size (DCT-scaled) decode can follow its draw.
    fn sizes_first(&self) -> bool;

    /// The ops nested in this one, in position order.
    fn nested(&self) -> Nested<'_>;

    /// What it does to targets.
    fn targets(&self) -> Targets;
}

/// A leaf op that keeps the image's size and draws image ops (an
/// adjustment or a warp, never a crop or a resize): the properties such ops
/// share are stated once, in the [`Augmentation`] implementation below,
/// and each op states the rest, what it does to targets included.
pub(crate) trait SizeKeeping: fmt::Display + fmt::Debug {
    /// Checks the parameters ([`Augmentation::check`]).
    fn check(&self) -> Result<()>;

    /// Draws the op ([`Augmentation::draw`]).
    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)>;

    /// What it does to targets ([`Augmentation::targets`]).
    fn targets(&self) -> Targets;
}

impl<T: SizeKeeping> Augmentation for T {
    fn check(&self) -> Result<()> {
        SizeKeeping::check(self)
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        SizeKeeping::draw(self, at, size, ops)
    }

    /// The size it is given.
    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        before
    }

    /// An adjustment or a warp.
    fn draws_image_ops(&self) -> bool {
        true
    }

    /// Neither crops nor resizes.
    fn sizes_first(&self) -> bool {
        false
    }

    /// A leaf.
    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        SizeKeeping::targets(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adjust::Point;
    use crate::train::augment::{ColorJitter, GaussianBlur, ImageOp, RandomAdjustment};
    use crate::train::{AugMix, Augment, RandomApply, RandomResizedCrop, RandomRotation};
    use alloc::vec;

    /// Photometric ops leave targets alone; geometric ones move them;
    /// AugMix and custom ops refuse, composites say what their ops say.
    #[test]
    fn photometric_ops_leave_targets_alone() {
        let photometric: [&dyn Augmentation; 3] = [
            &ColorJitter::new(0.4, 0.4, 0.4, 0.1),
            &GaussianBlur::new(3, 3),
            &RandomAdjustment::new(ImageOp::Point(Point::Invert), 0.5),
        ];
        assert!(
            photometric
                .iter()
                .all(|a| a.targets() == Targets::Unchanged)
        );
        let geometric: [&dyn Augmentation; 2] = [
            &RandomResizedCrop::new(8, 8),
            &RandomRotation::new(-10.0, 10.0),
        ];
        assert!(geometric.iter().all(|a| a.targets() == Targets::Moved));
        let augmix = AugMix::new();
        assert!(matches!(
            Augmentation::targets(&augmix),
            Targets::Refused(_)
        ));
        let nested = RandomApply::new(
            0.5,
            vec![
                Augment::ColorJitter(ColorJitter::new(0.1, 0.1, 0.1, 0.1)),
                Augment::AugMix(augmix),
            ],
        );
        assert!(matches!(nested.targets(), Targets::Refused(_)));
        let colour = RandomApply::new(0.5, vec![Augment::GaussianBlur(GaussianBlur::new(3, 3))]);
        assert_eq!(colour.targets(), Targets::Unchanged);
    }
}
