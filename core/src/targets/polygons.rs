//! Instance outlines kept as polygons (COCO's polygon segmentations) through
//! the geometric ops, and rasterised once, on the canvas the ops leave,
//! exactly as pycocotools rasterises a polygon ([`rle`](super::rle)).
//!
//! torchvision moves masks as pixels: nearest resizes and warps of an
//! `[N, H, W]` buffer, op after op (what [`Masks`] does, exact as it). The
//! polygons' alternative (Detectron2's default) moves only the vertices, in
//! float64, and rasterises at the end: the outline stays sharp through
//! scales and rotations, and no `N x H x W` buffer is allocated or moved
//! before the final size is known. The masks differ from torchvision's
//! along the outlines (by what nearest sampling loses); at the identity
//! they are pycocotools' own.
//!
//! The vertices are continuous coordinates (the image spans `[0, W] x [0,
//! H]`, as boxes): a flip maps `x` to `W - x`, a resize scales by the
//! sides' ratio, a crop or pad shifts, an affine map, rotation or
//! perspective moves each vertex by the matrix torchvision builds for the
//! op (in float64). A rotation with `expand` lands on the canvas the image
//! gets (not the box kernel's, which can differ by a pixel), centred as the
//! image's pixels are. Before every op but flips and resizes, the outlines
//! are cut to the canvas (Sutherland-Hodgman): what lies outside the image
//! has no pixels, and a pad or a warp that brings the outside in must not
//! paint it, as it paints no mask pixel there.
//!
//! ```
//! use tensorprep::geometry::Flip;
//! use tensorprep::targets::{Canvas, Geometry, Polygons};
//!
//! let mut p = Polygons::new(Canvas::new(4, 6)?);
//! p.push([&[0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 2.0][..]])?; // one square instance
//! p.apply(&Geometry::Flip(Flip::Horizontal))?;
//! assert_eq!(p.instance(0).next(), Some(&[6.0, 0.0, 4.0, 0.0, 4.0, 2.0, 6.0, 2.0][..]));
//! let masks = p.rasterize()?; // [1, 4, 6]
//! assert_eq!(&masks.data()[..12], &[0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1]);
//! # Ok::<(), tensorprep::Error>(())
//! ```

use alloc::vec;
use alloc::vec::Vec;

use super::masks::Turn;
use super::rle::{self, MAX_POLYGON_STEPS, Rle};
use super::{Affine, Canvas, Geometry, Masks};
use crate::geometry::Flip;
use crate::warp::torchvision_perspective_inverse;
use crate::{Error, Limits, Result};

/// Polygons grouped by instance (each instance one or more parts, united as
/// pycocotools' `merge` unites them), on a canvas.
#[derive(Clone, Debug, PartialEq)]
pub struct Polygons {
    /// `x0, y0, x1, y1, ...` of every part, part after part.
    xy: Vec<f64>,
    /// The end of each part in `xy`.
    parts: Vec<usize>,
    /// The end of each instance in `parts`.
    instances: Vec<usize>,
    canvas: Canvas,
}

fn bad(reason: &'static str) -> Error {
    Error::InvalidParameter {
        name: "polygons",
        reason,
    }
}

impl Polygons {
    /// No instances, on `canvas`.
    pub fn new(canvas: Canvas) -> Polygons {
        Polygons {
            xy: Vec::new(),
            parts: Vec::new(),
            instances: Vec::new(),
            canvas,
        }
    }

    /// Adds one instance made of `parts` (each `[x0, y0, x1, y1, ...]`, at
    /// least three finite points; at least one part).
    pub fn push<'a>(&mut self, parts: impl IntoIterator<Item = &'a [f64]>) -> Result<()> {
        let (xy, ends) = (self.xy.len(), self.parts.len());
        let added = self.push_parts(parts);
        if added.is_err() || self.parts.len() == ends {
            self.xy.truncate(xy);
            self.parts.truncate(ends);
            return added.and(Err(bad("an instance has at least one polygon")));
        }
        self.instances.push(self.parts.len());
        Ok(())
    }

    fn push_parts<'a>(&mut self, parts: impl IntoIterator<Item = &'a [f64]>) -> Result<()> {
        for part in parts {
            if !part.len().is_multiple_of(2) {
                return Err(bad("a polygon with an odd number of coordinates"));
            }
            if part.len() < 6 {
                return Err(bad("a polygon with fewer than three points"));
            }
            if !part.iter().all(|v| v.is_finite()) {
                return Err(bad("a polygon coordinate that is not finite"));
            }
            self.xy
                .try_reserve(part.len())
                .map_err(|_| bad("no memory for the polygons"))?;
            self.xy.extend_from_slice(part);
            self.parts.push(self.xy.len());
        }
        Ok(())
    }

    /// Adds one instance given as a run-length mask on this canvas: one
    /// rectangle per run and column (runs in neighbouring columns with the
    /// same rows joined), which pycocotools rasterises back into exactly
    /// the mask's pixels.
    pub fn push_rle(&mut self, rle: &Rle) -> Result<()> {
        if rle.canvas() != self.canvas {
            return Err(bad("an RLE mask of another size than the polygons' canvas"));
        }
        let h = u64::from(self.canvas.height);
        // A rectangle per run and column at most: runs + columns.
        let most = (rle.counts().len() as u64 / 2 + u64::from(self.canvas.width)) * 8 * 8;
        Limits::default().check_alloc(most)?;
        let mut rects: Vec<[u64; 4]> = Vec::new();
        let mut at = 0u64;
        for (i, &c) in rle.counts().iter().enumerate() {
            let end = at + u64::from(c);
            if i % 2 == 1 {
                let mut a = at;
                while a < end {
                    let (x, y0) = (a / h, a % h);
                    let y1 = h.min(y0 + (end - a));
                    match rects.last_mut() {
                        Some(r) if r[2] == x && r[1] == y0 && r[3] == y1 => r[2] = x + 1,
                        _ => rects.push([x, y0, x + 1, y1]),
                    }
                    a += y1 - y0;
                }
            }
            at = end;
        }
        if rects.is_empty() {
            // An empty mask: one part with no area, rasterised to nothing.
            return self.push([&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0][..]]);
        }
        let parts: Vec<[f64; 8]> = rects
            .iter()
            .map(|r| {
                let [x0, y0, x1, y1] = r.map(|v| v as f64);
                [x0, y0, x1, y0, x1, y1, x0, y1]
            })
            .collect();
        self.push(parts.iter().map(|p| &p[..]))
    }

    /// How many instances there are.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// The canvas they lie on.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    /// The parts of instance `i` (none past the last instance); a part an
    /// op cut away entirely is empty.
    pub fn instance(&self, i: usize) -> impl Iterator<Item = &[f64]> + '_ {
        let parts = match i {
            _ if i >= self.instances.len() => 0..0,
            0 => 0..self.instances[0],
            _ => self.instances[i - 1]..self.instances[i],
        };
        parts.map(move |p| {
            let start = if p == 0 { 0 } else { self.parts[p - 1] };
            &self.xy[start..self.parts[p]]
        })
    }

    /// The bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        8 * (self.xy.len() + self.parts.len() + self.instances.len())
    }

    /// Keeps the instances whose `keep` entry is true (one per instance).
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        super::boxes::check_keep(keep, self.len())?;
        let mut kept = Polygons::new(self.canvas);
        for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            for part in self.instance(i) {
                kept.xy.extend_from_slice(part);
                kept.parts.push(kept.xy.len());
            }
            kept.instances.push(kept.parts.len());
        }
        *self = kept;
        Ok(())
    }

    /// Cuts every part to the canvas, `[0, W] x [0, H]`: what lies outside
    /// has no pixels, and an op that brings the outside in (a crop past
    /// the edge, a pad, a warp) must not paint it. A part cut away
    /// entirely is left empty. Nothing changes when every vertex is inside.
    fn cut_to_canvas(&mut self) {
        let (w, h) = (f64::from(self.canvas.width), f64::from(self.canvas.height));
        let inside = |p: &[f64]| p[0] >= 0.0 && p[0] <= w && p[1] >= 0.0 && p[1] <= h;
        if self.xy.chunks_exact(2).all(inside) {
            return;
        }
        let (mut xy, mut ends) = (
            Vec::with_capacity(self.xy.len()),
            Vec::with_capacity(self.parts.len()),
        );
        let mut part = Vec::new();
        let mut start = 0;
        for &end in &self.parts {
            cut(&self.xy[start..end], [0.0, 0.0], [w, h], &mut part);
            xy.extend_from_slice(&part);
            ends.push(xy.len());
            start = end;
        }
        self.xy = xy;
        self.parts = ends;
    }

    fn map(&mut self, f: impl Fn(f64, f64) -> (f64, f64), canvas: Canvas) {
        for p in self.xy.chunks_exact_mut(2) {
            (p[0], p[1]) = f(p[0], p[1]);
        }
        self.canvas = canvas;
    }

    /// Moves the vertices by `geometry` (see the [module](self) for how),
    /// cut to the canvas first when the op can bring what lies outside it
    /// in (every op but flips and resizes).
    pub fn apply(&mut self, geometry: &Geometry) -> Result<()> {
        if !matches!(geometry, Geometry::Flip(_) | Geometry::Resize(_)) {
            self.cut_to_canvas();
        }
        let c = self.canvas;
        let (w, h) = (f64::from(c.width), f64::from(c.height));
        match *geometry {
            Geometry::Flip(flip) => {
                let (fx, fy) = match flip {
                    Flip::Horizontal => (true, false),
                    Flip::Vertical => (false, true),
                    Flip::Both => (true, true),
                };
                self.map(
                    |x, y| (if fx { w - x } else { x }, if fy { h - y } else { y }),
                    c,
                );
            }
            Geometry::Resize(size) => {
                let (rx, ry) = (f64::from(size.width) / w, f64::from(size.height) / h);
                self.map(|x, y| (x * rx, y * ry), size);
            }
            Geometry::Crop {
                top,
                left,
                height,
                width,
            } => {
                let canvas = Canvas::new(height, width)?;
                let (l, t) = (left as f64, top as f64);
                self.map(|x, y| (x - l, y - t), canvas);
            }
            Geometry::Pad(padding) => {
                let canvas = padding.canvas(c)?;
                let (l, t) = (padding.left as f64, padding.top as f64);
                self.map(|x, y| (x + l, y + t), canvas);
            }
            Geometry::Affine(a) => {
                let m = a.matrix(c, false)?;
                self.map(|x, y| affine(&m, x, y), c);
            }
            Geometry::Rotate {
                angle,
                expand,
                center,
            } => {
                let turn = Turn::new(angle, expand, center, c)?;
                let canvas = turn.canvas;
                // The image's quarter turns are exact: so are the vertices'.
                match turn.quarters {
                    Some(0) => {}
                    Some(1) => self.map(|x, y| (y, w - x), canvas),
                    Some(2) => self.map(|x, y| (w - x, h - y), canvas),
                    Some(_) => self.map(|x, y| (h - y, x), canvas),
                    None => {
                        let m = Affine::rotation(angle, center).matrix(c, false)?;
                        // The image's pixels keep their centre on the
                        // expanded canvas's centre.
                        let (dx, dy) = (
                            0.5 * f64::from(canvas.width) - 0.5 * w,
                            0.5 * f64::from(canvas.height) - 0.5 * h,
                        );
                        self.map(
                            |x, y| {
                                let (x, y) = affine(&m, x, y);
                                (x + dx, y + dy)
                            },
                            canvas,
                        );
                    }
                }
            }
            Geometry::Perspective(coefficients) => {
                let (n, [g, k]) = torchvision_perspective_inverse(&coefficients)?;
                self.map(
                    |x, y| {
                        let d = g * x + k * y + 1.0;
                        let (u, v) = affine(&n, x, y);
                        (u / d, v / d)
                    },
                    c,
                );
            }
        }
        Ok(())
    }

    /// The instances as masks (`[N, H, W]`, 0 and 1) on the canvas, each the
    /// union of its parts rasterised as pycocotools rasterises a polygon.
    ///
    /// A part whose boundary walk would be longer than [`CLIP_STEPS`] (a
    /// vertex sent far away by a perspective or a translation) is first
    /// clipped to the canvas with a margin of the canvas's width and
    /// height, so that its walk stays short: inside the canvas the clipped
    /// outline is the same line, up to pycocotools' rounding of the new
    /// vertices to a fifth of a pixel. A vertex that is not finite after
    /// the ops (a perspective's vertex at infinity) is an error, as is a
    /// walk past [`MAX_POLYGON_STEPS`] over all instances.
    pub fn rasterize(&self) -> Result<Masks> {
        let canvas = self.canvas;
        let size = canvas.height as usize * canvas.width as usize;
        let n = self.len();
        let bytes = Limits::default().check_alloc((size as u64).saturating_mul(n as u64))?;
        let mut data = vec![0u8; bytes];
        let mut budget = MAX_POLYGON_STEPS;
        let mut clipped = Vec::new();
        for (i, mask) in data.chunks_exact_mut(size.max(1)).enumerate() {
            for part in self.instance(i) {
                let part = clip(part, canvas, &mut clipped)?;
                if part.len() >= 6 {
                    rle::paint_polygons([part], canvas, mask, &mut budget)?;
                }
            }
        }
        Masks::new(data, n, canvas)
    }
}

/// The longest boundary walk (in pycocotools' steps of a fifth of a pixel)
/// of one part rasterised as it is: 2^20, a perimeter of about 200,000
/// pixels. A longer part is clipped first ([`Polygons::rasterize`]).
pub const CLIP_STEPS: f64 = (1u64 << 20) as f64;

/// `(a x + b y + c, d x + e y + f)` in float64.
fn affine(m: &[f64; 6], x: f64, y: f64) -> (f64, f64) {
    (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5])
}

/// `part` as it is when its walk is at most [`CLIP_STEPS`], else cut to
/// `canvas` grown by its width and height on every side (written into
/// `out`); an error when a vertex is not finite.
fn clip<'a>(part: &'a [f64], canvas: Canvas, out: &'a mut Vec<f64>) -> Result<&'a [f64]> {
    if !part.iter().all(|v| v.is_finite()) {
        return Err(bad("a polygon vertex that is not finite after the ops"));
    }
    let n = part.len() / 2;
    let walk: f64 = (0..n)
        .map(|i| {
            let j = (i + 1) % n;
            let (dx, dy) = (part[2 * j] - part[2 * i], part[2 * j + 1] - part[2 * i + 1]);
            5.0 * dx.abs().max(dy.abs()) + 1.0
        })
        .sum();
    if walk <= CLIP_STEPS {
        return Ok(part);
    }
    let (w, h) = (f64::from(canvas.width), f64::from(canvas.height));
    cut(part, [-w, -h], [2.0 * w, 2.0 * h], out);
    Ok(out)
}

/// `part` cut to the box from `lo` to `hi` (Sutherland-Hodgman: each side
/// in turn keeps the vertices on its inner side, a vertex on the side
/// included, and adds one where an edge crosses it), written into `out`:
/// empty when nothing is left.
fn cut(part: &[f64], lo: [f64; 2], hi: [f64; 2], out: &mut Vec<f64>) {
    out.clear();
    out.extend_from_slice(part);
    let mut next = Vec::with_capacity(part.len() + 8);
    for (axis, bound, above) in [
        (0, lo[0], true),
        (0, hi[0], false),
        (1, lo[1], true),
        (1, hi[1], false),
    ] {
        next.clear();
        let inner = |p: &[f64]| {
            if above {
                p[axis] >= bound
            } else {
                p[axis] <= bound
            }
        };
        let n = out.len() / 2;
        for i in 0..n {
            let j = (i + 1) % n;
            let (a, b) = (&out[2 * i..2 * i + 2], &out[2 * j..2 * j + 2]);
            if inner(a) {
                next.extend_from_slice(a);
            }
            if inner(a) != inner(b) {
                let t = (bound - a[axis]) / (b[axis] - a[axis]);
                let mut p = [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])];
                p[axis] = bound;
                next.extend_from_slice(&p);
            }
        }
        core::mem::swap(out, &mut next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::Padding;

    fn canvas(h: u32, w: u32) -> Canvas {
        Canvas::new(h, w).unwrap()
    }

    /// A xorshift32 stream from `seed` (not 0).
    fn xorshift(mut seed: u32) -> impl FnMut() -> u32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        }
    }

    /// An RLE instance comes back as exactly its pixels, for masks of every
    /// shape (runs crossing columns, full columns, single pixels, empty).
    #[test]
    fn rle_rectangles_rasterise_to_the_same_pixels() {
        let mut next = xorshift(0x9e37_79b9);
        for case in 0..200 {
            let c = canvas(1 + next() % 23, 1 + next() % 19);
            let density = next() % 4;
            let mask: Vec<u8> = (0..c.height * c.width)
                .map(|_| {
                    u8::from(match density {
                        0 => false,
                        1 => next().is_multiple_of(2),
                        2 => !next().is_multiple_of(9),
                        _ => true,
                    })
                })
                .collect();
            let rle = Rle::from_mask(&mask, c).unwrap();
            let mut p = Polygons::new(c);
            p.push_rle(&rle).unwrap();
            let back = p.rasterize().unwrap();
            assert_eq!(back.data(), rle.decode().unwrap(), "case {case}");
        }
        // A full canvas is one rectangle.
        let c = canvas(7, 9);
        let mut p = Polygons::new(c);
        p.push_rle(&Rle::from_mask(&[1; 63], c).unwrap()).unwrap();
        assert_eq!(p.instance(0).count(), 1);
    }

    /// Quarter turns and flips are exact on vertices and match the masks'
    /// kernels pixel for pixel on an outline of whole pixels; every
    /// rotation lands on the canvas the masks get.
    #[test]
    fn turns_and_flips_follow_the_masks_exactly() {
        let c = canvas(5, 8);
        let part = [1.0, 0.0, 4.0, 0.0, 4.0, 2.0, 2.0, 2.0, 2.0, 4.0, 1.0, 4.0];
        let mut p = Polygons::new(c);
        p.push([&part[..]]).unwrap();
        let mut m = p.rasterize().unwrap();
        for g in [
            Geometry::Flip(Flip::Horizontal),
            Geometry::Flip(Flip::Both),
            Geometry::Rotate {
                angle: 90.0,
                expand: true,
                center: None,
            },
            Geometry::Rotate {
                angle: -90.0,
                expand: true,
                center: None,
            },
            Geometry::Rotate {
                angle: 180.0,
                expand: false,
                center: None,
            },
            Geometry::Crop {
                top: -1,
                left: 2,
                height: 6,
                width: 3,
            },
            Geometry::Pad(Padding::from_torchvision(&[2, 1, 0, 3]).unwrap()),
        ] {
            p.apply(&g).unwrap();
            m.apply(&g, 0).unwrap();
            assert_eq!(p.canvas(), m.canvas(), "{g:?}");
            assert_eq!(p.rasterize().unwrap(), m, "{g:?}");
        }
        for (angle, center) in [(33.0, None), (-71.5, Some((2.0, 3.0))), (450.0, None)] {
            let mut p = Polygons::new(c);
            p.push([&part[..]]).unwrap();
            let mut m = p.rasterize().unwrap();
            let g = Geometry::Rotate {
                angle,
                expand: true,
                center,
            };
            p.apply(&g).unwrap();
            m.apply(&g, 0).unwrap();
            assert_eq!(p.canvas(), m.canvas(), "{angle}");
        }
    }

    /// Hostile geometry (huge zooms and shifts, a perspective through
    /// infinity, tiny canvases) ends in masks of the canvas or an error,
    /// never a panic or a runaway walk.
    #[test]
    fn hostile_geometry_ends_in_masks_or_an_error() {
        let mut next = xorshift(0x2545_f491);
        let extremes = [0.0, 1e-300, 1e-9, 0.5, 3.0, 1e6, 1e18, 1e300, -1e6, -7.25];
        for case in 0..300 {
            let mut pick = || extremes[(next() % extremes.len() as u32) as usize];
            let g = match case % 5 {
                0 => Geometry::Affine(Affine::new(
                    pick(),
                    (pick(), pick()),
                    pick().abs().max(1e-12),
                    (pick() % 80.0, pick() % 80.0),
                    None,
                )),
                1 => Geometry::Perspective([
                    1.0,
                    pick(),
                    pick(),
                    pick(),
                    1.0,
                    pick(),
                    pick(),
                    pick(),
                ]),
                2 => Geometry::Rotate {
                    angle: pick(),
                    expand: case % 2 == 0,
                    center: Some((pick(), pick())),
                },
                3 => Geometry::Crop {
                    top: pick() as i64,
                    left: pick() as i64,
                    height: 1 + (pick().abs() as u32 % 64),
                    width: 1 + (pick().abs() as u32 % 64),
                },
                _ => Geometry::Resize(canvas(1 + next() % 3, 1 + next() % 200)),
            };
            let mut p = Polygons::new(canvas(9, 13));
            p.push([&[1.0, 1.0, 12.0, 2.0, 6.0, 8.5, 0.5, 7.0][..]])
                .unwrap();
            p.push_rle(&Rle::from_mask(&[1; 9 * 13], canvas(9, 13)).unwrap())
                .unwrap();
            if p.apply(&g).is_ok()
                && let Ok(m) = p.rasterize()
            {
                assert_eq!((m.canvas(), m.count()), (p.canvas(), 2), "{g:?}");
            }
        }
    }

    /// A far vertex is clipped (the same pixels inside the canvas), a
    /// vertex at infinity is an error, bad parts are refused.
    #[test]
    fn far_vertices_clip_and_bad_parts_are_refused() {
        let c = canvas(10, 10);
        let near = [2.0, 2.0, 20.0, 2.0, 2.0, 20.0];
        let far = [2.0, 2.0, 2.0e9, 2.0, 2.0, 2.0e9];
        let mask = |part: &[f64]| {
            let mut p = Polygons::new(c);
            p.push([part]).unwrap();
            p.rasterize().unwrap().into_data()
        };
        // Both triangles cover the canvas right of and below (2, 2).
        let a = mask(&near);
        let b = mask(&far);
        assert_eq!(a.iter().filter(|&&v| v == 1).count(), 64);
        let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        assert_eq!(differing, 0);
        let mut p = Polygons::new(c);
        assert!(p.push([&[1.0, 2.0, 3.0][..]]).is_err());
        assert!(p.push([&[1.0, 2.0, 3.0, 4.0][..]]).is_err());
        assert!(p.push([&[1.0, 2.0, 3.0, 4.0, f64::NAN, 1.0][..]]).is_err());
        assert!(p.push(core::iter::empty()).is_err());
        assert!(p.is_empty() && p.heap_bytes() == 0);
        p.push([&[1.0, 1.0, 5.0, 1.0, 5.0, 5.0][..]]).unwrap();
        // A perspective sending a vertex to infinity.
        let mut q = p.clone();
        q.xy[0] = f64::INFINITY;
        assert!(q.rasterize().is_err());
        p.retain(&[false]).unwrap();
        assert_eq!(p.len(), 0);
        assert!(p.retain(&[true]).is_err());
    }
}
