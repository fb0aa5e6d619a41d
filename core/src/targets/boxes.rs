//! Bounding boxes through the geometric ops, as torchvision v2's box kernels
//! move them: float32, in the boxes' own format, clamped to the canvas after
//! every op that clamps in torchvision (crop, pad, affine, rotate,
//! perspective; not resize, not the flips).

use alloc::vec::Vec;

use super::points::{self, Affine, MovedByPoints, PointMap, max4, min4};
use super::{BoxFormat, Canvas, Padding, offset_f32};
use crate::pipeline::CropRounding;
use crate::{Error, Result};

/// Axis-aligned boxes on a canvas (torchvision's `tv_tensors.BoundingBoxes`
/// with its default clamping).
///
/// Each op takes torchvision v2's functional parameters, moves the boxes with
/// its arithmetic and sets the new canvas as its box kernel does.
///
/// ```
/// use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas};
///
/// let mut b = BoundingBoxes::new(vec![[10.0, 20.0, 30.0, 60.0]], BoxFormat::Xyxy, Canvas::new(100, 50)?);
/// b.horizontal_flip();
/// assert_eq!(b.boxes(), &[[20.0, 20.0, 40.0, 60.0]]);
/// b.crop(10, 30, 40, 40)?; // top, left, height, width
/// assert_eq!(b.boxes(), &[[0.0, 10.0, 10.0, 40.0]]); // clamped to the 40x40 canvas
/// assert_eq!(b.canvas(), Canvas::new(40, 40)?);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BoundingBoxes {
    boxes: Vec<[f32; 4]>,
    format: BoxFormat,
    canvas: Canvas,
}

impl BoundingBoxes {
    /// Boxes laid out as `format` on an image of size `canvas`.
    pub fn new(boxes: Vec<[f32; 4]>, format: BoxFormat, canvas: Canvas) -> BoundingBoxes {
        BoundingBoxes {
            boxes,
            format,
            canvas,
        }
    }

    /// The boxes.
    pub fn boxes(&self) -> &[[f32; 4]] {
        &self.boxes
    }

    /// The boxes, given back.
    pub fn into_boxes(self) -> Vec<[f32; 4]> {
        self.boxes
    }

    /// Their format.
    pub fn format(&self) -> BoxFormat {
        self.format
    }

    /// The image size they lie on.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    /// How many boxes there are.
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// torchvision's `convert_bounding_box_format(new_format=to)`.
    pub fn convert_format(&mut self, to: BoxFormat) {
        let from = self.format;
        for b in &mut self.boxes {
            *b = from.convert(*b, to);
        }
        self.format = to;
    }

    /// torchvision's `clamp_bounding_boxes`: the corners into `[0, W]` x
    /// `[0, H]`, through the corner format and back (which may change the
    /// last bit of an `XYWH` or `CXCYWH` box that was inside).
    pub fn clamp(&mut self) {
        let (w, h, format) = (
            self.canvas.width as f32,
            self.canvas.height as f32,
            self.format,
        );
        for b in &mut self.boxes {
            let [x1, y1, x2, y2] = format.convert(*b, BoxFormat::Xyxy);
            let corners = [clamp(x1, w), clamp(y1, h), clamp(x2, w), clamp(y2, h)];
            *b = BoxFormat::Xyxy.convert(corners, format);
        }
    }

    /// Which boxes torchvision's `SanitizeBoundingBoxes(min_size, min_area)`
    /// keeps: in corner format (float32), width and height at least
    /// `min_size`, area at least `min_area`, no coordinate below 0 and none
    /// past the canvas. A NaN coordinate is never kept. The thresholds are
    /// at least 1, as torchvision's transform demands.
    ///
    /// ```
    /// use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas};
    ///
    /// let boxes = vec![[0.0, 0.0, 5.0, 5.0], [3.0, 3.0, 3.5, 9.0], [-1.0, 0.0, 4.0, 4.0]];
    /// let mut b = BoundingBoxes::new(boxes, BoxFormat::Xyxy, Canvas::new(10, 10)?);
    /// let keep = b.sanitize_mask(1.0, 1.0)?;
    /// assert_eq!(keep, [true, false, false]); // too thin; outside
    /// b.retain(&keep)?;
    /// assert_eq!(b.len(), 1);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn sanitize_mask(&self, min_size: f64, min_area: f64) -> Result<Vec<bool>> {
        if !(min_size >= 1.0 && min_area >= 1.0) {
            return Err(Error::InvalidParameter {
                name: "SanitizeBoundingBoxes",
                reason: "min_size and min_area must be at least 1",
            });
        }
        let (min_size, min_area) = (min_size as f32, min_area as f32);
        let (w, h) = (self.canvas.width as f32, self.canvas.height as f32);
        Ok(self
            .boxes
            .iter()
            .map(|b| {
                let [x1, y1, x2, y2] = self.format.convert(*b, BoxFormat::Xyxy);
                let (ws, hs) = (x2 - x1, y2 - y1);
                ws >= min_size
                    && hs >= min_size
                    && [x1, y1, x2, y2].iter().all(|v| *v >= 0.0)
                    && ws * hs >= min_area
                    && x1 <= w
                    && x2 <= w
                    && y1 <= h
                    && y2 <= h
            })
            .collect())
    }

    /// Which boxes have their centre (`0.5 * (x1 + x2)`, `0.5 * (y1 + y2)`
    /// in float32) strictly inside `[left, top, right, bottom]`.
    pub(super) fn centred_in(&self, [left, top, right, bottom]: [f32; 4]) -> Vec<bool> {
        self.boxes
            .iter()
            .map(|b| {
                let [x1, y1, x2, y2] = self.format.convert(*b, BoxFormat::Xyxy);
                let (cx, cy) = (0.5 * (x1 + x2), 0.5 * (y1 + y2));
                left < cx && cx < right && top < cy && cy < bottom
            })
            .collect()
    }

    /// Sets every box whose `keep` entry is false to zeros.
    pub(super) fn zero_unless(&mut self, keep: &[bool]) -> Result<()> {
        check_keep(keep, self.boxes.len())?;
        for (b, k) in self.boxes.iter_mut().zip(keep) {
            if !k {
                *b = [0.0; 4];
            }
        }
        Ok(())
    }

    /// Which boxes have a positive width and height (in `XYWH`, float32).
    pub(super) fn nonempty(&self) -> Vec<bool> {
        self.boxes
            .iter()
            .map(|b| {
                let [_, _, w, h] = self.format.convert(*b, BoxFormat::Xywh);
                w > 0.0 && h > 0.0
            })
            .collect()
    }

    /// Keeps the boxes whose `keep` entry is true (one per box).
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        check_keep(keep, self.boxes.len())?;
        let mut k = keep.iter();
        self.boxes.retain(|_| k.next() == Some(&true));
        Ok(())
    }

    /// torchvision's `horizontal_flip`: `x -> W - x`, written `-(x - W)` as
    /// torchvision computes it (an edge at `W` becomes `-0.0`). Not clamped.
    pub fn horizontal_flip(&mut self) {
        let w = self.canvas.width as f32;
        self.flip(w, 0);
    }

    /// torchvision's `vertical_flip`: `y -> H - y` (see
    /// [`horizontal_flip`](Self::horizontal_flip)).
    pub fn vertical_flip(&mut self) {
        let h = self.canvas.height as f32;
        self.flip(h, 1);
    }

    fn flip(&mut self, side: f32, axis: usize) {
        let format = self.format;
        for b in &mut self.boxes {
            let (lo, hi) = (b[axis], b[axis + 2]);
            match format {
                BoxFormat::Xyxy => (b[axis], b[axis + 2]) = (-(hi - side), -(lo - side)),
                BoxFormat::Xywh => b[axis] = -((lo + hi) - side),
                BoxFormat::Cxcywh => b[axis] = -(lo - side),
            }
        }
    }

    /// torchvision's `resize` to `size` (computed from torchvision's size
    /// arguments by [`SizeRule`](crate::size::SizeRule)): every coordinate
    /// times the float32 ratio of the sides. Not clamped.
    pub fn resize(&mut self, size: Canvas) {
        if size == self.canvas {
            return;
        }
        let ratio = |new: u32, old: u32| (f64::from(new) / f64::from(old)) as f32;
        let rw = ratio(size.width, self.canvas.width);
        let rh = ratio(size.height, self.canvas.height);
        for b in &mut self.boxes {
            *b = [b[0] * rw, b[1] * rh, b[2] * rw, b[3] * rh];
        }
        self.canvas = size;
    }

    /// torchvision's `crop(top, left, height, width)`: the window's corner
    /// becomes the origin (a negative `top` or `left` pads), then clamped to
    /// the `height` x `width` canvas.
    pub fn crop(&mut self, top: i64, left: i64, height: u32, width: u32) -> Result<()> {
        let canvas = Canvas::new(height, width)?;
        self.shift([offset_f32(left), offset_f32(top)], |v, d| v - d);
        self.canvas = canvas;
        self.clamp();
        Ok(())
    }

    /// Moves the position by `d` (`by` is `+` or `-`). torchvision adds
    /// `[l, t, 0, 0]` to the position-and-size formats: the 0 too, so a
    /// `-0.0` size becomes `0.0` in a pad, as there.
    fn shift(&mut self, d: [f32; 2], by: impl Fn(f32, f32) -> f32) {
        let d = match self.format {
            BoxFormat::Xyxy => [d[0], d[1], d[0], d[1]],
            BoxFormat::Xywh | BoxFormat::Cxcywh => [d[0], d[1], 0.0, 0.0],
        };
        for b in &mut self.boxes {
            for (v, d) in b.iter_mut().zip(d) {
                *v = by(*v, d);
            }
        }
    }

    /// torchvision's `center_crop(output_size=[height, width])`: a crop at
    /// `round((H - height) / 2)`, `round((W - width) / 2)` (ties to even,
    /// negative when the crop is larger than the canvas).
    pub fn center_crop(&mut self, height: u32, width: u32) -> Result<()> {
        let (top, left) = center_anchor(self.canvas, height, width);
        self.crop(top, left, height, width)
    }

    /// torchvision's `resized_crop(top, left, height, width, size)`:
    /// [`crop`](Self::crop), then [`resize`](Self::resize) to `size`.
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

    /// torchvision's `pad(padding)` (constant padding): the boxes move by the
    /// left and top padding, the canvas grows, then clamped.
    pub fn pad(&mut self, padding: Padding) -> Result<()> {
        let canvas = padding.canvas(self.canvas)?;
        self.shift(
            [offset_f32(padding.left), offset_f32(padding.top)],
            |v, d| v + d,
        );
        self.canvas = canvas;
        self.clamp();
        Ok(())
    }

    /// torchvision's `affine(angle, translate, scale, shear, center)`: each
    /// box's four corners through the float32 matrix, their extent, clamped.
    pub fn affine(&mut self, affine: &Affine) -> Result<()> {
        points::affine(self, affine)
    }

    /// torchvision's `rotate(angle, expand, center)` (counter-clockwise, in
    /// degrees). With `expand` the canvas grows to hold the rotated one, as
    /// torchvision's box kernel sizes it (which can differ from the rotated
    /// image's size by a pixel in torchvision too). An empty set gets the
    /// expanded canvas too; torchvision's kernel leaves it the old one.
    pub fn rotate(&mut self, angle: f64, expand: bool, center: Option<(f64, f64)>) -> Result<()> {
        points::rotate(self, angle, expand, center)
    }

    /// torchvision's `perspective(startpoints, endpoints)` (corners
    /// top-left, top-right, bottom-right, bottom-left): each box's corners
    /// through the inverted coefficients, their extent, clamped.
    pub fn perspective(&mut self, start: [(f64, f64); 4], end: [(f64, f64); 4]) -> Result<()> {
        self.perspective_coefficients(&points::perspective_coefficients(start, end)?)
    }

    /// torchvision's `perspective(coefficients=...)`: the 8 coefficients
    /// mapping output points to input points, as `F.perspective` takes them.
    /// Coefficients that cannot be inverted are an error even for an empty
    /// set (torchvision returns an empty set before looking at them).
    pub fn perspective_coefficients(&mut self, coefficients: &[f64; 8]) -> Result<()> {
        points::perspective(self, coefficients)
    }
}

impl MovedByPoints for BoundingBoxes {
    fn canvas(&self) -> Canvas {
        self.canvas
    }

    /// The kernels of affine, rotate and perspective: through the corner
    /// format, each box's four corners through `map`, their extent less
    /// `shift`, clamped to `canvas`, back to the boxes' format.
    fn move_points(&mut self, map: &PointMap, shift: [f32; 2], canvas: Canvas) {
        self.canvas = canvas;
        let format = self.format;
        self.format = BoxFormat::Xyxy;
        for b in &mut self.boxes {
            let [x1, y1, x2, y2] = format.convert(*b, BoxFormat::Xyxy);
            let c = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)].map(|(x, y)| map.apply(x, y));
            let xs = c.map(|p| p[0]);
            let ys = c.map(|p| p[1]);
            *b = [
                min4(xs) - shift[0],
                min4(ys) - shift[1],
                max4(xs) - shift[0],
                max4(ys) - shift[1],
            ];
        }
        self.clamp();
        self.convert_format(format);
    }
}

/// `v` into `[0, max]` as torch's `clamp` (NaN stays NaN).
fn clamp(v: f32, max: f32) -> f32 {
    let v = if v < 0.0 { 0.0 } else { v };
    if v > max { max } else { v }
}

/// The top-left corner of torchvision's centred crop on `canvas`.
pub(super) fn center_anchor(canvas: Canvas, height: u32, width: u32) -> (i64, i64) {
    let offset =
        |side: u32, crop: u32| CropRounding::HalfEven.offset(i64::from(side) - i64::from(crop));
    (offset(canvas.height, height), offset(canvas.width, width))
}

/// Refuses a keep mask that does not have one entry per item.
pub(super) fn check_keep(keep: &[bool], len: usize) -> Result<()> {
    if keep.len() == len {
        Ok(())
    } else {
        Err(Error::TensorSize {
            len: keep.len(),
            needed: len,
        })
    }
}
