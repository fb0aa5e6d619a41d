//! How torchvision v2 moves points through an affine map, a rotation (with
//! its expanded canvas) and a perspective: double-precision matrices rounded
//! once to float32, then `((x * a) + (y * b)) + c` in float32 per point (the
//! order its float32 matrix product takes; never a fused multiply-add).

use super::Canvas;
use crate::warp::{Warp, torchvision_affine, torchvision_perspective_inverse};
use crate::{Error, Result};

/// Where a geometric op sends points, in float32.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum PointMap {
    /// `(a, b, c, d, e, f)`: `(a x + b y + c, d x + e y + f)`.
    Affine([f32; 6]),
    /// The numerators' rows and the denominator's `(g, h)`:
    /// `((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1))`.
    Perspective([f32; 6], [f32; 2]),
}

/// An affine map's parameters, as torchvision's functional `affine` takes them.
///
/// ```
/// use tensorprep::targets::Affine;
///
/// let a = Affine::new(10.0, (3.0, -2.0), 1.5, (5.0, 0.0), None);
/// assert_eq!(Affine::rotation(30.0, None).angle, -30.0); // rotate's sign
/// assert_eq!(Affine::default(), Affine::new(0.0, (0.0, 0.0), 1.0, (0.0, 0.0), None));
/// # let _ = a;
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Affine {
    /// Rotation in degrees, clockwise on screen (`F.affine`'s sign).
    pub angle: f64,
    /// Translation in pixels, `(x, y)`.
    pub translate: (f64, f64),
    /// Scale factor; positive.
    pub scale: f64,
    /// Shear in degrees along x and y.
    pub shear: (f64, f64),
    /// The pivot in pixels; the canvas centre `(W * 0.5, H * 0.5)` when `None`.
    pub center: Option<(f64, f64)>,
}

impl Default for Affine {
    /// The identity.
    fn default() -> Affine {
        Affine::new(0.0, (0.0, 0.0), 1.0, (0.0, 0.0), None)
    }
}

impl Affine {
    /// `F.affine(angle=, translate=, scale=, shear=, center=)`'s parameters
    /// (a shear of one number `s` is `(s, 0.0)`, of a one-element list
    /// `(s, s)`, as torchvision reads them).
    pub fn new(
        angle: f64,
        translate: (f64, f64),
        scale: f64,
        shear: (f64, f64),
        center: Option<(f64, f64)>,
    ) -> Affine {
        Affine {
            angle,
            translate,
            scale,
            shear,
            center,
        }
    }

    /// torchvision's `rotate(angle, center=...)`: counter-clockwise by `angle`
    /// degrees (the affine map by `-angle`).
    pub fn rotation(angle: f64, center: Option<(f64, f64)>) -> Affine {
        Affine {
            angle: -angle,
            translate: (0.0, 0.0),
            scale: 1.0,
            shear: (0.0, 0.0),
            center,
        }
    }

    fn center_in(&self, canvas: Canvas) -> (f64, f64) {
        self.center.unwrap_or((
            f64::from(canvas.width) * 0.5,
            f64::from(canvas.height) * 0.5,
        ))
    }

    pub(super) fn matrix(&self, canvas: Canvas, inverted: bool) -> Result<[f64; 6]> {
        torchvision_affine(
            self.center_in(canvas),
            self.angle,
            self.translate,
            self.scale,
            self.shear,
            inverted,
        )
    }

    /// The map points on `canvas` go through.
    pub(super) fn point_map(&self, canvas: Canvas) -> Result<PointMap> {
        Ok(PointMap::Affine(
            self.matrix(canvas, false)?.map(|v| v as f32),
        ))
    }

    /// With `expand`, the shift that brings the moved canvas's top-left
    /// corner to the origin (subtracted from every moved point), and the new
    /// canvas, as torchvision's box and key point kernels compute them. Note
    /// that torchvision sizes the image (pixels) differently: this canvas
    /// can differ from the image's by a pixel, in torchvision as here.
    pub(super) fn expansion(&self, canvas: Canvas, map: &PointMap) -> Result<([f32; 2], Canvas)> {
        let (w, h) = (canvas.width as f32, canvas.height as f32);
        let corners = [(0.0, 0.0), (0.0, h), (w, h), (w, 0.0)].map(|(x, y)| map.apply(x, y));
        let shift = [0, 1].map(|axis| min4(corners.map(|p| p[axis])));
        Ok((shift, self.expanded_canvas(canvas)?))
    }

    /// The canvas `expand` grows `canvas` to: torchvision's
    /// `_compute_affine_output_size` of this map's inverse matrix.
    pub(super) fn expanded_canvas(&self, canvas: Canvas) -> Result<Canvas> {
        let inverse = self.matrix(canvas, true)?.map(|v| v as f32);
        affine_output_size(&inverse, canvas)
    }
}

/// torchvision's `_compute_affine_output_size_tensor`: the canvas's corners,
/// relative to its centre, through `m` in float32; their extent, cut to 4
/// decimals (`x * 1e4`, truncated, `* 1e-4`) before the ceiling and floor.
fn affine_output_size(m: &[f32; 6], canvas: Canvas) -> Result<Canvas> {
    let (hw, hh) = (
        (0.5 * f64::from(canvas.width)) as f32,
        (0.5 * f64::from(canvas.height)) as f32,
    );
    let map = PointMap::Affine(*m);
    let corners = [(-hw, -hh), (-hw, hh), (hw, hh), (hw, -hh)].map(|(x, y)| map.apply(x, y));
    let side = |axis: usize, half: f32| {
        let lo = min4(corners.map(|p| p[axis])) + half;
        let hi = max4(corners.map(|p| p[axis])) + half;
        let cut = |v: f32| libm::truncf(v * 10_000.0) * 1e-4;
        let size = libm::ceilf(cut(hi)) - libm::floorf(cut(lo));
        // Python's int() of a float32: toward zero.
        if size >= 1.0 && size <= (1u32 << 24) as f32 {
            Ok(size as u32)
        } else {
            Err(Error::InvalidParameter {
                name: "rotate",
                reason: "the expanded canvas is out of range",
            })
        }
    };
    Canvas::new(side(1, hh)?, side(0, hw)?)
}

/// The coefficients of `F.perspective(startpoints, endpoints)` (see
/// [`Warp::perspective`] for how closely they follow torchvision's solver).
pub(super) fn perspective_coefficients(
    start: [(f64, f64); 4],
    end: [(f64, f64); 4],
) -> Result<[f64; 8]> {
    match Warp::perspective(start, end)? {
        Warp::Perspective(coeffs) => Ok(coeffs),
        Warp::Affine(_) => unreachable!("Warp::perspective builds a perspective"),
    }
}

/// torchvision's perspective for points from its `coefficients` (output to
/// input), inverted in double precision.
fn perspective_map(coefficients: &[f64; 8]) -> Result<PointMap> {
    let (numer, den) = torchvision_perspective_inverse(coefficients)?;
    Ok(PointMap::Perspective(
        numer.map(|v| v as f32),
        den.map(|v| v as f32),
    ))
}

/// A target moved point by point (boxes by their corners, key points
/// themselves): what its affine, rotate and perspective share is written
/// once, in [`affine`], [`rotate`] and [`perspective`].
pub(super) trait MovedByPoints {
    /// The canvas it lies on.
    fn canvas(&self) -> Canvas;

    /// Moves every point through `map`, less `shift`, onto `canvas`.
    fn move_points(&mut self, map: &PointMap, shift: [f32; 2], canvas: Canvas);
}

/// torchvision's `affine` of `target`: the canvas stays.
pub(super) fn affine(target: &mut impl MovedByPoints, affine: &Affine) -> Result<()> {
    let canvas = target.canvas();
    target.move_points(&affine.point_map(canvas)?, [0.0; 2], canvas);
    Ok(())
}

/// torchvision's `rotate` of `target`; with `expand`, shifted onto the
/// expanded canvas torchvision's box and key point kernels size.
pub(super) fn rotate(
    target: &mut impl MovedByPoints,
    angle: f64,
    expand: bool,
    center: Option<(f64, f64)>,
) -> Result<()> {
    let canvas = target.canvas();
    let rotation = Affine::rotation(angle, center);
    let map = rotation.point_map(canvas)?;
    let (shift, canvas) = if expand {
        rotation.expansion(canvas, &map)?
    } else {
        ([0.0; 2], canvas)
    };
    target.move_points(&map, shift, canvas);
    Ok(())
}

/// torchvision's `perspective(coefficients=...)` of `target`: the canvas stays.
pub(super) fn perspective(target: &mut impl MovedByPoints, coefficients: &[f64; 8]) -> Result<()> {
    let canvas = target.canvas();
    target.move_points(&perspective_map(coefficients)?, [0.0; 2], canvas);
    Ok(())
}

impl PointMap {
    /// Where `(x, y)` goes, in torchvision's order of float32 operations.
    pub(super) fn apply(&self, x: f32, y: f32) -> [f32; 2] {
        match self {
            PointMap::Affine(m) => [row(x, y, &m[..3]), row(x, y, &m[3..])],
            PointMap::Perspective(n, [g, h]) => {
                let d = row(x, y, &[*g, *h, 1.0]);
                [row(x, y, &n[..3]) / d, row(x, y, &n[3..]) / d]
            }
        }
    }
}

/// The least of four values; NaN if any is (torch's `amin`).
pub(super) fn min4(v: [f32; 4]) -> f32 {
    v.into_iter()
        .reduce(|a, b| if a.is_nan() || a <= b { a } else { b })
        .unwrap_or(f32::NAN)
}

/// The greatest of four values; NaN if any is (torch's `amax`).
pub(super) fn max4(v: [f32; 4]) -> f32 {
    v.into_iter()
        .reduce(|a, b| if a.is_nan() || a >= b { a } else { b })
        .unwrap_or(f32::NAN)
}

/// One row of torch's float32 product of `[x, y, 1]` with a matrix row
/// `[a, b, c]`: summed from a `+0.0` accumulator, in order, no fused
/// multiply-add (a sum of zeros is `+0.0` there, as here).
fn row(x: f32, y: f32, m: &[f32]) -> f32 {
    0.0 + x * m[0] + y * m[1] + m[2]
}
