//! OpenCV's `cv::resize` for 8-bit images: `INTER_LINEAR` and `INTER_AREA`.
//!
//! OpenCV picks one of three kernels from the scale factors
//! (`scale = 1 / (dst / src)` in `f64`, per axis):
//!
//! - **generic linear** (`resizeGeneric_`): per output column `fx = (dx + 0.5) *
//!   scale - 0.5` in float32 (for `INTER_AREA` upscaling, `sx = floor(dx * scale)`
//!   and `fx = frac((dx + 1) - (sx + 1) / scale)` instead), weights
//!   `round((1 - f) * 2048)` and `round(f * 2048)`; columns past either border are
//!   clamped with the whole weight, rows keep their weights and only the row
//!   indices are clamped; a horizontal pass into 32-bit sums, then the vertical
//!   blend of OpenCV's vector code, `(((s0 >> 4) * b0 >> 16) + ((s1 >> 4) * b1 >> 16) + 2) >> 2`;
//! - **integer area** (`resizeAreaFast_`, both factors integers, also used by
//!   `INTER_LINEAR` for exactly 2x): the block mean, `(sum + 2) >> 2` for 2x2 and
//!   `round_half_even(sum * (1 / area))` in float32 otherwise;
//! - **fractional area** (`resizeArea_`, `INTER_AREA` downscaling by other
//!   factors): overlap weights from `computeResizeAreaTab`, accumulated in
//!   float32 in OpenCV's order, rounded half to even.

use super::kernels::FloatPath;
use crate::arena::{Scratch, Storage, Tables};
use crate::rows::RowReader;
use crate::{ImageViewMut, Rect, Result};

/// Which OpenCV interpolation flag to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Linear,
    Area,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum OpenCvPlan<S: Storage> {
    Copy,
    Linear(Linear<S>),
    AreaFast { fx: usize, fy: usize },
    Area(Area<S>),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Linear<S: Storage> {
    /// Source column and weights per output column.
    cols: S::Table<(usize, [i32; 2])>,
    /// The source columns read (sorted, distinct), and `cols` with each column
    /// replaced by its position in that list: when the rows must be converted
    /// (YUV), only those pixels are.
    needed: S::Table<u32>,
    /// How many columns `needed` lists (known without reading the table,
    /// which a counted plan does not hold).
    needed_len: usize,
    packed_cols: S::Table<(usize, [i32; 2])>,
    /// Two source rows and weights per output row.
    rows: S::Table<([usize; 2], [i32; 2])>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Area<S: Storage> {
    /// Per output column, the source pixel its horizontal weights start at.
    xstart: S::Table<u32>,
    /// `xtaps` horizontal weights per output column, in OpenCV's order.
    xweights: S::Table<f32>,
    xtaps: usize,
    /// `(destination, source, weight)` per vertical tap, in OpenCV's order.
    ytab: S::Table<(usize, usize, f32)>,
}

#[cfg(feature = "alloc")]
impl OpenCvPlan<crate::arena::Heap> {
    /// Gives the plan's tables up for reuse (beyond the pools' room they are freed).
    pub(super) fn into_pools(self, pools: &mut crate::arena::Pools) {
        match self {
            OpenCvPlan::Linear(l) => {
                pools.give(l.cols);
                pools.give(l.needed);
                pools.give(l.packed_cols);
                pools.give(l.rows);
            }
            OpenCvPlan::Area(a) => {
                pools.give(a.xstart);
                pools.give(a.xweights);
                pools.give(a.ytab);
            }
            OpenCvPlan::Copy | OpenCvPlan::AreaFast { .. } => {}
        }
    }
}

/// Rows reused between calls: two horizontally resized rows (linear) or the
/// row buffer and sums (area).
#[derive(Debug)]
pub(super) struct OpenCvState<S: Storage> {
    /// A source row converted to the working format, when it needs converting.
    pub(super) line: S::Scratch<u8>,
    pub(super) rows: [S::Scratch<i32>; 2],
    pub(super) row_y: [usize; 2],
    pub(super) sum: S::Scratch<f32>,
}

/// The elements of each of [`OpenCvState`]'s buffers a run needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct StateSizes {
    pub(super) line: usize,
    /// Each of the two rows of sums.
    pub(super) rows: usize,
    /// The output row's sums.
    pub(super) sums: usize,
    /// The interleaved block of source rows (bytes, in the resizer's `block`).
    pub(super) bytes: usize,
}

impl<S: Storage> OpenCvState<S> {
    /// The capacity of every scratch buffer.
    #[cfg(debug_assertions)]
    pub(super) fn capacities(&self) -> [usize; 4] {
        [
            self.line.capacity(),
            self.rows[0].capacity(),
            self.rows[1].capacity(),
            self.sum.capacity(),
        ]
    }
}

const ONE: f32 = 2048.0;

fn weights(f: f32) -> [i32; 2] {
    [
        libm::rintf((1.0 - f) * ONE) as i32,
        libm::rintf(f * ONE) as i32,
    ]
}

/// Source position of output index `d`: floor and float32 fraction.
fn position(d: usize, scale: f64, mode: Mode) -> (isize, f32) {
    match mode {
        Mode::Linear => {
            let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let s = libm::floorf(f);
            (s as isize, f - s)
        }
        Mode::Area => {
            let s = libm::floor(d as f64 * scale);
            let f = ((d as f64 + 1.0) - (s + 1.0) * (1.0 / scale)) as f32;
            let f = if f <= 0.0 { 0.0 } else { f - libm::floorf(f) };
            (s as isize, f)
        }
    }
}

impl<S: Storage> OpenCvPlan<S> {
    /// The plan for outputs `window` of resizing `(sw, sh)` to `(dw, dh)`, and
    /// the source region it reads; its tables from `tables`.
    pub(super) fn new(
        mode: Mode,
        (sw, sh): (u32, u32),
        (dw, dh): (u32, u32),
        window: Rect,
        tables: &mut impl Tables<S>,
    ) -> Result<(OpenCvPlan<S>, Rect)> {
        let (sw, sh, dw, dh) = (sw as usize, sh as usize, dw as usize, dh as usize);
        let (wx, wy) = (
            window.x as usize..(window.x + window.width) as usize,
            window.y as usize..(window.y + window.height) as usize,
        );
        let rect = |(x0, x1): (usize, usize), (y0, y1): (usize, usize)| {
            Rect::new(x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32)
        };
        if (sw, sh) == (dw, dh) {
            return Ok((OpenCvPlan::Copy, window));
        }
        // OpenCV derives the scale as 1 / (dst / src), which can differ from src / dst in the last bit.
        let scale_x = 1.0 / (dw as f64 / sw as f64);
        let scale_y = 1.0 / (dh as f64 / sh as f64);
        let (ix, iy) = (libm::round(scale_x), libm::round(scale_y));
        let area_fast = (scale_x - ix).abs() < f64::EPSILON && (scale_y - iy).abs() < f64::EPSILON;
        let (ix, iy) = (ix as usize, iy as usize);
        let mode = if mode == Mode::Linear && area_fast && (ix, iy) == (2, 2) {
            Mode::Area
        } else {
            mode
        };
        if mode == Mode::Area && scale_x >= 1.0 && scale_y >= 1.0 {
            if area_fast {
                let region = rect((wx.start * ix, wx.end * ix), (wy.start * iy, wy.end * iy));
                return Ok((OpenCvPlan::AreaFast { fx: ix, fy: iy }, region));
            }
            let (x, y) = (
                AreaAxis::new(sw, scale_x, wx),
                AreaAxis::new(sh, scale_y, wy),
            );
            // `build_columns` takes each output column's first source pixel
            // from its first tap: every column must have one.
            if !x.covers_window() {
                return Err(crate::Error::InvalidParameter {
                    name: "resize",
                    reason: "INTER_AREA left an output column without source pixels",
                });
            }
            let region = rect(x.span(), y.span());
            let (xstart, xweights, xtaps) = x.build_columns(tables)?;
            let area = Area {
                xstart,
                xweights,
                xtaps,
                ytab: y.build(tables)?,
            };
            return Ok((OpenCvPlan::Area(area), region));
        }
        let col = |d: usize| {
            let (s, f) = position(d, scale_x, mode);
            if s < 0 {
                (0, [ONE as i32, 0])
            } else if s as usize >= sw - 1 {
                (sw - 1, [ONE as i32, 0])
            } else {
                (s as usize, weights(f))
            }
        };
        let row = |d: usize| {
            let (s, f) = position(d, scale_y, mode);
            let row = |i: isize| i.clamp(0, sh as isize - 1) as usize;
            // Rows keep their fraction even past the border; only the indices are clamped.
            ([row(s), row(s + 1)], weights(f))
        };
        // The columns and rows read, then every index made relative to them.
        let x0 = wx.clone().map(|d| col(d).0).min().unwrap_or(0);
        let x1 = wx
            .clone()
            .map(|d| {
                let (s, [_, a1]) = col(d);
                s + 1 + usize::from(a1 != 0)
            })
            .max()
            .unwrap_or(1);
        let y0 = wy.clone().map(|d| row(d).0[0]).min().unwrap_or(0);
        let y1 = wy.clone().map(|d| row(d).0[1] + 1).max().unwrap_or(1);
        let region = rect((x0, x1), (y0, y1));
        let shifted = |d: usize| {
            let (s, w) = col(d);
            (s - x0, w)
        };
        let cols = tables.table(wx.len(), |t: &mut [(usize, [i32; 2])]| {
            for (t, d) in t.iter_mut().zip(wx.clone()) {
                *t = shifted(d);
            }
        })?;
        let rows = tables.table(wy.len(), |t: &mut [([usize; 2], [i32; 2])]| {
            for (t, d) in t.iter_mut().zip(wy.clone()) {
                let (r, w) = row(d);
                *t = (r.map(|y| y - y0), w);
            }
        })?;
        // The columns read, sorted and distinct: starts never decrease, so a
        // column not above the last one kept was kept already.
        let needed_cols = || {
            let mut last = None;
            wx.clone()
                .flat_map(move |d| {
                    let (s, [_, a1]) = shifted(d);
                    [Some(s as u32), (a1 != 0).then_some(s as u32 + 1)]
                })
                .flatten()
                .filter(move |&c| {
                    let new = last.is_none_or(|l| c > l);
                    if new {
                        last = Some(c);
                    }
                    new
                })
        };
        let needed_len = needed_cols().count();
        let needed = tables.table(needed_len, |t: &mut [u32]| {
            for (t, c) in t.iter_mut().zip(needed_cols()) {
                *t = c;
            }
        })?;
        // Column s + 1 follows column s in the list, so the pair stays adjacent.
        let packed_cols = tables.table(wx.len(), |t: &mut [(usize, [i32; 2])]| {
            for (t, d) in t.iter_mut().zip(wx.clone()) {
                let (s, w) = shifted(d);
                *t = (needed.partition_point(|&n| n < s as u32), w);
            }
        })?;
        let plan = Linear {
            cols,
            needed,
            needed_len,
            packed_cols,
            rows,
        };
        Ok((OpenCvPlan::Linear(plan), region))
    }

    /// The elements of each state buffer a run through `src` into a
    /// `dst_width`-wide image uses.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn state_sizes(
        &self,
        src_row: usize,
        src_rows: impl Fn(usize) -> usize,
        gather: impl Fn(usize) -> usize,
        cn: usize,
        src_width: u32,
        dst_width: u32,
    ) -> StateSizes {
        let (line, rows, sums, bytes) = match self {
            OpenCvPlan::Copy => (src_row, 0, 0, 0),
            // One sum per channel of every output column.
            OpenCvPlan::Linear(l) => (
                src_row.max(gather(l.needed_len)),
                dst_width as usize * cn,
                0,
                0,
            ),
            OpenCvPlan::AreaFast { fy, .. } => (src_rows(*fy), 0, 0, 0),
            OpenCvPlan::Area(_) => (
                src_rows(AREA_ROWS),
                0,
                dst_width as usize * cn,
                AREA_ROWS * src_width as usize * cn,
            ),
        };
        StateSizes {
            line,
            rows,
            sums,
            bytes,
        }
    }

    /// Makes room, fallibly, for everything a run through `src` into a
    /// `dst_width`-wide image writes to `state`: the run itself then never
    /// allocates (and caller memory too small is an error here).
    pub(super) fn reserve(
        &self,
        state: &mut OpenCvState<S>,
        bytes: &mut impl Scratch,
        src: &RowReader<'_>,
        dst_width: u32,
    ) -> Result<()> {
        let sizes = self.state_sizes(
            src.rows_scratch(1, false),
            |n| src.rows_scratch(n, false),
            |n| src.gather_scratch(n),
            src.bpp(),
            src.size().0,
            dst_width,
        );
        state.line.reserve(sizes.line)?;
        for r in &mut state.rows {
            r.reserve(sizes.rows)?;
        }
        state.sum.reserve(sizes.sums)?;
        bytes.reserve(sizes.bytes)
    }

    pub(super) fn run(
        &self,
        path: FloatPath,
        state: &mut OpenCvState<S>,
        bytes: &mut impl Scratch,
        src: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
    ) {
        let cn = src.bpp();
        let line = &mut state.line;
        match self {
            OpenCvPlan::Copy => {
                for (y, d) in dst.plane_rows_mut(0).enumerate() {
                    d.copy_from_slice(src.rows(y, 1, false, line).row(0));
                }
            }
            OpenCvPlan::Linear(l) => l.run(state, src, dst, cn),
            OpenCvPlan::AreaFast { fx, fy } => area_fast(src, line, dst, cn, *fx, *fy),
            OpenCvPlan::Area(a) => a.run(path != FloatPath::Portable, state, bytes, src, dst, cn),
        }
    }
}

/// `computeResizeAreaTab` for the outputs in `window` of one axis: the source
/// pixels each output pixel covers and their share of it, in double
/// precision, stored as float32.
struct AreaAxis {
    ssize: usize,
    scale: f64,
    window: core::ops::Range<usize>,
}

impl AreaAxis {
    fn new(ssize: usize, scale: f64, window: core::ops::Range<usize>) -> AreaAxis {
        AreaAxis {
            ssize,
            scale,
            window,
        }
    }

    /// Calls `f(destination, source, weight)` for every tap, in OpenCV's order.
    fn visit(&self, mut f: impl FnMut(usize, usize, f32)) {
        let (ssize, scale) = (self.ssize, self.scale);
        for dx in self.window.clone() {
            let fsx1 = dx as f64 * scale;
            let fsx2 = fsx1 + scale;
            let cell = scale.min(ssize as f64 - fsx1);
            let mut sx2 = libm::floor(fsx2) as isize;
            sx2 = sx2.min(ssize as isize - 1);
            let sx1 = (libm::ceil(fsx1) as isize).min(sx2);
            if sx1 as f64 - fsx1 > 1e-3 {
                f(dx, (sx1 - 1) as usize, ((sx1 as f64 - fsx1) / cell) as f32);
            }
            for sx in sx1..sx2 {
                f(dx, sx as usize, (1.0 / cell) as f32);
            }
            if fsx2 - sx2 as f64 > 1e-3 {
                let w = (fsx2 - sx2 as f64).min(1.0).min(cell) / cell;
                f(dx, sx2 as usize, w as f32);
            }
        }
    }

    /// Whether every output of the window has at least one tap (an area
    /// downscale's cells are at least a pixel wide, so it always does).
    fn covers_window(&self) -> bool {
        let mut columns = 0;
        let mut last = None;
        self.visit(|d, _, _| {
            if last != Some(d) {
                columns += 1;
                last = Some(d);
            }
        });
        columns == self.window.len()
    }

    /// The source range `[first, last)` the taps read (`0..1` if none).
    fn span(&self) -> (usize, usize) {
        let (mut s0, mut s1) = (usize::MAX, 0);
        self.visit(|_, s, _| {
            s0 = s0.min(s);
            s1 = s1.max(s + 1);
        });
        if s0 == usize::MAX { (0, 1) } else { (s0, s1) }
    }

    /// The taps, destination and source indices relative to the first of each.
    fn build<S: Storage>(
        &self,
        tables: &mut impl Tables<S>,
    ) -> Result<S::Table<(usize, usize, f32)>> {
        let mut n = 0;
        let mut d0 = None;
        self.visit(|d, _, _| {
            n += 1;
            d0.get_or_insert(d);
        });
        let (d0, s0) = (d0.unwrap_or(0), self.span().0);
        tables.table(n, |t: &mut [(usize, usize, f32)]| {
            let mut i = 0;
            self.visit(|d, s, w| {
                t[i] = (d - d0, s - s0, w);
                i += 1;
            });
        })
    }

    /// The taps as a fixed number of weights per output column, the most any
    /// column has, and the source pixel (relative to the span) each column's
    /// weights start at: a column's taps are consecutive pixels, and the
    /// kernel then runs the same loop for every column. The padding is zero
    /// weights, which add exactly nothing (every sum starts at +0 and no
    /// product is negative): after a column's taps, or before them where
    /// they end too close to the span's end.
    #[allow(clippy::type_complexity)]
    fn build_columns<S: Storage>(
        &self,
        tables: &mut impl Tables<S>,
    ) -> Result<(S::Table<u32>, S::Table<f32>, usize)> {
        let (s0, s1) = self.span();
        let (d0, columns) = (self.window.start, self.window.len());
        // Each column's first tap and count; the taps must be consecutive.
        let mut taps = 0;
        let (mut column, mut first, mut count, mut consecutive) = (usize::MAX, 0, 0, true);
        self.visit(|d, s, _| {
            if d != column {
                (column, first, count) = (d, s, 0);
            }
            consecutive &= s == first + count;
            count += 1;
            taps = usize::max(taps, count);
        });
        if !consecutive || taps > s1 - s0 {
            return Err(crate::Error::InvalidParameter {
                name: "resize",
                reason: "INTER_AREA's taps are not consecutive pixels",
            });
        }
        let start = |first: usize| (first - s0).min(s1 - s0 - taps);
        let starts = tables.table(columns, |t: &mut [u32]| {
            let mut column = usize::MAX;
            self.visit(|d, s, _| {
                if d != column {
                    column = d;
                    t[d - d0] = start(s) as u32;
                }
            });
        })?;
        let weights = tables.table(columns * taps, |t: &mut [f32]| {
            let (mut column, mut at) = (usize::MAX, 0);
            self.visit(|d, s, w| {
                if d != column {
                    column = d;
                    at = (d - d0) * taps + (s - s0 - start(s));
                }
                t[at] = w;
                at += 1;
            });
        })?;
        Ok((starts, weights, taps))
    }
}

impl<S: Storage> Linear<S> {
    fn run(
        &self,
        st: &mut OpenCvState<S>,
        src: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
        cn: usize,
    ) {
        let width = self.cols.len() * cn;
        // Converting rows: convert only the pixels read when they are under half the row.
        let gather = !src.is_direct() && self.needed.len() * 2 <= src.size().0 as usize;
        st.row_y = [usize::MAX; 2];
        for (dy, &([sy, sy1], [b0, b1])) in self.rows.iter().enumerate() {
            // Reuse rows already computed for the previous output row.
            if st.row_y[1] == sy {
                st.rows.swap(0, 1);
                st.row_y.swap(0, 1);
            }
            for (k, y) in [sy, sy1].into_iter().enumerate() {
                if st.row_y[k] != y {
                    let out = st.rows[k].grow(width);
                    if gather {
                        let row = src.gather(y, &self.needed, &mut st.line);
                        hresize(row, out, &self.packed_cols, cn);
                    } else {
                        let row = src.rows(y, 1, false, &mut st.line).row(0);
                        hresize(row, out, &self.cols, cn);
                    }
                    st.row_y[k] = y;
                }
            }
            let [r0, r1] = &mut st.rows;
            let (s0, s1) = (r0.grow(width), r1.grow(width));
            for ((d, &a), &c) in dst.plane_row_mut(0, dy).iter_mut().zip(&*s0).zip(&*s1) {
                let v = (((a >> 4) * b0) >> 16) + (((c >> 4) * b1) >> 16) + 2;
                *d = (v >> 2).clamp(0, 255) as u8;
            }
        }
    }
}

/// The horizontal pass of one row into 32-bit sums, for 1, 3 or 4 channels.
fn hresize(src: &[u8], out: &mut [i32], cols: &[(usize, [i32; 2])], cn: usize) {
    match cn {
        1 => hresize_n::<1>(src, out, cols),
        3 => hresize_n::<3>(src, out, cols),
        _ => hresize_n::<4>(src, out, cols),
    }
}

/// [`hresize`] with the channel count known at compile time. A column whose
/// second weight is 0 (at the right border) reads its own pixel twice instead
/// of a pixel past the row; the sum is the same.
#[inline(always)]
fn hresize_n<const CN: usize>(src: &[u8], out: &mut [i32], cols: &[(usize, [i32; 2])]) {
    let last = src.len().saturating_sub(CN);
    for (o, &(sx, [a0, a1])) in out.chunks_exact_mut(CN).zip(cols) {
        let i0 = sx * CN;
        let i1 = if a1 == 0 { i0 } else { i0 + CN }.min(last);
        let (p0, p1) = (&src[i0..i0 + CN], &src[i1..i1 + CN]);
        for k in 0..CN {
            o[k] = i32::from(p0[k]) * a0 + i32::from(p1[k]) * a1;
        }
    }
}

fn area_fast(
    src: &RowReader<'_>,
    line: &mut impl Scratch,
    dst: &mut ImageViewMut<'_>,
    cn: usize,
    fx: usize,
    fy: usize,
) {
    let scale = 1.0 / (fx * fy) as f32;
    for (dy, d) in dst.plane_rows_mut(0).enumerate() {
        let rows = src.rows(dy * fy, fy, false, line);
        for (dx, px) in d.chunks_exact_mut(cn).enumerate() {
            for (k, o) in px.iter_mut().enumerate() {
                let mut sum = 0u32;
                for y in 0..fy {
                    let row = rows.row(y);
                    for x in 0..fx {
                        sum += u32::from(row[(dx * fx + x) * cn + k]);
                    }
                }
                *o = if (fx, fy) == (2, 2) {
                    ((sum + 2) >> 2) as u8
                } else {
                    libm::rintf(sum as f32 * scale).clamp(0.0, 255.0) as u8
                };
            }
        }
    }
}

/// Source rows `INTER_AREA`'s horizontal pass takes at once, one per vector lane.
const AREA_ROWS: usize = 8;

impl<S: Storage> Area<S> {
    /// `resizeArea_`: per source row, the horizontal taps summed into a row
    /// buffer (`buf[dx] += src[sx] * alpha`, float32, in table order); per
    /// tap of the vertical table, the buffer added into the output row's sums
    /// (`sum += beta * buf`), each output row rounded when the next starts.
    /// The horizontal pass runs on [`AREA_ROWS`] rows at once, one row per
    /// lane, every lane doing exactly one row's operations in their order.
    /// `avx2`: the loops' AVX2 build may run (the plan's `Simd` is AVX2).
    fn run(
        &self,
        avx2: bool,
        st: &mut OpenCvState<S>,
        bytes: &mut impl Scratch,
        src: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
        cn: usize,
    ) {
        let width = dst.width() as usize * cn;
        let OpenCvState { line, sum, .. } = st;
        let sum = sum.grow(width);
        let src_len = src.size().0 as usize * cn;
        let bytes = bytes.grow(AREA_ROWS * src_len);
        sum.fill(0.0);
        let mut prev_dy = self.ytab.first().map_or(0, |t| t.0);
        let ytab: &[(usize, usize, f32)] = &self.ytab;
        let mut next = 0;
        let rows = src.size().1 as usize;
        for y0 in (0..rows).step_by(AREA_ROWS) {
            let m = AREA_ROWS.min(rows - y0);
            // The vertical taps reading this block's rows (none: skip it).
            let end = next + ytab[next..].partition_point(|&(_, sy, _)| sy < y0 + m);
            let Some(&(last_dy, _, _)) = ytab[next..end].last() else {
                continue;
            };
            let b = area_kernels::Block {
                x: (&self.xstart, &self.xweights, self.xtaps),
                rows: src.rows(y0, m, false, line),
                m,
                cn,
                v: area_kernels::Vertical {
                    taps: &ytab[next..end],
                    y0,
                    dy: prev_dy,
                },
            };
            area_kernels::block(avx2, &b, bytes, sum, dst);
            (next, prev_dy) = (end, last_dy);
        }
        let d = dst.plane_row_mut(0, prev_dy);
        for (o, &sum) in d.iter_mut().zip(sum.iter()) {
            *o = area_kernels::round(sum);
        }
    }
}

/// `INTER_AREA` over a block of [`AREA_ROWS`] source rows.
mod area_kernels {
    use super::AREA_ROWS;
    use crate::ImageViewMut;
    use crate::rows::Rows;

    /// The horizontal weights: per output column its first source pixel,
    /// then the weights of all columns, then how many each column has.
    pub(super) type Columns<'a> = (&'a [u32], &'a [f32], usize);

    /// A block: the horizontal weights, its `m` rows (of [`AREA_ROWS`]) of
    /// `cn` channels, and its vertical taps.
    pub(super) struct Block<'a> {
        pub(super) x: Columns<'a>,
        pub(super) rows: Rows<'a>,
        pub(super) m: usize,
        pub(super) cn: usize,
        pub(super) v: Vertical<'a>,
    }

    /// A block's vertical taps `(dy, sy, beta)` (all reading its rows), its
    /// first source row, and the output row being summed when they start.
    pub(super) struct Vertical<'a> {
        pub(super) taps: &'a [(usize, usize, f32)],
        pub(super) y0: usize,
        pub(super) dy: usize,
    }

    /// Output pixels whose horizontal sums are made and then used by the
    /// vertical taps at once: the sums of 8 rows stay in L1 (2 KiB at most).
    const CHUNK: usize = 16;

    /// One block: the `m` rows interleaved into `bytes` (byte `i` of row `r`
    /// at `AREA_ROWS * i + r`; a partial block repeats its last row), then,
    /// [`CHUNK`] output pixels at a time, their horizontal sums (one row per
    /// lane) and the vertical taps over them into `sum` and `dst`. Built for
    /// AVX2 when `avx2` (the plan's `Simd` is AVX2).
    pub(super) fn block(
        avx2: bool,
        b: &Block<'_>,
        bytes: &mut [u8],
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: `avx2` comes from a plan's available `Simd::Avx2`.
            return unsafe { block_avx2(b, bytes, sum, dst) };
        }
        let _ = avx2;
        block_body(b, bytes, sum, dst, vertical_body);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn block_avx2(b: &Block<'_>, bytes: &mut [u8], sum: &mut [f32], dst: &mut ImageViewMut<'_>) {
        // The closure inherits AVX2 from this function.
        let vertical =
            |acc: &[f32], v: &Vertical<'_>, x0, sum: &mut [f32], dst: &mut ImageViewMut<'_>| {
                vertical_avx2(acc, v, x0, sum, dst)
            };
        block_body(b, bytes, sum, dst, vertical);
    }

    /// The vertical pass over a chunk: its sums, the taps, the chunk's first
    /// value in the row, its values of the row's sums, the output.
    trait VerticalPass: Fn(&[f32], &Vertical<'_>, usize, &mut [f32], &mut ImageViewMut<'_>) {}
    impl<F: Fn(&[f32], &Vertical<'_>, usize, &mut [f32], &mut ImageViewMut<'_>)> VerticalPass for F {}

    #[inline(always)]
    fn block_body(
        b: &Block<'_>,
        bytes: &mut [u8],
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
        vertical: impl VerticalPass,
    ) {
        let (len, m) = (b.rows.len, b.m);
        let rows: [&[u8]; AREA_ROWS] = core::array::from_fn(|r| &b.rows.row(r.min(m - 1))[..len]);
        let bytes = &mut bytes[..len * AREA_ROWS];
        crate::resize::kernels::interleave8(&rows, bytes);
        let (x, v) = (b.x, &b.v);
        match b.cn {
            1 => chunks::<1>(x, bytes, v, sum, dst, vertical),
            3 => chunks::<3>(x, bytes, v, sum, dst, vertical),
            _ => chunks::<4>(x, bytes, v, sum, dst, vertical),
        }
    }

    #[inline(always)]
    fn chunks<const CN: usize>(
        (starts, weights, k): Columns<'_>,
        bytes: &[u8],
        v: &Vertical<'_>,
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
        vertical: impl VerticalPass,
    ) {
        let mut acc = [0f32; CHUNK * 4 * AREA_ROWS];
        for (c, starts) in starts.chunks(CHUNK).enumerate() {
            let (c0, n) = (c * CHUNK, starts.len());
            let acc = &mut acc[..n * CN * AREA_ROWS];
            taps::<CN>((starts, &weights[c0 * k..][..n * k], k), bytes, acc);
            let x0 = c0 * CN;
            vertical(acc, v, x0, &mut sum[x0..x0 + n * CN], dst);
        }
    }

    /// Each output column's weights (`x`: the columns' first source pixels,
    /// their weights, how many each) applied in order to the rows' pixels,
    /// summed in registers, then stored (value `x` of row `r` at
    /// `AREA_ROWS * x + r`). A plain multiply and add per tap, as OpenCV (no
    /// fused multiply-add: Rust never contracts). The bytes become floats as
    /// they are read (exactly: every byte is a float).
    #[inline(always)]
    fn taps<const CN: usize>((starts, weights, k): Columns<'_>, t: &[u8], acc: &mut [f32]) {
        let columns = starts.iter().zip(weights.chunks_exact(k));
        for ((&start, w), o) in columns.zip(acc.chunks_exact_mut(CN * AREA_ROWS)) {
            let px = &t[start as usize * CN * AREA_ROWS..][..k * CN * AREA_ROWS];
            let mut sums = [[0f32; AREA_ROWS]; CN];
            for (&alpha, px) in w.iter().zip(px.chunks_exact(CN * AREA_ROWS)) {
                for (sum, s) in sums.iter_mut().zip(px.chunks_exact(AREA_ROWS)) {
                    for (o, &s) in sum.iter_mut().zip(s) {
                        *o += f32::from(s) * alpha;
                    }
                }
            }
            for (o, sum) in o.chunks_exact_mut(AREA_ROWS).zip(&sums) {
                o.copy_from_slice(sum);
            }
        }
    }

    /// `saturate_cast<uchar>`: round half to even, clamp.
    #[inline(always)]
    pub(super) fn round(v: f32) -> u8 {
        crate::math::rintf(v).clamp(0.0, 255.0) as u8
    }

    /// The vertical taps over `acc`, a chunk's interleaved sums (its values
    /// from `x0` on in the row): per tap, `sum += beta * row`, or, when the
    /// tap starts a new output row, the finished row rounded from `sum` into
    /// `dst` first and `sum` restarted as `beta * row`. Eight values at a
    /// time, their sums kept in registers across the taps.
    fn vertical_body(
        acc: &[f32],
        v: &Vertical<'_>,
        x0: usize,
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
    ) {
        let full = sum.len() / 8 * 8;
        for x in (0..full).step_by(8) {
            vertical_values::<8>(acc, v, x0, x, sum, dst);
        }
        for x in full..sum.len() {
            vertical_values::<1>(acc, v, x0, x, sum, dst);
        }
    }

    /// [`vertical_body`] for the chunk's `N` values from `x` on.
    #[inline(always)]
    fn vertical_values<const N: usize>(
        acc: &[f32],
        v: &Vertical<'_>,
        x0: usize,
        x: usize,
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
    ) {
        // Value `x + j` of the block's row `r` at `AREA_ROWS * (x + j) + r`.
        let a = &acc[AREA_ROWS * x..][..AREA_ROWS * N];
        let rows: [[f32; N]; AREA_ROWS] =
            core::array::from_fn(|r| core::array::from_fn(|j| a[AREA_ROWS * j + r]));
        let sum = &mut sum[x..x + N];
        let mut s: [f32; N] = core::array::from_fn(|j| sum[j]);
        let mut dy = v.dy;
        for &(tap_dy, sy, beta) in v.taps {
            let row = &rows[sy - v.y0];
            if tap_dy != dy {
                let d = &mut dst.plane_row_mut(0, dy)[x0 + x..][..N];
                for ((o, s), &b) in d.iter_mut().zip(s.iter_mut()).zip(row) {
                    *o = round(*s);
                    *s = beta * b;
                }
                dy = tap_dy;
            } else {
                for (s, &b) in s.iter_mut().zip(row) {
                    *s += beta * b;
                }
            }
        }
        sum.copy_from_slice(&s);
    }

    /// [`vertical_body`] with AVX2: eight values' block rows transposed out
    /// of their lanes, their sums kept in registers across the taps, and
    /// rounded by the conversion's round-half-to-even and the packs' clamp.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    fn vertical_avx2(
        acc: &[f32],
        v: &Vertical<'_>,
        x0: usize,
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
    ) {
        let (pairs, full) = (sum.len() / 16 * 16, sum.len() / 8 * 8);
        for x in (0..pairs).step_by(16) {
            vertical_avx2_at::<2>(acc, v, x0, x, sum, dst);
        }
        for x in (pairs..full).step_by(8) {
            vertical_avx2_at::<1>(acc, v, x0, x, sum, dst);
        }
        for x in full..sum.len() {
            vertical_values::<1>(acc, v, x0, x, sum, dst);
        }
    }

    /// [`vertical_avx2`] for the chunk's `8 * G` values from `x` on: `G`
    /// independent sums per tap, the tap's bookkeeping shared.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    fn vertical_avx2_at<const G: usize>(
        acc: &[f32],
        v: &Vertical<'_>,
        x0: usize,
        x: usize,
        sum: &mut [f32],
        dst: &mut ImageViewMut<'_>,
    ) {
        use core::arch::x86_64::*;
        // The rows through memory (an array of registers indexed per tap
        // would become a jump table): group `g`'s row `r` from `64 * g + 8 * r`.
        let mut rows = [[0f32; 8 * AREA_ROWS]; G];
        for (g, rows) in rows.iter_mut().enumerate() {
            let a = &acc[AREA_ROWS * (x + 8 * g)..][..AREA_ROWS * 8];
            // SAFETY: `a` holds 64 floats, eight loads of eight.
            let v: [__m256; 8] =
                core::array::from_fn(|j| unsafe { _mm256_loadu_ps(a[8 * j..].as_ptr()) });
            for (r, v) in transpose8(v).into_iter().enumerate() {
                // SAFETY: `rows` holds eight floats from `8 * r` on.
                unsafe { _mm256_storeu_ps(rows[8 * r..][..8].as_mut_ptr(), v) };
            }
        }
        let s = &mut sum[x..x + 8 * G];
        // SAFETY: `s` holds `8 * G` floats, `G` loads of eight.
        let mut sums: [__m256; G] =
            core::array::from_fn(|g| unsafe { _mm256_loadu_ps(s[8 * g..].as_ptr()) });
        let mut dy = v.dy;
        for &(tap_dy, sy, beta) in v.taps {
            let r = 8 * (sy - v.y0);
            let beta = _mm256_set1_ps(beta);
            let terms: [__m256; G] = core::array::from_fn(|g| {
                let row = &rows[g][r..][..8];
                // SAFETY: `row` is exactly eight floats.
                _mm256_mul_ps(beta, unsafe { _mm256_loadu_ps(row.as_ptr()) })
            });
            if tap_dy != dy {
                let d = &mut dst.plane_row_mut(0, dy)[x0 + x..][..8 * G];
                for (d, sum) in d.chunks_exact_mut(8).zip(sums) {
                    let i = _mm256_cvtps_epi32(sum);
                    let w = _mm_packus_epi32(
                        _mm256_castsi256_si128(i),
                        _mm256_extracti128_si256::<1>(i),
                    );
                    // SAFETY: `d` is exactly eight bytes.
                    unsafe { _mm_storel_epi64(d.as_mut_ptr().cast(), _mm_packus_epi16(w, w)) };
                }
                sums = terms;
                dy = tap_dy;
            } else {
                for (sum, term) in sums.iter_mut().zip(terms) {
                    *sum = _mm256_add_ps(*sum, term);
                }
            }
        }
        for (s, sum) in s.chunks_exact_mut(8).zip(sums) {
            // SAFETY: `s` is exactly eight floats.
            unsafe { _mm256_storeu_ps(s.as_mut_ptr(), sum) };
        }
    }

    /// An 8x8 transpose: `v[j]` lane `r` to lane `j` of the result's `r`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn transpose8(v: [core::arch::x86_64::__m256; 8]) -> [core::arch::x86_64::__m256; 8] {
        use core::arch::x86_64::*;
        let a0 = _mm256_unpacklo_ps(v[0], v[1]);
        let a1 = _mm256_unpackhi_ps(v[0], v[1]);
        let a2 = _mm256_unpacklo_ps(v[2], v[3]);
        let a3 = _mm256_unpackhi_ps(v[2], v[3]);
        let a4 = _mm256_unpacklo_ps(v[4], v[5]);
        let a5 = _mm256_unpackhi_ps(v[4], v[5]);
        let a6 = _mm256_unpacklo_ps(v[6], v[7]);
        let a7 = _mm256_unpackhi_ps(v[6], v[7]);
        let b0 = _mm256_shuffle_ps::<0x44>(a0, a2);
        let b1 = _mm256_shuffle_ps::<0xEE>(a0, a2);
        let b2 = _mm256_shuffle_ps::<0x44>(a1, a3);
        let b3 = _mm256_shuffle_ps::<0xEE>(a1, a3);
        let b4 = _mm256_shuffle_ps::<0x44>(a4, a6);
        let b5 = _mm256_shuffle_ps::<0xEE>(a4, a6);
        let b6 = _mm256_shuffle_ps::<0x44>(a5, a7);
        let b7 = _mm256_shuffle_ps::<0xEE>(a5, a7);
        [
            _mm256_permute2f128_ps::<0x20>(b0, b4),
            _mm256_permute2f128_ps::<0x20>(b1, b5),
            _mm256_permute2f128_ps::<0x20>(b2, b6),
            _mm256_permute2f128_ps::<0x20>(b3, b7),
            _mm256_permute2f128_ps::<0x31>(b0, b4),
            _mm256_permute2f128_ps::<0x31>(b1, b5),
            _mm256_permute2f128_ps::<0x31>(b2, b6),
            _mm256_permute2f128_ps::<0x31>(b3, b7),
        ]
    }
}
