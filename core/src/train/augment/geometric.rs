//! torchvision's random warps: `RandomRotation`, `RandomAffine` and
//! `RandomPerspective`, drawn as `get_params` draws them and applied as
//! Pillow's `rotate` / `transform` (see [`crate::warp`]).

use core::fmt;

use super::Drawing;
use super::unit::{At, Augmentation, Nested, SizeKeeping, Targets};
use super::{Drawn, invalid, probability};
use crate::Result;
use crate::functional::ImageOp;
use crate::targets::{Affine, Geometry};
use crate::warp::{Interpolation, Warp};

/// A finite range, `min <= max`.
fn ordered((a, b): (f64, f64)) -> bool {
    a.is_finite() && b.is_finite() && a <= b
}

/// Draws the warp `geometry` on an image of `size`; returns the size after.
fn warp(
    geometry: Geometry,
    size: (u32, u32),
    interpolation: Interpolation,
    fill: [u8; 3],
    ops: &mut Drawing<'_>,
) -> Result<(u32, u32)> {
    let op = ImageOp::warp(geometry, size, interpolation, fill)?;
    ops.push(Drawn::Image(op))?;
    Ok(op.output_size(size))
}

/// `RandomRotation(degrees, interpolation, expand, center, fill)`.
///
/// ```
/// use tensorprep::train::RandomRotation;
///
/// let r = RandomRotation::new(-30.0, 30.0);
/// assert!(!r.expand);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomRotation {
    /// The angle's range in degrees (counter-clockwise), drawn uniformly.
    pub degrees: (f64, f64),
    /// Nearest (torchvision's default) or bilinear.
    pub interpolation: Interpolation,
    /// Grow the output to hold the whole rotated image.
    pub expand: bool,
    /// The centre of rotation in pixels (the image's centre when `None`).
    pub center: Option<(f64, f64)>,
    /// Fill outside the rotated image (R, G, B).
    pub fill: [u8; 3],
}

impl RandomRotation {
    /// Rotation by an angle drawn from `min..max` degrees, nearest, no
    /// expansion, about the centre, black fill.
    pub const fn new(min: f64, max: f64) -> RandomRotation {
        RandomRotation {
            degrees: (min, max),
            interpolation: Interpolation::Nearest,
            expand: false,
            center: None,
            fill: [0; 3],
        }
    }
}

impl Augmentation for RandomRotation {
    fn check(&self) -> Result<()> {
        if !ordered(self.degrees) {
            return Err(invalid(
                "RandomRotation",
                "degrees must be finite, min <= max",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let angle = d.uniform(self.degrees.0, self.degrees.1);
        let rotation = Geometry::Rotate {
            angle,
            expand: self.expand,
            center: self.center,
        };
        warp(rotation, size, self.interpolation, self.fill, ops)
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        if self.expand { None } else { before }
    }

    fn draws_image_ops(&self) -> bool {
        true
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

impl fmt::Display for RandomRotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomRotation degrees {:?} {:?} expand {} center {:?} fill {:?}",
            self.degrees, self.interpolation, self.expand, self.center, self.fill
        )
    }
}

/// `RandomAffine(degrees, translate, scale, shear, interpolation, fill,
/// center)`.
///
/// ```
/// use tensorprep::train::RandomAffine;
///
/// // RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1))
/// let mut a = RandomAffine::new(-10.0, 10.0);
/// a.translate = Some((0.1, 0.1));
/// a.scale = Some((0.9, 1.1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomAffine {
    /// The rotation's range in degrees.
    pub degrees: (f64, f64),
    /// The largest shift as fractions of the width and height.
    pub translate: Option<(f64, f64)>,
    /// The scale's range.
    pub scale: Option<(f64, f64)>,
    /// Shear ranges in degrees: x from `[0]` to `[1]`, y from `[2]` to `[3]`
    /// (torchvision's one or two values are `[-s, s, 0, 0]` and
    /// `[a, b, 0, 0]`).
    pub shear: Option<[f64; 4]>,
    /// Nearest (torchvision's default) or bilinear.
    pub interpolation: Interpolation,
    /// Fill outside the source (R, G, B).
    pub fill: [u8; 3],
    /// The centre in pixels (the image's centre when `None`).
    pub center: Option<(f64, f64)>,
}

impl RandomAffine {
    /// Rotation only, by an angle drawn from `min..max` degrees.
    pub const fn new(min: f64, max: f64) -> RandomAffine {
        RandomAffine {
            degrees: (min, max),
            translate: None,
            scale: None,
            shear: None,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
            center: None,
        }
    }
}

impl SizeKeeping for RandomAffine {
    fn check(&self) -> Result<()> {
        if !ordered(self.degrees) {
            return Err(invalid(
                "RandomAffine",
                "degrees must be finite, min <= max",
            ));
        }
        if let Some((x, y)) = self.translate
            && !((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y))
        {
            return Err(invalid(
                "RandomAffine",
                "translate fractions must be in 0..=1",
            ));
        }
        if let Some(s) = self.scale
            && !(ordered(s) && s.0 > 0.0)
        {
            return Err(invalid(
                "RandomAffine",
                "scale must be positive, min <= max",
            ));
        }
        if let Some(s) = self.shear
            && !(ordered((s[0], s[1])) && ordered((s[2], s[3])))
        {
            return Err(invalid(
                "RandomAffine",
                "shear ranges must be finite, min <= max",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        // get_params' order: angle, translation, scale, shear.
        let angle = d.uniform(self.degrees.0, self.degrees.1);
        let translate = match self.translate {
            Some((fx, fy)) => {
                let (mx, my) = (fx * f64::from(size.0), fy * f64::from(size.1));
                // int(round(x)): Python rounds half to even.
                let tx = libm::rint(d.uniform(-mx, mx));
                let ty = libm::rint(d.uniform(-my, my));
                (tx, ty)
            }
            None => (0.0, 0.0),
        };
        let scale = match self.scale {
            Some((a, b)) => d.uniform(a, b),
            None => 1.0,
        };
        let shear = match self.shear {
            Some(s) => {
                let x = d.uniform(s[0], s[1]);
                let y = if s[2] == 0.0 && s[3] == 0.0 {
                    0.0
                } else {
                    d.uniform(s[2], s[3])
                };
                (x, y)
            }
            None => (0.0, 0.0),
        };
        let affine = Affine::new(angle, translate, scale, shear, self.center);
        warp(
            Geometry::Affine(affine),
            size,
            self.interpolation,
            self.fill,
            ops,
        )
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for RandomAffine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomAffine degrees {:?} translate {:?} scale {:?} shear {:?} {:?} fill {:?} center {:?}",
            self.degrees,
            self.translate,
            self.scale,
            self.shear,
            self.interpolation,
            self.fill,
            self.center
        )
    }
}

/// `RandomPerspective(distortion_scale, p, interpolation, fill)`.
///
/// ```
/// use tensorprep::train::RandomPerspective;
///
/// let p = RandomPerspective::new(0.5, 0.5);
/// assert_eq!(p.distortion_scale, 0.5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomPerspective {
    /// How far each corner may move, as a fraction of half the side (0 to 1).
    pub distortion_scale: f64,
    /// The probability of warping.
    pub p: f64,
    /// Bilinear (torchvision's default) or nearest.
    pub interpolation: Interpolation,
    /// Fill outside the source (R, G, B).
    pub fill: [u8; 3],
}

impl RandomPerspective {
    /// torchvision's defaults: bilinear, black fill.
    pub const fn new(distortion_scale: f64, p: f64) -> RandomPerspective {
        RandomPerspective {
            distortion_scale,
            p,
            interpolation: Interpolation::Bilinear,
            fill: [0; 3],
        }
    }
}

impl SizeKeeping for RandomPerspective {
    fn check(&self) -> Result<()> {
        probability(self.p, "RandomPerspective", "p must be in 0..=1")?;
        probability(
            self.distortion_scale,
            "RandomPerspective",
            "distortion_scale must be in 0..=1",
        )
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        if !d.chance(self.p) {
            return Ok(size);
        }
        let (w, h) = (i64::from(size.0), i64::from(size.1));
        let dx = (self.distortion_scale * (w / 2) as f64) as i64;
        let dy = (self.distortion_scale * (h / 2) as f64) as i64;
        // torch.randint(lo, hi): hi excluded.
        let mut randint = |lo: i64, hi: i64| {
            let span = (hi - lo).max(1) as u32;
            (lo + i64::from(d.below(span))) as f64
        };
        let tl = (randint(0, dx + 1), randint(0, dy + 1));
        let tr = (randint(w - dx - 1, w), randint(0, dy + 1));
        let br = (randint(w - dx - 1, w), randint(h - dy - 1, h));
        let bl = (randint(0, dx + 1), randint(h - dy - 1, h));
        let (wl, hl) = ((w - 1) as f64, (h - 1) as f64);
        let start = [(0.0, 0.0), (wl, 0.0), (wl, hl), (0.0, hl)];
        // A side of one pixel leaves no quadrilateral: the image stays.
        let Ok(Warp::Perspective(c)) = Warp::perspective(start, [tl, tr, br, bl]) else {
            return Ok(size);
        };
        warp(
            Geometry::Perspective(c),
            size,
            self.interpolation,
            self.fill,
            ops,
        )
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for RandomPerspective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomPerspective distortion {} p {} {:?} fill {:?}",
            self.distortion_scale, self.p, self.interpolation, self.fill
        )
    }
}
