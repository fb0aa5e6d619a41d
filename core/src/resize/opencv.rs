//! OpenCV's `INTER_LINEAR` for 8-bit images: half-pixel centres, no antialiasing,
//! 11-bit fixed-point weights, borders replicated.
//!
//! Reproduces `cv::resize(..., INTER_LINEAR)`: per output column `fx = (dx + 0.5) *
//! (src_w / dst_w) - 0.5` in float32, `sx = floor(fx)`, weights
//! `round((1 - f) * 2048)` and `round(f * 2048)` (columns past either border are
//! clamped with the whole weight; rows keep their weights and only the row indices
//! are clamped, as OpenCV does), a horizontal pass into 32-bit sums, then the
//! vertical blend OpenCV's vector code computes,
//! `(((s0 >> 4) * b0 >> 16) + ((s1 >> 4) * b1 >> 16) + 2) >> 2`.
//! An exact 2x downscale in both directions is a 2x2 average rounded half up,
//! as OpenCV switches to `INTER_AREA` for that case.

use alloc::vec::Vec;

use crate::{ImageView, ImageViewMut};

/// Scratch reused between calls (coefficients and two horizontally resized rows).
#[derive(Clone, Debug, Default)]
pub(super) struct LinearScratch {
    xofs: Vec<usize>,
    alpha: Vec<[i32; 2]>,
    rows: [Vec<i32>; 2],
    row_y: [usize; 2],
}

const ONE: f32 = 2048.0;

fn weights(f: f32) -> [i32; 2] {
    [
        libm::rintf((1.0 - f) * ONE) as i32,
        libm::rintf(f * ONE) as i32,
    ]
}

/// Horizontal tap of output column `d`: source column and weights. Past either
/// border OpenCV clamps the column and gives the whole weight to it.
fn column_tap(d: usize, scale: f64, src_len: usize) -> (usize, [i32; 2]) {
    let (s, f) = position(d, scale);
    if s < 0 {
        (0, [ONE as i32, 0])
    } else if s as usize >= src_len - 1 {
        (src_len - 1, [ONE as i32, 0])
    } else {
        (s as usize, weights(f))
    }
}

/// Vertical tap of output row `d`: OpenCV does not clamp here; it keeps the
/// fractional weights and clamps the two source row indices instead.
fn row_tap(d: usize, scale: f64, src_len: usize) -> ([usize; 2], [i32; 2]) {
    let (s, f) = position(d, scale);
    let row = |i: isize| i.clamp(0, src_len as isize - 1) as usize;
    ([row(s), row(s + 1)], weights(f))
}

/// `fx = (d + 0.5) * scale - 0.5` in float32, split into floor and fraction.
fn position(d: usize, scale: f64) -> (isize, f32) {
    let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
    let s = libm::floorf(f);
    (s as isize, f - s)
}

impl LinearScratch {
    pub(super) fn resize(&mut self, src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, cn: usize) {
        let (sw, sh) = (src.width() as usize, src.height() as usize);
        let (dw, dh) = (dst.width() as usize, dst.height() as usize);
        if sw == 2 * dw && sh == 2 * dh {
            return area2x2(src, dst, cn);
        }
        // OpenCV derives the scale as 1 / (dst / src), which can differ from src / dst in the last bit.
        let scale_x = 1.0 / (dw as f64 / sw as f64);
        let scale_y = 1.0 / (dh as f64 / sh as f64);
        self.xofs.clear();
        self.alpha.clear();
        for dx in 0..dw {
            let (sx, a) = column_tap(dx, scale_x, sw);
            self.xofs.push(sx * cn);
            self.alpha.push(a);
        }
        for r in &mut self.rows {
            r.resize(dw * cn, 0);
        }
        self.row_y = [usize::MAX; 2];
        for dy in 0..dh {
            let ([sy, sy1], b) = row_tap(dy, scale_y, sh);
            // Reuse rows already computed for the previous output row.
            if self.row_y[1] == sy {
                self.rows.swap(0, 1);
                self.row_y.swap(0, 1);
            }
            for (k, y) in [sy, sy1].into_iter().enumerate() {
                if self.row_y[k] != y {
                    hresize(
                        src.plane_row(0, y),
                        &mut self.rows[k],
                        &self.xofs,
                        &self.alpha,
                        cn,
                    );
                    self.row_y[k] = y;
                }
            }
            let (s0, s1) = (&self.rows[0], &self.rows[1]);
            let (b0, b1) = (b[0], b[1]);
            for ((d, &a), &c) in dst.plane_row_mut(0, dy).iter_mut().zip(s0).zip(s1) {
                let v = (((a >> 4) * b0) >> 16) + (((c >> 4) * b1) >> 16) + 2;
                *d = (v >> 2).clamp(0, 255) as u8;
            }
        }
    }
}

fn hresize(src: &[u8], out: &mut [i32], xofs: &[usize], alpha: &[[i32; 2]], cn: usize) {
    for ((o, &sx), &[a0, a1]) in out.chunks_exact_mut(cn).zip(xofs).zip(alpha) {
        for (k, o) in o.iter_mut().enumerate() {
            let p0 = i32::from(src[sx + k]);
            *o = if a1 == 0 {
                p0 * a0
            } else {
                p0 * a0 + i32::from(src[sx + cn + k]) * a1
            };
        }
    }
}

fn area2x2(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, cn: usize) {
    for (dy, d) in dst.plane_rows_mut(0).enumerate() {
        let (r0, r1) = (src.plane_row(0, 2 * dy), src.plane_row(0, 2 * dy + 1));
        for (dx, px) in d.chunks_exact_mut(cn).enumerate() {
            let s = 2 * dx * cn;
            for (k, o) in px.iter_mut().enumerate() {
                let sum = u32::from(r0[s + k])
                    + u32::from(r0[s + cn + k])
                    + u32::from(r1[s + k])
                    + u32::from(r1[s + cn + k]);
                *o = ((sum + 2) >> 2) as u8;
            }
        }
    }
}
