//! The matrices Pillow's `Image.rotate` and torchvision's PIL `affine` and
//! `perspective` build, in their order of double-precision operations.

use core::f64::consts::PI;

use super::Warp;
use crate::{Error, Result};

// The platform's libm with std (what CPython calls), the `libm` crate
// without.
#[cfg(feature = "std")]
mod trig {
    pub(super) fn sin(x: f64) -> f64 {
        x.sin()
    }
    pub(super) fn cos(x: f64) -> f64 {
        x.cos()
    }
    pub(super) fn tan(x: f64) -> f64 {
        x.tan()
    }
}
#[cfg(not(feature = "std"))]
mod trig {
    pub(super) use libm::{cos, sin, tan};
}
use trig::{cos, sin, tan};

/// Python's `math.radians`.
fn radians(degrees: f64) -> f64 {
    degrees * (PI / 180.0)
}

/// Python's `round(x, 15)`: the nearest decimal of 15 places, read back
/// (Rust's formatting and parsing are both correctly rounded, as Python's).
fn round15(x: f64) -> f64 {
    use core::fmt::Write;
    struct Buf([u8; 40], usize);
    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let end = self.1 + s.len();
            self.0
                .get_mut(self.1..end)
                .ok_or(core::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.1 = end;
            Ok(())
        }
    }
    // |x| <= 1 here (a sine or cosine): "-0." and 15 digits fit.
    let mut b = Buf([0; 40], 0);
    if write!(b, "{x:.15}").is_err() {
        return x;
    }
    core::str::from_utf8(&b.0[..b.1])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(x)
}

/// Python's `%` for floats: the remainder takes the divisor's sign, a zero
/// one too (CPython's `float_rem`: `-0.0 % 360` and `-360.0 % 360` are
/// `0.0`); a tiny remainder of the other sign can round up to `m` itself.
pub(crate) fn py_mod(x: f64, m: f64) -> f64 {
    let r = libm::fmod(x, m);
    if r == 0.0 {
        libm::copysign(0.0, m)
    } else if (r < 0.0) != (m < 0.0) {
        r + m
    } else {
        r
    }
}

fn finite(values: &[f64], name: &'static str, reason: &'static str) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(Error::InvalidParameter { name, reason })
    }
}

/// The largest side a warp's output may have.
const MAX_SIDE: f64 = (1u32 << 24) as f64;

impl Warp {
    /// Pillow's `Image.rotate(angle, expand=expand, center=center)`
    /// (torchvision's PIL `rotate`): `angle` in degrees counter-clockwise
    /// about `center` (the image's `(w / 2, h / 2)` when `None`); with
    /// `expand`, the output grows to hold the whole rotated image. Returns
    /// the matrix and the output size.
    ///
    /// ```
    /// use tensorprep::warp::Warp;
    ///
    /// let (_, size) = Warp::rotate(45.0, None, true, (100, 50))?;
    /// assert_eq!(size, (108, 108));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn rotate(
        angle: f64,
        center: Option<(f64, f64)>,
        expand: bool,
        size: (u32, u32),
    ) -> Result<(Warp, (u32, u32))> {
        let (w, h) = (f64::from(size.0), f64::from(size.1));
        let (cx, cy) = center.unwrap_or((w / 2.0, h / 2.0));
        finite(
            &[angle, cx, cy],
            "rotate",
            "the angle and centre must be finite",
        )?;
        let angle = -radians(py_mod(angle, 360.0));
        let mut m = [
            round15(cos(angle)),
            round15(sin(angle)),
            0.0,
            round15(-sin(angle)),
            round15(cos(angle)),
            0.0,
        ];
        let apply =
            |m: &[f64; 6], x: f64, y: f64| (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]);
        (m[2], m[5]) = apply(&m, -cx, -cy);
        m[2] += cx;
        m[5] += cy;
        if !expand {
            return Ok((Warp::Affine(m), size));
        }
        let corners = [(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)].map(|(x, y)| apply(&m, x, y));
        let (mut lo, mut hi) = (
            (f64::INFINITY, f64::INFINITY),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
        );
        for (x, y) in corners {
            lo = (lo.0.min(x), lo.1.min(y));
            hi = (hi.0.max(x), hi.1.max(y));
        }
        let nw = libm::ceil(hi.0) - libm::floor(lo.0);
        let nh = libm::ceil(hi.1) - libm::floor(lo.1);
        if !(nw >= 0.0 && nh >= 0.0 && nw <= MAX_SIDE && nh <= MAX_SIDE) {
            return Err(Error::InvalidParameter {
                name: "rotate",
                reason: "the expanded size is out of range",
            });
        }
        (m[2], m[5]) = apply(&m, -(nw - w) / 2.0, -(nh - h) / 2.0);
        Ok((Warp::Affine(m), (nw as u32, nh as u32)))
    }

    /// torchvision's PIL `affine(image, angle, translate, scale, shear,
    /// center=center)`: the inverse of rotation by `angle` degrees (clockwise
    /// on screen), shear `(x, y)` in degrees, `scale`, and translation in
    /// pixels, about `center` (`(w * 0.5, h * 0.5)` when `None`), as
    /// torchvision 0.29's `_get_inverse_affine_matrix` computes it (the one
    /// formula the box and key point kernels use too; the older one of 0.20
    /// rounds differently in double precision, and gave the same bytes on
    /// every committed fixture).
    ///
    /// ```
    /// use tensorprep::warp::Warp;
    ///
    /// // The identity.
    /// let m = Warp::affine(0.0, (0.0, 0.0), 1.0, (0.0, 0.0), None, (4, 4))?;
    /// assert_eq!(m, Warp::Affine([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn affine(
        angle: f64,
        translate: (f64, f64),
        scale: f64,
        shear: (f64, f64),
        center: Option<(f64, f64)>,
        size: (u32, u32),
    ) -> Result<Warp> {
        let center = center.unwrap_or((f64::from(size.0) * 0.5, f64::from(size.1) * 0.5));
        torchvision_affine(center, angle, translate, scale, shear, true).map(Warp::Affine)
    }

    /// torchvision's `_get_perspective_coeffs(start, end)`: the perspective
    /// mapping the output's `end` corners back to the source's `start`
    /// corners (top-left, top-right, bottom-right, bottom-left), solved in
    /// double precision and rounded to float32 as torchvision does.
    ///
    /// ```
    /// use tensorprep::warp::Warp;
    ///
    /// let corners = [(0.0, 0.0), (9.0, 0.0), (9.0, 9.0), (0.0, 9.0)];
    /// assert_eq!(
    ///     Warp::perspective(corners, corners)?,
    ///     Warp::Perspective([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    /// );
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn perspective(start: [(f64, f64); 4], end: [(f64, f64); 4]) -> Result<Warp> {
        let all: [f64; 16] = core::array::from_fn(|i| {
            let (s, e) = (start[i / 4 % 4], end[i / 4 % 4]);
            [s.0, s.1, e.0, e.1][i % 4]
        });
        finite(&all, "perspective", "the corners must be finite")?;
        // The 8x8 system torchvision hands to lstsq, with its right side.
        let mut rows = [[0f64; 9]; 8];
        for (i, (p1, p2)) in end.iter().zip(&start).enumerate() {
            rows[2 * i] = [
                p1.0,
                p1.1,
                1.0,
                0.0,
                0.0,
                0.0,
                -p2.0 * p1.0,
                -p2.0 * p1.1,
                p2.0,
            ];
            rows[2 * i + 1] = [
                0.0,
                0.0,
                0.0,
                p1.0,
                p1.1,
                1.0,
                -p2.1 * p1.0,
                -p2.1 * p1.1,
                p2.1,
            ];
        }
        let x = solve(&mut rows).ok_or(Error::InvalidParameter {
            name: "perspective",
            reason: "the corners do not define a perspective (degenerate quadrilateral)",
        })?;
        let coeffs = x.map(|v| f64::from(v as f32));
        finite(&coeffs, "perspective", "the coefficients overflow float32")?;
        Ok(Warp::Perspective(coeffs))
    }
}

/// torchvision 0.29's `_get_inverse_affine_matrix(center, angle, translate,
/// scale, shear, inverted)` in its order of double-precision operations:
/// with `inverted`, the output-to-input matrix (what the output size of an
/// expanded rotation is computed from); without, the input-to-output one
/// its box and key point kernels move points with. `center` is in pixels.
pub(crate) fn torchvision_affine(
    center: (f64, f64),
    angle: f64,
    translate: (f64, f64),
    scale: f64,
    shear: (f64, f64),
    inverted: bool,
) -> Result<[f64; 6]> {
    let ((cx, cy), (tx, ty)) = (center, translate);
    finite(
        &[angle, tx, ty, scale, shear.0, shear.1, cx, cy],
        "affine",
        "every parameter must be finite",
    )?;
    if scale <= 0.0 {
        return Err(Error::InvalidParameter {
            name: "affine",
            reason: "the scale must be positive",
        });
    }
    let rot = radians(angle);
    let (sx, sy) = (radians(shear.0), radians(shear.1));
    let (cos_sy, tan_sx) = (cos(sy), tan(sx));
    let (cx_tx, cy_ty) = (cx + tx, cy + ty);
    let a = cos(rot - sy) / cos_sy;
    let b = -(a * tan_sx + sin(rot));
    let c = sin(rot - sy) / cos_sy;
    let d = cos(rot) - c * tan_sx;
    let m = if inverted {
        let mut m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0];
        m[2] += cx - m[0] * cx_tx - m[1] * cy_ty;
        m[5] += cy - m[3] * cx_tx - m[4] * cy_ty;
        m
    } else {
        let mut m = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0];
        m[2] += cx_tx - m[0] * cx - m[1] * cy;
        m[5] += cy_ty - m[3] * cx - m[4] * cy;
        m
    };
    finite(
        &m,
        "affine",
        "the matrix is not finite (a shear of 90 degrees?)",
    )?;
    Ok(m)
}

/// torchvision's `_compute_perspective_thetas`: the coefficients of the
/// perspective that maps points the other way (input to output, for boxes
/// and key points), from `coeffs` (output to input, [`Warp::perspective`]'s),
/// in double precision. Its numerators' rows, then the denominator's two
/// coefficients (the third is 1).
#[cfg(feature = "alloc")]
pub(crate) fn torchvision_perspective_inverse(c: &[f64; 8]) -> Result<([f64; 6], [f64; 2])> {
    let denom = c[0] * c[4] - c[1] * c[3];
    if denom == 0.0 {
        return Err(Error::InvalidParameter {
            name: "perspective",
            reason: "the perspective cannot be inverted to move points (its denominator is 0)",
        });
    }
    let numer = [
        (c[4] - c[5] * c[7]) / denom,
        (-c[1] + c[2] * c[7]) / denom,
        (c[1] * c[5] - c[2] * c[4]) / denom,
        (-c[3] + c[5] * c[6]) / denom,
        (c[0] - c[2] * c[6]) / denom,
        (-c[0] * c[5] + c[2] * c[3]) / denom,
    ];
    let den = [
        (-c[4] * c[6] + c[3] * c[7]) / denom,
        (-c[0] * c[7] + c[1] * c[6]) / denom,
    ];
    finite(&numer, "perspective", "the inverse is not finite")?;
    finite(&den, "perspective", "the inverse is not finite")?;
    Ok((numer, den))
}

/// Solves the square system in `rows` (each row: 8 coefficients, then the
/// right side) by Gaussian elimination with partial pivoting; `None` when
/// it is singular.
fn solve(rows: &mut [[f64; 9]; 8]) -> Option<[f64; 8]> {
    for col in 0..8 {
        let pivot = (col..8)
            .max_by(|&a, &b| libm::fabs(rows[a][col]).total_cmp(&libm::fabs(rows[b][col])))?;
        if libm::fabs(rows[pivot][col]) < 1e-12 {
            return None;
        }
        rows.swap(col, pivot);
        for r in col + 1..8 {
            let f = rows[r][col] / rows[col][col];
            let above = rows[col];
            for (v, a) in rows[r][col..].iter_mut().zip(&above[col..]) {
                *v -= f * a;
            }
        }
    }
    let mut x = [0f64; 8];
    for r in (0..8).rev() {
        let mut s = rows[r][8];
        for c in r + 1..8 {
            s -= rows[r][c] * x[c];
        }
        x[r] = s / rows[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's round(x, 15) and float modulo on the values rotate meets.
    #[test]
    fn python_rounding_and_modulo() {
        assert_eq!(round15(6.123233995736766e-17), 0.0);
        // 1/sqrt(2) to 15 places.
        assert_eq!(
            round15(core::f64::consts::FRAC_1_SQRT_2),
            707106781186548e-15
        );
        assert_eq!(round15(-0.5000000000000001), -0.5);
        assert_eq!(py_mod(-28.5, 360.0), 331.5);
        assert_eq!(py_mod(720.0, 360.0), 0.0);
        assert!(py_mod(-360.0, 360.0).is_sign_positive() && py_mod(-0.0, 360.0).is_sign_positive());
        assert_eq!(py_mod(-1e-20, 360.0), 360.0);
    }
}
