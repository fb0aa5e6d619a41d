//! PyTorch's antialiased resize of float32 images, bit for bit, rounded back
//! to 8 bits as torchvision does when it resizes a `uint8` tensor through
//! float32 (`interpolate` on the converted tensor, then `clamp_`, `round_`).
//!
//! This is `separable_upsample_generic_Nd_kernel_impl` with `scalar_t =
//! float`: per axis, weights computed in float32 from a float32 scale
//! (`_compute_indices_min_size_weights_aa`), the horizontal pass first, then
//! the vertical one on its float32 result, each only where the size changes.
//! PyTorch's x86 (AVX2, AVX-512) and aarch64 builds contract its
//! multiply-adds into fused ones: in the filter polynomials and in every
//! tap of the sums (`output = t0 * w0; output += t * w`). This module does
//! the same, so its floats are PyTorch's (checked against PyTorch itself in
//! `tests/fixtures/make_torch_fixtures.py`); its portable `DEFAULT` build
//! rounds each product and lands within a float32 ulp of them.

use super::Filter;
use super::kernels::FloatPath;
#[cfg(feature = "alloc")]
use crate::arena::Heap;
use crate::arena::{Scratch, Storage, Tables};
use crate::math::{fmaf, rintf};
use crate::rows::RowReader;
use crate::{ImageViewMut, Limits, Rect, Result};

/// One axis's float32 weights: per output, the first source index and its taps.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct FloatAxis<S: Storage> {
    ksize: usize,
    bounds: S::Table<(u32, u32)>,
    weights: S::Table<f32>,
}

impl<S: Storage> FloatAxis<S> {
    /// Output `i`: first source index (relative to the region) and its weights.
    #[inline(always)]
    pub(super) fn at(&self, i: usize) -> (usize, &[f32]) {
        let (start, taps) = self.bounds[i];
        (
            start as usize,
            &self.weights[i * self.ksize..][..taps as usize],
        )
    }
}

/// What one axis's tables will hold, before any memory is taken.
#[derive(Clone, Debug)]
struct AxisShape {
    in_size: u32,
    scale: f32,
    support: f32,
    invscale: f32,
    ksize: usize,
    window: core::ops::Range<u32>,
    filter: Filter,
}

impl AxisShape {
    fn new(
        in_size: u32,
        out_size: u32,
        window: core::ops::Range<u32>,
        filter: Filter,
        limits: &Limits,
    ) -> Result<AxisShape> {
        // `area_pixel_compute_scale<float>`: float(in) / out.
        let scale = in_size as f32 / out_size as f32;
        let taps = if filter == Filter::Bicubic { 4.0 } else { 2.0 };
        // `support` and `invscale` are computed in double and stored as float.
        let (support, invscale) = if scale >= 1.0 {
            (
                (taps * 0.5 * f64::from(scale)) as f32,
                (1.0 / f64::from(scale)) as f32,
            )
        } else {
            ((taps * 0.5) as f32, 1.0)
        };
        let ksize = libm::ceilf(support) as usize * 2 + 1;
        let shape = AxisShape {
            in_size,
            scale,
            support,
            invscale,
            ksize,
            window,
            filter,
        };
        limits.check_alloc(shape.weights_len() as u64 * 4 + shape.window.len() as u64 * 8)?;
        Ok(shape)
    }

    fn weights_len(&self) -> usize {
        self.ksize * self.window.len()
    }

    /// Output `i`'s centre, first source index and number of taps.
    fn bound(&self, i: u32) -> (f32, i64, usize) {
        let center = (f64::from(self.scale) * (f64::from(i) + 0.5)) as f32;
        // The float sums widen to double for the `+ 0.5`; casts truncate.
        let xmin = ((f64::from(center - self.support) + 0.5) as i64).max(0);
        let xmax = ((f64::from(center + self.support) + 0.5) as i64).min(i64::from(self.in_size));
        let taps = (xmax - xmin).clamp(0, self.ksize as i64) as usize;
        (center, xmin, taps)
    }

    /// Source indices `[first, last)` any output of the window reads.
    fn span(&self) -> (usize, usize) {
        super::coeffs::span_of(self.window.clone(), |i| {
            let (_, xmin, taps) = self.bound(i);
            (xmin as usize, taps)
        })
    }

    /// The filter at `x`, in float32 with PyTorch's fused multiply-adds.
    fn weight(&self, x: f32) -> f32 {
        let x = x.abs();
        match self.filter {
            Filter::Bicubic => {
                const A: f32 = -0.5;
                if x < 1.0 {
                    // ((A + 2) * x - (A + 3)) * x * x + 1
                    fmaf(fmaf(A + 2.0, x, -(A + 3.0)) * x, x, 1.0)
                } else if x < 2.0 {
                    // ((A * x - 5A) * x + 8A) * x - 4A
                    fmaf(fmaf(fmaf(A, x, -(5.0 * A)), x, 8.0 * A), x, -(4.0 * A))
                } else {
                    0.0
                }
            }
            _ => {
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
        }
    }

    fn build<S: Storage>(&self, shift: usize, tables: &mut impl Tables<S>) -> Result<FloatAxis<S>> {
        let ksize = self.ksize;
        let bounds = tables.table(self.window.len(), |b: &mut [(u32, u32)]| {
            for (b, i) in b.iter_mut().zip(self.window.clone()) {
                let (_, xmin, taps) = self.bound(i);
                *b = ((xmin as u32).saturating_sub(shift as u32), taps as u32);
            }
        })?;
        let weights = tables.table(self.weights_len(), |w: &mut [f32]| {
            for (k, i) in w.chunks_exact_mut(ksize).zip(self.window.clone()) {
                let (center, xmin, taps) = self.bound(i);
                let mut total = 0.0f32;
                for (j, k) in k[..taps].iter_mut().enumerate() {
                    // (j + xmin - center + 0.5) * invscale: the integer
                    // becomes a float, the rest is double, the filter's
                    // argument float again.
                    let x = (f64::from((j as i64 + xmin) as f32 - center) + 0.5)
                        * f64::from(self.invscale);
                    *k = self.weight(x as f32);
                    total += *k;
                }
                if total != 0.0 {
                    k[..taps].iter_mut().for_each(|k| *k /= total);
                }
            }
        })?;
        Ok(FloatAxis {
            ksize,
            bounds,
            weights,
        })
    }
}

#[cfg(feature = "alloc")]
impl FloatAxis<Heap> {
    fn into_pools(self, pools: &mut crate::arena::Pools) {
        pools.give(self.bounds);
        pools.give(self.weights);
    }
}

/// A plan before its tables are filled: the axes that change and the
/// source region read.
#[derive(Clone, Debug)]
pub(super) struct TorchFloatShape {
    h: Option<AxisShape>,
    v: Option<AxisShape>,
    region: Rect,
}

/// The filled plan. Without either axis the region is the output, rounded
/// (the pixels are integers already: a copy).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TorchFloatPlan<S: Storage> {
    h: Option<FloatAxis<S>>,
    v: Option<FloatAxis<S>>,
}

impl TorchFloatShape {
    /// The plan for outputs `window` of the full `(dw, dh)` result of a
    /// `(sw, sh)` source, with `filter` (BILINEAR or BICUBIC, checked by the
    /// caller; anything else is taken as BILINEAR).
    pub(super) fn new(
        (sw, sh): (u32, u32),
        (dw, dh): (u32, u32),
        window: Rect,
        filter: Filter,
        limits: &Limits,
    ) -> Result<TorchFloatShape> {
        let wx = window.x..window.x + window.width;
        let wy = window.y..window.y + window.height;
        let h = (dw != sw)
            .then(|| AxisShape::new(sw, dw, wx.clone(), filter, limits))
            .transpose()?;
        let v = (dh != sh)
            .then(|| AxisShape::new(sh, dh, wy.clone(), filter, limits))
            .transpose()?;
        let own = |w: &core::ops::Range<u32>| (w.start as usize, w.end as usize);
        let (x0, x1) = h.as_ref().map_or(own(&wx), AxisShape::span);
        let (y0, y1) = v.as_ref().map_or(own(&wy), AxisShape::span);
        let region = Rect::new(x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32);
        Ok(TorchFloatShape { h, v, region })
    }

    pub(super) fn region(&self) -> Rect {
        self.region
    }

    /// The float32 intermediate a run holds: every region row, resampled
    /// horizontally (or as it is), for an output `dw` pixels of `bpp` bytes wide.
    pub(super) fn floats(&self, dw: u32, bpp: u64) -> u64 {
        u64::from(self.region.height) * u64::from(dw) * bpp
    }

    pub(super) fn build<S: Storage>(
        &self,
        tables: &mut impl Tables<S>,
    ) -> Result<TorchFloatPlan<S>> {
        let (x0, y0) = (self.region.x as usize, self.region.y as usize);
        Ok(TorchFloatPlan {
            h: self.h.as_ref().map(|a| a.build(x0, tables)).transpose()?,
            v: self.v.as_ref().map(|a| a.build(y0, tables)).transpose()?,
        })
    }
}

#[cfg(feature = "alloc")]
impl TorchFloatPlan<Heap> {
    pub(super) fn into_pools(self, pools: &mut crate::arena::Pools) {
        for axis in [self.h, self.v].into_iter().flatten() {
            axis.into_pools(pools);
        }
    }
}

impl<S: Storage> TorchFloatPlan<S> {
    /// The horizontal and vertical axes, each where its size changes.
    #[cfg_attr(not(feature = "resize-float"), allow(dead_code))]
    pub(super) fn axes(&self) -> (Option<&FloatAxis<S>>, Option<&FloatAxis<S>>) {
        (self.h.as_ref(), self.v.as_ref())
    }
}

/// Rows the horizontal pass reads at once: interleaved, so that one vector
/// lane per row computes the same output of eight rows together.
pub(super) const BLOCK_ROWS: usize = 8;

impl<S: Storage> TorchFloatPlan<S> {
    /// The float32 elements (the intermediate image, then one interleaved
    /// block of source rows) and the bytes (that block before conversion) a
    /// run through `input` into `dst` needs.
    pub(super) fn scratch(&self, input: &RowReader<'_>, dst_width: u32) -> (usize, usize) {
        let (rw, rh) = input.size();
        let bpp = input.bpp();
        let block = BLOCK_ROWS * rw as usize * bpp;
        (rh as usize * dst_width as usize * bpp + block, block)
    }

    /// Resizes the region read through `input` into `dst`; `floats` and
    /// `bytes` hold [`Self::scratch`]'s elements, `rows` the reader's scratch
    /// for [`BLOCK_ROWS`] rows.
    pub(super) fn run(
        &self,
        path: FloatPath,
        floats: &mut impl Scratch<f32>,
        bytes: &mut impl Scratch,
        rows: &mut impl Scratch,
        input: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
    ) {
        // The vector build needs FMA: it is PyTorch's arithmetic, not a speed-up.
        let fma = path == FloatPath::Avx2Fma;
        let bpp = input.bpp();
        let width = dst.width() as usize * bpp;
        let (rw, rh) = (input.size().0 as usize, input.size().1 as usize);
        let (mid, block) = floats
            .grow(rh * width + BLOCK_ROWS * rw * bpp)
            .split_at_mut(rh * width);
        let bytes = bytes.grow(BLOCK_ROWS * rw * bpp);
        for y0 in (0..rh).step_by(BLOCK_ROWS) {
            let m = BLOCK_ROWS.min(rh - y0);
            let src = input.rows(y0, m, false, rows);
            let out = &mut mid[y0 * width..(y0 + m) * width];
            match &self.h {
                Some(h) => kernels::horizontal(fma, h, bpp, &src, m, bytes, block, out),
                None => {
                    for (r, o) in out.chunks_exact_mut(width).enumerate() {
                        o.iter_mut()
                            .zip(src.row(r))
                            .for_each(|(o, &p)| *o = f32::from(p));
                    }
                }
            }
        }
        for (oy, d) in dst.plane_rows_mut(0).enumerate() {
            match &self.v {
                Some(v) => {
                    let (start, k) = v.at(oy);
                    kernels::vertical(fma, &mid[start * width..], width, k, d);
                }
                None => round_row(&mid[oy * width..][..width], d),
            }
        }
    }
}

/// `clamp_(0, 255)`, `round_()` (half to even), then the cast to `uint8`.
#[inline(always)]
fn to_u8(v: f32) -> u8 {
    rintf(v.clamp(0.0, 255.0)) as u8
}

fn round_row(src: &[f32], dst: &mut [u8]) {
    dst.iter_mut().zip(src).for_each(|(d, &v)| *d = to_u8(v));
}

/// The two passes' loops, compiled once for any CPU (`fmaf` is exact
/// everywhere) and once more for x86 CPUs with AVX2 and FMA
/// ([`FloatPath::Avx2Fma`]), where the compiler makes vectors of the
/// eight-lane loops and `fmaf` one instruction.
mod kernels {
    use super::{BLOCK_ROWS, FloatAxis, Storage, fmaf, to_u8};
    use crate::rows::Rows;

    /// `m` rows of the horizontal pass: the rows are interleaved into
    /// `bytes` (byte `x` of row `r` at `8 x + r`, a partial block repeating
    /// its last row) and converted to `block`, each output's taps summed for
    /// the eight rows at once, in PyTorch's order, and written to `out`'s
    /// `m` rows.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn horizontal_body<S: Storage>(
        h: &FloatAxis<S>,
        bpp: usize,
        src: &Rows<'_>,
        m: usize,
        bytes: &mut [u8],
        block: &mut [f32],
        out: &mut [f32],
    ) {
        let len = src.len;
        let rows: [&[u8]; BLOCK_ROWS] = core::array::from_fn(|r| &src.row(r.min(m - 1))[..len]);
        let bytes = &mut bytes[..len * BLOCK_ROWS];
        crate::resize::kernels::interleave8(&rows, bytes);
        block
            .iter_mut()
            .zip(bytes.iter())
            .for_each(|(f, &b)| *f = f32::from(b));
        let width = out.len() / m;
        for i in 0..width / bpp {
            let (start, k) = h.at(i);
            for c in 0..bpp {
                let lane = |j: usize| {
                    let at = ((start + j) * bpp + c) * BLOCK_ROWS;
                    <&[f32; BLOCK_ROWS]>::try_from(&block[at..at + BLOCK_ROWS]).unwrap()
                };
                let first = lane(0);
                let mut acc: [f32; BLOCK_ROWS] = core::array::from_fn(|r| first[r] * k[0]);
                for (j, &w) in k.iter().enumerate().skip(1) {
                    let t = lane(j);
                    for r in 0..BLOCK_ROWS {
                        acc[r] = fmaf(t[r], w, acc[r]);
                    }
                }
                for (r, &a) in acc.iter().enumerate().take(m) {
                    out[r * width + i * bpp + c] = a;
                }
            }
        }
    }

    #[inline(always)]
    fn vertical_body(mid: &[f32], width: usize, k: &[f32], dst: &mut [u8]) {
        const BLOCK: usize = 64;
        let mut acc = [0f32; BLOCK];
        for x0 in (0..width).step_by(BLOCK) {
            let n = BLOCK.min(width - x0);
            let acc = &mut acc[..n];
            acc.iter_mut()
                .zip(&mid[x0..x0 + n])
                .for_each(|(a, &p)| *a = p * k[0]);
            for (t, &w) in k.iter().enumerate().skip(1) {
                let row = &mid[t * width + x0..][..n];
                acc.iter_mut()
                    .zip(row)
                    .for_each(|(a, &p)| *a = fmaf(p, w, *a));
            }
            dst[x0..x0 + n]
                .iter_mut()
                .zip(acc.iter())
                .for_each(|(d, &a)| *d = to_u8(a));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    fn horizontal_fma<S: Storage>(
        h: &FloatAxis<S>,
        bpp: usize,
        src: &Rows<'_>,
        m: usize,
        bytes: &mut [u8],
        block: &mut [f32],
        out: &mut [f32],
    ) {
        horizontal_body(h, bpp, src, m, bytes, block, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn vertical_fma(mid: &[f32], width: usize, k: &[f32], dst: &mut [u8]) {
        vertical_body(mid, width, k, dst)
    }

    /// [`horizontal_body`], built for AVX2 and FMA when `fma`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn horizontal<S: Storage>(
        fma: bool,
        h: &FloatAxis<S>,
        bpp: usize,
        src: &Rows<'_>,
        m: usize,
        bytes: &mut [u8],
        block: &mut [f32],
        out: &mut [f32],
    ) {
        #[cfg(target_arch = "x86_64")]
        if fma {
            // SAFETY: `fma` comes from a plan's available `Simd::Avx2` on a
            // CPU with FMA (`Simd::float_path`).
            return unsafe { horizontal_fma(h, bpp, src, m, bytes, block, out) };
        }
        let _ = fma;
        horizontal_body(h, bpp, src, m, bytes, block, out)
    }

    /// One output row of the vertical pass from the rows of `mid` (each
    /// `width` floats) starting at its first tap; built for AVX2 and FMA when `fma`.
    pub(super) fn vertical(fma: bool, mid: &[f32], width: usize, k: &[f32], dst: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        if fma {
            // SAFETY: as in `horizontal`.
            return unsafe { vertical_fma(mid, width, k, dst) };
        }
        let _ = fma;
        vertical_body(mid, width, k, dst)
    }
}
