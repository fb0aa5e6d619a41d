//! Pillow's filter kernels and per-axis coefficient tables (`Resample.c`:
//! `precompute_coeffs` and `normalize_coeffs_8bpc`), reproduced operation for
//! operation in `f64` so that the fixed-point weights are identical.

use alloc::vec::Vec;

use super::Filter;
use crate::{Error, Limits, Result};

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
            Filter::Hamming => {
                let x = x.abs();
                if x == 0.0 {
                    1.0
                } else if x >= 1.0 {
                    0.0
                } else {
                    let x = x * core::f64::consts::PI;
                    libm::sin(x) / x * (f64::from(0.54f32) + f64::from(0.46f32) * libm::cos(x))
                }
            }
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Axis {
    pub(super) ksize: usize,
    /// `(first source index, taps)` per output index.
    pub(super) bounds: Vec<(u32, u32)>,
    /// `out * ksize` weights, then [`TAIL_PAD`] zeros.
    pub(super) weights: Vec<i32>,
    /// The weights again, as `vpmaddwd` operands: per output, `ksize.div_ceil(2)`
    /// pairs of taps, each as `[hi, lo]` where a 32-bit word holds the two taps'
    /// 16-bit halves of `w = 256 * hi + lo` (`hi` = `w >> 8`, `lo` = `w & 255`).
    /// Only the x86 kernels use them.
    #[cfg(target_arch = "x86_64")]
    pub(super) pairs: Vec<[i32; 2]>,
}

impl Axis {
    /// Coefficients mapping source interval `[in0, in1)` of an axis of `in_size`
    /// pixels onto `out_size` pixels.
    #[cfg(test)]
    pub(super) fn new(
        in_size: u32,
        in0: f32,
        in1: f32,
        out_size: u32,
        filter: Filter,
        limits: &Limits,
    ) -> Result<Axis> {
        Self::window(
            in_size,
            in0,
            in1,
            out_size,
            0..out_size,
            filter,
            limits,
            None,
        )
    }

    /// The weights of outputs `window` (a sub-range of `0..out_size`) only:
    /// exactly those of the full axis, so resizing then cropping costs only
    /// the cropped part.
    /// `reuse`: an axis no longer needed, whose tables are refilled (no
    /// allocation when they are large enough).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn window(
        in_size: u32,
        in0: f32,
        in1: f32,
        out_size: u32,
        window: core::ops::Range<u32>,
        filter: Filter,
        limits: &Limits,
        reuse: Option<Axis>,
    ) -> Result<Axis> {
        let outputs = window.len() as u32;
        // Pillow subtracts in single precision, then widens.
        let scale = f64::from(in1 - in0) / f64::from(out_size);
        let filterscale = if scale < 1.0 { 1.0 } else { scale };
        let support = filter.support() * filterscale;
        let ksize = libm::ceil(support) as usize * 2 + 1;
        let count = ksize as u64 * u64::from(outputs) + TAIL_PAD as u64;
        // Our i32 table, its vpmaddwd split (x86) and the f64 row being normalized.
        limits.check_alloc(count * 8 + ksize as u64 * 8)?;
        #[cfg(target_arch = "x86_64")]
        let (mut weights, mut bounds, mut pairs) =
            reuse.map_or_else(Default::default, |a| (a.weights, a.bounds, a.pairs));
        #[cfg(not(target_arch = "x86_64"))]
        let (mut weights, mut bounds) =
            reuse.map_or_else(Default::default, |a| (a.weights, a.bounds));
        weights.clear();
        bounds.clear();
        // Not exact: a reused table grows by doubling, so tables passed from
        // size to size soon fit every size of a folder.
        weights
            .try_reserve(count as usize)
            .and_then(|()| bounds.try_reserve(outputs as usize))
            .map_err(|_| Error::OutOfMemory { bytes: count * 4 })?;
        let inv_filterscale = 1.0 / filterscale;
        for xx in window {
            let center = f64::from(in0) + (f64::from(xx) + 0.5) * scale;
            // C's (int) truncates toward zero.
            let xmin = ((center - support + 0.5) as i32).max(0);
            let xmax = ((center + support + 0.5) as i32).min(in_size as i32);
            // Never more than ksize (it cannot be, by construction; Pillow would overrun).
            let taps = ((xmax - xmin).max(0) as usize).min(ksize);
            // The same weight twice (it is deterministic): once for the sum,
            // once to normalize and store; no row buffer.
            let weight = |x: usize| {
                filter.weight((f64::from(x as i32 + xmin) - center + 0.5) * inv_filterscale)
            };
            let ww: f64 = (0..taps).map(weight).sum();
            let one = f64::from(1u32 << PRECISION_BITS);
            weights.extend((0..taps).map(|x| {
                let w = if ww != 0.0 { weight(x) / ww } else { weight(x) };
                if w < 0.0 {
                    (-0.5 + w * one) as i32
                } else {
                    (0.5 + w * one) as i32
                }
            }));
            weights.extend(core::iter::repeat_n(0, ksize - taps));
            bounds.push((xmin as u32, taps as u32));
        }
        weights.extend([0; TAIL_PAD]);
        #[cfg(target_arch = "x86_64")]
        madd_pairs(&weights[..ksize * outputs as usize], ksize, &mut pairs);
        Ok(Axis {
            ksize,
            bounds,
            weights,
            #[cfg(target_arch = "x86_64")]
            pairs,
        })
    }

    /// Output index `i`: first source index and its fixed-point weights.
    #[inline(always)]
    pub(super) fn taps(&self, i: usize) -> (usize, &[i32]) {
        let (start, len) = self.bounds[i];
        let k = &self.weights[i * self.ksize..];
        (start as usize, &k[..len as usize])
    }

    /// Output index `i`: the `vpmaddwd` pairs covering its taps (see [`Axis::pairs`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn tap_pairs(&self, i: usize) -> &[[i32; 2]] {
        let half = self.ksize.div_ceil(2);
        &self.pairs[i * half..][..(self.bounds[i].1 as usize).div_ceil(2)]
    }

    /// Source indices `[first, last)` read by any output index (empty at 0 if none).
    pub(super) fn span(&self) -> (usize, usize) {
        let taps = self.bounds.iter().filter(|b| b.1 > 0);
        let first = taps.clone().map(|b| b.0 as usize).min().unwrap_or(0);
        let last = taps.map(|b| (b.0 + b.1) as usize).max().unwrap_or(0);
        (first, last.max(first))
    }

    /// Makes every start relative to source index `by` (for reading a region
    /// that starts there).
    pub(super) fn shift(&mut self, by: usize) {
        for b in &mut self.bounds {
            b.0 = b.0.saturating_sub(by as u32);
        }
    }
}

/// The weights as `vpmaddwd` operands, per output `ksize.div_ceil(2)` pairs of
/// `[hi, lo]` words (see [`Axis::pairs`]).
#[cfg(target_arch = "x86_64")]
fn madd_pairs(weights: &[i32], ksize: usize, out: &mut Vec<[i32; 2]>) {
    let half = ksize.div_ceil(2);
    let word = |a: i32, b: i32| (a & 0xffff) | (b << 16);
    out.clear();
    out.extend(weights.chunks_exact(ksize).flat_map(|k| {
        (0..half).map(move |j| {
            let w0 = k[2 * j];
            let w1 = k.get(2 * j + 1).copied().unwrap_or(0);
            [word(w0 >> 8, w1 >> 8), word(w0 & 0xff, w1 & 0xff)]
        })
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(in_size: u32, out: u32, f: Filter) -> Axis {
        Axis::new(in_size, 0.0, in_size as f32, out, f, &Limits::DEFAULT).unwrap()
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
                    let (start, k) = a.taps(x);
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
            0.0,
            (1 << 18) as f32,
            1 << 18,
            Filter::Lanczos3,
            &tiny,
        );
        assert!(matches!(r, Err(Error::AllocationTooLarge { .. })));
    }
}
