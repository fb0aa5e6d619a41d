//! Pillow's `Image.resize` for 8-bit Gray, RGB and RGBA, bit for bit.
//!
//! The decision tree follows Pillow's Python and C code: an unchanged size with
//! the whole image as box is a copy; an integral box of the output size is a
//! crop; `NEAREST` samples positions accumulated in `f64`
//! (`ImagingScaleAffine`); every other filter is the separable fixed-point
//! convolution of `Resample.c` (horizontal pass first, then vertical, each only
//! where the size or box changes, vertical first for images more than 100 times
//! taller than wide). RGBA is resampled premultiplied (`RGBa`) and divided back,
//! with Pillow's rounding in both directions.

use alloc::vec::Vec;

use super::SourceBox;
use super::coeffs::Axis;
use super::kernels::{self, Rows, Simd};
use super::{Filter, ResizeState};
use crate::{Error, ImageView, ImageViewMut, Limits, Result};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum PillowPlan {
    /// Output pixel `(x, y)` is source `(x0 + x, y0 + y)`.
    Crop {
        x0: u32,
        y0: u32,
    },
    /// Source column and row per output column and row; `u32::MAX` is outside
    /// the source and stays 0, as in Pillow.
    Nearest {
        xs: Vec<u32>,
        ys: Vec<u32>,
    },
    Convolve(Convolve),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Convolve {
    /// Horizontal weights; `None` keeps the columns from `x0` on.
    h: Option<Axis>,
    /// Vertical weights; `None` keeps the rows from `y0` on. When the horizontal
    /// pass runs first, starts count from `rows.0`.
    v: Option<Axis>,
    x0: usize,
    y0: usize,
    /// Source rows `[first, last)` the vertical weights read.
    rows: (usize, usize),
    vertical_first: bool,
}

impl PillowPlan {
    pub(super) fn new(
        (sw, sh): (u32, u32),
        bx: SourceBox,
        (dw, dh): (u32, u32),
        filter: Filter,
        limits: &Limits,
    ) -> Result<PillowPlan> {
        let integral = |v: f32| v == libm::truncf(v);
        // `_resize`'s crop test, per axis.
        let x_is_crop = integral(bx.x0) && bx.x1 - bx.x0 == dw as f32;
        let y_is_crop = integral(bx.y0) && bx.y1 - bx.y0 == dh as f32;
        if (bx == SourceBox::full(sw, sh) && (sw, sh) == (dw, dh)) || (x_is_crop && y_is_crop) {
            return Ok(PillowPlan::Crop {
                x0: bx.x0 as u32,
                y0: bx.y0 as u32,
            });
        }
        if filter == Filter::Nearest {
            return Ok(PillowPlan::Nearest {
                xs: nearest_positions(bx.x0, bx.x1, dw, sw),
                ys: nearest_positions(bx.y0, bx.y1, dh, sh),
            });
        }
        let v = Axis::new(sh, bx.y0, bx.y1, dh, filter, limits)?;
        let rows = v.span();
        // Python's resize splits images more than 100 times taller than wide into
        // a vertical-only call, then a horizontal-only one, each possibly a crop.
        if sh > sw.saturating_mul(100) && dh < sh {
            let h = if x_is_crop {
                None
            } else {
                Some(Axis::new(sw, bx.x0, bx.x1, dw, filter, limits)?)
            };
            return Ok(PillowPlan::Convolve(Convolve {
                h,
                v: (!y_is_crop).then_some(v),
                x0: bx.x0 as usize,
                y0: bx.y0 as usize,
                rows,
                vertical_first: true,
            }));
        }
        // `ImagingResampleInner`: a pass runs only where the size or the box changes.
        let need_h = dw != sw || bx.x0 != 0.0 || bx.x1 != dw as f32;
        let need_v = dh != sh || bx.y0 != 0.0 || bx.y1 != dh as f32;
        let h = if need_h {
            Some(Axis::new(sw, bx.x0, bx.x1, dw, filter, limits)?)
        } else {
            None
        };
        let v = match (need_v, need_h) {
            (false, _) => None,
            (true, true) => Some(v.shifted(rows.0)),
            (true, false) => Some(v),
        };
        Ok(PillowPlan::Convolve(Convolve {
            h,
            v,
            x0: 0,
            y0: 0,
            rows,
            vertical_first: false,
        }))
    }

    /// The most scratch a run can need (4 bytes per pixel, the widest format).
    pub(super) fn scratch_bytes(&self, (sw, _sh): (u32, u32), (dw, dh): (u32, u32)) -> u64 {
        let (sw, dw, dh) = (u64::from(sw), u64::from(dw), u64::from(dh));
        match self {
            PillowPlan::Convolve(c) => {
                let rows = (c.rows.1 - c.rows.0) as u64;
                let mid = if c.vertical_first {
                    sw * 4 * dh
                } else {
                    dw * 4 * rows
                };
                // Intermediate rows, premultiplied source rows (at least a block of
                // eight), and the interleaved block.
                mid + sw * 4 * rows.max(dh).max(8) + 8 * 4 * (sw + dw) + 32
            }
            _ => 0,
        }
    }

    pub(super) fn run(
        &self,
        simd: Simd,
        state: &mut ResizeState,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        bpp: usize,
        alpha: bool,
    ) -> Result<()> {
        match self {
            PillowPlan::Crop { x0, y0 } => {
                let off = *x0 as usize * bpp;
                let len = dst.width() as usize * bpp;
                // Pillow crops the premultiplied image unless nothing changes at all.
                let roundtrip = alpha && (src.width(), src.height()) != (dst.width(), dst.height());
                for (y, d) in dst.plane_rows_mut(0).enumerate() {
                    d.copy_from_slice(&src.plane_row(0, *y0 as usize + y)[off..off + len]);
                    if roundtrip {
                        d.chunks_exact_mut(4).for_each(|p| {
                            let q = premultiply(p);
                            p.copy_from_slice(&q);
                            unpremultiply(p);
                        });
                    }
                }
            }
            PillowPlan::Nearest { xs, ys } => {
                for (d, &sy) in dst.plane_rows_mut(0).zip(ys) {
                    if sy == u32::MAX {
                        d.fill(0);
                        continue;
                    }
                    let row = src.plane_row(0, sy as usize);
                    for (o, &sx) in d.chunks_exact_mut(bpp).zip(xs) {
                        if sx == u32::MAX {
                            o.fill(0);
                        } else {
                            o.copy_from_slice(&row[sx as usize * bpp..][..bpp]);
                        }
                    }
                }
            }
            PillowPlan::Convolve(c) => c.run(simd, state, src, dst, bpp, alpha)?,
        }
        Ok(())
    }
}

/// `ImagingScaleAffine`'s source index per output index: positions accumulated
/// in `f64` from `box0 + step / 2`, truncated, out-of-range ones marked.
fn nearest_positions(b0: f32, b1: f32, out: u32, in_size: u32) -> Vec<u32> {
    let step = f64::from(b1 - b0) / f64::from(out);
    let mut pos = f64::from(b0) + step * 0.5;
    (0..out)
        .map(|_| {
            let i = if pos < 0.0 { -1 } else { pos as i64 };
            pos += step;
            if (0..i64::from(in_size)).contains(&i) {
                i as u32
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// Pillow's `RGBA -> RGBa`: `c * a / 255` rounded by its shift formula.
#[inline(always)]
fn premultiply(p: &[u8]) -> [u8; 4] {
    let a = u32::from(p[3]);
    let m = |c: u8| {
        let t = u32::from(c) * a + 128;
        (((t >> 8) + t) >> 8) as u8
    };
    [m(p[0]), m(p[1]), m(p[2]), p[3]]
}

/// Pillow's `RGBa -> RGBA`: `255 * c / a` truncated and clamped, unchanged for a = 0 or 255.
#[inline(always)]
fn unpremultiply(p: &mut [u8]) {
    let a = u32::from(p[3]);
    if a != 0 && a != 255 {
        for c in &mut p[..3] {
            *c = (255 * u32::from(*c) / a).min(255) as u8;
        }
    }
}

fn premultiply_row(src: &[u8], out: &mut [u8]) {
    for (o, p) in out.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
        o.copy_from_slice(&premultiply(p));
    }
}

/// Resizes a scratch vector without zero-filling what it already holds.
pub(super) fn scratch(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len {
        buf.resize(len, 0);
    }
    &mut buf[..len]
}

/// Premultiplies source rows `[first, last)` into `buf`; the result's row 0 is source row `first`.
fn premultiplied_rows<'a>(
    buf: &'a mut Vec<u8>,
    src: &Rows<'_>,
    (first, last): (usize, usize),
) -> Rows<'a> {
    let len = src.len;
    let out = scratch(buf, (last - first) * len);
    for (i, o) in out.chunks_exact_mut(len).enumerate() {
        premultiply_row(src.row(first + i), o);
    }
    Rows {
        data: out,
        stride: len,
        len,
    }
}

/// The horizontal pass of `count` rows `input.row(0..count)` into `out`, rows
/// `stride` apart, eight rows per kernel call; each block premultiplied into
/// `pre` first when given (RGBA).
#[allow(clippy::too_many_arguments)]
fn h_pass(
    simd: Simd,
    bpp: usize,
    h: &Axis,
    input: &Rows<'_>,
    count: usize,
    out: &mut [u8],
    stride: usize,
    mut pre: Option<&mut Vec<u8>>,
    block: &mut Vec<u8>,
) {
    let row_len = h.bounds.len() * bpp;
    for y0 in (0..count).step_by(8) {
        let m = 8.min(count - y0);
        let rows = match pre.as_deref_mut() {
            Some(buf) => premultiplied_rows(buf, input, (y0, y0 + m)),
            None => input.from(y0),
        };
        let o = &mut out[y0 * stride..(y0 + m - 1) * stride + row_len];
        kernels::h_block(simd, bpp, &rows, m, o, stride, h, block);
    }
}

impl Convolve {
    fn run(
        &self,
        simd: Simd,
        state: &mut ResizeState,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        bpp: usize,
        alpha: bool,
    ) -> Result<()> {
        let (sw, dw, dh) = (
            src.width() as usize,
            dst.width() as usize,
            dst.height() as usize,
        );
        let plane = src.plane(0);
        let src_rows = Rows {
            data: plane.data,
            stride: plane.stride,
            len: sw * bpp,
        };
        let ResizeState {
            between,
            premultiplied,
            block,
            ..
        } = state;
        let (first, last) = self.rows;
        if self.vertical_first {
            // Vertical (or a row crop) into source-width rows, then horizontal (or a column crop).
            let mid = match &self.v {
                Some(v) => {
                    let (input, offset) = if alpha {
                        (
                            premultiplied_rows(premultiplied, &src_rows, (first, last)),
                            first,
                        )
                    } else {
                        (src_rows, 0)
                    };
                    let out = scratch(between, dh * src_rows.len);
                    for (y, o) in out.chunks_exact_mut(src_rows.len).enumerate() {
                        let (start, k) = v.taps(y);
                        kernels::v_row(simd, &input, start - offset, k, o);
                    }
                    Rows {
                        data: out,
                        stride: src_rows.len,
                        len: src_rows.len,
                    }
                }
                None if alpha => {
                    premultiplied_rows(premultiplied, &src_rows, (self.y0, self.y0 + dh))
                }
                None => Rows {
                    data: &src_rows.data[self.y0 * src_rows.stride..],
                    ..src_rows
                },
            };
            match &self.h {
                Some(h) => {
                    let stride = dst.stride(0);
                    h_pass(
                        simd,
                        bpp,
                        h,
                        &mid,
                        dh,
                        dst.plane_data_mut(0),
                        stride,
                        None,
                        block,
                    );
                }
                None => {
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        d.copy_from_slice(&mid.row(y)[self.x0 * bpp..][..dw * bpp]);
                    }
                }
            }
        } else {
            // Alpha: each block of source rows is premultiplied before the horizontal pass.
            let pre = alpha.then_some(premultiplied);
            match (&self.h, &self.v) {
                (Some(h), None) => {
                    // Straight into the output.
                    let stride = dst.stride(0);
                    let out = dst.plane_data_mut(0);
                    h_pass(simd, bpp, h, &src_rows, dh, out, stride, pre, block);
                }
                (Some(h), Some(v)) => {
                    // Horizontal pass over the rows the vertical pass reads, then vertical.
                    let mid_len = dw * bpp;
                    let out = scratch(between, (last - first) * mid_len);
                    let input = src_rows.from(first);
                    h_pass(simd, bpp, h, &input, last - first, out, mid_len, pre, block);
                    let mid = Rows {
                        data: out,
                        stride: mid_len,
                        len: mid_len,
                    };
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        let (start, k) = v.taps(y);
                        kernels::v_row(simd, &mid, start, k, d);
                    }
                }
                (None, Some(v)) => {
                    let (input, offset) = match pre {
                        Some(buf) => (premultiplied_rows(buf, &src_rows, (first, last)), first),
                        None => (src_rows, 0),
                    };
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        let (start, k) = v.taps(y);
                        kernels::v_row(simd, &input, start - offset, k, d);
                    }
                }
                (None, None) => {
                    return Err(Error::InvalidParameter {
                        name: "resize: a convolution plan without passes (internal error)",
                    });
                }
            }
        }
        if alpha {
            for d in dst.plane_rows_mut(0) {
                d.chunks_exact_mut(4).for_each(unpremultiply);
            }
        }
        Ok(())
    }
}
