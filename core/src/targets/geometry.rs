//! One geometric op with its parameters fixed ([`Geometry`]): what a drawn
//! augmentation, a plan op or a functional call does to the image plane,
//! applied to every kind of target by the one match in each kind's `apply`.

use super::{Affine, BoundingBoxes, Canvas, KeyPoints, Masks, Padding};
use crate::Result;
use crate::geometry::{Flip, Rotation};

/// A geometric op with its parameters, as torchvision's functional op of the
/// same name takes them. Every target kind moves by it
/// ([`BoundingBoxes::apply`], [`KeyPoints::apply`], [`Masks::apply`],
/// [`Target::apply`](super::Target::apply)).
///
/// ```
/// use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Geometry};
///
/// let mut b = BoundingBoxes::new(vec![[10.0, 20.0, 30.0, 60.0]], BoxFormat::Xyxy, Canvas::new(100, 50)?);
/// b.apply(&Geometry::Crop { top: 10, left: 30, height: 40, width: 40 })?;
/// assert_eq!(b.boxes(), &[[0.0, 10.0, 0.0, 40.0]]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Geometry {
    /// `horizontal_flip`, `vertical_flip`, or both in that order.
    Flip(Flip),
    /// `resize` to this canvas.
    Resize(Canvas),
    /// `crop(top, left, height, width)`.
    Crop {
        /// The window's top row (negative: padding above).
        top: i64,
        /// The window's left column (negative: padding on the left).
        left: i64,
        /// The window's height.
        height: u32,
        /// The window's width.
        width: u32,
    },
    /// `pad(padding)`, constant.
    Pad(Padding),
    /// `affine(angle, translate, scale, shear, center)`.
    Affine(Affine),
    /// `rotate(angle, expand, center)`, counter-clockwise in degrees.
    Rotate {
        /// Degrees, counter-clockwise.
        angle: f64,
        /// Grow the canvas to hold the rotated one.
        expand: bool,
        /// The pivot (the canvas centre when `None`).
        center: Option<(f64, f64)>,
    },
    /// `perspective(coefficients=...)`: the 8 coefficients mapping output
    /// points to input points.
    Perspective([f64; 8]),
}

impl Geometry {
    /// A clockwise quarter turn (the plan's `Rotate`) as torchvision's
    /// `rotate(angle, expand=True)`, whose angle turns counter-clockwise.
    pub fn quarter_turn(rotation: Rotation) -> Geometry {
        let angle = match rotation {
            Rotation::Cw90 => -90.0,
            Rotation::Cw180 => 180.0,
            Rotation::Cw270 => 90.0,
        };
        Geometry::Rotate {
            angle,
            expand: true,
            center: None,
        }
    }
}

impl Geometry {
    /// What turning an image upright by its EXIF `Orientation` tag `value`
    /// (Pillow's `ImageOps.exif_transpose`) does to the plane, as flips and
    /// quarter turns (`rotate(expand=True)`, counter-clockwise): 2 mirrors,
    /// 3 turns half round, 4 flips, 5 transposes (a quarter turn, then a
    /// flip), 6 turns a quarter clockwise, 7 transverses, 8 turns a quarter
    /// counter-clockwise. 1 and values outside 1..=8 are nothing.
    ///
    /// ```
    /// use tensorprep::geometry::Flip;
    /// use tensorprep::targets::Geometry;
    ///
    /// assert_eq!(Geometry::exif(2), [Geometry::Flip(Flip::Horizontal)]);
    /// assert!(Geometry::exif(1).is_empty());
    /// ```
    pub fn exif(value: u16) -> &'static [Geometry] {
        const fn turn(angle: f64) -> Geometry {
            Geometry::Rotate {
                angle,
                expand: true,
                center: None,
            }
        }
        const V: Geometry = Geometry::Flip(Flip::Vertical);
        const HALF: Geometry = turn(180.0);
        const CCW: Geometry = turn(90.0);
        const CW: Geometry = turn(-90.0);
        match value {
            2 => &[Geometry::Flip(Flip::Horizontal)],
            3 => &[HALF],
            4 => &[V],
            5 => &[CCW, V],
            6 => &[CW],
            7 => &[CW, V],
            8 => &[CCW],
            _ => &[],
        }
    }
}

impl Geometry {
    /// The inverse of [`Geometry::exif`]: from the upright image back to the
    /// pixels as stored (the quarter turns of 6 and 8 swapped; the others
    /// undo themselves).
    ///
    /// ```
    /// use tensorprep::targets::Geometry;
    ///
    /// assert_eq!(Geometry::exif_inverse(6), Geometry::exif(8));
    /// assert_eq!(Geometry::exif_inverse(5), Geometry::exif(5));
    /// ```
    pub fn exif_inverse(value: u16) -> &'static [Geometry] {
        match value {
            6 => Geometry::exif(8),
            8 => Geometry::exif(6),
            v => Geometry::exif(v),
        }
    }
}

impl Geometry {
    /// The pixels' warp for this geometry on an image of `size` (width,
    /// height), as torchvision's functional op warps a PIL image: Pillow's
    /// `rotate` for [`Geometry::Rotate`], its `transform` with
    /// torchvision's matrix for [`Geometry::Affine`] and
    /// [`Geometry::Perspective`]; with the output size. `None` for the
    /// geometry that is no warp (flips, resizes, crops, pads).
    pub fn warp(&self, size: (u32, u32)) -> Result<Option<(crate::warp::Warp, (u32, u32))>> {
        use crate::warp::Warp;
        Ok(Some(match *self {
            Geometry::Affine(a) => (
                Warp::affine(a.angle, a.translate, a.scale, a.shear, a.center, size)?,
                size,
            ),
            Geometry::Rotate {
                angle,
                expand,
                center,
            } => Warp::rotate(angle, center, expand, size)?,
            Geometry::Perspective(c) => (Warp::Perspective(c), size),
            Geometry::Flip(_) | Geometry::Resize(_) | Geometry::Crop { .. } | Geometry::Pad(_) => {
                return Ok(None);
            }
        }))
    }
}

/// The flips `flip` is, in order.
fn flips(flip: Flip) -> (bool, bool) {
    match flip {
        Flip::Horizontal => (true, false),
        Flip::Vertical => (false, true),
        Flip::Both => (true, true),
    }
}

impl BoundingBoxes {
    /// Moves the boxes by `geometry`, with torchvision's box kernel for it.
    pub fn apply(&mut self, geometry: &Geometry) -> Result<()> {
        match *geometry {
            Geometry::Flip(f) => {
                let (h, v) = flips(f);
                if h {
                    self.horizontal_flip();
                }
                if v {
                    self.vertical_flip();
                }
                Ok(())
            }
            Geometry::Resize(size) => {
                self.resize(size);
                Ok(())
            }
            Geometry::Crop {
                top,
                left,
                height,
                width,
            } => self.crop(top, left, height, width),
            Geometry::Pad(p) => self.pad(p),
            Geometry::Affine(a) => self.affine(&a),
            Geometry::Rotate {
                angle,
                expand,
                center,
            } => self.rotate(angle, expand, center),
            Geometry::Perspective(c) => self.perspective_coefficients(&c),
        }
    }
}

impl KeyPoints {
    /// Moves the points by `geometry`, with torchvision's key point kernel.
    pub fn apply(&mut self, geometry: &Geometry) -> Result<()> {
        match *geometry {
            Geometry::Flip(f) => {
                let (h, v) = flips(f);
                if h {
                    self.horizontal_flip();
                }
                if v {
                    self.vertical_flip();
                }
                Ok(())
            }
            Geometry::Resize(size) => {
                self.resize(size);
                Ok(())
            }
            Geometry::Crop {
                top,
                left,
                height,
                width,
            } => self.crop(top, left, height, width),
            Geometry::Pad(p) => self.pad(p),
            Geometry::Affine(a) => self.affine(&a),
            Geometry::Rotate {
                angle,
                expand,
                center,
            } => self.rotate(angle, expand, center),
            Geometry::Perspective(c) => self.perspective_coefficients(&c),
        }
    }
}

impl Masks {
    /// Moves the masks by `geometry`, with torchvision's mask kernel; pixels
    /// that come from outside get `fill` (torchvision's `fill` for masks)
    /// in pads and warps, zero in crops (as torchvision's crop pads).
    pub fn apply(&mut self, geometry: &Geometry, fill: u8) -> Result<()> {
        let fill = [fill];
        match *geometry {
            Geometry::Flip(f) => {
                let (h, v) = flips(f);
                if h {
                    self.horizontal_flip();
                }
                if v {
                    self.vertical_flip();
                }
                Ok(())
            }
            Geometry::Resize(size) => self.resize(size),
            Geometry::Crop {
                top,
                left,
                height,
                width,
            } => self.crop(top, left, height, width),
            Geometry::Pad(p) => self.pad_with(p, fill[0]),
            Geometry::Affine(a) => self.affine(&a, &fill),
            Geometry::Rotate {
                angle,
                expand,
                center,
            } => self.rotate(angle, expand, center, &fill),
            Geometry::Perspective(c) => self.perspective_coefficients(&c, &fill),
        }
    }
}
