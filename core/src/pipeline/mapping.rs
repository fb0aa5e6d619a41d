//! Side outputs: how the plan moved and scaled the image, and the way back.
//!
//! Coordinates are continuous pixel coordinates: pixel `(i, j)` covers
//! `[i, i + 1) x [j, j + 1)`, so a box `[x0, y0, x1, y1]` from a detector maps
//! back by mapping its corners. Every geometric op is affine in these
//! coordinates: a crop translates, a resize scales (`x' = x * out / in`, as
//! Pillow and OpenCV place samples), a pad translates, flips and quarter turns
//! mirror and swap axes.

/// An affine map `(x, y) -> (a x + b y + c, d x + e y + f)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    /// Row-major `[a, b, c, d, e, f]`.
    pub m: [f64; 6],
}

impl Affine {
    /// The identity.
    pub const IDENTITY: Affine = Affine {
        m: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
    };

    /// `x * sx + tx`, `y * sy + ty`.
    pub const fn scale_translate(sx: f64, sy: f64, tx: f64, ty: f64) -> Affine {
        Affine {
            m: [sx, 0.0, tx, 0.0, sy, ty],
        }
    }

    /// This map followed by `next`.
    pub fn then(&self, next: &Affine) -> Affine {
        let [a, b, c, d, e, f] = self.m;
        let [p, q, r, s, t, u] = next.m;
        Affine {
            m: [
                p * a + q * d,
                p * b + q * e,
                p * c + q * f + r,
                s * a + t * d,
                s * b + t * e,
                s * c + t * f + u,
            ],
        }
    }

    /// The inverse map; `None` if the map is degenerate.
    pub fn inverse(&self) -> Option<Affine> {
        let [a, b, c, d, e, f] = self.m;
        let det = a * e - b * d;
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let (ia, ib, id, ie) = (e / det, -b / det, -d / det, a / det);
        Some(Affine {
            m: [ia, ib, -(ia * c + ib * f), id, ie, -(id * c + ie * f)],
        })
    }

    /// Maps a point.
    pub fn point(&self, (x, y): (f64, f64)) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.m;
        (a * x + b * y + c, d * x + e * y + f)
    }

    /// Maps an axis-aligned box `[x0, y0, x1, y1]` (the bounding box of its
    /// mapped corners, so flips and quarter turns keep `x0 <= x1`).
    pub fn bbox(&self, [x0, y0, x1, y1]: [f64; 4]) -> [f64; 4] {
        let corners = [(x0, y0), (x1, y0), (x0, y1), (x1, y1)].map(|p| self.point(p));
        let mut out = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for (x, y) in corners {
            out[0] = out[0].min(x);
            out[1] = out[1].min(y);
            out[2] = out[2].max(x);
            out[3] = out[3].max(y);
        }
        out
    }
}

/// What a run did to the geometry of one input: its size, the output's size
/// and the map between them.
///
/// ```
/// use tensorprep::pipeline::{InputDesc, Pipeline};
/// use tensorprep::PixelFormat;
///
/// // Letterbox a 1280x720 frame into 640x640 (Ultralytics): scale 0.5, 140 rows of padding on top.
/// let plan = Pipeline::yolo_letterbox(640, 640).compile(InputDesc::pixels(PixelFormat::Rgb8, 1280, 720))?;
/// let g = plan.geometry().expect("known for a fixed input size");
/// assert_eq!(g.scale(), (0.5, 0.5));
/// assert_eq!(g.offset(), (0.0, 140.0));
/// // A detection in model coordinates, back on the original frame.
/// assert_eq!(g.to_source_box([100.0, 140.0, 200.0, 240.0]), [200.0, 0.0, 400.0, 200.0]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// Input width and height (after decoding and EXIF orientation).
    pub input: (u32, u32),
    /// Output width and height (of the tensor's spatial dimensions).
    pub output: (u32, u32),
    /// Input coordinates to output coordinates.
    pub to_output: Affine,
}

impl Geometry {
    /// Output pixels per input pixel along x and y (of the output axes; after a
    /// quarter turn the output's x comes from the input's y).
    pub fn scale(&self) -> (f64, f64) {
        let [a, b, _, d, e, _] = self.to_output.m;
        (a.abs().max(b.abs()), d.abs().max(e.abs()))
    }

    /// Where the input's origin lands in the output: the left and top padding
    /// of a letterbox (negative after a crop).
    pub fn offset(&self) -> (f64, f64) {
        self.to_output.point((0.0, 0.0))
    }

    /// Maps a point from output (model) coordinates to input coordinates.
    pub fn to_source(&self, p: (f64, f64)) -> (f64, f64) {
        self.inverse().point(p)
    }

    /// Maps a box `[x0, y0, x1, y1]` from output (model) coordinates to input
    /// coordinates, clamped to the input image.
    pub fn to_source_box(&self, b: [f64; 4]) -> [f64; 4] {
        let [x0, y0, x1, y1] = self.inverse().bbox(b);
        let (w, h) = (f64::from(self.input.0), f64::from(self.input.1));
        [
            x0.clamp(0.0, w),
            y0.clamp(0.0, h),
            x1.clamp(0.0, w),
            y1.clamp(0.0, h),
        ]
    }

    fn inverse(&self) -> Affine {
        // Every op's map has a non-zero determinant: resizes have positive sizes.
        self.to_output.inverse().unwrap_or(Affine::IDENTITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_and_invert() {
        let crop = Affine::scale_translate(1.0, 1.0, -10.0, -5.0);
        let resize = Affine::scale_translate(0.5, 0.25, 0.0, 0.0);
        // A quarter turn clockwise of a 20-high image: (x, y) -> (20 - y, x).
        let rot = Affine {
            m: [0.0, -1.0, 20.0, 1.0, 0.0, 0.0],
        };
        let m = crop.then(&resize).then(&rot);
        let p = m.point((30.0, 45.0));
        assert_eq!(p, (20.0 - 10.0, 10.0));
        let back = m.inverse().unwrap().point(p);
        assert!((back.0 - 30.0).abs() < 1e-12 && (back.1 - 45.0).abs() < 1e-12);
        assert_eq!(m.bbox([10.0, 5.0, 30.0, 45.0]), [10.0, 0.0, 20.0, 10.0]);
    }
}
