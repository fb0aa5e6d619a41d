//! Key points through the geometric ops, as torchvision v2's key point
//! kernels move them (`tv_tensors.KeyPoints`, `[..., 2]`): float32, never
//! clamped, flipped about `W - 1` (boxes flip about `W`).

use alloc::vec::Vec;

use super::boxes::center_anchor;
use super::points::{self, Affine, MovedByPoints, PointMap};
use super::{Canvas, Padding, offset_f32};
use crate::{Error, Result};

/// Points `(x, y)` on a canvas (torchvision's `tv_tensors.KeyPoints`).
///
/// ```
/// use tensorprep::targets::{Canvas, KeyPoints};
///
/// let mut k = KeyPoints::new(vec![[3.0, 4.0]], Canvas::new(10, 20)?);
/// k.crop(5, 1, 4, 4)?; // top, left, height, width: not clamped
/// assert_eq!(k.points(), &[[2.0, -1.0]]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPoints {
    points: Vec<[f32; 2]>,
    canvas: Canvas,
}

impl KeyPoints {
    /// Points on an image of size `canvas`.
    pub fn new(points: Vec<[f32; 2]>, canvas: Canvas) -> KeyPoints {
        KeyPoints { points, canvas }
    }

    /// The points.
    pub fn points(&self) -> &[[f32; 2]] {
        &self.points
    }

    /// The points, given back.
    pub fn into_points(self) -> Vec<[f32; 2]> {
        self.points
    }

    /// The image size they lie on.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    /// How many points there are.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Keeps the instances whose `keep` entry is true, the points being
    /// `keep.len()` instances of `per_instance` points each (`[N, K, 2]`,
    /// `K = per_instance`), as `SanitizeBoundingBoxes` should keep them in
    /// step with their boxes.
    pub fn retain_instances(&mut self, keep: &[bool], per_instance: usize) -> Result<()> {
        let needed = keep.len().saturating_mul(per_instance);
        if self.points.len() != needed {
            return Err(Error::TensorSize {
                len: self.points.len(),
                needed,
            });
        }
        let per = per_instance.max(1);
        let mut i = 0;
        self.points.retain(|_| {
            let kept = keep[i / per];
            i += 1;
            kept
        });
        Ok(())
    }

    /// Each instance's points (`index.len()` each) put in `index`'s order:
    /// point `i` becomes the point `index[i]` was.
    pub(super) fn permute_instances(&mut self, index: &[u16]) -> Result<()> {
        if !self.points.len().is_multiple_of(index.len().max(1)) {
            return Err(Error::TensorSize {
                len: self.points.len(),
                needed: index.len(),
            });
        }
        super::target::permute(&mut self.points, index)
    }

    /// torchvision's `horizontal_flip`: `x -> -(x - (W - 1))`.
    pub fn horizontal_flip(&mut self) {
        let last = (self.canvas.width - 1) as f32;
        for p in &mut self.points {
            p[0] = -(p[0] - last);
        }
    }

    /// torchvision's `vertical_flip`: `y -> -(y - (H - 1))`.
    pub fn vertical_flip(&mut self) {
        let last = (self.canvas.height - 1) as f32;
        for p in &mut self.points {
            p[1] = -(p[1] - last);
        }
    }

    /// torchvision's `resize` to `size`: times the float32 ratios of the sides.
    pub fn resize(&mut self, size: Canvas) {
        if size == self.canvas {
            return;
        }
        let ratio = |new: u32, old: u32| (f64::from(new) / f64::from(old)) as f32;
        let r = [
            ratio(size.width, self.canvas.width),
            ratio(size.height, self.canvas.height),
        ];
        for p in &mut self.points {
            *p = [p[0] * r[0], p[1] * r[1]];
        }
        self.canvas = size;
    }

    /// torchvision's `crop(top, left, height, width)`: less the window's
    /// corner; not clamped.
    pub fn crop(&mut self, top: i64, left: i64, height: u32, width: u32) -> Result<()> {
        let canvas = Canvas::new(height, width)?;
        let d = [offset_f32(left), offset_f32(top)];
        for p in &mut self.points {
            *p = [p[0] - d[0], p[1] - d[1]];
        }
        self.canvas = canvas;
        Ok(())
    }

    /// torchvision's `center_crop(output_size=[height, width])`.
    pub fn center_crop(&mut self, height: u32, width: u32) -> Result<()> {
        let (top, left) = center_anchor(self.canvas, height, width);
        self.crop(top, left, height, width)
    }

    /// torchvision's `resized_crop(top, left, height, width, size)`.
    pub fn resized_crop(
        &mut self,
        top: i64,
        left: i64,
        height: u32,
        width: u32,
        size: Canvas,
    ) -> Result<()> {
        self.crop(top, left, height, width)?;
        self.resize(size);
        Ok(())
    }

    /// torchvision's `pad(padding)` (constant padding): plus the left and
    /// top padding.
    pub fn pad(&mut self, padding: Padding) -> Result<()> {
        let canvas = padding.canvas(self.canvas)?;
        let d = [offset_f32(padding.left), offset_f32(padding.top)];
        for p in &mut self.points {
            *p = [p[0] + d[0], p[1] + d[1]];
        }
        self.canvas = canvas;
        Ok(())
    }

    /// torchvision's `affine(angle, translate, scale, shear, center)`.
    pub fn affine(&mut self, affine: &Affine) -> Result<()> {
        points::affine(self, affine)
    }

    /// torchvision's `rotate(angle, expand, center)`; with `expand`, the
    /// canvas torchvision's key point kernel computes (for an empty set too,
    /// where torchvision's kernel leaves the old one).
    pub fn rotate(&mut self, angle: f64, expand: bool, center: Option<(f64, f64)>) -> Result<()> {
        points::rotate(self, angle, expand, center)
    }

    /// torchvision's `perspective(startpoints, endpoints)`.
    pub fn perspective(&mut self, start: [(f64, f64); 4], end: [(f64, f64); 4]) -> Result<()> {
        self.perspective_coefficients(&points::perspective_coefficients(start, end)?)
    }

    /// torchvision's `perspective(coefficients=...)` (output to input).
    pub fn perspective_coefficients(&mut self, coefficients: &[f64; 8]) -> Result<()> {
        points::perspective(self, coefficients)
    }
}

impl MovedByPoints for KeyPoints {
    fn canvas(&self) -> Canvas {
        self.canvas
    }

    fn move_points(&mut self, map: &PointMap, shift: [f32; 2], canvas: Canvas) {
        for p in &mut self.points {
            let [x, y] = map.apply(p[0], p[1]);
            *p = [x - shift[0], y - shift[1]];
        }
        self.canvas = canvas;
    }
}
