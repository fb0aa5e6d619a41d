//! A sample's target: what detection, segmentation and pose datasets give
//! with an image, kept in step through every geometric op and every filter.

use alloc::vec::Vec;
use core::fmt;

use super::{BoundingBoxes, BoxFormat, Canvas, Geometry, KeyPoints, Masks, Polygons};
use crate::geometry::Flip;
use crate::{Error, Result};

/// Key points grouped by instance (`[N, K]` points, COCO's person key
/// points), with what torchvision's tensor leaves out: each point's
/// visibility, and the mirror of each point (left eye for right eye) that a
/// horizontal flip swaps.
///
/// ```
/// use tensorprep::targets::{Canvas, Geometry, InstanceKeyPoints, KeyPoints};
/// use tensorprep::geometry::Flip;
///
/// // One instance, two points: a left and a right eye, both visible.
/// let points = KeyPoints::new(vec![[10.0, 5.0], [20.0, 5.0]], Canvas::new(10, 40)?);
/// let mut eyes = InstanceKeyPoints::new(points, 2, vec![2, 1], vec![1, 0])?;
/// eyes.apply(&Geometry::Flip(Flip::Horizontal))?;
/// // x -> 39 - x, then each point takes its mirror's place (and visibility).
/// assert_eq!(eyes.points.points(), &[[19.0, 5.0], [29.0, 5.0]]);
/// assert_eq!(eyes.visibility, [1, 2]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InstanceKeyPoints {
    /// The points, instance after instance.
    pub points: KeyPoints,
    /// Points per instance (`K`).
    pub per_instance: usize,
    /// One visibility per point (COCO's `v`: 0 not labelled, 1 labelled but
    /// hidden, 2 visible), carried unchanged; empty when not given.
    pub visibility: Vec<u8>,
    /// For each of the `K` points, the point it becomes in a horizontal flip
    /// (a permutation); empty when the points have no sides.
    pub flip_index: Vec<u16>,
}

impl InstanceKeyPoints {
    /// `points` as instances of `per_instance` points each, with their
    /// `visibility` (one per point, or empty) and `flip_index` (a
    /// permutation of `0..per_instance`, or empty).
    pub fn new(
        points: KeyPoints,
        per_instance: usize,
        visibility: Vec<u8>,
        flip_index: Vec<u16>,
    ) -> Result<InstanceKeyPoints> {
        let k = InstanceKeyPoints {
            points,
            per_instance,
            visibility,
            flip_index,
        };
        k.check()?;
        Ok(k)
    }

    /// How many instances there are.
    pub fn instances(&self) -> usize {
        self.points
            .len()
            .checked_div(self.per_instance)
            .unwrap_or(0)
    }

    fn check(&self) -> Result<()> {
        let bad = |name, reason| Err(Error::InvalidParameter { name, reason });
        if self.per_instance == 0 && !self.points.is_empty() {
            return bad("keypoints", "at least one point per instance");
        }
        if self.per_instance != 0 && !self.points.len().is_multiple_of(self.per_instance) {
            return bad("keypoints", "the same number of points for every instance");
        }
        if !self.visibility.is_empty() && self.visibility.len() != self.points.len() {
            return bad("visibility", "one visibility per key point");
        }
        if !self.flip_index.is_empty() {
            let mut seen = alloc::vec![false; self.per_instance];
            for &i in &self.flip_index {
                match seen.get_mut(usize::from(i)) {
                    Some(s) if !*s => *s = true,
                    _ => return bad("flip_index", "a permutation of the points of an instance"),
                }
            }
            if self.flip_index.len() != self.per_instance {
                return bad("flip_index", "a permutation of the points of an instance");
            }
        }
        Ok(())
    }

    /// Moves the points by `geometry`; a mirror (a horizontal or a vertical
    /// flip, not both: that is a half turn) then puts each point in its
    /// mirror's place, with its visibility.
    pub fn apply(&mut self, geometry: &Geometry) -> Result<()> {
        self.points.apply(geometry)?;
        if let Geometry::Flip(Flip::Horizontal | Flip::Vertical) = geometry
            && !self.flip_index.is_empty()
        {
            self.points.permute_instances(&self.flip_index)?;
            if !self.visibility.is_empty() {
                permute(&mut self.visibility, &self.flip_index)?;
            }
        }
        Ok(())
    }

    /// Keeps the instances whose `keep` entry is true.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        self.points.retain_instances(keep, self.per_instance)?;
        retain_grouped(&mut self.visibility, keep, self.per_instance);
        Ok(())
    }
}

/// Each group of `index.len()` values takes its values in `index`'s order;
/// an index outside the group is an error (the public `flip_index` may have
/// been edited since [`InstanceKeyPoints::new`] checked it).
pub(super) fn permute<T: Copy>(values: &mut [T], index: &[u16]) -> Result<()> {
    let k = index.len();
    if index.iter().any(|&i| usize::from(i) >= k) {
        return Err(Error::InvalidParameter {
            name: "flip_index",
            reason: "a permutation of the points of an instance",
        });
    }
    let Some(&first) = values.first() else {
        return Ok(());
    };
    if k == 0 {
        return Ok(());
    }
    let mut group = [first; 64];
    for chunk in values.chunks_exact_mut(k) {
        if k <= group.len() {
            group[..k].copy_from_slice(chunk);
            for (v, &i) in chunk.iter_mut().zip(index) {
                *v = group[usize::from(i)];
            }
        } else {
            let copy = chunk.to_vec();
            for (v, &i) in chunk.iter_mut().zip(index) {
                *v = copy[usize::from(i)];
            }
        }
    }
    Ok(())
}

/// Keeps the groups of `per` values whose `keep` entry is true (nothing
/// when `values` is empty, an absent field).
fn retain_grouped<T>(values: &mut Vec<T>, keep: &[bool], per: usize) {
    if values.is_empty() {
        return;
    }
    let per = per.max(1);
    let mut i = 0;
    values.retain(|_| {
        let kept = keep.get(i / per).copied().unwrap_or(false);
        i += 1;
        kept
    });
}

/// A sample's target: the objects of a detection, instance segmentation or
/// pose dataset, or a semantic segmentation mask, with the image's id.
///
/// Every per-instance field (boxes, labels, `iscrowd`, `area`, `difficult`,
/// instance masks or polygons, key points) is either absent (empty) or has one entry per
/// instance, checked by [`Target::check`]; [`Target::retain`] (what
/// `SanitizeBoundingBoxes` calls) keeps them all in step, where
/// torchvision's keeps only the labels, masks and key points.
///
/// ```
/// use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Geometry, Target};
///
/// let canvas = Canvas::new(100, 200)?;
/// let mut t = Target::default();
/// t.boxes = Some(BoundingBoxes::new(vec![[10.0, 10.0, 50.0, 40.0], [190.0, 0.0, 9.0, 5.0]], BoxFormat::Xywh, canvas));
/// t.labels = vec![3, 7];
/// t.check()?;
/// t.apply(&Geometry::Crop { top: 0, left: 0, height: 100, width: 195 })?;
/// t.sanitize(1.0, 1.0)?; // the second box is cut to 5x5, kept; ...
/// assert_eq!(t.labels, [3, 7]);
/// t.apply(&Geometry::Crop { top: 0, left: 0, height: 100, width: 190 })?;
/// t.sanitize(1.0, 1.0)?; // ... now 0 wide: dropped with its label
/// assert_eq!(t.labels, [3]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
#[non_exhaustive]
pub struct Target {
    /// The image's id in its dataset (COCO's `image_id`).
    pub image_id: Option<i64>,
    /// One box per instance.
    pub boxes: Option<BoundingBoxes>,
    /// One class per instance.
    pub labels: Vec<i64>,
    /// COCO's `iscrowd`, one per instance (1: a crowd region).
    pub iscrowd: Vec<u8>,
    /// COCO's `area`, one per instance: carried unchanged, as torchvision's
    /// detection references carry it (the evaluation reads it).
    pub area: Vec<f32>,
    /// Pascal VOC's `difficult`, one per instance.
    pub difficult: Vec<u8>,
    /// One mask per instance, `[N, H, W]`.
    pub masks: Option<Masks>,
    /// One outline per instance, kept as polygons through the ops (where
    /// [`masks`](Self::masks) would be moved as pixels) until
    /// [`rasterize_polygons`](Self::rasterize_polygons) makes them the
    /// masks; a target has one or the other.
    pub polygons: Option<Polygons>,
    /// A semantic segmentation mask (one class per pixel), `[1, H, W]`;
    /// never filtered with the instances.
    pub semantic: Option<Masks>,
    /// Key points, grouped by instance.
    pub keypoints: Option<InstanceKeyPoints>,
    /// What masks get where an op brings in pixels from outside (pads,
    /// warps): torchvision's `fill` for masks. 0 by default; 255 is the
    /// usual "ignore" of a semantic mask.
    pub mask_fill: u8,
    /// Whether the target lies on the upright image (its EXIF orientation
    /// applied, as YOLO labels do) rather than on the pixels as stored (as
    /// COCO's and VOC's do, the default). A training plan moves it onto the
    /// image its decode makes either way.
    pub upright: bool,
}

impl Target {
    /// How many instances there are: the length of the first per-instance
    /// field present (boxes, labels, masks, key points, ...).
    pub fn instances(&self) -> usize {
        self.lengths().into_iter().find_map(|(_, n)| n).unwrap_or(0)
    }

    /// Each per-instance field's length, when present.
    fn lengths(&self) -> [(&'static str, Option<usize>); 8] {
        let vec = |len: usize| (len > 0).then_some(len);
        [
            ("boxes", self.boxes.as_ref().map(BoundingBoxes::len)),
            ("masks", self.masks.as_ref().map(Masks::count)),
            ("polygons", self.polygons.as_ref().map(Polygons::len)),
            (
                "keypoints",
                self.keypoints.as_ref().map(InstanceKeyPoints::instances),
            ),
            ("labels", vec(self.labels.len())),
            ("iscrowd", vec(self.iscrowd.len())),
            ("area", vec(self.area.len())),
            ("difficult", vec(self.difficult.len())),
        ]
    }

    /// The bytes the target holds on the heap (its boxes, per-instance
    /// fields, masks and key points): what a cache counts it as.
    pub fn heap_bytes(&self) -> usize {
        let boxes = self.boxes.as_ref().map_or(0, |b| 16 * b.len());
        let masks = [&self.masks, &self.semantic]
            .into_iter()
            .flatten()
            .map(|m| m.data().len())
            .sum::<usize>();
        let points = self.keypoints.as_ref().map_or(0, |k| {
            8 * k.points.len() + k.visibility.len() + 2 * k.flip_index.len()
        });
        boxes
            + self.polygons.as_ref().map_or(0, Polygons::heap_bytes)
            + 8 * self.labels.len()
            + self.iscrowd.len()
            + 4 * self.area.len()
            + self.difficult.len()
            + masks
            + points
            + core::mem::size_of::<Target>()
    }

    /// Checks that every per-instance field present has one entry per
    /// instance, that a semantic mask is one mask, that instance masks and
    /// polygons are not both given, and the key points' grouping.
    pub fn check(&self) -> Result<()> {
        if self.masks.is_some() && self.polygons.is_some() {
            return Err(Error::InvalidParameter {
                name: "polygons",
                reason: "instance masks or polygons, not both",
            });
        }
        let n = self.instances();
        for (name, len) in self.lengths() {
            if len.is_some_and(|len| len != n) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: "one entry per instance (as many as the target's boxes)",
                });
            }
        }
        if self.semantic.as_ref().is_some_and(|m| m.count() != 1) {
            return Err(Error::InvalidParameter {
                name: "semantic",
                reason: "a semantic mask is one [H, W] mask",
            });
        }
        if let Some(k) = &self.keypoints {
            k.check()?;
        }
        Ok(())
    }

    /// Moves every geometric part (boxes, masks, key points) by `geometry`.
    pub fn apply(&mut self, geometry: &Geometry) -> Result<()> {
        self.apply_split(geometry, geometry)
    }

    /// The first canvas of the boxes, instance masks, semantic mask or key
    /// points that is not `width` x `height`: `None` when the target lies
    /// on an image of that size.
    pub fn canvas_other_than(&self, width: u32, height: u32) -> Option<Canvas> {
        [
            self.boxes.as_ref().map(|b| b.canvas()),
            self.masks.as_ref().map(|m| m.canvas()),
            self.polygons.as_ref().map(|p| p.canvas()),
            self.semantic.as_ref().map(|m| m.canvas()),
            self.keypoints.as_ref().map(|k| k.points.canvas()),
        ]
        .into_iter()
        .flatten()
        .find(|c| (c.width, c.height) != (width, height))
    }

    /// Moves the boxes and key points by `points` and the masks and
    /// polygons by `pixels`: one op for which torchvision computes the two
    /// differently (`center_crop` past the image's edge).
    pub(crate) fn apply_split(&mut self, points: &Geometry, pixels: &Geometry) -> Result<()> {
        if let Some(b) = &mut self.boxes {
            b.apply(points)?;
        }
        for m in [&mut self.masks, &mut self.semantic].into_iter().flatten() {
            m.apply(pixels, self.mask_fill)?;
        }
        if let Some(p) = &mut self.polygons {
            p.apply(pixels)?;
        }
        if let Some(k) = &mut self.keypoints {
            k.apply(points)?;
        }
        Ok(())
    }

    /// Keeps the instances whose `keep` entry is true (one per instance),
    /// in every per-instance field.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        self.check()?;
        if keep.len() != self.instances() {
            return Err(Error::TensorSize {
                len: keep.len(),
                needed: self.instances(),
            });
        }
        if let Some(b) = &mut self.boxes {
            b.retain(keep)?;
        }
        if let Some(m) = &mut self.masks {
            m.retain(keep)?;
        }
        if let Some(p) = &mut self.polygons {
            p.retain(keep)?;
        }
        if let Some(k) = &mut self.keypoints {
            k.retain(keep)?;
        }
        retain_grouped(&mut self.labels, keep, 1);
        retain_grouped(&mut self.iscrowd, keep, 1);
        retain_grouped(&mut self.area, keep, 1);
        retain_grouped(&mut self.difficult, keep, 1);
        Ok(())
    }

    /// torchvision's `SanitizeBoundingBoxes(min_size, min_area)`: drops the
    /// instances whose boxes are degenerate, too small or outside the
    /// canvas (see [`BoundingBoxes::sanitize_mask`]), every per-instance
    /// field with them. Without boxes, nothing changes.
    pub fn sanitize(&mut self, min_size: f64, min_area: f64) -> Result<()> {
        let Some(b) = &self.boxes else {
            return Ok(());
        };
        let keep = b.sanitize_mask(min_size, min_area)?;
        if keep.iter().all(|k| *k) {
            return Ok(());
        }
        self.retain(&keep)
    }

    /// The polygons, if any, become the instance masks, rasterised on the
    /// canvas they lie on ([`Polygons::rasterize`]): what a training plan
    /// does once its ops are drawn.
    pub fn rasterize_polygons(&mut self) -> Result<()> {
        if let Some(p) = &self.polygons {
            if self.masks.is_some() {
                return Err(Error::InvalidParameter {
                    name: "polygons",
                    reason: "instance masks or polygons, not both",
                });
            }
            self.masks = Some(p.rasterize()?);
            self.polygons = None;
        }
        Ok(())
    }

    /// torchvision's `ClampBoundingBoxes`: the boxes into their canvas.
    pub fn clamp(&mut self) {
        if let Some(b) = &mut self.boxes {
            b.clamp();
        }
    }

    /// torchvision's `ConvertBoundingBoxFormat(format)`.
    pub fn convert_format(&mut self, to: BoxFormat) {
        if let Some(b) = &mut self.boxes {
            b.convert_format(to);
        }
    }
}

/// An op on a target alone, with its parameters: what the box-only
/// transforms do, and the box filters of `RandomIoUCrop` and
/// `FixedSizeCrop`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum TargetOp {
    /// `ClampBoundingBoxes()`: the boxes into their canvas.
    Clamp,
    /// `SanitizeBoundingBoxes(min_size, min_area)`: drops the instances
    /// whose boxes are too small or outside (see [`Target::sanitize`]).
    Sanitize {
        /// The smallest width and height kept (at least 1).
        min_size: f64,
        /// The smallest area kept (at least 1).
        min_area: f64,
    },
    /// `ConvertBoundingBoxFormat(format)`.
    ConvertFormat(BoxFormat),
    /// `RandomIoUCrop`'s mark on the boxes it does not keep: every box whose
    /// centre (float32, `0.5 * (x1 + x2)`) is not strictly inside the
    /// window becomes all zeros, for a later `SanitizeBoundingBoxes` to
    /// drop. Masks and key points are left as they are, as in torchvision.
    ZeroUncentred {
        /// The window's left column.
        left: i64,
        /// Its top row.
        top: i64,
        /// Its right edge (left + width).
        right: i64,
        /// Its bottom edge (top + height).
        bottom: i64,
    },
    /// `FixedSizeCrop`'s filter after its crop: the boxes clamped, then the
    /// instances whose box has no width or no height dropped (every
    /// per-instance field with them).
    DropEmpty,
}

impl Target {
    /// Runs `op` on the target.
    pub fn run(&mut self, op: &TargetOp) -> Result<()> {
        match *op {
            TargetOp::Clamp => self.clamp(),
            TargetOp::Sanitize { min_size, min_area } => self.sanitize(min_size, min_area)?,
            TargetOp::ConvertFormat(format) => self.convert_format(format),
            TargetOp::ZeroUncentred {
                left,
                top,
                right,
                bottom,
            } => {
                if let Some(b) = &mut self.boxes {
                    let centred = b.centred_in([left, top, right, bottom].map(|v| v as f32));
                    b.zero_unless(&centred)?;
                }
            }
            TargetOp::DropEmpty => {
                let Some(b) = &mut self.boxes else {
                    return Ok(());
                };
                b.clamp();
                let keep = b.nonempty();
                if !keep.iter().all(|k| *k) {
                    self.retain(&keep)?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for TargetOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetOp::Clamp => write!(f, "ClampBoundingBoxes"),
            TargetOp::Sanitize { min_size, min_area } => write!(
                f,
                "SanitizeBoundingBoxes min_size {min_size} min_area {min_area}"
            ),
            TargetOp::ConvertFormat(format) => {
                write!(f, "ConvertBoundingBoxFormat {}", format.name())
            }
            TargetOp::ZeroUncentred {
                left,
                top,
                right,
                bottom,
            } => write!(
                f,
                "zero the boxes not centred in ({left}, {top}, {right}, {bottom})"
            ),
            TargetOp::DropEmpty => write!(f, "drop the empty boxes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::{Canvas, KeyPoints};
    use alloc::vec;

    fn eyes(points: Vec<[f32; 2]>) -> InstanceKeyPoints {
        let n = points.len();
        let points = KeyPoints::new(points, Canvas::new(10, 40).unwrap());
        InstanceKeyPoints::new(points, 2, vec![2; n], vec![1, 0]).unwrap()
    }

    /// A mirror swaps sides, a half turn (both flips) does not; a target
    /// with no instances left (all sanitized away) flips without a fault.
    #[test]
    fn mirrors_swap_sides_and_half_turns_do_not() {
        let mut k = eyes(vec![[10.0, 5.0], [20.0, 5.0]]);
        k.apply(&Geometry::Flip(Flip::Vertical)).unwrap();
        assert_eq!(k.points.points(), &[[20.0, 4.0], [10.0, 4.0]]);
        let mut k = eyes(vec![[10.0, 5.0], [20.0, 5.0]]);
        k.apply(&Geometry::Flip(Flip::Both)).unwrap();
        assert_eq!(k.points.points(), &[[29.0, 4.0], [19.0, 4.0]]);
        let mut empty = eyes(vec![]);
        empty.apply(&Geometry::Flip(Flip::Horizontal)).unwrap();
        assert_eq!(empty.instances(), 0);
        // A flip index edited out of range after it was checked: an error.
        let mut k = eyes(vec![[10.0, 5.0], [20.0, 5.0]]);
        k.flip_index = vec![0, 9];
        assert!(k.apply(&Geometry::Flip(Flip::Horizontal)).is_err());
        k.flip_index = vec![0, 64];
        assert!(k.apply(&Geometry::Flip(Flip::Horizontal)).is_err());
    }

    /// A cache counts what a target holds: its masks above all.
    #[test]
    fn heap_bytes_count_masks_and_fields() {
        let canvas = Canvas::new(100, 200).unwrap();
        let mut t = Target::default();
        let bare = t.heap_bytes();
        t.boxes = Some(BoundingBoxes::new(
            vec![[0.0; 4]; 3],
            BoxFormat::Xyxy,
            canvas,
        ));
        t.labels = vec![1, 2, 3];
        t.masks = Some(crate::targets::Masks::new(vec![0; 3 * 100 * 200], 3, canvas).unwrap());
        assert_eq!(t.heap_bytes(), bare + 48 + 24 + 60_000);
    }
}
