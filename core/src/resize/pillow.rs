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
use super::kernels::{self, Simd};
use super::{Filter, ResizeState};
use crate::rows::{RowReader, Rows, grow, premultiply, unpremultiply};
use crate::{ImageViewMut, Limits, Rect, Result};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum PillowPlan {
    /// Output pixel `(x, y)` is region pixel `(x, y)`. With `roundtrip`, RGBA
    /// goes through Pillow's premultiply and back (it crops the `RGBa` image
    /// unless nothing changes at all).
    Copy {
        roundtrip: bool,
    },
    /// Region column and row per output column and row; `u32::MAX` is outside
    /// the source and stays 0, as in Pillow.
    Nearest {
        xs: Vec<u32>,
        ys: Vec<u32>,
    },
    Convolve(Convolve),
}

/// The two convolution passes, each `None` where Pillow skips it (the region is
/// then already the right columns or rows). Starts count from the region's origin.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Convolve {
    h: Option<Axis>,
    v: Option<Axis>,
    vertical_first: bool,
}

/// The region `[start, end)` an axis reads, or `fallback` when the pass is skipped.
fn extent(axis: Option<&Axis>, fallback: (usize, usize)) -> (usize, usize) {
    axis.map_or(fallback, Axis::span)
}

impl PillowPlan {
    /// The plan for outputs `window` of the full `(dw, dh)` result, and the
    /// source region it reads.
    ///
    /// `spare`: the tables of a plan no longer needed, refilled instead of
    /// allocating new ones.
    pub(super) fn new(
        (sw, sh): (u32, u32),
        bx: SourceBox,
        (dw, dh): (u32, u32),
        window: Rect,
        filter: Filter,
        limits: &Limits,
        spare: &mut Spare,
    ) -> Result<(PillowPlan, Rect)> {
        let (wx, wy) = (
            window.x..window.x + window.width,
            window.y..window.y + window.height,
        );
        let integral = |v: f32| v == libm::truncf(v);
        // `_resize`'s crop test, per axis.
        let x_is_crop = integral(bx.x0) && bx.x1 - bx.x0 == dw as f32;
        let y_is_crop = integral(bx.y0) && bx.y1 - bx.y0 == dh as f32;
        if (bx == SourceBox::full(sw, sh) && (sw, sh) == (dw, dh)) || (x_is_crop && y_is_crop) {
            let region = Rect::new(
                bx.x0 as u32 + window.x,
                bx.y0 as u32 + window.y,
                window.width,
                window.height,
            );
            let roundtrip = (sw, sh) != (dw, dh);
            return Ok((PillowPlan::Copy { roundtrip }, region));
        }
        if filter == Filter::Nearest {
            let mut xs = spare.positions.pop().unwrap_or_default();
            let mut ys = spare.positions.pop().unwrap_or_default();
            nearest_positions(bx.x0, bx.x1, dw, sw, wx, &mut xs)?;
            nearest_positions(bx.y0, bx.y1, dh, sh, wy, &mut ys)?;
            let (x0, x1) = relative(&mut xs);
            let (y0, y1) = relative(&mut ys);
            let region = Rect::new(x0, y0, x1 - x0, y1 - y0);
            return Ok((PillowPlan::Nearest { xs, ys }, region));
        }
        let axis = |size, b0, b1, out, range, reuse| {
            Axis::window(size, b0, b1, out, range, filter, limits, reuse)
        };
        // Python's resize splits images more than 100 times taller than wide into
        // a vertical-only call, then a horizontal-only one, each possibly a crop.
        let vertical_first = sh > sw.saturating_mul(100) && dh < sh;
        let (need_h, need_v) = if vertical_first {
            (!x_is_crop, !y_is_crop)
        } else {
            // `ImagingResampleInner`: a pass runs only where the size or the box changes.
            (
                dw != sw || bx.x0 != 0.0 || bx.x1 != dw as f32,
                dh != sh || bx.y0 != 0.0 || bx.y1 != dh as f32,
            )
        };
        let mut h = if need_h {
            Some(axis(sw, bx.x0, bx.x1, dw, wx.clone(), spare.axes.pop())?)
        } else {
            None
        };
        let mut v = if need_v {
            Some(axis(sh, bx.y0, bx.y1, dh, wy.clone(), spare.axes.pop())?)
        } else {
            None
        };
        // A skipped pass reads the window's own columns (rows) from the box's origin.
        let from = |b0: f32, w: &core::ops::Range<u32>| {
            let start = b0 as usize + w.start as usize;
            (start, start + w.len())
        };
        let (x0, x1) = extent(h.as_ref(), from(bx.x0, &wx));
        let (y0, y1) = extent(v.as_ref(), from(bx.y0, &wy));
        if let Some(h) = &mut h {
            h.shift(x0);
        }
        if let Some(v) = &mut v {
            v.shift(y0);
        }
        let region = Rect::new(x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32);
        let plan = PillowPlan::Convolve(Convolve {
            h,
            v,
            vertical_first,
        });
        Ok((plan, region))
    }

    /// The most scratch a run can need for a `region` read and an `out` written
    /// (4 bytes per pixel, the widest format).
    pub(super) fn scratch_bytes(&self, region: Rect, out: (u32, u32)) -> u64 {
        let row = u64::from(region.width) * 4;
        self.scratch(region, out, 4, |rows| row * rows as u64)
            .iter()
            .sum()
    }

    /// The bytes a run grows each scratch buffer to: the first pass's output
    /// (`between`), the source rows converted or premultiplied
    /// (`premultiplied`, `rows_scratch(rows)` for `rows` read at once) and
    /// the interleaved block of the horizontal kernel (`block`).
    pub(super) fn scratch(
        &self,
        region: Rect,
        (dw, dh): (u32, u32),
        bpp: u64,
        rows_scratch: impl Fn(usize) -> u64,
    ) -> [u64; 3] {
        let (rw, rh) = (u64::from(region.width), u64::from(region.height));
        let (dw, dh) = (u64::from(dw), u64::from(dh));
        let PillowPlan::Convolve(c) = self else {
            return [0, rows_scratch(1), 0]; // one row at a time
        };
        let between = match (c.vertical_first, &c.h, &c.v) {
            (true, _, Some(_)) => dh * rw * bpp,
            (false, Some(_), Some(_)) => rh * dw * bpp,
            _ => 0,
        };
        // Blocks of eight rows, or the whole region at once.
        let rows = rows_scratch(rh.max(dh).max(8) as usize);
        let block = if c.h.is_some() {
            8 * bpp * (rw + dw) + 32
        } else {
            0
        };
        [between, rows, block]
    }

    /// Resizes the plan's region, read through `input`, into `dst`.
    pub(super) fn run(
        &self,
        simd: Simd,
        state: &mut ResizeState,
        input: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
        alpha: bool,
    ) {
        let bpp = input.bpp();
        let scratch = &mut state.premultiplied;
        match self {
            PillowPlan::Copy { roundtrip } => {
                for (y, d) in dst.plane_rows_mut(0).enumerate() {
                    d.copy_from_slice(input.rows(y, 1, false, scratch).row(0));
                    if alpha && *roundtrip {
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
                    let row = input.rows(sy as usize, 1, false, scratch).row(0);
                    for (o, &sx) in d.chunks_exact_mut(bpp).zip(xs) {
                        if sx == u32::MAX {
                            o.fill(0);
                        } else {
                            o.copy_from_slice(&row[sx as usize * bpp..][..bpp]);
                        }
                    }
                }
            }
            PillowPlan::Convolve(c) => c.run(simd, state, input, dst, alpha),
        }
    }
}

/// `ImagingScaleAffine`'s source index per output index in `window`: positions
/// accumulated in `f64` from `box0 + step / 2`, truncated, out-of-range ones marked.
fn nearest_positions(
    b0: f32,
    b1: f32,
    out: u32,
    in_size: u32,
    window: core::ops::Range<u32>,
    into: &mut Vec<u32>,
) -> Result<()> {
    let step = f64::from(b1 - b0) / f64::from(out);
    let mut pos = f64::from(b0) + step * 0.5;
    into.clear();
    crate::buffer::reserve(into, window.len())?;
    into.extend(
        (0..window.end)
            .map(|_| {
                let i = if pos < 0.0 { -1 } else { pos as i64 };
                pos += step;
                if (0..i64::from(in_size)).contains(&i) {
                    i as u32
                } else {
                    u32::MAX
                }
            })
            .skip(window.start as usize),
    );
    Ok(())
}

/// The tables of Pillow plans no longer needed, for the next ones to refill:
/// a few of each kind, so that plans without tables (a size already right)
/// passing through a cache do not make the next ones allocate.
#[derive(Debug, Default)]
pub(super) struct Spare {
    positions: heapless::Vec<Vec<u32>, 8>,
    axes: heapless::Vec<Axis, 8>,
}

impl PillowPlan {
    /// Gives the plan's tables up for reuse (beyond the pool's room they are freed).
    pub(super) fn into_spare(self, spare: &mut Spare) {
        match self {
            PillowPlan::Copy { .. } => {}
            PillowPlan::Nearest { xs, ys } => {
                let _ = spare.positions.push(xs);
                let _ = spare.positions.push(ys);
            }
            PillowPlan::Convolve(c) => {
                for axis in [c.h, c.v].into_iter().flatten() {
                    let _ = spare.axes.push(axis);
                }
            }
        }
    }
}

/// Makes positions relative to the smallest one; returns the range they span
/// (`0..1` if every one is outside the source).
fn relative(positions: &mut [u32]) -> (u32, u32) {
    let valid = positions.iter().filter(|&&p| p != u32::MAX);
    let first = valid.clone().min().copied().unwrap_or(0);
    let last = valid.max().map_or(first + 1, |&p| p + 1);
    for p in positions.iter_mut().filter(|p| **p != u32::MAX) {
        *p -= first;
    }
    (first, last)
}

/// Where the horizontal pass reads: the source through its reader (converted or
/// premultiplied per block of rows when needed), or rows already in memory.
enum HInput<'r, 'a> {
    Reader {
        reader: &'r RowReader<'a>,
        premultiplied: bool,
        scratch: &'r mut Vec<u8>,
    },
    Rows(Rows<'r>),
}

/// The horizontal pass of `count` input rows into `out`, rows `stride` apart,
/// eight rows per kernel call.
#[allow(clippy::too_many_arguments)]
fn h_pass(
    simd: Simd,
    bpp: usize,
    h: &Axis,
    mut input: HInput<'_, '_>,
    count: usize,
    out: &mut [u8],
    stride: usize,
    block: &mut Vec<u8>,
) {
    let row_len = h.bounds.len() * bpp;
    for y0 in (0..count).step_by(8) {
        let m = 8.min(count - y0);
        let rows = match &mut input {
            HInput::Reader {
                reader,
                premultiplied,
                scratch,
            } => reader.rows(y0, m, *premultiplied, scratch),
            HInput::Rows(r) => r.from(y0),
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
        input: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
        alpha: bool,
    ) {
        let bpp = input.bpp();
        let (rw, rh) = input.size();
        let (rw, rh) = (rw as usize, rh as usize);
        let (dw, dh) = (dst.width() as usize, dst.height() as usize);
        let ResizeState {
            between,
            premultiplied,
            block,
            ..
        } = state;
        let stride = dst.stride(0);
        if self.vertical_first {
            // Vertical (or a row crop) into region-wide rows, then horizontal (or a column crop).
            let mid = match &self.v {
                Some(v) => {
                    let src = input.rows(0, rh, alpha, premultiplied);
                    let len = rw * bpp;
                    let out = grow(between, dh * len);
                    for (y, o) in out.chunks_exact_mut(len).enumerate() {
                        let (start, k) = v.taps(y);
                        kernels::v_row(simd, &src, start, k, o);
                    }
                    Rows {
                        data: out,
                        stride: len,
                        len,
                    }
                }
                None => input.rows(0, dh, alpha, premultiplied),
            };
            match &self.h {
                Some(h) => {
                    let out = dst.plane_data_mut(0);
                    h_pass(simd, bpp, h, HInput::Rows(mid), dh, out, stride, block);
                }
                None => {
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        d.copy_from_slice(&mid.row(y)[..dw * bpp]);
                    }
                }
            }
        } else {
            // Alpha: each block of source rows is premultiplied before the horizontal pass.
            let reader = HInput::Reader {
                reader: input,
                premultiplied: alpha,
                scratch: premultiplied,
            };
            match (&self.h, &self.v) {
                (Some(h), None) => {
                    // Straight into the output.
                    let out = dst.plane_data_mut(0);
                    h_pass(simd, bpp, h, reader, dh, out, stride, block);
                }
                (Some(h), Some(v)) => {
                    // Horizontal pass over the region's rows, then vertical.
                    let mid_len = dw * bpp;
                    let out = grow(between, rh * mid_len);
                    h_pass(simd, bpp, h, reader, rh, out, mid_len, block);
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
                (None, v) => {
                    // Only the vertical pass (a plan never skips both: that is a copy).
                    let src = input.rows(0, rh, alpha, premultiplied);
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        match v {
                            Some(v) => {
                                let (start, k) = v.taps(y);
                                kernels::v_row(simd, &src, start, k, d);
                            }
                            None => d.copy_from_slice(src.row(y)),
                        }
                    }
                }
            }
        }
        if alpha {
            for d in dst.plane_rows_mut(0) {
                d.chunks_exact_mut(4).for_each(unpremultiply);
            }
        }
    }
}
