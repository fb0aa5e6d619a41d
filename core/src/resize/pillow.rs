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

use super::coeffs::{Axis, AxisShape, Quantize};
use super::kernels::{self, Simd};
use super::{Filter, ResizeStateIn, SourceBox};
use crate::arena::{Scratch, Storage, Tables};
use crate::rows::{RowReader, Rows, premultiply, unpremultiply, unpremultiply_fir};
use crate::{ImageViewMut, Limits, Rect, Result};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum PillowPlan<S: Storage> {
    /// Output pixel `(x, y)` is region pixel `(x, y)`. With `roundtrip`, RGBA
    /// goes through Pillow's premultiply and back (it crops the `RGBa` image
    /// unless nothing changes at all).
    Copy {
        roundtrip: bool,
    },
    /// Region column and row per output column and row; `u32::MAX` is outside
    /// the source and stays 0, as in Pillow.
    Nearest {
        xs: S::Table<u32>,
        ys: S::Table<u32>,
    },
    Convolve(Convolve<S>),
}

/// The two convolution passes, each `None` where Pillow skips it (the region is
/// then already the right columns or rows). Starts count from the region's origin.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Convolve<S: Storage> {
    h: Option<Axis<S>>,
    v: Option<Axis<S>>,
    vertical_first: bool,
    /// Alpha is divided back as `fast_image_resize` does, not as Pillow does.
    fir_alpha: bool,
}

/// Which passes a plan runs: all its scratch depends on.
#[derive(Clone, Copy, Debug)]
pub(super) struct Passes {
    convolve: bool,
    h: bool,
    v: bool,
    vertical_first: bool,
    /// Taps of the vertical kernel (its widest output).
    v_ksize: usize,
}

/// A Pillow plan before its tables are filled: what they will hold, their
/// sizes and the source region read. Heap and arena plans are built from it.
#[derive(Clone, Debug)]
pub(super) struct PillowShape {
    kind: ShapeKind,
    region: Rect,
}

#[derive(Clone, Debug)]
enum ShapeKind {
    Copy {
        roundtrip: bool,
    },
    Nearest {
        x: NearestAxis,
        y: NearestAxis,
    },
    Convolve {
        h: Option<AxisShape>,
        v: Option<AxisShape>,
        vertical_first: bool,
        fir_alpha: bool,
    },
}

impl PillowShape {
    /// The plan for outputs `window` of the full `(dw, dh)` result, and the
    /// source region it reads.
    pub(super) fn new(
        (sw, sh): (u32, u32),
        bx: SourceBox,
        (dw, dh): (u32, u32),
        window: Rect,
        filter: Filter,
        Arithmetic { quantize, nearest }: Arithmetic,
        limits: &Limits,
    ) -> Result<PillowShape> {
        let (wx, wy) = (
            window.x..window.x + window.width,
            window.y..window.y + window.height,
        );
        let integral = |v: f32| v == libm::truncf(v);
        let fir = quantize == Quantize::Fir;
        // `_resize`'s crop test, per axis (fast_image_resize's box is in f64).
        let is_crop = |b0: f32, b1: f32, d: u32| {
            integral(b0)
                && if fir {
                    f64::from(b1) - f64::from(b0) == f64::from(d)
                } else {
                    b1 - b0 == d as f32
                }
        };
        let x_is_crop = is_crop(bx.x0, bx.x1, dw);
        let y_is_crop = is_crop(bx.y0, bx.y1, dh);
        if (bx == SourceBox::full(sw, sh) && (sw, sh) == (dw, dh)) || (x_is_crop && y_is_crop) {
            let region = Rect::new(
                bx.x0 as u32 + window.x,
                bx.y0 as u32 + window.y,
                window.width,
                window.height,
            );
            // fast_image_resize copies before it multiplies alpha in.
            let roundtrip = (sw, sh) != (dw, dh) && !fir;
            let kind = ShapeKind::Copy { roundtrip };
            return Ok(PillowShape { kind, region });
        }
        if filter == Filter::Nearest {
            let x = NearestAxis::new(bx.x0, bx.x1, dw, sw, wx, nearest);
            let y = NearestAxis::new(bx.y0, bx.y1, dh, sh, wy, nearest.for_rows());
            let ((x0, x1), (y0, y1)) = (x.span(), y.span());
            let region = Rect::new(x0, y0, x1 - x0, y1 - y0);
            let kind = ShapeKind::Nearest { x, y };
            return Ok(PillowShape { kind, region });
        }
        let axis = |size, b0, b1, out, range| {
            AxisShape::new(size, b0, b1, out, range, filter, quantize, limits)
        };
        // PyTorch always runs the horizontal pass first, Pillow unless the
        // image is very tall (see `pillow_passes`).
        let (need_h, need_v, vertical_first) = if fir {
            // A pass wherever the size changes or the box starts between
            // pixels; columns first when both run, as it does for u8.
            let (h, v) = (!x_is_crop, !y_is_crop);
            (h, v, h && v)
        } else {
            let vertical_first =
                quantize == Quantize::Pillow && sh > sw.saturating_mul(100) && dh < sh;
            let (h, v) = Self::pillow_passes(
                vertical_first,
                (sw, sh),
                bx,
                (dw, dh),
                (x_is_crop, y_is_crop),
            );
            (h, v, vertical_first)
        };
        let h = need_h
            .then(|| axis(sw, bx.x0, bx.x1, dw, wx.clone()))
            .transpose()?;
        let v = need_v
            .then(|| axis(sh, bx.y0, bx.y1, dh, wy.clone()))
            .transpose()?;
        // A skipped pass reads the window's own columns (rows) from the box's origin.
        let from = |b0: f32, w: &core::ops::Range<u32>| {
            let start = b0 as usize + w.start as usize;
            (start, start + w.len())
        };
        let (x0, x1) = h.as_ref().map_or(from(bx.x0, &wx), AxisShape::span);
        let (y0, y1) = v.as_ref().map_or(from(bx.y0, &wy), AxisShape::span);
        let region = Rect::new(x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32);
        let kind = ShapeKind::Convolve {
            h,
            v,
            vertical_first,
            fir_alpha: fir,
        };
        Ok(PillowShape { kind, region })
    }

    /// Which passes Pillow runs: `_resize` splits images more than 100 times
    /// taller than wide into two calls, each possibly a crop; otherwise
    /// (`ImagingResampleInner`) a pass runs where the size or the box changes.
    fn pillow_passes(
        vertical_first: bool,
        (sw, sh): (u32, u32),
        bx: SourceBox,
        (dw, dh): (u32, u32),
        (x_is_crop, y_is_crop): (bool, bool),
    ) -> (bool, bool) {
        if vertical_first {
            (!x_is_crop, !y_is_crop)
        } else {
            (
                dw != sw || bx.x0 != 0.0 || bx.x1 != dw as f32,
                dh != sh || bx.y0 != 0.0 || bx.y1 != dh as f32,
            )
        }
    }

    /// The source region the plan reads.
    pub(super) fn region(&self) -> Rect {
        self.region
    }

    /// The passes the plan runs.
    pub(super) fn passes(&self) -> Passes {
        match &self.kind {
            ShapeKind::Convolve {
                h,
                v,
                vertical_first,
                ..
            } => Passes::convolve(
                h.is_some(),
                v.as_ref().map(AxisShape::ksize),
                *vertical_first,
            ),
            _ => Passes::ONE_ROW,
        }
    }

    /// The plan, its tables filled from `tables`; starts count from the region's origin.
    pub(super) fn build<S: Storage>(&self, tables: &mut impl Tables<S>) -> Result<PillowPlan<S>> {
        let (x0, y0) = (self.region.x, self.region.y);
        Ok(match &self.kind {
            ShapeKind::Copy { roundtrip } => PillowPlan::Copy {
                roundtrip: *roundtrip,
            },
            ShapeKind::Nearest { x, y } => PillowPlan::Nearest {
                xs: x.build(x0, tables)?,
                ys: y.build(y0, tables)?,
            },
            ShapeKind::Convolve {
                h,
                v,
                vertical_first,
                fir_alpha,
            } => PillowPlan::Convolve(Convolve {
                h: h.as_ref()
                    .map(|a| a.build(x0 as usize, tables))
                    .transpose()?,
                v: v.as_ref()
                    .map(|a| a.build(y0 as usize, tables))
                    .transpose()?,
                vertical_first: *vertical_first,
                fir_alpha: *fir_alpha,
            }),
        })
    }
}

/// Pillow's resize of `F` (float32) images: the same passes as for 8-bit
/// ones, with the unquantized `f64` weights, summed in `f64`
/// (`ImagingResampleHorizontal_32bpc`); first indices relative to the
/// shape's region.
#[cfg(feature = "resize-float")]
#[derive(Clone, Debug)]
pub(super) enum F64Plan {
    /// The region is the output.
    Copy,
    /// Source column and row per output (`u32::MAX`: outside, zero).
    Nearest {
        xs: alloc::vec::Vec<u32>,
        ys: alloc::vec::Vec<u32>,
    },
    Convolve {
        h: Option<super::coeffs::F64Axis>,
        v: Option<super::coeffs::F64Axis>,
        vertical_first: bool,
    },
}

#[cfg(feature = "resize-float")]
impl PillowShape {
    /// The plan for float32 images of this shape.
    pub(super) fn build_f64(&self) -> F64Plan {
        let (x0, y0) = (self.region.x, self.region.y);
        match &self.kind {
            ShapeKind::Copy { .. } => F64Plan::Copy,
            ShapeKind::Nearest { x, y } => F64Plan::Nearest {
                xs: x.relative(x0).collect(),
                ys: y.relative(y0).collect(),
            },
            ShapeKind::Convolve {
                h,
                v,
                vertical_first,
                ..
            } => F64Plan::Convolve {
                h: h.as_ref().map(|a| a.build_f64(x0 as usize)),
                v: v.as_ref().map(|a| a.build_f64(y0 as usize)),
                vertical_first: *vertical_first,
            },
        }
    }
}

impl Passes {
    /// A copy or nearest sampling: one row at a time, no other scratch.
    const ONE_ROW: Passes = Passes {
        convolve: false,
        h: false,
        v: false,
        vertical_first: false,
        v_ksize: 0,
    };

    fn convolve(h: bool, v_ksize: Option<usize>, vertical_first: bool) -> Passes {
        Passes {
            convolve: true,
            h,
            v: v_ksize.is_some(),
            vertical_first,
            v_ksize: v_ksize.unwrap_or(0),
        }
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
        if !self.convolve {
            return [0, rows_scratch(1), 0]; // one row at a time
        }
        let between = match (self.vertical_first, self.h, self.v) {
            (true, _, true) => dh.min(8) * rw * bpp,
            // The streaming window (see `h_then_v`).
            (false, true, true) => window_rows(self.v_ksize, rh as usize) as u64 * dw * bpp,
            _ => 0,
        };
        // The rows read through the reader at once: the whole region for a
        // vertical pass over the source (the rows the window needs if it is
        // skipped), else blocks of eight for the horizontal pass.
        let at_once = match (self.vertical_first, self.h, self.v) {
            (true, _, true) | (false, false, true) => rh,
            (true, _, false) => dh,
            (false, true, _) => 8.min(rh),
            (false, false, false) => 1,
        };
        let rows = rows_scratch(at_once as usize);
        let block = if self.h { 8 * bpp * (rw + dw) + 32 } else { 0 };
        [between, rows, block]
    }
}

impl<S: Storage> PillowPlan<S> {
    /// The passes the plan runs.
    pub(super) fn passes(&self) -> Passes {
        match self {
            PillowPlan::Convolve(c) => Passes::convolve(
                c.h.is_some(),
                c.v.as_ref().map(|v| v.ksize),
                c.vertical_first,
            ),
            _ => Passes::ONE_ROW,
        }
    }

    /// Resizes the plan's region, read through `input`, into `dst`.
    pub(super) fn run(
        &self,
        simd: Simd,
        state: &mut ResizeStateIn<S>,
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
                for (d, &sy) in dst.plane_rows_mut(0).zip(ys.iter()) {
                    if sy == u32::MAX {
                        d.fill(0);
                        continue;
                    }
                    let row = input.rows(sy as usize, 1, false, scratch).row(0);
                    for (o, &sx) in d.chunks_exact_mut(bpp).zip(xs.iter()) {
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

/// Whose arithmetic a plan of Pillow's shape reproduces: how its weights
/// are quantized and how its nearest sampling indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Arithmetic {
    pub(super) quantize: Quantize,
    pub(super) nearest: NearestIndex,
}

impl Arithmetic {
    /// Pillow's own.
    pub(super) const PILLOW: Arithmetic = Arithmetic {
        quantize: Quantize::Pillow,
        nearest: NearestIndex::Pillow,
    };
    /// `fast_image_resize`'s.
    pub(super) const FIR: Arithmetic = Arithmetic {
        quantize: Quantize::Fir,
        nearest: NearestIndex::FirColumns,
    };
}

/// How a nearest resize picks its source index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NearestIndex {
    /// Pillow's `ImagingScaleAffine`: positions accumulated in `f64` from
    /// `box0 + step / 2`, truncated, out-of-range ones marked.
    Pillow,
    /// PyTorch's `mode="nearest"` (`nearest_idx`, the whole source): `i` for
    /// the same size, `i >> 1` for twice it, else `min(floor(i * scale), in - 1)`
    /// with `scale = in / out` in float32.
    #[cfg_attr(not(feature = "resize-torch"), allow(dead_code))]
    Torch,
    /// PyTorch's `mode="nearest-exact"`: `min(floorf((i + 0.5) * scale), in - 1)`,
    /// the product in double, rounded to float32 before the floor.
    #[cfg_attr(not(feature = "resize-torch"), allow(dead_code))]
    TorchExact,
    /// `fast_image_resize`'s `ResizeAlg::Nearest` across a row: `box0 +
    /// step / 2 + step * i` truncated, `step` from the box's `f64` width.
    FirColumns,
    /// The same down the rows, where the position is accumulated as Pillow's
    /// is (`iter_rows_with_step`).
    FirRows,
}

impl NearestIndex {
    /// The rule for the rows of an image whose columns take this one.
    fn for_rows(self) -> NearestIndex {
        match self {
            NearestIndex::FirColumns => NearestIndex::FirRows,
            n => n,
        }
    }
}

/// The source index per output index in a window ([`NearestIndex`]).
#[derive(Clone, Debug)]
struct NearestAxis {
    b0: f32,
    step: f64,
    in_size: u32,
    out: u32,
    window: core::ops::Range<u32>,
    rule: NearestIndex,
}

impl NearestAxis {
    fn new(
        b0: f32,
        b1: f32,
        out: u32,
        in_size: u32,
        window: core::ops::Range<u32>,
        rule: NearestIndex,
    ) -> Self {
        let length = match rule {
            NearestIndex::FirColumns | NearestIndex::FirRows => f64::from(b1) - f64::from(b0),
            _ => f64::from(b1 - b0),
        };
        let step = length / f64::from(out);
        NearestAxis {
            b0,
            step,
            in_size,
            out,
            window,
            rule,
        }
    }

    /// The source index of every output index in the window (`u32::MAX` outside).
    fn positions(&self) -> impl Iterator<Item = u32> + Clone + '_ {
        let mut pos = f64::from(self.b0) + self.step * 0.5;
        let scale = self.in_size as f32 / self.out as f32;
        let last = i64::from(self.in_size) - 1;
        (0..self.window.end)
            .map(move |o| {
                let i = match self.rule {
                    NearestIndex::Torch if self.out == self.in_size => i64::from(o),
                    NearestIndex::Torch if u64::from(self.out) == 2 * u64::from(self.in_size) => {
                        i64::from(o >> 1)
                    }
                    NearestIndex::Torch => (libm::floorf(o as f32 * scale) as i64).min(last),
                    NearestIndex::TorchExact => {
                        let at = ((f64::from(o) + 0.5) * f64::from(scale)) as f32;
                        (libm::floorf(at) as i64).min(last)
                    }
                    NearestIndex::Pillow | NearestIndex::FirRows if pos < 0.0 => -1,
                    NearestIndex::Pillow | NearestIndex::FirRows => pos as i64,
                    NearestIndex::FirColumns => {
                        let start = f64::from(self.b0) + self.step * 0.5;
                        (start + self.step * f64::from(o)) as i64
                    }
                };
                pos += self.step;
                if (0..i64::from(self.in_size)).contains(&i) {
                    i as u32
                } else {
                    u32::MAX
                }
            })
            .skip(self.window.start as usize)
    }

    /// The positions relative to `first` (`u32::MAX` stays outside).
    fn relative(&self, first: u32) -> impl Iterator<Item = u32> + '_ {
        self.positions()
            .map(move |p| if p == u32::MAX { p } else { p - first })
    }

    /// The range the valid positions span (`0..1` if every one is outside the source).
    fn span(&self) -> (u32, u32) {
        let valid = self.positions().filter(|&p| p != u32::MAX);
        let first = valid.clone().min().unwrap_or(0);
        let last = valid.max().map_or(first + 1, |p| p + 1);
        (first, last)
    }

    /// The positions relative to `first`.
    fn build<S: Storage>(&self, first: u32, tables: &mut impl Tables<S>) -> Result<S::Table<u32>> {
        tables.table(self.window.len(), |t: &mut [u32]| {
            for (t, p) in t.iter_mut().zip(self.relative(first)) {
                *t = p;
            }
        })
    }
}

#[cfg(feature = "alloc")]
impl PillowPlan<crate::arena::Heap> {
    /// Gives the plan's tables up for reuse (beyond the pools' room they are freed).
    pub(super) fn into_pools(self, pools: &mut crate::arena::Pools) {
        match self {
            PillowPlan::Copy { .. } => {}
            PillowPlan::Nearest { xs, ys } => {
                pools.give(xs);
                pools.give(ys);
            }
            PillowPlan::Convolve(c) => {
                for axis in [c.h, c.v].into_iter().flatten() {
                    axis.into_pools(pools);
                }
            }
        }
    }
}

/// Where the horizontal pass reads: the source through its reader (converted or
/// premultiplied per block of rows when needed), or rows already in memory.
enum HInput<'r, 'a, B: Scratch> {
    Reader {
        reader: &'r RowReader<'a>,
        premultiplied: bool,
        scratch: &'r mut B,
    },
    Rows(Rows<'r>),
}

/// The horizontal pass of input rows `first..first + count` into `out`, rows
/// `stride` apart, eight rows per kernel call.
#[allow(clippy::too_many_arguments)]
fn h_pass<B: Scratch>(
    simd: Simd,
    bpp: usize,
    h: &super::coeffs::Taps<'_>,
    input: &mut HInput<'_, '_, B>,
    first: usize,
    count: usize,
    out: &mut [u8],
    stride: usize,
    block: &mut impl Scratch,
) {
    let row_len = h.outputs() * bpp;
    for y0 in (0..count).step_by(8) {
        let m = 8.min(count - y0);
        let rows = match input {
            HInput::Reader {
                reader,
                premultiplied,
                scratch,
            } => reader.rows(first + y0, m, *premultiplied, *scratch),
            HInput::Rows(r) => r.from(first + y0),
        };
        let o = &mut out[y0 * stride..(y0 + m - 1) * stride + row_len];
        kernels::h_block(simd, bpp, &rows, m, o, stride, h, block);
    }
}

/// Rows of horizontal-pass output the vertical pass keeps at once: its
/// widest kernel and a block of eight new rows (all of them, if fewer).
fn window_rows(v_ksize: usize, rows: usize) -> usize {
    (v_ksize + 8).min(rows)
}

/// Horizontal then vertical, streaming: the horizontal pass's rows are made
/// as the vertical pass first needs them, into a window of
/// [`window_rows`] rows from which rows no longer needed are dropped. The same
/// integer sums as a whole intermediate image, in a few rows of memory.
#[allow(clippy::too_many_arguments)]
fn h_then_v<B: Scratch>(
    simd: Simd,
    bpp: usize,
    h: &super::coeffs::Taps<'_>,
    v: &super::coeffs::Taps<'_>,
    v_ksize: usize,
    mut input: HInput<'_, '_, B>,
    rows: usize,
    window: &mut impl Scratch,
    block: &mut impl Scratch,
    dst: &mut ImageViewMut<'_>,
) {
    let len = h.outputs() * bpp;
    let cap = window_rows(v_ksize, rows);
    let buf = window.grow(cap * len);
    // Window row `i` holds horizontal-pass row `base + i`, for `i < filled`.
    let (mut base, mut filled) = (0usize, 0usize);
    for (y, d) in dst.plane_rows_mut(0).enumerate() {
        let (start, k) = v.at(y);
        // Starts never decrease: rows before this one are done with.
        if start > base {
            let drop = (start - base).min(filled);
            buf.copy_within(drop * len..filled * len, 0);
            filled -= drop;
            base = start;
        }
        while base + filled < start + k.len() {
            let first = base + filled;
            let m = 8.min(rows - first).min(cap - filled);
            let out = &mut buf[filled * len..(filled + m) * len];
            h_pass(simd, bpp, h, &mut input, first, m, out, len, block);
            filled += m;
        }
        let mid = Rows {
            data: buf,
            stride: len,
            len,
        };
        kernels::v_row(simd, &mid, start - base, k, v.narrow(), d);
    }
}

impl<S: Storage> Convolve<S> {
    fn run(
        &self,
        simd: Simd,
        state: &mut ResizeStateIn<S>,
        input: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
        alpha: bool,
    ) {
        let bpp = input.bpp();
        let (rw, rh) = input.size();
        let (rw, rh) = (rw as usize, rh as usize);
        let (dw, dh) = (dst.width() as usize, dst.height() as usize);
        let ResizeStateIn {
            between,
            premultiplied,
            block,
            ..
        } = state;
        let stride = dst.stride(0);
        if self.vertical_first {
            // Vertical (or a row crop) into region-wide rows, then horizontal
            // (or a column crop), eight output rows at a time so that the
            // rows between the passes stay in cache.
            let src = input.rows(
                0,
                if self.v.is_some() { rh } else { dh },
                alpha,
                premultiplied,
            );
            let len = rw * bpp;
            let out = dst.plane_data_mut(0);
            for y0 in (0..dh).step_by(8) {
                let m = 8.min(dh - y0);
                let mid = match &self.v {
                    Some(v) => {
                        let rows = between.grow(m * len);
                        for (i, o) in rows.chunks_exact_mut(len).enumerate() {
                            let (start, k) = v.taps().at(y0 + i);
                            kernels::v_row(simd, &src, start, k, v.taps().narrow(), o);
                        }
                        Rows {
                            data: rows,
                            stride: len,
                            len,
                        }
                    }
                    None => src.from(y0),
                };
                let out = &mut out[y0 * stride..];
                match &self.h {
                    Some(h) => {
                        let mut mid = HInput::<S::Scratch<u8>>::Rows(mid);
                        h_pass(simd, bpp, &h.taps(), &mut mid, 0, m, out, stride, block);
                    }
                    None => {
                        for i in 0..m {
                            out[i * stride..][..dw * bpp].copy_from_slice(&mid.row(i)[..dw * bpp]);
                        }
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
                    let mut reader = reader;
                    h_pass(simd, bpp, &h.taps(), &mut reader, 0, dh, out, stride, block);
                }
                (Some(h), Some(v)) => h_then_v(
                    simd,
                    bpp,
                    &h.taps(),
                    &v.taps(),
                    v.ksize,
                    reader,
                    rh,
                    between,
                    block,
                    dst,
                ),
                (None, v) => {
                    // Only the vertical pass (a plan never skips both: that is a copy).
                    let src = input.rows(0, rh, alpha, premultiplied);
                    for (y, d) in dst.plane_rows_mut(0).enumerate() {
                        match v {
                            Some(v) => {
                                let (start, k) = v.taps().at(y);
                                kernels::v_row(simd, &src, start, k, v.taps().narrow(), d);
                            }
                            None => d.copy_from_slice(src.row(y)),
                        }
                    }
                }
            }
        }
        if alpha {
            let divide = if self.fir_alpha {
                unpremultiply_fir
            } else {
                unpremultiply
            };
            for d in dst.plane_rows_mut(0) {
                d.chunks_exact_mut(4).for_each(divide);
            }
        }
    }
}
