//! Detection and segmentation targets through the geometric ops, moved as
//! torchvision v2 moves them for the same parameters: bounding boxes
//! ([`BoundingBoxes`], in any [`BoxFormat`]), key points ([`KeyPoints`]) and
//! masks ([`Masks`]).
//!
//! Every op follows torchvision 0.29's kernel for that type in float32, op
//! by op: the same order of operations, the same clamping after each op that
//! clamps, the same new canvas (even where torchvision's box canvas and image
//! size disagree, as after `rotate(expand=True)`). The reference fixtures are
//! `tests/fixtures/targets/` (made by `tests/fixtures/make_target_fixtures.py`).
//!
//! ```
//! use tensorprep::size::SizeRule;
//! use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, KeyPoints};
//!
//! // A COCO box on a 480x640 photo, resized as `Resize(240)` resizes the photo.
//! let canvas = Canvas::new(480, 640)?;
//! let mut boxes = BoundingBoxes::new(vec![[100.0, 50.0, 40.0, 30.0]], BoxFormat::Xywh, canvas);
//! let (w, h) = SizeRule::ShorterSide { size: 240, max_size: None, rounding: Default::default() }
//!     .output_size(canvas.width, canvas.height)?;
//! boxes.resize(Canvas::new(h, w)?);
//! assert_eq!(boxes.boxes(), &[[50.0, 25.0, 20.0, 15.0]]);
//!
//! // Key points flip about `W - 1`, boxes about `W`, as in torchvision.
//! let mut points = KeyPoints::new(vec![[0.0, 10.0]], canvas);
//! points.horizontal_flip();
//! assert_eq!(points.points(), &[[639.0, 10.0]]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod boxes;
mod format;
mod geometry;
mod keypoints;
mod masks;
mod points;
mod polygons;
pub mod rle;
mod target;

pub use boxes::BoundingBoxes;
pub use format::BoxFormat;
pub use geometry::Geometry;
pub use keypoints::KeyPoints;
pub use masks::Masks;
pub use points::Affine;
pub use polygons::{CLIP_STEPS, Polygons};
pub use rle::Rle;
pub use target::{InstanceKeyPoints, Target, TargetOp};

use crate::image::check_dimensions;
use crate::{Error, Result};

/// The size of the image a target lies on (torchvision's `canvas_size`,
/// height first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Canvas {
    /// Height in pixels.
    pub height: u32,
    /// Width in pixels.
    pub width: u32,
}

impl Canvas {
    /// A `height` x `width` canvas; both at least 1 and at most the largest
    /// image side ([`Limits::MAX_DIMENSION`](crate::Limits::MAX_DIMENSION)).
    pub fn new(height: u32, width: u32) -> Result<Canvas> {
        check_dimensions(u64::from(width), u64::from(height))?;
        Ok(Canvas { height, width })
    }
}

/// torch's float32 of a Python int: through float64 (two roundings), as
/// `torch.tensor([left, top], dtype=torch.float32)` makes it.
pub(super) fn offset_f32(v: i64) -> f32 {
    v as f64 as f32
}

/// Padding in pixels on each side (torchvision's `pad` padding; a negative
/// side crops).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Padding {
    /// Columns added on the left.
    pub left: i64,
    /// Rows added on top.
    pub top: i64,
    /// Columns added on the right.
    pub right: i64,
    /// Rows added at the bottom.
    pub bottom: i64,
}

impl Padding {
    /// torchvision's padding argument: one value for every side, two for
    /// left/right and top/bottom, or four as left, top, right, bottom.
    ///
    /// ```
    /// use tensorprep::targets::Padding;
    ///
    /// let p = Padding::from_torchvision(&[1, 2])?;
    /// assert_eq!((p.left, p.top, p.right, p.bottom), (1, 2, 1, 2));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn from_torchvision(padding: &[i64]) -> Result<Padding> {
        let [left, top, right, bottom] = match *padding {
            [p] => [p; 4],
            [x, y] => [x, y, x, y],
            [l, t, r, b] => [l, t, r, b],
            _ => {
                return Err(Error::InvalidParameter {
                    name: "padding",
                    reason: "padding has 1, 2 or 4 values",
                });
            }
        };
        Ok(Padding {
            left,
            top,
            right,
            bottom,
        })
    }

    /// The canvas `canvas` becomes.
    pub fn canvas(&self, canvas: Canvas) -> Result<Canvas> {
        let side = |side: u32, a: i64, b: i64| {
            let s = i128::from(side) + i128::from(a) + i128::from(b);
            u32::try_from(s).map_err(|_| Error::InvalidParameter {
                name: "padding",
                reason: "the padded canvas is out of range",
            })
        };
        Canvas::new(
            side(canvas.height, self.top, self.bottom)?,
            side(canvas.width, self.left, self.right)?,
        )
    }
}
