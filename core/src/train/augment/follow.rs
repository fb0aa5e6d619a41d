//! Targets following the ops drawn for a sample: each drawn op states its
//! [`Geometry`] (a plan op from its own parameters, a warp from the ones it
//! was drawn with), and the target moves by it with torchvision's kernel for
//! that op, op by op, even where the pixel plan fuses several.

use alloc::vec::Vec;

use super::unit::Targets;
use super::{AugMixStep, Augment, Drawn, ImageOp, invalid};
use crate::Result;
use crate::targets::{Geometry, Target};

impl Drawn {
    /// What this op does to targets on an image of `size`: its geometry,
    /// or `None` when it leaves them (a colour op). A custom op is an
    /// error: it does not say.
    pub fn geometry(&self, size: (u32, u32)) -> Result<Option<Geometry>> {
        match self {
            Drawn::Op(op) => op.geometry(size),
            Drawn::Image(ImageOp::Warp { geometry, .. }) => Ok(Some(*geometry)),
            Drawn::Image(_) | Drawn::AugMix(_) | Drawn::Target(_) => Ok(None),
            Drawn::Custom { .. } => {
                Err(refused("a custom op does not say what it does to targets"))
            }
        }
    }

    /// The size of the image this op leaves, given the size before.
    pub fn output_size(&self, size: (u32, u32)) -> Result<(u32, u32)> {
        match self {
            Drawn::Op(op) => op.output_size(size),
            Drawn::Image(op) => Ok(op.output_size(size)),
            Drawn::AugMix(_) | Drawn::Custom { .. } | Drawn::Target(_) => Ok(size),
        }
    }
}

fn refused(reason: &'static str) -> crate::Error {
    invalid("targets", reason)
}

/// Checks that every op of `list` can carry targets (an error naming the
/// first that cannot, as AugMix and custom ops cannot).
pub(crate) fn check_targets(list: &[Augment]) -> Result<()> {
    for a in list {
        if let Targets::Refused(reason) = a.unit().targets() {
            return Err(refused(reason));
        }
    }
    Ok(())
}

/// Where ops are drawn to: the sample's list of drawn ops and, when it has
/// one, its target, moved by each op as it is drawn (so that an op that
/// draws from the boxes, as `RandomIoUCrop` does, sees them where the ops
/// before it put them).
pub(crate) struct Drawing<'a> {
    ops: &'a mut Vec<Drawn>,
    target: Option<Following<'a>>,
}

/// A target being moved, with the image's size at this point of the draw.
struct Following<'a> {
    target: &'a mut Target,
    size: (u32, u32),
    mixing: bool,
}

impl<'a> Drawing<'a> {
    /// Draws into `ops`; `target` (if any) lies on an image of `size` and
    /// moves as ops are drawn.
    pub(crate) fn new(
        ops: &'a mut Vec<Drawn>,
        target: Option<&'a mut Target>,
        size: (u32, u32),
    ) -> Result<Drawing<'a>> {
        let target = match target {
            Some(target) => {
                check_canvas(target, size)?;
                Some(Following {
                    target,
                    size,
                    mixing: false,
                })
            }
            None => None,
        };
        Ok(Drawing { ops, target })
    }

    /// Appends a drawn op (and moves the target by it).
    pub(crate) fn push(&mut self, op: Drawn) -> Result<()> {
        if let Some(f) = &mut self.target {
            f.follow(&op)?;
        }
        self.ops.push(op);
        Ok(())
    }

    /// The target as the ops drawn so far left it.
    pub(crate) fn target(&self) -> Option<&Target> {
        self.target.as_ref().map(|f| &*f.target)
    }
}

impl Following<'_> {
    /// Moves the target by `op`.
    fn follow(&mut self, op: &Drawn) -> Result<()> {
        if let Drawn::AugMix(step) = op {
            self.mixing = !matches!(step, AugMixStep::End);
        }
        if let Some(g) = op.geometry(self.size)? {
            if self.mixing {
                return Err(refused(
                    "AugMix blends copies of the image warped differently: no one geometry moves its targets",
                ));
            }
            self.target.apply(&g)?;
        }
        if let Drawn::Target(op) = op {
            self.target.run(op)?;
        }
        self.size = op.output_size(self.size)?;
        Ok(())
    }
}

/// Moves `target` through `drawn`, the ops drawn for one sample whose image
/// is `size` before them; returns the image's size after them.
///
/// The target's geometric parts must lie on an image of `size` (an error
/// otherwise: an annotation made for another size is never moved). A warp
/// inside AugMix's mixing has no one geometry for targets and is an error.
///
/// ```
/// use tensorprep::geometry::Flip;
/// use tensorprep::pipeline::Op;
/// use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Target};
/// use tensorprep::train::{Drawn, move_target};
/// use tensorprep::Rect;
///
/// let mut t = Target::default();
/// t.boxes = Some(BoundingBoxes::new(vec![[10.0, 20.0, 30.0, 40.0]], BoxFormat::Xyxy, Canvas::new(100, 200)?));
/// let drawn = [Drawn::Op(Op::Crop(Rect::new(5, 10, 100, 50))), Drawn::Op(Op::Flip(Flip::Horizontal))];
/// assert_eq!(move_target(&drawn, (200, 100), &mut t)?, (100, 50));
/// assert_eq!(t.boxes.unwrap().boxes(), &[[75.0, 10.0, 95.0, 30.0]]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn move_target(drawn: &[Drawn], size: (u32, u32), target: &mut Target) -> Result<(u32, u32)> {
    check_canvas(target, size)?;
    let mut f = Following {
        target,
        size,
        mixing: false,
    };
    for op in drawn {
        f.follow(op)?;
    }
    Ok(f.size)
}

/// Checks that the target's boxes, masks and key points lie on an image of
/// `size` (width, height).
fn check_canvas(target: &Target, (w, h): (u32, u32)) -> Result<()> {
    match target.canvas_other_than(w, h) {
        None => Ok(()),
        Some(c) => Err(crate::Error::SizeMismatch {
            expected: (w, h),
            found: (c.width, c.height),
        }),
    }
}
