//! Pillow's filter kernels and per-axis coefficient tables (`Resample.c`:
//! `precompute_coeffs` and `normalize_coeffs_8bpc`), reproduced operation for
//! operation in `f64` so that the fixed-point weights are identical.
//!
//! PyTorch's antialiased uint8 resize computes the same `f64` weights
//! (`_compute_indices_min_size_weights_aa`) but rounds them to 16-bit integers
//! with a precision chosen per axis (`_compute_index_ranges_int16_weights`).
//! Such a weight `w` with `p` fractional bits, stored as `w << (22 - p)`, gives
//! through Pillow's sums exactly PyTorch's result:
//! `(2^(22-p) * (sum + 2^(p-1))) >> 22 == (sum + 2^(p-1)) >> p`. So both
//! families share one table layout and every kernel.

use super::Filter;
#[cfg(feature = "alloc")]
use crate::arena::Heap;
use crate::arena::{Storage, Tables};
use crate::{Limits, Result};

/// Fractional bits of the fixed-point weights: 32 - 8 (pixel) - 2 (headroom).
pub(super) const PRECISION_BITS: u32 = 22;
/// The rounding term every sum starts from.
pub(super) const HALF: i32 = 1 << (PRECISION_BITS - 1);
/// Zero weights appended after the table, so that vector kernels may read a few
/// taps past the last row's support without leaving the buffer.
pub(super) const TAIL_PAD: usize = 16;

/// A fixed-point sum back to a pixel: shift out the fraction and clamp to 0..=255.
#[inline(always)]
pub(super) fn clip8(sum: i32) -> u8 {
    (sum >> PRECISION_BITS).clamp(0, 255) as u8
}

/// How an axis's `f64` weights become integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quantize {
    /// Pillow: [`PRECISION_BITS`] fractional bits.
    Pillow,
    /// PyTorch's uint8 kernels: 16-bit weights with the most fractional bits
    /// (at most 22) that keep twice the axis's largest weight below 2^15.
    #[cfg_attr(not(feature = "resize-torch"), allow(dead_code))]
    TorchInt16,
    /// `fast_image_resize`'s u8 convolution (`precompute_coefficients` and
    /// `Normalizer16`): taps from `floor`/`ceil` of the support with zero
    /// weights trimmed from both ends, its own Hamming, and 16-bit weights
    /// rounded half away from zero with a precision chosen as PyTorch's (at
    /// most 21).
    Fir,
}

impl Filter {
    /// Half-width of the kernel at scale 1, in source pixels.
    fn support(self) -> f64 {
        match self {
            Filter::Nearest | Filter::Box => 0.5,
            Filter::Bilinear | Filter::Hamming => 1.0,
            Filter::Bicubic => 2.0,
            Filter::Lanczos3 => 3.0,
        }
    }

    /// The kernel, evaluated exactly as Pillow's C code does (including its
    /// single-precision Hamming constants).
    fn weight(self, x: f64) -> f64 {
        match self {
            Filter::Nearest | Filter::Box => {
                if x > -0.5 && x <= 0.5 {
                    1.0
                } else {
                    0.0
                }
            }
            Filter::Bilinear => {
                let x = x.abs();
                if x < 1.0 { 1.0 - x } else { 0.0 }
            }
            Filter::Hamming => hamming(x, |x| {
                libm::sin(x) / x * (f64::from(0.54f32) + f64::from(0.46f32) * libm::cos(x))
            }),
            Filter::Bicubic => {
                const A: f64 = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Filter::Lanczos3 => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

impl Filter {
    /// The kernel as `fast_image_resize` evaluates it: Pillow's, except
    /// Hamming's window, in `f64` and multiplied in another order.
    fn fir_weight(self, x: f64) -> f64 {
        match self {
            Filter::Hamming => hamming(x, |x| (0.54 + 0.46 * libm::cos(x)) * libm::sin(x) / x),
            f => f.weight(x),
        }
    }
}

/// The Hamming-windowed sinc's support and its centre, with the product
/// `window_sinc(pi * |x|)` as each library writes it inside.
fn hamming(x: f64, window_sinc: impl Fn(f64) -> f64) -> f64 {
    let x = x.abs();
    if x == 0.0 {
        1.0
    } else if x >= 1.0 {
        0.0
    } else {
        window_sinc(x * core::f64::consts::PI)
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * core::f64::consts::PI;
        libm::sin(x) / x
    }
}

/// The weights of one axis: for each output index, the first source index, the
/// number of taps and `ksize` fixed-point weights (unused ones zero).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Axis<S: Storage> {
    pub(super) ksize: usize,
    /// `(first source index, taps)` per output index.
    pub(super) bounds: S::Table<(u32, u32)>,
    /// `out * ksize` weights, then [`TAIL_PAD`] zeros.
    pub(super) weights: S::Table<i32>,
    /// The weights again, as `vpmaddwd` operands: per output, `ksize.div_ceil(2)`
    /// pairs of taps, each as `[hi, lo]` where a 32-bit word holds the two taps'
    /// 16-bit halves of `w = 256 * hi + lo` (`hi` = `w >> 8`, `lo` = `w & 255`).
    /// Only the x86 kernels use them.
    /// With 16-bit weights (PyTorch's, `fast_image_resize`'s): `[q, 0]`,
    /// `q` holding the two taps' weights before widening, so that one
    /// `vpmaddwd` per pair does (see [`Taps::narrow`]).
    #[cfg(target_arch = "x86_64")]
    pub(super) pairs: S::Table<[i32; 2]>,
    /// Fractional bits of the weights before widening to [`PRECISION_BITS`].
    pub(super) precision: u32,
}

/// An axis's tables as the kernels read them, whatever holds them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Taps<'t> {
    ksize: usize,
    pub(super) bounds: &'t [(u32, u32)],
    weights: &'t [i32],
    #[cfg(target_arch = "x86_64")]
    pairs: &'t [[i32; 2]],
    precision: u32,
}

impl<S: Storage> Axis<S> {
    /// The tables, borrowed for the kernels.
    #[inline(always)]
    pub(super) fn taps(&self) -> Taps<'_> {
        Taps {
            ksize: self.ksize,
            bounds: &self.bounds,
            weights: &self.weights,
            #[cfg(target_arch = "x86_64")]
            pairs: &self.pairs,
            precision: self.precision,
        }
    }
}

#[cfg(feature = "alloc")]
impl Axis<Heap> {
    /// Coefficients mapping source interval `[in0, in1)` of an axis of `in_size`
    /// pixels onto `out_size` pixels.
    #[cfg(test)]
    pub(super) fn new(
        in_size: u32,
        (in0, in1): (f32, f32),
        out_size: u32,
        filter: Filter,
        quantize: Quantize,
        limits: &Limits,
    ) -> Result<Axis<Heap>> {
        AxisShape::new(
            in_size,
            in0,
            in1,
            out_size,
            0..out_size,
            filter,
            quantize,
            limits,
        )?
        .build(0, &mut crate::arena::Pools::default())
    }

    /// Gives the tables up for reuse.
    pub(super) fn into_pools(self, pools: &mut crate::arena::Pools) {
        pools.give(self.bounds);
        pools.give(self.weights);
        #[cfg(target_arch = "x86_64")]
        pools.give(self.pairs);
    }
}

impl<'t> Taps<'t> {
    /// Output index `i`: first source index and its fixed-point weights.
    #[inline(always)]
    pub(super) fn at(&self, i: usize) -> (usize, &'t [i32]) {
        let (start, len) = self.bounds[i];
        let k = &self.weights[i * self.ksize..];
        (start as usize, &k[..len as usize])
    }

    /// The precision of 16-bit weights, when the axis has them: each weight
    /// is then `q << (22 - p)` with `q` an `i16`, and a sum of `q` times
    /// pixels, plus `2^(p-1)`, shifted right by `p` is the same pixel as the
    /// widened sum (the power of two divides out). `None` for Pillow's
    /// 22-bit weights.
    #[inline(always)]
    pub(super) fn narrow(&self) -> Option<u32> {
        (self.precision < PRECISION_BITS).then_some(self.precision)
    }

    /// Output index `i`: the `vpmaddwd` pairs covering its taps (see [`Axis::pairs`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn pairs_at(&self, i: usize) -> &'t [[i32; 2]] {
        let half = self.ksize.div_ceil(2);
        &self.pairs[i * half..][..(self.bounds[i].1 as usize).div_ceil(2)]
    }

    /// Number of output indices.
    #[inline(always)]
    pub(super) fn outputs(&self) -> usize {
        self.bounds.len()
    }
}

/// What one axis's tables will hold, computed before any memory is taken: the
/// sizes (for an arena's `bytes_needed`), the source span read, and the
/// filling itself, so that heap and arena plans get the same numbers.
#[derive(Clone, Debug)]
pub(super) struct AxisShape {
    in_size: u32,
    in0: f32,
    scale: f64,
    support: f64,
    filterscale: f64,
    ksize: usize,
    window: core::ops::Range<u32>,
    filter: Filter,
    /// Fractional bits of the weights before they are widened to [`PRECISION_BITS`].
    precision: u32,
    quantize: Quantize,
}

impl AxisShape {
    /// The weights of outputs `window` (a sub-range of `0..out_size`) only:
    /// exactly those of the full axis, so resizing then cropping costs only
    /// the cropped part.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        in_size: u32,
        in0: f32,
        in1: f32,
        out_size: u32,
        window: core::ops::Range<u32>,
        filter: Filter,
        quantize: Quantize,
        limits: &Limits,
    ) -> Result<AxisShape> {
        // Pillow subtracts in single precision, then widens;
        // fast_image_resize's box is in f64.
        let length = match quantize {
            Quantize::Fir => f64::from(in1) - f64::from(in0),
            _ => f64::from(in1 - in0),
        };
        let scale = length / f64::from(out_size);
        let filterscale = if scale < 1.0 { 1.0 } else { scale };
        let support = filter.support() * filterscale;
        let ksize = libm::ceil(support) as usize * 2 + 1;
        let mut shape = AxisShape {
            in_size,
            in0,
            scale,
            support,
            filterscale,
            ksize,
            window,
            filter,
            precision: PRECISION_BITS,
            quantize,
        };
        // Our i32 table, its vpmaddwd split (x86) and the f64 row being normalized.
        limits.check_alloc(shape.weights_len() as u64 * 8 + ksize as u64 * 8)?;
        if quantize != Quantize::Pillow {
            shape.precision = shape.int16_precision(out_size);
        }
        Ok(shape)
    }

    /// The 16-bit weights' precision for this axis: from the largest
    /// normalized weight of all `out_size` outputs (not only the window's),
    /// the first `p` below 22 at which `round(max * 2^(p+1))` reaches 2^15
    /// (PyTorch: 22 if none does, `fast_image_resize`: 21; each rounds its way).
    fn int16_precision(&self, out_size: u32) -> u32 {
        let mut max = 0.0f64;
        for xx in 0..out_size {
            let (center, xmin, taps) = self.bound(xx);
            let ww: f64 = (0..taps).map(|x| self.weight(x, xmin, center)).sum();
            if ww != 0.0 {
                for x in 0..taps {
                    max = max.max(self.weight(x, xmin, center) / ww);
                }
            }
        }
        let fir = self.quantize == Quantize::Fir;
        (0..PRECISION_BITS)
            .find(|&p| {
                let v = max * f64::from(1u32 << (p + 1));
                let v = if fir { libm::round(v) } else { 0.5 + v };
                v as i32 >= 1 << 15
            })
            .unwrap_or(if fir {
                PRECISION_BITS - 1
            } else {
                PRECISION_BITS
            })
    }

    /// The unnormalized weight of tap `x` of the output centred at `center`
    /// whose first tap is `xmin`.
    #[inline]
    fn weight(&self, x: usize, xmin: i32, center: f64) -> f64 {
        let at = f64::from(x as i32 + xmin);
        if self.quantize == Quantize::Fir {
            // Its `center` is the pixel centre less a half (see `bound`).
            self.filter
                .fir_weight((at - center) * (1.0 / self.filterscale))
        } else {
            self.filter
                .weight((at - center + 0.5) * (1.0 / self.filterscale))
        }
    }

    fn outputs(&self) -> usize {
        self.window.len()
    }

    /// Taps per output (the widest).
    pub(super) fn ksize(&self) -> usize {
        self.ksize
    }

    fn weights_len(&self) -> usize {
        self.ksize * self.outputs() + TAIL_PAD
    }

    #[cfg(target_arch = "x86_64")]
    fn pairs_len(&self) -> usize {
        self.ksize.div_ceil(2) * self.outputs()
    }

    /// Output `xx`'s centre, first source index and number of taps.
    #[inline]
    fn bound(&self, xx: u32) -> (f64, i32, usize) {
        if self.quantize == Quantize::Fir {
            return self.fir_bound(xx);
        }
        let center = f64::from(self.in0) + (f64::from(xx) + 0.5) * self.scale;
        // C's (int) truncates toward zero.
        let xmin = ((center - self.support + 0.5) as i32).max(0);
        let xmax = ((center + self.support + 0.5) as i32).min(self.in_size as i32);
        // Never more than ksize (it cannot be, by construction; Pillow would overrun).
        let taps = ((xmax - xmin).max(0) as usize).min(self.ksize);
        (center, xmin, taps)
    }

    /// [`AxisShape::bound`] as `fast_image_resize` finds it: `floor` and
    /// `ceil` of the support's ends, then the zero weights at either end
    /// dropped; the centre returned is less a half, as its weights take it.
    fn fir_bound(&self, xx: u32) -> (f64, i32, usize) {
        let in_center = f64::from(self.in0) + (f64::from(xx) + 0.5) * self.scale;
        let center = in_center - 0.5;
        // `as u32` saturates: a negative start is 0, as its `max(0.)` makes it.
        let mut first = libm::floor(in_center - self.support).max(0.0) as u32;
        let mut end = libm::ceil(in_center + self.support).min(f64::from(self.in_size)) as u32;
        let zero = |x: u32| self.weight(0, x as i32, center) == 0.0;
        while first < end && zero(first) {
            first += 1;
        }
        while end > first && zero(end - 1) {
            end -= 1;
        }
        // Never more than ksize (ceil - floor of the support is at most that).
        let taps = ((end - first) as usize).min(self.ksize);
        (center, first as i32, taps)
    }

    /// Source indices `[first, last)` read by any output index (empty at 0 if none).
    pub(super) fn span(&self) -> (usize, usize) {
        span_of(self.window.clone(), |xx| {
            let (_, xmin, taps) = self.bound(xx);
            (xmin as usize, taps)
        })
    }

    /// The tables, with every first index made relative to source index
    /// `shift` (for reading a region that starts there).
    pub(super) fn build<S: Storage>(
        &self,
        shift: usize,
        tables: &mut impl Tables<S>,
    ) -> Result<Axis<S>> {
        let ksize = self.ksize;
        let one = f64::from(1u32 << self.precision);
        let widen = PRECISION_BITS - self.precision;
        let bounds = tables.table(self.outputs(), |b: &mut [(u32, u32)]| {
            for (b, xx) in b.iter_mut().zip(self.window.clone()) {
                let (_, xmin, taps) = self.bound(xx);
                *b = ((xmin as u32).saturating_sub(shift as u32), taps as u32);
            }
        })?;
        let weights = tables.table(self.weights_len(), |w: &mut [i32]| {
            for (k, xx) in w.chunks_exact_mut(ksize).zip(self.window.clone()) {
                self.normalized(xx, |x, w| {
                    let k = &mut k[x];
                    let q = if self.quantize == Quantize::Fir {
                        libm::round(w * one) as i16 as i32
                    } else if w < 0.0 {
                        (-0.5 + w * one) as i32
                    } else {
                        (0.5 + w * one) as i32
                    };
                    // PyTorch stores the weight as int16 (it fits, by the
                    // choice of precision); Pillow's 22 bits are the identity.
                    *k = if widen == 0 {
                        q
                    } else {
                        i32::from(q as i16) << widen
                    };
                });
            }
        })?;
        #[cfg(target_arch = "x86_64")]
        let pairs = tables.table(self.pairs_len(), |p| {
            madd_pairs(&weights[..ksize * self.outputs()], ksize, widen, p)
        })?;
        Ok(Axis {
            ksize,
            bounds,
            weights,
            #[cfg(target_arch = "x86_64")]
            pairs,
            precision: self.precision,
        })
    }
}

impl AxisShape {
    /// Output `xx`'s normalized `f64` weights (Pillow's `precompute_coeffs`:
    /// each divided by their sum unless it is zero), given to `store` with
    /// their tap index. The weight is computed twice (it is deterministic):
    /// once for the sum, once to store; no row buffer.
    fn normalized(&self, xx: u32, mut store: impl FnMut(usize, f64)) {
        let (center, xmin, taps) = self.bound(xx);
        let weight = |x: usize| self.weight(x, xmin, center);
        let ww: f64 = (0..taps).map(weight).sum();
        for x in 0..taps {
            store(x, if ww != 0.0 { weight(x) / ww } else { weight(x) });
        }
    }

    /// The unquantized weights, as Pillow's `F` (float32) images use them,
    /// first indices relative to `shift`.
    #[cfg(feature = "resize-float")]
    pub(super) fn build_f64(&self, shift: usize) -> F64Axis {
        let ksize = self.ksize;
        let mut weights = alloc::vec![0.0; ksize * self.outputs()];
        let mut bounds = alloc::vec::Vec::with_capacity(self.outputs());
        for (k, xx) in weights.chunks_exact_mut(ksize).zip(self.window.clone()) {
            let (_, xmin, taps) = self.bound(xx);
            bounds.push(((xmin as u32).saturating_sub(shift as u32), taps as u32));
            self.normalized(xx, |x, w| k[x] = w);
        }
        F64Axis {
            ksize,
            bounds,
            weights,
        }
    }
}

/// One axis's `f64` weights (Pillow's `F` mode): per output, the first
/// source index and its taps.
#[cfg(feature = "resize-float")]
#[derive(Clone, Debug, PartialEq)]
pub(super) struct F64Axis {
    ksize: usize,
    bounds: alloc::vec::Vec<(u32, u32)>,
    weights: alloc::vec::Vec<f64>,
}

#[cfg(feature = "resize-float")]
impl F64Axis {
    /// Output `i`: first source index and its weights.
    #[inline(always)]
    pub(super) fn at(&self, i: usize) -> (usize, &[f64]) {
        let (start, taps) = self.bounds[i];
        (
            start as usize,
            &self.weights[i * self.ksize..][..taps as usize],
        )
    }
}

/// Source indices `[first, last)` that the outputs in `window` read, from
/// each output's first source index and number of taps (empty at 0 if none).
pub(super) fn span_of(
    window: core::ops::Range<u32>,
    bound: impl Fn(u32) -> (usize, usize),
) -> (usize, usize) {
    let (mut first, mut last) = (usize::MAX, 0);
    for i in window {
        let (start, taps) = bound(i);
        if taps > 0 {
            first = first.min(start);
            last = last.max(start + taps);
        }
    }
    if first == usize::MAX {
        (0, 0)
    } else {
        (first, last)
    }
}

/// The weights as `vpmaddwd` operands, per output `ksize.div_ceil(2)` pairs of
/// `[hi, lo]` words, or of `[q, 0]` for 16-bit weights widened by `widen`
/// bits (see [`Axis::pairs`]).
#[cfg(target_arch = "x86_64")]
fn madd_pairs(weights: &[i32], ksize: usize, widen: u32, out: &mut [[i32; 2]]) {
    let half = ksize.div_ceil(2);
    let word = |a: i32, b: i32| (a & 0xffff) | (b << 16);
    for (o, k) in out.chunks_exact_mut(half).zip(weights.chunks_exact(ksize)) {
        for (j, o) in o.iter_mut().enumerate() {
            let w0 = k[2 * j];
            let w1 = k.get(2 * j + 1).copied().unwrap_or(0);
            *o = if widen > 0 {
                [word(w0 >> widen, w1 >> widen), 0]
            } else {
                [word(w0 >> 8, w1 >> 8), word(w0 & 0xff, w1 & 0xff)]
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn axis(in_size: u32, out: u32, f: Filter) -> Axis<Heap> {
        Axis::new(
            in_size,
            (0.0, in_size as f32),
            out,
            f,
            Quantize::Pillow,
            &Limits::DEFAULT,
        )
        .unwrap()
    }

    #[test]
    fn weights_of_every_output_sum_to_one_in_fixed_point() {
        for f in [
            Filter::Box,
            Filter::Bilinear,
            Filter::Hamming,
            Filter::Bicubic,
            Filter::Lanczos3,
        ] {
            for (i, o) in [(100, 37), (37, 100), (640, 224), (5, 1), (1, 9)] {
                let a = axis(i, o, f);
                for x in 0..o as usize {
                    let (start, k) = a.taps().at(x);
                    assert!(start + k.len() <= i as usize);
                    let s: i32 = k.iter().sum();
                    // Each weight is rounded on its own: the sum is one within half a unit per tap.
                    assert!(
                        (s - (1 << PRECISION_BITS)).abs() <= k.len() as i32,
                        "{f:?} {i}->{o} x={x} sum={s}"
                    );
                }
            }
        }
    }

    /// PyTorch's weights: 16-bit integers with the precision of the axis's
    /// largest weight, widened to 22 bits; each sums to one within half a
    /// unit of that precision per tap.
    #[test]
    fn torch_weights_are_int16_with_a_per_axis_precision() {
        for f in [Filter::Bilinear, Filter::Bicubic] {
            for (i, o) in [(100, 37), (37, 100), (640, 224), (5, 1), (1, 9), (4000, 3)] {
                let shape = AxisShape::new(
                    i,
                    0.0,
                    i as f32,
                    o,
                    0..o,
                    f,
                    Quantize::TorchInt16,
                    &Limits::DEFAULT,
                )
                .unwrap();
                let p = shape.precision;
                let a = shape.build(0, &mut crate::arena::Pools::default()).unwrap();
                let step = 1i32 << (PRECISION_BITS - p);
                let mut largest = 0;
                for x in 0..o as usize {
                    let (_, k) = a.taps().at(x);
                    for &w in k {
                        assert_eq!(w % step, 0, "{f:?} {i}->{o}: not {p}-bit");
                        assert!(i16::try_from(w / step).is_ok());
                        largest = largest.max(w / step);
                    }
                    let s: i32 = k.iter().sum::<i32>() / step;
                    assert!(
                        (s - (1 << p)).abs() <= k.len() as i32,
                        "{f:?} {i}->{o} x={x}"
                    );
                }
                // The largest weight takes 15 bits (unless 22 bits do not get it there).
                assert!(p == PRECISION_BITS || (1 << 14..1 << 15).contains(&largest));
                assert!(p < PRECISION_BITS || largest < 1 << 14);
            }
        }
    }

    #[test]
    fn kernels_have_their_textbook_values() {
        assert_eq!(Filter::Bilinear.weight(0.25), 0.75);
        assert_eq!(Filter::Bicubic.weight(1.0), 0.0);
        assert_eq!(Filter::Bicubic.weight(0.5), 0.5625);
        assert_eq!(Filter::Box.weight(0.5), 1.0);
        assert_eq!(Filter::Box.weight(-0.5), 0.0);
        assert!(Filter::Lanczos3.weight(1.0).abs() < 1e-15);
        assert_eq!(Filter::Lanczos3.weight(3.0), 0.0);
        assert!((Filter::Hamming.weight(0.5) - core::f64::consts::FRAC_2_PI * 0.54).abs() < 1e-6);
    }

    #[test]
    fn absurd_tables_are_refused_before_allocating() {
        let tiny = Limits {
            max_pixels: 1 << 20,
            max_alloc_bytes: 1 << 16,
        };
        let r = Axis::new(
            1 << 18,
            (0.0, (1 << 18) as f32),
            1 << 18,
            Filter::Lanczos3,
            Quantize::Pillow,
            &tiny,
        );
        assert!(matches!(r, Err(Error::AllocationTooLarge { .. })));
    }
}
